"""The tools' side of the measurement conditions: every tool acts on the conditions each
repetition was measured under.

HAND-MADE TEST DATA, NOT A MEASUREMENT: the rows below are shaped like bench's CPU GEMM rows with
the condition counters (`disturbed`, `disturbed_by`, `cpu_wait_cores`, `cpu_other_cores`), with
times chosen so that each expected number can be worked out by hand.
"""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from conftest import gb_row, run_tool as run, write_bench_json

from gpubench_tools import benchjson, conditions, export, policy, wording
from gpubench_tools.compare import engine
from gpubench_tools.compare import main as compare_main
from gpubench_tools.history import store
from gpubench_tools.history.cli import main as history_main
from gpubench_tools.report import main as report_main
from gpubench_tools.table import file_rows, load_table, summarize

OK, REGRESSION, UNUSABLE = 0, 1, 2
NAMES = [f"matmul/cpu/openblas/dtype:fp32/m:{n}/n:{n}/k:{n}/threads:2" for n in (64, 128)]
LABEL = "workload=matmul backend=cpu variant=openblas dtype=fp32 shape=square"


def rep(name: str, time_s: float, index: int, disturbed: int | None, wait: float = 0.9) -> dict:
    """One repetition; disturbed None: a row from a bench older than the condition counters."""
    counters: dict[str, float] = {"blas_threads": 2, "flop": 1e6}
    if disturbed is not None:
        counters.update(
            cpu_other_cores=0.95 if disturbed else 0.0,
            cpu_steal_cores=0.0,
            cpu_wait_cores=wait if disturbed else 0.0,
            disturbed=disturbed,
            disturbed_by=1 if disturbed else 0,
        )
    return gb_row(name, time_s, counters, LABEL, repetition_index=index, repetitions=5)


def run_file(
    path: Path,
    times: dict[str, list[float]],
    marks: dict[str, list[int | None]],
    date: str = "2026-01-01T00:00:00+00:00",
    commit: str = "c0",
) -> Path:
    rows = [rep(name, t, i, marks[name][i]) for name, ts in times.items() for i, t in enumerate(ts)]
    context = {
        "cpu_model": "Test CPU",
        "gpu": "none",
        "gpubench_git_commit": commit,
        "date": date,
        "host_name": "test",
    }
    return write_bench_json(path, rows, context)


QUIET = [0] * 5
FIVE_MS = [5e-3, 5.05e-3, 4.95e-3, 5.02e-3, 4.98e-3]


# --- the reader decides, once ------------------------------------------------------------------


def test_a_repetition_is_disturbed_quiet_or_unknown(tmp_path: Path) -> None:
    rows = [rep(NAMES[0], 1e-3, 0, 1), rep(NAMES[0], 1e-3, 1, 0), rep(NAMES[0], 1e-3, 2, None)]
    nan = rep(NAMES[0], 1e-3, 3, 0)
    nan["disturbed"] = math.nan
    report = benchjson.load_report(str(write_bench_json(tmp_path / "r.json", rows + [nan])))
    assert [r.conditions for r in report.rows] == [
        conditions.DISTURBED,
        conditions.QUIET,
        conditions.UNKNOWN,
        conditions.UNKNOWN,
    ]
    assert all(r.usable for r in report.rows)  # unknown conditions are never an error
    assert list(file_rows(report)["conditions"]) == [r.conditions for r in report.rows]


def test_an_old_file_reads_as_conditions_unknown_never_quiet(tmp_path: Path) -> None:
    path = run_file(tmp_path / "old.json", {NAMES[0]: FIVE_MS}, {NAMES[0]: [None] * 5})
    table = load_table([str(path)])
    assert set(table.rows["conditions"]) == {conditions.UNKNOWN}
    summary = summarize(table.rows)
    assert list(summary["conditions"]) == [conditions.UNKNOWN]


def test_describe_conditions_says_how_many_by_what_and_how_much() -> None:
    counters = [
        {"disturbed": 1, "disturbed_by": 1, "cpu_wait_cores": 0.4},
        {"disturbed": 1, "disturbed_by": 3, "cpu_wait_cores": 1.2, "cpu_steal_cores": 0.3},
        {"disturbed": 0, "disturbed_by": 0},
        {},
    ]
    line = wording.describe_conditions(counters)
    assert line == (
        "2 of 4 repetitions were measured while disturbed (2 waited for a CPU while other "
        "processes ran, up to 1.20 core; 1 lost CPU time to the hypervisor (steal), up to 0.30 "
        "core)"
    )
    assert wording.describe_conditions([{"disturbed": 0}, {}]) is None
    # The record the line renders: counts and the largest figure per part of the rule.
    assert conditions.disturbances(counters) == conditions.Disturbances(
        disturbed=2,
        of=4,
        causes=(
            conditions.Cause(2, "waited for a CPU while other processes ran", 1.2),
            conditions.Cause(1, "lost CPU time to the hypervisor (steal)", 0.3),
        ),
        unexplained=0,
    )
    unexplained = conditions.disturbances([{"disturbed": 1}, {"disturbed": 1, "disturbed_by": 4}])
    assert (unexplained.disturbed, unexplained.unexplained) == (2, 1)
    assert unexplained.causes == (conditions.Cause(1, conditions.DISTURBED_BY[4][0], None),)


def test_a_busy_neighbour_is_named_with_the_others_share() -> None:
    counters = [{"disturbed": 1, "disturbed_by": 8, "cpu_wait_cores": 0.0, "cpu_other_cores": 1.0}]
    assert wording.describe_conditions(counters) == (
        "1 of 1 repetition was measured while disturbed (1 ran while other processes used a "
        "large share of the CPUs, up to 1.00 core)"
    )


def test_aggregate_rows_with_a_nan_cv_of_an_all_zero_counter_read_cleanly(tmp_path: Path) -> None:
    """Google Benchmark writes NaN for the cv of a counter that is 0 in every repetition
    (disturbed=0 everywhere): aggregates are not judged, and the file must read in every tool."""
    rows = [rep(NAMES[0], t, i, 0) for i, t in enumerate(FIVE_MS)]
    for name in ("mean", "median", "stddev", "cv"):
        agg = gb_row(NAMES[0], 5e-3 if name != "cv" else 0.01, {}, LABEL, run_type="aggregate",
                     aggregate_name=name)  # fmt: skip
        zero = math.nan if name == "cv" else 0.0
        agg.update(disturbed=zero, disturbed_by=zero, cpu_wait_cores=zero, blas_threads=2)
        rows.append(agg)
    text = json.dumps({"context": {"cpu_model": "T", "gpu": "none", "date": "2026-01-01",
                                   "gpubench_git_commit": "c"}, "benchmarks": rows})  # fmt: skip
    assert "NaN" in text
    path = tmp_path / "reps.json"
    path.write_text(text)
    report = benchjson.load_report(str(path))
    assert [r.status for r in report.rows] == [benchjson.VALID] * 9
    assert benchjson.invalid_rows(report) == []


# --- compare -----------------------------------------------------------------------------------


def _compare(capsys, tmp_path: Path, cont_times, cont_marks) -> tuple[int, str, str]:
    base = run_file(tmp_path / "base.json", {n: FIVE_MS for n in NAMES}, {n: QUIET for n in NAMES})
    cont = run_file(tmp_path / "cont.json", cont_times, cont_marks, commit="c1")
    json_out = tmp_path / "out.json"
    code, out, err = run(capsys, compare_main, str(base), str(cont), "--json", str(json_out))
    return code, out + err, json_out.read_text() if json_out.exists() else ""


def test_a_quiet_run_against_a_disturbed_one_is_never_a_regression(tmp_path, capsys) -> None:
    slow = [t * 2 for t in FIVE_MS]  # twice as slow, every repetition disturbed
    code, text, doc = _compare(
        capsys, tmp_path, {n: slow for n in NAMES}, {n: [1] * 5 for n in NAMES}
    )
    # Nothing judged because the machine was busy: never a pass, never a regression, never
    # "unusable input": its own status.
    assert code == 3
    assert "gate: NOT RESOLVED" in text and "measured while disturbed" in text
    assert "not resolved: the machine was busy" in text
    # Listed with its figures: both medians over every repetition and the ratio.
    assert (
        f"{NAMES[0]}: baseline 5 ms (0 of 5 disturbed), contender 10 ms (5 of 5 disturbed)" in text
    )
    assert "2.00x with the disturbed ones" in text
    summary = json.loads(doc)["summary"]
    assert summary["not_judged_disturbed"] == 2 and summary["disturbed_repetitions_contender"] == 10


def test_disturbed_benchmarks_beside_judged_ones_pass_out_loud(tmp_path, capsys) -> None:
    code, text, _ = _compare(
        capsys,
        tmp_path,
        {NAMES[0]: FIVE_MS, NAMES[1]: [t * 2 for t in FIVE_MS]},
        {NAMES[0]: QUIET, NAMES[1]: [1] * 5},
    )
    assert code == OK
    assert "gate: PASS: 1 benchmark judged" in text
    assert "1 not judged: measured while disturbed" in text  # not a silent pass


def test_disturbed_repetitions_are_left_out_of_the_judgement(tmp_path, capsys) -> None:
    # Four quiet repetitions as fast as the baseline; one disturbed, ten times slower: judged
    # from the four (same), the one counted.
    times = FIVE_MS[:4] + [50e-3]
    code, text, doc = _compare(
        capsys, tmp_path, {n: times for n in NAMES}, {n: [0, 0, 0, 0, 1] for n in NAMES}
    )
    assert code == OK, text
    benches = json.loads(doc)["benchmarks"]
    assert [b["verdict"] for b in benches] == ["same", "same"]
    assert benches[0]["disturbance"]["contender_disturbed"] == 1
    assert "1 of 5 repetitions of the contender measured while disturbed: left out" in doc


def test_undisturbed_is_the_one_filter_the_paired_judgement_can_call(tmp_path: Path) -> None:
    path = run_file(tmp_path / "r.json", {NAMES[0]: FIVE_MS}, {NAMES[0]: [0, 1, None, 1, 0]})
    rows = file_rows(benchjson.load_report(str(path)))
    assert list(engine.undisturbed(rows)["repetition"]) == [0, 2, 4]


def test_compare_says_conditions_unknown_once_for_an_old_file(tmp_path, capsys) -> None:
    old = {n: [None] * 5 for n in NAMES}
    code, text, _ = _compare(capsys, tmp_path, {n: FIVE_MS for n in NAMES}, old)
    assert code == OK
    assert text.count("conditions unknown") == 1


# --- history -----------------------------------------------------------------------------------


def _history(tmp_path: Path, newest_marks: list[int | None], newest_factor: float) -> Path:
    db = tmp_path / "h.db"
    paths = []
    for day in range(1, 6):
        factor = newest_factor if day >= 4 else 1.0
        marks = newest_marks if day >= 4 else QUIET
        paths.append(
            run_file(
                tmp_path / f"run{day}.json",
                {NAMES[0]: [t * factor for t in FIVE_MS]},
                {NAMES[0]: marks},
                date=f"2026-01-0{day}T00:00:00+00:00",
                commit=f"c{day}",
            )
        )
    assert history_main(["add", str(db), *map(str, paths)]) == OK
    return db


def test_history_does_not_judge_from_disturbed_runs(tmp_path, capsys) -> None:
    db = _history(tmp_path, [1] * 5, 2.0)  # the two newest runs twice as slow, all disturbed
    code, out, err = run(capsys, history_main, "check", str(db), "--verbose")
    assert code == OK
    assert "measured while disturbed" in out and "REGRESSION" not in out
    assert "left out of the check" in err
    with sqlite3.connect(db) as conn:
        marks = conn.execute(
            "SELECT disturbed, count(*) FROM samples GROUP BY disturbed"
        ).fetchall()
    assert marks == [(0, 15), (1, 10)]  # stored and marked


def test_history_still_finds_a_quiet_regression(tmp_path, capsys) -> None:
    db = _history(tmp_path, QUIET, 2.0)
    code, out, _ = run(capsys, history_main, "check", str(db))
    assert code == REGRESSION, out


def test_a_version_1_history_is_migrated_with_conditions_unknown(tmp_path, capsys) -> None:
    db = _history(tmp_path, QUIET, 1.0)
    with sqlite3.connect(db) as conn:  # back to what version 1 wrote
        conn.execute("ALTER TABLE samples DROP COLUMN disturbed")
        conn.execute("ALTER TABLE runs DROP COLUMN interrupted")
        conn.execute("PRAGMA user_version = 1")
    with store.HistoryStore.open(str(db)) as opened:
        samples = opened.frame("SELECT disturbed FROM samples")
    assert len(samples) == 25 and samples["disturbed"].isna().all()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == store.SCHEMA_VERSION
    code, _, _ = run(capsys, history_main, "check", str(db))
    assert code == OK


# --- export ------------------------------------------------------------------------------------


def _export(capsys, path: Path) -> tuple[list[dict[str, Any]], str]:
    code, out, err = run(capsys, export.main, "--format", "github-action-benchmark", str(path))
    assert code == OK, err
    return json.loads(out), err


def test_export_values_come_from_undisturbed_repetitions(tmp_path, capsys) -> None:
    times = [1e-3, 1e-3, 1e-3, 9e-3, 9e-3]  # the two slow ones disturbed
    path = run_file(tmp_path / "r.json", {NAMES[0]: times}, {NAMES[0]: [0, 0, 0, 1, 1]})
    (entry,), err = _export(capsys, path)
    assert entry["value"] == 1e6  # ns: the median of the three quiet ones, not of all five
    assert "2 disturbed left out" in entry["extra"]


def test_export_says_why_a_value_includes_disturbed_repetitions(tmp_path, capsys) -> None:
    times = [1e-3, 1e-3, 9e-3, 9e-3, 9e-3]
    path = run_file(tmp_path / "r.json", {NAMES[0]: times}, {NAMES[0]: [0, 0, 1, 1, 1]})
    (entry,), err = _export(capsys, path)
    assert entry["value"] == 9e6  # only 2 undisturbed: all five, and the row says so
    assert "MEASURED WHILE DISTURBED" in entry["extra"]
    assert "measured while disturbed" in err


# --- report ------------------------------------------------------------------------------------


def test_headline_rule_uses_undisturbed_repetitions_where_three_remain(tmp_path: Path) -> None:
    path = run_file(
        tmp_path / "r.json",
        {NAMES[0]: [1e-3, 1e-3, 1e-3, 9e-3, 9e-3], NAMES[1]: [1e-3, 1e-3, 9e-3, 9e-3, 9e-3]},
        {NAMES[0]: [0, 0, 0, 1, 1], NAMES[1]: [0, 0, 1, 1, 1]},
    )
    summary = summarize(load_table([str(path)]).rows).set_index("name")
    assert summary.at[NAMES[0], "time_s"] == pytest.approx(1e-3)
    assert summary.at[NAMES[0], "conditions"] == conditions.QUIET
    assert summary.at[NAMES[0], "disturbed_left_out"] == 2
    assert summary.at[NAMES[1], "time_s"] == pytest.approx(9e-3)
    assert summary.at[NAMES[1], "conditions"] == conditions.DISTURBED
    assert policy.MIN_UNDISTURBED == 3


def test_report_warns_first_and_marks_disturbed_medians(tmp_path, capsys) -> None:
    from gpubench_tools.report.build import DISTURBED_MARK

    times = {n: FIVE_MS for n in NAMES}
    path = run_file(tmp_path / "r.json", times, {NAMES[0]: [1] * 5, NAMES[1]: QUIET})
    code, out, err = run(capsys, report_main, str(path), "--out", str(tmp_path / "rep"))
    assert code == OK
    md = (tmp_path / "rep" / "report.md").read_text()
    head = md.split("## The answer")[0]
    assert "Measured while disturbed: 5 of 10 repetitions" in head
    assert "waited for a CPU while other processes ran, up to 0.90 core" in head
    assert "1 marked" in head
    # On stderr right after the line on whose GPU numbers these are (here: none).
    assert "no GPU rows" in err.splitlines()[0]
    assert "Measured while disturbed" in err.splitlines()[1]
    assert DISTURBED_MARK == "‡"
    # The disturbed median carries the mark in the workload's table, the quiet one does not.
    table = md.split("*Time per call (medians) and where it is*")[1].split("\n\n")[1]
    marked = [line for line in table.splitlines() if "‡" in line]
    assert len(marked) == 1 and "m:64/" in marked[0] and "Macro" not in table


def test_report_says_conditions_unknown_once_for_an_old_file(tmp_path, capsys) -> None:
    path = run_file(tmp_path / "r.json", {NAMES[0]: FIVE_MS}, {NAMES[0]: [None] * 5})
    code, _, err = run(capsys, report_main, str(path), "--out", str(tmp_path / "rep"))
    assert code == OK
    md = (tmp_path / "rep" / "report.md").read_text()
    assert md.lower().count("conditions unknown") == 1
    assert "Measured while disturbed" not in md


def test_energy_topic_gives_joules_per_step_and_says_the_cpu_side_is_not_recorded(
    tmp_path, capsys
) -> None:
    """HAND-MADE rows (tests/tools/handmade_rows.py): no GPU energy counter can run here."""
    from handmade_rows import CONTEXT, mlp_row

    rows = []
    for i in range(3):
        # gpu_energy_j is per iteration (20000 steps on Iris): 200 J and 400 J per iteration.
        rows.append(
            mlp_row("gpu", "graph", "iris", 120, "10", 30e-6, extra={"gpu_energy_j": 200.0})
        )
        rows.append(
            mlp_row("gpu", "eager", "iris", 120, "10", 81e-6, extra={"gpu_energy_j": 400.0})
        )
        rows.append(mlp_row("cpu", "openblas", "iris", 120, "10", 20e-6, threads=1))
        for row in rows[-3:]:
            row["repetition_index"] = i
    path = write_bench_json(tmp_path / "e.json", rows, CONTEXT)
    code, _, err = run(capsys, report_main, str(path), "--out", str(tmp_path / "rep"))
    assert code == OK, err
    md = (tmp_path / "rep" / "report.md").read_text()
    section = md.split("## Energy per training step, CPU vs GPU")[1].split("\n## ")[0]
    assert (
        "| MLP training on Iris | hidden 10, batch 120 | graph | 0.01 J | not recorded | — |"
        in section
    )
    assert "CPU energy: not recorded: the bench that wrote the CPU run reads no" in section
    # A bench that reads RAPL where it can says why it could not; the report repeats its words.
    why = "/sys/class/powercap does not exist (no powercap/RAPL driver)"
    path = write_bench_json(
        tmp_path / "e1.json", rows, {**CONTEXT, "cpu_energy_counter": f"unavailable: {why}"}
    )
    code, _, err = run(capsys, report_main, str(path), "--out", str(tmp_path / "rep1"))
    assert code == OK, err
    assert f"CPU energy: not recorded ({why})." in (tmp_path / "rep1" / "report.md").read_text()
    # With a CPU energy counter on the CPU row, the two are compared.
    for row in rows:
        if "backend=cpu" in row["label"]:
            row["cpu_energy_j"] = 20000 * 0.005
    path = write_bench_json(tmp_path / "e2.json", rows, CONTEXT)
    code, _, err = run(capsys, report_main, str(path), "--out", str(tmp_path / "rep2"))
    md = (tmp_path / "rep2" / "report.md").read_text()
    assert "| graph | 0.01 J | 0.005 J | 0.5x |" in md
    # The CPU side is the row the speedup pairs with the GPU's: the fastest thread count.
    for i in range(3):
        faster = mlp_row("cpu", "openblas", "iris", 120, "10", 10e-6, threads=2)
        faster.update(repetition_index=i, cpu_energy_j=20000 * 0.008)
        rows.append(faster)
    path = write_bench_json(tmp_path / "e3.json", rows, CONTEXT)
    code, _, err = run(capsys, report_main, str(path), "--out", str(tmp_path / "rep3"))
    assert code == OK, err
    md = (tmp_path / "rep3" / "report.md").read_text()
    assert "CPU side: best of 2 threads." in md
    assert "| graph | 0.01 J | 0.008 J | 0.8x |" in md


def test_rows_too_short_for_the_energy_counter_are_said_with_the_window_they_need(
    tmp_path, capsys
) -> None:
    """HAND-MADE rows: bench left out the energy of repetitions shorter than ten steps of NVML's
    counter and marked them; the report says how many and what window a repetition needs."""
    from handmade_rows import CONTEXT, mlp_row

    rows = []
    for i in range(3):
        rows.append(
            mlp_row("gpu", "graph", "iris", 120, "10", 30e-6, extra={"gpu_energy_too_short": 1.0})
        )
        rows.append(mlp_row("cpu", "openblas", "iris", 120, "10", 20e-6, threads=1))
        for row in rows[-2:]:
            row["repetition_index"] = i
    context = {**CONTEXT, "gpu_energy_min_window_s": "1.0"}
    path = write_bench_json(tmp_path / "short.json", rows, context)
    code, _, err = run(capsys, report_main, str(path), "--out", str(tmp_path / "rep"))
    assert code == OK, err
    md = (tmp_path / "rep" / "report.md").read_text()
    section = md.split("## Energy per training step, CPU vs GPU")[1].split("\n## ")[0]
    assert "1 GPU rows ran too short to measure energy" in section
    assert "(here 1.00 s)" in section and "--benchmark\\_min\\_time=1" in section
    assert "Joules per" not in section and "|" not in section  # nothing measured: no table
