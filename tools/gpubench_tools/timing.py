"""The rows of one bench file as a pandas table, and which of their times is *the* time.

Shared by the history store and the exports, so that a chart, a regression check and a dashboard
upload of the same run agree on every number.
"""

from __future__ import annotations

import argparse
import re

import pandas as pd

from .benchjson import BenchReport, Refusal, invalid_rows, load_report
from .policy import FAILED_ROW, MALFORMED_ROW, SKIPPED_ROW, UNSOUND_ROW, file_situation, refused
from .row_rules import skip_reason
from .table import file_rows

# "auto": the time that measures the code best for each kind of row (see choose_time);
# "real" / "cpu": Google Benchmark's real_time / cpu_time for every row that is not manual time.
TIME_CHOICES: tuple[str, ...] = ("auto", "real", "cpu")


def choose_time(run_name: str, threads: float | None, time: str = "auto") -> str:
    """ "real_time" or "cpu_time" for a benchmark of this name and BLAS thread count.

    Manual-time rows (Google Benchmark's `/manual_time` suffix) always use real_time: it holds the
    CUDA-event time of the GPU work, while their cpu_time is the host thread's time spent launching
    and waiting. With "auto", a CPU row run on one BLAS thread uses cpu_time, because time slices
    taken by other processes on a shared machine do not count there (the CI gate measured wall
    time growing 3.4x under load, CPU time at most 1.17x); multi-threaded rows use real_time
    because Google Benchmark's cpu_time covers only the main thread.
    """
    if time not in TIME_CHOICES:
        raise ValueError(f"time must be one of {TIME_CHOICES}, not {time!r}")
    if run_name.endswith("/manual_time") or time == "real":
        return "real_time"
    return "cpu_time" if time == "cpu" or threads == 1.0 else "real_time"


def add_time_option(parser: argparse.ArgumentParser, default: str = "auto") -> None:
    """The --time option, worded once for every command that picks a clock."""
    parser.add_argument(
        "--time",
        choices=TIME_CHOICES,
        default=default,
        help="clock of CPU rows: auto = cpu_time for single-threaded rows, real_time otherwise; "
        "GPU (manual-time) rows always use their event time (default %(default)s)",
    )


def compile_filter(text: str | None) -> re.Pattern[str] | None:
    """The compiled --filter REGEX (None without one); ValueError with the one-line message when
    it is not a regular expression, which each command reports as its own input error."""
    try:
        return re.compile(text) if text else None
    except re.error as exc:
        raise ValueError(f"--filter {text!r} is not a regular expression: {exc}") from None


def reason_situation(reason: str) -> str:
    """The row class (policy.FAILED_ROW or SKIPPED_ROW) of a row's `reason` (read_rows)."""
    skipped = reason.startswith("skipped: ") or skip_reason(reason.removeprefix("error: "))
    return SKIPPED_ROW if skipped else FAILED_ROW


def read_rows(
    path: str, tool: str, error: type[Exception], not_done: str
) -> tuple[BenchReport, pd.DataFrame]:
    """The report and the rows of a file `tool` (a policy.TOOLS name) takes, else `error` of a
    Refusal, which words which file and, after "; ", what the command does not do with it: whatever the
    policy table refuses (a run cut short, for history and export alike; a run interrupted by a
    signal, for export) and rows holding a NaN, Infinity, zero or absurd time, which must not
    reach a store or a dashboard, where they would read as a missing benchmark or an impossible
    number.

    One row per benchmark row of the file, in file order: `name` (the run name), `run_type`,
    `aggregate_name`, `repetition` (NaN without one), `iterations`, `real_time_s`, `cpu_time_s`
    (NaN without one), `threads` (the BLAS thread count counter, NaN without one), `error`, and
    `reason`: why an iteration row holds no measurement (None for one that does), and
    `conditions` (disturbed, quiet or conditions unknown: conditions.condition_of). In a sound
    file that is an error, or no iterations run (how Google Benchmark 1.8 writes a row skipped
    with SkipWithMessage; a row that ran with a zero time is invalid).
    """
    report, refuses = load_report(path), refused(tool)
    if file_situation(report) in refuses:
        raise error(Refusal(report, not_done))
    bad_rows = invalid_rows(report)
    if {MALFORMED_ROW if row.malformed else UNSOUND_ROW for row in bad_rows} & refuses:
        raise error(Refusal(report, not_done, invalid=tuple(bad_rows)))
    rows = file_rows(report)
    no_iterations = rows["error"].isna() & (rows["iterations"] <= 0)
    rows["reason"] = ("error: " + rows["error"]).where(rows["error"].notna())
    rows.loc[no_iterations, "reason"] = "skipped: ran no iterations"
    # Rows without a measurement: stored as such (history add) or dropped with a warning
    # (export), unless the tool's policy refuses them.
    unmeasured = {reason_situation(reason) for reason in rows["reason"].dropna()} & refuses
    if unmeasured:
        raise error(Refusal(report, not_done, unmeasured=tuple(sorted(unmeasured))))
    columns = ["name", "run_type", "aggregate_name", "repetition", "iterations"]
    columns += ["real_time_s", "cpu_time_s", "threads", "error", "reason", "conditions"]
    return report, rows[columns]
