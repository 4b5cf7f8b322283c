"""The regression rule: is the newest run of a machine slower than its recent history?

Each benchmark measured at a machine's newest commit is judged at its newest run, against a
baseline: the pooled repetitions of up to `window` (8) earlier runs of the same machine, before
the `confirm` (2) newest. It has regressed when (docs/history.md, "The regression check", says
why each is needed): 1. at least `min_history` (3) baseline runs have it, since two runs of a
shared machine are no picture of its run-to-run spread; 2. the run's median is at least
`min_ratio` (1.10) times the baseline's; 3. a one-sided Mann-Whitney U test gives p < `alpha`
(0.01), and sample sizes that cannot reach such a p give "not enough samples", never a silent
pass; 4. 2 and 3 hold in each of the `confirm` newest runs: a burst of load slows one run, a code
change every run after it, so a newest run slower on its own is only a "suspect".

A benchmark with samples in the baseline that fails in the newest run also fails the check, as
it fails gpubench-compare: a fast wrong answer is a bug, not a result.

Repetitions measured while disturbed (the harness's rule, stored with each sample) are never
judged from, in the baseline or in the newest runs (History.values leaves them out): a benchmark
whose newest run has only disturbed repetitions is "measured while disturbed", neither a pass nor
a failure, and the check counts what it left out.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any

from ..status import Number
from ..policy import FAIL, action
from ..timing import reason_situation
from ..stats import min_p_value, ratio_of, u_test
from .store import History, Machine

REGRESSION = "regression"
FAILED = "failed"  # samples in the baseline, an error or a skip in the newest run
SUSPECT = "suspect"  # the newest run is slower; the runs before it do not (yet) confirm it
OK = "ok"
NOT_ENOUGH_SAMPLES = "not enough samples"
NOT_ENOUGH_HISTORY = "not enough history"
MISSING = "missing"  # not measured at the machine's newest commit (e.g. another filter)
DISTURBED = "measured while disturbed"  # the newest run's repetitions were all disturbed

FAILING = [REGRESSION, FAILED]  # the verdicts that fail the check
# Verdicts that need a look are listed; the ones that only say "not judged (yet)" are summed up
# unless asked for, because a new history says so for every benchmark of a sweep.
LISTED = [*FAILING, SUSPECT]
SUMMED = [NOT_ENOUGH_SAMPLES, NOT_ENOUGH_HISTORY, DISTURBED]


# The range of each number of the rule: the argparse type of its option (check and chart) and the
# check of a rule made in code.
RULE_RANGES: dict[str, Number] = {
    "min_ratio": Number(1.0, 1000.0, low_open=True, unit="1.10 = 10 % slower"),
    "alpha": Number(1e-6, 1.0, high_open=True),
    "window": Number(1, 10_000, integer=True, unit="runs"),
    "confirm": Number(1, 1_000, integer=True, unit="runs"),
    "min_history": Number(1, 10_000, integer=True, unit="runs"),
}


@dataclass(frozen=True)
class CheckRule:
    min_ratio: float = 1.10
    alpha: float = 0.01
    window: int = 8
    confirm: int = 2
    min_history: int = 3
    time: str = "auto"

    def __post_init__(self) -> None:
        for name, kind in RULE_RANGES.items():
            value = getattr(self, name)
            problem = kind.problem(value, repr(value))
            if problem is not None:
                raise ValueError(f"--{name.replace('_', '-')} {problem}")
        if self.min_history > self.window:
            raise ValueError(
                f"--min-history {self.min_history} is more than --window {self.window}: the "
                "baseline can never hold that many runs"
            )


@dataclass(frozen=True)
class RunComparison:
    """One of the newest runs against the baseline."""

    run: Any  # a stored run (History.runs_by_machine)
    n: int
    median_s: float
    ratio: float  # median of this run / median of the baseline
    # One-sided U test of "this run is slower"; 1.0 when the ratio is below the floor.
    p_value: float
    p_floor: float  # the smallest p these sample sizes can give
    tested: bool  # whether the ratio reached the floor, so that the U test ran

    def slower(self, rule: CheckRule) -> bool:
        return self.tested and self.p_value < rule.alpha

    def can_decide(self, rule: CheckRule) -> bool:
        return self.p_floor < rule.alpha


@dataclass(frozen=True)
class BenchVerdict:
    benchmark: str
    verdict: str
    time_source: str
    baseline_runs: int
    baseline_n: int
    baseline_median_s: float
    newest: list[RunComparison] = field(default_factory=list)  # newest first
    # Which case of the rule decided, when more than one gives this verdict, and the values it
    # decided from: data for the words (templates/words.j2, `note`), never a sentence.
    why: str = ""
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def fails(self) -> bool:
        return self.verdict in FAILING


@dataclass(frozen=True)
class MachineCheck:
    machine: Machine
    runs: list[Any]
    verdicts: list[BenchVerdict]

    def with_verdict(self, verdict: str) -> list[BenchVerdict]:
        return [v for v in self.verdicts if v.verdict == verdict]


def _compare(
    run: Any, values: list[float], base: list[float], base_median: float, rule: CheckRule
) -> RunComparison:
    median = statistics.median(values)
    ratio = ratio_of(median, base_median)
    # The U test is the expensive part; below the effect-size floor its answer cannot matter.
    tested = ratio >= rule.min_ratio
    p = u_test(values, base, "greater") if tested else 1.0
    floor = min_p_value(len(values), len(base), "greater")
    return RunComparison(run, len(values), median, ratio, p, floor, tested)


def judge(history: History, runs: list[Any], benchmark: str, rule: CheckRule) -> BenchVerdict:
    """The verdict for `benchmark`, whose series of runs (oldest first) ends with the run judged."""
    first_newest = max(0, len(runs) - rule.confirm)
    newest = runs[first_newest:][::-1]  # newest first
    baseline = runs[max(0, first_newest - rule.window) : first_newest]
    base_runs = [v for v in (history.values(r.id, benchmark, rule.time) for r in baseline) if v]
    base = [value for values in base_runs for value in values]
    base_median = statistics.median(base) if base else math.nan

    def verdict(kind: str, *compared: RunComparison, why: str = "", **facts: Any) -> BenchVerdict:
        source = history.time_source(benchmark, rule.time)
        summary = (len(base_runs), len(base), base_median)
        return BenchVerdict(benchmark, kind, source, *summary, list(compared), why, facts)

    latest_values = history.values(newest[0].id, benchmark, rule.time)
    if not latest_values:
        left_out = history.values(newest[0].id, benchmark, rule.time, disturbed=True)
        if left_out:
            median_s = statistics.median(left_out)
            return verdict(DISTURBED, why="disturbed", n=len(left_out), median_s=median_s)
        reason = history.failures.get((newest[0].id, benchmark))
        if reason is None:
            return verdict(MISSING, why="not in the run")
        # Policy: a failed or skipped row where earlier runs measured the benchmark fails.
        if base and action("history check", reason_situation(reason)).kind == FAIL:
            return verdict(FAILED, why="fails", reason=reason)
        return verdict(NOT_ENOUGH_HISTORY, why="no history", reason=reason)
    if len(base_runs) < rule.min_history:
        return verdict(NOT_ENOUGH_HISTORY, why="few runs", rule=rule)
    latest = _compare(newest[0], latest_values, base, base_median, rule)
    if not latest.can_decide(rule):
        return verdict(NOT_ENOUGH_SAMPLES, latest, why="few samples", alpha=rule.alpha)
    if not latest.slower(rule):
        return verdict(OK, latest)

    comparisons = [latest]
    for run in newest[1:]:
        values = history.values(run.id, benchmark, rule.time)
        if not values:
            return verdict(SUSPECT, *comparisons, why="not confirmable", commit=run.git_commit)
        earlier = _compare(run, values, base, base_median, rule)
        comparisons.append(earlier)
        if not (earlier.can_decide(rule) and earlier.slower(rule)):
            return verdict(SUSPECT, *comparisons, why="not confirmed", earlier=earlier)
    return verdict(REGRESSION, *comparisons)


def check_history(history: History, rule: CheckRule) -> list[MachineCheck]:
    """The verdicts for the newest commit measured on every machine that has runs.

    Each benchmark measured at that commit is judged at its newest run, on its own series: one
    commit is often stored as several files (one sweep per workload), and a benchmark of
    one file is not missing from the other.
    """
    checks: list[MachineCheck] = []
    for machine_id, machine in sorted(history.machines.items()):
        runs = history.runs_by_machine[machine_id]
        if not runs:
            continue
        commit = runs[-1].git_commit
        # A benchmark a run at that commit did not reach because a signal stopped it is missing,
        # and the note says why (policy: interrupted run).
        at_commit = [r.interrupted for r in runs if r.git_commit == commit]
        stopped = [why for why in at_commit if isinstance(why, str)][:1]
        verdicts = []
        for (owner, name), series in history.series.items():
            if owner != machine_id:
                continue
            if series[-1].git_commit == commit:
                verdicts.append(judge(history, series, name, rule))
                continue
            source = history.time_source(name, rule.time)
            facts = dict(commit=commit, last=series[-1].git_commit, stopped=stopped)
            missing = BenchVerdict(name, MISSING, source, 0, 0, math.nan, [], "not measured", facts)
            verdicts.append(missing)
        checks.append(MachineCheck(machine, runs, verdicts))
    return checks


@dataclass(frozen=True)
class KindCount:
    """A machine's verdicts of one kind: how many, and the first (the one a summary names)."""

    kind: str
    count: int
    first: BenchVerdict | None


@dataclass(frozen=True)
class MachineSummary:
    """What check says of one machine: the verdicts listed one by one (LISTED; `verbose`: every
    kind), the kinds summed up instead (without `verbose`) and the count of every kind."""

    check: MachineCheck
    newest: Any  # the newest run
    interrupted: str | None  # how a signal stopped the newest run, None for a whole run
    runs: int
    benchmarks: int
    listed: list[BenchVerdict]
    summed: list[KindCount]
    counts: list[KindCount]


@dataclass(frozen=True)
class CheckSummary:
    """What check prints: each machine, the failing verdicts (machine, verdict) in that order,
    the benchmarks not judged and the repetitions left out as measured while disturbed."""

    machines: list[MachineSummary]
    machine_count: int
    failing: list[tuple[MachineCheck, BenchVerdict]]
    failed: int  # len(failing)
    failing_machines: int
    unjudged: int
    left_out: int


def summarize_checks(checks: list[MachineCheck], history: History, verbose: bool) -> CheckSummary:
    machines = []
    for c in checks:
        found = {kind: c.with_verdict(kind) for kind in [OK, *LISTED, *SUMMED, MISSING]}
        counts = [KindCount(k, len(vs), vs[0] if vs else None) for k, vs in found.items()]
        kinds = LISTED + (SUMMED + [OK, MISSING] if verbose else [])
        listed = [v for kind in kinds for v in c.with_verdict(kind)]
        summed = [k for k in counts if k.kind in SUMMED and k.count and not verbose]
        stopped = c.runs[-1].interrupted if isinstance(c.runs[-1].interrupted, str) else None
        runs = len(c.runs), len(c.verdicts)
        machines.append(MachineSummary(c, c.runs[-1], stopped, *runs, listed, summed, counts))
    failing = [(c, v) for c in checks for kind in FAILING for v in c.with_verdict(kind)]
    unjudged = sum(v.verdict in SUMMED for c in checks for v in c.verdicts)
    left_out = sum(len(pairs) for pairs in history.disturbed.values())
    failed = len(failing), len({c.machine.id for c, _ in failing})
    return CheckSummary(machines, len(machines), failing, *failed, unjudged, left_out)


def rolling_regressions(history: History, rule: CheckRule) -> dict[tuple[int, str], BenchVerdict]:
    """(run id, benchmark) -> verdict for every run at which the check would have found a
    regression.

    Each run of a benchmark is judged as if it were the newest, against the runs before it: what a
    check after every `add` would have said. The charts mark these points; the false-alarm
    measurement counts them.
    """
    judged = (
        ((run.id, name), judge(history, series[: index + 1], name, rule))
        for (_, name), series in history.series.items()
        for index, run in enumerate(series)
    )
    return {key: v for key, v in judged if v.verdict == REGRESSION}
