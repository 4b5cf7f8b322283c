"""A run stopped by a signal: bench writes the benchmarks it finished as one whole document whose
context says so (`interrupted`, `benchmarks_finished`, `benchmarks_selected`). The reader reads it
as cut off, tells it apart from a truncated file and checks the three keys; every tool does what
the policy table says of an interrupted run (policy.INTERRUPTED).

The fixtures are real bench files (the CI gate's CPU baseline, the CPU-only and H100 fixtures)
cut after some of their benchmarks, with the three keys added to the context, as bench writes
them.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, REPO, run_tool

from gpubench_tools import benchjson, export, policy
from gpubench_tools.__main__ import main as errors_main
from gpubench_tools.advise import main as advise_main
from gpubench_tools.compare import main as compare_main
from gpubench_tools.history import store
from gpubench_tools.history.cli import main as history_main
from gpubench_tools.report import main as report_main
from gpubench_tools.wording import cut_off_lines, cut_off_words

OK, REGRESSION, UNUSABLE = 0, 1, 2
CI_CPU = REPO / "reports" / "baselines" / "ci-cpu.json"


def interrupted(
    source: Path, out: Path, keep: int | None = None, signal: str = "SIGTERM", **context: Any
) -> tuple[Path, int, int]:
    """`source` as bench writes it when `signal` stops it after its first `keep` benchmarks
    (default: half): (path, finished, selected). `context` adds or replaces context keys."""
    doc = json.loads(source.read_text())
    names = list(dict.fromkeys(row["run_name"] for row in doc["benchmarks"]))
    keep = len(names) // 2 if keep is None else keep
    kept = set(names[:keep])
    doc["benchmarks"] = [row for row in doc["benchmarks"] if row["run_name"] in kept]
    doc["context"].update(
        interrupted=signal, benchmarks_finished=keep, benchmarks_selected=len(names)
    )
    doc["context"].update(context)
    out.write_text(json.dumps(doc, indent=2))
    return out, keep, len(names)


# --- the reader ---------------------------------------------------------------------------------


@pytest.mark.parametrize("signal", benchjson.INTERRUPT_SIGNALS)
def test_an_interrupted_file_is_cut_off_with_its_signal_and_counts(
    tmp_path: Path, signal: str
) -> None:
    path, finished, selected = interrupted(CI_CPU, tmp_path / "run.json", 2, signal)
    report = benchjson.load_report(str(path))
    assert report.state == benchjson.CUT_OFF and not report.recovered_from_truncation
    assert report.interrupted == benchjson.Interruption(signal, finished, selected)
    assert cut_off_words(report) == f"interrupted by {signal} after 2 of {selected} benchmarks"
    assert policy.file_situation(report) == policy.INTERRUPTED
    assert cut_off_lines(report)[0] == (
        f"{path}: the run was interrupted by {signal} after 2 of {selected} benchmarks: "
        f"{selected - 2} selected benchmarks were not measured (no rows)"
    )
    # The rows it finished are read as in any file: all valid.
    assert {row.status for row in report.rows} == {benchjson.VALID}


def test_a_truncated_file_says_truncated_not_interrupted(tmp_path: Path) -> None:
    text = CI_CPU.read_text()
    path = tmp_path / "cut.json"
    path.write_text(text[: len(text) // 2])
    report = benchjson.load_report(str(path))
    assert report.state == benchjson.CUT_OFF and report.interrupted is None
    assert policy.file_situation(report) == policy.CUT_OFF
    assert cut_off_words(report) == f"truncated after {len(report.rows)} complete rows"
    assert "interrupted" not in " ".join(cut_off_lines(report))


def test_a_complete_file_has_no_interruption() -> None:
    report = benchjson.load_report(str(CI_CPU))
    assert report.state == benchjson.COMPLETE and report.interrupted is None
    assert cut_off_words(report) is None and policy.file_situation(report) is None


# Each malformed interruption is refused (not a bench file: exit 2 in every tool) with one line
# naming the key and the value as the file wrote it.
MALFORMED: list[tuple[str, str]] = [
    ('"interrupted": "SIGKILL"', 'context "interrupted" is "SIGKILL" (expected one of "SIGINT"'),
    ('"interrupted": 15', 'context "interrupted" is 15 (expected one of'),
    ('"interrupted": null', 'context "interrupted" is null (expected one of'),
    ('"benchmarks_finished": 2.0', 'context "benchmarks_finished" is 2.0 (expected an integer'),
    ('"benchmarks_finished": 2e0', 'context "benchmarks_finished" is 2e0 (expected an integer'),
    ('"benchmarks_finished": "2"', 'context "benchmarks_finished" is "2" (expected an integer'),
    ('"benchmarks_finished": -1', 'context "benchmarks_finished" is -1 (expected an integer'),
    ('"benchmarks_finished": true', 'context "benchmarks_finished" is true (expected an integer'),
    ('"benchmarks_selected": NaN', 'context "benchmarks_selected" is NaN (expected an integer'),
    ('"benchmarks_selected": 1e30', 'context "benchmarks_selected" is 1e30 (expected an integer'),
    (
        '"benchmarks_selected": 99999999999999999999',
        'context "benchmarks_selected" is 99999999999999999999 (expected an integer',
    ),
    ('"benchmarks_selected": 1', 'context "benchmarks_finished" is 2, more than'),
]


@pytest.mark.parametrize("replacement, message", MALFORMED)
def test_a_malformed_interruption_is_named_as_written(
    tmp_path: Path, replacement: str, message: str
) -> None:
    path, _, _ = interrupted(CI_CPU, tmp_path / "run.json", 2)
    key = replacement.split(":")[0]
    lines = [
        (
            f"    {replacement}" + ("," if line.endswith(",") else "")
            if line.strip().startswith(key + ":")
            else line
        )
        for line in path.read_text().splitlines()
    ]
    path.write_text("\n".join(lines))
    with pytest.raises(benchjson.BenchJsonError) as read:
        benchjson.load_report(str(path))
    assert message in str(read.value) and str(path) in str(read.value)


@pytest.mark.parametrize("missing", benchjson.INTERRUPT_KEYS)
def test_an_interruption_without_one_of_its_keys_is_refused(tmp_path: Path, missing: str) -> None:
    path, _, _ = interrupted(CI_CPU, tmp_path / "run.json", 2)
    doc = json.loads(path.read_text())
    del doc["context"][missing]
    path.write_text(json.dumps(doc))
    with pytest.raises(benchjson.BenchJsonError, match=f'no "{missing}"'):
        benchjson.load_report(str(path))


def test_a_repeated_interruption_key_is_refused(tmp_path: Path) -> None:
    path, _, _ = interrupted(CI_CPU, tmp_path / "run.json", 2)
    text = path.read_text().replace('"context": {', '"context": {"interrupted": "SIGINT", ', 1)
    path.write_text(text)
    with pytest.raises(
        benchjson.BenchJsonError, match='context "interrupted" appears more than once'
    ):
        benchjson.load_report(str(path))


def test_errors_counts_an_interrupted_file_and_says_how_far_it_got(tmp_path: Path, capsys) -> None:
    path, _, selected = interrupted(CI_CPU, tmp_path / "run.json", 2, "SIGHUP")
    code, out, err = run_tool(capsys, errors_main, "--errors", str(path))
    assert code == OK, err
    assert out.strip().endswith(
        f"; cut off: interrupted by SIGHUP after 2 of {selected} benchmarks"
    )
    assert out.startswith("0 rows failed")


# --- the tools ----------------------------------------------------------------------------------


@pytest.mark.parametrize("allow_missing", [[], ["--allow-missing"]])
def test_compare_fails_an_interrupted_contender(
    tmp_path: Path, capsys, allow_missing: list[str]
) -> None:
    path, _, selected = interrupted(CI_CPU, tmp_path / "run.json", 2)
    out_json = tmp_path / "result.json"
    args = [str(CI_CPU), str(path), "--json", str(out_json), *allow_missing]
    code, out, _ = run_tool(capsys, compare_main, *args)
    assert code == REGRESSION
    assert f"cut off (interrupted by SIGTERM after 2 of {selected} benchmarks)" in out
    assert f"{selected - 2} benchmarks selected were not measured" in out
    doc = json.loads(out_json.read_text())
    assert doc["contender"]["interrupted"] == {
        "signal": "SIGTERM",
        "benchmarks_finished": 2,
        "benchmarks_selected": selected,
    }
    assert doc["contender"]["state"] == "cut off" and doc["exit_code"] == REGRESSION


def test_compare_refuses_an_interrupted_baseline(tmp_path: Path, capsys) -> None:
    path, _, selected = interrupted(CI_CPU, tmp_path / "run.json", 2, "SIGINT")
    code, _, err = run_tool(capsys, compare_main, str(path), str(CI_CPU))
    assert code == UNUSABLE
    assert f"cut off (interrupted by SIGINT after 2 of {selected} benchmarks)" in err
    assert "a baseline must be a whole run" in err


def test_history_stores_the_finished_rows_marked_interrupted(tmp_path: Path, capsys) -> None:
    path, _, selected = interrupted(CI_CPU, tmp_path / "run.json", 2)
    db = tmp_path / "history.db"
    code, out, err = run_tool(capsys, history_main, "add", str(db), str(path))
    assert code == OK, err
    assert "added run 1" in out and "of 2 benchmarks" in out
    words = f"interrupted by SIGTERM after 2 of {selected} benchmarks"
    assert words in err and "marked interrupted" in err
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT interrupted FROM runs").fetchall() == [(words,)]
        stored = conn.execute("SELECT count(DISTINCT benchmark_id) FROM samples").fetchone()[0]
    assert stored == 2
    code, out, _ = run_tool(capsys, history_main, "check", str(db))
    assert code == OK and "newest run: commit " in out and words in out


def test_history_check_says_why_a_benchmark_is_missing(tmp_path: Path, capsys) -> None:
    """A whole run, then an interrupted one at a newer commit: the benchmarks it did not reach
    are missing (never failed), and the note names the interruption."""
    db = tmp_path / "history.db"
    assert run_tool(capsys, history_main, "add", str(db), str(CI_CPU))[0] == OK
    path, _, selected = interrupted(CI_CPU, tmp_path / "run.json", 2)
    doc = json.loads(path.read_text())
    doc["context"].update(gpubench_git_commit="newer", date="2030-01-01T00:00:00+00:00")
    path.write_text(json.dumps(doc))
    assert run_tool(capsys, history_main, "add", str(db), str(path))[0] == OK
    code, out, _ = run_tool(capsys, history_main, "check", str(db), "--verbose")
    assert code == OK
    missing = [line for line in out.splitlines() if line.strip().startswith("missing:")]
    assert len(missing) == selected - 2
    assert all(f"interrupted by SIGTERM after 2 of {selected}" in line for line in missing)


def test_a_version_2_history_is_migrated_with_whole_runs(tmp_path: Path, capsys) -> None:
    db = tmp_path / "history.db"
    assert run_tool(capsys, history_main, "add", str(db), str(CI_CPU))[0] == OK
    with sqlite3.connect(db) as conn:  # back to what version 2 wrote
        conn.execute("ALTER TABLE runs DROP COLUMN interrupted")
        conn.execute("PRAGMA user_version = 2")
    with store.HistoryStore.open(str(db)) as opened:
        runs = store.History.load(opened).runs
    assert len(runs) == 1 and runs[0].interrupted is None
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == store.SCHEMA_VERSION


def test_export_refuses_an_interrupted_run(tmp_path: Path, capsys) -> None:
    path, _, selected = interrupted(CI_CPU, tmp_path / "run.json", 2)
    for fmt in export.FORMATS:
        code, out, err = run_tool(capsys, export.main, str(path), "--format", fmt)
        assert code == UNUSABLE and out == ""
        assert f"interrupted by SIGTERM after 2 of {selected} benchmarks" in err
        assert "not exported" in err and len(err.strip().splitlines()) == 1


def test_report_says_at_the_top_that_the_run_was_interrupted(tmp_path: Path, capsys) -> None:
    path, finished, selected = interrupted(FIXTURES / "cpu_only.json", tmp_path / "run.json")
    out_dir = tmp_path / "report"
    code, _, err = run_tool(capsys, report_main, str(path), "--out", str(out_dir))
    assert code == OK
    words = f"interrupted by SIGTERM after {finished} of {selected} benchmarks"
    missing = f"{selected - finished} selected benchmarks were not measured"
    assert words in err.splitlines()[0] and missing in err.splitlines()[0]
    markdown = (out_dir / "report.md").read_text()
    assert words in markdown and markdown.index(words) < markdown.index("## The answer")
    html = (out_dir / "report.html").read_text()
    assert words in html and html.index(words) < html.index('id="answer"')


def test_advise_answers_from_the_finished_rows_and_says_so(tmp_path: Path, capsys) -> None:
    source = FIXTURES / "h100.json"
    selected = len({row["run_name"] for row in json.loads(source.read_text())["benchmarks"]})
    path, _, _ = interrupted(source, tmp_path / "run.json", selected, "SIGHUP")
    doc = json.loads(path.read_text())
    doc["context"]["benchmarks_selected"] = selected + 7
    path.write_text(json.dumps(doc))
    code, out, err = run_tool(capsys, advise_main, str(path), "--gemm", "512x512x512")
    assert code == OK and out
    assert f"interrupted by SIGHUP after {selected} of {selected + 7} benchmarks" in err
    assert "7 selected benchmarks were not measured" in err


# --- messages quote the file --------------------------------------------------------------------


@pytest.mark.parametrize("written", ["-1.5", "-1e-300", "NaN", "-Infinity", "1e30"])
def test_compare_quotes_an_invalid_time_as_the_file_wrote_it(
    tmp_path: Path, capsys, written: str
) -> None:
    """Never the number the reader made of it ("nan" for a negative time, "1e+30")."""
    doc = json.loads(CI_CPU.read_text())
    name = next(r["run_name"] for r in doc["benchmarks"])
    text = json.dumps(doc, indent=1)
    path = tmp_path / "bad.json"
    path.write_text(text)
    lines = path.read_text().splitlines()
    inside = False
    for i, line in enumerate(lines):
        if f'"run_name": "{name}"' in line:
            inside = True
        if inside and line.strip().startswith('"real_time":'):
            lines[i] = f'  "real_time": {written},'
            inside = False
    path.write_text("\n".join(lines))
    code, out, _ = run_tool(capsys, compare_main, str(CI_CPU), str(path))
    assert code == REGRESSION
    assert f"real_time is {written} (" in out
    assert "(nan)" not in out and "1e+30" not in out


def test_a_config_value_is_quoted_as_written(tmp_path: Path, capsys) -> None:
    config = tmp_path / "c.json"
    config.write_text('{"thresholds": {"max_cv": 1e400, "alpha": 0.050}}')
    code, _, err = run_tool(capsys, compare_main, str(CI_CPU), str(CI_CPU), "--config", str(config))
    assert code == UNUSABLE and "thresholds.max_cv: 1e400 is not a number above 0" in err


# --- end to end: a real bench stopped by a signal, then every tool -------------------------------


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(a whole run, the same sweep stopped by SIGTERM after 2 of its benchmarks) from the real
    bench: 3 repetitions of 0.2 s or more each, so the signal lands inside a benchmark."""
    import signal
    import subprocess

    from conftest import bench_binary

    bench = bench_binary()
    if not bench.is_file():
        pytest.skip(f"no bench at {bench}")
    folder = tmp_path_factory.mktemp("stopped")
    sweep = [
        str(bench),
        "--benchmark_filter=^matmul/cpu/openblas/dtype:fp32/m:(16|32|48|64|96|128)/n:"
        "(16|32|48|64|96|128)/k:(16|32|48|64|96|128)/threads:1$",
        "--benchmark_repetitions=3",
    ]
    whole, cut = folder / "whole.json", folder / "cut.json"
    subprocess.run(
        [*sweep, "--benchmark_min_time=0.01", f"--benchmark_out={whole}"],
        capture_output=True,
        check=True,
        timeout=300,
    )
    process = subprocess.Popen(
        [*sweep, "--benchmark_min_time=0.2", f"--benchmark_out={cut}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "GPUBENCH_PROGRESS_SECONDS": "0"},
        preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL),
    )
    try:
        assert process.stderr is not None
        for line in process.stderr:
            if line.startswith("gpubench: 2/"):
                process.send_signal(signal.SIGTERM)
                break
        process.wait(timeout=300)
    finally:
        process.kill()
    assert process.returncode == 128 + signal.SIGTERM
    return whole, cut


def test_a_real_stopped_run_through_every_tool(stopped_run, tmp_path: Path, capsys) -> None:
    whole, cut = stopped_run
    read = benchjson.load_report(str(cut))
    assert read.state == benchjson.CUT_OFF and read.interrupted is not None
    finished, selected = read.interrupted.finished, read.interrupted.selected
    in_whole = {row["run_name"] for row in json.loads(whole.read_text())["benchmarks"]}
    assert selected == len(in_whole) and 2 <= finished < selected
    assert {row.run_name for row in read.rows} < in_whole
    said = f"interrupted by SIGTERM after {finished} of {selected} benchmarks"
    # compare: a cut-off contender fails on the benchmarks it never measured, --allow-missing too.
    for extra in ([], ["--allow-missing"]):
        code, out, err = run_tool(capsys, compare_main, str(whole), str(cut), *extra)
        assert code == REGRESSION and said in out + err
    # history: the finished rows stored, the run marked interrupted.
    db = tmp_path / "h.db"
    code, _, err = run_tool(capsys, history_main, "add", str(db), str(cut))
    assert code == OK and said in err
    with sqlite3.connect(db) as connection:
        columns = [row[1] for row in connection.execute("PRAGMA table_info(runs)")]
        assert "interrupted" in columns
    # export: refused, naming how far the run got.
    code, _, err = run_tool(
        capsys, export.main, "--format", "bencher", str(cut), "--out", str(tmp_path / "e.json")
    )
    assert code == UNUSABLE and said in err
    # report: says so at the top.
    code, _, _ = run_tool(capsys, report_main, str(cut), "--out", str(tmp_path / "r"), "--quiet")
    assert code == OK
    head = (tmp_path / "r" / "report.md").read_text().split("## ")[0]
    assert said in head
