"""gpubench-history check and chart on real runs: no alarm on unchanged code, a planted 1.3x
slowdown caught once two runs show it, and honest answers when the data cannot decide."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from bad_inputs import CPU_ONLY, call_tool
from bad_inputs import OK as EXIT_OK
from conftest import FIXTURES, REPO, gb_row, write_bench_json

from gpubench_tools.history.check import (
    NOT_ENOUGH_HISTORY,
    NOT_ENOUGH_SAMPLES,
    OK,
    REGRESSION,
    CheckRule,
    check_history,
    rolling_regressions,
    summarize_checks,
)
from gpubench_tools.history.cli import main
from gpubench_tools.history.store import History, HistoryStore
from gpubench_tools.history.words import WORDS

RUNS = sorted((Path(__file__).resolve().parent / "fixtures" / "history").glob("run*.json"))
GEMM = "matmul/cpu/openblas/dtype:fp32/m:{m}/n:{m}/k:{m}/threads:1"


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def planted(src: Path, dst: Path, benchmark: str, factor: float) -> Path:
    """A copy of a real run with every time of one benchmark multiplied by `factor`."""
    doc = json.loads(src.read_text())
    for row in doc["benchmarks"]:
        if row["run_name"] == benchmark and row.get("aggregate_unit") != "percentage":
            row["real_time"] *= factor
            row["cpu_time"] *= factor
    dst.write_text(json.dumps(doc))
    return dst


def add_as_commits(db: Path, paths: list[Path], first: int = 1) -> None:
    for i, path in enumerate(paths, start=first):
        code, _, err = run_cli("add", str(db), "--commit", f"c{i}", str(path))
        assert code == 0, err


@pytest.fixture(scope="module")
def histories(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    """The first 2, 3, ... 6 fixture runs stored as commits c1, c2, ...: built once for the module
    (a test that adds to one works on a copy, `stored`)."""
    folder = tmp_path_factory.mktemp("histories")
    built: dict[int, Path] = {}
    for count, path in enumerate(RUNS, start=1):
        add_as_commits(folder / "h.db", [path], first=count)
        built[count] = Path(shutil.copy(folder / "h.db", folder / f"runs{count}.db"))
    return built


def stored(histories: dict[int, Path], count: int, tmp_path: Path) -> Path:
    """A copy of the history of the first `count` runs, for a test to add to."""
    return Path(shutil.copy(histories[count], tmp_path / "h.db"))


def load(db: Path) -> History:
    with HistoryStore.open(str(db)) as store:
        return History.load(store)


def test_unchanged_code_raises_no_alarm(histories: dict[int, Path]) -> None:
    db = histories[6]
    code, out, err = run_cli("check", str(db))
    assert code == 0, out + err
    assert "result: no confirmed regression" in out
    # Judged after every add, not only at the end: still no alarm.
    assert rolling_regressions(load(db), CheckRule()) == {}


@pytest.mark.parametrize("m", [64, 128, 256])
def test_planted_slowdown_in_the_two_newest_runs_is_a_regression(
    tmp_path: Path, m: int, histories: dict[int, Path]
) -> None:
    slow = GEMM.format(m=m)
    runs = [
        planted(RUNS[4], tmp_path / "slow5.json", slow, 1.3),
        planted(RUNS[5], tmp_path / "slow6.json", slow, 1.3),
    ]
    db = stored(histories, 4, tmp_path)
    add_as_commits(db, runs, first=5)
    code, out, _ = run_cli("check", str(db))
    assert code == 1
    regressions = [line for line in out.splitlines() if line.startswith("  REGRESSION:")]
    assert len(regressions) == 1 and slow in regressions[0], out
    assert "result: REGRESSION: 1 benchmark on 1 machine" in out
    (check,) = check_history(load(db), CheckRule())
    (verdict,) = check.with_verdict(REGRESSION)
    assert [c.run.git_commit for c in verdict.newest] == ["c6", "c5"]
    assert all(c.ratio > 1.2 for c in verdict.newest)


def test_planted_slowdown_in_the_newest_run_only_is_a_suspect(
    tmp_path: Path, histories: dict[int, Path]
) -> None:
    slow = GEMM.format(m=256)
    db = stored(histories, 5, tmp_path)
    add_as_commits(db, [planted(RUNS[5], tmp_path / "slow6.json", slow, 1.3)], first=6)
    code, out, _ = run_cli("check", str(db))
    assert code == 0
    assert f"suspect: {slow}" in out and "a re-run confirms or clears it" in out
    # The confirming re-run: the same commit measured again, equally slow.
    rerun = json.loads(planted(RUNS[5], tmp_path / "rerun.json", slow, 1.3).read_text())
    rerun["context"]["date"] = "2026-11-23T13:00:00+00:00"
    (tmp_path / "rerun.json").write_text(json.dumps(rerun))
    run_cli("add", str(db), "--commit", "c6", str(tmp_path / "rerun.json"))
    code, out, _ = run_cli("check", str(db))
    assert code == 1 and f"REGRESSION: {slow}" in out


def test_a_faster_run_is_no_regression(tmp_path: Path, histories: dict[int, Path]) -> None:
    fast = GEMM.format(m=128)
    db = stored(histories, 4, tmp_path)
    add_as_commits(db, [planted(p, tmp_path / p.name, fast, 0.5) for p in RUNS[4:]], first=5)
    assert run_cli("check", str(db))[0] == 0


def test_too_few_earlier_runs_is_not_enough_history(
    tmp_path: Path, histories: dict[int, Path]
) -> None:
    db = stored(histories, 2, tmp_path)
    slow = GEMM.format(m=256)
    add_as_commits(db, [planted(p, tmp_path / p.name, slow, 2.0) for p in RUNS[2:4]], first=3)
    code, out, err = run_cli("check", str(db))
    assert code == 0  # 2 earlier runs: not enough to know the machine's run-to-run spread
    assert "not enough history: 3 benchmarks, e.g." in out and "(--verbose lists them)" in out
    assert "not judged" in err
    _, out, _ = run_cli("check", str(db), "--verbose")
    assert f"not enough history: {slow}: 2 earlier runs" in out


def _single_repetition_runs(tmp_path: Path, count: int) -> list[Path]:
    """Runs of 1 repetition each: 1 value against 8 can never reach p < 0.01."""
    paths = []
    for i in range(count):
        doc = json.loads(RUNS[i % len(RUNS)].read_text())
        doc["context"]["date"] = f"2026-11-24T10:{i:02d}:00+00:00"
        doc["benchmarks"] = [
            b
            for b in doc["benchmarks"]
            if b["run_type"] == "iteration" and b["repetition_index"] == 0
        ]
        path = tmp_path / f"single{i}.json"
        path.write_text(json.dumps(doc))
        paths.append(path)
    return paths


def test_samples_too_few_for_alpha_say_so_instead_of_passing(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    paths = _single_repetition_runs(tmp_path, 10)
    slow = GEMM.format(m=64)
    paths[-2] = planted(paths[-2], paths[-2], slow, 3.0)
    paths[-1] = planted(paths[-1], paths[-1], slow, 3.0)
    add_as_commits(db, paths)
    code, out, err = run_cli("check", str(db))
    assert code == 0
    assert "not enough samples: 3 benchmarks" in out and "smallest p 0.111" in out
    assert "3 benchmarks not judged" in err
    _, out, _ = run_cli("check", str(db), "--verbose")
    assert f"not enough samples: {slow}: 1 vs 8 repetitions" in out


def test_a_benchmark_failing_in_the_newest_run_fails_the_check(
    tmp_path: Path, histories: dict[int, Path]
) -> None:
    broken = GEMM.format(m=64)
    doc = json.loads(RUNS[5].read_text())
    for row in doc["benchmarks"]:
        if row["run_name"] == broken:
            row.update(error_occurred=True, error_message="result differs", real_time=0.0)
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(doc))
    db = stored(histories, 5, tmp_path)
    add_as_commits(db, [path], first=6)
    code, out, _ = run_cli("check", str(db))
    assert code == 1 and f"FAILED: {broken}: fails in the newest run (error: result differs)" in out


def test_machines_are_judged_only_against_themselves(
    tmp_path: Path, histories: dict[int, Path]
) -> None:
    db = stored(histories, 6, tmp_path)
    # A slower machine's first runs: 2x slower everywhere, but nothing to compare them with.
    for i, src in enumerate(RUNS[:2]):
        doc = json.loads(src.read_text())
        doc["context"]["cpu_model"] = "Slower CPU"
        for row in doc["benchmarks"]:
            if row.get("aggregate_unit") != "percentage":
                row["real_time"] *= 2
                row["cpu_time"] *= 2
        path = tmp_path / f"other{i}.json"
        path.write_text(json.dumps(doc))
        assert run_cli("add", str(db), str(path))[0] == 0
    code, out, _ = run_cli("check", str(db), "--verbose")
    assert code == 0
    assert out.count("machine ") == 2
    checks = check_history(load(db), CheckRule())
    verdicts = {
        WORDS("machine_label", m=c.machine): {v.verdict for v in c.verdicts} for c in checks
    }
    assert verdicts["AMD EPYC x2, no GPU, OpenBLAS Haswell"] == {OK}
    assert verdicts["Slower CPU x2, no GPU, OpenBLAS Haswell"] == {NOT_ENOUGH_HISTORY}


def _split(src: Path, tmp_path: Path, index: int) -> list[Path]:
    """One run stored as two files, the way a commit's matmul and MLP sweeps are: m:256 alone in
    the second file, written a minute later."""
    doc = json.loads(src.read_text())
    parts = []
    for part, keep in enumerate((lambda n: "m:256/" not in n, lambda n: "m:256/" in n)):
        piece = dict(doc, benchmarks=[b for b in doc["benchmarks"] if keep(b["run_name"])])
        if part:
            later = datetime.fromisoformat(doc["context"]["date"]) + timedelta(minutes=1)
            piece["context"] = dict(doc["context"], date=later.isoformat())
        path = tmp_path / f"c{index}-part{part}.json"
        path.write_text(json.dumps(piece))
        parts.append(path)
    return parts


def test_a_commit_stored_as_several_files_is_judged_as_one(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    slow = GEMM.format(m=64)
    for i, src in enumerate(RUNS, start=1):
        first, second = _split(src, tmp_path, i)
        if i >= 5:
            first = planted(first, first, slow, 1.3)
        code, _, err = run_cli("add", str(db), "--commit", f"c{i}", str(first), str(second))
        assert code == 0, err
    code, out, _ = run_cli("check", str(db), "--verbose")
    assert code == 1, out
    assert f"REGRESSION: {slow}" in out
    assert "missing" not in out.replace(
        "0 missing", ""
    )  # m:64 and m:128 are not in the newest file
    assert "2 ok, 1 regression" in out


def test_a_benchmark_not_measured_at_the_newest_commit_is_missing(
    tmp_path: Path, histories: dict[int, Path]
) -> None:
    db = stored(histories, 5, tmp_path)
    doc = json.loads(RUNS[5].read_text())
    doc["benchmarks"] = [b for b in doc["benchmarks"] if "m:256/" not in b["run_name"]]
    newest = tmp_path / "newest.json"
    newest.write_text(json.dumps(doc))
    run_cli("add", str(db), "--commit", "c6", str(newest))
    code, out, _ = run_cli("check", str(db))
    assert code == 0 and "missing:" not in out and "1 missing" in out
    code, out, _ = run_cli("check", str(db), "--verbose")
    assert f"missing: {GEMM.format(m=256)}: not measured at commit c6; last at c5" in out


def test_filter_and_usage_errors(tmp_path: Path, histories: dict[int, Path]) -> None:
    db = histories[6]
    code, out, _ = run_cli("check", str(db), "--filter", "m:256/", "--verbose")
    assert code == 0 and "3 benchmarks" not in out and "1 benchmark:" in out
    assert run_cli("check", str(db), "--filter", "(")[0] == 2
    assert run_cli("check", str(db), "--filter", "nothing-matches")[0] == 2
    with pytest.raises(SystemExit) as exc:
        run_cli("check", str(db), "--min-ratio", "0.9")
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        run_cli("check")
    assert exc.value.code == 2
    empty = tmp_path / "empty.db"
    empty.touch()
    code, _, err = run_cli("check", str(empty))
    assert code == 2 and "no run stored" in err


def test_rule_defaults_are_the_documented_ones() -> None:
    rule = CheckRule()
    assert (rule.min_ratio, rule.alpha, rule.window, rule.confirm, rule.min_history) == (
        1.10,
        0.01,
        8,
        2,
        3,
    )
    assert rule.time == "auto"
    assert NOT_ENOUGH_SAMPLES == "not enough samples"


def test_chart_writes_png_per_family_and_an_offline_index(
    tmp_path: Path, histories: dict[int, Path]
) -> None:
    slow = GEMM.format(m=128)
    runs = [planted(p, tmp_path / p.name, slow, 1.3) for p in RUNS[4:]]
    gpu_rows = [
        gb_row("matmul/gpu/cublas_kernel/dtype:fp32/m:64/n:64/k:64/manual_time", 9e-6),
        gb_row("overhead/sync/device/manual_time", 4e-6),
    ]
    gpu_run = write_bench_json(
        tmp_path / "gpu.json",
        gpu_rows,
        {"date": "2026-11-23T12:00:00+00:00", "gpu": "NVIDIA Test GPU", "cpu_model": "Host"},
    )
    db = stored(histories, 4, tmp_path)
    add_as_commits(db, runs, first=5)
    assert run_cli("add", str(db), "--commit", "c6", str(gpu_run))[0] == 0
    out_dir = tmp_path / "charts"
    code, out, err = run_cli("chart", str(db), "--out", str(out_dir))
    assert code == 0, err
    pngs = sorted(p.name for p in out_dir.glob("*.png"))
    assert pngs == [
        "matmul-cpu-openblas.png",
        "matmul-gpu-cublas-kernel.png",
        "overhead-sync-device.png",
    ]
    for name in pngs:
        assert (out_dir / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    index = (out_dir / "index.html").read_text()
    for name in pngs:
        assert f'<img src="{name}"' in index
    assert "http" not in index  # nothing fetched from the network: readable offline
    assert slow in index and "regression" in index
    assert "NVIDIA Test GPU" in index


def test_chart_filter(tmp_path: Path, histories: dict[int, Path]) -> None:
    db = histories[3]
    out_dir = tmp_path / "charts"
    assert run_cli("chart", str(db), "--out", str(out_dir), "--filter", "m:64/")[0] == 0
    assert [p.name for p in out_dir.glob("*.png")] == ["matmul-cpu-openblas.png"]
    assert run_cli("chart", str(db), "--out", str(out_dir), "--filter", "^gpu")[0] == 2


def test_the_measuring_script_runs_on_stored_runs(tmp_path: Path) -> None:
    """scripts/measure_history_check.py (docs/history.md) on the six fixture runs twice over:
    it reads the store's current API, judges pairs and plants slowdowns."""
    for copy in (0, 1):
        for index in range(1, 7):
            source = FIXTURES / "history" / f"run{index}.json"
            shutil.copy(source, tmp_path / f"run{copy}{index}.json")
    script = REPO / "scripts" / "measure_history_check.py"
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "12 runs of unchanged code" in done.stdout
    caught = [line for line in done.stdout.splitlines() if "planted 1.3x slowdowns" in line]
    assert len(caught) == 2  # one per clock rule
    assert "of 24 planted" in caught[0]


def test_history_quiet_prints_nothing_but_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "h.db")
    args = ["--commit", "c0", "--date", "2026-01-01T00:00:00", "--quiet"]
    assert call_tool(capsys, main, "add", db, str(CPU_ONLY), *args) == (EXIT_OK, "", "")
    assert call_tool(capsys, main, "check", db, "--quiet") == (EXIT_OK, "", "")
    code, out, err = call_tool(capsys, main, "check", db)
    assert code == EXIT_OK and out and err  # without --quiet: the verdicts and the unjudged count


def test_the_check_summary_is_a_record_the_words_only_render(
    tmp_path: Path, histories: dict[int, Path]
) -> None:
    """What check prints, computed (check.CheckSummary): the verdicts listed, the kinds summed up,
    the counts of every kind, the failing verdicts and the numbers of the result line."""
    db = stored(histories, 4, tmp_path)
    slow = GEMM.format(m=64)
    add_as_commits(db, [planted(p, tmp_path / p.name, slow, 1.3) for p in RUNS[4:]], first=5)
    history = load(db)
    checks = check_history(history, CheckRule())
    quiet = summarize_checks(checks, history, verbose=False)
    (machine,) = quiet.machines
    assert [(v.verdict, v.benchmark, v.fails) for v in machine.listed] == [(REGRESSION, slow, True)]
    assert machine.summed == [] and (machine.runs, machine.benchmarks) == (6, 3)
    assert {k.kind: k.count for k in machine.counts if k.count} == {OK: 2, REGRESSION: 1}
    assert [v.benchmark for _, v in quiet.failing] == [slow]
    assert (quiet.failed, quiet.failing_machines, quiet.unjudged, quiet.left_out) == (1, 1, 0, 0)
    assert machine.newest.git_commit == "c6" and machine.interrupted is None
    # The run before the newest confirms it: both slower, the U test run on each.
    assert [c.tested for c in machine.listed[0].newest] == [True, True]
    verbose = summarize_checks(checks, history, verbose=True)
    assert [v.verdict for v in verbose.machines[0].listed] == [REGRESSION, OK, OK]
    young = summarize_checks(
        check_history(load(histories[2]), CheckRule()), load(histories[2]), False
    )
    (summed,) = young.machines[0].summed
    assert (summed.kind, summed.count, young.unjudged) == (NOT_ENOUGH_HISTORY, 3, 3)
    assert young.machines[0].listed == [] and young.failing == []
