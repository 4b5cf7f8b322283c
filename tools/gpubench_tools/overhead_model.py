"""The overhead model: copy cost alpha + bytes/beta, launch and sync costs, and the
predicted end-to-end GPU time they add up to.

    T_gpu = T_h2d + flop / (u * peak) + T_d2h + n_kernels * t_launch + t_sync
    T_h2d = copies_h2d * alpha_h2d + bytes_h2d / beta_h2d    (T_d2h likewise)

copies_h2d / copies_d2h are the cudaMemcpyAsync calls of each phase (the end-to-end GEMM copies
A and B in, C out: 2 and 1); files written before `bench` had those counters count as 1 copy.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
from scipy.optimize import lsq_linear

from .dataset import Point, Source

__all__ = [
    "CopyFit",
    "LaunchCosts",
    "ModelTerms",
    "OverheadModel",
    "fit_copy",
    "fit_line",
    "build_model",
    "copy_count",
]


def fit_line(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float, float]:
    """Fit y = a + b*x with a, b >= 0, minimising the *relative* error.

    Weighting each residual by 1/y makes a 4-byte copy count as much as a 1 GiB one; an
    unweighted fit would let the large sizes decide everything and lose alpha entirely.
    Returns (a, b, rms relative error).
    """
    x = np.asarray(xs, dtype=float)
    y = np.asarray(ys, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y) & (y > 0)
    x, y = x[ok], y[ok]
    if len(x) < 2:
        raise ValueError("need at least two points to fit a line")
    w = 1.0 / y
    # Scale the slope column so both unknowns are of order 1 for the solver.
    scale = float(np.max(x)) or 1.0
    a_mat = np.column_stack([w, w * x / scale])
    res = lsq_linear(a_mat, np.ones_like(y), bounds=(0.0, np.inf), method="bvls")
    a, b = float(res.x[0]), float(res.x[1]) / scale
    rel = (a + b * x - y) / y
    return a, b, float(np.sqrt(np.mean(rel**2)))


@dataclass
class CopyFit:
    direction: str  # "h2d" or "d2h"
    host: str  # "pinned" or "pageable"
    alpha_s: float
    beta_bytes_per_s: float
    rms_rel_error: float
    nbytes: list[float]
    times: list[float]
    times_lo: list[float]
    times_hi: list[float]

    def predict(self, nbytes: float | np.ndarray, copies: float = 1.0) -> float | np.ndarray:
        """Time of `copies` copies moving `nbytes` in all: each copy pays alpha once."""
        return copies * self.alpha_s + nbytes / self.beta_bytes_per_s

    @property
    def half_bandwidth_bytes(self) -> float:
        """The copy size that reaches half of beta: below it the fixed cost alpha dominates."""
        return self.alpha_s * self.beta_bytes_per_s


def fit_copy(direction: str, host: str, probes: list[Point]) -> CopyFit | None:
    rows = []
    for p in probes:
        nbytes = p.c("bytes", p.c(f"bytes_{direction}"))
        t = p.c(f"t_{direction}", p.time)
        if math.isfinite(nbytes) and nbytes > 0 and t > 0:
            lo, hi = p.spread
            rows.append((nbytes, t, t * lo, t * hi))
    if len(rows) < 2:
        return None
    rows.sort()
    alpha, inv_beta, err = fit_line([r[0] for r in rows], [r[1] for r in rows])
    if inv_beta <= 0:
        return None
    return CopyFit(
        direction=direction,
        host=host,
        alpha_s=alpha,
        beta_bytes_per_s=1.0 / inv_beta,
        rms_rel_error=err,
        nbytes=[r[0] for r in rows],
        times=[r[1] for r in rows],
        times_lo=[r[2] for r in rows],
        times_hi=[r[3] for r in rows],
    )


@dataclass
class LaunchCosts:
    """Seconds. Any value is None when its probe is missing from the file."""

    t_launch: float | None = None  # per kernel in a burst (slope of t_wall over kernels)
    t_issue: float | None = None  # host-side issue cost per launch
    t_burst_fixed: float | None = None  # intercept of the burst: one sync plus set-up
    t_roundtrip: float | None = None  # one empty kernel + synchronise
    t_node: float | None = None  # per node of a CUDA graph
    t_graph_fixed: float | None = None  # graph launch itself
    t_event_record: float | None = None
    t_sync_stream: float | None = None
    t_sync_device: float | None = None

    @property
    def t_sync(self) -> float | None:
        """Sync cost for the model: the stream-sync probe, else what the burst intercept says."""
        if self.t_sync_stream is not None:
            return self.t_sync_stream
        if self.t_roundtrip is not None and self.t_launch is not None:
            return max(0.0, self.t_roundtrip - self.t_launch)
        return self.t_burst_fixed

    def items(self) -> list[tuple[str, float]]:
        """(description, seconds) for the values that were measured, for tables and charts."""
        names = [
            ("kernel launch (burst, per kernel)", self.t_launch),
            ("launch issue, host side (per kernel)", self.t_issue),
            ("launch + synchronise round trip", self.t_roundtrip),
            ("CUDA graph, per node", self.t_node),
            ("CUDA graph launch, fixed", self.t_graph_fixed),
            ("event record", self.t_event_record),
            ("stream synchronise", self.t_sync_stream),
            ("device synchronise", self.t_sync_device),
        ]
        return [(n, v) for n, v in names if v is not None]


def _median(points: list[Point], key: str) -> float | None:
    vals = [p.c(key) for p in points if math.isfinite(p.c(key))]
    return statistics.median(vals) if vals else None


def _slope_fit(
    points: list[Point], count_key: str, per_key: str
) -> tuple[float | None, float | None]:
    """(per-item cost, fixed cost) from probes that repeat an operation N times."""
    rows = [(p.c(count_key), p.c("t_wall", p.time)) for p in points]
    rows = [(n, t) for n, t in rows if math.isfinite(n) and n > 0 and math.isfinite(t) and t > 0]
    if len({n for n, _ in rows}) >= 2:
        fixed, per, _ = fit_line([n for n, _ in rows], [t for _, t in rows])
        return per, fixed
    # One burst length only: trust the benchmark's own per-item counter at the largest N.
    if points:
        biggest = max(points, key=lambda p: p.c(count_key, 0))
        v = biggest.c(per_key)
        return (v if math.isfinite(v) else None), None
    return None, None


def fit_launch(source: Source) -> LaunchCosts:
    burst = source.probes("launch_burst")
    graph = source.probes("graph_launch")
    costs = LaunchCosts()
    costs.t_launch, costs.t_burst_fixed = _slope_fit(burst, "kernels", "t_per_launch")
    costs.t_issue = _median(burst, "t_issue_per_launch")
    costs.t_roundtrip = _median(source.probes("launch_roundtrip"), "t_wall")
    costs.t_node, costs.t_graph_fixed = _slope_fit(graph, "kernels", "t_per_node")
    costs.t_event_record = _median(source.probes("event_record"), "t_event_record")
    costs.t_sync_stream = _median(source.probes("sync_stream"), "t_sync")
    costs.t_sync_device = _median(source.probes("sync_device"), "t_sync")
    return costs


def copy_count(p: Point, direction: str) -> float:
    """cudaMemcpyAsync calls of one copy phase of an e2e run (counter copies_h2d / copies_d2h).

    Files written before `bench` reported the counter hold one copy per phase; so does a
    counter that is not a positive number.
    """
    n = p.c(f"copies_{direction}", 1.0)
    return n if math.isfinite(n) and n > 0 else 1.0


@dataclass
class ModelTerms:
    h2d: float
    compute: float
    d2h: float
    launch: float
    sync: float

    @property
    def total(self) -> float:
        return self.h2d + self.compute + self.d2h + self.launch + self.sync


@dataclass
class OverheadModel:
    source: Source
    copies: dict[tuple[str, str], CopyFit] = field(default_factory=dict)
    launch: LaunchCosts = field(default_factory=LaunchCosts)

    @property
    def empty(self) -> bool:
        return not self.copies and not self.launch.items()

    def utilisation(self, p: Point) -> float | None:
        """u for the compute term: from the kernel-only run of the same GEMM when there is one
        (data already on the device), else from the e2e run's own compute phase."""
        peak = self.source.gpu_peak(p.dtype)
        if not peak:
            return None
        for k in self.source.matmul_kernel():
            if k.mnk == p.mnk and k.dtype == p.dtype and k.has("pct_peak"):
                return k.c("pct_peak") / 100.0
        tc = p.c("t_compute")
        return p.c("flop") / (tc * peak) if tc > 0 else None

    def predict(self, p: Point) -> ModelTerms | None:
        host = p.labels.get("host", "pinned")
        h2d = self.copies.get(("h2d", host))
        d2h = self.copies.get(("d2h", host))
        u = self.utilisation(p)
        peak = self.source.gpu_peak(p.dtype)
        t_launch, t_sync = self.launch.t_launch, self.launch.t_sync
        if h2d is None or d2h is None or not u or not peak or t_launch is None or t_sync is None:
            return None
        b_in, b_out = p.c("bytes_h2d", 0.0), p.c("bytes_d2h", 0.0)
        return ModelTerms(
            h2d=float(h2d.predict(b_in, copy_count(p, "h2d"))) if b_in > 0 else 0.0,
            compute=p.c("flop") / (u * peak),
            d2h=float(d2h.predict(b_out, copy_count(p, "d2h"))) if b_out > 0 else 0.0,
            launch=p.c("kernels", 1.0) * t_launch,
            sync=t_sync,
        )

    def errors(self) -> list[float]:
        """Relative error (model - measured) / measured over every e2e point it can predict."""
        out = []
        for p in self.source.matmul_e2e():
            terms = self.predict(p)
            measured = p.c("t_wall", p.time)
            if terms is not None and measured > 0:
                out.append((terms.total - measured) / measured)
        return out


def build_model(source: Source) -> OverheadModel:
    model = OverheadModel(source=source, launch=fit_launch(source))
    for direction in ("h2d", "d2h"):
        for host in ("pinned", "pageable"):
            fit = fit_copy(direction, host, source.probes(direction, host))
            if fit is not None:
                model.copies[(direction, host)] = fit
    return model
