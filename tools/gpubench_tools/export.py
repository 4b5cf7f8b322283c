"""`gpubench-export`: one number per benchmark, in the formats CI dashboards read.

    gpubench-export --format github-action-benchmark run.json --out gab.json
    gpubench-export --format bencher run.json --out bmf.json

docs/history.md ("Exports for CI dashboards") gives both formats and every rule. In short: the
value is the median of a benchmark's repetition rows and the range their extremes (aggregate rows
only for a benchmark that has nothing else); failed and skipped rows are dropped, told once per
file and reason, because a failed row has real_time 0, which a dashboard would draw as infinitely
fast; a file with invalid rows is not exported, because a dashboard must not draw a corrupt
number; NaN and Infinity are never written. Exit status: 0 written, 2 unusable input.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from dataclasses import dataclass
from typing import Any, Sequence

from .benchjson import BenchJsonError, BenchReport, BenchRow, group_reasons
from .cli import EXIT_OK, UnusableInput, add_debug_flag, program_name, run_main
from .timing import add_time_option, compile_filter, load_sound_report, not_measured_reason
from .timing import row_time_s, time_source
from .units import fmt_time

__all__ = [
    "FORMATS",
    "ExportError",
    "Summary",
    "main",
    "Dropped",
    "summarise",
    "to_bencher",
    "to_github_action_benchmark",
]

FORMATS: tuple[str, ...] = ("github-action-benchmark", "bencher")
UNIT_SCALE: dict[str, float] = {"ns": 1e9, "us": 1e6, "ms": 1e3, "s": 1.0}
BENCHER_MEASURE = "latency"  # Bencher's built-in measure for a time, in nanoseconds

# Aggregates that stand for the whole benchmark, in order of preference, when a file holds only
# aggregates (--benchmark_report_aggregates_only). stddev and cv are spreads, not times.
_AGGREGATE_VALUES: tuple[str, ...] = ("median", "mean")


class ExportError(Exception):
    """Input that cannot be exported. str() is the one line printed on stderr."""


@dataclass(frozen=True)
class Summary:
    """The one number of a benchmark, in seconds, and where it came from."""

    name: str
    value_s: float
    min_s: float | None  # None with a single repetition or only an aggregate row
    max_s: float | None
    repetitions: int  # rows the value is the median of; 0 for an aggregate row
    clock: str  # "real_time" or "cpu_time"

    @property
    def origin(self) -> str:
        n = self.repetitions
        what = {0: "Google Benchmark aggregate", 1: "one repetition"}.get(n)
        return f"{what or f'median of {n} repetitions'}, {self.clock}"


@dataclass(frozen=True)
class Dropped:
    """Rows of one benchmark that were dropped for one reason."""

    path: str
    name: str
    reason: str
    rows: int  # rows dropped for this reason
    of_rows: int  # rows of the benchmark
    exported: bool  # False: nothing of the benchmark was left to export


def describe_dropped(dropped: list[Dropped], verbose: bool = False) -> list[str]:
    """One line per file and reason; with `verbose`, one more line per benchmark."""
    lines: list[str] = []
    for (path, reason), items in group_reasons(dropped, lambda d: (d.path, d.reason)):
        rows, n = sum(d.rows for d in items), len(items)
        gone = sum(not d.exported for d in items)
        text = f"{path}: {rows} row{'' if rows == 1 else 's'} dropped ({reason})"
        if n == 1:
            lines.append(text + f": {items[0].name}" + ("; not exported" if gone else ""))
            continue
        if gone == n:
            text += f"; {n} benchmarks not exported"
        else:
            text += f" of {n} benchmarks, {gone} of them left with nothing to export"
        lines.append(text + ("" if verbose else " (--verbose lists them)"))
        if verbose:
            lines += [
                f"  {d.name}: {d.rows} of {d.of_rows} rows"
                + ("" if d.exported else "; not exported")
                for d in items
            ]
    return lines


def _usable(value: float) -> bool:
    return math.isfinite(value) and value > 0


def summarise(report: BenchReport, time: str = "auto") -> tuple[list[Summary], list[str]]:
    """One Summary per benchmark of the report (in file order), and warnings for what was dropped
    (one line per reason, see describe_dropped)."""
    summaries, dropped, warnings = summarise_rows(report, time)
    return summaries, describe_dropped(dropped) + warnings


def summarise_rows(
    report: BenchReport, time: str = "auto"
) -> tuple[list[Summary], list[Dropped], list[str]]:
    """One Summary per benchmark of the report (in file order), the dropped rows, and warnings
    for benchmarks without a usable time."""
    # benchmark name (in file order) -> its iteration rows, and its aggregate rows by kind
    iterations: dict[str, list[BenchRow]] = {}
    aggregates: dict[str, dict[str, BenchRow]] = {}
    for row in report.rows:
        rows = iterations.setdefault(row.run_name, [])
        if row.run_type != "aggregate":
            rows.append(row)
        elif row.aggregate_name is not None:
            aggregates.setdefault(row.run_name, {})[row.aggregate_name] = row

    summaries: list[Summary] = []
    warnings: list[str] = []
    all_dropped: list[Dropped] = []
    for name, rows in iterations.items():
        reasons = [not_measured_reason(r) for r in rows]
        measured = [r for r, reason in zip(rows, reasons) if reason is None]
        values = [v for v in (row_time_s(r, time) for r in measured) if _usable(v)]
        dropped = [reason for reason in reasons if reason is not None]
        all_dropped += [
            Dropped(report.path, name, why, dropped.count(why), len(rows), bool(values))
            for why in dict.fromkeys(dropped)
        ]
        if values:
            # One repetition has no spread: leave the range out rather than claim it is zero.
            low, high = (min(values), max(values)) if len(values) > 1 else (None, None)
            clock = time_source(measured[0], time)
            summaries.append(
                Summary(name, statistics.median(values), low, high, len(values), clock)
            )
            continue
        summary = None if rows else _from_aggregate(name, aggregates.get(name, {}), time)
        if summary is not None:
            summaries.append(summary)
        elif not dropped:
            warnings.append(f"{report.path}: {name}: no usable time, not exported")
    return summaries, all_dropped, warnings


def _from_aggregate(name: str, rows: dict[str, BenchRow], time: str) -> Summary | None:
    for row in filter(None, (rows.get(kind) for kind in _AGGREGATE_VALUES)):
        value = row_time_s(row, time)
        if row.error is None and _usable(value):
            return Summary(name, value, None, None, 0, time_source(row, time))
    return None


def _sig(x: float) -> float:
    """Six significant digits: the repetitions do not agree any closer than that."""
    return float(f"{x:.6g}")


def to_github_action_benchmark(summaries: list[Summary], unit: str = "ns") -> list[dict[str, Any]]:
    scale = UNIT_SCALE[unit]
    entries: list[dict[str, Any]] = []
    for s in summaries:
        entry: dict[str, Any] = {"name": s.name, "unit": unit, "value": _sig(s.value_s * scale)}
        extra = s.origin
        if s.min_s is not None and s.max_s is not None:
            # github-action-benchmark reads a range as "± <number>" (and rescales it when the
            # unit changes), so the range is the half-width that covers the slowest and the
            # fastest repetition; the exact extremes go into `extra`.
            half_width = max(s.max_s - s.value_s, s.value_s - s.min_s)
            entry["range"] = f"± {_sig(half_width * scale)!r}"
            extra += f"; min {fmt_time(s.min_s, 4)}, max {fmt_time(s.max_s, 4)}"
        entry["extra"] = extra
        entries.append(entry)
    return entries


def to_bencher(summaries: list[Summary]) -> dict[str, dict[str, dict[str, float]]]:
    scale = UNIT_SCALE["ns"]
    out: dict[str, dict[str, dict[str, float]]] = {}
    for s in summaries:
        metric = {"value": _sig(s.value_s * scale)}
        if s.min_s is not None and s.max_s is not None:
            metric.update(lower_value=_sig(s.min_s * scale), upper_value=_sig(s.max_s * scale))
        out[s.name] = {BENCHER_MEASURE: metric}
    return out


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=_prog(),
        description="Write bench JSON results as github-action-benchmark (customSmallerIsBetter) "
        "or Bencher Metric Format JSON: one value per benchmark.",
    )
    parser.add_argument("runs", nargs="+", metavar="RUN.json", help="bench JSON files")
    parser.add_argument("--format", required=True, choices=FORMATS)
    parser.add_argument("--out", metavar="FILE", help="output file (default: standard output)")
    add_time_option(parser)
    parser.add_argument(
        "--unit",
        choices=sorted(UNIT_SCALE),
        help="time unit for github-action-benchmark (default ns); Bencher's latency is always ns",
    )
    parser.add_argument("--filter", metavar="REGEX", help="only benchmarks whose name matches")
    talk = parser.add_mutually_exclusive_group()
    talk.add_argument(
        "--verbose", action="store_true", help="list every dropped benchmark, not only the reasons"
    )
    talk.add_argument("--quiet", action="store_true", help="print nothing but errors")
    add_debug_flag(parser)
    return parser.parse_args(argv)


def _prog() -> str:
    return program_name("gpubench_tools.export")


def _export(args: argparse.Namespace) -> tuple[str, list[str]]:
    if args.unit is not None and args.format == "bencher":
        raise ExportError("--unit applies to github-action-benchmark only (Bencher's is ns)")
    try:
        pattern = compile_filter(args.filter)
    except ValueError as exc:
        raise ExportError(str(exc)) from None
    summaries: list[Summary] = []
    warnings: list[str] = []
    origin: dict[str, str] = {}
    for path in args.runs:
        # A dashboard cannot tell a benchmark that was never reached from one that was removed.
        report = load_sound_report(path, ExportError, "not exported", "not exported")
        found, dropped, unusable = summarise_rows(report, args.time)
        warnings += describe_dropped(dropped, verbose=args.verbose) + unusable
        for s in found:
            if pattern and not pattern.search(s.name):
                continue
            if s.name in origin:
                raise ExportError(f"{path}: {s.name} is also in {origin[s.name]}: which one?")
            origin[s.name] = path
            summaries.append(s)
    if not summaries:
        raise ExportError("no benchmark with a usable time in the input")
    if args.format == "bencher":
        doc: Any = to_bencher(summaries)
    else:
        doc = to_github_action_benchmark(summaries, args.unit or "ns")
    # allow_nan=False: a NaN or Infinity that got this far is a bug, never valid JSON to write.
    return json.dumps(doc, indent=2, allow_nan=False) + "\n", warnings


def main(argv: Sequence[str] | None = None) -> int:
    return run_main(_prog(), _main, argv)


def _main(argv: Sequence[str] | None) -> int:
    args = _parse_args(argv)
    try:
        text, warnings = _export(args)
        if args.out:
            with open(args.out, "w", encoding="utf-8") as fh:
                fh.write(text)
        else:
            sys.stdout.write(text)
    except (BenchJsonError, ExportError) as exc:
        raise UnusableInput(str(exc)) from None
    except OSError as exc:
        raise UnusableInput(f"{exc.filename}: {exc.strerror or exc}") from None
    if not args.quiet:
        for line in warnings:
            print(f"{_prog()}: warning: {line}", file=sys.stderr)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
