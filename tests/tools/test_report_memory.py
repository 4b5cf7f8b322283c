"""The report's memory section: measured against modelled device bytes, the largest batch that
fits, and allocation cost against size (median and slowest decile over the repetitions, the
pool's saving), and what it says when rows are missing.

The GPU rows are hand-made test data with plausible values (tests/tools/handmade_rows.py), not a
measurement: no GPU run of these rows exists yet."""

from __future__ import annotations

import contextlib
import io
import math
from pathlib import Path
from typing import Any

import pytest
from conftest import gb_row, write_bench_json
from md_plain import read_md
from handmade_rows import (
    ALLOC_BASE,
    CONTEXT,
    CPU_CONTEXT,
    MEDIAN_FACTOR,
    P90_FACTOR,
    alloc_rows,
    all_gpu_rows,
    cpu_mlp_rows,
    largest_batch_rows,
)

from gpubench_tools.dataset import Source, load_sources
from gpubench_tools.report import main
from gpubench_tools.report.memory_analysis import (
    alloc_costs,
    family_summaries,
    largest_batches,
    median_and_p90,
    memory_rows,
    pool_savings,
    worst_disagreements,
)
from gpubench_tools.report.memory_sentences import (
    alloc_sentences,
    largest_batch_sentences,
    memory_gaps,
    model_sentences,
)

SECTION = "8. Device memory and allocation cost"
MIB = 2**20


def _source(
    tmp_path: Path, rows: list[dict[str, Any]], context: dict[str, Any] = CONTEXT
) -> Source:
    (src,), _ = load_sources([str(write_bench_json(tmp_path / "in.json", rows, context))])
    return src


def _section(md: str) -> str:
    return md.split(f"## {SECTION}", 1)[1].split("\n## ", 1)[0]


# --- measured against modelled -----------------------------------------------------------------


def _memory_row(batch: int, model: float, peak: float) -> dict[str, Any]:
    return gb_row(
        f"mlp/gpu/eager/data:synthetic/batch:{batch}/hidden:64/readback:0/manual_time",
        1e-3,
        {"batch": batch, "t_epoch": 1e-4, "device_bytes_model": model, "device_bytes_peak": peak},
        "workload=mlp backend=gpu variant=eager data=synthetic input=resident",
    )


def test_family_median_range_and_excess(tmp_path: Path) -> None:
    # Ratios 1.0, 1.5 and 3.0; excess 0, 5 MiB and 20 MiB.
    rows = [
        _memory_row(16, 10 * MIB, 10 * MIB),
        _memory_row(256, 10 * MIB, 15 * MIB),
        _memory_row(4096, 10 * MIB, 30 * MIB),
    ]
    (family,) = family_summaries(memory_rows(_source(tmp_path, rows)))
    assert family.family == "mlp eager" and family.rows == 3
    assert (family.median_ratio, family.min_ratio, family.max_ratio) == (1.5, 1.0, 3.0)
    assert family.median_excess_bytes == 5 * MIB


def test_worst_disagreement_by_factor_either_way(tmp_path: Path) -> None:
    rows = [
        _memory_row(16, 10 * MIB, 12 * MIB),
        _memory_row(256, 40 * MIB, 10 * MIB),  # 4x below the model: the worst
        _memory_row(4096, 10 * MIB, 30 * MIB),
    ]
    src = _source(tmp_path, rows)
    worst = worst_disagreements(memory_rows(src))
    assert [r.point.c("batch") for r in worst] == [256, 4096, 16]
    text = model_sentences(src)
    assert (
        "measured 10 MiB against a model of 40 MiB (0.25x, 30 MiB less than the model" in text[-1]
    )
    assert "within 10% of it in 0 of them" in text[0]


def test_rows_without_a_model_count_are_left_out(tmp_path: Path) -> None:
    rows = [_memory_row(16, 0.0, 2 * MIB), _memory_row(256, 10 * MIB, 12 * MIB)]
    assert [r.point.c("batch") for r in memory_rows(_source(tmp_path, rows))] == [256]


def test_the_handmade_sweep_worst_rows_are_the_smallest_allocations(tmp_path: Path) -> None:
    src = _source(tmp_path, all_gpu_rows())
    worst = worst_disagreements(memory_rows(src), 3)
    assert all("/bytes:4096/" in r.point.run_name for r in worst)
    assert all(r.ratio == pytest.approx(2 * MIB / 4096) for r in worst)
    families = {f.family for f in family_summaries(memory_rows(src))}
    assert {
        "mlp eager",
        "mlp eager bf16",
        "memory largest_batch fp32",
        "overhead alloc_async",
    } <= families


# --- the largest batch -------------------------------------------------------------------------


def test_largest_batch_row_and_skipped_row(tmp_path: Path) -> None:
    src = _source(tmp_path, largest_batch_rows())
    (row,) = largest_batches(src)
    assert row.case == "cnn, data synthetic, fp32"
    text = largest_batch_sentences(src)
    assert (
        "H100 80GB HBM3, largest batch (cnn, data synthetic, fp32): the model puts it at 10.0k in "
        "74.5 GiB of free device memory; the run trained at batch 9000 and its measured peak was "
        "67.1 GiB (90% of the free memory), 500 ms per step." == text[0]
    )
    assert text[1].startswith(
        "memory/gpu/largest_batch/net:mlp/data:synthetic/hidden:4096x2/precision:bf16/"
        "iterations:1/manual_time did not run: does not fit in device memory"
    )


# --- allocation cost ---------------------------------------------------------------------------


def test_median_and_slowest_decile_over_ten_repetitions(tmp_path: Path) -> None:
    costs = alloc_costs(_source(tmp_path, alloc_rows()))
    assert list(costs) == [
        "cudaMalloc",
        "cudaFree",
        "cudaMallocAsync + cudaFreeAsync (pool)",
        "cudaMallocHost",
        "cudaFreeHost",
    ]
    malloc = costs["cudaMalloc"]
    assert [a.nbytes for a in malloc] == [4096, 262144, 16 * MIB, 1024 * MIB]
    for a, base in zip(malloc, ALLOC_BASE[("malloc", "device")]):
        assert a.repetitions == 10
        assert a.median_s == pytest.approx(base * MEDIAN_FACTOR)
        assert a.p90_s == pytest.approx(base * P90_FACTOR)


def test_slowest_decile_is_the_inverted_cdf() -> None:
    assert median_and_p90([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 100.0]) == (5.5, 9.0)
    assert median_and_p90([2.0, 1.0]) == (1.5, 2.0)
    median, p90 = median_and_p90([3.0])
    assert median == 3.0 and math.isnan(p90)


def test_pool_saving_per_size(tmp_path: Path) -> None:
    savings = dict(pool_savings(alloc_costs(_source(tmp_path, alloc_rows()))))
    # (malloc + free) / pool, every median scaled by the same factor.
    assert savings[4096] == pytest.approx((2e-6 + 1e-6) / 0.5e-6)
    assert savings[1024 * MIB] == pytest.approx((500e-6 + 300e-6) / 0.6e-6)
    text = " ".join(alloc_sentences(_source(tmp_path, alloc_rows())))
    assert "is cheaper than cudaMalloc + cudaFree" in text
    assert ": 6x at 4 KiB, 1333x at 1 GiB." in text
    assert "cudaMalloc 2.02 us at 4 KiB, slowest decile 2.40 us, 505 us at 1 GiB" in text


def test_aggregates_only_file_has_medians_but_no_decile(tmp_path: Path) -> None:
    src = _source(tmp_path, alloc_rows(aggregates_only=True))
    malloc = alloc_costs(src)["cudaMalloc"]
    assert malloc[0].median_s == pytest.approx(2e-6 * MEDIAN_FACTOR)
    assert all(math.isnan(a.p90_s) for a in malloc)
    assert "no slowest decile can be given" in " ".join(alloc_sentences(src))


# --- missing data and the report ---------------------------------------------------------------


def test_gpu_rows_without_memory_counters_or_probes_say_so(h100_report: dict[str, Any]) -> None:
    section = _section(read_md(h100_report["out"] / "report.md"))
    assert "the GPU rows carry no device_bytes_peak and device_bytes_model counters" in section
    assert "no allocation probes (overhead/alloc/...) in the input" in section
    assert not (h100_report["out"] / "alloc_cost.png").exists()


def test_cpu_only_run_has_no_memory_section_content(tmp_path: Path) -> None:
    path = write_bench_json(tmp_path / "cpu.json", cpu_mlp_rows(), CPU_CONTEXT)
    code = main([str(path), "--out", str(tmp_path / "r")])
    assert code == 0
    section = _section(read_md(tmp_path / "r" / "report.md"))
    assert "No GPU rows in the input files" in section
    assert memory_gaps(_source(tmp_path, cpu_mlp_rows(), CPU_CONTEXT)) == []


def test_report_renders_the_memory_section(tmp_path: Path) -> None:
    path = write_bench_json(tmp_path / "h.json", all_gpu_rows(), CONTEXT)
    out = tmp_path / "r"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main([str(path), "--out", str(out)])
    assert code == 0
    section = _section(read_md(out / "report.md"))
    for chart in ("memory_model", "alloc_cost"):
        assert f"]({chart}.png)" in section
        assert (out / f"{chart}.png").stat().st_size > 10_000
    assert (
        "| H100 80GB HBM3 | 4 KiB | 2.02 us (2.40 us) | 1.01 us (1.20 us) | 505 ns (600 ns) |"
        in section
    )
    assert "| H100 80GB HBM3 | cnn, data synthetic, fp32 | 10.0k | 9000 | 74.5 GiB |" in section
    assert (
        "| H100 80GB HBM3 | overhead/alloc/malloc/device/bytes:4096/repeats:10/manual_time | 4 KiB | 2 MiB | 512x |"
        in section
    )
