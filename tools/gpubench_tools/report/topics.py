"""What the report says, declared as data: the workloads it compares, the names of their rows the
tools beside the report read, and the charts it draws (their words, and the other names a reader
sees, are templates/words.j2's).

This module is the tools' one declaration of the suite's workloads: no other module of the
report names one (a workload of the public API that none declares is discovered from its rows:
context.discovered_topics). A workload is one `Topic`: which rows are its CPU side and which its
GPU side (row filters over the table's columns), what pairs them (`keys`), which time is compared
and what one of it is called, the GPU paths the answer states, and the sections of its own it adds
(a chart of the breakdown, a per-operation profile, a kernel utilisation chart). A new workload
is one more entry in `TOPICS`; `build.py` turns every entry into a row of the answer table and a
section with its speedup chart, and the templates render them. A topic whose compared time is a
training step (`time_col` "t_step") makes its rows' workload a training workload
(`TRAINING_WORKLOADS`): its GPU rows join the breakdown and its pairs the energy table.

Filter values: a scalar matches equal values; a tuple matches any of its values; `None` matches
rows where the column is absent or empty (a GEMM without a `host` label is the kernel-only run).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..overhead_model import GEMM_WORKLOAD

# The committed GPU reference run (repository paths): what a run without GPU rows is offered as
# its GPU side, by the report and by the advisor.
COMMITTED_GPU_REFERENCE: tuple[str, ...] = (
    "reports/baselines/h100-80gb-hbm3-matmul.json",
    "reports/baselines/h100-80gb-hbm3-mlp.json",
)


def committed_gpu_reference() -> list[str]:
    """The committed reference files as a user can type them from where they are: relative to
    the working directory from inside the checkout, absolute from elsewhere, the repository
    paths where the package is not in a checkout that holds them."""
    root = Path(__file__).resolve().parents[3]
    paths = [root / name for name in COMMITTED_GPU_REFERENCE]
    if not all(path.is_file() for path in paths):
        return list(COMMITTED_GPU_REFERENCE)
    relative = [os.path.relpath(path) for path in paths]
    return [r if not r.startswith("..") else str(path) for r, path in zip(relative, paths)]


# The GPU training rows compared with the CPU: the suite's own paths, no host copy of the inputs
# each step (`input` absent or resident, not pageable/pinned) and no loss read back each step
# (`readback` 0): the throughput a training loop gets. The readback and input variants are
# questions of their own (the Iris ladder shows them). PyTorch rows in the same file are a
# peer, not the GPU side.
# The suite's own CPU training paths: a peer's CPU rows (PyTorch on the CPU, in a reference file
# given with the sweep) are a peer, never the CPU side of a speedup.
_CPU_TRAINING_VARIANTS = ("openblas", "small")
_GPU_TRAINING = {
    "backend": "gpu",
    "variant": ("eager", "graph", "fused"),
    "readback": 0.0,
    "input": (None, "resident"),
}


@dataclass(frozen=True)
class GpuPath:
    """One GPU path the answer states on a line of its own: which of the topic's GPU rows it is
    (a filter added to the topic's `gpu` filter; empty: all of them, the fastest at each size)
    and what it is, in a few words."""

    name: str  # the answer's "GPU path" cell: "eager", "fastest"
    meaning: str  # what the path is, for the answer and the section's sentences
    gpu: dict[str, Any] = field(default_factory=dict)


# A training workload states two paths: what a framework's training loop runs (one launch per
# operation, like PyTorch eager) and the fastest the suite has. The gap between them is the
# lesson of the small nets: the same arithmetic, 42x slower or faster than the CPU.
_TRAINING_PATHS = (
    GpuPath("eager", "one launch per operation, as a framework runs it", {"variant": "eager"}),
    GpuPath("fastest", "the fastest of eager, CUDA graph and fused kernel at each size"),
)

_GEMM_PATH = GpuPath("cuBLAS end to end", "copies in and out of pinned host memory included")


@dataclass(frozen=True)
class PartsChart:
    """A chart (and table) of the "Where the GPU time goes" section: the four parts of the GPU
    time of some of a topic's GPU rows, as shares of each bar.

    With `size`, one bar per size of that column (`sizes`: the ones shown, empty for all) and
    sentences on which part is the largest over which range of sizes; without, one bar per GPU
    path and variant of the rows (their names' path, `readback:` and `input:` parts)."""

    stem: str  # the chart's file name
    title: str
    rows: dict[str, Any]  # row filter over the breakdown's rows
    caption: str
    y_label: str  # what one bar is a share of: "share of the GPU time"
    size: str | None = None
    sizes: tuple[float, ...] = ()
    size_label: str = ""  # the bars' axis: "matrix size"
    lead: str = ""  # what the sentences are about: "End-to-end fp32 GEMM (pinned host memory)"
    # No rows match `rows`: show the first dozen GPU rows of every training workload instead,
    # under this title (an input without the topic's rows still shows what a training step is
    # made of); None: no chart.
    any_training_title: str | None = None


@dataclass(frozen=True)
class StepProfile:
    """A section of its own: where one training step goes, operation by operation, from the
    rows' `t_op:<layer>.<operation>` counters grouped by kind, at the profiled batch nearest
    `batch_near`."""

    id: str  # the section's anchor
    title: str  # the section heading
    chart_title: str  # "{batch}": the profiled batch
    stem: str  # the chart's file name
    rows: dict[str, Any]  # row filter of the profiled rows
    # How the operations group into kinds: (regular expression searched in "<layer>.<operation>",
    # kind), the first match wins; an operation no rule matches is its own layer's kind.
    kinds: tuple[tuple[str, str], ...] = ()
    batch_near: float = 64.0  # big enough to be a real step on every path


@dataclass(frozen=True)
class KernelUtilisation:
    """A chart in the topic's section: its kernel-only GPU rows (no copies) as a share of the
    GPU's peak (`pct_peak`) against size, a line per precision."""

    title: str
    rows: dict[str, Any]  # row filter of the kernel-only rows
    caption: str
    x: str = "n"
    series: str = "dtype"


@dataclass(frozen=True)
class Topic:
    id: str
    title: str  # the answer table's row and the section heading
    cpu: dict[str, Any]  # row filter of the CPU side
    gpu: dict[str, Any]  # row filter of the GPU side
    keys: tuple[str, ...]  # columns that pair a CPU row with a GPU row
    x: str  # the size axis of the chart and of "wins at" (a column, one of keys)
    x_name: str  # how a sentence names the size: "n", "batch"
    # The GPU paths the answer states, one line each, in order; the last is the section's curve.
    paths: tuple[GpuPath, ...]
    series: str | None = None  # one speedup line per value of this key (e.g. hidden)
    time_col: str = "time_s"  # compared time: a training step for training rows
    time_name: str = "call"  # what one compared time is: a "call", a training "step"
    # What one compared time is on each side, for the definition of the speedup.
    cpu_time_name: str = "CPU wall time per call"
    gpu_time_name: str = "GPU time per call"
    # Sections and charts of the workload's own, beyond its speedup section.
    parts: PartsChart | None = None  # its chart in "Where the GPU time goes"
    profile: StepProfile | None = None
    utilisation: KernelUtilisation | None = None


# What each side of a speedup divides: the CPU GEMM's time per call (the wall clock of
# Google Benchmark's iteration, operands in host memory), the end-to-end GPU GEMM's host wall
# clock around its synchronised iteration (docs/timing-method.md); a training row's t_step.
E2E_GPU_TIME = "GPU wall time per call, copies to and from pinned host memory included"
_CPU_STEP = "CPU wall time per training step"
_GPU_STEP = "GPU wall time per training step (batch on the device, loss not read back)"


def _gemm_topic(dtype: str, **extra: Any) -> Topic:
    """The square GEMM in one precision: the CPU call against cuBLAS end to end from pinned host
    memory, time per call against n. `extra` holds its own charts."""
    square = {"workload": "matmul", "shape": "square", "dtype": dtype}
    gpu = {**square, "backend": "gpu", "host": "pinned", "variant": "cublas_e2e"}
    return Topic(
        "gemm" if dtype == "fp32" else f"gemm-{dtype}", f"Square GEMM, {dtype}",
        {**square, "backend": "cpu"}, gpu, keys=("n",), x="n", x_name="n", paths=(_GEMM_PATH,),
        gpu_time_name=E2E_GPU_TIME, **extra,
    )  # fmt: skip


def _training_topic(
    id: str,
    title: str,
    workload: str,
    keys: tuple[str, ...],
    precision: str = "fp32",
    data: str | None = None,
    **extra: Any,
) -> Topic:
    """A training workload's topic: steps in one precision (and one data set, where `data` names
    one), CPU against the GPU paths, step time against batch. `extra` holds what is its own:
    `series`, charts."""
    rows = {"workload": workload, **({} if data is None else {"data": data})}
    cpu = {**rows, "backend": "cpu", "variant": _CPU_TRAINING_VARIANTS, "precision": precision}
    return Topic(
        id, title, cpu, {**rows, "precision": precision, **_GPU_TRAINING}, keys, x="batch",
        x_name="batch", time_col="t_step", time_name="step", paths=_TRAINING_PATHS,
        cpu_time_name=_CPU_STEP, gpu_time_name=_GPU_STEP, **extra,
    )  # fmt: skip


# fmt: off
TOPICS: tuple[Topic, ...] = (
    _gemm_topic(
        "fp32",
        parts=PartsChart(
            stem="breakdown_gemm", title="Where the end-to-end GEMM time goes (fp32, pinned)",
            rows={"workload": "matmul", "host": "pinned", "dtype": "fp32", "shape": "square"},
            caption="Each bar is one GEMM's GPU time in its parts; its total is printed at its "
            "end. Under-utilisation is the compute time beyond its roof, the larger of its flop "
            "at the GPU's peak and its bytes at the memory bandwidth: a nearly idle GPU at small "
            "sizes.",
            y_label="share of the GPU time", size="n", size_label="matrix size",
            # Powers of two only: a bar per size of a 20-size sweep would not read at a glance.
            sizes=tuple(2.0**e for e in range(4, 15)),
            lead="End-to-end fp32 GEMM (pinned host memory)"),
        utilisation=KernelUtilisation(
            title="GPU kernel-only GEMM: share of peak by precision",
            rows={"workload": "matmul", "backend": "gpu", "shape": "square", "host": None},
            caption="Operands already on the GPU (no copies): what is left below 100% at "
            "small n is the under-utilisation of the breakdown."),
    ),
    _gemm_topic("bf16"),
    _training_topic(
        id="mlp-iris", title="MLP training on Iris", workload="mlp", data="iris",
        keys=("hidden", "batch"),
        # The Iris ladder: one small net, every GPU path and readback/input variant of it.
        parts=PartsChart(
            stem="breakdown_training", title="Where a GPU training step goes (MLP on Iris)",
            rows={"workload": "mlp", "data": "iris"},
            caption="One bar per GPU path and variant (readback: the loss copied to the host "
            "every N steps, 0 never; input: the batch copied from pageable or pinned "
            "host memory each step). The launch overhead of the eager path is what "
            "CUDA graphs and the fused kernel remove.",
            y_label="share of the step", any_training_title="Where a GPU training step goes"),
    ),
    _training_topic(
        id="mlp-digits", title="MLP training on digits", workload="mlp", data="digits",
        keys=("hidden", "batch"), series="hidden",
    ),
    _training_topic(
        id="mlp-sweep", title="MLP training sweep (synthetic data)", workload="mlp",
        data="synthetic", keys=("hidden", "batch"), series="hidden",
    ),
    _training_topic(
        id="cnn", title="CIFAR-10 CNN training", workload="cnn", keys=("batch",),
        profile=StepProfile(
            id="profile", title="The CNN step, operation by operation",
            chart_title="Where a CNN training step goes, batch {batch}", stem="profile_cnn",
            rows={"workload": "cnn"},
            kinds=((r"\.im2col$", "im2col"), (r"\.bias", "bias"), (r"^pool", "pool"),
                   (r"\.(gemm|weight_gradient|input_gradient)$|^fc", "GEMM"),
                   (r"^loss(\.|$)", "loss"), (r"^update(\.|$)", "update"),
                   (r"^launch_gaps(\.|$)", "launch gaps"))),
    ),
    _training_topic(
        id="mixed", title="Mixed-precision MLP training (bf16)", workload="mlp",
        precision="bf16", keys=("data", "hidden", "batch"), series="hidden",
    ),
)
# fmt: on


# A workload only its rows describe (context.discovered_topics): its GPU path, and its charts of
# the GPU time ("{workload}": its name, "{x}": its size axis's column, "{x_name}": the axis's name).
DISCOVERED_PATH = GpuPath("end to end", "copies in and out of pinned host memory included")
DISCOVERED_PARTS = PartsChart(
    stem="breakdown_{workload}",
    title="Where the end-to-end {workload} time goes (pinned)",
    rows={},
    caption="Each bar is one call's GPU time in its parts; its total is printed at its end. "
    "Under-utilisation is the compute time beyond its roof, the larger of its flop at the GPU's "
    "peak and its bytes at the memory bandwidth.",
    y_label="share of the GPU time",
    size="{x_name}",  # the breakdown names an `axis:` column by its axis (analysis.breakdown)
    size_label="{x_name}",
    lead="End-to-end {workload} (pinned host memory)",
)
DISCOVERED_UTILISATION = KernelUtilisation(
    title="GPU kernel-only {workload}: share of peak",
    rows={},
    caption="Buffers already on the GPU (no copies): what is left below 100% at small sizes is "
    "the under-utilisation of the breakdown.",
    x="{x}",
    series="variant",
)


@dataclass(frozen=True)
class EnergyTopic:
    """Energy per unit of work, CPU against GPU, over the CPU/GPU pairs of some topics (the same
    sides, keys and fastest GPU path at each size as their speedups). A side's energy is its
    counter (joules per iteration: harness/conditions.hpp) divided by the work units per
    iteration (`per`, e.g. `steps`; one where a row has none). A pair is compared where both sides
    have energy; a side without it is said, with `cpu_absent` for the CPU."""

    id: str
    title: str
    topics: tuple[str, ...]  # Topic ids
    unit_name: str  # what one unit of work is: "step"
    per: str = "steps"
    gpu_counter: str = "gpu_energy_j"  # NVML's energy counter over the loop, per iteration
    cpu_counter: str = "cpu_energy_j"  # RAPL's package energy over the loop, per iteration
    # Why a CPU run has none: the run's own words (context key `cpu_absent_context`, "unavailable:
    # <why>"), else `cpu_absent` (a bench older than its RAPL reading).
    cpu_absent_context: str = "cpu_energy_counter"
    cpu_absent: str = "not recorded: the bench that wrote the CPU run reads no CPU energy counter"


# The topics that compare a training step. Their workloads, in declaration order: their GPU rows
# are the breakdown's training rows (analysis.breakdown); their pairs: the energy table's.
_TRAINING_TOPICS = [t for t in TOPICS if t.time_col == "t_step"]
TRAINING_WORKLOADS: tuple[str, ...] = tuple(
    dict.fromkeys(t.cpu["workload"] for t in _TRAINING_TOPICS)
)
ENERGY = EnergyTopic(
    "energy", "Energy per training step, CPU vs GPU", tuple(t.id for t in _TRAINING_TOPICS), "step"
)


@dataclass(frozen=True)
class Peer:
    """The same work run by a peer library (PyTorch) and by the suite: the ratio peer / ours,
    above 1 where the suite is faster."""

    title: str
    ours: dict[str, Any]
    peer: dict[str, Any]
    keys: tuple[str, ...]
    time_col: str = "time_s"
    names: tuple[str, str] = ("ours", "PyTorch eager")  # table headers: ours, the peer


_TORCH_TRAINING = ("torch_eager",)
# fmt: off
PEERS: tuple[Peer, ...] = (
    Peer("GEMM kernel: torch.mm against cuBLAS",
         ours={"workload": "matmul", "backend": "gpu", "variant": "cublas_kernel"},
         peer={"workload": "matmul", "backend": "gpu", "variant": "torch_mm"},
         keys=("dtype", "m", "n", "k")),
    Peer("MLP training step: PyTorch eager against the suite's eager path",
         ours={"workload": "mlp", "variant": "eager", "input": (None, "resident")},
         peer={"workload": "mlp", "variant": _TORCH_TRAINING},
         keys=("backend", "data", "hidden", "batch", "readback", "precision"), time_col="t_step"),
    Peer("MLP training step on the CPU: PyTorch against the suite's fastest CPU path",
         ours={"workload": "mlp", "backend": "cpu", "variant": _CPU_TRAINING_VARIANTS},
         peer={"workload": "mlp", "backend": "cpu", "variant": _TORCH_TRAINING},
         keys=("data", "hidden", "batch", "precision"), time_col="t_step"),
    Peer("CNN training step: PyTorch eager against the suite",
         ours={"workload": "cnn", "variant": ("eager", "openblas")},
         peer={"workload": "cnn", "variant": _TORCH_TRAINING},
         keys=("backend", "batch", "precision"), time_col="t_step"),
)

# Mixed precision against fp32 on the same path, net and batch (the peer is fp32 here).
PEERS += tuple(
    Peer(f"MLP training step, {precision} against fp32 on the same path",
         ours={"workload": "mlp", "precision": precision, "input": (None, "resident")},
         peer={"workload": "mlp", "precision": "fp32", "input": (None, "resident")},
         keys=("backend", "variant", "data", "hidden", "batch", "readback"), time_col="t_step",
         names=(precision, "fp32"))
    for precision in ("bf16", "fp16")
)
# fmt: on


# The report's charts, as data: the fields of a charts.Chart but its words (its title, axis
# labels, legend entries and the caption under it: the macro `chart_<name>` of
# templates/words.j2). One builder (build._draw) draws each from its frame; a "{...}"
# field is filled from what the chart is drawn for (`topic`, its last GPU `path`, a PartsChart
# `view`, a StepProfile `profile`, a KernelUtilisation `use`, the profiled `batch`).
_LOG = {"log_x": True, "log_y": True}
# fmt: off
CHARTS: dict[str, dict[str, Any]] = {
    "speedup": dict(
        kind="lines", stem="speedup_{topic.id}", x="{topic.x}", y="speedup", y_low="speedup_low",
        y_high="speedup_high", flag="flagged", **_LOG, hline=1.0, y_unit="ratio"),
    "time": dict(
        kind="lines", stem="time_{topic.id}", x="{topic.x}", y="time", series="side", y_low="low",
        y_high="high", flag="hollow", **_LOG, y_unit="s"),
    "measured": dict(
        kind="lines", stem="measured_{f.anchor}", x="flop", y="time", series="line", y_low="low",
        y_high="high", flag="hollow", **_LOG, x_unit="count", y_unit="s"),
    "heatmap": dict(
        kind="heatmap", stem="heatmap_{topic.id}", x="{topic.x}", y="{topic.series}",
        value="speedup"),
    "utilisation": dict(
        kind="lines", stem="utilisation_{topic.id}", x="{use.x}", y="pct_peak",
        series="{use.series}", flag="few_samples", **_LOG, y_unit="count"),
    "parts": dict(kind="stacked", stem="{view.stem}", x="bar"),
    "profile": dict(kind="stacked", stem="{profile.stem}", x="path"),
    "copies": dict(
        kind="lines", stem="copies", x="bytes", y="bytes_per_s", series="copy", flag="few", **_LOG,
        x_unit="bytes", y_unit="bytes/s"),
    "threads": dict(
        kind="lines", stem="cpu_threads", x="threads", y="speedup", series="benchmark",
        y_low="speedup_low", y_high="speedup_high", flag="flagged", diagonal=True, y_unit="ratio",
        x_ticks="data"),
    "memory": dict(
        kind="lines", stem="memory_model", x="device_bytes_model", y="device_bytes_peak",
        series="family", connect=False, diagonal=True, **_LOG, x_unit="bytes", y_unit="bytes"),
    "allocation": dict(
        kind="lines", stem="allocation", x="bytes", y="time_s", series="call", y_low="time_s",
        y_high="slowest_decile_s", flag="few_samples", **_LOG, x_unit="bytes", y_unit="s"),
}
# fmt: on

# The GEMMs whose model error the model section's sentence states (the fp32 speedup curve's): a
# row filter over the error's bands.
MODEL_ERROR_SAID: dict[str, Any] = {"dtype": "fp32", "host": "pinned"}

# The rows the tools beside the report read by their labels: the GEMM rows' workload (the
# overhead model's end-to-end and kernel-only GEMMs, the advisor's curves: GEMM_WORKLOAD, imported
# from overhead_model, which declares it below the report), and the tiny MLP the
# advisor predicts: its workload, the paths its model is of (GPU: one launch per operation; CPU:
# OpenBLAS), its data sets' (input features, classes) as benchmarks/mlp_*.cpp build the networks
# (the first is the default), and how the advisor names the GEMM rows a run lacks.
ADVISED_MLP: dict[str, str] = {"workload": "mlp", "gpu": "eager", "cpu": "openblas"}
MLP_DATASETS: dict[str, tuple[int, int]] = {
    "synthetic": (64, 10),
    "digits": (64, 10),
    "iris": (4, 3),
}
# The training steps' work (docs/workloads.md, "Work: flop and bytes"), for rows written before
# bench counted bytes (roofline.derived_bytes): fp32 values; the CIFAR-10 network's convolutions
# (in channels, out channels, input size; 5x5 kernels, 2x2 pools) and linears (kernels/cnn/).
FP32 = 4
CNN_CONV = ((3, 32, 32), (32, 32, 16), (32, 64, 8))
CNN_LINEAR = ((1024, 64), (64, 10))


def _linear(batch: float, fan_in: float, fan_out: float, first: bool) -> tuple[float, float]:
    """(flop, elements) of one dense layer's forward, weight gradient and input gradient."""
    rows_in, rows_out, weights = batch * fan_in, batch * fan_out, fan_in * fan_out
    flop = (2.0 if first else 3.0) * 2 * batch * fan_in * fan_out
    elements = 2 * (rows_in + weights + fan_out + rows_out)
    return flop, elements + (0 if first else rows_out + weights + rows_in)


def mlp_step_work(data: str, hidden: list[int], batch: float) -> tuple[float, float]:
    """(flop, bytes) of one SGD step of the MLP (kernels/mlp/mlp_spec.cpp's model)."""
    inputs, classes = MLP_DATASETS[data]
    widths = [inputs, *hidden, classes]
    flop = elements = 0.0
    for layer, (fan_in, fan_out) in enumerate(zip(widths, widths[1:])):
        f, e = _linear(batch, fan_in, fan_out, layer == 0)
        flop, elements = flop + f, elements + e + (batch * fan_in if layer > 0 else 0)
    parameters = sum(i * o + o for i, o in zip(widths, widths[1:]))
    return flop, FP32 * (elements + 2 * batch * classes + batch + 3 * parameters)


def cnn_step_work(batch: float) -> tuple[float, float]:
    """(flop, bytes) of one SGD step of the CNN (kernels/cnn/cnn_spec.cpp's model)."""
    flop = elements = parameters = 0.0
    for layer, (c_in, c_out, size) in enumerate(CNN_CONV):
        pixels, weights = size * size, c_out * c_in * 25
        x, y = batch * c_in * pixels, batch * c_out * pixels
        product = 2 * batch * c_out * c_in * 25 * pixels
        flop += product * (2 if layer == 0 else 3)
        elements += 2 * (x + weights + c_out + y) + 3 * y + 2 * y / 4
        elements += 0 if layer == 0 else y + weights + x
        parameters += weights + c_out
    for fan_in, fan_out in CNN_LINEAR:
        f, e = _linear(batch, fan_in, fan_out, first=False)
        flop, elements, parameters = flop + f, elements + e, parameters + fan_in * fan_out + fan_out
    return flop, FP32 * (elements + 2 * batch * 10 + batch + 3 * parameters)


def _name_value(name: str, key: str) -> str | None:
    found = re.search(rf"(?:^|/){key}:([^/]+)", name)
    return found.group(1) if found else None


def _mlp_step(name: str) -> tuple[float, float] | None:
    data, batch = _name_value(name, "data"), _name_value(name, "batch")
    if data not in MLP_DATASETS or batch is None:
        return None
    width, _, depth = (_name_value(name, "hidden") or "").partition("x")
    return mlp_step_work(data, [int(width)] * int(depth or 1), float(batch))


def _cnn_step(name: str) -> tuple[float, float] | None:
    batch = _name_value(name, "batch")
    return None if batch is None else cnn_step_work(float(batch))


# Each training workload's step model by the first part of its names.
TRAINING_STEP_WORK = {"mlp": _mlp_step, "cnn": _cnn_step}
GEMM_ROW_NAMES: dict[str, str] = {
    "gpu": "matmul/gpu/cublas_kernel/dtype:{dtype}/...",
    "cpu": "matmul/cpu/openblas/dtype:{dtype}/...",
}

# The allocation probes (benchmarks/alloc_probes.cpp), by the probe part of their names: what
# each call is, in the order a reader compares them (device, the pool that saves it, pinned).
ALLOCATION_PROBES: dict[str, str] = {
    "malloc/device": "cudaMalloc",
    "free/device": "cudaFree",
    "async": "cudaMallocAsync + cudaFreeAsync (warm pool)",
    "malloc/pinned": "cudaMallocHost (pinned)",
    "free/pinned": "cudaFreeHost (pinned)",
}
# The host-device copy probes (their bandwidth against size is the model section's chart).
COPY_PROBES: dict[str, Any] = {"probe": ("h2d", "d2h")}
# What a warm pool saves: the probes of an allocation and a free without it, and the pool's.
POOL = ("malloc/device", "free/device", "async")
# Measured device memory within this factor of the model either way counts as agreeing: the
# allocator's 2 MiB pages alone put a small benchmark several percent above its shapes' bytes.
MEMORY_AGREEMENT = 1.1
# The memory section's families, by the rows' workload label.
MEMORY_FAMILIES: dict[str, str] = {
    "matmul": "GEMM",
    "mlp": "MLP",
    "cnn": "CNN",
    "memory": "largest batch",
    "overhead": "allocation probes",
}
# The largest-batch rows (benchmarks/largest_batch.cpp): their filter, and the start of their
# names, which also names those that did not run (a batch that did not fit is skipped).
LARGEST_BATCH: dict[str, Any] = {"variant": "largest_batch"}
LARGEST_BATCH_NAMES = "memory/"
