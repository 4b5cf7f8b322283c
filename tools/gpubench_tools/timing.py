"""Which rows are measurements, and which of their times is *the* time.

Shared by the history store and the exports, so that a chart, a regression check and a dashboard
upload of the same run agree on every number.
"""

from __future__ import annotations

import argparse
import math
import re

from .benchjson import BenchReport, BenchRow, describe_invalid, invalid_rows, load_report

__all__ = [
    "TIME_CHOICES",
    "add_time_option",
    "choose_time",
    "compile_filter",
    "is_manual_time",
    "load_sound_report",
    "not_measured_reason",
    "row_time_s",
    "time_source",
]

# "auto": the time that measures the code best for each kind of row (see time_source);
# "real" / "cpu": Google Benchmark's real_time / cpu_time for every row that is not manual time.
TIME_CHOICES: tuple[str, ...] = ("auto", "real", "cpu")

# Google Benchmark appends this to the name of a benchmark registered with UseManualTime(). The
# GPU benchmarks time themselves with CUDA events and report that as the manual time.
_MANUAL_TIME_SUFFIX = "/manual_time"


def is_manual_time(name: str) -> bool:
    return name.endswith(_MANUAL_TIME_SUFFIX)


def not_measured_reason(row: BenchRow) -> str | None:
    """Why a row holds no usable time, or None for a real measurement.

    Failed rows carry real_time 0, which a dashboard would plot as infinitely fast. Google
    Benchmark 1.8 writes `"skipped": true` for SkipWithMessage rows, a key that benchjson does not
    read; such rows, like failed ones, ran zero iterations, which is what catches them here.
    """
    if row.error is not None:
        return f"error: {row.error}"
    if row.invalid is not None:
        return f"invalid: {row.invalid}"
    if row.iterations <= 0:
        return "skipped: ran no iterations"
    if not (math.isfinite(row.real_time_s) and row.real_time_s > 0):
        return "no positive real_time"
    return None


def time_source(row: BenchRow, time: str = "auto") -> str:
    """ "real_time" or "cpu_time": which of the row's times `time` selects (see choose_time)."""
    return choose_time(row.run_name, row.counters.get("threads"), time)


def choose_time(run_name: str, threads: float | None, time: str = "auto") -> str:
    """ "real_time" or "cpu_time" for a benchmark of this name and BLAS thread count.

    Manual-time rows always use real_time: it holds the CUDA-event time of the GPU work, while
    their cpu_time is the host thread's time spent launching and waiting. With "auto", a CPU row
    run on one BLAS thread uses cpu_time, because time slices taken by other processes on a shared
    machine do not count there (the CI gate measured wall time growing 3.4x under load, CPU time at
    most 1.17x); multi-threaded rows use real_time because Google Benchmark's cpu_time covers only
    the main thread.
    """
    if time not in TIME_CHOICES:
        raise ValueError(f"time must be one of {TIME_CHOICES}, not {time!r}")
    if is_manual_time(run_name) or time == "real":
        return "real_time"
    if time == "cpu":
        return "cpu_time"
    return "cpu_time" if threads == 1.0 else "real_time"


def row_time_s(row: BenchRow, time: str = "auto") -> float:
    """The selected time of one row in seconds (NaN when the row has no such time)."""
    return row.cpu_time_s if time_source(row, time) == "cpu_time" else row.real_time_s


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


def load_sound_report(
    path: str, error: type[Exception], truncated: str, invalid: str
) -> BenchReport:
    """The report of a complete file whose rows all hold sound values, else `error` saying which
    file and, after "; ", what the command does not do with it (`truncated` / `invalid`): a run
    cut short or holding a NaN, Infinity, zero or absurd time must not reach a store or a
    dashboard, where it would read as a missing benchmark or an impossible number."""
    report = load_report(path)
    if report.recovered_from_truncation:
        raise error(f"{path}: file is truncated (the run was interrupted); {truncated}")
    bad_rows = invalid_rows(report)
    if bad_rows:
        raise error(f"{path}: {describe_invalid(bad_rows)}; {invalid}")
    return report
