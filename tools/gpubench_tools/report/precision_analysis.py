"""Mixed-precision MLP training (bf16, fp16) against fp32: the same case trained both ways.

A mixed-precision row is named like its fp32 counterpart with a `/precision:<bf16|fp16>` segment
(`mlp/gpu/eager/data:iris/batch:120/hidden:10/readback:0/precision:bf16/manual_time` against
`mlp/gpu/eager/data:iris/batch:120/hidden:10/readback:0/manual_time`; the CPU's
`.../threads:T/precision:bf16`), and its label says `precision=`; a row without one is fp32. The
pair is found by removing that segment from the name, so each speedup compares one path, one case
and one readback setting with itself. PyTorch's autocast rows (tools/reference/torch_amp.py,
variant `torch_eager`) follow the same rule and are paired among themselves, then set against the
suite's eager rows of the same case and precision.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..crossover import Crossover, find_crossover
from ..benchjson import BenchRow
from ..dataset import Source
from .mlp_analysis import MlpPoint, mlp_points

__all__ = [
    "MIXED_PRECISIONS",
    "TORCH_VARIANT",
    "PrecisionPair",
    "PrecisionLine",
    "TorchComparison",
    "fp32_name",
    "path_name",
    "case_name",
    "step_flop",
    "precision_pairs",
    "unpaired_mixed",
    "skipped_mixed",
    "precision_lines",
    "torch_comparisons",
]

MIXED_PRECISIONS = ("bf16", "fp16")
TORCH_VARIANT = "torch_eager"
_PRECISION_SEGMENT = re.compile(r"/precision:[^/]+")
_MIXED_SEGMENT = re.compile(r"/precision:(" + "|".join(MIXED_PRECISIONS) + r")(/|$)")


def _ratio(a: float, b: float) -> float:
    """a / b; NaN unless both are finite and b is positive (a counter a row lacks reads NaN)."""
    return a / b if math.isfinite(a) and math.isfinite(b) and b > 0 else math.nan


def _order(x: float) -> float:
    """A sort key for a number that may be NaN (NaN sorts last instead of scrambling the order)."""
    return x if math.isfinite(x) else math.inf


def fp32_name(run_name: str) -> str:
    """The name of the fp32 row of the same case: the name without its precision segment."""
    return _PRECISION_SEGMENT.sub("", run_name)


def is_torch(m: MlpPoint) -> bool:
    return m.variant == TORCH_VARIANT


def path_name(m: MlpPoint) -> str:
    """The training path a row measures: "GPU eager", "CPU openblas, 16 threads",
    "PyTorch GPU eager"."""
    if is_torch(m):
        return f"PyTorch {m.backend.upper()} eager"
    return m.name


def case_name(m: MlpPoint) -> str:
    """The problem a row trains: "iris, batch 120, hidden 10"."""
    return f"{m.data}, batch {m.batch}, hidden {m.net}"


def step_flop(m: MlpPoint) -> float:
    """Flop of one SGD step: the row's flop (one iteration) over its steps (epochs x steps per
    epoch); NaN when the row has no flop counter."""
    return _ratio(m.point.c("flop"), m.point.c("epochs") * m.steps_per_epoch)


@dataclass
class PrecisionPair:
    """One case trained by one path in fp32 and in a mixed precision."""

    mixed: MlpPoint
    fp32: MlpPoint

    @property
    def precision(self) -> str:
        return self.mixed.point.precision

    @property
    def path(self) -> str:
        return path_name(self.mixed)

    @property
    def case(self) -> str:
        return case_name(self.mixed)

    @property
    def speedup(self) -> float:
        """fp32's time per epoch over the mixed run's: above 1 mixed precision is faster."""
        return _ratio(self.fp32.t_epoch, self.mixed.t_epoch)

    @property
    def step_flop(self) -> float:
        # The same network and batch: either row's count, fp32's where the mixed row lacks it.
        flop = step_flop(self.mixed)
        return flop if math.isfinite(flop) else step_flop(self.fp32)

    @property
    def compute_speedup(self) -> float:
        """fp32's compute phase (t_compute, device time) over the mixed run's; NaN where the
        rows have no phase times (the CPU paths, PyTorch)."""
        return _ratio(self.fp32.point.c("t_compute"), self.mixed.point.c("t_compute"))

    @property
    def overhead_per_epoch(self) -> tuple[float, float]:
        """(fp32, mixed) seconds per epoch outside the compute phase (t_overhead: launch and
        synchronisation), NaN where not measured."""
        fp32, mixed = self.fp32.point, self.mixed.point
        return (
            _ratio(fp32.c("t_overhead"), fp32.c("epochs")),
            _ratio(mixed.c("t_overhead"), mixed.c("epochs")),
        )

    @property
    def extra_kernels(self) -> float | None:
        """Kernel launches per step the mixed run makes beyond fp32's (None where not counted)."""
        a, b = self.fp32.kernels, self.mixed.kernels
        return b - a if a is not None and b is not None else None

    @property
    def final_loss_change(self) -> float:
        """(mixed - fp32) / fp32 of the final training loss; NaN where either is missing."""
        a, b = self.fp32.point.c("final_loss"), self.mixed.point.c("final_loss")
        return _ratio(b - a, abs(a))

    @property
    def steps(self) -> float:
        """SGD steps in one training run of the mixed row (epochs x steps per epoch)."""
        epochs = self.mixed.point.c("epochs")
        return epochs * self.mixed.steps_per_epoch if math.isfinite(epochs) else math.nan


def _all_mlp(source: Source) -> list[MlpPoint]:
    # Every depth and precision: pairs are made by name, so two different nets never meet.
    return mlp_points(source, layers=None, precision=None)


def precision_pairs(source: Source) -> list[PrecisionPair]:
    """Every mixed-precision row of the source with the fp32 row of the same name."""
    points = _all_mlp(source)
    fp32 = {m.point.run_name: m for m in points if m.point.precision == "fp32"}
    pairs = []
    for m in points:
        if m.point.precision in MIXED_PRECISIONS:
            twin = fp32.get(fp32_name(m.point.run_name))
            if twin is not None:
                pairs.append(PrecisionPair(mixed=m, fp32=twin))
    return sorted(pairs, key=lambda p: (p.path, p.precision, _order(p.step_flop), p.case))


def unpaired_mixed(source: Source) -> list[MlpPoint]:
    """Mixed-precision rows whose fp32 counterpart is not in the input."""
    points = _all_mlp(source)
    names = {m.point.run_name for m in points if m.point.precision == "fp32"}
    return [
        m
        for m in points
        if m.point.precision in MIXED_PRECISIONS and fp32_name(m.point.run_name) not in names
    ]


def skipped_mixed(source: Source) -> list[BenchRow]:
    """The MLP mixed-precision rows the machine skipped (no bf16 products on this CPU, ...)."""
    return [
        row
        for _, row in source.skipped
        if row.run_name.startswith("mlp/") and _MIXED_SEGMENT.search(row.run_name)
    ]


@dataclass
class PrecisionLine:
    """One path in one precision: its pairs ordered by the work of a step."""

    path: str
    precision: str
    pairs: list[PrecisionPair]

    @property
    def is_torch(self) -> bool:
        return self.path.startswith("PyTorch")

    @property
    def crossover(self) -> Crossover:
        """Where the mixed run overtakes fp32 as the step grows (log-log interpolation)."""
        usable = [p for p in self.pairs if math.isfinite(p.step_flop)]
        return find_crossover([p.step_flop for p in usable], [p.speedup for p in usable])


def precision_lines(pairs: list[PrecisionPair]) -> list[PrecisionLine]:
    """Pairs grouped by path and precision: the suite's GPU paths, then the CPU, then PyTorch."""
    groups: dict[tuple[str, str], list[PrecisionPair]] = {}
    for p in pairs:
        groups.setdefault((p.path, p.precision), []).append(p)

    def order(key: tuple[str, str]) -> tuple[int, str, str]:
        path, precision = key
        rank = 2 if path.startswith("PyTorch") else (0 if path.startswith("GPU") else 1)
        return rank, path, precision

    return [
        PrecisionLine(
            path, precision, sorted(groups[(path, precision)], key=lambda p: _order(p.step_flop))
        )
        for path, precision in sorted(groups, key=order)
    ]


@dataclass
class TorchComparison:
    """The suite's GPU row and PyTorch's eager row of one case and precision."""

    ours: MlpPoint
    torch: MlpPoint

    @property
    def precision(self) -> str:
        return self.ours.point.precision

    @property
    def ratio(self) -> float:
        """PyTorch's time per epoch over ours: above 1 the suite's step is faster."""
        return _ratio(self.torch.t_epoch, self.ours.t_epoch)


def _case_key(m: MlpPoint) -> tuple[str, int, int, int, int, str]:
    return (m.data, m.batch, m.hidden, m.layers, m.readback, m.point.precision)


def torch_comparisons(source: Source) -> list[TorchComparison]:
    """Each of the suite's resident-input GPU rows (eager, graph) beside PyTorch's row of the same
    data, batch, net, readback and precision; ordered by case, precision, then path."""
    points = _all_mlp(source)
    torch = {_case_key(m): m for m in points if is_torch(m) and m.backend == "gpu"}
    out = [
        TorchComparison(ours=m, torch=torch[_case_key(m)])
        for m in points
        if m.backend == "gpu"
        and not is_torch(m)
        and m.input in ("", "resident")
        and _case_key(m) in torch
    ]
    precision_rank = {"fp32": 0, **{p: i + 1 for i, p in enumerate(MIXED_PRECISIONS)}}
    return sorted(
        out,
        key=lambda c: (
            c.ours.data,
            _order(step_flop(c.ours)),
            case_name(c.ours),
            precision_rank.get(c.precision, 9),
            c.ours.variant,
        ),
    )
