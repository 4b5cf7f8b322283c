"""The history database: every ingested run in one SQLite file.

A run is one bench JSON file: the suite commit and the date it was measured, the machine it ran
on, and for each benchmark the time of every repetition with its conditions (disturbed, quiet, or
unknown for a file without condition counters and for runs stored by schema version 1). Rows
that failed or were skipped go to their own table, so the history shows that a benchmark stopped working without feeding a zero
into any statistic.

Each run is written in one transaction. A crash or a kill in the middle of a run leaves a hot
rollback journal beside the file, and SQLite undoes the half-written run when the file is next
opened: the database only ever holds complete runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import resources
from typing import Any, Iterator, NamedTuple

import pandas as pd

from ..benchjson import Interruption
from ..policy import DISTURBED_ROW, LIST, action
from ..timing import choose_time

SCHEMA_VERSION = 3
# Version 1 had no conditions: its samples get `disturbed` NULL (conditions unknown) when a newer
# gpubench-history first opens the file (_check_or_create), in one transaction. Version 2 had no
# interrupted runs: its runs get `interrupted` NULL (a whole run).
_MIGRATIONS = {
    1: "ALTER TABLE samples ADD COLUMN disturbed INTEGER",
    2: "ALTER TABLE runs ADD COLUMN interrupted TEXT",
}
# Written into the database header (PRAGMA application_id) so that another program's SQLite file
# is refused instead of being read as an empty or broken history. 0x47504248 is "GPBH".
APPLICATION_ID = 0x47504248

# The tables, as SQL (statements split at ";": no comment in it holds one).
_SCHEMA = resources.files(__package__).joinpath("store.sql").read_text("utf-8")


class HistoryError(Exception):
    """A database or input problem the user must fix. str() is one line that says which and what."""


class Machine(NamedTuple):
    """A machine of the history; templates/words.j2 (`machine_label`) words its description."""

    id: int
    fingerprint: str
    description: dict[str, str]

    @property
    def gpu(self) -> str | None:
        """The GPU's name; None for a machine without one (or not known)."""
        gpu = self.description.get("gpu", "unknown")
        return None if gpu in ("none", "unknown", "") else gpu


class RunRecord(NamedTuple):
    """One run, ready to store: what ingest makes of a bench JSON file. The tables hold the
    columns of `benchmarks`, `samples` and `failures`, with the benchmark's name for its id."""

    machine_fingerprint: str
    machine_description: dict[str, str]
    git_commit: str
    date: str
    time_utc_s: float
    source_path: str
    source_sha256: str
    context: dict[str, Any]
    benchmarks: pd.DataFrame  # name, family, manual_time, threads
    samples: pd.DataFrame  # name, repetition, real_time_s, cpu_time_s, iterations, disturbed
    failures: pd.DataFrame  # name, repetition, reason
    # None for a whole run; for a run a signal stopped, what its context says (ingest.read_run
    # gives the Interruption; history.words.stored words it, "interrupted by SIGTERM after
    # 32 of 46 benchmarks"): only what it finished is stored.
    interrupted: Interruption | str | None = None


class AddOutcome(NamedTuple):
    run_id: int
    added: bool  # False: this run (machine, commit, date) was already stored; nothing changed
    same_content: bool  # when not added: whether the stored run came from an identical file
    new_machine: Machine | None = None  # the machine of the run, when this run stored it


# Every repetition and every failed or skipped row, by the benchmark's name.
SAMPLES = (
    "SELECT s.run_id, b.name AS benchmark, s.repetition, s.real_time_s, s.cpu_time_s, "
    "s.iterations, s.disturbed FROM samples s JOIN benchmarks b ON b.id = s.benchmark_id "
    "ORDER BY s.run_id, b.name, s.repetition"
)
FAILURES = (
    "SELECT f.run_id, b.name AS benchmark, f.repetition, f.reason "
    "FROM failures f JOIN benchmarks b ON b.id = f.benchmark_id ORDER BY f.run_id, b.name"
)
# All runs, oldest first (by measurement date; ties in the order they were added).
_RUNS = "SELECT id, machine_id, git_commit, date, time_utc_s, source_path, interrupted FROM runs "
_RUNS += "ORDER BY time_utc_s, id"
# Each run of a machine that measured a benchmark or recorded it failing, runs in _RUNS's order.
_MEASURED = (
    "SELECT DISTINCT r.machine_id, b.name AS benchmark, r.id FROM runs r JOIN (SELECT run_id, "
    "benchmark_id FROM samples UNION SELECT run_id, benchmark_id FROM failures) m ON m.run_id = "
    "r.id JOIN benchmarks b ON b.id = m.benchmark_id ORDER BY r.time_utc_s, r.id"
)


class HistoryStore(contextlib.AbstractContextManager):
    """An open history database. Use `HistoryStore.open(path)` as a context manager."""

    def __init__(self, conn: sqlite3.Connection, path: str) -> None:
        self._conn = conn
        self.path = path

    @classmethod
    def open(cls, path: str, create: bool = False) -> "HistoryStore":
        """Open (with create=True: create if missing) and check that it is a history we can read."""
        if not create and not os.path.exists(path):
            raise HistoryError(f"{path}: no such history database (create it with 'add')")
        try:
            # isolation_level=None: transactions are begun and ended explicitly, one per run.
            conn = sqlite3.connect(path, timeout=30.0, isolation_level=None)
        except sqlite3.Error as exc:
            raise HistoryError(f"{path}: cannot open as a database: {exc}") from None
        store = cls(conn, path)
        try:
            store._check_or_create(create)
        except BaseException as exc:
            conn.close()
            if isinstance(exc, sqlite3.OperationalError):  # locked for 30 s, read-only, ...
                raise HistoryError(f"{path}: cannot open: {exc}") from None
            if isinstance(exc, sqlite3.DatabaseError):  # "file is not a database"
                raise HistoryError(f"{path}: not a gpubench history database ({exc})") from None
            raise
        return store

    def __exit__(self, *exc: object) -> None:
        self._conn.close()

    def _check_or_create(self, create: bool) -> None:
        if create:
            # Under the write lock, so that two `add`s creating the same file do not both try.
            with self._transaction():
                if self._header() == (0, 0, 0):
                    for statement in filter(str.strip, _SCHEMA.split(";")):
                        self._conn.execute(statement)
                    # Both live in the database header and are journaled like any page, so the
                    # file becomes a history in the same commit that creates the tables.
                    self._conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                    self._conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        app_id, version, tables = self._header()
        if (app_id, version, tables) == (0, 0, 0):
            return  # an empty file that nothing was added to: reads find no runs
        if app_id != APPLICATION_ID:
            raise HistoryError(
                f"{self.path}: not a gpubench history database (an SQLite file of another program)"
            )
        if version > SCHEMA_VERSION:
            raise HistoryError(
                f"{self.path}: written by a newer gpubench-history (schema version {version}; this "
                f"one reads up to {SCHEMA_VERSION}): upgrade gpubench-tools"
            )
        if version in _MIGRATIONS:
            # Up to SCHEMA_VERSION in one transaction, under the write lock (two processes opening
            # it do not both migrate): the stored runs keep every value.
            with self._transaction():
                version = self._header()[1]
                while version in _MIGRATIONS:
                    self._conn.execute(_MIGRATIONS[version])
                    version += 1
                self._conn.execute(f"PRAGMA user_version = {version}")
        elif version != SCHEMA_VERSION:
            raise HistoryError(f"{self.path}: unknown history schema version {version}")

    def _header(self) -> tuple[int, ...]:
        """(application id, schema version, schema objects): all 0 in a blank SQLite file."""
        sql = ("PRAGMA application_id", "PRAGMA user_version", "SELECT count(*) FROM sqlite_master")
        return tuple(self._conn.execute(query).fetchone()[0] for query in sql)

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """BEGIN IMMEDIATE (the write lock at once) ... COMMIT, or ROLLBACK on any exception."""
        self._conn.execute("BEGIN IMMEDIATE")
        with self._conn:  # COMMIT, or ROLLBACK on any exception (and on a failed COMMIT)
            yield

    def add_run(self, r: RunRecord) -> AddOutcome:
        """Store one run in one transaction; a run already stored is left alone."""
        with self._transaction():
            conn = self._conn
            inserted = conn.execute(
                "INSERT OR IGNORE INTO machines (fingerprint, description) VALUES (?, ?)",
                (r.machine_fingerprint, json.dumps(r.machine_description, sort_keys=True)),
            )
            machine_id = conn.execute(
                "SELECT id FROM machines WHERE fingerprint = ?", (r.machine_fingerprint,)
            ).fetchone()[0]
            existing = conn.execute(
                "SELECT id, source_sha256 FROM runs WHERE machine_id = ? AND git_commit = ? "
                "AND date = ?",
                (machine_id, r.git_commit, r.date),
            ).fetchone()
            if existing is not None:
                return AddOutcome(existing[0], False, existing[1] == r.source_sha256)
            run = (machine_id, r.git_commit, r.date, r.time_utc_s, r.source_path, r.source_sha256)
            added = datetime.now(timezone.utc).isoformat(timespec="seconds")
            run_id = conn.execute(
                "INSERT INTO runs (machine_id, git_commit, date, time_utc_s, source_path, "
                "source_sha256, context, added_utc, interrupted) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*run, json.dumps(r.context, sort_keys=True), added, r.interrupted),
            ).lastrowid
            # Rows by column name; a NaN (a thread count or a time the file did not have) binds
            # as NULL. Samples and failures find their benchmark's id by its name.
            conn.executemany(
                "INSERT OR IGNORE INTO benchmarks (name, family, manual_time, threads) "
                "VALUES (:name, :family, :manual_time, :threads)",
                r.benchmarks.to_dict("records"),
            )
            for table, frame in (("samples", r.samples), ("failures", r.failures)):
                columns = list(frame.columns.drop("name"))
                conn.executemany(
                    f"INSERT INTO {table} (run_id, benchmark_id, {', '.join(columns)}) SELECT "
                    f":run_id, id, :{', :'.join(columns)} FROM benchmarks WHERE name = :name",
                    frame.assign(run_id=run_id).to_dict("records"),
                )
        machine = Machine(machine_id, r.machine_fingerprint, r.machine_description)
        return AddOutcome(int(run_id or 0), True, True, machine if inserted.rowcount else None)

    def frame(self, sql: str) -> pd.DataFrame:
        """The rows of a query of the history as a table."""
        conn = self._conn
        if self._header()[1] != SCHEMA_VERSION:
            # A blank file (opened, nothing added yet) has no tables: it reads as an empty
            # history, the same query on the schema with no rows.
            conn = sqlite3.connect(":memory:")
            conn.executescript(_SCHEMA)
        return pd.read_sql_query(sql, conn)


@dataclass
class History:
    """The stored runs as time series: per machine its runs in order, per run and benchmark the
    times of the repetitions. Loaded once from the store; the check and the charts read only this.
    """

    machines: dict[int, Machine]
    runs: list[Any]  # of all machines, by date (ties in the order they were added)
    runs_by_machine: dict[int, list[Any]]  # oldest first
    benchmarks: dict[str, Any]  # name -> .family, .manual_time, .threads (NaN when not known)
    # (run id, benchmark) -> [(real_time_s, cpu_time_s or NaN)], one pair per repetition that was
    # not measured while disturbed (quiet or conditions unknown): what the check judges from
    times: dict[tuple[int, str], list[tuple[float, float]]]
    # (run id, benchmark) -> why it has no samples in that run (failed or skipped)
    failures: dict[tuple[int, str], str]
    # (machine id, benchmark) -> the runs of the machine that measured the benchmark (or recorded
    # it failing), oldest first; by machine, then benchmark. A machine's runs need not all hold
    # the same benchmarks: one commit is often measured as several files (a sweep per workload).
    series: dict[tuple[int, str], list[Any]]
    # (run id, benchmark) -> [(real_time_s, cpu_time_s or NaN)] of the repetitions measured while
    # disturbed: stored and shown, never judged from (policy: disturbed repetition)
    disturbed: dict[tuple[int, str], list[tuple[float, float]]] = field(default_factory=dict)

    @classmethod
    def load(cls, store: HistoryStore, name_filter: str | None = None) -> "History":
        """Everything in the store, or only the benchmarks whose name matches `name_filter`."""
        pattern = re.compile(name_filter or "")  # the empty pattern matches every name
        rows = store.frame("SELECT id, fingerprint, description FROM machines ORDER BY id")
        machines = {i: Machine(i, fp, json.loads(d)) for i, fp, d in rows.itertuples(index=False)}
        runs = list(store.frame(_RUNS).itertuples(index=False, name="Run"))
        by_machine = {m: [r for r in runs if r.machine_id == m] for m in machines}
        every = store.frame("SELECT name, family, manual_time, threads FROM benchmarks")
        every = every[every["name"].map(pattern.search).notna()]
        benchmarks = {b.name: b for b in every.itertuples(index=False, name="Benchmark")}
        samples, failures, measured = (
            frame[frame["benchmark"].isin(benchmarks)]
            for frame in map(store.frame, (SAMPLES, FAILURES, _MEASURED))
        )
        # Policy ("history check", disturbed repetition): listed, never judged from.
        split = samples["disturbed"].eq(1) & (action("history check", DISTURBED_ROW).kind == LIST)
        pairs = samples.assign(pair=list(zip(samples["real_time_s"], samples["cpu_time_s"])))
        times, disturbed = (
            part.groupby(["run_id", "benchmark"], sort=False)["pair"].agg(list).to_dict()
            for part in (pairs[~split], pairs[split])
        )
        reasons = failures.groupby(["run_id", "benchmark"])["reason"].first().to_dict()
        by_id = {run.id: run for run in runs}
        series = {
            key: [by_id[run_id] for run_id in group["id"]]
            for key, group in measured.groupby(["machine_id", "benchmark"])
        }
        return cls(machines, runs, by_machine, benchmarks, times, reasons, series, disturbed)

    def time_source(self, benchmark: str, time: str) -> str:
        info = self.benchmarks.get(benchmark)
        return choose_time(benchmark, info.threads if info else None, time)

    def values(
        self, run_id: int, benchmark: str, time: str, disturbed: bool = False
    ) -> list[float]:
        """Seconds per iteration of each repetition not measured while disturbed (with
        `disturbed`: of each one measured while disturbed, left out of the check), on the clock
        `time` selects for it."""
        pairs = (self.disturbed if disturbed else self.times).get((run_id, benchmark), [])
        real = self.time_source(benchmark, time) == "real_time"
        return [t for t in (r if real else c for r, c in pairs) if t == t]  # not NaN
