"""The result of comparing two bench files: what the compare tool computes and every renderer reads.

`engine.compare_reports` builds a `CompareResult`; `render` turns it into terminal and Markdown
text, and `CompareResult.as_dict` into the --json output. Neither depends on the other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..benchjson import BenchReport
from .config import CompareConfig
from .stats import CHANGED, FASTER, NOISY, SAME, SLOWER, MetricResult

__all__ = [
    "ERROR",
    "SKIPPED",
    "EXIT_OK",
    "EXIT_REGRESSION",
    "EXIT_UNUSABLE",
    "BenchComparison",
    "CompareResult",
]

EXIT_OK = 0
EXIT_REGRESSION = 1
EXIT_UNUSABLE = 2

# Verdicts of a whole benchmark, besides the metric verdicts. ERROR: it ran in the baseline and
# now fails (fails the gate). SKIPPED: it ran in the baseline and now does not fit on the machine
# (its error message starts with one of benchjson.SKIP_PREFIXES): listed, never failed.
ERROR = "error"
SKIPPED = "skipped"


@dataclass
class BenchComparison:
    name: str
    label: str
    verdict: str
    metrics: list[MetricResult]
    overrides: list[str]
    error: str | None = None  # the contender's error message (verdict ERROR or SKIPPED)

    @property
    def fails(self) -> bool:
        return self.verdict == ERROR or any(m.fails for m in self.metrics)

    def metric(self, name: str) -> MetricResult | None:
        return next((m for m in self.metrics if m.metric == name), None)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "label": self.label,
            "verdict": self.verdict,
            "fails": self.fails,
            "error": self.error,
            "overrides": list(self.overrides),
            "metrics": [m.as_dict() for m in self.metrics],
        }


@dataclass
class CompareResult:
    baseline: BenchReport
    contender: BenchReport
    config: CompareConfig
    benchmarks: list[BenchComparison]
    only_in_baseline: list[str]
    only_in_contender: list[str]
    hardware_differences: list[tuple[str, str, str]]
    environment_differences: list[tuple[str, str, str]]
    warnings: list[str]
    fail_on_missing: bool
    # The benchmarks whose times normalise the others (config "normalize"), empty without one.
    reference: list[str] = field(default_factory=list)

    def count(self, verdict: str) -> int:
        return sum(1 for b in self.benchmarks if b.verdict == verdict)

    @property
    def failing(self) -> list[BenchComparison]:
        return [b for b in self.benchmarks if b.fails]

    @property
    def exit_code(self) -> int:
        if self.failing or (self.fail_on_missing and self.only_in_baseline):
            return EXIT_REGRESSION
        return EXIT_OK

    def summary(self) -> dict[str, int]:
        return {
            "compared": len(self.benchmarks) - self.count(SKIPPED),
            "slower": self.count(SLOWER),
            "faster": self.count(FASTER),
            "same": self.count(SAME),
            "noisy": self.count(NOISY),
            "changed": self.count(CHANGED),
            "error": self.count(ERROR),
            "skipped": self.count(SKIPPED),
            "only_in_baseline": len(self.only_in_baseline),
            "only_in_contender": len(self.only_in_contender),
            "failing": len(self.failing),
        }

    def as_dict(self) -> dict[str, Any]:
        def side(report: BenchReport) -> dict[str, Any]:
            ctx = report.context
            return {
                "path": report.path,
                "git_commit": ctx.get("gpubench_git_commit"),
                "date": ctx.get("date"),
                "host_name": ctx.get("host_name"),
                "cpu_model": ctx.get("cpu_model"),
                "gpu": ctx.get("gpu"),
                "recovered_from_truncation": report.recovered_from_truncation,
            }

        diff = [{"key": k, "baseline": b, "contender": c} for k, b, c in self.hardware_differences]
        env = [
            {"key": k, "baseline": b, "contender": c} for k, b, c in self.environment_differences
        ]
        return _json_safe(
            {
                "schema": "gpubench-compare/1",
                "exit_code": self.exit_code,
                "baseline": side(self.baseline),
                "contender": side(self.contender),
                "hardware_differs": bool(self.hardware_differences),
                "hardware_differences": diff,
                "environment_differences": env,
                "time": self.config.time,
                "normalize_reference": self.reference,
                "config": self.config.as_dict(),
                "fail_on_missing": self.fail_on_missing,
                "summary": self.summary(),
                "benchmarks": [b.as_dict() for b in self.benchmarks],
                "only_in_baseline": self.only_in_baseline,
                "only_in_contender": self.only_in_contender,
                "warnings": self.warnings,
            }
        )


def _json_safe(value: Any) -> Any:
    """NaN and infinity are not JSON: write null so every JSON parser can read the output."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value
