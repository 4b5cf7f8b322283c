"""The statistics that gpubench-compare and gpubench-history share.

Both tools judge a change from the repetitions of one benchmark: a summary of each sample, the
ratio of the medians and a Mann-Whitney U test. They must agree on each of these (what the smallest
reachable p is, when a test can decide at all), so the definitions live once, here. Everything
works on plain lists of values; what counts as a valid value is row_rules' rule.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from dataclasses import dataclass
from typing import Any, Literal, Sequence

Alternative = Literal["two-sided", "greater", "less"]

# Fewest repetitions a side for any verdict of the compare gate, whatever alpha allows: with 1 or
# 2 a side the spread of a sample is unknown or meaningless.
MIN_REPETITIONS = 3


@dataclass
class SampleStats:
    """Summary of the repetitions of one metric on one side."""

    n: int
    median: float
    mean: float
    stdev: float
    cv: float  # relative spread: stdev / |mean|
    min: float
    max: float
    values: list[float]

    @classmethod
    def of(cls, values: Sequence[float]) -> "SampleStats":
        """Summary of finite values (the caller leaves out invalid ones), so the exact arithmetic
        of `statistics` cannot fail on NaN or infinity. An empty sample is all NaN."""
        vals = [float(v) for v in values]
        if not vals:
            return cls(0, *[math.nan] * 6, [])
        mean = statistics.fmean(vals)
        # A single repetition has no spread: NaN says "unknown", which is not the same as 0.
        stdev = statistics.stdev(vals) if len(vals) > 1 else math.nan
        cv = stdev / abs(mean) if len(vals) > 1 and mean != 0 else math.nan
        return cls(len(vals), statistics.median(vals), mean, stdev, cv, min(vals), max(vals), vals)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def ratio_of(new: float, base: float) -> float:
    """new / base, with the cases a plain division gets wrong for a verdict: equal values are 1
    (0 / 0 included) and anything over a zero base is infinite."""
    if base == new:
        return 1.0
    if base == 0:
        return math.inf
    return new / base


def u_test(x: Sequence[float], y: Sequence[float], alternative: Alternative = "two-sided") -> float:
    """p-value of the Mann-Whitney U test that x differs from y ("greater": x is larger).

    When every value is the same there is nothing to test and scipy would return NaN: the answer
    is then 1.0, "no evidence of a difference", as it is for any NaN.
    """
    # Imported here: scipy takes seconds to import, and commands that never test (history add)
    # should not pay for it.
    from scipy.stats import mannwhitneyu

    if len(set(x) | set(y)) == 1:
        return 1.0
    p = float(mannwhitneyu(x, y, alternative=alternative).pvalue)
    return 1.0 if math.isnan(p) else p


def min_p_value(n1: int, n2: int, alternative: Alternative = "two-sided") -> float:
    """Smallest p-value the exact U test can give for samples of n1 and n2 values.

    It is reached when every value of one sample is beyond every value of the other, one
    arrangement out of C(n1 + n2, n1); a two-sided test counts both directions. With 3 a side
    that is 0.1 two-sided (0.05 one-sided), so a test at alpha = 0.05 could never fire.
    """
    if n1 < 1 or n2 < 1:
        return 1.0
    tails = 2.0 if alternative == "two-sided" else 1.0
    return min(1.0, tails / math.comb(n1 + n2, n1))


def enough_samples(
    n1: int,
    n2: int,
    alpha: float,
    alternative: Alternative = "two-sided",
    min_per_side: int = MIN_REPETITIONS,
) -> bool:
    """Whether a verdict is possible at all: `min_per_side` values a side, and sizes for which the
    U test can reach p < alpha (else every difference would be "not significant", a "same" that
    was never tested)."""
    return min(n1, n2) >= min_per_side and min_p_value(n1, n2, alternative) < alpha


def repetitions_needed(
    alpha: float, alternative: Alternative = "two-sided", min_per_side: int = MIN_REPETITIONS
) -> int:
    """Fewest repetitions a side (the same on both) that can give a verdict at this alpha:
    two-sided 4 at alpha = 0.05, 5 at 0.01 (smallest p 0.029 and 0.0079)."""
    n = max(1, min_per_side)
    while not enough_samples(n, n, alpha, alternative, min_per_side):
        n += 1
    return n
