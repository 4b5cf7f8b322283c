"""The judgement drawn as independent repetitions: from two bench files to a verdict.Judgement.

Each file becomes a DataFrame of its repetitions (Google Benchmark's own mean/median/stddev/cv
aggregate rows are left out: everything is recomputed from the repetitions), grouped by benchmark.
Per benchmark measured in the baseline: median ratio, spread, Mann-Whitney U test and a verdict
for the time and the chosen counters (stats.compare_metric). A repetition whose time is not a
measurement (NaN, infinity, zero or negative, absurd) is left out; when the contender has such
repetitions and the baseline had none, the benchmark fails as "invalid".

The gate (`Judgement.exit_code`): exit 1 when anything failed (slower beyond threshold,
changed work, an error or invalid values where the baseline was fine, a baseline benchmark
missing unless --allow-missing); else, when nothing could be judged, exit 3 where the machine was
busy (too few undisturbed repetitions) and exit 2 otherwise ("cannot judge": too few
repetitions); else exit 0. Benchmarks with too few repetitions beside judged ones are listed as
not judged, never counted as passing.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..benchjson import BenchReport
from ..status import Said, UnusableInput, said
from ..conditions import DISTURBED, UNKNOWN
from ..row_rules import group_reasons
from ..policy import DISTURBED_ROW, UNKNOWN_CONDITIONS
from ..table import file_rows, undisturbed
from .config import CompareConfig
from .stats import CHANGED, FASTER, FEW, INVALID, NOISY, SAME, SLOWER, MetricResult
from .stats import Thresholds, compare_metric, first_few, judgeable, plausible_time
from .verdict import FAILED, NOT_JUDGED_DISTURBED, SKIPPED, Disturbance, Judgement, Verdict
from .verdict import check_files, lists, natural_key, openblas_core

__all__ = ["compare_reports", "natural_key", "openblas_core", "undisturbed"]

# Status of one repetition in the DataFrame of a file (besides FAILED, SKIPPED and INVALID).
MEASURED = "measured"
# Context keys that name the hardware: if they differ, ratios compare machines, not code.
HARDWARE_KEYS = ("cpu_model", "cpu_logical_cpus", "gpu", "gpu_compute_capability", "gpu_sm_count")
HARDWARE_KEYS += ("gpu_memory_bytes",)
# Context keys that change results without being hardware: shown, not shouted.
ENVIRONMENT_KEYS = ("openblas_config", "openblas_coretype_env", "gpubench_cuda_build")
ENVIRONMENT_KEYS += ("cuda_driver_version", "cuda_runtime_version", "cublas_version")
ENVIRONMENT_KEYS += ("gpu_sm_clock_hz", "gpubench_sweep", "library_build_type")


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
    return rows


def _why_invalid(frame: pd.DataFrame) -> str:
    """The reasons of a frame's invalid repetitions, each naming the field and its value as the
    file wrote it ("real_time is -1.5 (below 0)"), never the number the reader made of it."""
    return first_few(frame.invalid[frame.status == INVALID].dropna(), "; ")


def _key(frames: list[pd.DataFrame]) -> set[str]:
    """Add each repetition's benchmark key, the same on both sides: its run name, or "run_name
    [label]" for a run name that one file uses with different labels (two registrations that
    print the same name, e.g. a square GEMM and a training layer's GEMM of equal size, would
    otherwise mix into one sample). Returns those run names."""
    counts = [frame.groupby("name").label.nunique() for frame in frames]
    ambiguous = {name for labels in counts for name in labels.index[labels > 1]}
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


def _nothing_measured(report: BenchReport, frame: pd.DataFrame) -> Said:
    """Why a file has no benchmark to compare: the one line for UnusableInput, as data."""
    aggregates = bool(report.rows) and all(row.run_type == "aggregate" for row in report.rows)
    invalid = int((frame.status == INVALID).sum())
    return said("nothing_measured", path=report.path, only_aggregates=aggregates, invalid=invalid,
               why=_why_invalid(frame))  # fmt: skip


def _overall(metrics: list[MetricResult]) -> str:
    """One verdict per benchmark: a gating failure anywhere wins (invalid values, slower,
    changed work), then "not enough samples" (no other verdict is possible), speed-up, noise."""
    gating = {m.verdict for m in metrics if m.gating}
    time_like = {m.verdict for m in metrics if m.gating and m.metric in ("time", "time/ref")}
    first = [v for v in (INVALID, SLOWER, CHANGED, FEW, FASTER) if v in gating]
    return first[0] if first else NOISY if NOISY in time_like else SAME


def _disturbance(base: pd.DataFrame, cont: pd.DataFrame) -> Disturbance | None:
    """The disturbed repetitions of one benchmark's two sides, None where there are none."""
    bmeasured, cmeasured = base[base.status == MEASURED], cont[cont.status == MEASURED]
    bdist, cdist = (int((f.conditions == DISTURBED).sum()) for f in (bmeasured, cmeasured))
    if not bdist and not cdist:
        return None
    why = said("disturbance_causes_line", rows=list(bmeasured.counters) + list(cmeasured.counters))
    medians = (float(f.time.median()) if len(f) else math.nan for f in (bmeasured, cmeasured))
    return Disturbance(bdist, len(bmeasured), cdist, len(cmeasured), *medians, why)


def _values(frame: pd.DataFrame, status: str, column: str = "time") -> list[Any]:
    return frame.loc[frame.status == status, column].tolist()


@dataclass
class _Judge:
    """What every benchmark of one comparison is judged by: the config, the counters compared
    and the normalisation (_divisors: the reference benchmarks, each benchmark's divisors)."""

    config: CompareConfig
    counters: list[str]
    divisors: dict[str, tuple[float, float]]
    reference: list[str]

    def metrics(
        self, base: pd.DataFrame, cont: pd.DataFrame, thresholds: Thresholds, key: str
    ) -> list[MetricResult]:
        """The metrics of one benchmark's measured repetitions: time, time/ref (divided by the
        reference time of each side) and the counters both sides have."""
        config, divisor = self.config, self.divisors.get(key)
        btimes, ctimes = _values(base, MEASURED), _values(cont, MEASURED)
        time = compare_metric("time", "lower", btimes, ctimes, thresholds, True, plausible_time)
        metrics = [time]
        if divisor is not None and config.normalize is not None:
            bnorm, cnorm = [t / divisor[0] for t in btimes], [t / divisor[1] for t in ctimes]
            norm = config.normalize.thresholds
            metrics.append(compare_metric("time/ref", "lower", bnorm, cnorm, norm))
        sides = [_values(frame, MEASURED, "counters") for frame in (base, cont)]
        for counter in self.counters:
            bvals, cvals = ([c[counter] for c in side if counter in c] for side in sides)
            if not bvals or not cvals:
                continue  # a counter this benchmark does not have (e.g. t_epoch on a GEMM)
            better = config.direction(counter)
            # Exact counters cannot be noisy, so they always gate; timing-derived ones only
            # when the config says so (they carry the same noise as the time itself).
            gating = better == "exact" or config.gate_counters
            metrics.append(compare_metric(counter, better, bvals, cvals, thresholds, gating))
        return metrics

    def benchmark(self, key: str, base: pd.DataFrame, cont: pd.DataFrame) -> Verdict:
        """One benchmark measured in the baseline (the repetitions of each side)."""
        thresholds, matched = self.config.thresholds_for(key)
        label = base.label.iloc[0]
        errors, skipped = _values(cont, FAILED, "error"), _values(cont, SKIPPED, "error")
        ctimes = _values(cont, MEASURED)
        binvalid, cinvalid = _values(base, INVALID), _values(cont, INVALID)

        def unmeasured(verdict: str, why: str, disturbance: Disturbance | None = None) -> Verdict:
            return Verdict(key, verdict, why, label, [], matched, disturbance)

        if errors and not ctimes:
            return unmeasured(FAILED, errors[0])
        if cinvalid and (not binvalid or not ctimes):
            # The time itself is not a measurement where the baseline's was: the benchmark broke,
            # whatever its valid repetitions say.
            why, n, of = _why_invalid(cont), len(cinvalid), len(cinvalid) + len(ctimes)
            why = said("invalid_times", clock=self.config.time, invalid=n, of=of, why=why,
                      base_invalid=binvalid)  # fmt: skip
            return unmeasured(INVALID, why)
        if not ctimes:
            return unmeasured(SKIPPED, skipped[0])
        # Disturbed repetitions are listed and left out of the judgement where the policy says
        # so; what remains is judged as any sample is.
        d = _disturbance(base, cont) if lists("contender", DISTURBED_ROW) else None
        if d is not None:
            base, cont = undisturbed(base), undisturbed(cont)
            if MEASURED not in base.status.values or MEASURED not in cont.status.values:
                return unmeasured(NOT_JUDGED_DISTURBED, d.why, d)
        metrics = self.metrics(base, cont, thresholds, key)
        notes = metrics[0].notes
        if self.reference and key not in self.divisors:
            notes.append("the only normalisation reference: no time/ref of its own")
        for what, messages in (("failed", errors), ("skipped", skipped)):
            if messages:
                notes.append(said("not_measured", n=len(messages), what=what, first=messages[0]))
        for side, invalid, frame in (("baseline", binvalid, base), ("contender", cinvalid, cont)):
            if invalid:
                why = _why_invalid(frame)
                notes.append(said("invalid_left_out", n=len(invalid), side=side, why=why))
        verdict, why = _overall(metrics), None
        if d is not None:
            for side in ("baseline", "contender"):
                n, of = getattr(d, f"{side}_disturbed"), getattr(d, f"{side}_measured")
                if n:
                    notes.append(said("disturbed_left_out", n=n, measured=of, side=side))
            enough = judgeable(d.baseline_measured, d.contender_measured, thresholds.alpha)
            if verdict == FEW and enough:
                # Enough repetitions were run; the machine took them. Not a sample-size problem.
                verdict, why = NOT_JUDGED_DISTURBED, d.why
        return Verdict(key, verdict, why, label, metrics, matched, d)


def _why_not_measured(group: pd.DataFrame) -> tuple[str, str]:
    """(kind, reason) of a baseline benchmark without a measurement."""
    for status, kind in ((FAILED, "failed_in_baseline"), (SKIPPED, "skipped_in_baseline")):
        if status in group.status.values:
            return kind, _values(group, status, "error")[0]
    return "invalid_in_baseline", f"no valid time ({_why_invalid(group)})"


def _divisors(
    config: CompareConfig, base: pd.DataFrame, cont: pd.DataFrame, common: list[str], path: str
) -> tuple[list[str], dict[str, tuple[float, float]], list[Said]]:
    """The normalisation of config "normalize": (the reference benchmarks, each benchmark's
    (baseline, contender) divisor, warnings). A divisor is the geometric mean of the reference
    benchmarks' median times on that side, leaving out the benchmark itself, so a regression in
    it cannot shrink its own normalised ratio; averaging several references makes the divisor
    steadier than any single median on a noisy machine."""
    if config.normalize is None:
        return [], {}, []
    pattern = config.normalize.reference
    if not any(pattern.search(k) for k in base.key[base.status == MEASURED]):
        raise UnusableInput(said("reference_unmatched", pattern=pattern.pattern, path=path))
    # A pattern whose benchmarks all fail, are missing or have no valid time in the contender
    # leaves the run without normalisation (a warning): those benchmarks fail or are listed on
    # their own, and the absolute comparison of every time still holds.
    refs = [k for k in common if pattern.search(k)]
    if not refs:
        return [], {}, [said("reference_not_common", pattern=pattern.pattern)]
    medians = [f[f.status == MEASURED].groupby("key").time.median()[refs] for f in (base, cont)]
    divisors = {
        key: tuple(statistics.geometric_mean(m.drop(key, errors="ignore")) for m in medians)
        for key in common
        if len(refs) > (key in refs)
    }
    return refs, divisors, []


def _reading_warnings(
    baseline: BenchReport,
    contender: BenchReport,
    frames: tuple[pd.DataFrame, pd.DataFrame],
    ambiguous: set[str],
    results: list[Verdict],
) -> list[Said]:
    """What the reader must know before trusting the table (one line each)."""
    base, cont = frames
    warnings = []
    sides = (("the baseline's", base), ("the contender's", cont))
    unknown = [side for side, f in sides if (f.conditions[f.status == MEASURED] == UNKNOWN).any()]
    if unknown and lists("contender", UNKNOWN_CONDITIONS):
        what = " and ".join(unknown) + " repetitions"
        warnings.append(said("unknown_conditions_note", what=what))
    if ambiguous:
        warnings.append(said("ambiguous_names", n=len(ambiguous)))
    # Different OpenBLAS kernels (OPENBLAS_CORETYPE, or another CPU): every CPU ratio then
    # compares two kernel sets, and can hide or fake a regression.
    bcore, ccore = openblas_core(baseline.context), openblas_core(contender.context)
    if bcore is not None and ccore is not None and bcore != ccore:
        warnings.append(said("openblas_cores", base=bcore, cont=ccore))
    with_invalid = set(base.key[base.status == INVALID]) | set(cont.key[cont.status == INVALID])

    def left_out(b: Verdict) -> bool:
        return any((m.base_invalid or m.cont_invalid) and m.verdict != INVALID for m in b.metrics)

    dropped = [b for b in results if b.metrics and (b.name in with_invalid or left_out(b))]
    if dropped:
        warnings.append(said("values_left_out", n=len(dropped)))
    return warnings


def compare_reports(
    baseline: BenchReport,
    contender: BenchReport,
    config: CompareConfig,
    counters: list[str] | None = None,
    allow_missing: bool = False,
) -> Judgement:
    """Judge two loaded reports. Raises UnusableInput when there is nothing to compare.

    allow_missing: a benchmark measured in the baseline and absent from the contender is listed,
    not failed (a run filtered on purpose). By default it fails the gate.
    """
    cut_off = check_files(baseline, contender)
    base, cont = _repetitions(baseline, config.time), _repetitions(contender, config.time)
    ambiguous = _key([base, cont])
    by_key = [dict(tuple(frame.groupby("key", sort=False))) for frame in (base, cont)]
    measured = sorted(set(base.key[base.status == MEASURED]), key=natural_key)
    in_cont = [k for k in measured if k in by_key[1]]
    if not in_cont:  # files that share nothing that can be compared are unusable input
        if not measured:
            raise UnusableInput(_nothing_measured(baseline, base))
        if MEASURED not in cont.status.values:
            raise UnusableInput(_nothing_measured(contender, cont))
        raise UnusableInput(said("no_common", baseline=baseline.path, contender=contender.path))
    common = [k for k in in_cont if MEASURED in by_key[1][k].status.values]  # they get ratios
    reference, divisors, warnings = _divisors(config, base, cont, common, baseline.path)

    # Exact counters (the work of an iteration) are checked whenever both sides carry them.
    chosen = list(config.counters if counters is None else counters)
    checked = chosen + [c for c in config.exact_counters if c not in chosen]
    judge = _Judge(config, checked, divisors, reference)
    results = [judge.benchmark(k, by_key[0][k], by_key[1][k]) for k in in_cont]
    warnings = [said("cut_off_lines", report=r) for r in (baseline, contender)] + warnings
    warnings += _reading_warnings(baseline, contender, (base, cont), ambiguous, results)
    unmeasured = sorted(set(by_key[0]) - set(measured), key=natural_key)
    by_reason = group_reasons(unmeasured, lambda key: _why_not_measured(by_key[0][key]))
    contexts = baseline.context, contender.context
    not_compared = [{"kind": kind, "reason": why, "names": keys} for (kind, why), keys in by_reason]
    found = dict(config=config, warnings=warnings, allow_missing=allow_missing, cut_off=cut_off)
    found |= dict(reference=reference, not_compared=not_compared)
    found["only_in_baseline"] = [k for k in measured if k not in by_key[1]]
    found["only_in_contender"] = sorted(set(by_key[1]) - set(by_key[0]), key=natural_key)
    found["hardware_differences"] = _context_differences(*contexts, HARDWARE_KEYS)
    found["environment_differences"] = _context_differences(*contexts, ENVIRONMENT_KEYS)
    return Judgement(baseline, contender, results, config.time, **found)
