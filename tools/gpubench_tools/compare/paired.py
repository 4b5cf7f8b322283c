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

import math
import re
from typing import Any

import numpy as np

from ..benchjson import FAILED as FAILED_ROW, SKIPPED as SKIPPED_ROW
from ..benchjson import BenchReport, iteration_rows
from ..conditions import DISTURBED, UNKNOWN
from ..json_values import as_read
from ..status import Said, UnusableInput, said
from ..policy import DISTURBED_ROW, UNKNOWN_CONDITIONS
from ..row_rules import group_reasons
from .stats import AMBIGUOUS, DEFAULT_RULES, FEW, INVALID, SLOWER, PairedRules, judge_values
from .stats import needs_confirmation, possibly_slower
from .verdict import BASE_FAILED, FAILED, INCOMPLETE, MISSING, NEW, SKIPPED, Judgement, Verdict
from .verdict import check_files, lists, natural_key

# The judgement, and the statistics of the pairs the gate's scripts read from here (the others:
# stats.py).
# fmt: off
__all__ = ["AMBIGUOUS", "DEFAULT_RULES", "FEW", "PairedRules", "SLOWER", "is_pair",
           "judge_reports", "judge_values", "needs_confirmation", "possibly_slower"]
# fmt: on

# Context keys of a paired file (written by interleave.py). PAIR_ID, the same in both files of one
# run, is what gpubench-compare looks for.
PAIR_ID, PAIR_ROLE, PAIRED_WITH, PAIR_ORDER = "pair_id", "pair_role", "paired_with", "pair_order"
PAIR_TIME, PAIR_REPS_PER_RUN = "pair_time", "pair_repetitions_per_run"


def is_pair(base: BenchReport, contender: BenchReport) -> bool:
    """Whether the two files are the two halves of one interleaved run (the same pair_id)."""
    a, b = base.context.get(PAIR_ID), contender.context.get(PAIR_ID)
    return isinstance(a, str) and bool(a) and a == b


def _inner_repetitions(report: BenchReport) -> int:
    """The repetitions each process of a paired file ran (PAIR_REPS_PER_RUN; 1 when absent)."""
    try:
        return int(report.context.get(PAIR_REPS_PER_RUN))  # None: an older file's
    except (TypeError, ValueError):
        return 1


# A GPU row (Google Benchmark's UseManualTime: a /manual_time part in its name, last or before
# /threads:N) reports the CUDA-event time of its work as real_time; its cpu_time is the host
# thread's, mostly spent waiting in a synchronisation, which would hide a slower kernel behind a
# constant wait. It is judged on its GPU clock, whichever clock the other rows are judged on.
MANUAL_TIME = re.compile(r"/manual_time(?:/|$)")


def clock_of(name: str, clock: str) -> str:
    """The clock a row of `name` is judged on when the gate judges on `clock`."""
    return "real_time" if MANUAL_TIME.search(name) else clock


def _time(row: Any, clock: str) -> float:
    own = clock_of(row.name, clock)
    value = row.cpu_time_s if own == "cpu_time" else row.real_time_s
    return value if math.isfinite(value) and value > 0 else math.nan


def _indices(indices: list[int]) -> str:
    """Repetition indices for a note: the first five, then how many more."""
    more = f" and {len(indices) - 5} more" if len(indices) > 5 else ""
    return ", ".join(map(str, indices[:5])) + more


def _rows_by_name(report: BenchReport) -> dict[str, list[Any]]:
    """A file's repetition rows by benchmark name, in file order."""
    rows = (row for row in report.rows if row.run_type == "iteration")
    return dict(group_reasons(rows, lambda row: row.run_name))


def _without_pairs(name: str, b_rows: list[Any], c_rows: list[Any]) -> Verdict | None:
    """The verdict of a benchmark that has no pairs to judge (missing, new, failed or skipped on a
    side); None for one measured on both sides."""
    if not c_rows:
        return Verdict(name, MISSING, why="measured in the base, missing from the contender")
    if not b_rows:
        return Verdict(name, NEW, why="only in the contender, not compared")
    failures = ((b_rows, BASE_FAILED, "not compared: "), (c_rows, FAILED, "now fails: "))
    for rows, verdict, why in failures:
        failed = next((r for r in rows if r.status == FAILED_ROW), None)
        if failed:
            return Verdict(name, verdict, why=f"{why}{failed.error}")
    skipped = next((r for r in b_rows + c_rows if r.status == SKIPPED_ROW), None)
    return None if skipped is None else Verdict(name, SKIPPED, why=str(skipped.error))


def _judge_pairs(
    name: str, b_rows: list[Any], c_rows: list[Any], clock: str, rules: PairedRules, leave_out: bool
) -> Verdict:
    """The verdict of a benchmark measured on both sides, from its pairs (repetition i of each);
    `leave_out`: a pair with a disturbed repetition is left out (judge_reports says when)."""
    b_by, c_by = ({r.repetition_index: r for r in rows} for rows in (b_rows, c_rows))
    sides = ((b_by, c_by), (c_by, b_by))
    bad_b, bad_c = (
        sorted(i for i, r in by.items() if math.isnan(_time(r, clock))) for by in (b_by, c_by)
    )
    if bad_c and not bad_b:
        return Verdict(name, INVALID, said("invalid_pairs", clock=clock, bad=_indices(bad_c)))
    common = sorted(i for i in set(b_by) & set(c_by) if i is not None and i not in bad_b + bad_c)
    only_b, only_c = (sorted(i for i in set(x) - set(y) if i is not None) for x, y in sides)
    disturbed = {i for i in common if DISTURBED in (b_by[i].conditions, c_by[i].conditions)}
    kept = [i for i in common if not (leave_out and i in disturbed)]
    base_t, cont_t = [_time(b_by[i], clock) for i in kept], [_time(c_by[i], clock) for i in kept]
    verdict, est = judge_values(base_t, cont_t, rules)
    bench = Verdict(name, verdict, estimate=est, pairs=len(kept), left_out=len(common) - len(kept))
    if kept:
        bench.base_median_s, bench.contender_median_s = np.median(base_t), np.median(cont_t)
    if only_b or only_c or bad_b:
        bench.verdict = INCOMPLETE if verdict != SLOWER else verdict
        only_base, only_cont = _indices(only_b), _indices(only_c)
        bench.why = said("incomplete", only_base=only_base, only_cont=only_cont, bad_base=len(bad_b),
                        clock=clock)  # fmt: skip
    elif verdict == FEW:
        bench.why = said("few_pairs", kept=len(kept), left_out=bench.left_out, common=len(common),
                        rules=rules)  # fmt: skip
    return bench


def judge_reports(
    base: BenchReport, contender: BenchReport, rules: PairedRules, clock: str | None = None
) -> Judgement:
    """Judges two paired files (is_pair) benchmark by benchmark (module docstring)."""
    clock = clock or str(base.context.get(PAIR_TIME) or "real_time")
    if clock not in ("cpu_time", "real_time"):
        raise UnusableInput(said("pair_time", path=base.path, clock=as_read(clock)))
    cut_off = check_files(base, contender)
    notes: list[str | Said] = []
    if base.context.get(PAIR_ROLE) == "contender" and contender.context.get(PAIR_ROLE) == "base":
        notes.append(said("reversed_files"))
    notes += [said("cut_off_lines", report=r) for r in (base, contender)]
    base_rows, cont_rows = _rows_by_name(base), _rows_by_name(contender)
    # A file of several inner repetitions per process holds each process's fastest (interleave.py):
    # the minimum stands for its process, disturbed or not. Measured on real runs beside a bursty
    # neighbour (docs/regression-gate.md, "Measured in real runs"): leaving such pairs out
    # loosened the pairs (pair spread 0.30 % -> 0.48 %) and lost some; with one repetition per
    # process every pair was marked and lost. A file of one repetition per process (an older
    # gate's) leaves a disturbed pair out.
    leave_out_disturbed = _inner_repetitions(base) <= 1 and lists("contender", DISTURBED_ROW)
    rows = iteration_rows(base) + iteration_rows(contender)
    if any(r.conditions == UNKNOWN for r in rows) and lists("contender", UNKNOWN_CONDITIONS):
        notes.append(said("unknown_conditions_note", what="repetitions"))
    if not set(base_rows) & set(cont_rows):
        raise UnusableInput(said("nothing_in_common", base=base.path, contender=contender.path))

    def judge(name: str) -> Verdict:
        b_rows, c_rows = base_rows.get(name, []), cont_rows.get(name, [])
        bench = _without_pairs(name, b_rows, c_rows)
        return bench or _judge_pairs(name, b_rows, c_rows, clock, rules, leave_out_disturbed)

    results = [judge(name) for name in sorted(set(base_rows) | set(cont_rows), key=natural_key)]
    return Judgement(
        base, contender, results, clock, True, rules=rules, warnings=notes, cut_off=cut_off
    )
