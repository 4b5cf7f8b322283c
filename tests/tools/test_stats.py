"""The statistics compare and history share: exact numbers, so both tools keep the same rule."""

from __future__ import annotations

import math

import pytest

from gpubench_tools.stats import (
    MIN_REPETITIONS,
    SampleStats,
    enough_samples,
    min_p_value,
    ratio_of,
    repetitions_needed,
    u_test,
)


def test_min_two_sided_p() -> None:
    assert min_p_value(3, 3) == pytest.approx(0.1)
    assert min_p_value(4, 4) == pytest.approx(0.0286, abs=5e-5)
    assert min_p_value(5, 5) < 0.01
    assert min_p_value(5, 5) == pytest.approx(0.0079, abs=5e-5)
    assert min_p_value(1, 1) == 1.0  # 2 / C(2, 1) = 1: capped, never above 1
    assert min_p_value(0, 5) == 1.0


def test_min_one_sided_p() -> None:
    assert min_p_value(3, 3, "greater") == pytest.approx(0.05)
    assert min_p_value(1, 8, "greater") == pytest.approx(1 / 9)
    assert min_p_value(5, 20, "greater") == pytest.approx(1 / 53130)
    assert min_p_value(0, 5, "greater") == 1.0


@pytest.mark.parametrize("n1, n2", [(3, 3), (4, 4), (4, 6), (1, 8), (5, 20)])
def test_the_smallest_p_is_what_scipy_gives_for_separated_samples(n1: int, n2: int) -> None:
    low = [float(i) for i in range(n2)]
    high = [100.0 + i for i in range(n1)]
    assert u_test(high, low, "greater") == pytest.approx(min_p_value(n1, n2, "greater"))
    assert u_test(high, low) == pytest.approx(min_p_value(n1, n2))


@pytest.mark.parametrize("alpha, needed", [(0.2, 3), (0.05, 4), (0.01, 5), (0.001, 7)])
def test_repetitions_needed_follow_from_the_smallest_p(alpha: float, needed: int) -> None:
    assert repetitions_needed(alpha) == needed
    assert min_p_value(needed, needed) < alpha
    assert needed == MIN_REPETITIONS or min_p_value(needed - 1, needed - 1) >= alpha


def test_enough_samples() -> None:
    assert not enough_samples(3, 3, 0.05)  # smallest p 0.1
    assert enough_samples(4, 4, 0.05)  # smallest p 0.0286
    assert not enough_samples(2, 100, 0.2)  # fewer than MIN_REPETITIONS on one side
    assert enough_samples(3, 3, 0.06, "greater")  # one-sided: 0.05
    assert enough_samples(1, 24, 0.05, "greater", min_per_side=1)  # 1 / 25 = 0.04
    assert repetitions_needed(0.01, "greater", min_per_side=1) == 5  # 1 / 252 < 0.01 <= 1 / 70


def test_u_test_of_identical_values_is_one_not_nan() -> None:
    assert u_test([1.0, 1.0, 1.0], [1.0, 1.0]) == 1.0
    assert u_test([2.0] * 4, [2.0] * 4, "greater") == 1.0


def test_u_test_direction() -> None:
    slow = [130.0, 131.0, 129.0, 130.5]
    fast = [100.0, 101.0, 99.0, 100.5]
    assert u_test(slow, fast, "greater") == pytest.approx(1 / 70)
    assert u_test(fast, slow, "greater") == pytest.approx(1.0)
    assert u_test(slow, fast) == pytest.approx(2 / 70)


def test_ratio_of() -> None:
    assert ratio_of(3.0, 2.0) == 1.5
    assert ratio_of(0.0, 0.0) == 1.0
    assert ratio_of(1.0, 0.0) == math.inf
    assert ratio_of(-2.0, -4.0) == 0.5  # a counter may be negative: the ratio is kept as is


def test_sample_stats() -> None:
    s = SampleStats.of([3.0, 1.0, 2.0, 6.0])
    assert (s.n, s.median, s.min, s.max, s.mean) == (4, 2.5, 1.0, 6.0, 3.0)
    assert s.stdev == pytest.approx(math.sqrt(14 / 3))
    assert s.cv == pytest.approx(math.sqrt(14 / 3) / 3.0)
    one = SampleStats.of([5.0])
    assert (one.n, one.median) == (1, 5.0) and math.isnan(one.stdev) and math.isnan(one.cv)
    empty = SampleStats.of([])
    assert empty.n == 0 and math.isnan(empty.median) and empty.values == []
    assert math.isnan(SampleStats.of([-1.0, 1.0]).cv)  # mean 0: no relative spread
    assert SampleStats.of([1, 2]).as_dict()["values"] == [1.0, 2.0]
