"""PyTorch reference for the cuBLAS GEMM timings of `bench`.

Times ``torch.mm`` on the same row-major shapes and precisions as ``matmul/gpu/cublas_kernel`` with
the same method (CUDA events around one product per iteration, L2 flushed before each iteration
outside the events, warm-up first, median of the iterations) and writes Google Benchmark JSON with
rows named ``matmul/gpu/torch_mm/dtype:D/m:M/n:N/k:K/manual_time``, so the report and compare tools
read it like any `bench` output.

Usage: python3 tools/reference/torch_matmul.py --out torch-matmul.json [--sizes 1024,4096,8192]
"""

from __future__ import annotations

import statistics
import sys
from typing import Any

from benchmark_json import benchmark_row, write_benchmark_file
from reference_options import ReferenceParser, integers, number

DTYPES = ("fp32", "tf32", "fp16", "bf16", "fp64")


def time_matmul(torch: Any, dtype_name: str, m: int, n: int, k: int, iterations: int) -> float:
    """Median seconds of one torch.mm, cold L2, events around the product only."""
    torch.backends.cuda.matmul.allow_tf32 = dtype_name == "tf32"
    storage = {
        "fp32": torch.float32,
        "tf32": torch.float32,
        "fp16": torch.float16,
        "bf16": torch.bfloat16,
        "fp64": torch.float64,
    }[dtype_name]
    generator = torch.Generator(device="cuda").manual_seed(1)
    a = (torch.rand(m, k, device="cuda", generator=generator) * 2 - 1).to(storage)
    b = (torch.rand(k, n, device="cuda", generator=generator) * 2 - 1).to(storage)
    l2_bytes = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.empty(2 * l2_bytes, dtype=torch.uint8, device="cuda")
    for _ in range(3):
        torch.mm(a, b)
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(iterations):
        flush.zero_()
        torch.cuda.synchronize()
        start.record()
        torch.mm(a, b)
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop) * 1e-3)
    return statistics.median(samples)


def main() -> int:
    parser = ReferenceParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="JSON file to write")
    sizes = integers(1, 65536)
    parser.add_argument(
        "--sizes", type=sizes, default=sizes("256,1024,2048,4096,8192"), help="square sizes"
    )
    parser.add_argument("--iterations", type=number(1, 1_000_000, integer=True), default=50)
    arguments = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("torch_matmul: PyTorch is not installed; nothing to compare", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("torch_matmul: no CUDA device visible to PyTorch", file=sys.stderr)
        return 2
    rows = []
    for dtype_name in DTYPES:
        for size in arguments.sizes:
            seconds = time_matmul(torch, dtype_name, size, size, size, arguments.iterations)
            flop = 2.0 * size**3
            name = f"matmul/gpu/torch_mm/dtype:{dtype_name}/m:{size}/n:{size}/k:{size}/manual_time"
            counters = {"m": size, "n": size, "k": size, "flop": flop, "FLOP/s": flop / seconds}
            label = f"workload=matmul backend=gpu variant=torch_mm dtype={dtype_name} shape=square"
            counters["t_compute"] = seconds
            rows.append(benchmark_row(name, seconds, arguments.iterations, label, counters))
            print(f"{name}: {seconds * 1e6:.1f} us, {flop / seconds / 1e12:.1f} TFLOP/s")
    context = {
        "gpu": torch.cuda.get_device_name(0),
        "torch_version": torch.__version__,
        "cuda_runtime_version": str(torch.version.cuda),
        "timing": "median of CUDA-event times of one torch.mm, L2 flushed before each",
    }
    write_benchmark_file(arguments.out, context, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
