"""gpubench-history add: what a run is, what is stored, and that nothing stored is ever lost.

The fixtures in fixtures/history/ are six consecutive real runs of `bench` on the 2-core CI
machine kind (fp32 single-threaded OpenBLAS GEMMs, 5 interleaved repetitions), trimmed to three
benchmarks.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from bad_inputs import CPU_ONLY, OK, UNUSABLE, call_tool, cpu_doc, write
from conftest import REPO, gb_row, write_bench_json

from gpubench_tools.history.cli import main
from gpubench_tools.history.ingest import family_of, machine_fingerprint, read_run
from gpubench_tools.history.store import FAILURES, SAMPLES, SCHEMA_VERSION, History, HistoryError
from gpubench_tools.history.store import HistoryStore

HISTORY_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "history"
RUNS = sorted(HISTORY_FIXTURES.glob("run*.json"))
GEMM_128 = "matmul/cpu/openblas/dtype:fp32/m:128/n:128/k:128/threads:1"
CONTEXT = {
    "date": "2026-11-23T10:00:00+00:00",
    "cpu_model": "Test CPU",
    "cpu_logical_cpus": "2",
    "gpu": "none",
    "gpubench_git_commit": "abc123",
    "openblas_config": "OpenBLAS 0.3.21 DYNAMIC_ARCH core=Haswell",
}


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def count(db: Path, table: str) -> int:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A history of the first fixture run alone, and what `add` said storing it: built once for
    the module (a test that adds to it works on a copy, `copy_of`)."""
    db = tmp_path_factory.mktemp("first") / "h.db"
    code, out, err = run_cli("add", str(db), str(RUNS[0]))
    assert code == 0, err
    return db, out


def copy_of(first_run: tuple[Path, str], tmp_path: Path) -> Path:
    return Path(shutil.copy(first_run[0], tmp_path / "h.db"))


def test_fixtures_are_six_runs() -> None:
    assert len(RUNS) == 6


def test_add_stores_every_repetition_in_seconds(first_run: tuple[Path, str]) -> None:
    db, out = first_run
    assert "added run 1" in out and "15 repetitions of 3 benchmarks" in out
    raw = json.loads(RUNS[0].read_text())
    row = next(
        b for b in raw["benchmarks"] if b["run_name"] == GEMM_128 and b["run_type"] == "iteration"
    )
    assert row["time_unit"] == "us"
    with HistoryStore.open(str(db)) as store:
        samples = [s for s in store.frame(SAMPLES).itertuples() if s.benchmark == GEMM_128]
        assert len(samples) == 5  # the repetitions; the mean/median/stddev/cv rows are not samples
        first = next(s for s in samples if s.repetition == row["repetition_index"])
        assert first.real_time_s == pytest.approx(row["real_time"] * 1e-6)
        assert first.cpu_time_s == pytest.approx(row["cpu_time"] * 1e-6)
        assert first.iterations == row["iterations"]
        (run,) = History.load(store).runs
        assert run.git_commit == raw["context"]["gpubench_git_commit"]
        assert run.date == raw["context"]["date"]


def test_readding_a_run_is_a_no_op_and_says_so(tmp_path: Path, first_run: tuple[Path, str]) -> None:
    db = copy_of(first_run, tmp_path)
    assert run_cli("add", str(db), str(RUNS[1]))[0] == 0
    before = count(db, "samples")
    code, out, _ = run_cli("add", str(db), str(RUNS[0]))
    assert code == 0
    assert "already stored, nothing to do" in out
    assert count(db, "runs") == 2 and count(db, "samples") == before


def test_same_commit_date_and_machine_from_another_file_keeps_the_stored_run(
    tmp_path: Path, first_run: tuple[Path, str]
) -> None:
    db = copy_of(first_run, tmp_path)
    copy = tmp_path / "copy.json"
    doc = json.loads(RUNS[0].read_text())
    doc["benchmarks"] = doc["benchmarks"][:3]
    copy.write_text(json.dumps(doc))
    code, out, _ = run_cli("add", str(db), str(copy))
    assert code == 0 and "came from a different file; the stored run is kept" in out
    assert count(db, "runs") == 1 and count(db, "samples") == 15


def test_a_rerun_of_the_same_commit_is_another_run(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    code, out, _ = run_cli("add", str(db), "--commit", "c1", *map(str, RUNS[:2]))
    assert code == 0 and out.count("added run") == 2


def test_failed_and_skipped_rows_are_recorded_but_never_samples(tmp_path: Path) -> None:
    gpu = "matmul/gpu/cublas_kernel/dtype:fp32/m:64/n:64/k:64/manual_time"
    skipped = gb_row("mlp/cpu/small/data:iris/threads:1", 0.0)
    skipped["iterations"] = 0  # how a SkipWithMessage row of Google Benchmark 1.8 looks here
    rows = [
        gb_row("matmul/cpu/openblas/dtype:fp32/m:64/n:64/k:64/threads:1", 5e-6),
        gb_row(gpu, 0.0, error="no usable CUDA device"),
        skipped,
    ]
    path = write_bench_json(tmp_path / "run.json", rows, CONTEXT)
    db = tmp_path / "h.db"
    code, out, err = run_cli("add", str(db), str(path))
    assert code == 0, err
    assert "1 repetition of 3 benchmarks, 2 failed or skipped rows" in out
    with HistoryStore.open(str(db)) as store:
        assert list(store.frame(SAMPLES)["benchmark"]) == [rows[0]["name"]]
        reasons = dict(store.frame(FAILURES)[["benchmark", "reason"]].values)
    assert reasons == {
        gpu: "error: no usable CUDA device",
        skipped["name"]: reasons[skipped["name"]],
    }
    assert reasons[skipped["name"]].startswith("skipped")


def test_gpu_rows_are_judged_on_their_event_time(tmp_path: Path) -> None:
    gpu = "matmul/gpu/cublas_kernel/dtype:fp32/m:64/n:64/k:64/manual_time"
    cpu = "matmul/cpu/openblas/dtype:fp32/m:64/n:64/k:64/threads:1"
    rows = [gb_row(gpu, 2e-6, {"threads": 1.0}), gb_row(cpu, 5e-6, {"blas_threads": 1.0})]
    rows[0]["cpu_time"] = 30.0  # host time around the launch: not the GPU's time
    rows[1]["real_time"] = 9.0  # wall time including time slices of other processes
    db = tmp_path / "h.db"
    run_cli("add", str(db), str(write_bench_json(tmp_path / "run.json", rows, CONTEXT)))
    with HistoryStore.open(str(db)) as store:
        history = History.load(store)
    (run,) = history.runs_by_machine[1]
    assert history.values(run.id, gpu, "auto") == [pytest.approx(2e-6)]
    assert history.values(run.id, gpu, "cpu") == [pytest.approx(2e-6)]
    assert history.values(run.id, cpu, "auto") == [pytest.approx(5e-6)]  # one thread: cpu_time
    assert history.values(run.id, cpu, "real") == [pytest.approx(9e-6)]
    assert history.benchmarks[gpu].family == "matmul/gpu/cublas_kernel"


def test_two_rows_of_one_name_are_pooled_as_repetitions(tmp_path: Path) -> None:
    """Google Benchmark allows two registrations with one name (a shape in two sweeps)."""
    name = "matmul/cpu/openblas/dtype:fp32/m:1024/n:1024/k:1024/threads:1"
    rows = [gb_row(name, 2e-2), gb_row(name, 3e-2)]  # both repetition 0
    db = tmp_path / "h.db"
    code, out, err = run_cli(
        "add", str(db), str(write_bench_json(tmp_path / "r.json", rows, CONTEXT))
    )
    assert code == 0, err
    assert "2 repetitions of 1 benchmark," in out
    with HistoryStore.open(str(db)) as store:
        assert sorted(store.frame(SAMPLES)["repetition"]) == [0, 1]


def test_family_and_machine() -> None:
    assert family_of("matmul/cpu/openblas/dtype:fp32/m:64/n:64/k:64/threads:1") == (
        "matmul/cpu/openblas"
    )
    assert family_of("overhead/sync/device/manual_time") == "overhead/sync/device"
    record = read_run(str(RUNS[0]))
    assert record.machine_description == {
        "cpu_model": "AMD EPYC",
        "cpu_logical_cpus": "2",
        "gpu": "none",
        "cuda_driver_version": "unknown",
        "openblas_core": "Haswell",
    }
    other = dict(record.machine_description, openblas_core="Cooperlake")
    assert machine_fingerprint(other) != record.machine_fingerprint


@pytest.mark.parametrize(
    "make, problem",
    [
        (lambda p: p.write_text(RUNS[0].read_text()[:9000]), "truncated"),
        (lambda p: p.write_text('{"not": "bench"}'), "no 'benchmarks' list"),
        (lambda p: p.write_text("[1, 2]"), "top level is a list"),
        (lambda p: p.write_bytes(b"\x89PNG\r\n\x1a\n"), "not a text file"),
    ],
    ids=["truncated", "foreign-object", "foreign-list", "binary"],
)
def test_unusable_file_is_an_error_naming_it_and_loses_nothing(
    tmp_path: Path, make: Any, problem: str
) -> None:
    db = tmp_path / "h.db"
    bad = tmp_path / "bad.json"
    make(bad)
    code, out, err = run_cli("add", str(db), str(RUNS[0]), str(bad), str(RUNS[1]))
    assert code == 2
    assert str(bad) in err and problem in err
    assert out.count("added run") == 2  # the files before and after it are stored
    assert count(db, "runs") == 2


def test_aggregates_only_file_is_refused(tmp_path: Path) -> None:
    doc = json.loads(RUNS[0].read_text())
    doc["benchmarks"] = [b for b in doc["benchmarks"] if b["run_type"] == "aggregate"]
    path = tmp_path / "agg.json"
    path.write_text(json.dumps(doc))
    code, _, err = run_cli("add", str(tmp_path / "h.db"), str(path))
    assert code == 2 and "only aggregate rows" in err


def test_file_without_commit_needs_one_named(tmp_path: Path) -> None:
    context = {k: v for k, v in CONTEXT.items() if k != "gpubench_git_commit"}
    path = write_bench_json(tmp_path / "run.json", [gb_row("a/b:1", 1e-3)], context)
    db = tmp_path / "h.db"
    code, _, err = run_cli("add", str(db), str(path))
    assert code == 2 and "--commit" in err and str(path) in err
    assert run_cli("add", str(db), "--commit", "deadbeef", str(path))[0] == 0


def test_newer_schema_is_refused(tmp_path: Path, first_run: tuple[Path, str]) -> None:
    db = copy_of(first_run, tmp_path)
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
        conn.commit()
    code, _, err = run_cli("check", str(db))
    assert code == 2 and "newer gpubench-history" in err
    code, _, err = run_cli("add", str(db), str(RUNS[1]))
    assert code == 2 and "newer gpubench-history" in err


def test_other_files_are_not_histories(tmp_path: Path) -> None:
    foreign = tmp_path / "other.db"
    with contextlib.closing(sqlite3.connect(foreign)) as conn:
        conn.execute("CREATE TABLE t (x)")
        conn.commit()
    with pytest.raises(HistoryError, match="another program"):
        HistoryStore.open(str(foreign))
    text = tmp_path / "notes.txt"
    text.write_text("hello, this is not a database at all\n" * 40)
    with pytest.raises(HistoryError, match="not a gpubench history database"):
        HistoryStore.open(str(text), create=True)
    code, _, err = run_cli("check", str(tmp_path / "missing.db"))
    assert code == 2 and "no such history database" in err


def test_an_error_inside_a_run_rolls_the_whole_run_back(
    tmp_path: Path, first_run: tuple[Path, str]
) -> None:
    db = copy_of(first_run, tmp_path)
    with contextlib.closing(sqlite3.connect(db)) as conn:
        # Fails at the first sample: after the run row and its benchmarks are written.
        conn.execute(
            "CREATE TRIGGER fail BEFORE INSERT ON samples "
            "BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END"
        )
        conn.commit()
    code, _, err = run_cli("add", str(db), str(RUNS[1]))
    assert code == 2 and "disk I/O error" in err
    assert count(db, "runs") == 1 and count(db, "samples") == 15


def _stored_runs_are_complete(db: Path, rows_per_run: int) -> int:
    """Open the database the way the tool does and check that every run is whole."""
    with contextlib.closing(sqlite3.connect(db)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    with HistoryStore.open(str(db)) as store:
        runs = History.load(store).runs
        per_run = store.frame(SAMPLES)["run_id"].value_counts().to_dict()
    assert all(per_run.get(run.id) == rows_per_run for run in runs), per_run
    return len(runs)


def _child_env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(REPO / "tools"))


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_killed_in_the_middle_of_a_run_leaves_only_complete_runs(
    tmp_path: Path, first_run: tuple[Path, str]
) -> None:
    """SIGKILL inside the transaction of the second run: the hot journal undoes it on open."""
    db = copy_of(first_run, tmp_path)
    child = f"""
import os, signal, sys
from gpubench_tools.history.store import HistoryStore
from gpubench_tools.history import cli
original = HistoryStore.__init__
def kill_midway(sql):
    if sql.startswith("INSERT INTO samples"):  # the run row and its benchmarks are written
        os.kill(os.getpid(), signal.SIGKILL)
def watched(self, conn, path):
    original(self, conn, path)
    conn.set_trace_callback(kill_midway)
HistoryStore.__init__ = watched
cli.main(["add", {str(db)!r}, {str(RUNS[1])!r}])
"""
    proc = subprocess.run([sys.executable, "-c", child], env=_child_env(), timeout=120)
    assert proc.returncode == -signal.SIGKILL
    assert Path(f"{db}-journal").exists()  # killed with the transaction open
    assert _stored_runs_are_complete(db, 15) == 1
    assert run_cli("add", str(db), str(RUNS[1]))[0] == 0
    assert _stored_runs_are_complete(db, 15) == 2


def _large_run(path: Path, index: int, rows: int) -> Path:
    context = dict(CONTEXT, date=f"2026-11-23T10:{index // 60:02d}:{index % 60:02d}+00:00")
    body = ",\n".join(
        json.dumps(gb_row(f"family/case:{i}/threads:1", 1e-6 * (1 + i % 7))) for i in range(rows)
    )
    path.write_text(f'{{"context": {json.dumps(context)},\n"benchmarks": [\n{body}\n]}}\n')
    return path


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_killed_add_of_many_files_leaves_only_complete_runs(tmp_path: Path) -> None:
    rows, files = 2000, 12
    paths = [_large_run(tmp_path / f"big{i:02d}.json", i, rows) for i in range(files)]
    db = tmp_path / "h.db"
    cmd = [sys.executable, "-m", "gpubench_tools.history", "add", str(db), *map(str, paths)]
    proc = subprocess.Popen(cmd, env=_child_env(), stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    added = 0
    for line in proc.stdout:
        added += line.startswith("added run")
        if added == 3:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    proc.stdout.close()
    stored = _stored_runs_are_complete(db, rows)
    assert 3 <= stored < files, "the kill came after the ingest ended: make the files larger"
    # Adding the same files again stores the rest and leaves the complete ones alone.
    code, out, _ = run_cli("add", str(db), *map(str, paths))
    assert code == 0 and out.count("already stored") == stored
    assert _stored_runs_are_complete(db, rows) == files


def _add(capsys: pytest.CaptureFixture[str], db: Path, path: Path, i: int) -> tuple[int, str]:
    code, _, err = call_tool(
        capsys,
        main,
        "add",
        str(db),
        str(path),
        "--commit",
        f"c{i}",
        "--date",
        f"2026-01-{i + 1:02d}T00:00:00",
    )
    return code, err


@pytest.mark.parametrize(
    "key, value", [("iterations", 1e30), ("real_time", math.nan), ("cpu_time", math.inf)]
)
def test_history_add_refuses_invalid_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str, value: Any
) -> None:
    db = tmp_path / "h.db"
    for i in range(3):
        assert _add(capsys, db, CPU_ONLY, i)[0] == OK
    doc = cpu_doc()
    for index in range(5):
        doc["benchmarks"][index][key] = value
    bad = write(tmp_path / "bad.json", doc)
    code, err = _add(capsys, db, bad, 3)
    assert code == UNUSABLE and len(err.strip().splitlines()) == 1
    assert str(bad) in err and "5 rows invalid" in err and "Traceback" not in err
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 3
        times = [r[0] for r in conn.execute("SELECT real_time_s FROM samples")]
    assert all(math.isfinite(t) and t > 0 for t in times)
