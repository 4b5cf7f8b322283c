"""The roofline rule on synthetic rows: which roof binds, what share of the time is at it, and
the names a reader sees (compute, memory, cache, below), the same for the CPU and the GPU."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from gpubench_tools.roofline import BELOW, CACHE, CACHE_MARGIN, COMPUTE, MEMORY, place, roofs
from gpubench_tools.report.topics import TRAINING_STEP_WORK, cnn_step_work, mlp_step_work
from gpubench_tools.roofline import derived_bytes, placed

# Two machines, as their contexts would give them: a GPU (60 TFLOP/s, 3 TB/s) and one CPU core
# (100 GFLOP/s, 20 GB/s).
GPU = (60e12, 3e12)
CPU = (100e9, 20e9)


def _place(rows: list[tuple[float, float, float, tuple[float, float]]]) -> pd.DataFrame:
    flop, moved, seconds, roofs = zip(*rows)
    return place(
        pd.Series(flop, dtype=float),
        pd.Series(moved, dtype=float),
        pd.Series(seconds, dtype=float),
        pd.Series([r[0] for r in roofs], dtype=float),
        pd.Series([r[1] for r in roofs], dtype=float),
    )


@pytest.mark.parametrize("machine", [GPU, CPU], ids=["gpu", "cpu"])
def test_a_row_at_the_memory_roof_is_memory_bound_not_under_utilised(machine: tuple) -> None:
    # SAXPY: 2 flop per 12 bytes; 1e8 elements take 1.2e9 bytes / bandwidth at the roof.
    n = 1e8
    at_roof = 12 * n / machine[1]
    placed = _place([(2 * n, 12 * n, at_roof * 1.15, machine)]).iloc[0]
    assert placed["roof"] == MEMORY and placed["bound"] == MEMORY
    assert placed["share_of_roof"] == pytest.approx(1 / 1.15)
    assert placed["t_below_roof"] == pytest.approx(0.15 * at_roof)


@pytest.mark.parametrize("machine", [GPU, CPU], ids=["gpu", "cpu"])
def test_a_large_gemm_is_compute_bound(machine: tuple) -> None:
    n = 4096.0
    flop, moved = 2 * n**3, 3 * n * n * 4
    placed = _place([(flop, moved, flop / machine[0] / 0.8, machine)]).iloc[0]
    assert placed["roof"] == COMPUTE and placed["bound"] == COMPUTE
    assert placed["share_of_roof"] == pytest.approx(0.8)


@pytest.mark.parametrize("machine", [GPU, CPU], ids=["gpu", "cpu"])
def test_a_tiny_row_is_below_both_roofs(machine: tuple) -> None:
    n = 16.0
    flop, moved = 2 * n**3, 3 * n * n * 4
    placed = _place([(flop, moved, 10e-6, machine)]).iloc[0]
    assert placed["bound"] == BELOW
    assert placed["t_at_roof"] + placed["t_below_roof"] == pytest.approx(10e-6)
    assert placed["share_of_roof"] < 0.5


def test_a_row_faster_than_the_memory_roof_is_cache_resident_and_never_over_100_percent() -> None:
    # 2^22 floats of SAXPY at 47.6 GB/s under a 36.5 GB/s triad (1.30x): the data sat in cache.
    n = 2.0**22
    placed = _place([(2 * n, 12 * n, 12 * n / 47.6e9, (100e9, 36.5e9))]).iloc[0]
    assert placed["bound"] == CACHE
    assert math.isnan(placed["share_of_roof"])
    # It beat the memory roof: no part of its time is at or below it.
    assert math.isnan(placed["t_at_roof"]) and math.isnan(placed["t_below_roof"])


def test_a_row_a_little_above_the_memory_roof_is_at_it_not_in_cache() -> None:
    # 2^25 floats of SAXPY at 1.09x the triad (another kernel's median against the triad's best):
    # memory-bound, at 100 % of its roof, nothing below it; just past the margin it is in cache.
    n = 2.0**25
    at_roof = 12 * n / 36.5e9
    rows = [(2 * n, 12 * n, at_roof / 1.09, (100e9, 36.5e9))]
    rows.append((2 * n, 12 * n, at_roof / (CACHE_MARGIN * 1.01), (100e9, 36.5e9)))
    placed = _place(rows)
    assert list(placed["bound"]) == [MEMORY, CACHE]
    assert placed["share_of_roof"][0] == 1.0 and placed["t_below_roof"][0] == 0


def test_rows_without_work_or_roofs_get_no_bound() -> None:
    placed = _place([(0.0, 0.0, 1e-3, GPU), (1e9, 1e6, 1e-3, (float("nan"), 3e12))])
    assert placed["bound"].isna().all() and placed["t_roof"].isna().all()


def test_the_half_time_rule_sits_on_its_boundary() -> None:
    # Exactly half the time at the roof names the roof; a little less is below.
    flop, moved = 1e9, 1e3
    at = flop / GPU[0]
    placed = _place([(flop, moved, 2 * at, GPU), (flop, moved, 2.01 * at, GPU)])
    assert list(placed["bound"]) == [COMPUTE, BELOW]


def test_work_derived_from_names_matches_the_suite_s_model() -> None:
    """The C++ model's figures (docs/workloads.md): Iris 42,100 bytes per step, 64-4096-10 at batch
    4096 12.9 flop/byte, the CNN at batch 64 80.4 MB, a GEMM's three matrices once."""
    assert mlp_step_work("iris", [10], 120) == (40_800, 42_100)
    flop, moved = mlp_step_work("synthetic", [4096], 4096)
    assert flop / moved == pytest.approx(12.87, abs=0.01)
    assert cnn_step_work(64)[1] == pytest.approx(80.4e6, rel=1e-3)
    rows = pd.DataFrame(
        {
            "name": [
                "matmul/gpu/cublas_kernel/dtype:bf16/m:64/n:32/k:16/manual_time",
                "mlp/cpu/openblas/data:iris/batch:120/hidden:10/readback:1/threads:1",
                "mlp/gpu/graph/data:synthetic/batch:256/hidden:64x2/readback:0/manual_time",
                "overhead/launch/empty_kernel",
            ],
            "flop": [2.0 * 64 * 32 * 16, 40_800 * 20_000, 1.0, float("nan")],
        }
    )
    derived = derived_bytes(rows, TRAINING_STEP_WORK)
    assert derived[0] == (64 * 16 + 16 * 32 + 64 * 32) * 2
    assert derived[1] == 42_100 * 20_000
    step_flop, step_bytes = mlp_step_work("synthetic", [64, 64], 256)
    assert derived[2] == pytest.approx(step_bytes / step_flop)
    assert math.isnan(derived[3])


def test_each_side_is_read_against_its_own_roofs() -> None:
    context = {
        "context.cpu_peak_fp32_flops": 400e9, "context.cpu_physical_cores": 4.0,
        "context.cpu_bandwidth_1thread_bytes_per_s": 20e9,
        "context.cpu_bandwidth_all_cores_bytes_per_s": 50e9,
        "context.gpu_peak_bf16_flops": 900e12, "context.gpu_peak_fp32_flops": 60e12,
        "context.gpu_memory_bandwidth_bytes_per_s": 3e12,
    }  # fmt: skip
    rows = pd.DataFrame(
        [
            {"name": "matmul/cpu/openblas/dtype:fp32/m:8/n:8/k:8/threads:1", **context},
            {"name": "matmul/cpu/openblas/dtype:fp32/m:8/n:8/k:8/threads:2", **context},
            {"name": "matmul/cpu/openblas/dtype:fp32/m:8/n:8/k:8/threads:4", **context},
            {"name": "mlp/gpu/eager/data:iris/precision:bf16/manual_time", **context},
            {"name": "matmul/gpu/cublas_kernel/m:8/n:8/k:8/manual_time", **context},
        ]
    )
    got = roofs(rows)
    assert list(got["flop_per_s"]) == [100e9, 200e9, 400e9, 900e12, 60e12]
    assert list(got["bytes_per_s"]) == [20e9, 40e9, 50e9, 3e12, 3e12]
    assert list(got["bandwidth_source"])[-1] == "theoretical (driver)"


def test_placed_reads_gpu_rows_by_their_compute_time_and_labels_derived_work() -> None:
    context = {
        "context.gpu_peak_fp32_flops": 60e12, "context.gpu_memory_bandwidth_bytes_per_s": 3e12,
        "context.cpu_peak_fp32_flops": 100e9, "context.cpu_physical_cores": 1.0,
    }  # fmt: skip
    n = 4096.0
    gemm = 2 * n**3
    summary = pd.DataFrame(
        [
            {  # an old GPU row: no bytes_moved; its copies and overhead are not the compute's
                "name": "matmul/gpu/cublas_e2e/dtype:fp32/m:4096/n:4096/k:4096/manual_time",
                "flop": gemm, "bytes_moved": float("nan"), "t_compute": gemm / 60e12 / 0.9,
                "time_s": 1.0, **context,
            },
            {  # a CPU row of a file without a memory roof: placed nowhere, never at infinity
                "name": "matmul/cpu/openblas/dtype:fp32/m:4096/n:4096/k:4096/threads:2",
                "flop": gemm, "bytes_moved": 3 * n * n * 4, "t_compute": float("nan"),
                "time_s": 2.0, **context,
            },
        ]
    )  # fmt: skip
    got = placed(summary)
    assert list(got["work_derived"]) == [True, False]
    assert got["bytes_moved"][0] == 3 * n * n * 4
    assert got["bound"][0] == COMPUTE and got["share_of_roof"][0] == pytest.approx(0.9)
    assert math.isnan(got["bytes_per_s_roof"][1]) and got["bound"].isna()[1]


def test_a_machine_s_roofline_holds_its_ceilings_and_its_placed_rows(tmp_path) -> None:
    from gpubench_tools.report.roofline_chart import draw_roofline
    from gpubench_tools.report.roofs import COMPUTE_ROOF, MEMORY_ROOF, machine_roofline

    context = {
        "context.cpu_peak_fp32_flops": 200e9, "context.cpu_physical_cores": 2.0,
        "context.cpu_bandwidth_1thread_bytes_per_s": 20e9,
    }  # fmt: skip
    n = 2.0**25
    summary = placed(
        pd.DataFrame(
            [
                {
                    "machine": 0, "backend": "cpu", "workload": "saxpy", "variant": "cpu",
                    "name": "saxpy/cpu/n:33554432", "flop": 2 * n, "bytes_moved": 12 * n,
                    "time_s": 12 * n / 20e9 * 1.1, "t_compute": float("nan"), **context,
                },
            ]
        )
    )  # fmt: skip
    view = machine_roofline(summary, 0)
    kinds = {(c.kind, c.label) for c in view.ceilings}
    assert (COMPUTE_ROOF, "CPU fp32, 1 core") in kinds
    assert (MEMORY_ROOF, "CPU triad, 1 thread") in kinds
    (point,) = view.points
    assert point.bound == MEMORY and not point.derived
    assert point.flop_per_s == pytest.approx(2 * n / (12 * n / 20e9 * 1.1))
    assert [(c.side, c.bound, c.rows) for c in view.counts] == [("cpu", MEMORY, 1)]
    assert view.extremes == view.points
    assert draw_roofline(view, "one CPU", "this run", tmp_path, "roofline") == "roofline"
    assert (tmp_path / "roofline.png").stat().st_size > 0


def test_the_breakdown_names_a_memory_bound_gpu_row_memory_bandwidth_not_under_utilisation() -> (
    None
):
    """A kernel that moves its bytes at 90 % of the memory roof: its compute is memory bandwidth;
    the same row read against the FLOP peak alone would have been nearly all under-utilisation."""
    from gpubench_tools.report.analysis import breakdown

    n = 2.0**20  # a GEMV-like product: 2 n flop, 12 n bytes (an intensity of 1/6)
    t_compute = 12 * n / 3e12 / 0.9
    row = {
        "machine": 0, "name": "matmul/gpu/cublas_e2e/dtype:fp32/host:pinned/m:1/n:1/k:1",
        "workload": "matmul", "backend": "gpu", "host": "pinned", "dtype": "fp32",
        "probe": None, "flop": 2 * n, "bytes_moved": 12 * n, "bytes_per_s_roof": 3e12,
        "context.gpu_peak_fp32_flops": 60e12, "t_h2d": 1e-6, "t_d2h": 1e-6,
        "t_overhead": 1e-6, "t_compute": t_compute, "t_wall": t_compute + 3e-6, "pct_peak": 1.0,
    }  # fmt: skip
    (parts,) = breakdown(pd.DataFrame([row])).to_dict("records")
    assert parts["memory_bandwidth"] == pytest.approx(12 * n / 3e12)
    assert parts["work_at_peak"] == 0
    assert parts["under_utilisation"] == pytest.approx(0.1 * t_compute)
    assert parts["dominant"] == "memory_bandwidth"


def test_a_run_without_gpu_rows_lists_what_it_measured_under_the_cpu_roofs(tmp_path) -> None:
    """The committed SAXPY run of the 2-core VM (the public API's example, CPU rows only, no
    reference): its machine's roofs section places each size (on that VM the four smaller sizes
    are cache-resident and 2^25, 256 MiB of data, is at the memory roof:
    reports/baselines/roofline-2core). The answer and the workload's own section:
    test_one_side.py."""
    from pathlib import Path

    from gpubench_tools.report.cli import build_report

    run = Path(__file__).resolve().parents[2] / "reports/baselines/roofline-2core/saxpy.json"
    _, md_path, _ = build_report([str(run)], tmp_path)
    md = md_path.read_text()
    assert "No workload was measured" not in md
    roofs = md.split("## Against the roofs: compute and memory")[1].split("\n## ")[0]
    assert "CPU triad, 1 thread 33.9 GB/s" in roofs
    large = (
        "| saxpy/cpu/loop/n:33554432 | 0.167 | 5.93 GFLOP/s | 100% | 11.3 ms | 0 ns | at the memory"
    )
    assert large in roofs
    assert "CPU 4 above the memory roof (cache-resident); CPU 1 at the memory roof" in roofs
