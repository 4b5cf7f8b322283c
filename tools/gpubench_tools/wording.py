"""What the tools say of what the reader read: a run that did not finish, invalid and error rows,
grouped by reason. The reader (benchjson) classifies; these are the words every tool prints, and
`python -m gpubench_tools.benchjson --errors FILE` (errors_main) prints a file's count of them.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Callable, Hashable, Iterable, Sequence, TypeVar

from .cli import EXIT_OK, ArgumentParser, UnusableInput, add_debug_flag, program_name, run_main
from .row_rules import skip_reason
from .units import plural

if TYPE_CHECKING:
    from .benchjson import BenchReport, BenchRow, Interruption


_Item = TypeVar("_Item")
_Reason = TypeVar("_Reason", bound=Hashable)


def group_reasons(
    items: Iterable[_Item], reason: Callable[[_Item], _Reason]
) -> list[tuple[_Reason, list[_Item]]]:
    """Items (rows, benchmarks) with the same reason together, in order of first appearance:
    [(reason, items)]. Every tool says one line per reason, not one per row: a CPU-only run skips
    every bf16 row for one reason."""
    groups: dict[_Reason, list[_Item]] = {}
    for item in items:
        groups.setdefault(reason(item), []).append(item)
    return list(groups.items())


def interruption_words(interrupted: Interruption) -> str:
    """'interrupted by SIGTERM after 32 of 46 benchmarks': what an interrupted run's context says
    of it."""
    return (
        f"interrupted by {interrupted.signal} after {interrupted.finished} of "
        f"{plural(interrupted.selected, 'benchmark')}"
    )


def cut_off_words(report: BenchReport) -> str | None:
    """Why a file is cut off, in words ("interrupted by SIGTERM after 32 of 46 benchmarks",
    "truncated after 12 complete rows"), None for a complete file."""
    parts = []
    if report.interrupted is not None:
        parts.append(interruption_words(report.interrupted))
    if report.recovered_from_truncation:
        parts.append(f"truncated after {len(report.rows)} complete rows")
    return ", then ".join(parts) or None


def cut_off_lines(report: BenchReport, run: str = "the run") -> list[str]:
    """What every tool says of a file whose run did not finish, one line per cause (none for a
    complete file): the interruption its context records (which signal, how far `run` got, what
    is missing), and the truncation of its text."""
    lines, stopped = [], report.interrupted
    if stopped is not None:
        missing = stopped.missing
        was = "was" if missing == 1 else "were"
        what = f"{plural(missing, 'selected benchmark')} {was} not measured (no rows)"
        what = what if missing else "every selected benchmark finished"
        lines.append(f"{report.path}: {run} was {interruption_words(stopped)}: {what}")
    if report.recovered_from_truncation:
        lines.append(
            f"recovered {len(report.rows)} complete benchmark rows from truncated file "
            f"{report.path}"
        )
    return lines


def describe_invalid(rows: list[BenchRow], limit: int = 3) -> str:
    """'2 rows invalid (real_time is NaN: a, b; iterations is 1e+30: c)': one line, grouped by
    reason, at most `limit` names per reason."""
    parts = []
    for reason, group in group_reasons(rows, lambda r: r.invalid or ""):
        names = ", ".join(r.name for r in group[:limit])
        more = f" and {len(group) - limit} more" if len(group) > limit else ""
        parts.append(f"{reason}: {names}{more}")
    return f"{plural(len(rows), 'row')} invalid ({'; '.join(parts)})"


def describe_errors(report: BenchReport) -> str:
    """'0 rows failed, 1 skipped (does not fit on chip: 1)': one line for logs and summaries,
    over the measured (non-aggregate) rows; ', 2 invalid' is added when rows hold values that
    cannot be a measurement."""
    errors = [r for r in report.rows if r.run_type == "iteration" and r.error is not None]
    skipped = Counter(reason for r in errors if (reason := skip_reason(r.error)) is not None)
    failed = len(errors) - sum(skipped.values())
    text = f"{plural(failed, 'row')} failed, {sum(skipped.values())} skipped"
    if skipped:
        text += " (" + ", ".join(f"{reason}: {n}" for reason, n in skipped.items()) + ")"
    invalid = sum(1 for row in report.rows if row.invalid is not None)
    if invalid:
        text += f", {invalid} invalid"
    return text


def errors_main(argv: Sequence[str] | None = None) -> int:
    """`python -m gpubench_tools.benchjson --errors FILE`: the failed/skipped count of one file,
    one line on stdout (exit 0), or the reason the file is unusable on stderr (exit 2): not bench
    JSON, or truncated (its last rows may be half-written). A run a signal stopped wrote its
    finished benchmarks whole: they are counted, and the line says how far the run got (the
    rows never written are not in the counts)."""
    from .benchjson import load_report

    prog = program_name("gpubench_tools.benchjson")

    def body(args_list: Sequence[str] | None) -> int:
        parser = ArgumentParser(
            prog=prog,
            description="Count the failed, skipped and invalid rows of a bench JSON file.",
        )
        parser.add_argument("--errors", metavar="FILE", required=True, help="bench JSON file")
        add_debug_flag(parser)
        args = parser.parse_args(args_list)
        report = load_report(args.errors)  # not bench JSON: BenchJsonError, unusable input
        if report.recovered_from_truncation and report.interrupted is None:
            raise UnusableInput(
                f"{args.errors}: the run did not finish ({cut_off_words(report)}); rows not counted"
            )
        cut = f"; cut off: {report.interrupted}" if report.interrupted is not None else ""
        print(describe_errors(report) + cut)
        return EXIT_OK

    return run_main(prog, body, argv)
