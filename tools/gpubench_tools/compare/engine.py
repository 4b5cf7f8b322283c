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
from typing import Any, Callable, Sequence

from ..benchjson import BenchReport, BenchRow, group_reasons
from .config import CompareConfig
from .model import ERROR, SKIPPED, BenchComparison, CompareResult, NameGroup
from .stats import (
    CHANGED,
    FASTER,
    FEW,
    INVALID,
    NOISY,
    SAME,
    SLOWER,
    MetricResult,
    compare_metric,
    describe_invalid,
    plausible_time,
)

__all__ = [
    "HARDWARE_KEYS",
    "ENVIRONMENT_KEYS",
    "UsageError",
    "compare_reports",
    "natural_key",
    "openblas_core",
]

# Context keys that name the hardware: if they differ, ratios compare machines, not code.
HARDWARE_KEYS: tuple[str, ...] = (
    "cpu_model",
    "cpu_logical_cpus",
    "gpu",
    "gpu_compute_capability",
    "gpu_sm_count",
    "gpu_memory_bytes",
)
# Context keys that change results without being hardware: shown, not shouted.
ENVIRONMENT_KEYS: tuple[str, ...] = (
    "openblas_config",
    "openblas_coretype_env",
    "gpubench_cuda_build",
    "cuda_driver_version",
    "cuda_runtime_version",
    "cublas_version",
    "gpu_sm_clock_hz",
    "gpubench_sweep",
    "library_build_type",
)


class UsageError(Exception):
    """Input that cannot be compared (exit 2). str() is the one line printed on stderr."""


Clock = Callable[[BenchRow], float]


@dataclass
class Group:
    """The repetitions of one benchmark in one file."""

    key: str
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
        group = groups.setdefault(key, Group(key=key, label=row.label))
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
        for row in report.rows:
            if row.run_type == "iteration":
                labels.setdefault(row.run_name, set()).add(row.label)
        out |= {name for name, seen in labels.items() if len(seen) > 1}
    return out


def _context_differences(
    base: dict[str, Any], cont: dict[str, Any], keys: Sequence[str]
) -> list[tuple[str, str, str]]:
    out = []
    for key in keys:
        b, c = base.get(key), cont.get(key)
        if b is None and c is None:
            continue
        if str(b) != str(c):
            out.append(
                (key, "(absent)" if b is None else str(b), "(absent)" if c is None else str(c))
            )
    return out


def openblas_core(context: dict[str, Any]) -> str | None:
    """The OpenBLAS kernel set a run used: `core=X` at the end of openblas_get_config()."""
    match = re.search(r"\bcore=(\S+)", str(context.get("openblas_config", "")))
    return match.group(1) if match else None


def _openblas_kernel_change(base: dict[str, Any], cont: dict[str, Any]) -> str | None:
    """A warning when the two runs used different OpenBLAS kernels (OPENBLAS_CORETYPE, or another
    CPU): every CPU ratio then compares two kernel sets, and can hide or fake a regression."""
    b, c = openblas_core(base), openblas_core(cont)
    if b is None or c is None or b == c:
        return None
    return (
        f"OpenBLAS ran different kernels: core={b} in the baseline, core={c} in the contender; "
        f"CPU ratios compare the two kernel sets, not the code (set OPENBLAS_CORETYPE={b} to "
        "measure like the baseline)"
    )


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
    gating = [m for m in metrics if m.gating]
    for verdict in (INVALID, SLOWER, CHANGED):
        if any(m.verdict == verdict for m in gating):
            return verdict
    if any(m.verdict == FEW for m in gating):
        return FEW
    time_like = [m for m in gating if m.metric in ("time", "time/ref")]
    if any(m.verdict == FASTER for m in gating):
        return FASTER
    if any(m.verdict == NOISY for m in time_like):
        return NOISY
    return SAME


@dataclass
class _Sides:
    """The repetitions of every benchmark in both files, keyed the same way on both sides."""

    baseline: BenchReport
    contender: BenchReport
    base: dict[str, Group]
    cont: dict[str, Group]
    ambiguous: set[str]

    @property
    def base_measured(self) -> list[str]:
        """Benchmarks with at least one measured repetition in the baseline, in natural order."""
        return sorted((k for k, g in self.base.items() if g.rows), key=natural_key)

    @property
    def common(self) -> list[str]:
        """Measured on both sides: the benchmarks that get ratios."""
        return [k for k in self.base_measured if self.cont.get(k) and self.cont[k].rows]


def _group_sides(baseline: BenchReport, contender: BenchReport, clock: Clock) -> _Sides:
    """Step 1: group both files' repetitions by benchmark."""
    ambiguous = _ambiguous_names(baseline, contender)
    return _Sides(
        baseline,
        contender,
        _group(baseline, ambiguous, clock),
        _group(contender, ambiguous, clock),
        ambiguous,
    )


def _check_comparable(sides: _Sides) -> None:
    """Step 2: raise UsageError when the files share nothing that can be compared."""
    base_ok = sides.base_measured
    newly_failing = [k for k in base_ok if k in sides.cont and not sides.cont[k].rows]
    if sides.common or newly_failing:
        return
    if not base_ok:
        raise UsageError(_nothing_measured(sides.baseline, sides.base))
    if not any(g.rows for g in sides.cont.values()):
        raise UsageError(_nothing_measured(sides.contender, sides.cont))
    raise UsageError(
        f"no common benchmarks: {sides.baseline.path} and {sides.contender.path} share no "
        "benchmark name"
    )


@dataclass
class _Reference:
    """The benchmarks whose times normalise the others (config "normalize"), with their median
    times on each side."""

    keys: list[str]
    base: dict[str, float]
    cont: dict[str, float]

    def divisor(self, key: str) -> tuple[float, float] | None:
        """(baseline, contender) divisor for one benchmark: geometric mean of the reference
        medians.

        The benchmark itself is left out of its own divisor, so a regression in it cannot shrink
        its own normalised ratio; averaging several references makes the divisor steadier than
        any single benchmark's median on a noisy machine.
        """
        others = [r for r in self.keys if r != key]
        if not others:
            return None
        mean = statistics.geometric_mean
        return mean(self.base[r] for r in others), mean(self.cont[r] for r in others)


def _normalisation_reference(
    sides: _Sides, config: CompareConfig, clock: Clock, warnings: list[str]
) -> _Reference:
    """Step 3: the reference benchmarks of config "normalize" (none without it).

    A pattern that matches no benchmark measured in the baseline does not fit these files
    (UsageError). One whose benchmarks all fail, are missing or have no valid time in the
    contender leaves the run without normalisation (a warning): those benchmarks fail or are
    listed on their own, and the absolute comparison of every time still holds.
    """
    reference = _Reference([], {}, {})
    if config.normalize is None:
        return reference
    pattern = config.normalize.reference
    if not any(pattern.search(k) for k in sides.base_measured):
        raise UsageError(
            f"normalize.reference {pattern.pattern!r} matches no benchmark measured in "
            f"{sides.baseline.path}"
        )
    for key in sides.common:
        if not pattern.search(key):
            continue
        reference.keys.append(key)
        reference.base[key] = statistics.median(clock(r) for r in sides.base[key].rows)
        reference.cont[key] = statistics.median(clock(r) for r in sides.cont[key].rows)
    if not reference.keys:
        warnings.append(
            f"normalize.reference {pattern.pattern!r} matches no benchmark measured in both "
            "files: times are not normalised (time / reference is not compared)"
        )
    return reference


def _compare_benchmark(
    key: str,
    bgroup: Group,
    cgroup: Group,
    config: CompareConfig,
    counters: list[str],
    reference: _Reference,
    clock: Callable[[BenchRow], float],
) -> BenchComparison:
    """Step 4, for one benchmark measured in the baseline: time, time/ref and counters."""
    thresholds, matched = config.thresholds_for(key)
    if cgroup.errors and not cgroup.rows:
        return BenchComparison(key, bgroup.label, ERROR, [], matched, cgroup.errors[0])
    if cgroup.invalid and (not bgroup.invalid or not cgroup.rows):
        # The time itself is not a measurement (NaN, infinity, <= 0, absurd) where the
        # baseline's was: the benchmark broke, whatever its valid repetitions say.
        total = len(cgroup.invalid) + len(cgroup.rows)
        why = (
            f"{config.time}: {len(cgroup.invalid)} of {total} repetitions are not a valid time "
            f"({describe_invalid(cgroup.invalid)})"
            + ("" if bgroup.invalid else "; the baseline's times were all valid")
        )
        return BenchComparison(key, bgroup.label, INVALID, [], matched, why)
    if not cgroup.rows:
        return BenchComparison(key, bgroup.label, SKIPPED, [], matched, cgroup.skipped[0])
    btimes = [clock(r) for r in bgroup.rows]
    ctimes = [clock(r) for r in cgroup.rows]
    metrics = [compare_metric("time", "lower", btimes, ctimes, thresholds, True, plausible_time)]
    divisor = reference.divisor(key)
    if divisor is not None and config.normalize is not None:
        metrics.append(
            compare_metric(
                "time/ref",
                "lower",
                [t / divisor[0] for t in btimes],
                [t / divisor[1] for t in ctimes],
                config.normalize.thresholds,
            )
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
    if reference.keys and divisor is None:
        metrics[0].notes.append("the only normalisation reference: no time/ref of its own")
    if cgroup.errors:
        metrics[0].notes.append(
            f"{len(cgroup.errors)} repetition(s) failed in the contender: {cgroup.errors[0]}"
        )
    if cgroup.skipped:
        metrics[0].notes.append(
            f"{len(cgroup.skipped)} repetition(s) skipped in the contender: {cgroup.skipped[0]}"
        )
    for side, group in (("baseline", bgroup), ("contender", cgroup)):
        if group.invalid:
            metrics[0].notes.append(
                f"{len(group.invalid)} repetition(s) in the {side} without a valid time "
                f"({describe_invalid(group.invalid)}): left out"
            )
    return BenchComparison(key, bgroup.label, _overall(metrics), metrics, matched)


def _run_warnings(sides: _Sides, results: list[BenchComparison], warnings: list[str]) -> None:
    """Step 5: what the reader must know before trusting the table (one line each)."""
    if sides.ambiguous:
        warnings.append(
            f"{len(sides.ambiguous)} benchmark name(s) are used by benchmarks with different "
            "labels; they are compared as 'name [label]'"
        )
    kernel_change = _openblas_kernel_change(sides.baseline.context, sides.contender.context)
    if kernel_change:
        warnings.append(kernel_change)
    dropped = [
        b.name
        for b in results
        if b.metrics
        and (
            sides.base[b.name].invalid
            or sides.cont[b.name].invalid
            or any((m.base_invalid or m.cont_invalid) and m.verdict != INVALID for m in b.metrics)
        )
    ]
    if dropped:
        warnings.append(
            f"{len(dropped)} benchmark(s) have values that are not measurements (NaN, infinity, "
            "a time <= 0, an absurd magnitude) that were left out of the comparison (see the "
            "notes)"
        )


def _why_not_measured(group: Group) -> tuple[str, str]:
    """(kind, reason) of a baseline benchmark without a measurement."""
    if group.errors:
        return "failed_in_baseline", group.errors[0]
    if group.skipped:
        return "skipped_in_baseline", group.skipped[0]
    return "invalid_in_baseline", f"no valid time ({describe_invalid(group.invalid)})"


def _not_compared(sides: _Sides) -> list[NameGroup]:
    """Benchmarks of the baseline without a measurement there: one group per reason."""
    unmeasured = [key for key in sorted(sides.base, key=natural_key) if not sides.base[key].rows]
    return [
        NameGroup(kind, reason, keys)
        for (kind, reason), keys in group_reasons(
            unmeasured, lambda key: _why_not_measured(sides.base[key])
        )
    ]


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

    sides = _group_sides(baseline, contender, clock)
    _check_comparable(sides)
    warnings = list(baseline.warnings) + list(contender.warnings)
    reference = _normalisation_reference(sides, config, clock, warnings)
    chosen = list(config.counters if counters is None else counters)
    # Exact counters (the work of an iteration) are checked whenever both sides carry them.
    checked = chosen + [c for c in config.exact_counters if c not in chosen]
    results = [
        _compare_benchmark(key, sides.base[key], sides.cont[key], config, checked, reference, clock)
        for key in sides.base_measured
        if key in sides.cont
    ]
    _run_warnings(sides, results, warnings)
    return CompareResult(
        baseline=baseline,
        contender=contender,
        config=config,
        benchmarks=results,
        only_in_baseline=[k for k in sides.base_measured if k not in sides.cont],
        only_in_contender=sorted((k for k in sides.cont if k not in sides.base), key=natural_key),
        hardware_differences=_context_differences(
            baseline.context, contender.context, HARDWARE_KEYS
        ),
        environment_differences=_context_differences(
            baseline.context, contender.context, ENVIRONMENT_KEYS
        ),
        warnings=warnings,
        allow_missing=allow_missing,
        reference=reference.keys,
        not_compared=_not_compared(sides),
    )
