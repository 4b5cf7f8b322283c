"""Bench JSON file -> RunRecord: what identifies the run, and which rows are measurements.

A run is keyed by the suite commit, the date it was measured and the machine it ran on. The
machine is a fingerprint of the context fields that change the numbers (CPU model and count, GPU
and driver, OpenBLAS kernel set), not the host name: CI runners get a new host name every job,
and one host with a new GPU or driver is another machine as far as timings go.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from datetime import datetime, timezone
from typing import Any

import pandas as pd

from ..conditions import DISTURBED, QUIET
from ..schema import usable_counter
from ..status import said
from ..policy import NOTHING_MEASURED, REFUSE, action
from ..compare.engine import openblas_core
from ..timing import read_rows
from .store import HistoryError, RunRecord

COMMIT_KEY = "gpubench_git_commit"
DATE_KEY = "date"
UNKNOWN = "unknown"

# Context keys copied into the machine description as they are.
_MACHINE_KEYS: tuple[str, ...] = ("cpu_model", "cpu_logical_cpus", "gpu", "cuda_driver_version")


def machine_description(context: dict[str, Any]) -> dict[str, str]:
    desc = {key: str(context.get(key, UNKNOWN)) for key in _MACHINE_KEYS}
    # The OpenBLAS kernel set, read as gpubench-compare reads it, else the OPENBLAS_CORETYPE the
    # run was started with: it changes CPU GEMM times 2x on the same CPU.
    env = str(context.get("openblas_coretype_env", ""))
    desc["openblas_core"] = openblas_core(context) or (env if env not in ("", "unset") else UNKNOWN)
    return desc


def machine_fingerprint(description: dict[str, str]) -> str:
    canonical = json.dumps(description, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


def family_of(name: str) -> str:
    """'matmul/cpu/openblas/dtype:fp32/m:64/...' -> 'matmul/cpu/openblas'.

    The leading path components before the first parameter (the first one with a ':'); the
    '/manual_time' suffix of GPU rows is not part of it.
    """
    parts = list(itertools.takewhile(lambda part: ":" not in part, name.split("/")))
    if parts[-1:] == ["manual_time"]:
        parts.pop()
    return "/".join(parts) or name


def _time_utc_s(path: str, date: str) -> float:
    try:
        moment = datetime.fromisoformat(date)
    except ValueError:
        raise HistoryError(f"{path}: date {date!r} is not an ISO 8601 date and time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)  # bench writes an offset; without one: UTC
    return moment.timestamp()


def _repetitions(rows: pd.DataFrame) -> list[int]:
    """The repetition number of each row: its repetition_index, or for a row without one the
    count of the benchmark's rows before it. Google Benchmark lets two registrations share a name
    (a shape that is in two sweeps); like gpubench-compare, their rows are pooled as repetitions
    of one, so a number already taken becomes one past the largest."""
    taken: dict[str, set[int]] = {}
    numbers = []
    for name, index in zip(rows["name"], rows["repetition"]):
        seen = taken.setdefault(name, set())
        number = len(seen) if pd.isna(index) else int(index)
        number = max(seen) + 1 if number in seen else number
        seen.add(number)
        numbers.append(number)
    return numbers


def read_run(path: str, commit: str | None = None, date: str | None = None) -> RunRecord:
    """Read and check one bench JSON file. Raises BenchJsonError or HistoryError, one line each
    (a text, a status.Said or a benchjson.Refusal: history.words.error_text words it).

    `commit` and `date` replace the context's values (files written by other programs have none).
    """
    report, rows = read_rows(path, "history add", HistoryError, "not stored")
    context = report.context
    commit = commit or str(context.get(COMMIT_KEY, "") or "")
    if not commit:
        raise HistoryError(said("no_commit", path=path, key=COMMIT_KEY))
    date = date or str(context.get(DATE_KEY, "") or "")
    if not date:
        raise HistoryError(f"{path}: no '{DATE_KEY}' in the context (pass --date)")

    if rows.empty:
        raise HistoryError(f"{path}: no benchmark rows")
    rows = rows[rows["run_type"] == "iteration"]
    if rows.empty:
        raise HistoryError(said("only_aggregates", path=path))
    rows = rows.assign(repetition=_repetitions(rows))
    benchmarks = rows.drop_duplicates("name")[["name", "threads"]]
    benchmarks = benchmarks.assign(
        family=benchmarks["name"].map(family_of),
        manual_time=benchmarks["name"].str.endswith("/manual_time"),
        threads=benchmarks["threads"].where(benchmarks["threads"].map(usable_counter)),
    )[["name", "family", "manual_time", "threads"]]
    measured = rows["reason"].isna()
    if not measured.any() and action("history add", NOTHING_MEASURED).kind == REFUSE:
        reasons = rows["reason"].value_counts()
        counts = dict(rows=int(reasons.sum()), first=reasons.index[0], others=len(reasons) - 1)
        raise HistoryError(said("nothing_measured", path=path, **counts))
    samples = rows.loc[measured, ["name", "repetition", "real_time_s", "cpu_time_s", "iterations"]]
    # 1 disturbed, 0 quiet, NaN (NULL) conditions unknown: stored as the reader decided it.
    samples["disturbed"] = rows["conditions"].map({DISTURBED: 1, QUIET: 0})
    failures = rows.loc[~measured, ["name", "repetition", "reason"]]

    with open(path, "rb") as fh:
        sha256 = hashlib.sha256(fh.read()).hexdigest()
    desc, time_utc_s = machine_description(context), _time_utc_s(path, date)
    fingerprint = machine_fingerprint(desc)
    record = (fingerprint, desc, commit, date, time_utc_s, path, sha256, context, benchmarks)
    # An interrupted run is stored with what it finished, marked (policy: interrupted run).
    return RunRecord(*record, samples, failures, report.interrupted)
