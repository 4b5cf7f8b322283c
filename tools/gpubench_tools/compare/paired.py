"""The paired judgement: two builds run on one machine in one job, repetitions paired by index.

Two runs of unchanged code on a shared machine differ by more from one minute to the next than a
5 % regression, so comparing two samples as strangers (compare's U test) cannot see 5 %. Run
interleaved (interleave.py), repetition i of the base and repetition i of the contender ran
seconds apart under nearly the same conditions; their ratio cancels most of what the machine did.
Per benchmark:

- d_i = log(contender_i / base_i) for every pair i (the clock of the file's ``pair_time``,
  cpu_time for the CPU gate);
- the estimate is the Hodges-Lehmann median of the Walsh averages (d_i + d_j) / 2, and the
  interval is the distribution-free confidence interval that inverts the Wilcoxon signed-rank
  test (``scipy.stats.wilcoxon``; coverage 1 - alpha whenever the pair differences are symmetric
  about their centre, which holds for A/A runs by construction: either side can be the one a
  burst hit). ``p_value`` is wilcoxon's two-sided p for "no change";
- SLOWER when the interval lies above 1 (the contender is slower, p < alpha) *and* the estimate
  is beyond 1 + margin: a significant change too small to matter does not fail, nor does a large
  estimate the pairs cannot tell from noise. FASTER mirrors it. SAME when the whole interval lies
  within [1 / (1 + margin), 1 + margin] (equivalent within the margin). AMBIGUOUS otherwise: the
  interval straddles the margin (the pairs cannot say which side of it the change is on).

An AMBIGUOUS benchmark whose estimate is beyond half the margin (possibly_slower), or whose interval
still reaches ``unresolved_at`` (wide_open), gets more pairs (interleave.py, up to ``max_pairs``).
Still AMBIGUOUS then, a possibly slower one is named on a loud line and does not fail (other
AMBIGUOUS benchmarks are listed with their interval): the gate fails only what it can show is beyond
the margin (exit 1 means "performance got worse", never "the gate could not tell"). What the pairs
could not settle is exit 3, NOT RESOLVED, never a pass: an interval still reaching
``unresolved_at``, no benchmark decided, or pairs lost to a busy machine. Exit 1 also for a
benchmark that now fails, has invalid times or is missing from the contender; repetitions without
their partner (a contender that lost repetitions) make the benchmark INCOMPLETE: exit 2 unless
something failed, never a pass.

Each process of a gate contributes its fastest inner repetition (interleave.py), and every such
pair is judged, disturbed or not (judge_reports says why). In a file of one repetition per process
(an older gate's), a repetition that the reader calls disturbed (conditions.condition_of: its
``disturbed`` counter) leaves its pair out of the judgement; the pairs left out are counted and
shown. A repetition of an older run, whose conditions are unknown, is kept.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Sequence

import numpy as np
from scipy.stats import wilcoxon

from ..benchjson import BenchJsonError, BenchReport, load_report
from ..conditions import DISTURBED, condition_of
from ..json_values import as_read
from ..cli import EXIT_OK, EXIT_REGRESSION, EXIT_UNRESOLVED, EXIT_UNUSABLE, Number, UnusableInput
from .. import output
from ..escape import md_code, md_text, one_line
from .engine import SKIPPED, natural_key
from .stats import FASTER, FEW, INVALID, SAME, SLOWER

# Context keys of a paired file (written by interleave.py). PAIR_ID, the same in both files of one
# run, is what gpubench-compare looks for.
PAIR_ID, PAIR_ROLE, PAIRED_WITH, PAIR_ORDER = "pair_id", "pair_role", "paired_with", "pair_order"
PAIR_TIME, PAIR_REPS_PER_RUN = "pair_time", "pair_repetitions_per_run"
PAIR_KEYS = (PAIR_ID, PAIR_ROLE, PAIRED_WITH, PAIR_ORDER, PAIR_TIME, PAIR_REPS_PER_RUN)

# Verdicts of the paired judgement besides those it shares with compare's (slower, faster, same,
# few, invalid: stats; skipped: engine).
AMBIGUOUS, INCOMPLETE, MISSING, FAILED = "ambiguous", "incomplete", "missing", "failed"
NEW, BASE_FAILED = "new", "failed in the base"
FAILING = (SLOWER, MISSING, FAILED, INVALID)
JUDGED = (SLOWER, FASTER, SAME, AMBIGUOUS)
# The order of the counts on the gate line: what fails first.
SUMMARY_ORDER = (SLOWER, FAILED, MISSING, INVALID, INCOMPLETE, AMBIGUOUS, FEW, SAME, FASTER)
SUMMARY_ORDER += (SKIPPED, NEW, BASE_FAILED)


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
    if rules.start_pairs < 1 or rules.max_pairs < rules.start_pairs:
        raise UnusableInput(
            f"--pairs ({rules.start_pairs}) must be at least 1 and at most --max-pairs "
            f"({rules.max_pairs})"
        )
    smallest = min_pairs_for(rules.alpha)
    rules = replace(rules, min_pairs=smallest)
    if rules.start_pairs < smallest:
        raise UnusableInput(
            f"--pairs {rules.start_pairs} can never judge: a {1 - rules.alpha:.3g} interval "
            f"needs at least {smallest} pairs"
        )
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
    total = 2**n
    cum, k = 0, 0
    for s, c in enumerate(_signed_rank_counts(n)):
        if 2 * (cum + c) > alpha * total:
            break
        cum += c
        k = s + 1
    return k


def min_pairs_for(alpha: float) -> int:
    """Fewest pairs for which a (1 - alpha) signed-rank interval exists (8 for alpha 0.01)."""
    n = 1
    while interval_rank(n, alpha) == 0:
        n += 1
    return n


@dataclass
class Estimate:
    """The Hodges-Lehmann estimate of the median log ratio and its interval, as ratios."""

    n: int
    ratio: float
    low: float
    high: float
    p_value: float


def estimate(log_ratios: Sequence[float], alpha: float, with_p: bool = True) -> Estimate:
    """Hodges-Lehmann estimate and signed-rank interval of contender/base from per-pair log
    ratios. Needs at least min_pairs_for(alpha) values. with_p=False skips the p-value (NaN),
    which the verdict does not use (the power study judges thousands of resampled runs)."""
    d = np.asarray(log_ratios, dtype=float)
    n = d.size
    k = interval_rank(n, alpha)
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
    return est is not None and est.ratio > 1.0 + rules.margin / 2.0


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


@dataclass
class PairedBenchmark:
    name: str
    verdict: str
    pairs: int = 0
    estimate: Estimate | None = None
    base_median_s: float = math.nan
    contender_median_s: float = math.nan
    left_out: int = 0
    why: str = ""

    @property
    def fails(self) -> bool:
        return self.verdict in FAILING

    def as_dict(self) -> dict[str, Any]:
        est = self.estimate
        return {
            "name": self.name,
            "verdict": self.verdict,
            "fails": self.fails,
            "pairs": self.pairs,
            "pairs_left_out": self.left_out,
            "ratio": est.ratio if est else None,
            "interval": [est.low, est.high] if est else None,
            "p_value": est.p_value if est else None,
            "base_median_s": None if math.isnan(self.base_median_s) else self.base_median_s,
            "contender_median_s": (
                None if math.isnan(self.contender_median_s) else self.contender_median_s
            ),
            "why": self.why,
        }


@dataclass
class PairedJudgement:
    base_path: str
    contender_path: str
    rules: PairedRules
    clock: str
    benchmarks: list[PairedBenchmark]
    notes: list[str] = field(default_factory=list)
    wall_seconds: float | None = None
    bench_seconds: float | None = None

    def of(self, *verdicts: str) -> list[PairedBenchmark]:
        return [b for b in self.benchmarks if b.verdict in verdicts]

    @property
    def ambiguous(self) -> list[PairedBenchmark]:
        return self.of(AMBIGUOUS)

    @property
    def maybe_slower(self) -> list[PairedBenchmark]:
        """AMBIGUOUS benchmarks that may be slower beyond the margin (possibly_slower): the ones
        more pairs are run for, and named on the loud line."""
        return [b for b in self.ambiguous if possibly_slower(b.estimate, self.rules)]

    @property
    def to_confirm(self) -> list[PairedBenchmark]:
        """SLOWER benchmarks judged on fewer pairs than confirm_pairs: the gate runs more rounds
        of them and fails only what is still SLOWER on all its pairs (needs_confirmation)."""
        return [b for b in self.of(SLOWER) if needs_confirmation(b.pairs + b.left_out, self.rules)]

    @property
    def fails(self) -> bool:
        return any(b.fails for b in self.benchmarks)

    @property
    def disturbed_few(self) -> list[PairedBenchmark]:
        """Benchmarks with too few pairs because pairs were left out as disturbed: the ones
        more rounds are run for, to replace them."""
        return [b for b in self.of(FEW) if b.left_out]

    @property
    def wide_open(self) -> list[PairedBenchmark]:
        """AMBIGUOUS benchmarks whose interval still reaches a slowdown of unresolved_at or more:
        never passed, whatever their estimate (more rounds are run for them first)."""
        limit = 1 + self.rules.unresolved_at
        return [b for b in self.ambiguous if b.estimate is not None and b.estimate.high >= limit]

    @property
    def resolved(self) -> list[PairedBenchmark]:
        """Benchmarks the gate could decide: slower, faster, the same, or AMBIGUOUS only on the
        faster side (shown not slower beyond the margin, which is all a gate asks)."""
        unresolved = {id(b) for b in self.maybe_slower}
        return [b for b in self.of(*JUDGED) if id(b) not in unresolved]

    @property
    def exit_code(self) -> int:
        """1 a regression shown; 2 repetitions without their partner (never a pass); 3 what the
        pairs could not resolve: nothing resolved, pairs lost to a busy machine, or an interval
        still reaching unresolved_at (a busy machine is never a regression, and never a pass)."""
        if self.fails:
            return EXIT_REGRESSION
        if self.of(INCOMPLETE):
            return EXIT_UNUSABLE
        if not self.resolved or self.disturbed_few or self.wide_open:
            return EXIT_UNRESOLVED
        return EXIT_OK

    def as_dict(self) -> dict[str, Any]:
        return {
            "exit_code": self.exit_code,
            "gate": gate_line(self),
            "paired": True,
            "baseline": self.base_path,
            "contender": self.contender_path,
            "clock": self.clock,
            "rules": self.rules.as_dict(),
            "summary": dict(Counter(b.verdict for b in self.benchmarks)),
            "notes": self.notes,
            "wall_seconds": self.wall_seconds,
            "bench_seconds": self.bench_seconds,
            "benchmarks": [b.as_dict() for b in self.benchmarks],
        }


def is_pair(base: BenchReport, contender: BenchReport) -> bool:
    """Whether the two files are the two halves of one interleaved run (the same pair_id)."""
    a, b = base.context.get(PAIR_ID), contender.context.get(PAIR_ID)
    return isinstance(a, str) and bool(a) and a == b


def _left_out(row: Any) -> bool:
    return condition_of(row.counters) == DISTURBED


def _inner_repetitions(report: BenchReport) -> int:
    """The repetitions each process of a paired file ran (PAIR_REPS_PER_RUN; 1 when absent)."""
    value = report.context.get(PAIR_REPS_PER_RUN)
    try:
        return int(value) if value is not None else 1
    except (TypeError, ValueError):
        return 1


def _time(row: Any, clock: str) -> float:
    value = row.cpu_time_s if clock == "cpu_time" else row.real_time_s
    return value if math.isfinite(value) and value > 0 else math.nan


def _indices(ixs: Sequence[int]) -> str:
    shown = ", ".join(str(i) for i in ixs[:5])
    return shown + (f" and {len(ixs) - 5} more" if len(ixs) > 5 else "")


def _rows_by_name(report: BenchReport) -> dict[str, list[Any]]:
    """A file's repetition rows by benchmark name, in file order."""
    out: dict[str, list[Any]] = {}
    for row in report.rows:
        if row.run_type == "iteration":
            out.setdefault(row.run_name, []).append(row)
    return out


def _without_pairs(name: str, b_rows: list[Any], c_rows: list[Any]) -> PairedBenchmark | None:
    """The verdict of a benchmark that has no pairs to judge (missing, new, failed or skipped on a
    side); None for one measured on both sides."""
    if not c_rows:
        return PairedBenchmark(
            name, MISSING, why="measured in the base, missing from the contender"
        )
    if not b_rows:
        return PairedBenchmark(name, NEW, why="only in the contender, not compared")
    for rows, verdict, why in (
        (b_rows, BASE_FAILED, "not compared: "),
        (c_rows, FAILED, "now fails: "),
    ):
        failed = [r for r in rows if r.failed]
        if failed:
            return PairedBenchmark(name, verdict, why=f"{why}{failed[0].error}")
    skipped = [r for r in b_rows + c_rows if r.skipped]
    if skipped:
        return PairedBenchmark(name, SKIPPED, why=str(skipped[0].error))
    return None


def _judge_pairs(
    name: str,
    b_rows: list[Any],
    c_rows: list[Any],
    clock: str,
    rules: PairedRules,
    leave_out_disturbed: bool,
) -> PairedBenchmark:
    """The verdict of a benchmark measured on both sides, from its pairs (repetition i of each)."""
    b_by = {r.repetition_index: r for r in b_rows}
    c_by = {r.repetition_index: r for r in c_rows}
    bad_c = sorted(i for i, r in c_by.items() if math.isnan(_time(r, clock)))
    bad_b = sorted(i for i, r in b_by.items() if math.isnan(_time(r, clock)))
    if bad_c and not bad_b:
        return PairedBenchmark(
            name, INVALID, why=f"{clock} of repetitions {_indices(bad_c)} is not a time"
        )
    common = sorted(
        i for i in set(b_by) & set(c_by) if i is not None and i not in bad_b and i not in bad_c
    )
    only_b = sorted(i for i in set(b_by) - set(c_by) if i is not None)
    only_c = sorted(i for i in set(c_by) - set(b_by) if i is not None)
    kept = [
        i
        for i in common
        if not (leave_out_disturbed and (_left_out(b_by[i]) or _left_out(c_by[i])))
    ]
    base_t = [_time(b_by[i], clock) for i in kept]
    cont_t = [_time(c_by[i], clock) for i in kept]
    verdict, est = judge_values(base_t, cont_t, rules)
    bench = PairedBenchmark(
        name,
        verdict,
        len(kept),
        est,
        float(np.median(base_t)) if base_t else math.nan,
        float(np.median(cont_t)) if cont_t else math.nan,
        len(common) - len(kept),
    )
    lost = []
    if only_b:
        lost.append(f"the contender lacks repetitions {_indices(only_b)} of the base's")
    if only_c:
        lost.append(f"the base lacks repetitions {_indices(only_c)} of the contender's")
    if bad_b:
        lost.append(f"{len(bad_b)} base repetitions have no valid {clock}")
    if lost and verdict != SLOWER:
        bench.verdict = INCOMPLETE
    if lost:
        bench.why = "; ".join(lost) + " (pairs are incomplete)"
    elif verdict == FEW and bench.left_out:
        bench.why = (
            f"not judged: measured while disturbed: {bench.left_out} of {len(common)} pairs "
            f"left out (disturbed=1), fewer than the {rules.min_pairs} a "
            f"{1 - rules.alpha:.3g} interval needs remain"
        )
    elif verdict == FEW:
        bench.why = (
            f"{len(kept)} pairs, fewer than the {rules.min_pairs} a {1 - rules.alpha:.3g} "
            "interval needs"
        )
    return bench


def judge_reports(
    base: BenchReport, contender: BenchReport, rules: PairedRules, clock: str | None = None
) -> PairedJudgement:
    """Judges two paired files (is_pair) benchmark by benchmark (module docstring)."""
    clock = clock or str(base.context.get(PAIR_TIME) or "real_time")
    if clock not in ("cpu_time", "real_time"):
        raise UnusableInput(
            f"{base.path}: context pair_time is {as_read(clock)}, not cpu_time/real_time"
        )
    notes: list[str] = []
    if base.context.get(PAIR_ROLE) == "contender" and contender.context.get(PAIR_ROLE) == "base":
        notes.append("the files are given in reverse order: ratios are base / contender")
    for report in (base, contender):
        notes += report.warnings
    base_rows, cont_rows = _rows_by_name(base), _rows_by_name(contender)
    # A file of several inner repetitions per process holds each process's fastest (interleave.py):
    # the minimum stands for its process, disturbed or not. Measured on real runs beside a bursty
    # neighbour (docs/regression-gate.md, "Measured in real runs"): leaving such pairs out
    # loosened the pairs (pair spread 0.30 % -> 0.48 %) and lost some; with one repetition per
    # process every pair was marked and lost. A file of one repetition per process (an older
    # gate's) leaves a disturbed pair out.
    leave_out_disturbed = _inner_repetitions(base) <= 1
    if not set(base_rows) & set(cont_rows):
        raise UnusableInput(
            f"{base.path} and {contender.path} have no benchmark in common: nothing to compare"
        )
    results: list[PairedBenchmark] = []
    for name in sorted(set(base_rows) | set(cont_rows), key=natural_key):
        b_rows, c_rows = base_rows.get(name, []), cont_rows.get(name, [])
        bench = _without_pairs(name, b_rows, c_rows)
        if bench is None:
            bench = _judge_pairs(name, b_rows, c_rows, clock, rules, leave_out_disturbed)
        results.append(bench)
    return PairedJudgement(base.path, contender.path, rules, clock, results, notes)


def judge_files(base_path: str, contender_path: str, rules: PairedRules) -> PairedJudgement:
    """Loads and judges two paired files; a file that is not bench JSON is unusable input."""
    try:
        base, contender = load_report(base_path), load_report(contender_path)
    except BenchJsonError as exc:
        raise UnusableInput(str(exc)) from None
    return judge_reports(base, contender, rules)


def _pct(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.1f}%"


def describe(b: PairedBenchmark) -> str:
    """'+6.1% [+4.2%, +7.9%], 12 pairs' or the reason there is no estimate."""
    est = b.estimate
    if est is None:
        return b.why
    left = f", {b.left_out} left out as disturbed" if b.left_out else ""
    text = f"{_pct(est.ratio)} [{_pct(est.low)}, {_pct(est.high)}], {est.n} pairs{left}"
    return f"{text}; {b.why}" if b.why else text


def gate_line(j: PairedJudgement) -> str:
    """The one summary line: 'gate: PASS|FAIL|NOT RESOLVED|CANNOT JUDGE: ...'."""
    counts = ", ".join(f"{len(j.of(v))} {v}" for v in SUMMARY_ORDER if j.of(v))
    code = j.exit_code
    margin = f"{j.rules.margin * 100:g}%"
    if code == EXIT_REGRESSION:
        head = f"gate: FAIL: slower beyond the {margin} margin, failing or missing"
    elif code == EXIT_UNUSABLE:
        head = "gate: CANNOT JUDGE: repetitions without their partner"
    elif code == EXIT_UNRESOLVED and j.disturbed_few:
        head = (
            "gate: NOT RESOLVED: the machine was busy, too few undisturbed pairs (neither a pass "
            "nor a regression)"
        )
    elif code == EXIT_UNRESOLVED and j.wide_open:
        reach = f"+{j.rules.unresolved_at * 100:g}%"
        head = (
            f"gate: NOT RESOLVED: an interval still reaches {reach} after the most pairs the "
            "budget allows (neither a pass nor a regression)"
        )
    elif code == EXIT_UNRESOLVED:
        head = "gate: NOT RESOLVED: no benchmark resolved (neither a pass nor a regression)"
    elif j.maybe_slower:
        head = f"gate: PASS, but AMBIGUOUS: cannot tell whether beyond the {margin} margin"
    elif j.ambiguous:
        half = f"{j.rules.margin * 50:g}%"
        head = (
            f"gate: PASS: nothing shown slower beyond the {margin} margin; AMBIGUOUS rows have "
            f"estimates under +{half} and intervals wider than the margin"
        )
    else:
        head = f"gate: PASS: nothing slower beyond the {margin} margin"
    return f"{head} ({counts})"


def render_terminal(j: PairedJudgement, quiet: bool = False) -> str:
    r = j.rules
    lines = []
    if not quiet:
        lines.append(
            f"paired judgement of {one_line(j.contender_path)} against {one_line(j.base_path)}: "
            f"{j.clock}, per-pair ratios, Hodges-Lehmann estimate with a {1 - r.alpha:.3g} "
            f"signed-rank interval, margin {r.margin * 100:g}%"
        )
        lines += [f"note: {one_line(note)}" for note in j.notes]
    width = max((len(b.name) for b in j.benchmarks), default=0)
    for b in j.benchmarks:
        if quiet and not (b.fails or b.verdict in (AMBIGUOUS, INCOMPLETE)):
            continue
        name, why = one_line(b.name), one_line(describe(b))
        lines.append(f"  {b.verdict.upper():<12} {name:<{width}}  {why}")
    for b in j.maybe_slower:
        lines.append(
            f"AMBIGUOUS: {one_line(b.name)}: {one_line(describe(b))}: the interval straddles the "
            f"{r.margin * 100:g}% margin after {b.pairs} pairs; not failed, not shown the same: "
            "rerun on a quieter machine or look at it"
        )
    if j.wall_seconds is not None:
        lines.append(
            f"paired run: {j.wall_seconds:.0f} s in all, {j.bench_seconds or 0:.0f} s of bench"
        )
    lines.append(gate_line(j))
    return "\n".join(lines) + "\n"


def render_markdown(j: PairedJudgement) -> str:
    r = j.rules
    out = [f"**{md_text(gate_line(j))}**", ""]
    out.append(
        f"Paired judgement ({md_text(j.clock)}; base and contender interleaved on one machine; "
        f"Hodges-Lehmann estimate of contender / base with its {1 - r.alpha:.3g} signed-rank "
        f"interval; margin {r.margin * 100:g}%)."
    )
    out += ["", "| verdict | benchmark | change [interval], pairs |", "|---|---|---|"]
    for b in j.benchmarks:
        out.append(f"| {md_text(b.verdict.upper())} | {md_code(b.name)} | {md_text(describe(b))} |")
    for note in j.notes:
        out += ["", f"Note: {md_text(note)}"]
    return "\n".join(out) + "\n"


def write_error(line: str, code: int, markdown: str | None, json_path: str | None) -> None:
    """The Markdown and JSON outputs when the run itself failed (best effort: the caller says the
    error itself on stderr)."""
    word = "FAIL" if code == EXIT_REGRESSION else "CANNOT JUDGE"
    error_doc = {"exit_code": code, "paired": True, "error": line}
    markdown_text = f"**gate: {word}: {md_text(line)}**\n"
    output.write_reports(markdown, lambda: markdown_text, json_path, lambda: error_doc, None)


def emit(
    prog: str, j: PairedJudgement, markdown: str | None, json_path: str | None, quiet: bool
) -> int:
    """Decides the verdict, prints the terminal text, then writes the side outputs; one that cannot
    be written is named on stderr and the exit status stays the verdict's (output.py)."""
    code = output.decide(j.exit_code)
    output.say(*render_terminal(j, quiet).splitlines())
    if code in (EXIT_UNUSABLE, EXIT_UNRESOLVED):
        word = "error" if code == EXIT_UNUSABLE else "warning"
        output.warn(f"{prog}: {word}: {one_line(gate_line(j))}")
    output.write_after_verdict(
        prog, code, markdown, lambda: render_markdown(j), json_path, j.as_dict
    )
    return code


def compare_cli(prog: str, args: Any, base: BenchReport, contender: BenchReport) -> int:
    """gpubench-compare's judgement of the two files of one interleaved run (is_pair): the
    paired rules, with --max-ratio as 1 + margin and --alpha."""
    alpha = getattr(args, "alpha", None)
    margin = None if args.max_ratio is None else args.max_ratio - 1.0
    rules = rules_from(margin, alpha)
    judgement = judge_reports(base, contender, rules, args.time)
    return emit(prog, judgement, args.markdown, args.json, args.quiet)
