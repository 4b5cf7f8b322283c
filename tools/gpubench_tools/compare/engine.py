"""Compare two loaded bench files: from two reports to a `CompareResult`, which the renderers and
the --json output read.

Each file becomes a DataFrame of its repetitions (Google Benchmark's own mean/median/stddev/cv
aggregate rows are left out: everything is recomputed from the repetitions), grouped by benchmark.
Per benchmark measured in the baseline: median ratio, spread, Mann-Whitney U test and a verdict
for the time and the chosen counters (stats.compare_metric). A repetition whose time is not a
measurement (NaN, infinity, zero or negative, absurd) is left out; when the contender has such
repetitions and the baseline had none, the benchmark fails as "invalid".

The gate (`CompareResult.exit_code`): exit 1 when anything failed (slower beyond threshold,
changed work, an error or invalid values where the baseline was fine, a baseline benchmark
missing unless --allow-missing); else exit 2 when nothing could be judged because every compared
benchmark has too few repetitions ("cannot judge"); else exit 0. Benchmarks with too few
repetitions beside judged ones are listed as not judged, never counted as passing.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..benchjson import BenchReport
from ..conditions import DISTURBED, UNKNOWN, disturbance_causes_line, unknown_conditions_note
from ..wording import group_reasons
from ..policy import FAIL, INTERRUPTED, MALFORMED_ROW, NOTHING_MEASURED, REFUSE, action
from ..policy import file_situation
from ..cli import EXIT_OK, EXIT_REGRESSION, EXIT_UNRESOLVED, EXIT_UNUSABLE
from ..table import file_rows, undisturbed
from .config import CompareConfig
from .stats import CHANGED, FASTER, FEW, INVALID, NOISY, SAME, SLOWER, MetricResult
from ..units import plural
from .stats import Thresholds, compare_metric, judgeable, plausible_time

# Verdicts of a whole benchmark besides the metric verdicts. ERROR: it ran in the baseline and now
# fails (fails the gate). SKIPPED: it now does not run on this machine (its error starts with one
# of row_rules.SKIP_PREFIXES): listed, never failed. NOT_JUDGED_DISTURBED: with its disturbed
# repetitions left out, too few remain on a side to judge it: "not judged: measured while
# disturbed", listed with its figures, never failed (disturbance is the machine, not the code).
ERROR, SKIPPED, NOT_JUDGED_DISTURBED = "error", "skipped", "disturbed"
# Status of one repetition in the DataFrame of a file.
MEASURED, FAILED = "measured", "failed"
# Context keys that name the hardware: if they differ, ratios compare machines, not code.
HARDWARE_KEYS = tuple(
    "cpu_model cpu_logical_cpus gpu gpu_compute_capability gpu_sm_count gpu_memory_bytes".split()
)
# Context keys that change results without being hardware: shown, not shouted.
ENVIRONMENT_KEYS = tuple(
    "openblas_config openblas_coretype_env gpubench_cuda_build cuda_driver_version "
    "cuda_runtime_version cublas_version gpu_sm_clock_hz gpubench_sweep library_build_type".split()
)


class UsageError(Exception):
    """Input that cannot be compared (exit 2). str() is the one line printed on stderr."""


def _repetitions(report: BenchReport, clock: str) -> pd.DataFrame:
    """One row per repetition (the table's file rows of run type iteration), with `time` the
    compared clock's seconds. A row benchjson finds sound can still hold a 0 time or no cpu_time
    on the compared clock, so its plausibility is asked here."""
    rows = file_rows(report)
    rows = rows[rows["run_type"] == "iteration"].reset_index(drop=True)
    rows["time"] = rows[f"{clock}_s"]
    implausible = (rows["status"] == MEASURED) & ~rows["time"].map(plausible_time).astype(bool)
    rows.loc[implausible, "status"] = INVALID
    rows.loc[implausible, "invalid"] = f"{clock} of a row that measured no time"
    columns = ["name", "label", "time", "status", "invalid", "conditions", "error", "counters"]
    return rows[columns]


def _why_invalid(frame: pd.DataFrame) -> str:
    """The reasons of a frame's invalid repetitions, each naming the field and its value as the
    file wrote it ("real_time is -1.5 (below 0)"), never the number the reader made of it."""
    reasons = list(dict.fromkeys(frame.invalid[frame.status == INVALID].dropna()))
    return "; ".join(reasons[:3]) + ("; ..." if len(reasons) > 3 else "")


def _key(frames: list[pd.DataFrame]) -> set[str]:
    """Add each repetition's benchmark key, the same on both sides: its run name, or "run_name
    [label]" for a run name that one file uses with different labels (two registrations that
    print the same name, e.g. a square GEMM and a training layer's GEMM of equal size, would
    otherwise mix into one sample). Returns those run names."""
    ambiguous = set()
    for frame in frames:
        labels = frame.groupby("name").label.nunique()
        ambiguous |= set(labels.index[labels > 1])
    for frame in frames:
        pairs = zip(frame.name, frame.label)
        frame["key"] = [f"{n} [{label}]" if n in ambiguous else n for n, label in pairs]
    return ambiguous


def _context_differences(
    base: dict[str, Any], cont: dict[str, Any], keys: tuple[str, ...]
) -> list[tuple[str, str, str]]:
    def text(value: Any) -> str:
        return "(absent)" if value is None else str(value)

    both = ((key, base.get(key), cont.get(key)) for key in keys)
    return [(k, text(b), text(c)) for k, b, c in both if str(b) != str(c)]


def openblas_core(context: dict[str, Any]) -> str | None:
    """The OpenBLAS kernel set a run used: `core=X` at the end of openblas_get_config()."""
    match = re.search(r"\bcore=(\S+)", str(context.get("openblas_config", "")))
    return match.group(1) if match else None


def natural_key(name: str) -> list[Any]:
    """Sort m:64 before m:256: repetitions may be interleaved, so file order means nothing."""
    return [(0, int(tok), "") if tok.isdigit() else (1, 0, tok) for tok in re.split(r"(\d+)", name)]


def _nothing_measured(report: BenchReport, frame: pd.DataFrame) -> str:
    """Why a file has no benchmark to compare: the one line for UsageError."""
    if report.rows and all(row.run_type == "aggregate" for row in report.rows):
        return (
            f"{report.path}: only aggregate rows (written with "
            "--benchmark_report_aggregates_only); rerun without it so the repetitions can be "
            "compared"
        )
    invalid = frame.time[frame.status == INVALID].tolist()
    if invalid:
        return (
            f"{report.path}: no benchmark with a valid time to compare ({len(invalid)} "
            f"repetitions with times that are not measurements: {_why_invalid(frame)})"
        )
    return f"{report.path}: no successfully measured benchmark to compare"


def _overall(metrics: list[MetricResult]) -> str:
    """One verdict per benchmark: a gating failure anywhere wins (invalid values, slower,
    changed work), then "not enough samples" (no other verdict is possible), speed-up, noise."""
    gating = {m.verdict for m in metrics if m.gating}
    time_like = {m.verdict for m in metrics if m.gating and m.metric in ("time", "time/ref")}
    first = [v for v in (INVALID, SLOWER, CHANGED, FEW, FASTER) if v in gating]
    return first[0] if first else NOISY if NOISY in time_like else SAME


@dataclass
class BenchComparison:
    name: str
    label: str
    verdict: str
    metrics: list[MetricResult]
    overrides: list[str]
    error: str | None = None  # why it was not compared (ERROR, SKIPPED, INVALID without metrics)
    # Its disturbed repetitions (see Disturbance), None where none was disturbed.
    disturbance: "Disturbance | None" = None

    @property
    def fails(self) -> bool:
        return self.verdict in (ERROR, INVALID) or any(m.fails for m in self.metrics)

    @property
    def needed(self) -> int | None:
        """Repetitions a side that would let the U test judge it (verdict FEW)."""
        return max((m.needed or 0 for m in self.metrics if m.gating), default=0) or None

    def metric(self, name: str) -> MetricResult | None:
        return next((m for m in self.metrics if m.metric == name), None)

    def as_dict(self) -> dict[str, Any]:
        return {
            **{key: getattr(self, key) for key in ("name", "label", "verdict", "fails", "error")},
            "repetitions_needed": self.needed if self.verdict == FEW else None,
            "overrides": list(self.overrides),
            "metrics": [m.as_dict() for m in self.metrics],
            "disturbance": None if self.disturbance is None else self.disturbance.as_dict(),
        }


@dataclass
class Disturbance:
    """A benchmark's repetitions measured while disturbed, left out of its judgement, with the
    figures of all its measured repetitions (disturbed ones included) so that a benchmark not
    judged can still be read."""

    base_disturbed: int
    base_measured: int
    cont_disturbed: int
    cont_measured: int
    base_median_all: float  # the median time of every measured repetition, disturbed included
    cont_median_all: float
    why: str  # conditions.describe_conditions over both sides' repetitions

    @property
    def ratio_all(self) -> float:
        return self.cont_median_all / self.base_median_all if self.base_median_all > 0 else math.nan

    def notes(self) -> list[str]:
        """One note a side that had repetitions measured while disturbed."""
        sides = (
            ("baseline", self.base_disturbed, self.base_measured),
            ("contender", self.cont_disturbed, self.cont_measured),
        )
        return [
            f"{n} of {of} repetitions of the {side} measured while disturbed: left out"
            for side, n, of in sides
            if n
        ]

    def as_dict(self) -> dict[str, Any]:
        return {
            "baseline_disturbed": self.base_disturbed,
            "baseline_measured": self.base_measured,
            "contender_disturbed": self.cont_disturbed,
            "contender_measured": self.cont_measured,
            "baseline_median_all": self.base_median_all,
            "contender_median_all": self.cont_median_all,
            "ratio_all": self.ratio_all,
            "why": self.why,
        }


def _disturbance(base: pd.DataFrame, cont: pd.DataFrame) -> Disturbance | None:
    """The disturbed repetitions of one benchmark's two sides, None where there are none."""
    bmeasured, cmeasured = base[base.status == MEASURED], cont[cont.status == MEASURED]
    bdist, cdist = (int((f.conditions == DISTURBED).sum()) for f in (bmeasured, cmeasured))
    if not bdist and not cdist:
        return None
    why = disturbance_causes_line(list(bmeasured.counters) + list(cmeasured.counters))
    return Disturbance(
        bdist,
        len(bmeasured),
        cdist,
        len(cmeasured),
        float(bmeasured.time.median()) if len(bmeasured) else math.nan,
        float(cmeasured.time.median()) if len(cmeasured) else math.nan,
        why,
    )


def _values(frame: pd.DataFrame, status: str, column: str = "time") -> list[Any]:
    return frame.loc[frame.status == status, column].tolist()


def _metrics(
    base: pd.DataFrame,
    cont: pd.DataFrame,
    config: CompareConfig,
    thresholds: Thresholds,
    counters: list[str],
    divisor: tuple[float, float] | None,
) -> list[MetricResult]:
    """The metrics of one benchmark's measured repetitions: time, time/ref (divided by the
    reference time of each side, see _divisors) and the counters both sides have."""
    btimes, ctimes = _values(base, MEASURED), _values(cont, MEASURED)
    metrics = [compare_metric("time", "lower", btimes, ctimes, thresholds, True, plausible_time)]
    if divisor is not None and config.normalize is not None:
        bnorm, cnorm = [t / divisor[0] for t in btimes], [t / divisor[1] for t in ctimes]
        metrics.append(
            compare_metric("time/ref", "lower", bnorm, cnorm, config.normalize.thresholds)
        )
    bcounters, ccounters = _values(base, MEASURED, "counters"), _values(cont, MEASURED, "counters")
    for counter in counters:
        bvals = [c[counter] for c in bcounters if counter in c]
        cvals = [c[counter] for c in ccounters if counter in c]
        if not bvals or not cvals:
            continue  # a counter this benchmark does not have (e.g. t_epoch on a GEMM)
        better = config.direction(counter)
        # Exact counters cannot be noisy, so they always gate; timing-derived ones only
        # when the config says so (they carry the same noise as the time itself).
        gating = better == "exact" or config.gate_counters
        metrics.append(compare_metric(counter, better, bvals, cvals, thresholds, gating))
    return metrics


def _compare_benchmark(
    key: str,
    base: pd.DataFrame,
    cont: pd.DataFrame,
    config: CompareConfig,
    counters: list[str],
    divisors: dict[str, tuple[float, float]],
    reference: list[str],
) -> BenchComparison:
    """One benchmark measured in the baseline (the repetitions of each side): time, time/ref
    (divided by the reference time of each side, see _divisors) and counters."""
    thresholds, matched = config.thresholds_for(key)
    label = base.label.iloc[0]
    errors, skipped = _values(cont, FAILED, "error"), _values(cont, SKIPPED, "error")
    ctimes = _values(cont, MEASURED)
    binvalid, cinvalid = _values(base, INVALID), _values(cont, INVALID)

    def unmeasured(verdict: str, why: str) -> BenchComparison:
        return BenchComparison(key, label, verdict, [], matched, why)

    if errors and not ctimes:
        return unmeasured(ERROR, errors[0])
    if cinvalid and (not binvalid or not ctimes):
        # The time itself is not a measurement where the baseline's was: the benchmark broke,
        # whatever its valid repetitions say.
        total = len(cinvalid) + len(ctimes)
        return unmeasured(
            INVALID,
            f"{config.time}: {len(cinvalid)} of {total} repetitions are not a valid time "
            f"({_why_invalid(cont)})"
            + ("" if binvalid else "; the baseline's times were all valid"),
        )
    if not ctimes:
        return unmeasured(SKIPPED, skipped[0])
    # Disturbed repetitions are left out of the judgement (policy: disturbed repetition) and
    # counted; what remains is judged as any sample is.
    disturbance = _disturbance(base, cont)
    if disturbance is not None:
        base, cont = undisturbed(base), undisturbed(cont)
        btimes, ctimes = _values(base, MEASURED), _values(cont, MEASURED)
        if not btimes or not ctimes:
            return BenchComparison(
                key, label, NOT_JUDGED_DISTURBED, [], matched, disturbance.why, disturbance
            )
    divisor = divisors.get(key)
    metrics = _metrics(base, cont, config, thresholds, counters, divisor)
    notes = metrics[0].notes
    if reference and divisor is None:
        notes.append("the only normalisation reference: no time/ref of its own")
    for what, messages in (("failed", errors), ("skipped", skipped)):
        if messages:
            notes.append(f"{len(messages)} repetition(s) {what} in the contender: {messages[0]}")
    for side, invalid, frame in (("baseline", binvalid, base), ("contender", cinvalid, cont)):
        if invalid:
            notes.append(
                f"{len(invalid)} repetition(s) in the {side} without a valid time "
                f"({_why_invalid(frame)}): left out"
            )
    verdict = _overall(metrics)
    if disturbance is not None:
        notes.extend(disturbance.notes())
        if verdict == FEW and judgeable(
            disturbance.base_measured, disturbance.cont_measured, thresholds.alpha
        ):
            # Enough repetitions were run; the machine took them. Not a sample-size problem.
            return BenchComparison(
                key, label, NOT_JUDGED_DISTURBED, metrics, matched, disturbance.why, disturbance
            )
    return BenchComparison(key, label, verdict, metrics, matched, None, disturbance)


def _why_not_measured(group: pd.DataFrame) -> tuple[str, str]:
    """(kind, reason) of a baseline benchmark without a measurement."""
    for status, kind in ((FAILED, "failed_in_baseline"), (SKIPPED, "skipped_in_baseline")):
        if status in group.status.values:
            return kind, _values(group, status, "error")[0]
    return "invalid_in_baseline", f"no valid time ({_why_invalid(group)})"


def _divisors(
    config: CompareConfig, base: pd.DataFrame, cont: pd.DataFrame, common: list[str], path: str
) -> tuple[list[str], dict[str, tuple[float, float]], list[str]]:
    """The normalisation of config "normalize": (the reference benchmarks, each benchmark's
    (baseline, contender) divisor, warnings). A divisor is the geometric mean of the reference
    benchmarks' median times on that side, leaving out the benchmark itself, so a regression in
    it cannot shrink its own normalised ratio; averaging several references makes the divisor
    steadier than any single median on a noisy machine."""
    if config.normalize is None:
        return [], {}, []
    pattern = config.normalize.reference
    if not any(pattern.search(k) for k in base.key[base.status == MEASURED]):
        raise UsageError(
            f"normalize.reference {pattern.pattern!r} matches no benchmark measured in {path}"
        )
    # A pattern whose benchmarks all fail, are missing or have no valid time in the contender
    # leaves the run without normalisation (a warning): those benchmarks fail or are listed on
    # their own, and the absolute comparison of every time still holds.
    refs = [k for k in common if pattern.search(k)]
    if not refs:
        warning = (
            f"normalize.reference {pattern.pattern!r} matches no benchmark measured in both "
            "files: times are not normalised (time / reference is not compared)"
        )
        return [], {}, [warning]
    medians = [
        frame[frame.status == MEASURED].groupby("key").time.median().reindex(refs)
        for frame in (base, cont)
    ]
    mean = statistics.geometric_mean
    divisors = {
        key: (
            mean(medians[0].drop(key, errors="ignore")),
            mean(medians[1].drop(key, errors="ignore")),
        )
        for key in common
        if len(refs) > (key in refs)
    }
    return refs, divisors, []


@dataclass
class CompareResult:
    baseline: BenchReport
    contender: BenchReport
    config: CompareConfig
    benchmarks: list[BenchComparison]
    # Measured in the baseline, absent from the contender: fails unless allow_missing.
    only_in_baseline: list[str]
    only_in_contender: list[str]
    hardware_differences: list[tuple[str, str, str]]
    environment_differences: list[tuple[str, str, str]]
    warnings: list[str]
    allow_missing: bool
    # The benchmarks whose times normalise the others (config "normalize"), empty without one.
    reference: list[str] = field(default_factory=list)
    # Benchmarks not compared, one {"kind", "reason", "names"} per reason (failed or skipped in
    # the baseline, ...): the reason is said once, the names listed only where asked.
    not_compared: list[dict[str, Any]] = field(default_factory=list)
    # Why the contender is not a whole run (a cut-off file), which fails the gate; None when whole.
    cut_off: str | None = None

    def count(self, verdict: str) -> int:
        return sum(1 for b in self.benchmarks if b.verdict == verdict)

    @property
    def failing(self) -> list[BenchComparison]:
        return [b for b in self.benchmarks if b.fails]

    @property
    def missing_fails(self) -> bool:
        return bool(self.only_in_baseline) and not self.allow_missing

    @property
    def unjudged(self) -> list[BenchComparison]:
        """Compared benchmarks with too few repetitions to give a verdict."""
        return [b for b in self.benchmarks if b.verdict == FEW]

    @property
    def judged(self) -> list[BenchComparison]:
        """Benchmarks that got a verdict (a failure counts: it is a verdict)."""
        return [b for b in self.benchmarks if b.verdict not in (FEW, SKIPPED, NOT_JUDGED_DISTURBED)]

    @property
    def disturbed(self) -> list[BenchComparison]:
        """Benchmarks not judged because too few undisturbed repetitions remained."""
        return [b for b in self.benchmarks if b.verdict == NOT_JUDGED_DISTURBED]

    @property
    def disturbed_repetitions(self) -> tuple[int, int]:
        """(baseline, contender) repetitions measured while disturbed, left out of judgement."""
        found = [b.disturbance for b in self.benchmarks if b.disturbance is not None]
        return sum(d.base_disturbed for d in found), sum(d.cont_disturbed for d in found)

    @property
    def repetitions_needed(self) -> int | None:
        return max((b.needed or 0 for b in self.unjudged), default=0) or None

    @property
    def all_failed(self) -> bool:
        """Every compared benchmark now fails with an error (a run that broke as a whole)."""
        return bool(self.benchmarks) and all(b.verdict == ERROR for b in self.benchmarks)

    @property
    def fails(self) -> bool:
        """Something failed the gate: a benchmark, a missing one, or a contender cut off."""
        return bool(self.failing or self.missing_fails or self.cut_off)

    @property
    def busy(self) -> bool:
        """Nothing failed and nothing was judged, and disturbance is why: the machine was busy."""
        return not self.fails and not self.judged and bool(self.disturbed)

    @property
    def cannot_judge(self) -> str | None:
        """The exit-2 reason when nothing failed and nothing was judged, else None: "0 judged" is
        never a pass (policy: a contender that measured nothing is not judged)."""
        if self.fails or self.judged:
            return None
        if self.disturbed:
            n = len(self.disturbed)
            return (
                f"cannot judge: {plural(n, 'benchmark')} {'was' if n == 1 else 'were'} measured while "
                "disturbed (too few undisturbed repetitions on a side) and nothing else was "
                "judged; stop what else runs on the machine and measure again"
            )
        if self.unjudged:
            reps, n = self.repetitions_needed, len(self.unjudged)
            return (
                f"cannot judge: {plural(n, 'benchmark')} {'has' if n == 1 else 'have'} fewer than {reps} "
                f"repetitions on a side; rerun with --benchmark_repetitions={reps}"
            )
        skipped = [b for b in self.benchmarks if b.verdict == SKIPPED]
        why = f" ({len(skipped)} skipped in the contender: {skipped[0].error})" if skipped else ""
        return f"cannot judge: no benchmark was measured in both files{why}"

    @property
    def exit_code(self) -> int:
        if self.fails:
            return EXIT_REGRESSION
        if self.cannot_judge is None:
            return EXIT_OK
        # Nothing judged because the machine was busy: neither a pass nor a regression, and not
        # unusable input either: its own status, which a CI job can tell apart (.ci/run goes on).
        if self.busy:
            return EXIT_UNRESOLVED
        # Nothing judged for another reason: never a pass, so the unusable-input exit.
        code = action("compare contender", NOTHING_MEASURED).exit_code
        return EXIT_UNUSABLE if code is None else code

    def summary(self) -> dict[str, int]:
        return {
            "compared": len(self.benchmarks) - self.count(SKIPPED),
            "judged": len(self.judged),
            **{verdict: self.count(verdict) for verdict in (SLOWER, FASTER, SAME, NOISY)},
            "not_enough_samples": self.count(FEW),
            "not_judged_disturbed": self.count(NOT_JUDGED_DISTURBED),
            "disturbed_repetitions_baseline": self.disturbed_repetitions[0],
            "disturbed_repetitions_contender": self.disturbed_repetitions[1],
            **{verdict: self.count(verdict) for verdict in (CHANGED, INVALID, ERROR, SKIPPED)},
            "only_in_baseline": len(self.only_in_baseline),
            "only_in_contender": len(self.only_in_contender),
            "not_compared": sum(len(g["names"]) for g in self.not_compared),
            "failing": len(self.failing),
        }

    def as_dict(self) -> dict[str, Any]:
        def side(report: BenchReport) -> dict[str, Any]:
            keys = ("date", "host_name", "cpu_model", "gpu")
            return {
                "path": report.path,
                "git_commit": report.context.get("gpubench_git_commit"),
                **{key: report.context.get(key) for key in keys},
                "recovered_from_truncation": report.recovered_from_truncation,
                "interrupted": (
                    None
                    if report.interrupted is None
                    else {
                        "signal": report.interrupted.signal,
                        "benchmarks_finished": report.interrupted.finished,
                        "benchmarks_selected": report.interrupted.selected,
                    }
                ),
                "state": report.state,
            }

        def differences(rows: list[tuple[str, str, str]]) -> list[dict[str, str]]:
            return [{"key": k, "baseline": b, "contender": c} for k, b, c in rows]

        doc = {
            "schema": "gpubench-compare/1",
            "exit_code": self.exit_code,
            "cannot_judge": self.cannot_judge,
            "repetitions_needed": self.repetitions_needed,
            "baseline": side(self.baseline),
            "contender": side(self.contender),
            "hardware_differs": bool(self.hardware_differences),
            "hardware_differences": differences(self.hardware_differences),
            "environment_differences": differences(self.environment_differences),
            "time": self.config.time,
            "normalize_reference": self.reference,
            "config": self.config.as_dict(),
            "allow_missing": self.allow_missing,
            # Before --allow-missing, failing on missing benchmarks was opt-in.
            "fail_on_missing": not self.allow_missing,
            "cut_off": self.cut_off,
            "summary": self.summary(),
            "benchmarks": [b.as_dict() for b in self.benchmarks],
            "only_in_baseline": self.only_in_baseline,
            "only_in_contender": self.only_in_contender,
            "not_compared": self.not_compared,
            "warnings": self.warnings,
        }
        # NaN and infinity are not JSON: null, so every JSON parser can read the output.
        return json.loads(json.dumps(doc), parse_constant=lambda _: None)


def _cut_off(contender: BenchReport) -> str | None:
    """Why the contender is not a whole run where the policy fails it for that, else None."""
    situation = file_situation(contender)
    if situation is None or action("compare contender", situation).kind != FAIL:
        return None
    missing = (
        f"{plural(contender.interrupted.missing, 'benchmark')} selected were not measured"
        if situation == INTERRUPTED and contender.interrupted is not None
        else "benchmarks or repetitions may be missing"
    )
    return (
        f"the contender {contender.path} is cut off ({contender.cut_off}): the run did not "
        f"finish, so {missing}"
    )


def _reading_warnings(
    baseline: BenchReport,
    contender: BenchReport,
    frames: tuple[pd.DataFrame, pd.DataFrame],
    ambiguous: set[str],
    results: list[BenchComparison],
) -> list[str]:
    """What the reader must know before trusting the table (one line each)."""
    base, cont = frames
    warnings = []
    unknown = [
        side
        for side, frame in (("the baseline's", base), ("the contender's", cont))
        if (frame.conditions[frame.status == MEASURED] == UNKNOWN).any()
    ]
    if unknown:
        warnings.append(unknown_conditions_note(" and ".join(unknown) + " repetitions"))
    if ambiguous:
        warnings.append(
            f"{len(ambiguous)} benchmark name(s) are used by benchmarks with different "
            "labels; they are compared as 'name [label]'"
        )
    # Different OpenBLAS kernels (OPENBLAS_CORETYPE, or another CPU): every CPU ratio then
    # compares two kernel sets, and can hide or fake a regression.
    bcore, ccore = openblas_core(baseline.context), openblas_core(contender.context)
    if bcore is not None and ccore is not None and bcore != ccore:
        warnings.append(
            f"OpenBLAS ran different kernels: core={bcore} in the baseline, core={ccore} in the "
            "contender; CPU ratios compare the two kernel sets, not the code (set "
            f"OPENBLAS_CORETYPE={bcore} to measure like the baseline)"
        )
    with_invalid = set(base.key[base.status == INVALID]) | set(cont.key[cont.status == INVALID])
    dropped = [
        b
        for b in results
        if b.metrics
        and (
            b.name in with_invalid
            or any((m.base_invalid or m.cont_invalid) and m.verdict != INVALID for m in b.metrics)
        )
    ]
    if dropped:
        warnings.append(
            f"{len(dropped)} benchmark(s) have values that are not measurements (NaN, infinity, "
            "a time <= 0, an absurd magnitude) that were left out of the comparison (see the "
            "notes)"
        )
    return warnings


def compare_reports(
    baseline: BenchReport,
    contender: BenchReport,
    config: CompareConfig,
    counters: list[str] | None = None,
    allow_missing: bool = False,
) -> CompareResult:
    """Compare two loaded reports. Raises UsageError when there is nothing to compare.

    allow_missing: a benchmark measured in the baseline and absent from the contender is listed,
    not failed (a run filtered on purpose). By default it fails the gate.
    """
    _check_files(baseline, contender)
    base, cont = _repetitions(baseline, config.time), _repetitions(contender, config.time)
    ambiguous = _key([base, cont])
    by_key = [dict(tuple(frame.groupby("key", sort=False))) for frame in (base, cont)]
    measured = sorted(set(base.key[base.status == MEASURED]), key=natural_key)
    in_cont = [k for k in measured if k in by_key[1]]
    if not in_cont:  # files that share nothing that can be compared are unusable input
        if not measured:
            raise UsageError(_nothing_measured(baseline, base))
        if MEASURED not in cont.status.values:
            raise UsageError(_nothing_measured(contender, cont))
        raise UsageError(
            f"no common benchmarks: {baseline.path} and {contender.path} share no benchmark name"
        )
    common = [k for k in in_cont if MEASURED in by_key[1][k].status.values]  # they get ratios
    reference, divisors, warnings = _divisors(config, base, cont, common, baseline.path)

    # Exact counters (the work of an iteration) are checked whenever both sides carry them.
    chosen = list(config.counters if counters is None else counters)
    checked = chosen + [c for c in config.exact_counters if c not in chosen]
    results = [
        _compare_benchmark(k, by_key[0][k], by_key[1][k], config, checked, divisors, reference)
        for k in in_cont
    ]
    warnings = baseline.warnings + contender.warnings + warnings
    warnings += _reading_warnings(baseline, contender, (base, cont), ambiguous, results)
    unmeasured = sorted(set(by_key[0]) - set(measured), key=natural_key)
    by_reason = group_reasons(unmeasured, lambda key: _why_not_measured(by_key[0][key]))
    contexts = baseline.context, contender.context
    return CompareResult(
        baseline=baseline,
        contender=contender,
        config=config,
        benchmarks=results,
        only_in_baseline=[k for k in measured if k not in by_key[1]],
        only_in_contender=sorted(set(by_key[1]) - set(by_key[0]), key=natural_key),
        hardware_differences=_context_differences(*contexts, HARDWARE_KEYS),
        environment_differences=_context_differences(*contexts, ENVIRONMENT_KEYS),
        warnings=warnings,
        allow_missing=allow_missing,
        reference=reference,
        not_compared=[
            {"kind": kind, "reason": why, "names": keys} for (kind, why), keys in by_reason
        ],
        cut_off=_cut_off(contender),
    )


def _check_files(baseline: BenchReport, contender: BenchReport) -> None:
    """What the policy table refuses before anything is compared (UsageError, one line naming
    the file, the row and the field): a malformed row on either side, a cut-off baseline."""
    for tool, report in (("compare baseline", baseline), ("compare contender", contender)):
        malformed = [row for row in report.rows if row.malformed]
        if malformed and action(tool, MALFORMED_ROW).kind == REFUSE:
            more = f" (and {plural(len(malformed) - 1, 'more row')})" if len(malformed) > 1 else ""
            raise UsageError(
                f"{report.path}: row '{malformed[0].name}' is invalid: {malformed[0].invalid}"
                f"{more}; the gate reads only whole, well-formed bench rows"
            )
    situation = file_situation(baseline)
    if situation is not None and action("compare baseline", situation).kind == REFUSE:
        raise UsageError(
            f"{baseline.path}: cut off ({baseline.cut_off}): a baseline must be a whole run"
        )
