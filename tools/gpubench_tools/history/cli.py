"""`gpubench-history`: add runs to a history database, chart it, check it for regressions.

Exit status, like gpubench-compare: 0 no regression (and every file added or already there),
1 a regression (check only), 2 a usage or input error (one line on stderr per problem).
"""

from __future__ import annotations

import argparse
import sqlite3
import traceback
from typing import Any, Sequence

from .. import output
from ..benchjson import BenchJsonError
from ..cli import EXIT_OK, EXIT_REGRESSION, EXIT_UNUSABLE, UnusableInput, add_debug_flag
from ..cli import ArgumentParser, program_name, run_main
from ..escape import term_text
from ..output import write_lines
from ..policy import INTERRUPTED, LIST, action
from ..timing import add_time_option, compile_filter
from .check import RULE_RANGES, CheckRule, check_history, summarize_checks
from .ingest import read_run
from .store import History, HistoryError, HistoryStore
from .words import WORDS, error_text, stored

# The options of CheckRule, in its field order, with their help; --time comes after them.
_RULE_HELP = {
    "min_ratio": "effect-size floor: median slowdown that counts (1.10 = 10%% slower)",
    "alpha": "one-sided Mann-Whitney U test level",
    "window": "earlier runs of the same machine that form the baseline",
    "confirm": "newest runs that must all be slower",
    "min_history": "fewest baseline runs before a benchmark is judged",
}
# The commands that judge the stored runs, with their help, and the options of check alone.
_JUDGING = (
    ("check", "exit 1 when the newest run of a machine has a confirmed regression"),
    ("chart", "trend charts per benchmark family and an HTML index"),
)
_CHECK_FLAGS = (
    ("--verbose", "list every benchmark, not only regressions, failures and suspects"),
    ("--quiet", "print only regressions and failures (and errors): nothing when the check passes"),
)


def _prog() -> str:
    return program_name("gpubench_tools.history")


def _parser() -> argparse.ArgumentParser:
    """The command line, as data (tests walk it)."""
    common = ArgumentParser(add_help=False)
    add_debug_flag(common)
    parser = ArgumentParser(
        prog=_prog(),
        parents=[common],
        description="Keep bench runs in one SQLite file; chart them; check the newest run of "
        "each machine for regressions against its recent history.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    add = sub.add_parser(
        "add", parents=[common], help="store bench JSON runs (a run already stored is skipped)"
    )
    add.add_argument("db", help="history database (created if missing)")
    add.add_argument("runs", nargs="+", metavar="RUN.json", help="bench JSON files")
    add.add_argument("--commit", help="suite commit of the runs (default: from the context)")
    add.add_argument("--date", help="ISO 8601 date of the runs (default: from the context)")
    add.add_argument("--quiet", action="store_true", help="print nothing but errors")
    check, chart = (sub.add_parser(name, parents=[common], help=text) for name, text in _JUDGING)
    for flag, text in _CHECK_FLAGS:
        check.add_argument(flag, action="store_true", help=text)
    chart.add_argument("--out", required=True, metavar="DIR", help="output folder")
    defaults = CheckRule()
    for command in (check, chart):
        command.add_argument("db", help="history database")
        for name, text in _RULE_HELP.items():
            kind = RULE_RANGES[name]
            text += f" ({kind.range.replace('%', '%%')}; default %(default)s)"
            flag = "--" + name.replace("_", "-")
            command.add_argument(flag, type=kind, default=getattr(defaults, name), help=text)
        add_time_option(command, defaults.time)
        command.add_argument("--filter", metavar="REGEX", help="only benchmarks whose name matches")
    return parser


def _load(args: argparse.Namespace) -> tuple[CheckRule, History]:
    """The rule and the stored runs that check and chart read; a bad option value, and an empty
    selection, are errors, not a pass."""
    try:
        rule = CheckRule(time=args.time, **{name: getattr(args, name) for name in _RULE_HELP})
        compile_filter(args.filter)
    except ValueError as exc:
        raise HistoryError(str(exc)) from None
    with HistoryStore.open(args.db) as store:
        history = History.load(store, args.filter)
    if not history.runs:
        raise HistoryError(f"{args.db}: no run stored (add some with 'add')")
    if not history.benchmarks:
        raise HistoryError(f"--filter {args.filter!r} matches no stored benchmark")
    return rule, history


def _cmd_add(args: argparse.Namespace) -> int:
    status = EXIT_OK
    with HistoryStore.open(args.db, create=True) as store:
        for path in args.runs:
            try:
                record = stored(read_run(path, args.commit, args.date))
                outcome = store.add_run(record)
            except (sqlite3.Error, KeyboardInterrupt):
                raise  # the database, not this file: nothing more can be added
            except Exception as exc:  # noqa: BLE001 - one bad file never stops the batch
                # This file only (read_run refuses what the policy table says "history add"
                # does not store); every other file is added.
                expected = isinstance(exc, (BenchJsonError, HistoryError))
                if args.debug and not expected:
                    traceback.print_exc()
                unexpected = None if expected else type(exc).__name__
                said = WORDS("not_added", path=path, exc=error_text(exc), unexpected=unexpected)
                output.warn(f"{_prog()}: error: " + said)
                status = EXIT_UNUSABLE
                continue
            if not args.quiet:
                _say_added(path, record, outcome)
    return status


def _say_added(path: str, record: Any, outcome: Any) -> None:
    """What `add` says of one file."""
    marks, samples = record.samples["disturbed"], len(record.samples)
    n = dict(disturbed=int((marks == 1).sum()), unknown=bool(marks.isna().any()))
    n.update(repetitions=samples, benchmarks=len(record.benchmarks), failed=len(record.failures))
    # Said as each run is committed: a caller watching the output sees it at once.
    write_lines(*WORDS("added", path=path, r=record, outcome=outcome, n=n).splitlines())
    # An interrupted run is stored with what it finished, and said to be.
    if outcome.added and record.interrupted and action("history add", INTERRUPTED).kind == LIST:
        output.warn(f"{_prog()}: warning: " + term_text(WORDS("interrupted", path=path, r=record)))


def _cmd_check(args: argparse.Namespace) -> int:
    rule, history = _load(args)
    summary = summarize_checks(check_history(history, rule), history, args.verbose)
    # The verdict first (output.decide): a closed stdout cannot turn a regression into exit 0.
    code = output.decide(EXIT_REGRESSION if summary.failing else EXIT_OK)
    if args.quiet:
        write_lines(*WORDS("failing", s=summary).splitlines())
        return code
    write_lines(*WORDS("machines", s=summary, rule=rule).splitlines())
    output.warn(*WORDS("warnings", s=summary).splitlines())
    write_lines(WORDS("result", s=summary))
    return code


def _cmd_chart(args: argparse.Namespace) -> int:
    from .chart import write_charts  # matplotlib only for this command

    rule, history = _load(args)
    index = write_charts(history, rule, args.out)
    write_lines(f"wrote {term_text(index)}")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    return run_main(_prog(), _main, argv)


def _main(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    commands = {"add": _cmd_add, "check": _cmd_check, "chart": _cmd_chart}
    try:
        return commands[args.command](args)
    except HistoryError as exc:
        raise UnusableInput(str(exc)) from None
    except OSError as exc:
        where = exc.filename or getattr(args, "out", None) or args.db
        raise UnusableInput(f"{where}: {exc.strerror or exc}") from None
    except sqlite3.Error as exc:  # e.g. a database locked by another writer for over 30 s
        raise UnusableInput(f"{args.db}: {exc}") from None
