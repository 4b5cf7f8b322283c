"""The two statistical judgements of compare, on the statistics of gpubench_tools.stats: the
U test of two independent samples of a metric (compare_metric), and the Hodges-Lehmann estimate
with the signed-rank interval of interleaved pairs (judge_values; paired.py says how it is used).

Everything here works on plain lists of repetition values, so it can be tested without any JSON.
A comparison is expressed as a *slowdown*: how many times worse the contender is than the
baseline, whatever the metric. For a time (lower is better) that is contender / baseline; for a
rate such as FLOP/s (higher is better) it is baseline / contender. One threshold then serves both.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable, Iterable, Sequence

import numpy as np
from scipy.stats import wilcoxon

from ..status import Number, Said, UnusableInput, said
from ..json_values import as_read
from ..row_rules import MAX_TIME_S
from ..schema import usable_counter
from ..stats import SampleStats, min_p_value, ratio_of, repetitions_needed, u_test

# How a metric is judged: "lower" (times), "higher" (rates), "exact" (counters that define the
# work, e.g. flop: any change means the benchmark itself changed) and "info" (shown, never judged).
BETTER_CHOICES: tuple[str, ...] = ("lower", "higher", "exact", "info")

# Verdicts of one metric. "slower", "changed" and "invalid" fail the gate (when the metric
# gates); the others never do. "few" (not enough samples) is not a pass either: the gate counts
# it as not judged.
SLOWER, FASTER, SAME, NOISY = "slower", "faster", "same", "noisy"
CHANGED, INFO, FEW, INVALID = "changed", "info", "few", "invalid"
# A verdict of the pairs' interval only: it straddles the margin (paired.py).
AMBIGUOUS = "ambiguous"


def judgeable(n_base: int, n_cont: int, alpha: float) -> bool:
    """The repetition rule of the gate, the one place it is decided: a benchmark is judged only
    with at least repetitions_needed(alpha) repetitions on *each* side, the fewest with which the
    two-sided U test can reach p < alpha at equal sizes (4 at alpha 0.05, 5 at 0.01). Why one
    number a side: uneven sizes can reach alpha with fewer on one side (5 against 3 gives
    p >= 0.036), but a side of 3 says little about its own spread, and a rule a user can state
    in one sentence is the one they can plan repetitions by."""
    return min(n_base, n_cont) >= repetitions_needed(alpha)


# Relative difference below which "exact" counters count as equal: they are computed from the
# benchmark's arguments, so only float formatting can make them differ.
_EXACT_RTOL = 1e-9


@dataclass(frozen=True)
class Thresholds:
    """When a difference counts (docs/regression-gate.md). No defaults here: the values come
    from the packaged default-thresholds.json or a --config file.

    check_fastest: the best repetitions must differ beyond max_ratio too. Noise from other
    processes only ever adds time, so a burst that slowed most of a run moves the median but
    leaves the best repetition alone, while a real regression moves both.
    """

    max_ratio: float
    alpha: float
    max_cv: float
    check_fastest: bool


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
    gating: bool  # whether a "slower"/"changed"/"invalid" verdict of this metric fails the gate
    notes: list[str | Said] = field(default_factory=list)  # a Said: compare.words words it
    # Repetitions a side the U test needs to reach alpha (set when the verdict is FEW).
    needed: int | None = None
    # Values left out as not plausible (NaN, infinity, a time <= 0, an absurd magnitude).
    base_invalid: list[float] = field(default_factory=list)
    cont_invalid: list[float] = field(default_factory=list)

    @property
    def fails(self) -> bool:
        return self.gating and self.verdict in (SLOWER, CHANGED, INVALID)

    def as_dict(self) -> dict[str, Any]:
        keys = "metric better verdict gating fails ratio slowdown best_slowdown p_value".split()
        invalid = {"baseline": len(self.base_invalid), "contender": len(self.cont_invalid)}
        doc = {key: getattr(self, key) for key in keys} | {"repetitions_needed": self.needed}
        doc |= {"invalid_values": invalid, "thresholds": asdict(self.thresholds)}
        doc |= {"baseline": self.base.as_dict(), "contender": self.cont.as_dict()}
        return doc | {"notes": list(self.notes)}


def plausible_time(seconds: float) -> bool:
    """A time per iteration that can be a measurement: finite, > 0 and at most benchjson's
    MAX_TIME_S. A row benchjson finds sound can still hold a 0 time (one that ran no iterations)
    or no cpu_time at all, so compare asks this of the clock it reads."""
    return math.isfinite(seconds) and 0.0 < seconds <= MAX_TIME_S


def first_few(texts: Iterable[str], sep: str) -> str:
    """The first three distinct texts joined by `sep`, and "..." after them where there are more:
    the reasons or values of a one-line note."""
    seen = list(dict.fromkeys(texts))
    return sep.join(seen[:3]) + (sep + "..." if len(seen) > 3 else "")


def _note_invalid(m: MetricResult, judged: bool) -> bool:
    """Note the values left out as not plausible; True where they make a judged metric INVALID:
    the contender has them and the baseline had none (or the contender has nothing else)."""
    sides = (("baseline", m.base_invalid, m.base), ("contender", m.cont_invalid, m.cont))
    # The distinct values, each as the file wrote it ('NaN, Infinity', '0, -1.5e-06').
    facts = {
        side: dict(invalid=len(bad), of=stats.n + len(bad), side=side,
                   values=first_few(map(as_read, bad), ", "))  # fmt: skip
        for side, bad, stats in sides
    }
    if judged and m.cont_invalid and m.base.n and (not m.base_invalid or not m.cont.n):
        tail = "" if m.base_invalid else ", none in the baseline"
        m.notes.append(said("invalid_values", **facts["contender"], tail=tail))
        return True
    m.notes += [
        said("invalid_values", **facts[side], tail=": left out") for side, bad, _ in sides if bad
    ]
    return False


def _exact_verdict(base: SampleStats, cont: SampleStats, notes: list[str | Said]) -> str:
    """SAME or CHANGED of a counter that defines the work of the benchmark (better "exact")."""
    # The contender's repetitions must all do one amount of work, the base's amount; or, where the
    # base's repetitions already differed (a file compared with itself), exactly the base's.
    close = functools.partial(math.isclose, rel_tol=_EXACT_RTOL)
    pairs = zip(sorted(cont.values), sorted(base.values))
    same_as_base = len(cont.values) == len(base.values) and all(close(c, b) for c, b in pairs)
    equal = same_as_base or (close(cont.min, cont.max) and close(cont.median, base.median))
    if not equal:
        notes.append(said("work_changed"))
    return SAME if equal else CHANGED


def _spread_verdict(m: MetricResult) -> str:
    """SLOWER, FASTER, NOISY or SAME of a metric with enough repetitions a side, from its median
    and best-repetition slowdowns and the U test's p; its notes say why where that is not plain."""
    base, cont, thresholds, notes = m.base, m.cont, m.thresholds, m.notes
    slowdown, best_slowdown, p_value = m.slowdown, m.best_slowdown, m.p_value
    # Samples that do not overlap: the contender's all above, or all below, the baseline's.
    above, below = cont.min > base.max, cont.max < base.min
    separated_worse, separated_better = (above, below) if m.better == "lower" else (below, above)
    significant = p_value is not None and p_value < thresholds.alpha
    cvs = [c for c in (base.cv, cont.cv) if not math.isnan(c)]
    noisy = bool(cvs) and max(cvs) > thresholds.max_cv

    limit = thresholds.max_ratio
    worse, improved = slowdown > limit, slowdown < 1.0 / limit
    if thresholds.check_fastest:
        best_worse, best_improved = best_slowdown > limit, best_slowdown < 1.0 / limit
        if (worse and not best_worse) or (improved and not best_improved):
            notes.append(said("best_unmoved", slowdown=slowdown, best=best_slowdown))
        worse, improved = worse and best_worse, improved and best_improved
    if significant and (worse or improved):
        # Samples that do not even overlap cannot owe the difference to their noise.
        separated = separated_worse if worse else separated_better
        verdict = NOISY if noisy and not separated else SLOWER if worse else FASTER
    else:
        verdict = NOISY if noisy else SAME
    if verdict == NOISY:
        notes.append(said("too_noisy", cv=max(cvs), max_cv=thresholds.max_cv))
    elif (worse or improved) and not significant and p_value is not None:
        notes.append(f"beyond max_ratio but not significant (p={p_value:.3g})")
    return verdict


def compare_metric(
    metric: str,
    better: str,
    base_values: list[float],
    cont_values: list[float],
    thresholds: Thresholds,
    gating: bool = True,
    plausible: Callable[[float], bool] = usable_counter,
) -> MetricResult:
    """Compare the repetitions of one metric and give a verdict (the rules: docs/regression-gate.md,
    "How a benchmark is judged").

    Values that are not plausible (NaN, infinity, an absurd magnitude; for times also <= 0) are
    left out and noted; "invalid" when the contender has them and the baseline had none (or the
    contender has nothing else). "few" (not enough samples) sets `needed`, the repetitions a side
    the U test needs to reach alpha. "slower"/"faster" need the median beyond max_ratio AND
    p < alpha; a spread above max_cv makes that "noisy" unless the samples do not overlap at all.
    """
    if better not in BETTER_CHOICES:
        raise ValueError(f"metric {metric!r}: 'better' must be one of {BETTER_CHOICES}")
    sides = (base_values, cont_values)
    base_invalid, cont_invalid = ([v for v in vs if not plausible(float(v))] for vs in sides)
    base, cont = (SampleStats.of([v for v in vs if plausible(float(v))]) for vs in sides)
    ratio = ratio_of(cont.median, base.median) if base.n and cont.n else math.nan
    notes: list[str | Said] = []

    def result(
        verdict: str, slow: float, p: float | None, best: float = math.nan, need: int | None = None
    ) -> MetricResult:
        sides = (base, cont, thresholds, ratio, slow, best, p, verdict, gating, notes, need)
        return MetricResult(metric, better, *sides, base_invalid, cont_invalid)

    unjudged = result(INFO, math.nan, None)  # shown, without a verdict
    # An "info" metric is shown, never judged: its bad values are only noted.
    if _note_invalid(unjudged, better != "info"):
        return result(INVALID, math.nan, None)
    if not base.n or not cont.n:
        notes.append("no valid value on " + ("either side" if not base.n else "the contender"))
        return unjudged
    if better == "exact":
        return result(_exact_verdict(base, cont, notes), 1.0, None)
    if better == "info":
        return unjudged
    if not (base.median > 0 and cont.median > 0) or math.isinf(ratio):
        notes.append("median is zero or negative on one side: a ratio means nothing here")
        return unjudged

    slowdown = ratio if better == "lower" else 1.0 / ratio
    # Best repetition of each side: the fastest time, or the highest rate.
    best_slowdown = cont.min / base.min if better == "lower" else base.max / cont.max
    p_value = u_test(cont.values, base.values) if base.n >= 2 and cont.n >= 2 else None
    if not judgeable(base.n, cont.n, thresholds.alpha):
        needed = repetitions_needed(thresholds.alpha)
        least_p = min_p_value(base.n, cont.n)
        n = base.n if base.n == cont.n else f"{base.n} vs {cont.n}"
        notes.append(said("too_few", n=n, needed=needed, alpha=thresholds.alpha, min_p=least_p,
                         slowdown=slowdown))  # fmt: skip
        return result(FEW, slowdown, p_value, best_slowdown, needed)
    judged = result(SAME, slowdown, p_value, best_slowdown)
    judged.verdict = _spread_verdict(judged)
    return judged


# ---- interleaved pairs ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PairedRules:
    """The paired gate's rules (docs/regression-gate.md, "Paired gate", says how they were
    chosen from measured A/A runs). margin: relative change that counts (0.03 = 3 %); alpha:
    the interval is a (1 - alpha) interval; min_pairs: fewest pairs for any verdict (the
    signed-rank interval at alpha 0.002 needs 10); start_pairs / max_pairs: rounds the gate runs
    first, and at most for a benchmark that stays AMBIGUOUS; confirm_pairs: the pairs a SLOWER
    verdict must hold on before it fails the gate (more rounds are run to reach them)."""

    margin: float = 0.03
    # No benchmark passes while its interval still reaches a slowdown this large: the gate says
    # it could not resolve it instead (EXIT_UNRESOLVED), whatever the estimate.
    unresolved_at: float = 0.10
    alpha: float = 0.002
    min_pairs: int = 10
    start_pairs: int = 12
    max_pairs: int = 36
    confirm_pairs: int = 24

    @property
    def half_margin(self) -> float:
        """Half the margin: an AMBIGUOUS estimate beyond it may be slower (possibly_slower)."""
        return self.margin / 2.0

    @property
    def level(self) -> float:
        """The interval's confidence level, 1 - alpha."""
        return 1 - self.alpha

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


DEFAULT_RULES = PairedRules()


# The ranges of the rules' numbers (the gate's --margin and --alpha: their argparse types).
MARGIN = Number(0.0, 1.0, low_open=True, high_open=True, unit="a fraction: 0.05 = 5 %")
ALPHA = Number(1e-6, 0.5, high_open=True)


def rules_from(
    margin: float | None = None,
    alpha: float | None = None,
    start_pairs: int | None = None,
    max_pairs: int | None = None,
) -> PairedRules:
    """The default rules with the given values replaced; a value that cannot work is unusable."""
    for flag, kind, value in (("--margin", MARGIN, margin), ("--alpha", ALPHA, alpha)):
        if value is not None and not kind.inside(value):
            raise UnusableInput(f"{flag} {value!r} is not {kind.range}")
    given = {"margin": margin, "alpha": alpha, "start_pairs": start_pairs, "max_pairs": max_pairs}
    rules = replace(DEFAULT_RULES, **{k: v for k, v in given.items() if v is not None})
    start, most = rules.start_pairs, rules.max_pairs
    if start < 1 or most < start:
        raise UnusableInput(said("pairs_range", start=start, most=most))
    rules = replace(rules, min_pairs=min_pairs_for(rules.alpha))
    if start < rules.min_pairs:
        raise UnusableInput(said("pairs_too_few", start=start, rules=rules))
    return rules


@functools.lru_cache(maxsize=None)
def _signed_rank_counts(n: int) -> tuple[int, ...]:
    """counts[s] = number of subsets of {1..n} whose sum is s: the exact null distribution of the
    Wilcoxon signed-rank statistic W+ (times 2**n)."""
    counts = [1] + [0] * (n * (n + 1) // 2)
    for i in range(1, n + 1):
        for s in range(len(counts) - 1, i - 1, -1):
            counts[s] += counts[s - i]
    return tuple(counts)


@functools.lru_cache(maxsize=None)
def interval_rank(n: int, alpha: float) -> int:
    """k such that [W_(k), W_(N+1-k)] of the N = n(n+1)/2 sorted Walsh averages is the (1 -
    alpha) interval of the signed-rank test: the largest k with P(W+ <= k - 1) <= alpha / 2. 0
    when n pairs cannot give such an interval at all."""
    return sum(1 for cum in itertools.accumulate(_signed_rank_counts(n)) if 2 * cum <= alpha * 2**n)


def min_pairs_for(alpha: float) -> int:
    """Fewest pairs for which a (1 - alpha) signed-rank interval exists (8 for alpha 0.01)."""
    return next(n for n in itertools.count(1) if interval_rank(n, alpha))


@dataclass
class Estimate:
    """The Hodges-Lehmann estimate of the median log ratio and its interval, as ratios."""

    n: int
    ratio: float
    low: float
    high: float
    p_value: float

    @property
    def changes(self) -> tuple[float, float, float]:
        """The estimate and its interval as changes in percent (+3.0: 3 % slower)."""
        return (self.ratio - 1) * 100, (self.low - 1) * 100, (self.high - 1) * 100


def estimate(log_ratios: Sequence[float], alpha: float, with_p: bool = True) -> Estimate:
    """Hodges-Lehmann estimate and signed-rank interval of contender/base from per-pair log
    ratios. Needs at least min_pairs_for(alpha) values. with_p=False skips the p-value (NaN),
    which the verdict does not use (the power study judges thousands of resampled runs)."""
    d = np.asarray(log_ratios, dtype=float)
    n, k = d.size, interval_rank(d.size, alpha)
    if k == 0:
        raise ValueError(f"{n} pairs cannot give a {1 - alpha:g} interval")
    i, j = np.triu_indices(n)
    walsh = np.sort((d[i] + d[j]) / 2.0)
    center = float(np.median(walsh))
    low, high = float(walsh[k - 1]), float(walsh[walsh.size - k])
    p = math.nan if not with_p else 1.0 if not np.any(d) else float(wilcoxon(d).pvalue)
    return Estimate(n, math.exp(center), math.exp(low), math.exp(high), p)


def possibly_slower(est: Estimate | None, rules: PairedRules) -> bool:
    """An AMBIGUOUS estimate at least half-way to the margin on the slower side. Only these get
    more pairs and the loud line: measured A/A runs on a shared 2-core machine straddle the 3 %
    margin in most runs with an estimate near 0, and more looks at them only add chances of a
    false alarm (docs/regression-gate.md, "Paired gate")."""
    return est is not None and est.ratio > 1.0 + rules.half_margin


def needs_confirmation(pairs: int, rules: PairedRules) -> bool:
    """Whether a SLOWER verdict on `pairs` pairs gets more rounds before it fails the gate. A
    burst on the host that slows several of one side's runs (invisible to the guest: no steal,
    no other process) can put a short run of pairs past the margin; on a CI machine that failed
    one A/A gate (2026-11-27: +4.1 %, interval +0.5..+18.3 %, 12 pairs, while the two reruns read
    -0.5 % and -0.3 %). More pairs dilute a burst and keep a real slowdown: the verdict on all
    of them decides. The extra rounds can only withdraw a failure, never add one."""
    return pairs < min(rules.confirm_pairs, rules.max_pairs)


def verdict_of(est: Estimate, margin: float) -> str:
    """SLOWER / FASTER / SAME / AMBIGUOUS from the interval and the margin (module docstring)."""
    up, down = 1.0 + margin, 1.0 / (1.0 + margin)
    if est.low > 1.0 and est.ratio > up:
        return SLOWER
    if est.high < 1.0 and est.ratio < down:
        return FASTER
    if est.low >= down and est.high <= up:
        return SAME
    return AMBIGUOUS


def judge_values(
    base: Sequence[float], contender: Sequence[float], rules: PairedRules, with_p: bool = True
) -> tuple[str, Estimate | None]:
    """The verdict of one benchmark from its paired times (same length, pair i = index i)."""
    d = np.log(np.asarray(contender, dtype=float) / np.asarray(base, dtype=float))
    if d.size < rules.min_pairs:
        return FEW, None
    est = estimate(d, rules.alpha, with_p)
    return verdict_of(est, rules.margin), est
