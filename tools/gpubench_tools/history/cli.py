"""`gpubench-history`: add runs to a history database, chart it, check it for regressions.

Exit status, like gpubench-compare: 0 no regression (and every file added or already there),
1 a regression (check only), 2 a usage or input error (one line on stderr per problem).
"""

from __future__ import annotations

import argparse
import re
import sqlite3
import sys
from typing import Sequence

from ..benchjson import BenchJsonError
from ..cli import (
    EXIT_OK,
    EXIT_REGRESSION,
    EXIT_UNUSABLE,
    UnusableInput,
    add_debug_flag,
    program_name,
    run_main,
)
from ..timing import TIME_CHOICES
from ..units import fmt_time
from .check import (
    FAILED,
    MISSING,
    NOT_ENOUGH_HISTORY,
    NOT_ENOUGH_SAMPLES,
    OK,
    REGRESSION,
    SUSPECT,
    BenchVerdict,
    CheckRule,
    MachineCheck,
    check_history,
)
from .ingest import read_run

from .store import History, HistoryError, HistoryStore

__all__ = ["main"]


def _prog() -> str:
    return program_name("gpubench_tools.history")


def _error(message: str) -> None:
    print(f"{_prog()}: error: {message}", file=sys.stderr)


def _add_rule_options(parser: argparse.ArgumentParser) -> None:
    defaults = CheckRule()
    for name, text in (
        ("min_ratio", "effect-size floor: median slowdown that counts (1.10 = 10%% slower)"),
        ("alpha", "one-sided Mann-Whitney U test level"),
        ("window", "earlier runs of the same machine that form the baseline"),
        ("confirm", "newest runs that must all be slower"),
        ("min_history", "fewest baseline runs before a benchmark is judged"),
    ):
        default = getattr(defaults, name)
        flag = "--" + name.replace("_", "-")
        parser.add_argument(
            flag, type=type(default), default=default, help=text + " (default %(default)s)"
        )
    parser.add_argument(
        "--time",
        choices=TIME_CHOICES,
        default=defaults.time,
        help="clock of CPU rows: auto = cpu_time for single-threaded rows, real_time otherwise; "
        "GPU (manual-time) rows always use their event time (default %(default)s)",
    )
    parser.add_argument("--filter", metavar="REGEX", help="only benchmarks whose name matches")


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    common = argparse.ArgumentParser(add_help=False)
    add_debug_flag(common)
    parser = argparse.ArgumentParser(
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

    check = sub.add_parser(
        "check",
        parents=[common],
        help="exit 1 when the newest run of a machine has a confirmed regression",
    )
    check.add_argument("db", help="history database")
    check.add_argument(
        "--verbose",
        action="store_true",
        help="list every benchmark, not only regressions, failures and suspects",
    )
    check.add_argument(
        "--quiet",
        action="store_true",
        help="print only regressions and failures (and errors): nothing when the check passes",
    )
    _add_rule_options(check)

    chart = sub.add_parser(
        "chart", parents=[common], help="trend charts per benchmark family and an HTML index"
    )
    chart.add_argument("db", help="history database")
    chart.add_argument("--out", required=True, metavar="DIR", help="output folder")
    _add_rule_options(chart)
    return parser.parse_args(argv)


def _rule(args: argparse.Namespace) -> CheckRule:
    try:
        rule = CheckRule(
            min_ratio=args.min_ratio,
            alpha=args.alpha,
            window=args.window,
            confirm=args.confirm,
            min_history=args.min_history,
            time=args.time,
        )
    except ValueError as exc:
        raise HistoryError(str(exc)) from None
    if args.filter:
        try:
            re.compile(args.filter)
        except re.error as exc:
            raise HistoryError(f"--filter {args.filter!r} is not a regular expression: {exc}")
    return rule


def _load(args: argparse.Namespace) -> tuple[CheckRule, History]:
    """The rule and the stored runs that check and chart read; an empty selection is an error,
    not a pass."""
    rule = _rule(args)
    with HistoryStore.open(args.db) as store:
        history = History.load(store, args.filter)
    if history.run_count == 0:
        raise HistoryError(f"{args.db}: no runs stored (add some with 'add')")
    if not history.benchmarks:
        raise HistoryError(f"--filter {args.filter!r} matches no stored benchmark")
    return rule, history


# --- add ---------------------------------------------------------------------------------------


def _cmd_add(args: argparse.Namespace) -> int:
    status = EXIT_OK
    with HistoryStore.open(args.db, create=True) as store:
        machines = {m.fingerprint: m for m in store.machines()}
        for path in args.runs:
            try:
                record = read_run(path, args.commit, args.date)
                outcome = store.add_run(record)
            except (BenchJsonError, HistoryError) as exc:
                _error(str(exc))  # this file only; every run stored so far stays
                status = EXIT_UNUSABLE
                continue
            where = (
                f"commit {record.git_commit}, {record.date}, machine {record.machine_fingerprint}"
            )
            if args.quiet:
                continue
            if not outcome.added:
                if outcome.same_content:
                    print(f"already stored, nothing to do: {path} (run {outcome.run_id}, {where})")
                else:
                    print(
                        f"already stored, nothing to do: {path}: run {outcome.run_id} has the "
                        f"same {where} but came from a different file; the stored run is kept"
                    )
                continue
            if record.machine_fingerprint not in machines:
                machines = {m.fingerprint: m for m in store.machines()}
                label = machines[record.machine_fingerprint].label
                print(f"new machine {record.machine_fingerprint}: {label}")
            print(
                f"added run {outcome.run_id} from {path} ({where}): {len(record.samples)} "
                f"repetitions of {len(record.benchmarks)} benchmarks, {len(record.failures)} "
                "failed or skipped rows",
                flush=True,  # a caller watching the output sees each run as it is committed
            )
    return status


# --- check -------------------------------------------------------------------------------------


def _describe(v: BenchVerdict, rule: CheckRule) -> str:
    clock = v.time_source
    parts = [f"{c.ratio:.2f}x (p={c.p_value:.2g}, commit {c.run.git_commit})" for c in v.newest]
    median = fmt_time(v.baseline_median_s)
    if v.verdict == REGRESSION:
        newest = fmt_time(v.newest[0].median_s)
        return (
            f"{', '.join(parts)} in the {len(v.newest)} newest runs; {clock} median {median} "
            f"over {v.baseline_runs} earlier runs -> {newest}"
        )
    if v.verdict == SUSPECT:
        return f"{parts[0]} in the newest run: {v.note}"
    if v.verdict == OK and v.newest:
        latest = v.newest[0]
        text = f"{latest.ratio:.2f}x ({clock}, baseline {v.baseline_runs} runs)"
        if latest.ratio >= rule.min_ratio:
            text += f", not significant (p={latest.p_value:.2g})"
        return text
    return v.note


def _print_machine(check: MachineCheck, rule: CheckRule, verbose: bool) -> None:
    newest = check.newest_run
    print(f"machine {check.machine.fingerprint}: {check.machine.label}")
    print(
        f"  newest run: commit {newest.git_commit} ({newest.date}), {len(check.runs)} runs "
        f"stored; baseline: up to {rule.window} runs before the {rule.confirm} newest"
    )
    # Every verdict that needs a look is listed; the ones that only say "not judged (yet)" are
    # summed up unless asked for, because a new history says so for every benchmark of a sweep.
    listed = [REGRESSION, FAILED, SUSPECT]
    summed = [NOT_ENOUGH_SAMPLES, NOT_ENOUGH_HISTORY]
    for kind in listed + (summed + [OK, MISSING] if verbose else []):
        for v in check.with_verdict(kind):
            label = kind.upper() if kind in (REGRESSION, FAILED) else kind
            print(f"  {label}: {v.benchmark}: {_describe(v, rule)}")
    if not verbose:
        for kind in summed:
            found = check.with_verdict(kind)
            if found:
                print(
                    f"  {kind}: {len(found)} benchmarks, e.g. {found[0].benchmark}: "
                    f"{found[0].note} (--verbose lists them)"
                )
    counts = ", ".join(
        f"{len(check.with_verdict(kind))} {kind}" for kind in [OK] + listed + summed + [MISSING]
    )
    print(f"  {len(check.verdicts)} benchmarks: {counts}")


def _cmd_check(args: argparse.Namespace) -> int:
    rule, history = _load(args)
    checks = check_history(history, rule)
    if args.quiet:
        return _quiet_check(checks, rule)
    for check in checks:
        _print_machine(check, rule, args.verbose)
    unjudged = sum(
        len(c.with_verdict(NOT_ENOUGH_SAMPLES)) + len(c.with_verdict(NOT_ENOUGH_HISTORY))
        for c in checks
    )
    if unjudged:
        print(
            f"warning: {unjudged} benchmarks not judged (not enough samples or history); "
            "they neither pass nor fail",
            file=sys.stderr,
        )
    failing = [c for c in checks if c.fails]
    if failing:
        count = sum(len(c.with_verdict(REGRESSION)) + len(c.with_verdict(FAILED)) for c in failing)
        print(f"result: REGRESSION: {count} benchmarks on {len(failing)} machines")
        return EXIT_REGRESSION
    print("result: no confirmed regression")
    return EXIT_OK


def _quiet_check(checks: list[MachineCheck], rule: CheckRule) -> int:
    status = EXIT_OK
    for check in checks:
        for kind in (REGRESSION, FAILED):
            for v in check.with_verdict(kind):
                print(
                    f"{kind.upper()}: {check.machine.fingerprint}: {v.benchmark}: "
                    f"{_describe(v, rule)}"
                )
                status = EXIT_REGRESSION
    return status


# --- chart -------------------------------------------------------------------------------------


def _cmd_chart(args: argparse.Namespace) -> int:
    from .chart import write_charts  # matplotlib only for this command

    rule, history = _load(args)
    index = write_charts(history, rule, args.out)
    print(f"wrote {index}")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    return run_main(_prog(), _main, argv)


def _main(argv: Sequence[str] | None) -> int:
    args = _parse_args(argv)
    commands = {"add": _cmd_add, "check": _cmd_check, "chart": _cmd_chart}
    try:
        return commands[args.command](args)
    except HistoryError as exc:
        raise UnusableInput(str(exc)) from None
    except OSError as exc:
        raise UnusableInput(f"{exc.filename or ''}: {exc.strerror or exc}") from None
    except sqlite3.Error as exc:  # e.g. a database locked by another writer for over 30 s
        raise UnusableInput(f"{args.db}: {exc}") from None


if __name__ == "__main__":
    sys.exit(main())
