"""The result of comparing two bench files: what the compare tool computes and every renderer reads.

`engine.compare_reports` builds a `CompareResult`; `render` turns it into terminal and Markdown
text, and `CompareResult.as_dict` into the --json output. Neither depends on the other.

The gate (`CompareResult.exit_code`), in order:

1. exit 1 when anything definitely failed: a benchmark slower beyond its threshold, one whose
   work changed (an exact counter), one that now fails with an error, one whose time (or a gating
   counter) is now NaN, infinite, zero or negative or absurd where the baseline's was valid, and
   a baseline benchmark missing from the contender (unless --allow-missing);
2. exit 2 when no benchmark could be judged because every compared one has too few repetitions
   for the U test to reach alpha ("cannot judge: ..."): that is not a pass;
3. exit 0 otherwise. Benchmarks with too few repetitions beside judged ones are listed as not
   judged (one grouped line), never counted as passing.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from ..benchjson import BenchReport
from ..cli import EXIT_OK, EXIT_REGRESSION, EXIT_UNUSABLE
from .config import CompareConfig
from .stats import CHANGED, FASTER, FEW, INVALID, NOISY, SAME, SLOWER, MetricResult

# Verdicts of a whole benchmark, besides the metric verdicts. ERROR: it ran in the baseline and
# now fails (fails the gate). SKIPPED: it ran in the baseline and now does not run on this
# machine (its error message starts with one of benchjson.SKIP_PREFIXES): listed, never failed.
ERROR, SKIPPED = "error", "skipped"


@dataclass
class NameGroup:
    """Benchmarks that share one reason (a skip message, "only in the contender", ...): the
    reason is said once, the names are listed once, and only where asked (--verbose, or a
    folded <details> block in the Markdown)."""

    kind: str
    reason: str
    names: list[str]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class BenchComparison:
    name: str
    label: str
    verdict: str
    metrics: list[MetricResult]
    overrides: list[str]
    error: str | None = None  # why it was not compared (ERROR, SKIPPED, INVALID without metrics)

    @property
    def fails(self) -> bool:
        return self.verdict in (ERROR, INVALID) or any(m.fails for m in self.metrics)

    @property
    def needed(self) -> int | None:
        """Repetitions a side that would let the U test judge it (verdict FEW)."""
        return max(
            (m.needed for m in self.metrics if m.gating and m.needed is not None), default=None
        )

    def metric(self, name: str) -> MetricResult | None:
        return next((m for m in self.metrics if m.metric == name), None)

    def as_dict(self) -> dict[str, Any]:
        return {
            **{key: getattr(self, key) for key in ("name", "label", "verdict", "fails", "error")},
            "repetitions_needed": self.needed if self.verdict == FEW else None,
            "overrides": list(self.overrides),
            "metrics": [m.as_dict() for m in self.metrics],
        }


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
    # Benchmarks not compared, one group per reason (failed or skipped in the baseline, ...).
    not_compared: list[NameGroup] = field(default_factory=list)

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
        return [b for b in self.benchmarks if b.verdict not in (FEW, SKIPPED)]

    @property
    def repetitions_needed(self) -> int | None:
        return max((b.needed for b in self.unjudged if b.needed is not None), default=None)

    @property
    def all_failed(self) -> bool:
        """Every compared benchmark now fails with an error (a run that broke as a whole)."""
        return bool(self.benchmarks) and all(b.verdict == ERROR for b in self.benchmarks)

    @property
    def cannot_judge(self) -> str | None:
        """The exit-2 reason when nothing failed and nothing could be judged, else None."""
        if self.failing or self.missing_fails or self.judged or not self.unjudged:
            return None
        reps, n = self.repetitions_needed, len(self.unjudged)
        return (
            f"cannot judge: {n} benchmark{'' if n == 1 else 's'} "
            f"{'has' if n == 1 else 'have'} fewer than {reps} repetitions; rerun with "
            f"--benchmark_repetitions={reps}"
        )

    @property
    def exit_code(self) -> int:
        if self.failing or self.missing_fails:
            return EXIT_REGRESSION
        return EXIT_OK if self.cannot_judge is None else EXIT_UNUSABLE

    def summary(self) -> dict[str, int]:
        verdicts = (SLOWER, FASTER, SAME, NOISY)
        return {
            "compared": len(self.benchmarks) - self.count(SKIPPED),
            "judged": len(self.judged),
            **{verdict: self.count(verdict) for verdict in verdicts},
            "not_enough_samples": self.count(FEW),
            **{verdict: self.count(verdict) for verdict in (CHANGED, INVALID, ERROR, SKIPPED)},
            "only_in_baseline": len(self.only_in_baseline),
            "only_in_contender": len(self.only_in_contender),
            "not_compared": sum(len(g.names) for g in self.not_compared),
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
            "summary": self.summary(),
            "benchmarks": [b.as_dict() for b in self.benchmarks],
            "only_in_baseline": self.only_in_baseline,
            "only_in_contender": self.only_in_contender,
            "not_compared": [g.as_dict() for g in self.not_compared],
            "warnings": self.warnings,
        }
        # NaN and infinity are not JSON: null, so every JSON parser can read the output.
        return json.loads(json.dumps(doc), parse_constant=lambda _: None)
