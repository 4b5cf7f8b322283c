"""HAND-MADE TEST DATA, NOT A MEASUREMENT.

Rows shaped like bench's mixed-precision MLP rows, device-memory counters, largest-batch rows and
allocation probes (names, labels, counters, Google Benchmark repetitions and aggregates), and like
tools/reference/torch_mlp_amp.py's PyTorch rows, for the tests of the report's mixed-precision and
memory sections. No GPU run of these rows exists yet: the values are plausible for an H100 but
chosen so that each test can work out its expected numbers by hand. The context says the same in
`generated_by`.
"""

from __future__ import annotations

from typing import Any

from conftest import gb_row

MIB = 2**20
CONTEXT: dict[str, Any] = {
    "generated_by": "tests/tools/handmade_rows.py: hand-made test data, not a measurement",
    "host_name": "handmade",
    "cpu_model": "Hand-made Test CPU",
    "cpu_logical_cpus": "16",
    "gpu": "NVIDIA H100 80GB HBM3",
    "gpu_peak_fp32_flops": "6.69e+13",
    "gpu_peak_bf16_flops": "1.07e+15",
    "gpu_peak_fp16_flops": "1.07e+15",
}
CPU_CONTEXT: dict[str, Any] = {
    "cpu_model": "Hand-made Test CPU",
    "cpu_logical_cpus": "16",
    "gpu": "none",
}


def _widths(data: str, hidden: str) -> list[int]:
    """inputs, hidden widths, classes of a case ("4096x2": two layers of 4096)."""
    width, _, layers = hidden.partition("x")
    inputs, classes = (4, 3) if data == "iris" else (64, 10)
    return [inputs, *[int(width)] * (int(layers) if layers else 1), classes]


def step_flop(data: str, batch: int, hidden: str) -> float:
    """bench's mlp_step_flop."""
    widths = _widths(data, hidden)
    flop = 0.0
    for layer, (fan_in, fan_out) in enumerate(zip(widths, widths[1:])):
        product = 2.0 * batch * fan_in * fan_out
        flop += 2.0 * product + (product if layer > 0 else 0.0)
    return flop


def mlp_row(
    backend: str,
    variant: str,
    data: str,
    batch: int,
    hidden: str,
    t_epoch: float,
    *,
    precision: str = "fp32",
    kernels: float | None = None,
    compute_share: float | None = None,
    final_loss: float = 1.0,
    threads: int | None = None,
    extra: dict[str, float] | None = None,
) -> dict[str, Any]:
    """One MLP training row as bench (or torch_mlp_amp.py for variant torch_eager) names it.
    `compute_share`: t_compute as a share of t_wall (GPU phase times), the rest t_overhead.
    """
    epochs = 20000 if data == "iris" else 20
    readback = 1 if backend == "cpu" else 0
    name = f"mlp/{backend}/{variant}/data:{data}/batch:{batch}/hidden:{hidden}/readback:{readback}"
    if threads is not None:
        name += f"/threads:{threads}"
    if precision != "fp32":
        name += f"/precision:{precision}"
    if backend == "gpu" and variant != "torch_eager":
        name += "/manual_time"
    widths = _widths(data, hidden)
    t_wall = t_epoch * epochs
    counters: dict[str, float] = {
        "batch": batch,
        "hidden": widths[1],
        "hidden_layers": len(widths) - 2,
        "readback": readback,
        "epochs": epochs,
        "t_epoch": t_epoch,
        "t_wall": t_wall,
        "samples_per_s": batch / t_epoch,
        "flop": step_flop(data, batch, hidden) * epochs,
        "final_loss": final_loss,
    }
    if kernels is not None:
        counters["kernels_per_step"] = kernels
    if compute_share is not None:
        counters["t_compute"] = compute_share * t_wall
        counters["t_overhead"] = (1 - compute_share) * t_wall
    if threads is not None:
        counters["blas_threads"] = threads
    counters.update(extra or {})
    label = f"workload=mlp backend={backend} variant={variant} data={data}"
    if precision != "fp32" or variant == "torch_eager":
        label += f" precision={precision}"
    return gb_row(name, t_wall, counters, label + " input=resident")


# Per (variant, data, batch, hidden): t_epoch and kernels per step in fp32, bf16 and fp16, and
# the share of the epoch the compute phase takes. Iris: the mixed runs are slower even in their
# compute phase; batch 256 x 64: the compute phase gets faster but the launches eat the gain;
# the wide nets: tensor cores pay off.
GPU_CASES: list[tuple[str, str, int, str, dict[str, tuple[float, float, float]]]] = [
    (
        "eager",
        "iris",
        120,
        "10",
        {"fp32": (81e-6, 12, 0.3), "bf16": (90e-6, 16, 0.35), "fp16": (92e-6, 18, 0.35)},
    ),
    (
        "graph",
        "iris",
        120,
        "10",
        {"fp32": (30e-6, 12, 0.9), "bf16": (33e-6, 16, 0.9), "fp16": (34e-6, 18, 0.9)},
    ),
    ("eager", "synthetic", 256, "64", {"fp32": (60e-6, 12, 0.5), "bf16": (66e-6, 16, 0.4)}),
    (
        "eager",
        "synthetic",
        4096,
        "4096",
        {"fp32": (1.0e-3, 12, 0.95), "bf16": (0.4e-3, 16, 0.9), "fp16": (0.38e-3, 18, 0.9)},
    ),
    (
        "graph",
        "synthetic",
        4096,
        "4096",
        {"fp32": (0.98e-3, 12, 0.99), "bf16": (0.37e-3, 16, 0.99)},
    ),
    ("eager", "synthetic", 256, "4096x2", {"fp32": (0.3e-3, 18, 0.8), "bf16": (0.2e-3, 24, 0.7)}),
    (
        "eager",
        "synthetic",
        4096,
        "4096x2",
        {"fp32": (4.0e-3, 18, 0.98), "bf16": (1.25e-3, 24, 0.95), "fp16": (1.2e-3, 27, 0.95)},
    ),
]
# fp16 rows: (skipped steps, final loss scale).
FP16_SCALING = {"iris": (5.0, 8192.0), "synthetic": (0.0, 65536.0)}


def _device_memory(data: str, batch: int, hidden: str, precision: str) -> dict[str, float]:
    """A plausible model (fp32 weights, gradients and activations, plus bf16/fp16 copies) and a
    measured peak 8 MiB (a library workspace) above it, rounded up to 2 MiB pages."""
    widths = _widths(data, hidden)
    parameters = sum((a + 1) * b for a, b in zip(widths, widths[1:]))
    activations = batch * sum(widths)
    model = 4 * (2 * parameters + 3 * activations)
    if precision != "fp32":
        model += 2 * (parameters + activations)
    peak = -(-(model + 8 * MIB) // (2 * MIB)) * (2 * MIB)
    return {"device_bytes_model": float(model), "device_bytes_peak": float(peak)}


def gpu_mlp_rows() -> list[dict[str, Any]]:
    rows = []
    for variant, data, batch, hidden, runs in GPU_CASES:
        for precision, (t_epoch, kernels, share) in runs.items():
            extra = _device_memory(data, batch, hidden, precision)
            if precision == "fp16":
                skipped, scale = FP16_SCALING[data]
                extra.update({"skipped_steps": skipped, "loss_scale": scale})
            rows.append(
                mlp_row(
                    "gpu",
                    variant,
                    data,
                    batch,
                    hidden,
                    t_epoch,
                    precision=precision,
                    kernels=kernels,
                    compute_share=share,
                    final_loss=0.0620 if data == "iris" else 2.20,
                    extra=extra,
                )
            )
    return rows


def cpu_mlp_rows() -> list[dict[str, Any]]:
    """OpenBLAS fp32 and bf16 at one thread: bf16 slower on Iris (0.7x), faster on the wide net."""
    rows = []
    for data, batch, hidden, t32, t16 in (
        ("iris", 120, "10", 10e-6, 10e-6 / 0.7),
        ("synthetic", 4096, "512", 2e-3, 2e-3 / 1.8),
    ):
        for precision, t in (("fp32", t32), ("bf16", t16)):
            rows.append(
                mlp_row("cpu", "openblas", data, batch, hidden, t, precision=precision, threads=1)
            )
    return rows


# PyTorch's eager step (tools/reference/torch_mlp_amp.py) on two cases: t_epoch per precision.
TORCH_CASES = {
    ("iris", 120, "10"): {"fp32": 1.05e-3, "bf16": 1.3e-3, "fp16": 1.4e-3},
    ("synthetic", 4096, "4096x2"): {"fp32": 4.4e-3, "bf16": 1.5e-3, "fp16": 1.44e-3},
}


def torch_rows() -> list[dict[str, Any]]:
    rows = []
    for (data, batch, hidden), runs in TORCH_CASES.items():
        for precision, t_epoch in runs.items():
            extra = {"skipped_steps": 3.0, "loss_scale": 16384.0} if precision == "fp16" else {}
            rows.append(
                mlp_row(
                    "gpu",
                    "torch_eager",
                    data,
                    batch,
                    hidden,
                    t_epoch,
                    precision=precision,
                    extra=extra,
                )
            )
    return rows


def largest_batch_rows() -> list[dict[str, Any]]:
    """One CNN row that ran near its largest batch, one MLP row skipped for lack of memory."""
    cnn = gb_row(
        "memory/gpu/largest_batch/net:cnn/data:synthetic/precision:fp32/iterations:1/manual_time",
        5.0,
        {
            "batch": 9000.0,
            "batch_largest": 10000.0,
            "device_bytes_free": 80e9,
            "device_bytes_model": 70e9,
            "device_bytes_peak": 72e9,
            "steps": 10.0,
            "t_step": 0.5,
            "final_loss": 2.3,
        },
        "workload=memory backend=gpu variant=largest_batch net=cnn data=synthetic precision=fp32",
    )
    mlp = gb_row(
        "memory/gpu/largest_batch/net:mlp/data:synthetic/hidden:4096x2/precision:bf16/"
        "iterations:1/manual_time",
        0.0,
        label="workload=memory backend=gpu variant=largest_batch net=mlp data=synthetic "
        "precision=bf16",
        error="does not fit in device memory: needs 90000000000 bytes at batch 1, 1000 bytes free",
    )
    return [cnn, mlp]


# Allocation probes: per kind, the median host seconds per call at 4 KiB, 256 KiB, 16 MiB, 1 GiB
# before the repetition factors below.
ALLOC_SIZES = (4096, 262144, 16 * MIB, 1024 * MIB)
ALLOC_BASE: dict[tuple[str, str], tuple[float, float, float, float]] = {
    ("malloc", "device"): (2e-6, 3e-6, 40e-6, 500e-6),
    ("free", "device"): (1e-6, 2e-6, 30e-6, 300e-6),
    ("async", "device"): (0.5e-6, 0.5e-6, 0.6e-6, 0.6e-6),
    ("malloc", "pinned"): (5e-6, 40e-6, 2e-3, 0.1),
    ("free", "pinned"): (3e-6, 20e-6, 1e-3, 0.05),
}
# Ten repetitions: sorted 0.9 0.95 0.98 1.0 1.0 1.02 1.05 1.1 1.2 3.0, so the median is 1.01x the
# base and the slowest decile (the 9th of 10, the inverted CDF) 1.2x; a linear interpolation
# would say 1.38x.
REPETITION_FACTORS = (1.0, 1.1, 0.9, 1.05, 0.95, 1.2, 1.0, 0.98, 1.02, 3.0)
MEDIAN_FACTOR, P90_FACTOR = 1.01, 1.2


def alloc_rows(aggregates_only: bool = False) -> list[dict[str, Any]]:
    """Every probe at every size with ten repetitions and Google Benchmark's four aggregates
    (per-repetition rows left out with `aggregates_only`, as --benchmark_report_aggregates_only
    writes them)."""
    rows = []
    for (operation, memory), bases in ALLOC_BASE.items():
        stem = (
            f"overhead/alloc/{operation}/{memory}"
            if operation != "async"
            else "overhead/alloc/async"
        )
        probe = f"alloc_{operation}"
        label = f"workload=overhead backend=gpu variant={probe} host={memory} probe={probe}"
        for nbytes, base in zip(ALLOC_SIZES, bases):
            name = f"{stem}/bytes:{nbytes}/repeats:10/manual_time"
            counters = {"bytes": float(nbytes), "pinned": 1.0 if memory == "pinned" else 0.0}
            if memory == "device":
                counters.update(
                    {
                        "device_bytes": float(nbytes),
                        "device_bytes_model": float(nbytes),
                        "device_bytes_peak": float(max(nbytes, 2 * MIB)),
                    }
                )
            times = [base * f for f in REPETITION_FACTORS]
            if not aggregates_only:
                for index, t in enumerate(times):
                    rows.append(
                        gb_row(
                            name,
                            t,
                            {**counters, "t_wall": t},
                            label,
                            repetition_index=index,
                            repetitions=10,
                        )
                    )
            mean = sum(times) / len(times)
            for aggregate, value in (
                ("mean", mean),
                ("median", base * MEDIAN_FACTOR),
                ("stddev", 0.1 * mean),
                ("cv", 0.1),
            ):
                rows.append(
                    gb_row(
                        name,
                        value,
                        {**counters, "t_wall": value},
                        label,
                        run_type="aggregate",
                        aggregate_name=aggregate,
                        repetitions=10,
                    )
                )
    return rows


def all_gpu_rows() -> list[dict[str, Any]]:
    return gpu_mlp_rows() + torch_rows() + largest_batch_rows() + alloc_rows()
