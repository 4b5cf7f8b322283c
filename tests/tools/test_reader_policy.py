"""One strict reader, one policy table, one writer. Each test is a class of bad input or fault, on
every tool it reaches (the generated files across every class are test_property_tools.py's)."""

from __future__ import annotations

import copy
import json
import math
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, REPO, run_tool as run

from gpubench_tools import benchjson, conditions, export, policy, row_rules
from gpubench_tools.compare import main as compare_main
from gpubench_tools.compare.config import THRESHOLD_RANGES
from gpubench_tools.compare.words import repetition_rule
from gpubench_tools.history.cli import main as history_main

OK, REGRESSION, UNUSABLE = 0, 1, 2
CI_CPU = json.loads((REPO / "reports" / "baselines" / "ci-cpu.json").read_text())
CI_CONFIG = REPO / "reports" / "baselines" / "ci-cpu.thresholds.json"
ENV = dict(os.environ, PYTHONPATH=str(REPO / "tools"))


def write(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc, indent=1))
    return path


def ci_doc() -> dict[str, Any]:
    return copy.deepcopy(CI_CPU)


# --- the reader ---------------------------------------------------------------------------------


def test_the_json_schema_accepts_every_committed_bench_file() -> None:
    from jsonschema import Draft202012Validator

    Draft202012Validator.check_schema(row_rules.json_schema())
    for path in [*FIXTURES.glob("*.json"), REPO / "reports" / "baselines" / "ci-cpu.json"]:
        doc = json.loads(path.read_text())
        errors = list(Draft202012Validator(row_rules.json_schema()).iter_errors(doc))
        assert errors == [], (path, errors[:1])
        # The validator ignores the schema's own `finite` keyword: the reader's rule too.
        assert benchjson.invalid_rows(benchjson.load_report(str(path))) == [], path


def test_the_json_schema_declares_every_counter_of_the_shared_schema() -> None:
    from gpubench_tools import schema

    row = row_rules.json_schema()["$defs"]["row"]
    assert set(schema.COUNTERS) <= set(row["properties"])
    assert all(row["properties"][key] == {"type": "number"} for key in schema.COUNTERS)


@pytest.mark.parametrize(
    "tail, words",
    [
        ("\0\0\0\0", "NUL bytes"),
        ("\0\0]}\n", "followed by"),
        ('{"context": {}}', "followed by"),
    ],
)
def test_a_document_followed_by_other_bytes_is_not_a_bench_file(
    tmp_path: Path, tail: str, words: str
) -> None:
    path = tmp_path / "two.json"
    path.write_text(json.dumps(ci_doc()) + tail)
    with pytest.raises(benchjson.BenchJsonError) as found:
        benchjson.load_report(str(path))
    assert words in str(found.value)


def test_deep_nesting_is_not_a_bench_file_and_never_a_crash(tmp_path: Path) -> None:
    for depth in (40, 100_000):
        path = tmp_path / f"deep{depth}.json"
        path.write_text('{"context": {}, "benchmarks": [' + "[" * depth + "]" * depth + "]}")
        with pytest.raises(benchjson.BenchJsonError, match="nested deeper"):
            benchjson.load_report(str(path))


def test_invalid_values_are_shown_as_read(tmp_path: Path) -> None:
    doc = ci_doc()
    doc["benchmarks"][0]["iterations"] = 1e30
    doc["benchmarks"][1]["real_time"] = math.nan
    path = write(tmp_path / "r.json", doc)
    rows = benchjson.load_report(str(path)).rows
    assert rows[0].invalid == "iterations is 1e+30 (above 1e+15)"
    assert rows[1].invalid == "real_time is NaN (not a finite number)"
    path.write_text(path.read_text().replace("1e+30", "1e30"))
    assert benchjson.load_report(str(path)).rows[0].invalid.startswith("iterations is 1e30 ")


# --- compare: what must not pass --------------------------------------------------------------


def _compare(capsys, base: Path, cont: Path, *extra: str) -> tuple[int, str, str]:
    return run(capsys, compare_main, str(base), str(cont), "--config", str(CI_CONFIG), *extra)


def test_a_contender_whose_every_benchmark_is_skipped_does_not_pass(tmp_path, capsys) -> None:
    doc = ci_doc()
    for row in doc["benchmarks"]:
        row.update(error_occurred=True, error_message="not supported on this machine: no BLAS")
    code, out, err = _compare(
        capsys, REPO / "reports/baselines/ci-cpu.json", write(tmp_path / "c.json", doc)
    )
    assert code == UNUSABLE and "cannot judge" in err and "PASS" not in out


@pytest.mark.parametrize("allow_missing", [False, True])
def test_a_contender_cut_inside_the_last_repetitions_does_not_pass(
    tmp_path, capsys, allow_missing
) -> None:
    text = json.dumps(ci_doc(), indent=1)
    cut = tmp_path / "cut.json"
    # Cut inside the last iteration row: every benchmark is there, one repetition short.
    last = text.rfind('"run_type": "iteration"')
    cut.write_text(text[:last])
    assert benchjson.load_report(str(cut)).state == benchjson.CUT_OFF
    extra = ["--allow-missing"] if allow_missing else []
    code, out, _ = _compare(capsys, REPO / "reports/baselines/ci-cpu.json", cut, *extra)
    assert code == REGRESSION and "cut off" in out


def test_a_cut_off_baseline_is_unusable(tmp_path, capsys) -> None:
    text = json.dumps(ci_doc(), indent=1)
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) // 2])
    code, _, err = _compare(capsys, cut, REPO / "reports/baselines/ci-cpu.json")
    assert code == UNUSABLE and str(cut) in err and "cut off" in err


@pytest.mark.parametrize(
    "change, field",
    [
        (lambda row: row.pop("time_unit"), "time_unit is missing"),
        (lambda row: row.update(flop="12"), 'flop is "12"'),
        (lambda row: row.pop("cpu_time"), "cpu_time is missing"),
    ],
)
def test_a_missing_or_mistyped_field_is_unusable_input_naming_row_and_field(
    tmp_path, capsys, change, field
) -> None:
    doc = ci_doc()
    for row in doc["benchmarks"]:
        if row["run_type"] == "iteration":
            row["real_time"] *= 2  # a slowdown: the old reader called it faster, or passed it
            row["cpu_time"] *= 2
            change(row)
    code, _, err = _compare(
        capsys, REPO / "reports/baselines/ci-cpu.json", write(tmp_path / "c.json", doc)
    )
    assert code == UNUSABLE
    (line,) = err.strip().splitlines()
    assert "c.json: row 'matmul/" in line and field in line


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-1", '"1.5"', "0.5"])
def test_config_values_meet_the_command_line_rule(tmp_path, capsys, value) -> None:
    config = tmp_path / "c.json"
    config.write_text('{"thresholds": {"max_ratio": %s}}' % value)
    base = REPO / "reports/baselines/ci-cpu.json"
    rule = THRESHOLD_RANGES["max_ratio"].range
    code, _, err = run(capsys, compare_main, str(base), str(base), "--config", str(config))
    # The value as the file has it, and the range the command line's flag has.
    assert code == UNUSABLE and f"thresholds.max_ratio: {value} is not {rule}" in err
    with pytest.raises(SystemExit) as exit_info:
        compare_main([str(base), str(base), "--max-ratio", "inf"])
    err = capsys.readouterr().err
    assert exit_info.value.code == UNUSABLE and f"--max-ratio: 'inf' is not {rule}" in err


def _slow(tmp_path: Path) -> Path:
    doc = ci_doc()
    for row in doc["benchmarks"]:
        row["real_time"] *= 3
        row["cpu_time"] *= 3
    return write(tmp_path / "slow.json", doc)


def test_a_closed_stdout_keeps_the_regression_exit_code(tmp_path) -> None:
    slow = _slow(tmp_path)
    base = REPO / "reports/baselines/ci-cpu.json"
    command = (
        f"set -o pipefail; {sys.executable} -m gpubench_tools.compare {base} {slow} "
        f"--config {CI_CONFIG} | true"
    )
    proc = subprocess.run(["bash", "-c", command], env=ENV, capture_output=True, text=True)
    assert proc.returncode == REGRESSION, proc.stderr
    assert "Traceback" not in proc.stderr


def test_an_unwritable_markdown_keeps_the_verdict(tmp_path, capsys) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, out, err = _compare(
        capsys,
        REPO / "reports/baselines/ci-cpu.json",
        _slow(tmp_path),
        "--markdown",
        str(blocker / "x.md"),
    )
    assert code == REGRESSION and "gate: FAIL" in out
    assert "could not write the Markdown report" in err and "verdict above stands (exit 1)" in err


def test_the_repetition_rule_is_said_the_same_everywhere(capsys) -> None:
    rule = repetition_rule(0.05)
    assert rule in (REPO / "docs" / "regression-gate.md").read_text()
    row = next(
        line
        for line in (REPO / "README.md").read_text().splitlines()
        if line.startswith("| `gpubench-compare")
    )
    assert rule in row
    base = str(REPO / "reports/baselines/ci-cpu.json")
    _, out, _ = run(capsys, compare_main, base, base)
    assert rule in out


def test_five_against_three_is_not_judged(tmp_path, capsys) -> None:
    doc = ci_doc()
    rows = [r for r in doc["benchmarks"] if r["run_type"] == "iteration"]
    keep, seen = [], {}
    for row in rows:
        seen[row["run_name"]] = seen.get(row["run_name"], 0) + 1
        if seen[row["run_name"]] <= 3:
            keep.append(row)
    base = tmp_path / "five.json"
    five = [
        r
        for r in rows
        if sum(1 for k in rows[: rows.index(r) + 1] if k["run_name"] == r["run_name"]) <= 5
    ]
    write(base, {"context": doc["context"], "benchmarks": five})
    code, _, err = run(
        capsys,
        compare_main,
        str(base),
        str(write(tmp_path / "three.json", {"context": doc["context"], "benchmarks": keep})),
    )
    assert code == UNUSABLE and "fewer than 4 repetitions" in err


# --- history, export: one bad item ------------------------------------------------------------


def test_history_add_stores_the_other_files_of_a_batch(tmp_path, capsys) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"context": {}, "benchmarks": [' + "[" * 50_000 + "]" * 50_000 + "]}")
    good = write(tmp_path / "good.json", ci_doc())
    db = tmp_path / "h.db"
    code, out, err = run(capsys, history_main, "add", str(db), str(deep), str(good))
    assert code == UNUSABLE and "added run 1 from" in out
    (line,) = err.strip().splitlines()
    assert str(deep) in line and "nested deeper" in line
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 1


def test_hostile_names_reach_no_terminal_raw(tmp_path, capsys) -> None:
    doc = ci_doc()
    hostile = "x\n::error::forged\r\x1b[31mred"
    for row in doc["benchmarks"][:2]:
        row["name"] = row["run_name"] = "matmul/" + hostile
    path = write(tmp_path / "h.json", doc)
    db = tmp_path / "h.db"
    for args in (["add", str(db), str(path)], ["check", str(db), "--verbose"]):
        _, out, err = run(capsys, history_main, *args)
        for line in (out + err).splitlines():
            assert not line.lstrip().startswith("::") and "\x1b" not in line and "\r" not in line
    code, out, err = run(capsys, export.main, "--format", "bencher", str(path), "--verbose")
    assert all(not line.lstrip().startswith("::") for line in (out + err).splitlines())


def test_a_ten_thousand_character_name_leaves_the_charts_drawn(tmp_path, capsys) -> None:
    doc = ci_doc()
    rows = [r for r in doc["benchmarks"] if r["run_type"] == "iteration"][:9]
    for row in rows:
        row["name"] = row["run_name"] = "matmul/" + "$x_" * 3400
    db = tmp_path / "h.db"
    path = write(tmp_path / "long.json", {"context": doc["context"], "benchmarks": rows})
    assert run(capsys, history_main, "add", str(db), str(path))[0] == OK
    code, out, err = run(capsys, history_main, "chart", str(db), "--out", str(tmp_path / "c"))
    assert code == OK, err
    assert all(len(p.name) < 100 for p in (tmp_path / "c").iterdir())


def test_export_names_the_file_it_cannot_read(tmp_path, capsys) -> None:
    code, _, err = run(capsys, export.main, "--format", "bencher", str(tmp_path))
    assert code == UNUSABLE and str(tmp_path) in err and "None" not in err


def test_an_old_file_reads_as_conditions_unknown_in_every_tool(tmp_path, capsys) -> None:
    """ci-cpu.json predates the condition counters: never an error, never quiet, said once."""
    base = REPO / "reports/baselines/ci-cpu.json"
    assert {r.conditions for r in benchjson.load_report(str(base)).rows} == {conditions.UNKNOWN}
    code, out, err = run(capsys, compare_main, str(base), str(base), "--config", str(CI_CONFIG))
    assert code == OK and (out + err).count("conditions unknown") == 1
    code, out, err = run(capsys, history_main, "add", str(tmp_path / "h.db"), str(base))
    assert code == OK and "conditions unknown" in out
    code, _, err = run(capsys, export.main, "--format", "bencher", str(base))
    assert code == OK and err.count("conditions unknown") == 1


@pytest.mark.parametrize("every", [1, 2])  # every repetition disturbed, or every other one
def test_disturbance_alone_never_fails_the_gate(tmp_path, capsys, every) -> None:
    doc = ci_doc()
    for i, row in enumerate(doc["benchmarks"]):
        hit = i % every == 0
        row.update(disturbed=int(hit), disturbed_by=int(hit), cpu_wait_cores=float(hit))
        for key in ("real_time", "cpu_time"):
            row[key] *= 3 if hit else 1
    path = write(tmp_path / "busy.json", doc)
    base = REPO / "reports/baselines/ci-cpu.json"
    code, out, err = run(capsys, compare_main, str(base), str(path), "--config", str(CI_CONFIG))
    assert code in (OK, 3), out  # 3: nothing judged, the machine was busy
    assert "REGRESSION" not in out and "measured while disturbed" in out
    if code == OK:
        assert "not judged: measured while disturbed" in out.splitlines()[-1]


# --- the policy table ---------------------------------------------------------------------------


def policy_table() -> str:
    """The policy table as docs/input-policy.md shows it: a row per situation, a column per tool,
    "—" where a tool never meets the situation."""
    tools = policy.TOOLS
    lines = [
        "| what the reader found | " + " | ".join(tools) + " |",
        "|" + "---|" * (len(tools) + 1),
    ]
    for situation in policy.SITUATIONS:
        cells = [
            policy.POLICY[t][situation].does if situation in policy.POLICY[t] else "—"
            for t in tools
        ]
        lines.append(f"| **{situation}** | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def test_the_policy_doc_shows_the_table_the_tools_read() -> None:
    assert policy_table() in (REPO / "docs" / "input-policy.md").read_text()
    # A tool that never meets a situation shows "—"; each row has a cell per tool.
    lines = policy_table().splitlines()
    assert lines[1] == "|" + "---|" * (len(policy.TOOLS) + 1)
    assert len(lines) == 2 + len(policy.SITUATIONS)
    for line, situation in zip(lines[2:], policy.SITUATIONS):
        cells = line.split(" | ")[1:]
        expected = [policy.POLICY[t].get(situation) for t in policy.TOOLS]
        assert [c.rstrip(" |") for c in cells] == [a.does if a else "—" for a in expected]


def test_the_table_names_only_declared_situations_and_kinds() -> None:
    # policy.json is data: a misspelt situation or kind would never be asked for.
    declared = [policy.NOT_BENCH, policy.CUT_OFF, policy.INTERRUPTED, policy.NOTHING_MEASURED]
    declared += [policy.MALFORMED_ROW, policy.UNSOUND_ROW, policy.FAILED_ROW, policy.SKIPPED_ROW]
    assert list(policy.SITUATIONS) == declared + [policy.DISTURBED_ROW, policy.UNKNOWN_CONDITIONS]
    for tool in policy.TOOLS:
        assert set(policy.POLICY[tool]) <= set(policy.SITUATIONS), tool
        kinds = {a.kind for a in policy.POLICY[tool].values()}
        assert kinds <= {policy.REFUSE, policy.FAIL, policy.USE, policy.LIST}, tool
        for situation, act in policy.POLICY[tool].items():
            # Whether a tool says what it found is a field of the table, and what it lists it says.
            assert isinstance(act.says, bool), (tool, situation)
            assert act.says or act.kind != policy.LIST, (tool, situation)


def test_the_table_declares_disturbance_and_unknown_conditions_for_every_tool() -> None:
    for tool in policy.TOOLS:
        for situation in (policy.DISTURBED_ROW, policy.UNKNOWN_CONDITIONS):
            # Disturbance is the machine, not the code: never a gate's failure, never refused.
            assert policy.action(tool, situation).exit_code is None


def test_no_gate_passes_a_cut_off_or_unmeasured_run() -> None:
    for tool in ("compare contender", "history add", "export"):
        for situation in (policy.CUT_OFF, policy.NOTHING_MEASURED, policy.NOT_BENCH):
            assert policy.action(tool, situation).exit_code in (REGRESSION, UNUSABLE)


# The property test of every command on every class of bad input is tests/tools/test_property_tools.py
# (one suite, the exact exit status per class).
