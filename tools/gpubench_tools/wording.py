"""What the tools say of what the reader read: a run that did not finish, invalid and error rows,
grouped by reason. The reader (benchjson), the loader (table) and conditions.py decide, as data;
the macros of templates/words.j2 word it (`in_words`), and these are the lines every tool prints.
`python -m gpubench_tools.benchjson --errors FILE` (errors_main) prints a file's count of them.
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import TYPE_CHECKING, Any, Callable, Hashable, Iterable, Sequence, TypeVar

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


@functools.cache
def _macros() -> Any:
    from .templating import environment  # jinja2: imported when something is first worded

    env = environment(__package__)
    env.globals.update(plural=plural)
    return env.get_template("words.j2").module


def in_words(macro: str, *values: Any) -> str:
    """The line a macro of templates/words.j2 writes of `values`."""
    return str(getattr(_macros(), macro)(*values))


def interruption_words(interrupted: Interruption) -> str:
    """'interrupted by SIGTERM after 32 of 46 benchmarks': what an interrupted run's context says
    of it."""
    return in_words("interruption", interrupted)


def cut_off_words(report: BenchReport) -> str | None:
    """Why a file is cut off, in words ("interrupted by SIGTERM after 32 of 46 benchmarks",
    "truncated after 12 complete rows"), None for a complete file."""
    return in_words("cut_off", report) or None


def cut_off_lines(report: BenchReport, run: str = "the run") -> list[str]:
    """What every tool says of a file whose run did not finish, one line per cause (none for a
    complete file): the interruption its context records (which signal, how far `run` got, what
    is missing), and the truncation of its text."""
    causes = {"interrupted": report.interrupted is not None}
    causes["truncated"] = report.recovered_from_truncation
    return [
        in_words("cut_off_line", report, run, cause) for cause, found in causes.items() if found
    ]


def describe_invalid(rows: list[BenchRow], limit: int = 3) -> str:
    """'2 rows invalid (real_time is NaN: a, b; iterations is 1e+30: c)': one line, grouped by
    reason, at most `limit` names per reason."""
    return in_words("invalid", rows, group_reasons(rows, lambda r: r.invalid or ""), limit)


def describe_errors(report: BenchReport) -> str:
    """'0 rows failed, 1 skipped (does not fit on chip: 1)': one line for logs and summaries,
    over the measured (non-aggregate) rows; ', 2 invalid' is added when rows hold values that
    cannot be a measurement, and '; cut off: interrupted by SIGTERM after 2 of 5 benchmarks'
    where a signal stopped the run."""
    errors = [r for r in report.rows if r.run_type == "iteration" and r.error is not None]
    skipped = Counter(reason for r in errors if (reason := skip_reason(r.error)) is not None)
    invalid = sum(1 for row in report.rows if row.invalid is not None)
    failed = len(errors) - sum(skipped.values())
    return in_words("errors", failed, skipped, invalid, report.interrupted)


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
        print(describe_errors(report))
        return EXIT_OK

    return run_main(prog, body, argv)
