"""Compare two loaded bench files: the steps from two reports to a `CompareResult`.

Per benchmark (repetitions grouped by run_name; Google Benchmark's own aggregate rows are ignored
and everything is recomputed from the raw repetitions): median ratio, spread, Mann-Whitney U test
and a verdict (faster / slower / same / noisy / not enough samples), for the time and for chosen
counters. A repetition whose time is not a measurement (NaN, infinity, zero or negative, absurd)
is left out; when the contender has such repetitions and the baseline had none, the benchmark
fails as "invalid".
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable

from ..benchjson import BenchReport, BenchRow, group_reasons
from .config import CompareConfig
from .model import ERROR, SKIPPED, BenchComparison, CompareResult, NameGroup
from .stats import CHANGED, FASTER, FEW, INVALID, NOISY, SAME, SLOWER, MetricResult
from .stats import compare_metric, describe_invalid, plausible_time

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


Clock = Callable[[BenchRow], float]


@dataclass
class Group:
    """The repetitions of one benchmark in one file."""

    label: str
    rows: list[BenchRow] = field(default_factory=list)  # measured, with a plausible time
    errors: list[str] = field(default_factory=list)  # messages of failed repetitions
    skipped: list[str] = field(default_factory=list)  # messages of repetitions that did not run
    invalid: list[float] = field(default_factory=list)  # implausible times (NaN, <= 0, ...)


def _group(report: BenchReport, ambiguous: set[str], clock: Clock) -> dict[str, Group]:
    """Repetitions of each benchmark, keyed by run_name.

    A run_name that appears with different labels (two registrations that happen to print the
    same name, e.g. a square and an MLP-layer GEMM of equal size) would mix two benchmarks into
    one sample; those are keyed "run_name [label]" instead.
    """
    groups: dict[str, Group] = {}
    for row in report.rows:
        if row.run_type != "iteration":
            continue  # mean/median/stddev/cv aggregates: recomputed from the repetitions
        key = f"{row.run_name} [{row.label}]" if row.run_name in ambiguous else row.run_name
        group = groups.setdefault(key, Group(row.label))
        if row.error is not None:
            (group.skipped if row.skipped else group.errors).append(row.error)
        elif row.invalid is not None or not plausible_time(clock(row)):
            group.invalid.append(clock(row))
        else:
            group.rows.append(row)
    return groups


def _ambiguous_names(*reports: BenchReport) -> set[str]:
    out: set[str] = set()
    for report in reports:
        labels: dict[str, set[str]] = {}
        for row in (r for r in report.rows if r.run_type == "iteration"):
            labels.setdefault(row.run_name, set()).add(row.label)
        out |= {name for name, seen in labels.items() if len(seen) > 1}
    return out


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


def _nothing_measured(report: BenchReport, groups: dict[str, Group]) -> str:
    """Why a file has no benchmark to compare: the one line for UsageError."""
    if report.rows and all(row.run_type == "aggregate" for row in report.rows):
        return (
            f"{report.path}: only aggregate rows (written with "
            "--benchmark_report_aggregates_only); rerun without it so the repetitions can be "
            "compared"
        )
    invalid = [v for g in groups.values() for v in g.invalid]
    if invalid:
        return (
            f"{report.path}: no benchmark with a valid time to compare ({len(invalid)} "
            f"repetitions with times that are not measurements: {describe_invalid(invalid)})"
        )
    return f"{report.path}: no successfully measured benchmark to compare"


def natural_key(name: str) -> list[Any]:
    """Sort m:64 before m:256: repetitions may be interleaved, so file order means nothing."""
    return [(0, int(tok), "") if tok.isdigit() else (1, 0, tok) for tok in re.split(r"(\d+)", name)]


def _overall(metrics: list[MetricResult]) -> str:
    """One verdict per benchmark: a gating failure anywhere wins (invalid values, slower,
    changed work), then "not enough samples" (no other verdict is possible), speed-up, noise."""
    gating = {m.verdict for m in metrics if m.gating}
    time_like = {m.verdict for m in metrics if m.gating and m.metric in ("time", "time/ref")}
    first = [v for v in (INVALID, SLOWER, CHANGED, FEW, FASTER) if v in gating]
    return first[0] if first else NOISY if NOISY in time_like else SAME


@dataclass
class _Reference:
    """The benchmarks whose times normalise the others (config "normalize"), with their median
    times on each side."""

    base: dict[str, float] = field(default_factory=dict)
    cont: dict[str, float] = field(default_factory=dict)

    def divisor(self, key: str) -> tuple[float, float] | None:
        """(baseline, contender) divisor for one benchmark: geometric mean of the reference
        medians. The benchmark itself is left out of its own divisor, so a regression in it
        cannot shrink its own normalised ratio; averaging several references makes the divisor
        steadier than any single benchmark's median on a noisy machine."""
        others = [r for r in self.base if r != key]
        if not others:
            return None
        mean = statistics.geometric_mean
        return mean(self.base[r] for r in others), mean(self.cont[r] for r in others)


def _compare_benchmark(
    key: str,
    bgroup: Group,
    cgroup: Group,
    config: CompareConfig,
    counters: list[str],
    reference: _Reference,
    clock: Clock,
) -> BenchComparison:
    """One benchmark measured in the baseline: time, time/ref and counters."""
    thresholds, matched = config.thresholds_for(key)

    def unmeasured(verdict: str, why: str) -> BenchComparison:
        return BenchComparison(key, bgroup.label, verdict, [], matched, why)

    if cgroup.errors and not cgroup.rows:
        return unmeasured(ERROR, cgroup.errors[0])
    if cgroup.invalid and (not bgroup.invalid or not cgroup.rows):
        # The time itself is not a measurement (NaN, infinity, <= 0, absurd) where the
        # baseline's was: the benchmark broke, whatever its valid repetitions say.
        total = len(cgroup.invalid) + len(cgroup.rows)
        return unmeasured(
            INVALID,
            f"{config.time}: {len(cgroup.invalid)} of {total} repetitions are not a valid time "
            f"({describe_invalid(cgroup.invalid)})"
            + ("" if bgroup.invalid else "; the baseline's times were all valid"),
        )
    if not cgroup.rows:
        return unmeasured(SKIPPED, cgroup.skipped[0])
    btimes, ctimes = [clock(r) for r in bgroup.rows], [clock(r) for r in cgroup.rows]
    metrics = [compare_metric("time", "lower", btimes, ctimes, thresholds, True, plausible_time)]
    divisor = reference.divisor(key)
    if divisor is not None and config.normalize is not None:
        bnorm, cnorm = [t / divisor[0] for t in btimes], [t / divisor[1] for t in ctimes]
        metrics.append(
            compare_metric("time/ref", "lower", bnorm, cnorm, config.normalize.thresholds)
        )
    for counter in counters:
        bvals = [r.counters[counter] for r in bgroup.rows if counter in r.counters]
        cvals = [r.counters[counter] for r in cgroup.rows if counter in r.counters]
        if not bvals or not cvals:
            continue  # a counter this benchmark does not have (e.g. t_epoch on a GEMM)
        better = config.direction(counter)
        # Exact counters cannot be noisy, so they always gate; timing-derived ones only
        # when the config says so (they carry the same noise as the time itself).
        gating = better == "exact" or config.gate_counters
        metrics.append(compare_metric(counter, better, bvals, cvals, thresholds, gating))
    notes = metrics[0].notes
    if reference.base and divisor is None:
        notes.append("the only normalisation reference: no time/ref of its own")
    for what, messages in (("failed", cgroup.errors), ("skipped", cgroup.skipped)):
        if messages:
            notes.append(f"{len(messages)} repetition(s) {what} in the contender: {messages[0]}")
    for side, group in (("baseline", bgroup), ("contender", cgroup)):
        if group.invalid:
            notes.append(
                f"{len(group.invalid)} repetition(s) in the {side} without a valid time "
                f"({describe_invalid(group.invalid)}): left out"
            )
    return BenchComparison(key, bgroup.label, _overall(metrics), metrics, matched)


def _why_not_measured(group: Group) -> tuple[str, str]:
    """(kind, reason) of a baseline benchmark without a measurement."""
    if group.errors:
        return "failed_in_baseline", group.errors[0]
    if group.skipped:
        return "skipped_in_baseline", group.skipped[0]
    return "invalid_in_baseline", f"no valid time ({describe_invalid(group.invalid)})"


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

    def clock(row: BenchRow) -> float:
        return row.cpu_time_s if config.time == "cpu_time" else row.real_time_s

    # Step 1: both files' repetitions grouped by benchmark, keyed the same way on both sides.
    ambiguous = _ambiguous_names(baseline, contender)
    base, cont = _group(baseline, ambiguous, clock), _group(contender, ambiguous, clock)
    measured = sorted((k for k, g in base.items() if g.rows), key=natural_key)
    common = [k for k in measured if k in cont and cont[k].rows]  # they get ratios

    # Step 2: files that share nothing that can be compared are unusable input.
    if not any(k in cont for k in measured):
        if not measured:
            raise UsageError(_nothing_measured(baseline, base))
        if not any(g.rows for g in cont.values()):
            raise UsageError(_nothing_measured(contender, cont))
        raise UsageError(
            f"no common benchmarks: {baseline.path} and {contender.path} share no benchmark name"
        )
    warnings = list(baseline.warnings) + list(contender.warnings)

    # Step 3: the reference benchmarks of config "normalize". A pattern that matches nothing
    # measured in the baseline does not fit these files; one whose benchmarks all fail, are
    # missing or have no valid time in the contender leaves the run without normalisation (a
    # warning): those benchmarks fail or are listed on their own, and the absolute comparison
    # of every time still holds.
    reference = _Reference()
    if config.normalize is not None:
        pattern = config.normalize.reference
        if not any(pattern.search(k) for k in measured):
            raise UsageError(
                f"normalize.reference {pattern.pattern!r} matches no benchmark measured in "
                f"{baseline.path}"
            )
        for key in (k for k in common if pattern.search(k)):
            reference.base[key] = statistics.median(clock(r) for r in base[key].rows)
            reference.cont[key] = statistics.median(clock(r) for r in cont[key].rows)
        if not reference.base:
            warnings.append(
                f"normalize.reference {pattern.pattern!r} matches no benchmark measured in both "
                "files: times are not normalised (time / reference is not compared)"
            )

    # Step 4: one comparison per benchmark measured in the baseline. Exact counters (the work
    # of an iteration) are checked whenever both sides carry them.
    chosen = list(config.counters if counters is None else counters)
    checked = chosen + [c for c in config.exact_counters if c not in chosen]
    results = [
        _compare_benchmark(key, base[key], cont[key], config, checked, reference, clock)
        for key in measured
        if key in cont
    ]

    # Step 5: what the reader must know before trusting the table (one line each).
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
    dropped = [
        b
        for b in results
        if b.metrics
        and (
            base[b.name].invalid
            or cont[b.name].invalid
            or any((m.base_invalid or m.cont_invalid) and m.verdict != INVALID for m in b.metrics)
        )
    ]
    if dropped:
        warnings.append(
            f"{len(dropped)} benchmark(s) have values that are not measurements (NaN, infinity, "
            "a time <= 0, an absurd magnitude) that were left out of the comparison (see the "
            "notes)"
        )
    # Benchmarks of the baseline without a measurement there: one group per reason.
    unmeasured = [key for key in sorted(base, key=natural_key) if not base[key].rows]
    by_reason = group_reasons(unmeasured, lambda key: _why_not_measured(base[key]))
    contexts = baseline.context, contender.context
    return CompareResult(
        baseline=baseline,
        contender=contender,
        config=config,
        benchmarks=results,
        only_in_baseline=[k for k in measured if k not in cont],
        only_in_contender=sorted((k for k in cont if k not in base), key=natural_key),
        hardware_differences=_context_differences(*contexts, HARDWARE_KEYS),
        environment_differences=_context_differences(*contexts, ENVIRONMENT_KEYS),
        warnings=warnings,
        allow_missing=allow_missing,
        reference=list(reference.base),
        not_compared=[NameGroup(kind, why, keys) for (kind, why), keys in by_reason],
    )
