"""The advisor's predictions from one machine's run: a GEMM or a tiny-MLP training step, on the
CPU and on the GPU (docs/advisor.md gives the formulas and what they are measured against).

A GEMM on the GPU, end to end, is its parts T_h2d + T_compute + T_d2h + T_launch + T_sync: the
copies, launch and sync costs from the fitted overhead model (docs/timing-method.md, "The
overhead model"), the compute from the dtype's kernel-only utilisation curve (`curves`), never
faster than reading A and B and writing C at the memory bandwidth. The CPU's time is its OpenBLAS
curve of the same precision at each measured thread count; the faster is the CPU's answer. An MLP
step (docs/workloads.md, "Tiny-MLP workloads") is its layer products looked up the same way, its
element-wise passes at memory speed, and on the GPU its launches, loss readback and input copies.
The run is one machine's rows of `table.summarize()` with a few columns derived once (`Run`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Sequence, TypeVar

import numpy as np
import pandas as pd
from pandas.api.types import is_number

from ..overhead_model import CopyFit, OverheadModel, build_model
from ..roofline import DTYPE_BYTES, GPU_BANDWIDTH_KEYS, cpu_bandwidth
from ..report.topics import ADVISED_MLP, GEMM_WORKLOAD, MLP_DATASETS, committed_gpu_reference
from ..status import Said
from ..table import load_table, per_step, summarize
from .curves import GemmShape, Lookup, lookup

DTYPES: tuple[str, ...] = tuple(DTYPE_BYTES)
HOSTS: tuple[str, ...] = ("pinned", "pageable", "resident")
MLP_INPUTS: tuple[str, ...] = ("resident", "pinned", "pageable")
# The CPU's element-wise loops of an MLP step stream their arrays once per pass, at the run's
# measured triad (bench's context, docs/workloads.md "The roofs"); a file from before bench
# measured it gets one core's typical streaming rate instead.
CPU_STREAM_BYTES_PER_S = 10e9
LOSS_BYTES = 4.0
# The roofs a product's time is floored at (Lookup.floor names the one that raised it).
DEVICE_ROOF, HOST_ROOF = "device memory bandwidth", "host memory bandwidth"
# The counters the advisor reads (`blas_threads`: OpenBLAS threads; older files named it
# `threads`).
_COUNTERS = ("m", "n", "k", "flop", "t_compute", "t_wall", "t_step", "batch", "hidden")
_COUNTERS += ("blas_threads", "threads", "readback", "hidden_layers")


class AdviseError(Exception):
    """The request or the run cannot give an answer, as data: the macro `sentence` of
    templates/errors.j2 and the facts it is given (render.error_text words it; the CLI exits 2)."""

    def __init__(self, sentence: str, **facts: Any) -> None:
        super().__init__(sentence, facts)
        self.sentence, self.facts = sentence, facts


def cpu_dtype_for(gpu_dtype: str) -> str:
    """fp64 compares with CPU fp64; every other precision with CPU fp32 (OpenBLAS has no tf32 or
    16-bit GEMM), as the report compares them."""
    return "fp64" if gpu_dtype == "fp64" else "fp32"


T = TypeVar("T")


@dataclass
class Run:
    """One machine: its summary rows (see `_derive` for the columns added) and its names."""

    rows: pd.DataFrame
    files: list[str]
    gpu: str | None
    cpu: str
    context: dict[str, Any]
    # The files of another machine's run whose GPU rows stand in for this run's (a CPU run
    # passed with a GPU reference run): empty when the GPU rows are the run's own.
    gpu_files: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        own, gpu = (" + ".join(Path(p).name for p in f) for f in (self.files, self.gpu_files))
        return own + (f", GPU side from the reference run {gpu}" if gpu else "")

    def reference_missing(self) -> list[str]:
        """The committed reference run's files that were not passed already (a file counts as
        passed by its path or its name): what to try when the run lacks rows (errors.j2)."""

        def names(path: str) -> set[str]:
            return {Path(path).name, str(Path(path).resolve())}

        given = set().union(*map(names, [*self.files, *self.gpu_files]))
        return [path for path in committed_gpu_reference() if names(path).isdisjoint(given)]

    @cached_property
    def curve_rows(self) -> pd.DataFrame:
        """The rows the curves are read from (kernel-only GPU and CPU GEMMs), with only the
        columns a look-up reads: the summary is wide, and leave-one-out makes an advisor per
        row. `family` is the shape label; `flop` is 2 m n k."""
        rows = self.rows
        use = rows["kind"].isin(["gemm_kernel", "gemm_cpu"]) & (rows["flop"] > 0)
        use &= rows["seconds"] > 0
        curves = rows.loc[use, ["backend", "dtype", "threads", "shape", "m", "n", "k", "seconds"]]
        flop = 2.0 * curves["m"] * curves["n"] * curves["k"]
        return curves.rename(columns={"shape": "family"}).assign(flop=flop)

    def ctx_float(self, key: str) -> float | None:
        """A positive number from the context, None where it has none."""
        value = pd.to_numeric(pd.Series([self.context.get(key)]), errors="coerce")[0]
        return float(value) if math.isfinite(value) and value > 0 else None


def _derive(s: pd.DataFrame) -> pd.DataFrame:
    """The summary rows with what the advisor selects on: `kind` (gemm_kernel, gemm_e2e,
    gemm_cpu, or mlp for an fp32 training row), `mnk` (a tuple on GEMM rows), `threads`,
    `seconds` (one GEMM: the GPU kernel's event time, the CPU's iteration) and the MLP
    configuration columns with the defaults of files that predate them."""
    labels = ("host", "probe", "data", "variant", "input", "shape", "precision", "dtype")
    s = s.assign(**{label: None for label in labels if label not in s})
    # The counters are floats from the reader (table.load_table); a file without one has NaN.
    s = s.assign(**{counter: math.nan for counter in _COUNTERS if counter not in s})
    gpu, matmul = s["backend"] == "gpu", (s["workload"] == GEMM_WORKLOAD) & s["probe"].isna()
    cpu = s["backend"] == "cpu"
    kinds = {"gemm_kernel": gpu & s["host"].isna(), "gemm_e2e": gpu, "gemm_cpu": cpu}
    s["kind"] = np.select([matmul & k for k in kinds.values()], list(kinds), None).astype(object)
    # The GEMM rows are the only ones with a kind so far.
    mnk = zip(s["kind"].notna(), s["m"], s["n"], s["k"])
    s["mnk"] = [tuple(int(x) for x in v) if gemm else None for gemm, *v in mnk]
    mlp = (s["workload"] == ADVISED_MLP["workload"]) & (s["precision"].fillna("fp32") == "fp32")
    s.loc[mlp, "kind"] = "mlp"
    s["input"] = s["input"].mask(s["input"] == "")
    s = s.fillna({"shape": "square", "dtype": "fp32", "input": "resident"})
    # OpenBLAS threads: the `blas_threads` counter, else `threads` (an older file's counter or
    # the name's `threads:N`; the reader keeps a name's part that is no number as text: none).
    named = s["threads"].where(s["threads"].map(is_number)).astype(float)
    threads = s["blas_threads"].fillna(named)
    s["threads"] = threads.where(threads >= 1, 1).fillna(1).astype(int).where(~gpu, 0)
    t_compute = s["t_compute"].where(gpu & (s["t_compute"] > 0))
    s["seconds"] = t_compute.fillna(s["time_s"])
    s["readback"] = s["readback"].fillna(0).astype(int)
    s["layers"] = s["hidden_layers"].fillna(1).astype(int)
    # A training row's phases per step (a GEMM row has no steps: it keeps its own).
    return per_step(s, ["t_compute", "t_overhead", "t_h2d"])


def load_runs(paths: Sequence[str]) -> tuple[list[Run], list[Said]]:
    """One Run per machine of the files (BenchJsonError propagates), and the warnings.

    A machine without GPU rows passed beside exactly one machine with them (a CPU run and the
    committed reference run) is answered as the report's `--gpu-reference` pairs them: its own
    CPU rows against the other machine's GPU rows; the GPU machine is then the reference and
    gets no answer of its own."""
    table = load_table(paths)
    rows = _derive(summarize(table.rows))
    has_gpu = table.machines.index.isin(rows.loc[rows["backend"] == "gpu", "machine"])
    if has_gpu.sum() == 1 and not has_gpu.all():
        reference = list(table.machines.loc[has_gpu, "files"].iloc[0])
        runs, warnings = [], []
        for i in table.machines.index[~has_gpu]:
            paired = load_table(list(table.machines.at[i, "files"]), reference)
            m = paired.machines.iloc[0]
            # The GPU's own facts (memory, bandwidth, peaks) come from the reference's context.
            gpu_keys = {k: v for k, v in m["gpu_context"].items() if k.startswith("gpu")}
            context, own = {**m["context"], **gpu_keys}, _derive(summarize(paired.rows))
            runs.append(Run(own, list(m["files"]), m["gpu"], m["cpu"], context, reference))
            warnings += [w for w in paired.said("advise") if w not in warnings]
        return runs, warnings
    runs = [
        Run(rows[rows["machine"] == i], list(m["files"]), m["gpu"], m["cpu"], m["context"])
        for i, m in table.machines.iterrows()
    ]
    return runs, table.said("advise")


@dataclass(frozen=True)
class MlpConfig:
    batch: int
    hidden: int
    layers: int = 1  # hidden layers, each `hidden` wide
    data: str = next(iter(MLP_DATASETS))
    readback: int = 0  # the loss read back every `readback` steps; 0: never
    input: str = "resident"  # the batch copied from pinned/pageable host memory every step

    @property
    def widths(self) -> list[int]:
        inputs, classes = MLP_DATASETS[self.data]
        return [inputs] + [self.hidden] * self.layers + [classes]

    @property
    def kernels_per_step(self) -> int:
        """Eager launches per step: 6 per weight layer (kernels/mlp/mlp_cuda_trainer.hpp)."""
        return 6 * (self.layers + 1)

    def products(self) -> list[tuple[str, GemmShape]]:
        """The layer products of one step as row-major GEMMs (m x n x k)."""
        b, w, out = self.batch, self.widths, []
        for layer, (fan_in, fan_out) in enumerate(zip(w, w[1:])):
            out.append((f"forward {layer + 1}", GemmShape(b, fan_out, fan_in)))
            out.append((f"weight gradient {layer + 1}", GemmShape(fan_in, fan_out, b)))
            if layer > 0:
                out.append((f"input gradient {layer + 1}", GemmShape(b, fan_in, fan_out)))
        return out

    @property
    def flop(self) -> float:
        return sum(s.flop for _, s in self.products())

    @property
    def elementwise_bytes(self) -> float:
        """fp32 bytes the element-wise passes of one step read and write: bias + activation
        (read, write), bias gradient (read) per layer output, softmax cross-entropy over the
        logits (read, write), the ReLU mask below every layer but the first (two reads, a
        write), and the update over the parameters (two reads, a write)."""
        w = np.array(self.widths, dtype=float)
        parameters = float(((w[:-1] + 1) * w[1:]).sum())
        per_batch = 3 * w[1:].sum() + 3 * w[1:-1].sum() + 2 * w[-1]
        return 4.0 * (self.batch * per_batch + 3 * parameters)

    @property
    def input_bytes(self) -> float:
        """One step's batch when it is copied from the host: the features and the int labels."""
        return 4.0 * self.batch * (self.widths[0] + 1)


def mlp_config_of(row: pd.Series) -> MlpConfig | None:
    """The configuration an MLP row measured; None for a data set the advisor does not know."""
    if row["data"] not in MLP_DATASETS or pd.isna(row["batch"]) or pd.isna(row["hidden"]):
        return None
    numbers = [int(row[key]) for key in ("batch", "hidden", "layers")]
    return MlpConfig(*numbers, str(row["data"]), int(row["readback"]), str(row["input"]))


def verdict(gpu_s: float, cpu_s: float) -> tuple[str, float]:
    """The faster side, and how many times faster it is."""
    return ("gpu" if gpu_s < cpu_s else "cpu"), max(gpu_s, cpu_s) / min(gpu_s, cpu_s)


@dataclass
class CpuEstimate:
    threads: int
    lookups: list[tuple[str, GemmShape, Lookup]]  # (what, shape, curve answer) per product
    elementwise: float = 0.0  # seconds of the element-wise passes

    def __post_init__(self) -> None:
        self.seconds = sum(lk.seconds for *_, lk in self.lookups) + self.elementwise
        self.extrapolated = any(lk.extrapolated for *_, lk in self.lookups)


@dataclass
class Advice:
    """The answer to a GEMM (`request` a GemmShape) or an MLP step (an MlpConfig): the GPU's
    parts in the order the answer lists them, the curve look-ups behind them, the CPU's
    estimate per thread count, the rows the run measured at this request, and the verdict."""

    request: GemmShape | MlpConfig
    gpu: dict[str, float]
    gpu_lookups: list[tuple[str, GemmShape, Lookup]]
    cpu: list[CpuEstimate]
    dtype: str = "fp32"
    host: str = "resident"
    measured_gpu: pd.Series | None = None
    measured_cpu: pd.DataFrame = field(default_factory=pd.DataFrame)
    measured_other: pd.DataFrame = field(default_factory=pd.DataFrame)

    def __post_init__(self) -> None:
        self.cpu_dtype = cpu_dtype_for(self.dtype)
        self.compute = self.gpu_lookups[0][2]
        self.gpu_total = sum(self.gpu.values())
        self.cpu_best = min(self.cpu, key=lambda e: e.seconds)
        self.winner, self.ratio = verdict(self.gpu_total, self.cpu_best.seconds)
        self.gpu_extrapolated = any(lk.extrapolated for _, _, lk in self.gpu_lookups)
        self.extrapolated = self.gpu_extrapolated or self.cpu_best.extrapolated
        # Whether the answer's table shows an extrapolated time (any CPU thread count or the GPU).
        self.marked = self.gpu_extrapolated or any(e.extrapolated for e in self.cpu)


def bandwidth_floor(
    lk: Lookup, shape: GemmShape, dtype: str, bw: float | None, roof: str
) -> Lookup:
    """A product is no faster than reading A, B and writing C once at the memory roof `bw`
    (`roof` names it); without one (an older run) the curve stands alone, as it always did."""
    floor = sum(shape.elements()) * DTYPE_BYTES.get(dtype, 4) / bw if bw else 0.0
    return replace(lk, seconds=floor, floor=roof) if floor > lk.seconds else lk


class Advisor:
    """Predictions from one machine's run. `exclude` (a mask over `run.rows`) drops GEMM rows
    from the curves (leave-one-out); the overhead model may be passed in when it is already
    fitted (its transfer and launch probes are never excluded)."""

    def __init__(
        self, run: Run, exclude: pd.Series | None = None, overhead: OverheadModel | None = None
    ) -> None:
        self.run = run
        self.overhead = overhead or build_model(run.rows[run.rows["backend"] == "gpu"])
        curves = run.curve_rows
        curves = curves if exclude is None else curves[~exclude[curves.index]]
        groups = curves.groupby(["backend", "dtype", "threads"], sort=False)
        # Plain ints for the thread counts: they end up in the JSON answer.
        self.curves = {(b, d, int(t)): frame for (b, d, t), frame in groups}

    def _need(self, value: T | None, sentence: str, **values: Any) -> T:
        """`value`, or the error (errors.j2's `sentence`) naming what the run lacks for it."""
        if value is None:
            raise AdviseError(sentence, run=self.run, **values)
        return value

    def _need_curve(self, value: T | None, backend: str, dtype: str) -> T:
        """`value`, or the error naming the GEMM rows of `dtype` a curve on `backend` needs and
        the dtypes the run has."""
        has = sorted({d for b, d, _ in self.curves if b == backend})
        return self._need(value, "no_gemm_rows", backend=backend, dtype=dtype, has=has)

    def require_gpu(self) -> None:
        if self.run.gpu is None or not (self.run.rows["backend"] == "gpu").any():
            raise AdviseError("no_gpu", run=self.run)

    def copy(self, direction: str, host: str) -> CopyFit:
        fit = self.overhead.copies.get((direction, host))
        return self._need(fit, "no_copy_fit", direction=direction, host=host)

    def t_launch(self) -> float:
        return self._need(self.overhead.launch.t_launch, "no_launch")

    def t_sync(self) -> float:
        """Waiting for finished work. The round trip (launch one empty kernel, synchronise) less
        its launch is what a synchronised iteration pays; the idle-stream probe measures only the
        API call with nothing to wait for, and is the fallback."""
        costs = self.overhead.launch
        wait = (costs.t_roundtrip or 0.0) - (costs.t_launch or math.inf)
        return wait if wait > 0 else self._need(costs.t_sync, "no_sync")

    def gpu_gemm(self, shape: GemmShape, dtype: str) -> Lookup:
        self.require_gpu()
        lk = self._need_curve(lookup(self.curves.get(("gpu", dtype, 0)), shape), "gpu", dtype)
        # Operands come from device memory (the kernel-only rows flush L2): a shape the curve
        # calls fast can still not beat reading A, B and writing C once.
        return bandwidth_floor(lk, shape, dtype, self.gpu_bandwidth(), DEVICE_ROOF)

    def gpu_bandwidth(self) -> float | None:
        """The memory roof (roofline.GPU_BANDWIDTH_KEYS): the device triad, else the driver's."""
        return next(filter(None, map(self.run.ctx_float, GPU_BANDWIDTH_KEYS)), None)

    def cpu_bandwidth(self, threads: int) -> float | None:
        """The host's memory roof at `threads` (roofline.cpu_bandwidth), None where the run did
        not measure it."""
        one = self.run.ctx_float("cpu_bandwidth_1thread_bytes_per_s")
        every = self.run.ctx_float("cpu_bandwidth_all_cores_bytes_per_s") or math.nan
        return float(cpu_bandwidth(one, every, threads)) if one else None

    def cpu_estimates(
        self, products: list[tuple[str, GemmShape]], dtype: str, elementwise_bytes: float = 0.0
    ) -> list[CpuEstimate]:
        threads = sorted(t for b, d, t in self.curves if b == "cpu" and d == dtype)
        threads = self._need_curve(threads or None, "cpu", dtype)

        def estimate(t: int) -> CpuEstimate:
            curve = self.curves[("cpu", dtype, t)]  # a group of rows: a look-up always answers
            bw = self.cpu_bandwidth(t)
            found = [
                (what, s, bandwidth_floor(lookup(curve, s), s, dtype, bw, HOST_ROOF))
                for what, s in products
            ]
            return CpuEstimate(t, found, elementwise_bytes / (bw or CPU_STREAM_BYTES_PER_S))

        return [estimate(t) for t in threads]

    def require_memory(
        self, nbytes: float, request: GemmShape | MlpConfig, dtype: str, product: str | None = None
    ) -> None:
        """Refuse a request whose device buffers (`nbytes`: a GEMM's operands and result, or an
        MLP step's `product`'s) cannot fit in the GPU memory the run recorded (`gpu_memory_bytes`):
        no prediction is an answer for a shape that cannot run. bench records no host memory
        size, so the CPU side is not checked."""
        available = self.run.ctx_float("gpu_memory_bytes")
        if available is not None and nbytes > available:
            facts = dict(request=request, dtype=dtype, product=product, nbytes=nbytes)
            raise AdviseError("too_big", run=self.run, available=available, **facts)

    def gemm(self, shape: GemmShape, dtype: str = "fp32", host: str = "pinned") -> Advice:
        """`dtype` and `host` are checked by the command line (DTYPES, HOSTS)."""
        self.require_gpu()
        a, b, c = (n * DTYPE_BYTES[dtype] for n in shape.elements())
        self.require_memory(a + b + c, shape, dtype)
        compute = self.gpu_gemm(shape, dtype)
        h2d = d2h = 0.0
        if host != "resident":
            # Two copies in (A and B), one out (C): each pays alpha (timing-method, copies_h2d).
            h2d = float(self.copy("h2d", host).predict(a + b, copies=2))
            d2h = float(self.copy("d2h", host).predict(c, copies=1))
        gpu = dict(h2d=h2d, compute=compute.seconds, d2h=d2h)
        gpu.update(launch=self.t_launch(), sync=self.t_sync())
        # The run's rows at this shape: the GPU's of this dtype and host (the kernel-only row
        # for resident operands), the CPU's of its dtype by threads.
        rows = self.run.rows[self.run.rows["mnk"].isin([shape.mnk])]
        kind = (rows["kind"] == "gemm_e2e") & (rows["host"] == host)
        kind = rows["kind"] == "gemm_kernel" if host == "resident" else kind
        gpu_rows, cpu_dtype = rows[(rows["dtype"] == dtype) & kind], cpu_dtype_for(dtype)
        cpu_rows = rows[(rows["kind"] == "gemm_cpu") & (rows["dtype"] == cpu_dtype)]
        cpu = self.cpu_estimates([("product", shape)], cpu_dtype)
        measured = gpu_rows.iloc[0] if len(gpu_rows) else None
        by_threads = cpu_rows.sort_values("threads", kind="stable")
        lookups = [("product", shape, compute)]
        return Advice(shape, gpu, lookups, cpu, dtype, host, measured, by_threads)

    def mlp(self, c: MlpConfig) -> Advice:
        self.require_gpu()
        # A lower bound of what the step holds on the device: its largest layer product's
        # operands and result (fp32); the whole step holds more (every activation, gradients).
        what, largest = max(c.products(), key=lambda p: sum(p[1].elements()))
        self.require_memory(4.0 * sum(largest.elements()), c, "fp32", what)
        # The eager path's products are plain fp32 (no TF32), like the CPU's.
        lookups = [(what, shape, self.gpu_gemm(shape, "fp32")) for what, shape in c.products()]
        bw = self.gpu_bandwidth()
        gpu = {"layer products": sum(lk.seconds for *_, lk in lookups)}
        gpu["element-wise"] = c.elementwise_bytes / bw if bw else 0.0
        more: dict[str, float] = {}
        if c.readback > 0:
            d2h = self.copy("d2h", "pinned")  # the loss lands in pinned host memory
            more["loss readback"] = (float(d2h.predict(LOSS_BYTES)) + self.t_sync()) / c.readback
        if c.input != "resident":
            more["input copy"] = float(self.copy("h2d", c.input).predict(c.input_bytes, 2))
        gpu.update(launch=c.kernels_per_step * self.t_launch(), **more)
        cpu = self.cpu_estimates(c.products(), "fp32", c.elementwise_bytes)
        # The run's rows of this network and batch: the eager GPU row at this readback and
        # input, the OpenBLAS rows by threads, and the other paths (graph, fused, the CPU's
        # small-matrix path) for comparison, at the requested readback where that was
        # measured, else every readback they were run with.
        rows = self.run.rows
        same = (rows["kind"] == "mlp") & (rows["data"] == c.data) & (rows["batch"] == c.batch)
        rows = rows[same & (rows["hidden"] == c.hidden) & (rows["layers"] == c.layers)]
        gpu_row = rows["backend"] == "gpu"
        eager = gpu_row & (rows["variant"] == ADVISED_MLP["gpu"])
        blas = ~gpu_row & (rows["variant"] == ADVISED_MLP["cpu"])
        match = rows[eager & (rows["readback"] == c.readback) & (rows["input"] == c.input)]
        other = rows[~eager & ~blas & rows["input"].isin(["resident", c.input])]
        path = other.groupby(["backend", "variant", "threads"], sort=False, dropna=False).ngroup()
        same_readback = other["readback"] == c.readback
        other = other[same_readback | ~same_readback.groupby(path).transform("any")]
        measured = match.iloc[-1] if len(match) else None
        by_threads = rows[blas].sort_values("threads", kind="stable")
        others = other.assign(path=path).sort_values("path", kind="stable")
        return Advice(c, gpu, lookups, cpu, "fp32", "resident", measured, by_threads, others)
