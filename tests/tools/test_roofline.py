"""The roofline rule on synthetic rows: which roof binds, what share of the time is at it, and
the names a reader sees (compute, memory, cache, below), the same for the CPU and the GPU."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from gpubench_tools.roofline import BELOW, CACHE, COMPUTE, MEMORY, place

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
    # 2^22 floats of SAXPY at 37.7 GB/s under a 24 GB/s triad: the data sat in cache.
    n = 2.0**22
    placed = _place([(2 * n, 12 * n, 12 * n / 37.7e9, (100e9, 24e9))]).iloc[0]
    assert placed["bound"] == CACHE
    assert math.isnan(placed["share_of_roof"])


def test_rows_without_work_or_roofs_get_no_bound() -> None:
    placed = _place([(0.0, 0.0, 1e-3, GPU), (1e9, 1e6, 1e-3, (float("nan"), 3e12))])
    assert placed["bound"].isna().all() and placed["t_roof"].isna().all()


def test_the_half_time_rule_sits_on_its_boundary() -> None:
    # Exactly half the time at the roof names the roof; a little less is below.
    flop, moved = 1e9, 1e3
    at = flop / GPU[0]
    placed = _place([(flop, moved, 2 * at, GPU), (flop, moved, 2.01 * at, GPU)])
    assert list(placed["bound"]) == [COMPUTE, BELOW]
