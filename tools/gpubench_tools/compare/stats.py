"""Statistics and verdicts for the regression compare tool.

Everything here works on plain lists of repetition values, so it can be tested without any JSON.
A comparison is expressed as a *slowdown*: how many times worse the contender is than the
baseline, whatever the metric. For a time (lower is better) that is contender / baseline; for a
rate such as FLOP/s (higher is better) it is baseline / contender. One threshold then serves both.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any

from scipy.stats import mannwhitneyu

__all__ = [
    "BETTER_CHOICES",
    "MIN_REPETITIONS",
    "MetricResult",
    "SampleStats",
    "Thresholds",
    "compare_metric",
    "min_two_sided_p",
]

# How a metric is judged: "lower" (times), "higher" (rates), "exact" (counters that define the
# work, e.g. flop: any change means the benchmark itself changed) and "info" (shown, never judged).
BETTER_CHOICES: tuple[str, ...] = ("lower", "higher", "exact", "info")

# Verdicts of one metric. "slower" and "changed" fail the gate; the others never do.
SLOWER = "slower"
FASTER = "faster"
SAME = "same"
NOISY = "noisy"
CHANGED = "changed"
INFO = "info"

# Fewest repetitions a side for a slower/faster verdict. With 1 or 2 a side, two ranges that do
# not overlap are no evidence at all (a single repetition "never overlaps" any other), so the
# tool would call every difference beyond max_ratio significant.
MIN_REPETITIONS = 3

# Relative difference below which "exact" counters count as equal: they are computed from the
# benchmark's arguments, so only float formatting can make them differ.
_EXACT_RTOL = 1e-9


@dataclass(frozen=True)
class Thresholds:
    """When a difference counts.

    max_ratio: a slowdown above this (e.g. 1.05 = 5 % worse) is "slower", below 1/max_ratio "faster".
    alpha: significance level of the Mann-Whitney U test the difference must also pass.
    max_cv: a coefficient of variation (stdev/mean of the repetitions) above this on either side
        makes the metric "too noisy to judge", unless the two samples do not even overlap.
    check_fastest: the best repetitions (fastest time, highest rate) must differ beyond max_ratio
        too. Noise from other processes only ever adds time, so a burst that slowed most of a
        run moves the median but leaves the best repetition alone, while a real regression
        moves both.
    """

    max_ratio: float = 1.05
    alpha: float = 0.05
    max_cv: float = 0.10
    check_fastest: bool = False

    def as_dict(self) -> dict[str, float | bool]:
        return {
            "max_ratio": self.max_ratio,
            "alpha": self.alpha,
            "max_cv": self.max_cv,
            "check_fastest": self.check_fastest,
        }


@dataclass
class SampleStats:
    """Summary of the repetitions of one metric on one side."""

    values: list[float]
    n: int
    median: float
    mean: float
    stdev: float
    cv: float
    min: float
    max: float

    @classmethod
    def of(cls, values: list[float]) -> "SampleStats":
        vals = [float(v) for v in values]
        if not vals:
            nan = math.nan
            return cls([], 0, nan, nan, nan, nan, nan, nan)
        mean = statistics.fmean(vals)
        # A single repetition has no spread: NaN says "unknown", which is not the same as 0.
        stdev = statistics.stdev(vals) if len(vals) > 1 else math.nan
        cv = stdev / abs(mean) if len(vals) > 1 and mean != 0 else math.nan
        return cls(vals, len(vals), statistics.median(vals), mean, stdev, cv, min(vals), max(vals))

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "median": self.median,
            "mean": self.mean,
            "stdev": self.stdev,
            "cv": self.cv,
            "min": self.min,
            "max": self.max,
            "values": self.values,
        }


@dataclass
class MetricResult:
    """The comparison of one metric (time, normalised time or a counter) of one benchmark."""

    metric: str
    better: str
    base: SampleStats
    cont: SampleStats
    thresholds: Thresholds
    ratio: float  # contender median / baseline median, as measured
    slowdown: float  # >1 means the contender is worse, whatever the direction of the metric
    best_slowdown: float  # the same for the best repetition of each side
    p_value: float | None
    verdict: str
    gating: bool  # whether a "slower"/"changed" verdict of this metric fails the gate
    notes: list[str] = field(default_factory=list)

    @property
    def fails(self) -> bool:
        return self.gating and self.verdict in (SLOWER, CHANGED)

    def as_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "better": self.better,
            "verdict": self.verdict,
            "gating": self.gating,
            "fails": self.fails,
            "ratio": self.ratio,
            "slowdown": self.slowdown,
            "best_slowdown": self.best_slowdown,
            "p_value": self.p_value,
            "thresholds": self.thresholds.as_dict(),
            "baseline": self.base.as_dict(),
            "contender": self.cont.as_dict(),
            "notes": list(self.notes),
        }


def min_two_sided_p(n1: int, n2: int) -> float:
    """Smallest two-sided p-value the exact U test can give for these sample sizes.

    With 3 repetitions a side it is 0.1, so a test at alpha = 0.05 could never fire; the caller
    then judges on the ranges instead of silently calling every change "same".
    """
    if n1 < 1 or n2 < 1:
        return 1.0
    return min(1.0, 2.0 / math.comb(n1 + n2, n1))


def _u_test(base: list[float], cont: list[float]) -> float:
    if len(set(base) | set(cont)) == 1:
        return 1.0  # every value identical: nothing to test, and scipy would return NaN
    p = float(mannwhitneyu(cont, base, alternative="two-sided").pvalue)
    return 1.0 if math.isnan(p) else p


def _ratio(cont_median: float, base_median: float) -> float:
    if base_median == cont_median:
        return 1.0
    if base_median == 0:
        return math.inf
    return cont_median / base_median


def compare_metric(
    metric: str,
    better: str,
    base_values: list[float],
    cont_values: list[float],
    thresholds: Thresholds,
    gating: bool = True,
) -> MetricResult:
    """Compare the repetitions of one metric and give a verdict.

    slower/faster: the median slowdown is beyond max_ratio (either way) AND the difference is
    significant (U test p < alpha, or with too few repetitions for the test, ranges that do not
    overlap). A spread above max_cv turns that into "noisy" unless the ranges do not overlap at
    all, because then the noise cannot have produced the difference. With fewer than
    MIN_REPETITIONS on either side nothing is significant: a difference beyond max_ratio is
    "noisy" (too noisy to judge), anything else "same", and a note asks for more repetitions.
    """
    if better not in BETTER_CHOICES:
        raise ValueError(f"metric {metric!r}: 'better' must be one of {BETTER_CHOICES}")
    base = SampleStats.of(base_values)
    cont = SampleStats.of(cont_values)
    ratio = _ratio(cont.median, base.median)
    notes: list[str] = []

    def result(
        verdict: str, slowdown: float, p: float | None, best: float = math.nan
    ) -> MetricResult:
        return MetricResult(
            metric, better, base, cont, thresholds, ratio, slowdown, best, p, verdict, gating, notes
        )

    if better == "exact":
        equal = math.isclose(cont.median, base.median, rel_tol=_EXACT_RTOL, abs_tol=0.0) and (
            math.isclose(cont.min, cont.max, rel_tol=_EXACT_RTOL)
        )
        if not equal:
            notes.append(
                "defines the work of the benchmark: it changed, so the timings are not comparable "
                "(re-record the baseline if the change is intended)"
            )
        return result(SAME if equal else CHANGED, 1.0, None)

    if better == "info":
        return result(INFO, math.nan, None)

    if not (base.median > 0 and cont.median > 0) or math.isinf(ratio):
        notes.append("median is zero or negative on one side: a ratio means nothing here")
        return result(INFO, math.nan, None)

    slowdown = ratio if better == "lower" else 1.0 / ratio
    # Work in "badness" space so that one rule serves times and rates: larger = worse.
    sign = 1.0 if better == "lower" else -1.0
    base_bad = sorted(sign * v for v in base.values)
    cont_bad = sorted(sign * v for v in cont.values)
    separated_worse = cont_bad[0] > base_bad[-1]
    separated_better = cont_bad[-1] < base_bad[0]
    # Best repetition of each side: the fastest time, or the highest rate.
    best_slowdown = cont.min / base.min if better == "lower" else base.max / cont.max

    p_value: float | None = None
    if base.n >= 2 and cont.n >= 2:
        p_value = _u_test(base.values, cont.values)

    if min(base.n, cont.n) < MIN_REPETITIONS:
        reps = str(base.n) if base.n == cont.n else f"{base.n} vs {cont.n}"
        notes.append(
            f"n={reps}: rerun with --benchmark_repetitions>={MIN_REPETITIONS} to judge "
            f"(the median moved {slowdown:.2f}x)"
        )
        beyond = slowdown > thresholds.max_ratio or slowdown < 1.0 / thresholds.max_ratio
        return result(NOISY if beyond else SAME, slowdown, p_value, best_slowdown)

    floor = min_two_sided_p(base.n, cont.n)
    if floor < thresholds.alpha:
        significant = p_value is not None and p_value < thresholds.alpha
    else:
        significant = separated_worse or separated_better
        reps = f"{base.n} vs {cont.n} repetitions"
        notes.append(
            f"{reps}: the U test cannot reach alpha={thresholds.alpha:g} (smallest p is "
            f"{floor:.3g}), judged on non-overlapping ranges instead; run more repetitions"
        )

    cvs = [c for c in (base.cv, cont.cv) if not math.isnan(c)]
    noisy = bool(cvs) and max(cvs) > thresholds.max_cv

    worse = slowdown > thresholds.max_ratio
    improved = slowdown < 1.0 / thresholds.max_ratio
    if thresholds.check_fastest:
        best_worse = best_slowdown > thresholds.max_ratio
        best_improved = best_slowdown < 1.0 / thresholds.max_ratio
        if (worse and not best_worse) or (improved and not best_improved):
            notes.append(
                f"median moved {slowdown:.2f}x but the best repetitions only {best_slowdown:.2f}x: "
                "load during part of one run, not a change of the code"
            )
        worse, improved = worse and best_worse, improved and best_improved
    if worse and significant:
        verdict = NOISY if noisy and not separated_worse else SLOWER
    elif improved and significant:
        verdict = NOISY if noisy and not separated_better else FASTER
    elif noisy:
        verdict = NOISY
    else:
        verdict = SAME
    if verdict == NOISY:
        notes.append(
            f"spread (cv {max(cvs):.1%}) above max_cv={thresholds.max_cv:.0%}: too noisy to judge"
        )
    elif (worse or improved) and not significant and p_value is not None:
        notes.append(f"beyond max_ratio but not significant (p={p_value:.3g})")
    return result(verdict, slowdown, p_value, best_slowdown)
