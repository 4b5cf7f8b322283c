"""CNN training rows (the CIFAR-10 tutorial network): time per step against batch size, the batch
where the GPU overtakes the CPU, and where one step's time goes, operation by operation.

Rows are `cnn/<cpu|gpu>/<variant>/data:D/batch:B/readback:R[/threads:T][/input:I]`: the suite's
paths (cpu/openblas, gpu/eager, gpu/graph) and PyTorch's (`torch_eager`, from
tools/reference/torch_cnn.py, whose labels carry no workload or backend: the name says them).
Every suite row carries the mean time per step of each operation of a profiled step as counters
`t_op:<operation>` (conv1.im2col, conv1.gemm, ..., loss, ..., update, and on the GPU eager path
launch_gaps, the time the GPU waits for the host between operations).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from ..crossover import Crossover, find_crossover
from ..dataset import Point, Source
from ..schema import COUNTER_PREFIXES

__all__ = [
    "OP_PREFIX",
    "OP_KINDS",
    "LAYERS",
    "TUTORIAL_BATCH",
    "CnnPoint",
    "CnnCrossover",
    "cnn_points",
    "cnn_data_set",
    "cnn_lines",
    "best_cpu_by_batch",
    "cnn_crossovers",
    "op_kind",
    "op_layer",
    "profile_batch",
    "profiles_at",
    "kind_shares",
    "layer_shares",
]

# The per-operation counters' prefix, declared in the schema with its unit (seconds per step).
OP_PREFIX = "t_op:"
assert OP_PREFIX in COUNTER_PREFIXES
# The batch of the PyTorch tutorial; the sweep profiles every path there.
TUTORIAL_BATCH = 64
# Operation kinds in the order a step runs them, as the breakdown chart stacks them.
OP_KINDS = ("im2col", "GEMM", "bias", "pool", "loss", "update", "launch gaps", "other")
LAYERS = ("conv1", "conv2", "conv3", "fc1", "fc2", "loss", "update", "launch gaps", "other")


def op_kind(operation: str) -> str:
    """The kind of one profiled operation. The products (convolution forward, weight and input
    gradients, linear layers) are GEMMs; a convolution's input gradient includes its col2im and
    a linear layer's forward its bias, since the trainers time them as one operation."""
    if operation == "launch_gaps":
        return "launch gaps"
    if operation in ("loss", "update"):
        return operation
    layer, _, part = operation.partition(".")
    if part == "im2col":
        return "im2col"
    if part in ("gemm", "weight_gradient", "input_gradient") or layer.startswith("fc"):
        return "GEMM"
    if part in ("bias", "bias_gradient"):
        return "bias"
    if layer.startswith("pool"):
        return "pool"
    return "other"


def op_layer(operation: str) -> str:
    """The layer an operation belongs to: poolL with convL (the pool ends that block)."""
    if operation == "launch_gaps":
        return "launch gaps"
    layer = operation.partition(".")[0]
    if layer.startswith("pool"):
        layer = "conv" + layer.removeprefix("pool")
    return layer if layer in LAYERS else "other"


@dataclass
class CnnPoint:
    point: Point
    backend: str  # "cpu" or "gpu"
    variant: str  # openblas, eager, graph, torch_eager
    data: str
    batch: int
    readback: int
    threads: int | None  # CPU rows: OpenBLAS (or PyTorch) threads
    input: str  # "" / "resident": on the device; "pageable" / "pinned": copied every step

    @property
    def t_step(self) -> float:
        """Seconds per SGD step: the counter, else the iteration time over its steps."""
        t = self.point.c("t_step")
        if math.isfinite(t):
            return t
        steps = self.point.c("steps")
        return self.point.time / steps if math.isfinite(steps) and steps > 0 else math.nan

    @property
    def t_step_range(self) -> tuple[float, float]:
        lo, hi = self.point.spread
        return self.t_step * lo, self.t_step * hi

    @property
    def images_per_s(self) -> float:
        v = self.point.c("images_per_s")
        return v if math.isfinite(v) else self.batch / self.t_step

    @property
    def is_torch(self) -> bool:
        return self.variant.startswith("torch")

    @property
    def resident(self) -> bool:
        return self.input in ("", "resident") or self.backend == "cpu"

    @property
    def ops(self) -> dict[str, float]:
        """Seconds per step of each profiled operation (empty for rows without a profile)."""
        return {
            k.removeprefix(OP_PREFIX): v
            for k, v in self.point.counters.items()
            if k.startswith(OP_PREFIX) and math.isfinite(v)
        }

    @property
    def profiled_step(self) -> float:
        """The profiled step: the sum of its operations (and launch gaps)."""
        return float(sum(self.ops.values()))

    @property
    def name(self) -> str:
        """The line a chart draws this row on: path and thread count, not batch or readback."""
        who = "PyTorch" if self.is_torch else None
        if self.backend == "gpu":
            extra = "" if self.resident else f", input {self.input}"
            return f"{who} GPU{extra}" if who else f"GPU {self.variant}{extra}"
        t = self.threads or 1
        threads = f"{t} thread{'s' if t > 1 else ''}"
        return f"{who} CPU, {threads}" if who else f"CPU {self.variant}, {threads}"


def _name_part(run_name: str, key: str) -> str | None:
    """The value of `key:value` in a benchmark name, for a label that lacks the key."""
    prefix = f"{key}:"
    return next((p.removeprefix(prefix) for p in run_name.split("/") if p.startswith(prefix)), None)


def cnn_points(source: Source) -> list[CnnPoint]:
    out = []
    for p in source.points:
        if p.workload != "cnn" or p.backend not in ("cpu", "gpu"):
            continue
        gpu = p.is_gpu
        threads = p.c("threads")
        if not math.isfinite(threads):
            threads = p.c("torch_threads")
        readback = p.c("readback")
        out.append(
            CnnPoint(
                point=p,
                backend="gpu" if gpu else "cpu",
                variant=p.labels.get("variant") or p.run_name.split("/")[2],
                data=p.labels.get("data") or _name_part(p.run_name, "data") or "?",
                batch=int(p.c("batch", 0.0)),
                readback=int(readback) if math.isfinite(readback) else 0,
                threads=int(threads) if math.isfinite(threads) and not gpu else None,
                input=p.labels.get("input", ""),
            )
        )
    return [m for m in out if m.batch > 0]


def cnn_data_set(points: list[CnnPoint]) -> str:
    """The data set the charts show: real CIFAR-10 where it was measured, else the most rows'."""
    datas = Counter(m.data for m in points)
    if not datas:
        return ""
    return "cifar10" if "cifar10" in datas else datas.most_common(1)[0][0]


def cnn_lines(points: list[CnnPoint], data: str) -> dict[str, list[CnnPoint]]:
    """One line per path (and thread count) over batch, data resident on the device.

    Each line keeps one readback setting, the one that covers the most batches (never reading
    the loss back on a tie: that measures training alone). PyTorch reads it every step, the CPU
    has it on the host anyway, and the GPU paths are measured without readback at every batch.
    """
    by_name: dict[str, list[CnnPoint]] = {}
    for m in points:
        if m.data == data and m.resident:
            by_name.setdefault(m.name, []).append(m)
    lines: dict[str, list[CnnPoint]] = {}
    for name, ms in by_name.items():
        counts = Counter(m.readback for m in ms)
        readback = max(counts, key=lambda r: (counts[r], r == 0))
        line = sorted((m for m in ms if m.readback == readback), key=lambda m: m.batch)
        lines[name] = line

    def key(item: tuple[str, list[CnnPoint]]) -> tuple[bool, bool, str, int, str]:
        m = item[1][0]
        return (m.is_torch, m.backend != "cpu", m.variant, m.threads or 0, item[0])

    return dict(sorted(lines.items(), key=key))


def best_cpu_by_batch(lines: dict[str, list[CnnPoint]]) -> dict[int, CnnPoint]:
    """The fastest of the suite's CPU runs (over thread counts) at each batch. PyTorch is a
    reference beside the suite, not one of the CPU paths the GPU is measured against."""
    best: dict[int, CnnPoint] = {}
    for line in lines.values():
        for m in line:
            if m.backend == "cpu" and not m.is_torch and math.isfinite(m.t_step):
                if m.batch not in best or m.t_step < best[m.batch].t_step:
                    best[m.batch] = m
    return best


@dataclass
class CnnCrossover:
    """One GPU path against the best CPU run per batch: the ratio CPU / GPU time per step."""

    name: str
    batches: list[int]
    speedup: list[float]
    crossover: Crossover


def cnn_crossovers(lines: dict[str, list[CnnPoint]]) -> list[CnnCrossover]:
    """Per suite GPU path: where its step gets faster than the best CPU step. The crossing is
    interpolated in log(batch) and log(ratio) like the GEMM crossovers, at the last upward
    crossing, so noise around 1 at small batches does not report one the GPU then loses."""
    best = best_cpu_by_batch(lines)
    out = []
    for name, line in lines.items():
        if line[0].backend != "gpu" or line[0].is_torch:
            continue
        pairs = [(m.batch, best[m.batch].t_step / m.t_step) for m in line if m.batch in best]
        pairs = [(b, v) for b, v in pairs if math.isfinite(v) and v > 0]
        if not pairs:
            continue
        batches, speedup = [b for b, _ in pairs], [v for _, v in pairs]
        out.append(CnnCrossover(name, batches, speedup, find_crossover(batches, speedup)))
    return out


def profile_batch(points: list[CnnPoint], data: str) -> int | None:
    """The batch the breakdown shows: the tutorial's 64 where it was profiled, else the
    profiled batch nearest to it on a log scale."""
    batches = {m.batch for m in points if m.data == data and m.ops}
    if not batches:
        return None
    return min(batches, key=lambda b: (abs(math.log(b / TUTORIAL_BATCH)), b))


def profiles_at(points: list[CnnPoint], data: str, batch: int) -> list[CnnPoint]:
    """The profiled rows at one batch, one per path (resident data, the line's readback), CPU
    first, in the order of `cnn_lines`."""
    lines = cnn_lines(points, data)
    out = []
    for line in lines.values():
        m = next((m for m in line if m.batch == batch), None)
        if m is not None and m.ops:
            out.append(m)
    return out


def _shares(m: CnnPoint, group: str) -> dict[str, float]:
    total = m.profiled_step
    if not total > 0:
        return {}
    keys = OP_KINDS if group == "kind" else LAYERS
    sums = dict.fromkeys(keys, 0.0)
    for op, t in m.ops.items():
        sums[op_kind(op) if group == "kind" else op_layer(op)] += t
    return {k: v / total for k, v in sums.items()}


def kind_shares(m: CnnPoint) -> dict[str, float]:
    """Share of the profiled step per operation kind (OP_KINDS), summing to 1."""
    return _shares(m, "kind")


def layer_shares(m: CnnPoint) -> dict[str, float]:
    """Share of the profiled step per layer (conv1 .. fc2, loss, update, launch gaps)."""
    return _shares(m, "layer")
