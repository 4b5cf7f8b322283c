"""The advisor's predictions: a GEMM or a tiny-MLP training step, on the CPU and on the GPU.

GEMM on the GPU, end to end (docs/timing-method.md, "The overhead model"):

    T_gpu = T_h2d + T_compute + T_d2h + T_launch + T_sync
    T_h2d = 2 alpha_h2d + (|A| + |B|) / beta_h2d      T_d2h = alpha_d2h + |C| / beta_d2h
    T_compute   from the kernel-only utilisation curve of the dtype, at the shape's FLOP count,
                and never less than reading A and B and writing C at the GPU's memory bandwidth
    T_launch    one kernel launch (the burst probe's cost per kernel)
    T_sync      waiting for finished work: the round-trip probe (launch + synchronise one
                empty kernel) less one launch

`resident` operands skip both copies. On the CPU, T_cpu comes from the OpenBLAS curve of the
same precision (fp32 for every reduced GPU precision, as the report compares them) for every
thread count measured; the faster thread count is the CPU's answer.

A training step of the tiny MLP (docs/workloads.md, "Tiny-MLP workloads") is its layer products, each
looked up like a GEMM above (forward Z = A W: batch x fan_out x fan_in; weight gradient
dW = A^T dZ: fan_in x fan_out x batch; input gradient dA = dZ W^T: batch x fan_in x fan_out,
every layer but the first), plus its element-wise passes (bias, ReLU, softmax, bias gradient,
ReLU mask, update) as the bytes they move at memory speed (the GPU's bandwidth from the run's
context; on the CPU an assumed streaming rate), plus on the GPU one launch per operation (eager:
6 per weight layer), when the loss is read back a 4-byte copy and a synchronisation, and when the
batch comes from host memory its copies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable

from ..dataset import Point, Source
from ..overhead_model import CopyFit, LaunchCosts, OverheadModel, build_model
from .curves import GemmShape, Lookup, RateTable, cpu_rate_table, cpu_threads, gpu_rate_table

__all__ = [
    "AdviseError",
    "DTYPES",
    "DTYPE_BYTES",
    "HOSTS",
    "DATASETS",
    "REFERENCE_RUNS",
    "GpuParts",
    "CpuEstimate",
    "GemmAdvice",
    "MlpConfig",
    "MlpGpuParts",
    "MlpAdvice",
    "Advisor",
    "MLP_INPUTS",
    "cpu_dtype_for",
    "mlp_config_of",
    "same_network",
]

DTYPE_BYTES: dict[str, int] = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp64": 8}
DTYPES: tuple[str, ...] = tuple(DTYPE_BYTES)
HOSTS: tuple[str, ...] = ("pinned", "pageable", "resident")
# data set -> (input features, classes), as benchmarks/mlp_*.cpp build the networks.
DATASETS: dict[str, tuple[int, int]] = {"synthetic": (64, 10), "digits": (64, 10), "iris": (4, 3)}
MLP_INPUTS: tuple[str, ...] = ("resident", "pinned", "pageable")
REFERENCE_RUNS = (
    "reports/baselines/h100-80gb-hbm3-matmul.json",
    "reports/baselines/h100-80gb-hbm3-mlp.json",
)
# The CPU's element-wise loops of an MLP step stream their arrays once per pass; no file records
# the host's memory bandwidth, so one core's typical streaming rate stands in for it.
CPU_STREAM_BYTES_PER_S = 10e9
LOSS_BYTES = 4.0


class AdviseError(Exception):
    """The request or the run cannot give an answer; str() says why (the CLI exits 2)."""


def cpu_dtype_for(gpu_dtype: str) -> str:
    """fp64 compares with CPU fp64; every other precision with CPU fp32 (OpenBLAS has no tf32 or
    16-bit GEMM), as the report compares them."""
    return "fp64" if gpu_dtype == "fp64" else "fp32"


def _reference_hint() -> str:
    return "try the committed reference run: " + " ".join(REFERENCE_RUNS)


@dataclass
class GpuParts:
    h2d: float
    compute: float
    d2h: float
    launch: float
    sync: float

    @property
    def total(self) -> float:
        return self.h2d + self.compute + self.d2h + self.launch + self.sync

    def items(self) -> list[tuple[str, float]]:
        return [
            ("h2d", self.h2d),
            ("compute", self.compute),
            ("d2h", self.d2h),
            ("launch", self.launch),
            ("sync", self.sync),
        ]


@dataclass
class CpuEstimate:
    threads: int
    seconds: float
    lookups: list[tuple[str, GemmShape, Lookup]]  # (what, shape, curve answer) per product
    elementwise: float = 0.0

    @property
    def extrapolated(self) -> bool:
        return any(lk.extrapolated for _, _, lk in self.lookups)


def _best(estimates: list[CpuEstimate]) -> CpuEstimate:
    return min(estimates, key=lambda e: e.seconds)


class _Verdict:
    """Which side wins and by how much, for an advice with CPU estimates `cpu` and GPU parts
    `gpu` (whose `total` is the predicted GPU seconds)."""

    cpu: list[CpuEstimate]
    gpu: GpuParts | MlpGpuParts

    @property
    def cpu_best(self) -> CpuEstimate:
        return _best(self.cpu)

    @property
    def winner(self) -> str:
        return "gpu" if self.gpu.total < self.cpu_best.seconds else "cpu"

    @property
    def ratio(self) -> float:
        """How many times faster the winner is (>= 1)."""
        a, b = self.gpu.total, self.cpu_best.seconds
        return max(a, b) / min(a, b)


@dataclass
class GemmAdvice(_Verdict):
    shape: GemmShape
    dtype: str
    host: str
    cpu_dtype: str
    cpu: list[CpuEstimate]
    gpu: GpuParts
    compute: Lookup
    measured_gpu: Point | None = None
    measured_cpu: list[Point] = field(default_factory=list)

    @property
    def extrapolated(self) -> bool:
        return self.compute.extrapolated or self.cpu_best.extrapolated


@dataclass(frozen=True)
class MlpConfig:
    batch: int
    hidden: int
    layers: int = 1  # hidden layers, each `hidden` wide
    data: str = "synthetic"
    readback: int = 0  # the loss read back every `readback` steps; 0: never
    input: str = "resident"  # the batch copied from pinned/pageable host memory every step

    @property
    def inputs(self) -> int:
        return DATASETS[self.data][0]

    @property
    def classes(self) -> int:
        return DATASETS[self.data][1]

    @property
    def widths(self) -> list[int]:
        return [self.inputs] + [self.hidden] * self.layers + [self.classes]

    @property
    def weight_layers(self) -> int:
        return self.layers + 1

    @property
    def kernels_per_step(self) -> int:
        """Eager launches per step: 6 per weight layer (kernels/mlp/mlp_cuda_trainer.hpp)."""
        return 6 * self.weight_layers

    @property
    def parameters(self) -> int:
        w = self.widths
        return sum((w[i] + 1) * w[i + 1] for i in range(len(w) - 1))

    def products(self) -> list[tuple[str, GemmShape]]:
        """The layer products of one step as row-major GEMMs (m x n x k)."""
        b, w, out = self.batch, self.widths, []
        for layer in range(self.weight_layers):
            fan_in, fan_out = w[layer], w[layer + 1]
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
        b, w = self.batch, self.widths
        total = 0.0
        for layer in range(self.weight_layers):
            total += (2 + 1) * b * w[layer + 1]
            if layer > 0:
                total += 3 * b * w[layer]
        total += 2 * b * self.classes + 3 * self.parameters
        return 4.0 * total

    @property
    def input_bytes(self) -> float:
        """One step's batch when it is copied from the host: the features and the int labels."""
        return 4.0 * self.batch * (self.inputs + 1)

    def describe(self) -> str:
        net = "-".join(str(x) for x in self.widths)
        return f"{self.data} {net}, batch {self.batch}"


@dataclass
class MlpGpuParts:
    products: float
    elementwise: float
    launch: float
    readback: float
    input: float
    lookups: list[tuple[str, GemmShape, Lookup]]

    @property
    def total(self) -> float:
        return self.products + self.elementwise + self.launch + self.readback + self.input

    def items(self) -> list[tuple[str, float]]:
        out = [
            ("layer products", self.products),
            ("element-wise", self.elementwise),
            ("launch", self.launch),
        ]
        if self.readback:
            out.append(("loss readback", self.readback))
        if self.input:
            out.append(("input copy", self.input))
        return out

    @property
    def extrapolated(self) -> bool:
        return any(lk.extrapolated for _, _, lk in self.lookups)


@dataclass
class MlpAdvice(_Verdict):
    config: MlpConfig
    cpu: list[CpuEstimate]
    gpu: MlpGpuParts
    measured_gpu: Point | None = None  # the eager row at this configuration
    measured_cpu: list[Point] = field(default_factory=list)  # the OpenBLAS rows, by threads
    measured_other: list[Point] = field(default_factory=list)  # graph, fused, CPU small

    @property
    def extrapolated(self) -> bool:
        return self.gpu.extrapolated or self.cpu_best.extrapolated


def mlp_config_of(p: Point) -> MlpConfig | None:
    """The configuration an MLP row measured; None for a data set the advisor does not know."""
    data = p.labels.get("data", "")
    if data not in DATASETS or not p.has("batch", "hidden"):
        return None
    readback = p.c("readback", 0.0)
    return MlpConfig(
        batch=int(p.c("batch")),
        hidden=int(p.c("hidden")),
        layers=int(p.c("hidden_layers", 1.0)),
        data=data,
        readback=int(readback) if math.isfinite(readback) else 0,
        input=p.labels.get("input", "resident") or "resident",
    )


def same_network(a: MlpConfig, b: MlpConfig) -> bool:
    return (a.data, a.batch, a.hidden, a.layers) == (b.data, b.batch, b.hidden, b.layers)


class Advisor:
    """Predictions from one machine's run. `exclude` drops points before anything is fitted or
    interpolated (leave-one-out); the overhead model may be passed in when it is already fitted
    (its transfer and launch probes are never excluded)."""

    def __init__(
        self,
        source: Source,
        exclude: Callable[[Point], bool] | None = None,
        overhead: OverheadModel | None = None,
    ) -> None:
        self.full = source
        points = [p for p in source.points if exclude is None or not exclude(p)]
        self.overhead = overhead if overhead is not None else build_model(source)
        self.gpu_rates: RateTable = gpu_rate_table(points)
        self.cpu_rates: RateTable = cpu_rate_table(points)

    # --- what the run must hold --------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.full.file_names

    def require_gpu(self) -> None:
        if not self.full.has_gpu:
            why = self.full.report.context.get("gpu_unavailable_reason")
            recorded = f" (recorded without a GPU: {why})" if why else ""
            raise AdviseError(
                f"{self.name} has no GPU rows{recorded}; the advisor needs a GPU run's kernel-only "
                f"GEMM rows and overhead probes: {_reference_hint()}"
            )

    def _copy(self, direction: str, host: str) -> CopyFit:
        fit = self.overhead.copies.get((direction, host))
        if fit is None:
            raise AdviseError(
                f"{self.name} has no {direction} {host} transfer probes "
                f"(overhead/{direction}/{host}/bytes:B) to fit the copy cost alpha + bytes/beta; "
                f"{_reference_hint()}"
            )
        return fit

    @property
    def launch_costs(self) -> LaunchCosts:
        return self.overhead.launch

    def t_launch(self) -> float:
        t = self.launch_costs.t_launch
        if t is None:
            raise AdviseError(
                f"{self.name} has no launch probes (overhead/launch/burst/kernels:N) for the "
                f"cost of a kernel launch; {_reference_hint()}"
            )
        return t

    def t_sync(self) -> float:
        """Waiting for finished work. The round trip (launch one empty kernel, synchronise) less
        its launch is what a synchronised iteration pays; the idle-stream probe measures only the
        API call with nothing to wait for, and is the fallback."""
        costs = self.launch_costs
        if costs.t_roundtrip is not None and costs.t_launch is not None:
            wait = costs.t_roundtrip - costs.t_launch
            if wait > 0:
                return wait
        t = costs.t_sync
        if t is None:
            raise AdviseError(
                f"{self.name} has no synchronisation probes (overhead/launch/roundtrip, "
                f"overhead/sync/stream); {_reference_hint()}"
            )
        return t

    def memory_bandwidth(self) -> float | None:
        return self.full.ctx_float("gpu_memory_bandwidth_bytes_per_s")

    # --- curve look-ups ----------------------------------------------------------------------

    def gpu_gemm(self, shape: GemmShape, dtype: str) -> Lookup:
        self.require_gpu()
        lk = self.gpu_rates.lookup(shape, dtype)
        if lk is None:
            have = ", ".join(self.gpu_rates.dtypes) or "none"
            raise AdviseError(
                f"{self.name} has no kernel-only GPU GEMM rows for {dtype} "
                f"(matmul/gpu/cublas_kernel/dtype:{dtype}/...; it has: {have}); "
                f"{_reference_hint()}"
            )
        # Operands come from device memory (the kernel-only rows flush L2): a shape the curve
        # calls fast can still not beat reading A, B and writing C once.
        bw = self.memory_bandwidth()
        if bw:
            floor = sum(shape.elements()) * DTYPE_BYTES.get(dtype, 4) / bw
            if floor > lk.seconds:
                lk = replace(lk, seconds=floor, floor="device memory bandwidth")
        return lk

    def cpu_estimates(
        self, products: list[tuple[str, GemmShape]], dtype: str, elementwise_bytes: float = 0.0
    ) -> list[CpuEstimate]:
        threads = [t for t in self.cpu_rates.threads(dtype) if t is not None]
        if not threads:
            have = ", ".join(self.cpu_rates.dtypes) or "none"
            raise AdviseError(
                f"{self.name} has no CPU GEMM rows for {dtype} "
                f"(matmul/cpu/openblas/dtype:{dtype}/...; it has: {have}); {_reference_hint()}"
            )
        out = []
        for t in threads:
            lookups = []
            for what, shape in products:
                lk = self.cpu_rates.lookup(shape, dtype, t)
                assert lk is not None
                lookups.append((what, shape, lk))
            ew = elementwise_bytes / CPU_STREAM_BYTES_PER_S
            out.append(CpuEstimate(t, sum(lk.seconds for *_, lk in lookups) + ew, lookups, ew))
        return out

    # --- GEMM --------------------------------------------------------------------------------

    def gemm(self, shape: GemmShape, dtype: str = "fp32", host: str = "pinned") -> GemmAdvice:
        if dtype not in DTYPE_BYTES:
            raise AdviseError(f"unknown dtype '{dtype}': choose one of {', '.join(DTYPES)}")
        if host not in HOSTS:
            raise AdviseError(f"unknown host memory '{host}': choose one of {', '.join(HOSTS)}")
        self.require_gpu()
        compute = self.gpu_gemm(shape, dtype)
        size = DTYPE_BYTES[dtype]
        a, b, c = shape.elements()
        if host == "resident":
            h2d = d2h = 0.0
        else:
            # Two copies in (A and B), one out (C): each pays alpha (docs/timing-method.md, copies_h2d).
            h2d = float(self._copy("h2d", host).predict((a + b) * size, copies=2))
            d2h = float(self._copy("d2h", host).predict(c * size, copies=1))
        parts = GpuParts(h2d, compute.seconds, d2h, self.t_launch(), self.t_sync())
        cpu_dtype = cpu_dtype_for(dtype)
        cpu = self.cpu_estimates([("product", shape)], cpu_dtype)
        return GemmAdvice(
            shape=shape,
            dtype=dtype,
            host=host,
            cpu_dtype=cpu_dtype,
            cpu=cpu,
            gpu=parts,
            compute=compute,
            measured_gpu=self._measured_gemm(shape, dtype, host),
            measured_cpu=sorted(
                (p for p in self.full.matmul_cpu() if p.mnk == shape.mnk and p.dtype == cpu_dtype),
                key=cpu_threads,
            ),
        )

    def _measured_gemm(self, shape: GemmShape, dtype: str, host: str) -> Point | None:
        for p in self.full.points:
            if p.is_matmul and p.is_gpu and p.mnk == shape.mnk and p.dtype == dtype:
                if (host == "resident" and p.is_kernel_only) or (
                    p.is_e2e and p.labels.get("host") == host
                ):
                    return p
        return None

    # --- MLP ---------------------------------------------------------------------------------

    def mlp(self, config: MlpConfig) -> MlpAdvice:
        self.require_gpu()
        products = config.products()
        # The eager path's products are plain fp32 (no TF32), like the CPU's.
        lookups = [(what, shape, self.gpu_gemm(shape, "fp32")) for what, shape in products]
        bw = self.memory_bandwidth()
        elementwise = config.elementwise_bytes / bw if bw else 0.0
        readback = 0.0
        if config.readback > 0:
            d2h = self._copy("d2h", "pinned")  # the loss lands in pinned host memory
            readback = (float(d2h.predict(LOSS_BYTES)) + self.t_sync()) / config.readback
        input_copy = 0.0
        if config.input != "resident":
            input_copy = float(self._copy("h2d", config.input).predict(config.input_bytes, 2))
        gpu = MlpGpuParts(
            products=sum(lk.seconds for *_, lk in lookups),
            elementwise=elementwise,
            launch=config.kernels_per_step * self.t_launch(),
            readback=readback,
            input=input_copy,
            lookups=lookups,
        )
        cpu = self.cpu_estimates(products, "fp32", config.elementwise_bytes)
        advice = MlpAdvice(config=config, cpu=cpu, gpu=gpu)
        others: dict[tuple[str, str, int], list[tuple[MlpConfig, Point]]] = {}
        for p in self.full.mlp():
            other = mlp_config_of(p)
            if other is None or not same_network(other, config):
                continue
            variant = p.labels.get("variant", "")
            if p.is_gpu and variant == "eager":
                if (other.readback, other.input) == (config.readback, config.input):
                    advice.measured_gpu = p
            elif not p.is_gpu and variant == "openblas":
                advice.measured_cpu.append(p)
            elif other.input in ("resident", config.input):
                key = (p.backend or "", variant, 0 if p.is_gpu else cpu_threads(p))
                others.setdefault(key, []).append((other, p))
        # The other paths (graph, fused, the CPU's small-matrix path) for comparison: at the
        # requested readback where that was measured, else every readback they were run with.
        for rows in others.values():
            same = [p for o, p in rows if o.readback == config.readback]
            advice.measured_other += same or [p for _, p in rows]
        advice.measured_cpu.sort(key=cpu_threads)
        return advice
