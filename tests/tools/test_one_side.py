"""A workload measured on one side only (no GPU rows and no reference, or GPU rows alone): its own
section with its times against its work, each row's time at and below its roof, and the bound
that applies; the answer lists it with the side it lacks and links to that section."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from conftest import GPU_CONTEXT, gb_row, write_bench_json
from gpubench_tools.report.cli import build_report
from gpubench_tools.report.context import Context
from gpubench_tools.report.one_side import one_sides
from gpubench_tools.roofline import BELOW, CACHE, MEMORY
from gpubench_tools.table import load_table

BASELINES = Path(__file__).resolve().parents[2] / "reports/baselines"
# One CPU core of 100 GFLOP/s (2 cores) with a 20 GB/s triad, as bench writes its context.
CPU_ROOFS = {
    "cpu_model": "Test CPU",
    "gpu": "none",
    "cpu_physical_cores": "2",
    "cpu_peak_fp32_flops": "2e+11",
    "cpu_peak_fp64_flops": "1e+11",
    "cpu_bandwidth_1thread_bytes_per_s": "2e+10",
    "cpu_bandwidth_all_cores_bytes_per_s": "3e+10",
}


def _saxpy(n: int, time_s: float, backend: str = "cpu", variant: str = "loop") -> dict:
    label = f"workload=saxpy backend={backend} variant={variant}"
    counters = {"flop": 2.0 * n, "bytes_moved": 12.0 * n, "n": float(n)}
    return gb_row(f"saxpy/{backend}/{variant}/n:{n}", time_s, counters, label, unit="s")


def _found(tmp_path: Path, rows: list[dict], context: dict) -> list:
    table = load_table([str(write_bench_json(tmp_path / "run.json", rows, context))])
    return one_sides(Context.of(table, tmp_path / "out").summary)


def test_each_row_is_placed_under_its_side_s_roofs_least_work_first(tmp_path: Path) -> None:
    n_small, n_large = 2**16, 2**24
    rows = [
        # 12 n bytes at the 20 GB/s roof: the large one at it, the small one 3x above (in cache)
        _saxpy(n_large, 12 * n_large / 20e9 * 1.05),
        _saxpy(n_small, 12 * n_small / 20e9 / 3),
        # a second path of the same workload, far below both roofs
        _saxpy(n_large, 12 * n_large / 20e9 * 10, variant="slow"),
    ]
    (found,) = _found(tmp_path, rows, CPU_ROOFS)
    assert (found.workload, found.side, found.missing) == ("saxpy", "cpu", "GPU")
    shown = found.rows
    assert list(shown["flop"]) == [2 * n_small, 2 * n_large, 2 * n_large]
    assert list(shown["line"]) == ["saxpy/cpu/loop", "saxpy/cpu/loop", "saxpy/cpu/slow"]
    assert list(shown["size"]) == [f"n:{n_small}", f"n:{n_large}", f"n:{n_large}"]
    assert list(shown["bound"]) == [CACHE, MEMORY, BELOW]
    # A cache-resident row has no time at or below the memory roof it beat.
    assert math.isnan(shown["t_at_roof"][0]) and math.isnan(shown["t_below_roof"][0])
    at_roof = 12 * n_large / 20e9
    assert shown["t_at_roof"][1] == pytest.approx(at_roof)
    assert shown["t_below_roof"][1] == pytest.approx(0.05 * at_roof)
    assert shown["t_below_roof"][2] == pytest.approx(9 * at_roof)
    assert {(c.bound, c.rows) for c in found.counts} == {(CACHE, 1), (MEMORY, 1), (BELOW, 1)}
    assert found.largest["name"] == "saxpy/cpu/slow/n:16777216"


def test_a_workload_measured_on_both_sides_gets_none_and_one_on_the_gpu_alone_does(
    tmp_path: Path,
) -> None:
    rows = [_saxpy(1024, 1e-6), _saxpy(1024, 2e-6, "gpu", "kernel_e2e")]
    rows.append(gb_row("softmax/gpu/kernel_e2e/rows:8", 1e-5, {"flop": 1e4}, "workload=softmax "
                       "backend=gpu variant=kernel_e2e", unit="s"))  # fmt: skip
    found = _found(tmp_path, rows, GPU_CONTEXT)
    assert [(f.workload, f.side, f.missing) for f in found] == [("softmax", "gpu", "CPU")]


def test_a_run_without_gpu_rows_gets_a_section_per_workload_linked_from_the_answer(
    tmp_path: Path,
) -> None:
    """The committed runs of the 2-core VM, CPU rows only and no reference: the public API's SAXPY
    example and the suite's own single-thread sgemm (reports/baselines/roofline-2core)."""
    folder = BASELINES / "roofline-2core"
    _, md_path, _ = build_report([str(folder / "saxpy.json"), str(folder / "sgemm.json")], tmp_path)
    md = md_path.read_text()
    answer = md.split("## The answer")[1].split("**Contents**")[0]
    for workload, title in (("saxpy", "saxpy"), ("matmul", "Square GEMM, fp32")):
        anchor = f"{workload}-0-one-side"
        assert f"| [{title}](#{anchor}) | — | — | — | — | no GPU rows to compare" in answer
        section = md.split(f'<a id="{anchor}"></a>')[1].split("\n## ")[1]
        assert section.startswith(f"{workload}: measured on the CPU only")
        assert (tmp_path / f"measured_{anchor}.png").is_file()
    saxpy = md.split('<a id="saxpy-0-one-side"></a>')[1].split("<a id=")[0]
    large, cached = "saxpy/cpu/loop/n:33554432", "saxpy/cpu/loop/n:4194304"
    assert f"At its most work, {large} takes 11.3 ms and is at the memory roof" in saxpy
    assert f"| {large} | 11.3 ms | 5.93 GFLOP/s | 11.3 ms | 0 ns | at the memory roof |" in saxpy
    assert f"| {cached} | 1.14 ms | 7.36 GFLOP/s | — | — | above the memory roof" in saxpy
    gemm = md.split('<a id="matmul-0-one-side"></a>')[1].split("<a id=")[0]
    assert "Rows: 4 at the compute roof." in gemm
