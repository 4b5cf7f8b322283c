"""`gpubench-export`: one number per benchmark, in the formats CI dashboards read.

    gpubench-export --format github-action-benchmark run.json --out gab.json
    gpubench-export --format bencher run.json --out bmf.json

docs/history.md ("Exports for CI dashboards") gives both formats and every rule. In short: the
value is the median of a benchmark's repetition rows and the range their extremes (aggregate rows
only for a benchmark that has nothing else), from its undisturbed repetitions where at least 3
remain, else from all of them and the row says it was measured while disturbed; failed and skipped
rows are dropped, told once per file and reason, because a failed row has real_time 0, which a
dashboard would draw as infinitely fast; a file with invalid rows is not exported, because a
dashboard must not draw a corrupt number (policy.POLICY["export"] says what is done with each
class of input); NaN and Infinity are never written. Exit status: 0 written, 2 unusable input.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd

from . import output
from .benchjson import BenchJsonError
from .conditions import UNKNOWN
from .history.words import EXPORT_WORDS
from .policy import NOTHING_MEASURED, REFUSE, action
from .table import headline_rows
from .escape import term_text
from .cli import EXIT_OK, ArgumentParser, UnusableInput, add_debug_flag, program_name, run_main
from .timing import add_time_option, choose_time, compile_filter, read_rows
from .wording import error_words

MODULE = "gpubench_tools.export"
FORMATS: tuple[str, ...] = ("github-action-benchmark", "bencher")
UNIT_SCALE: dict[str, float] = {"ns": 1e9, "us": 1e6, "ms": 1e3, "s": 1.0}
BENCHER_MEASURE = "latency"  # Bencher's built-in measure for a time, in nanoseconds

# Aggregates that stand for the whole benchmark, in order of preference, when a file holds only
# aggregates (--benchmark_report_aggregates_only). stddev and cv are spreads, not times.
_AGGREGATE_VALUES: tuple[str, ...] = ("median", "mean")


class ExportError(Exception):
    """Input that cannot be exported. str() is the one line printed on stderr."""


@dataclass(frozen=True)
class Dropped:
    """The rows of one file dropped for one reason: how many, and each benchmark they belong to
    (`benchmarks`: .name, .rows, .of_rows, .exported), `gone` of them left with nothing."""

    reason: str
    rows: int
    benchmarks: list[Any]
    count: int  # benchmarks
    one: bool  # a single benchmark
    gone: int
    all_gone: bool


@dataclass(frozen=True)
class FileNotes:
    """What export says of one file (benchmark_values): the rows dropped by reason, the
    benchmarks without a usable time (`silent`), those measured while disturbed (how many, and
    the first), the disturbed repetitions left out and whether conditions are unknown."""

    path: str
    dropped: list[Dropped]
    silent: list[str]
    disturbed: int
    first_disturbed: str | None
    left_out: int
    unknown: bool


def benchmark_values(
    rows: pd.DataFrame, time: str = "auto"
) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """The benchmarks of one file's rows (timing.read_rows), what was dropped, and the benchmarks
    left without a usable time (silent: nothing was dropped for them either).

    Summaries, indexed by name in file order (each row is what the `extra` of its entry words):
    `value_s` (the median of the usable repetitions), `min_s` and `max_s` (NaN with one
    repetition or an aggregate: no `spread` to claim), `repetitions` (0 for an aggregate),
    `clock`, `disturbed_in` (fewer undisturbed repetitions than the rule needs: all used),
    `disturbed_left_out` and `unknown` (some repetition's conditions are not known). Dropped:
    one row per benchmark and reason, in file order, with `rows` dropped for it, `of_rows` of
    the benchmark, and `exported` (False: nothing of the benchmark was left).
    """
    rows = rows.assign(
        order=range(len(rows)),
        clock=[choose_time(n, t, time) for n, t in zip(rows["name"], rows["threads"])],
    )
    rows["value_s"] = rows["cpu_time_s"].where(rows["clock"] == "cpu_time", rows["real_time_s"])
    rows["usable"] = np.isfinite(rows["value_s"]) & (rows["value_s"] > 0)
    names = pd.Series(range(rows["name"].nunique()), index=rows["name"].unique())
    repetitions = rows[rows["run_type"] != "aggregate"]
    # A benchmark with no repetition rows at all: its median aggregate, else its mean (the last
    # row of each kind, as Google Benchmark writes one).
    aggregates = rows[(rows["run_type"] == "aggregate") & ~rows["name"].isin(repetitions["name"])]
    aggregates = aggregates.drop_duplicates(["name", "aggregate_name"], keep="last")
    aggregates = aggregates[aggregates["error"].isna() & aggregates["usable"]]
    aggregates = aggregates[aggregates["aggregate_name"].isin(_AGGREGATE_VALUES)]
    aggregates = aggregates.sort_values(
        "aggregate_name", key=lambda c: c.map(_AGGREGATE_VALUES.index), kind="stable"
    ).drop_duplicates("name")
    # The headline rule (policy.HEADLINE_RULE): undisturbed repetitions where enough remain; an
    # aggregate is its benchmark's one value, marked where it includes disturbed repetitions.
    measured = repetitions[repetitions["reason"].isna() & repetitions["usable"]]
    chosen = headline_rows(pd.concat([measured, aggregates]), ["name"])
    grouped = chosen.groupby("name", sort=False)
    found = grouped["value_s"].agg(value_s="median", min_s="min", max_s="max")
    found = found.assign(
        repetitions=grouped["run_type"].agg(lambda t: int((t != "aggregate").sum())),
        clock=grouped["clock"].first(),
        disturbed_in=grouped["disturbed_in_number"].first(),
        disturbed_left_out=grouped["disturbed_left_out"].first().astype(int),
        unknown=grouped["conditions"].agg(lambda c: bool((c == UNKNOWN).any())),
    )
    found["spread"] = found["repetitions"] > 1
    found.loc[~found["spread"], ["min_s", "max_s"]] = math.nan
    found = found.loc[[name for name in names.index if name in found.index]]

    dropped = repetitions[repetitions["reason"].notna()].groupby(["name", "reason"])
    dropped = dropped["order"].agg(rows="size", first="min").reset_index()
    dropped["of_rows"] = dropped["name"].map(repetitions["name"].value_counts())
    dropped["exported"] = dropped["name"].isin(found.index)
    dropped = dropped.sort_values(
        ["name", "first"], key=lambda c: c.map(names) if c.name == "name" else c
    )
    silent = [n for n in names.index if n not in found.index and n not in set(dropped["name"])]
    return found, dropped, silent


def file_notes(
    path: str, found: pd.DataFrame, dropped: pd.DataFrame, silent: list[str]
) -> FileNotes:
    """What export says of one file's values (benchmark_values)."""
    reasons = []
    for reason, items in dropped.groupby("reason", sort=False):
        n, gone = len(items), int((~items["exported"].astype(bool)).sum())
        counts = int(items["rows"].sum()), list(items.itertuples()), n, n == 1, gone, gone == n
        reasons.append(Dropped(reason, *counts))
    disturbed = list(found.index[found["disturbed_in"].astype(bool)])
    left_out, unknown = int(found["disturbed_left_out"].sum()), found["unknown"].astype(bool).any()
    first = disturbed[0] if disturbed else None
    return FileNotes(path, reasons, silent, len(disturbed), first, left_out, bool(unknown))


def _sig(x: float) -> float:
    """Six significant digits: the repetitions do not agree any closer than that."""
    return float(f"{x:.6g}")


def to_github_action_benchmark(summaries: pd.DataFrame, unit: str = "ns") -> list[dict[str, Any]]:
    scale, entries = UNIT_SCALE[unit], []
    for s in summaries.itertuples():
        entry: dict[str, Any] = {"name": s.Index, "unit": unit, "value": _sig(s.value_s * scale)}
        if s.spread:
            # github-action-benchmark reads a range as "± <number>" (and rescales it when the
            # unit changes), so the range is the half-width that covers the slowest and the
            # fastest repetition; the exact extremes go into `extra`.
            half_width = max(s.max_s - s.value_s, s.value_s - s.min_s)
            entry["range"] = f"± {_sig(half_width * scale)!r}"
        entries.append({**entry, "extra": EXPORT_WORDS("extra", s=s)})
    return entries


def to_bencher(summaries: pd.DataFrame) -> dict[str, dict[str, dict[str, float]]]:
    out: dict[str, dict[str, dict[str, float]]] = {}
    for s in summaries.itertuples():
        metric = {"value": _sig(s.value_s * 1e9)}
        if s.spread:
            metric.update(lower_value=_sig(s.min_s * 1e9), upper_value=_sig(s.max_s * 1e9))
        out[s.Index] = {BENCHER_MEASURE: metric}
    return out


def _parser() -> argparse.ArgumentParser:
    """The command line, as data (tests walk it)."""
    parser = ArgumentParser(
        prog=program_name(MODULE),
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
    return parser


def _export(args: argparse.Namespace) -> tuple[str, list[str]]:
    if args.unit is not None and args.format == "bencher":
        raise ExportError("--unit applies to github-action-benchmark only (Bencher's is ns)")
    try:
        pattern = compile_filter(args.filter)
    except ValueError as exc:
        raise ExportError(str(exc)) from None
    summaries: list[pd.DataFrame] = []
    warnings: list[str] = []
    origin: dict[str, str] = {}  # benchmark -> the file it is exported from
    for path in args.runs:
        # A dashboard cannot tell a benchmark that was never reached from one that was removed.
        _, rows = read_rows(path, "export", ExportError, "not exported")
        found, dropped, silent = benchmark_values(rows, args.time)
        notes = file_notes(path, found, dropped, silent)
        warnings += EXPORT_WORDS("warnings", n=notes, verbose=args.verbose).splitlines()
        found = found[[not pattern or bool(pattern.search(name)) for name in found.index]]
        again = next((name for name in found.index if name in origin), None)
        if again is not None:
            raise ExportError(f"{path}: {term_text(again)} is also in {origin[again]}: which one?")
        origin |= dict.fromkeys(found.index, path)
        summaries.append(found)
    if not origin and action("export", NOTHING_MEASURED).kind == REFUSE:
        raise ExportError("no benchmark with a usable time in the input")
    found = pd.concat(summaries)
    gab = args.format != "bencher"
    doc = to_github_action_benchmark(found, args.unit or "ns") if gab else to_bencher(found)
    # allow_nan=False: a NaN or Infinity that got this far is a bug, never valid JSON to write.
    return json.dumps(doc, indent=2, allow_nan=False) + "\n", warnings


def main(argv: Sequence[str] | None = None) -> int:
    return run_main(program_name(MODULE), _main, argv)


def _main(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    try:
        text, warnings = _export(args)
    except (BenchJsonError, ExportError) as exc:  # a file that cannot be read is BenchJsonError
        raise UnusableInput(term_text(error_words(exc), 600)) from None
    if args.out:
        # The export is this command's result, not a side output: not written is exit 2.
        problem = output.write_side(args.out, text, "export (--out)")
        if problem is not None:
            raise UnusableInput(problem)
    else:
        output.write_lines(*text.splitlines())
    if not args.quiet:
        output.warn(
            *(f"{program_name(MODULE)}: warning: {term_text(line, 600)}" for line in warnings)
        )
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
