"""The overhead model on the summary table: copy cost alpha + bytes/beta, launch and sync costs,
and the predicted end-to-end GPU time they add up to.

    T_gpu = T_h2d + flop / (u * peak) + T_d2h + n_kernels * t_launch + t_sync
    T_h2d = copies_h2d * alpha_h2d + bytes_h2d / beta_h2d    (T_d2h likewise)

copies_h2d / copies_d2h are the cudaMemcpyAsync calls of each phase (the end-to-end GEMM copies
A and B in, C out: 2 and 1); files written before `bench` had those counters count as 1 copy.
Input is `table.summarize()` output restricted to one machine's GPU rows: the typed table, whose
counters and peaks are floats already (a column a file lacks reads as NaN here).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, fields
from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy.optimize import lsq_linear

# The GEMM rows' workload label: the model's end-to-end and kernel-only GEMMs.
GEMM_WORKLOAD = "matmul"


def _column(frame: pd.DataFrame, column: str) -> pd.Series:
    """A typed column of the summary (the reader typed it at load), NaN where its file has none."""
    return frame[column] if column in frame else pd.Series(np.nan, index=frame.index, dtype=float)


def gpu_peak(frame: pd.DataFrame, dtype: pd.Series | str) -> pd.Series:
    """Each row's GPU peak FLOP/s for its dtype (`context.gpu_peak_<dtype>_flops`), NaN where
    the context has none: a row is measured against the peak of the GPU that ran it."""
    kinds = pd.Series(dtype, index=frame.index) if isinstance(dtype, str) else dtype
    out = pd.Series(np.nan, index=frame.index, dtype=float)
    for kind in kinds.dropna().unique():
        mask = kinds == kind
        out[mask] = _column(frame.loc[mask], f"context.gpu_peak_{kind}_flops")
    return out.where(out > 0)


def gemm_rows(summary: pd.DataFrame, e2e: bool) -> pd.DataFrame:
    """GPU GEMM rows: end-to-end (a `host` label: copies in and out) or kernel-only (none)."""
    host, probe = (summary.get(c, pd.Series(None, index=summary.index)) for c in ("host", "probe"))
    mask = (summary["workload"] == GEMM_WORKLOAD) & (summary["backend"] == "gpu") & probe.isna()
    return summary[mask & (host.notna() if e2e else host.isna())]


def fit_line(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float, float]:
    """Fit y = a + b*x with a, b >= 0, minimising the *relative* error.

    Weighting each residual by 1/y makes a 4-byte copy count as much as a 1 GiB one; an
    unweighted fit would let the large sizes decide everything and lose alpha entirely.
    Returns (a, b, rms relative error).
    """
    x, y = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y) & (y > 0)
    x, y = x[ok], y[ok]
    if len(x) < 2:
        raise ValueError("need at least two points to fit a line")
    w = 1.0 / y
    scale = float(np.max(x)) or 1.0  # both unknowns of order 1 for the solver
    res = lsq_linear(np.column_stack([w, w * x / scale]), np.ones_like(y), bounds=(0.0, np.inf))
    a, b = float(res.x[0]), float(res.x[1]) / scale
    return a, b, float(np.sqrt(np.mean(((a + b * x - y) / y) ** 2)))


@dataclass
class CopyFit:
    direction: str  # "h2d" or "d2h"
    host: str  # "pinned" or "pageable"
    alpha_s: float
    beta_bytes_per_s: float

    def predict(self, nbytes: float | np.ndarray, copies: float = 1.0) -> float | np.ndarray:
        """Time of `copies` copies moving `nbytes` in all: each copy pays alpha once."""
        return copies * self.alpha_s + nbytes / self.beta_bytes_per_s

    def phase(self, row: pd.Series) -> float:
        """The time of this copy phase of an e2e row: its bytes (none: no time) in its
        cudaMemcpyAsync calls (counter copies_h2d / copies_d2h; one where the file predates the
        counter or it is not a positive number)."""
        nbytes, copies = (_value(row, f"{key}_{self.direction}") for key in ("bytes", "copies"))
        return float(self.predict(nbytes, copies if copies > 0 else 1.0)) if nbytes > 0 else 0.0


def _probes(summary: pd.DataFrame, probe: str, host: str | None = None) -> pd.DataFrame:
    mask = summary.get("probe", pd.Series(None, index=summary.index)) == probe
    if host is not None:
        mask &= summary.get("host", pd.Series(None, index=summary.index)) == host
    return summary[mask]


def fit_copy(direction: str, host: str, probes: pd.DataFrame) -> CopyFit | None:
    """alpha and beta of one copy direction and host memory from its size sweep."""
    nbytes = _column(probes, "bytes").fillna(_column(probes, f"bytes_{direction}"))
    # The probe's own phase counter where it writes one, else its (manual, event) time.
    t = _column(probes, f"t_{direction}").fillna(_column(probes, "time_s"))
    frame = pd.DataFrame({"b": nbytes, "t": t})
    frame = frame[(frame["b"] > 0) & (frame["t"] > 0)].sort_values("b")
    if len(frame) < 2:
        return None
    alpha, inv_beta, _ = fit_line(frame["b"], frame["t"])
    return CopyFit(direction, host, alpha, 1.0 / inv_beta) if inv_beta > 0 else None


def _cost(words: str | None = None) -> Any:
    """A cost in seconds, None while its probe is missing; `words` name it in tables and charts."""
    return field(default=None, metadata={"words": words})


@dataclass
class LaunchCosts:
    """Seconds. Any value is None when its probe is missing from the file."""

    # per kernel in a burst (slope of t_wall over kernels)
    t_launch: float | None = _cost("kernel launch (burst, per kernel)")
    t_issue: float | None = _cost("launch issue, host side (per kernel)")
    t_burst_fixed: float | None = _cost()  # intercept of the burst: one sync plus set-up
    t_roundtrip: float | None = _cost("launch + synchronise round trip")  # empty kernel + sync
    t_node: float | None = _cost("CUDA graph, per node")
    t_graph_fixed: float | None = _cost("CUDA graph launch, fixed")  # graph launch itself
    t_event_record: float | None = _cost("event record")
    t_sync_stream: float | None = _cost("stream synchronise")
    t_sync_device: float | None = _cost("device synchronise")

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
        costs = ((f.metadata["words"], getattr(self, f.name)) for f in fields(self))
        return [(words, value) for words, value in costs if words and value is not None]


def _median(rows: pd.DataFrame, column: str) -> float | None:
    values = _column(rows, column).dropna()
    return float(values.median()) if len(values) else None


def _slope_fit(rows: pd.DataFrame, per_key: str) -> tuple[float | None, float | None]:
    """(per-item cost, fixed cost) from probes that repeat an operation N times."""
    count = _column(rows, "nodes").fillna(_column(rows, "kernels"))
    t = _column(rows, "t_wall").fillna(_column(rows, "time_s"))
    ok = (count > 0) & (t > 0)
    if count[ok].nunique() >= 2:
        fixed, per, _ = fit_line(count[ok], t[ok])
        return per, fixed
    if ok.any():  # one burst length only: trust the probe's own per-item counter at the largest
        per = _column(rows, per_key)[count[ok].idxmax()]
        return (None if pd.isna(per) else float(per)), None
    return None, None


def fit_launch(summary: pd.DataFrame) -> LaunchCosts:
    burst = _probes(summary, "launch_burst")
    costs = LaunchCosts(
        t_issue=_median(burst, "t_issue_per_launch"),
        t_roundtrip=_median(_probes(summary, "launch_roundtrip"), "t_wall"),
        t_event_record=_median(_probes(summary, "event_record"), "t_event_record"),
        t_sync_stream=_median(_probes(summary, "sync_stream"), "t_sync"),
        t_sync_device=_median(_probes(summary, "sync_device"), "t_sync"),
    )
    costs.t_launch, costs.t_burst_fixed = _slope_fit(burst, "t_per_launch")
    costs.t_node, costs.t_graph_fixed = _slope_fit(_probes(summary, "graph_launch"), "t_per_node")
    return costs


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


def _value(row: pd.Series, key: str, default: float = np.nan) -> float:
    v = row.get(key)
    return default if v is None or pd.isna(v) else float(v)


@dataclass
class OverheadModel:
    copies: dict[tuple[str, str], CopyFit] = field(default_factory=dict)
    launch: LaunchCosts = field(default_factory=LaunchCosts)
    # (m, n, k, dtype) -> utilisation of the kernel-only GEMM (pct_peak / 100)
    kernel_utilisation: dict[tuple[Any, ...], float] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not self.copies and not self.launch.items()

    @staticmethod
    def peak(row: pd.Series) -> float | None:
        """The row's GPU peak for its dtype, from the row's own context."""
        v = _value(row, f"context.gpu_peak_{row.get('dtype', 'fp32')}_flops")
        return v if v > 0 else None

    def utilisation(self, row: pd.Series) -> float | None:
        """u for the compute term: from the kernel-only run of the same GEMM when there is one
        (data already on the device), else from the e2e row's own compute phase."""
        peak = self.peak(row)
        if not peak:
            return None
        key = tuple(_value(row, c) for c in "mnk") + (row.get("dtype", "fp32"),)
        if key in self.kernel_utilisation:
            return self.kernel_utilisation[key]
        tc = _value(row, "t_compute")
        return _value(row, "flop") / (tc * peak) if tc > 0 else None

    def predict(self, row: pd.Series) -> ModelTerms | None:
        host = row.get("host") if isinstance(row.get("host"), str) else "pinned"
        h2d, d2h = self.copies.get(("h2d", host)), self.copies.get(("d2h", host))
        u, peak = self.utilisation(row), self.peak(row)
        t_launch, t_sync = self.launch.t_launch, self.launch.t_sync
        if h2d is None or d2h is None or not u or not peak or t_launch is None or t_sync is None:
            return None
        return ModelTerms(
            h2d=h2d.phase(row),
            compute=_value(row, "flop") / (u * peak),
            d2h=d2h.phase(row),
            launch=_value(row, "kernels", 1.0) * t_launch,
            sync=t_sync,
        )


def build_model(gpu_summary: pd.DataFrame) -> OverheadModel:
    """The model of one machine's GPU (`summarize()` rows of that machine, backend gpu)."""
    kernel = gemm_rows(gpu_summary, e2e=False)
    kernel = kernel[_column(kernel, "pct_peak") > 0]
    keys = zip(*(_column(kernel, c) for c in "mnk"), kernel["dtype"])
    util = dict(zip(keys, _column(kernel, "pct_peak") / 100.0))
    sweeps = itertools.product(("h2d", "d2h"), ("pinned", "pageable"))
    fits = {(d, h): fit_copy(d, h, _probes(gpu_summary, d, h)) for d, h in sweeps}
    copies = {key: fit for key, fit in fits.items() if fit is not None}
    return OverheadModel(copies, fit_launch(gpu_summary), util)
