"""Speedup, time breakdown and utilisation series for the matrix-multiplication rows."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..crossover import Crossover, find_crossover
from ..dataset import Point, Source

__all__ = [
    "DTYPE_ORDER",
    "SpeedupSeries",
    "Breakdown",
    "UtilSeries",
    "cpu_reference",
    "speedup_series",
    "breakdowns",
    "utilisation_series",
    "size_of",
    "PHASES",
]

DTYPE_ORDER = ("fp32", "tf32", "fp16", "bf16", "fp64")
# e2e phases, in the order they happen in one iteration.
PHASES = (
    ("t_h2d", "host-to-device copy"),
    ("t_compute", "compute"),
    ("t_d2h", "device-to-host copy"),
    ("t_overhead", "launch/sync overhead"),
)


def size_of(p: Point) -> float:
    """The x value of a point: n for squares, the flop count for every other shape family."""
    return float(p.c("n")) if p.shape == "square" else float(p.c("flop"))


def _dtype_key(d: str) -> int:
    return DTYPE_ORDER.index(d) if d in DTYPE_ORDER else len(DTYPE_ORDER)


def cpu_dtype_for(gpu_dtype: str) -> str:
    """fp64 GPU results compare with CPU fp64; every other precision with CPU fp32."""
    return "fp64" if gpu_dtype == "fp64" else "fp32"


def cpu_reference(source: Source, dtype: str, mnk: tuple[int, int, int]) -> Point | None:
    """The fastest CPU row for this shape and precision over the thread counts measured."""
    best: Point | None = None
    for p in source.matmul_cpu():
        if p.dtype == dtype and p.mnk == mnk and (best is None or p.time < best.time):
            best = p
    return best


@dataclass
class SpeedupSeries:
    source: Source
    mode: str  # "kernel" or "e2e"
    dtype: str
    host: str | None
    shape: str
    xs: list[float] = field(default_factory=list)
    speedup: list[float] = field(default_factory=list)
    lo: list[float] = field(default_factory=list)
    hi: list[float] = field(default_factory=list)
    gpu: list[Point] = field(default_factory=list)
    cpu: list[Point] = field(default_factory=list)
    crossover: Crossover = field(default_factory=lambda: Crossover("no_data"))

    @property
    def variant(self) -> str:
        return "kernel-only" if self.mode == "kernel" else f"e2e {self.host}"

    @property
    def name(self) -> str:
        return f"{self.variant} {self.dtype}"

    def at(self, x: float) -> int | None:
        for i, v in enumerate(self.xs):
            if v == x:
                return i
        return None


def speedup_series(source: Source, shape: str = "square") -> list[SpeedupSeries]:
    """CPU time / GPU time per GPU variant and precision; spread from the min..max of both."""
    groups: dict[tuple[str, str, str | None], list[Point]] = {}
    for p in source.matmul_kernel() + source.matmul_e2e():
        if (p.shape == "square") != (shape == "square") or (shape != "square" and p.shape != shape):
            continue
        mode = "e2e" if p.is_e2e else "kernel"
        groups.setdefault((mode, p.dtype, p.labels.get("host")), []).append(p)
    out: list[SpeedupSeries] = []
    for (mode, dtype, host), pts in groups.items():
        s = SpeedupSeries(source, mode, dtype, host, shape)
        for p in sorted(pts, key=size_of):
            ref = cpu_reference(source, cpu_dtype_for(dtype), p.mnk)
            if ref is None or not p.time > 0:
                continue
            s.xs.append(size_of(p))
            s.speedup.append(ref.time / p.time)
            s.lo.append(ref.time_min / p.time_max)
            s.hi.append(ref.time_max / p.time_min)
            s.gpu.append(p)
            s.cpu.append(ref)
        if s.xs:
            s.crossover = find_crossover(s.xs, s.speedup)
            out.append(s)
    host_order = {None: 0, "pinned": 1, "pageable": 2}
    out.sort(key=lambda s: (host_order.get(s.host, 3), _dtype_key(s.dtype)))
    return out


@dataclass
class Breakdown:
    """Measured e2e phases (seconds, medians) for one precision and host-memory kind."""

    source: Source
    dtype: str
    host: str
    ns: list[float]
    phases: dict[str, list[float]]
    total: list[float]
    points: list[Point]

    def shares(self, i: int) -> dict[str, float]:
        tot = sum(self.phases[k][i] for k, _ in PHASES)
        return {k: (self.phases[k][i] / tot if tot > 0 else math.nan) for k, _ in PHASES}

    def dominant(self, i: int) -> tuple[str, float]:
        shares = self.shares(i)
        key = max(shares, key=lambda k: shares[k])
        return key, shares[key]


def breakdowns(source: Source) -> list[Breakdown]:
    groups: dict[tuple[str, str], list[Point]] = {}
    for p in source.matmul_e2e():
        if p.shape == "square" and all(p.has(k) for k, _ in PHASES):
            groups.setdefault((p.dtype, p.labels.get("host", "?")), []).append(p)
    out = []
    for (dtype, host), pts in groups.items():
        pts.sort(key=size_of)
        out.append(
            Breakdown(
                source=source,
                dtype=dtype,
                host=host,
                ns=[size_of(p) for p in pts],
                phases={k: [max(0.0, p.c(k)) for p in pts] for k, _ in PHASES},
                total=[p.c("t_wall", p.time) for p in pts],
                points=pts,
            )
        )
    out.sort(key=lambda b: (_dtype_key(b.dtype), b.host != "pinned"))
    return out


@dataclass
class UtilSeries:
    source: Source
    backend: str  # "cpu" or "gpu"
    name: str
    xs: list[float]
    pct: list[float]
    lo: list[float]
    hi: list[float]
    points: list[Point]


def utilisation_series(source: Source) -> list[UtilSeries]:
    """pct_peak against n (square shapes): CPU per precision and thread count, GPU kernels per
    precision and the fp32 end-to-end runs (whose percentage counts copies and launches too)."""
    groups: dict[tuple[str, str], list[Point]] = {}
    for p in source.matmul_cpu():
        if p.shape == "square" and p.has("pct_peak"):
            t = int(p.c("threads", 1))
            groups.setdefault(
                ("cpu", f"CPU {p.dtype}, {t} thread{'s' if t > 1 else ''}"), []
            ).append(p)
    for p in source.matmul_kernel():
        if p.shape == "square" and p.has("pct_peak"):
            groups.setdefault(("gpu", f"GPU kernel {p.dtype}"), []).append(p)
    for p in source.matmul_e2e():
        if p.shape == "square" and p.has("pct_peak") and p.dtype == "fp32":
            groups.setdefault(("gpu", f"GPU e2e {p.labels.get('host')} fp32"), []).append(p)
    out = []
    for (backend, name), pts in groups.items():
        pts.sort(key=size_of)
        # The rate is inversely proportional to time, so the time spread maps onto it inverted.
        out.append(
            UtilSeries(
                source=source,
                backend=backend,
                name=name,
                xs=[size_of(p) for p in pts],
                pct=[p.c("pct_peak") for p in pts],
                lo=[p.c("pct_peak") / p.spread[1] for p in pts],
                hi=[p.c("pct_peak") / p.spread[0] for p in pts],
                points=pts,
            )
        )

    def key(s: UtilSeries) -> tuple[int, int, str]:
        dt = next((d for d in DTYPE_ORDER if d in s.name), "")
        return (s.backend == "gpu", _dtype_key(dt), s.name)

    out.sort(key=key)
    return out
