"""The verdict of a comparison, whichever way its samples were drawn (engine.py: independent
repetitions, judged metric by metric with the U test; paired.py: interleaved pairs, judged by the
signed-rank interval of their ratios): one `Verdict` per benchmark and one `Judgement` for the
whole, which decides the exit status. What is said of them: render.py.

What a benchmark's input class does to the gate (a failed, skipped or unsound row, a cut-off
file, nothing measured) is the policy table's (policy.py), asked here and in the draws.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from ..benchjson import BenchReport
from ..status import EXIT_OK, EXIT_REGRESSION, EXIT_UNRESOLVED, EXIT_UNUSABLE, Said, UnusableInput
from ..status import said
from ..policy import FAIL, FAILED_ROW, INTERRUPTED, LIST, MALFORMED_ROW, NOTHING_MEASURED, REFUSE
from ..policy import SKIPPED_ROW, UNSOUND_ROW, action, file_situation
from .config import CompareConfig
from .stats import AMBIGUOUS, CHANGED, FEW, INVALID, SLOWER, Estimate, MetricResult, PairedRules
from .stats import needs_confirmation, possibly_slower

# Verdicts of a whole benchmark besides those of its metrics (stats.py). FAILED: it ran in the
# baseline and now fails (a failed row of the contender). SKIPPED: it now does not
# run on this machine. NOT_JUDGED_DISTURBED: with its disturbed repetitions left out, too few
# remain on a side ("not judged: measured while disturbed"; disturbance is the machine, not the
# code). Pairs only: INCOMPLETE, repetitions without their partner; MISSING from the contender
# (the repetitions list those apart); NEW in the contender; BASE_FAILED, failed in the base.
FAILED, SKIPPED, NOT_JUDGED_DISTURBED = "failed", "skipped", "disturbed"
INCOMPLETE, MISSING = "incomplete", "missing"
NEW, BASE_FAILED = "new", "failed in the base"
# The side and input class behind a verdict: the policy table says whether it fails the gate.
_SITUATION = {FAILED: ("contender", FAILED_ROW), INVALID: ("contender", UNSOUND_ROW)}
_SITUATION |= {SKIPPED: ("contender", SKIPPED_ROW), BASE_FAILED: ("baseline", FAILED_ROW)}
# Verdicts that fail the gate: what the judgement shows (slower, changed work, gone) and the input
# classes the policy fails.
_ACTIONS = {v: action(f"compare {side}", s).kind for v, (side, s) in _SITUATION.items()}
FAILING = (SLOWER, CHANGED, MISSING) + tuple(v for v, kind in _ACTIONS.items() if kind == FAIL)
JUDGED_PAIRS = (SLOWER, "faster", "same", AMBIGUOUS)


def natural_key(name: str) -> list[Any]:
    """Sort m:64 before m:256: repetitions may be interleaved, so file order means nothing."""
    return [(0, int(tok), "") if tok.isdigit() else (1, 0, tok) for tok in re.split(r"(\d+)", name)]


def openblas_core(context: dict[str, Any]) -> str | None:
    """The OpenBLAS kernel set a run used: `core=X` at the end of openblas_get_config()."""
    match = re.search(r"\bcore=(\S+)", str(context.get("openblas_config", "")))
    return match.group(1) if match else None


def lists(side: str, situation: str) -> bool:
    """Whether the policy table has compare list this input class on `side` ("baseline" or
    "contender"): named and left out of the verdict, the exit status unchanged."""
    return action(f"compare {side}", situation).kind == LIST


def check_files(baseline: BenchReport, contender: BenchReport) -> Said | None:
    """What the policy table says of the two files before anything is judged: raises
    UnusableInput (one line naming the file, the row and the field) for what it refuses (a
    malformed row on either side, a cut-off baseline); returns why the contender is not a whole
    run where the table fails that, else None."""
    for tool, report in (("compare baseline", baseline), ("compare contender", contender)):
        malformed = [row for row in report.rows if row.malformed]
        if malformed and action(tool, MALFORMED_ROW).kind == REFUSE:
            more = len(malformed) - 1
            raise UnusableInput(said("malformed", path=report.path, row=malformed[0], more=more))
    situation = file_situation(baseline)
    if situation is not None and action("compare baseline", situation).kind == REFUSE:
        raise UnusableInput(said("baseline_cut_off", report=baseline))
    situation = file_situation(contender)
    if situation is None or action("compare contender", situation).kind != FAIL:
        return None
    stop = contender.interrupted if situation == INTERRUPTED else None
    return said("contender_cut_off", report=contender, missing=stop and stop.missing)


@dataclass
class Disturbance:
    """A benchmark's repetitions measured while disturbed, left out of its judgement, with the
    median of all its measured repetitions (disturbed ones included) so that a benchmark not
    judged can still be read. `why`: conditions.disturbance_causes_line over both sides."""

    baseline_disturbed: int
    baseline_measured: int
    contender_disturbed: int
    contender_measured: int
    baseline_median_all: float
    contender_median_all: float
    why: str | Said  # a Said until compare.words.worded words it

    @property
    def ratio_all(self) -> float:
        base, cont = self.baseline_median_all, self.contender_median_all
        return cont / base if base > 0 else math.nan

    def as_dict(self) -> dict[str, Any]:
        doc = asdict(self)
        return {**doc, "ratio_all": self.ratio_all, "why": doc.pop("why")}


@dataclass
class Verdict:
    """The verdict of one benchmark. Repetitions fill `metrics` (time, time/ref, counters);
    pairs fill `estimate` and the pair counts. `why`: why it was not judged, or what to know."""

    name: str
    verdict: str
    why: str | Said | None = None  # a Said until compare.words.worded words it
    label: str = ""
    metrics: list[MetricResult] = field(default_factory=list)
    overrides: list[str] = field(default_factory=list)
    disturbance: Disturbance | None = None
    estimate: Estimate | None = None
    pairs: int = 0
    left_out: int = 0  # pairs left out as disturbed
    base_median_s: float = math.nan
    contender_median_s: float = math.nan

    @property
    def fails(self) -> bool:
        return self.verdict in FAILING

    @property
    def needed(self) -> int | None:
        """Repetitions a side that would let the U test judge it (verdict FEW)."""
        return max((m.needed or 0 for m in self.metrics if m.gating), default=0) or None

    def metric(self, name: str) -> MetricResult | None:
        return next((m for m in self.metrics if m.metric == name), None)

    def as_dict(self, paired: bool) -> dict[str, Any]:
        if paired:
            est, doc = self.estimate, {key: getattr(self, key) for key in ("name", "verdict")}
            doc |= {"fails": self.fails, "pairs": self.pairs, "pairs_left_out": self.left_out}
            doc |= {"ratio": est and est.ratio, "interval": est and [est.low, est.high]}
            doc |= {"p_value": est and est.p_value, "base_median_s": self.base_median_s}
            return doc | {"contender_median_s": self.contender_median_s, "why": self.why or ""}
        doc = {key: getattr(self, key) for key in ("name", "label", "verdict", "fails")}
        needed = self.needed if self.verdict == FEW else None
        doc |= {"error": self.why, "repetitions_needed": needed}
        doc |= {"overrides": list(self.overrides), "metrics": [m.as_dict() for m in self.metrics]}
        return doc | {"disturbance": self.disturbance and self.disturbance.as_dict()}


@dataclass
class Judgement:
    """The verdict of the whole comparison. `paired`: drawn as interleaved pairs (`rules`),
    else as independent repetitions (`config`)."""

    baseline: BenchReport
    contender: BenchReport
    benchmarks: list[Verdict]
    clock: str
    paired: bool = False
    config: CompareConfig | None = None
    rules: PairedRules | None = None
    warnings: list[str | Said] = field(default_factory=list)  # worded by compare.words.worded
    # Measured in the baseline, absent from the contender: fails unless allow_missing.
    only_in_baseline: list[str] = field(default_factory=list)
    only_in_contender: list[str] = field(default_factory=list)
    hardware_differences: list[tuple[str, str, str]] = field(default_factory=list)
    environment_differences: list[tuple[str, str, str]] = field(default_factory=list)
    allow_missing: bool = False
    # The benchmarks whose times normalise the others (config "normalize"), empty without one.
    reference: list[str] = field(default_factory=list)
    # Benchmarks of the baseline not compared, one {"kind", "reason", "names"} per reason.
    not_compared: list[dict[str, Any]] = field(default_factory=list)
    # Why the contender is not a whole run where the policy fails that; None when whole.
    cut_off: str | Said | None = None
    wall_seconds: float | None = None
    bench_seconds: float | None = None

    def of(self, *verdicts: str) -> list[Verdict]:
        return [b for b in self.benchmarks if b.verdict in verdicts]

    @property
    def failing(self) -> list[Verdict]:
        return [b for b in self.benchmarks if b.fails]

    @property
    def missing_fails(self) -> bool:
        return bool(self.only_in_baseline) and not self.allow_missing

    @property
    def fails(self) -> bool:
        """Something failed the gate: a benchmark, a missing one, or a contender cut off."""
        return bool(self.failing or self.missing_fails or self.cut_off)

    # ---- independent repetitions

    @property
    def unjudged(self) -> list[Verdict]:
        """Compared benchmarks with too few repetitions to give a verdict."""
        return self.of(FEW)

    @property
    def judged(self) -> list[Verdict]:
        """Benchmarks that got a verdict (a failure counts: it is a verdict)."""
        return [b for b in self.benchmarks if b.verdict not in (FEW, SKIPPED, NOT_JUDGED_DISTURBED)]

    @property
    def disturbed(self) -> list[Verdict]:
        """Benchmarks not judged because too few undisturbed repetitions remained."""
        return self.of(NOT_JUDGED_DISTURBED)

    @property
    def disturbed_repetitions(self) -> tuple[int, int]:
        """(baseline, contender) repetitions measured while disturbed, left out of judgement."""
        found = [b.disturbance for b in self.benchmarks if b.disturbance is not None]
        return sum(d.baseline_disturbed for d in found), sum(d.contender_disturbed for d in found)

    @property
    def repetitions_needed(self) -> int | None:
        return max((b.needed or 0 for b in self.unjudged), default=0) or None

    @property
    def all_failed(self) -> bool:
        """Every compared benchmark now fails with an error (a run that broke as a whole)."""
        return bool(self.benchmarks) and all(b.verdict == FAILED for b in self.benchmarks)

    @property
    def cannot_judge(self) -> bool:
        """Nothing failed and nothing was judged: "0 judged" is never a pass."""
        return not self.fails and not self.judged

    # ---- interleaved pairs

    @property
    def maybe_slower(self) -> list[Verdict]:
        """AMBIGUOUS benchmarks that may be slower beyond the margin (possibly_slower): the ones
        more pairs are run for, and named on the loud line."""
        return [b for b in self.of(AMBIGUOUS) if possibly_slower(b.estimate, self.rules)]

    @property
    def to_confirm(self) -> list[Verdict]:
        """SLOWER benchmarks judged on fewer than confirm_pairs pairs: the gate runs more rounds
        of them and fails only what is still SLOWER on all its pairs (needs_confirmation)."""
        return [b for b in self.of(SLOWER) if needs_confirmation(b.pairs + b.left_out, self.rules)]

    @property
    def disturbed_few(self) -> list[Verdict]:
        """Too few pairs because pairs were left out as disturbed: more rounds replace them."""
        return [b for b in self.of(FEW) if b.left_out]

    @property
    def wide_open(self) -> list[Verdict]:
        """AMBIGUOUS benchmarks whose interval still reaches a slowdown of unresolved_at or more:
        never passed, whatever their estimate (more rounds are run for them first)."""
        limit = 1 + self.rules.unresolved_at
        return [b for b in self.of(AMBIGUOUS) if b.estimate and b.estimate.high >= limit]

    @property
    def resolved(self) -> list[Verdict]:
        """Benchmarks the pairs could decide: slower, faster, the same, or AMBIGUOUS only on the
        faster side (shown not slower beyond the margin, which is all a gate asks)."""
        unresolved = {id(b) for b in self.maybe_slower}
        return [b for b in self.of(*JUDGED_PAIRS) if id(b) not in unresolved]

    @property
    def busy(self) -> bool:
        """Nothing could be settled because the machine was busy: not resolved (exit 3)."""
        if self.paired:
            return not self.resolved or bool(self.disturbed_few or self.wide_open)
        return self.cannot_judge and bool(self.disturbed)

    @property
    def exit_code(self) -> int:
        """1 a regression shown (or a failure the policy fails); 2 what cannot be judged (never
        a pass: nothing judged, or pairs without their partner); 3 not resolved (neither a pass
        nor a regression: the machine was busy, or the pairs could not settle an interval)."""
        if self.fails:
            return EXIT_REGRESSION
        if self.of(INCOMPLETE):
            return EXIT_UNUSABLE
        if not self.paired and self.cannot_judge and not self.busy:
            return action("compare contender", NOTHING_MEASURED).exit_code or EXIT_UNUSABLE
        return EXIT_UNRESOLVED if self.busy else EXIT_OK

    def summary(self) -> dict[str, int]:
        """The count of each verdict, as the --json output has it."""
        count = Counter(b.verdict for b in self.benchmarks)
        if self.paired:
            return dict(count)
        base, cont = self.disturbed_repetitions
        doc = {"compared": len(self.benchmarks) - count[SKIPPED], "judged": len(self.judged)}
        doc |= {verdict: count[verdict] for verdict in ("slower", "faster", "same", "noisy")}
        doc |= {"not_enough_samples": count[FEW]}
        doc |= {"not_judged_disturbed": count[NOT_JUDGED_DISTURBED]}
        doc |= {"disturbed_repetitions_baseline": base, "disturbed_repetitions_contender": cont}
        doc |= {verdict: count[verdict] for verdict in (CHANGED, INVALID, FAILED, SKIPPED)}
        doc |= {"only_in_baseline": len(self.only_in_baseline)}
        doc |= {"only_in_contender": len(self.only_in_contender)}
        doc["not_compared"] = sum(len(g["names"]) for g in self.not_compared)
        return doc | {"failing": len(self.failing)}
