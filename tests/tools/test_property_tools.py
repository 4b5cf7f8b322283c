"""Every command on generated bench JSON, one class of bad input at a time: each class has the
exit status the contract gives it (docs/input-policy.md: 0 done, 1 a gate's failure, 2 unusable
input), and every command must end with exactly that status. Besides the status: stderr never
holds a traceback or a forged CI command, no Markdown or HTML carries raw HTML from the input,
no NaN or Infinity reaches an export, and only sound measurements are ever stored.

The inputs start from real bench output (tests/tools/fixtures, the CI gate's CPU baseline) and
go wrong the way files do: hostile text (newlines, `<script>`, `|`, backticks, `::error::`,
escape sequences) in names, labels and context; a failed row; a field missing or mistyped; an
unsound time or count (NaN, Infinity, 0, negative, absurd); an unsound counter; a duplicated
row; a file cut short after some complete rows; bytes that are no bench file (cut before any
row, nested too deeply, followed by other bytes); every row skipped; repetitions measured while
disturbed, some or all.
"""

from __future__ import annotations

import copy
import json
import math
import re
import sqlite3
from pathlib import Path
from typing import Any, Callable

import pytest
from conftest import FIXTURES, REPO, examples, run_tool
from hypothesis import example, given
from hypothesis import strategies as st

from gpubench_tools import benchjson, export
from gpubench_tools.__main__ import main as errors_main
from gpubench_tools.advise import main as advise_main
from gpubench_tools.compare import main as compare_main
from gpubench_tools.history.cli import main as history_main
from gpubench_tools.report import main as report_main
from bad_inputs import CPU_ONLY as CPU_ONLY_PATH
from bad_inputs import call_tool

OK, REGRESSION, UNUSABLE, UNRESOLVED = 0, 1, 2, 3

CPU_ONLY = json.loads((FIXTURES / "cpu_only.json").read_text())


def _h100_subset() -> dict[str, Any]:
    """A few GEMM sizes and the overhead probes of the H100 run with repetitions: enough for the
    advisor's model, small enough to mutate and read many times."""
    doc = json.loads((FIXTURES / "h100_reps.json").read_text())
    keep = ("m:64/", "m:256/", "m:1024/", "overhead/")
    rows = [
        r
        for r in doc["benchmarks"]
        if any(k in r["name"] for k in keep) and r["name"].startswith(("matmul/", "overhead/"))
    ]
    return {"context": doc["context"], "benchmarks": rows}


H100 = _h100_subset()
# The CI gate's CPU baseline: 9 repetitions of each benchmark, enough for compare to judge.
CI_CPU_PATH = REPO / "reports" / "baselines" / "ci-cpu.json"
CI_CONFIG = REPO / "reports" / "baselines" / "ci-cpu.thresholds.json"
CI_CPU = json.loads(CI_CPU_PATH.read_text())
BASES = {"cpu_only": CPU_ONLY, "h100": H100, "ci_cpu": CI_CPU}

HOSTILE_TEXT = [
    "<script>alert(1)</script>",
    "a\n# injected heading\n",
    "x | y | z",
    "```\ncode``` `tick`",
    "**gate: PASS**\n- item",
    "<img src=x onerror=alert(1)>",
    "",
    "\u2028line\rbreak\x00",
    "x\n::error::forged",
    "\x1b[2J",
    "##vso[task.setvariable]",
    "$x$",
]
TIMES = ["real_time", "cpu_time", "iterations"]
UNSOUND = [math.nan, math.inf, -math.inf, 0, -1.5, 1e30, 1e308, -1e308]
# A counter of 0 or below reads as the benchmark's work changed: see
# test_compare_self_with_a_zero_work_counter_is_no_regression.
UNSOUND_COUNTER = [math.nan, math.inf, -math.inf, 1e308, -1e308]
MISTYPED = ["12", "fast", None, True, [], {}]
CONTEXT_KEYS = ["cpu_model", "gpu", "gpubench_git_commit", "host_name", "date", "openblas_config"]

# --- the classes and the status the contract gives each -----------------------------------------

# The commands, each on the base it runs on in the tests below.
COMMANDS = (
    "benchjson --errors",
    "table --gpu-rows",
    "export",
    "history add",
    "history check",
    "compare",
    "compare self",
    "report",
    "advise",
)

# class -> the exit status of each command, in the order of COMMANDS. history check runs on a
# database holding the base twice and then what `history add` took of the file; compare judges
# the file as contender of its base (the CI gate's thresholds); compare self has the file on
# both sides. A whole file with sound times passes everything but the gates that see a
# benchmark fail; what is not whole, or measured nothing, is refused where it would be stored
# or published.
# fmt: off
STATUS: dict[str, dict[str, int]] = {
    kind: dict(zip(COMMANDS, codes))
    for kind, codes in {
        #                   errors table export add check compare self report advise
        "hostile text":     (OK, OK, OK, OK, OK, OK, OK, OK, OK),
        "hostile name":     (OK, OK, OK, OK, OK, REGRESSION, OK, OK, OK),
        "failed benchmark": (OK, OK, OK, OK, REGRESSION, REGRESSION, OK, OK, OK),
        "malformed row":    (OK, OK, UNUSABLE, UNUSABLE, OK, UNUSABLE, UNUSABLE, OK, OK),
        "unsound row":      (OK, OK, UNUSABLE, UNUSABLE, OK, REGRESSION, OK, OK, OK),
        "unsound counter":  (OK, OK, OK, OK, OK, REGRESSION, OK, OK, OK),
        "duplicate row":    (OK, OK, OK, OK, OK, OK, OK, OK, OK),
        "nothing measured": (OK, OK, UNUSABLE, UNUSABLE, OK, UNUSABLE, UNUSABLE, UNUSABLE,
                             UNUSABLE),
        "some disturbed":   (OK, OK, OK, OK, OK, OK, OK, OK, OK),
        "all disturbed":    (OK, OK, OK, OK, OK, UNRESOLVED, UNRESOLVED, OK, OK),
        "cut off":          (UNUSABLE, OK, UNUSABLE, UNUSABLE, OK, REGRESSION, UNUSABLE, OK, OK),
        "not a bench file": (UNUSABLE, UNUSABLE, UNUSABLE, UNUSABLE, OK, UNUSABLE, UNUSABLE,
                             UNUSABLE, UNUSABLE),
    }.items()
}
# fmt: on


# --- generating one class -----------------------------------------------------------------------


def _measured(rows: list[dict[str, Any]]) -> list[int]:
    return [
        i
        for i, r in enumerate(rows)
        if r.get("run_type", "iteration") == "iteration" and not r.get("error_occurred")
    ]


def _first_row_end(text: str) -> int:
    """Where the first complete row of an indent=1 dump ends."""
    return text.index("\n  }", text.index('"benchmarks"')) + len("\n  }")


@st.composite
def bad_input(draw: st.DrawFn, base: str) -> tuple[str, str]:
    """(class, file text) of the base fixture gone wrong in one way."""
    doc = copy.deepcopy(BASES[base])
    rows = doc["benchmarks"]
    measured = _measured(rows)
    kind = draw(st.sampled_from(sorted(STATUS)))
    index = draw(st.sampled_from(measured))
    if kind == "hostile text":
        for _ in range(draw(st.integers(1, 3))):
            key = draw(st.sampled_from(CONTEXT_KEYS))
            doc["context"][key] = draw(st.sampled_from(HOSTILE_TEXT + [None, 12, math.nan]))
        for i in draw(st.lists(st.sampled_from(measured), max_size=3)):
            rows[i]["label"] = rows[i].get("label", "") + draw(st.sampled_from(HOSTILE_TEXT))
            rows[i]["note"] = draw(st.sampled_from(HOSTILE_TEXT))
    elif kind == "hostile name":
        # Every row of one benchmark renamed: the name a tool prints, links and stores.
        name, hostile = rows[index]["run_name"], draw(st.sampled_from(HOSTILE_TEXT[:6]))
        for row in rows:
            if row["run_name"] == name:
                row["name"] = row["name"].replace(name, name + hostile)
                row["run_name"] = name + hostile
    elif kind == "failed benchmark":
        # Every repetition of one benchmark reports an error (a wrong result, a CUDA error).
        message = draw(st.sampled_from(HOSTILE_TEXT))
        for row in rows:
            if row["run_name"] == rows[index]["run_name"] and row.get("run_type") != "aggregate":
                row.update(error_occurred=True, error_message=message)
    elif kind == "malformed row":
        if draw(st.booleans()):
            rows[index].pop(draw(st.sampled_from(["time_unit", "real_time", "cpu_time", "name"])))
        else:
            key = draw(st.sampled_from(TIMES + ["time_unit", "run_type", "flop", "m"]))
            rows[index][key] = draw(st.sampled_from(MISTYPED))
    elif kind == "unsound row":
        key = draw(st.sampled_from(TIMES))
        # No iterations with a time is how Google Benchmark writes a skip, not an unsound row.
        rows[index][key] = draw(st.sampled_from([v for v in UNSOUND if key != "iterations" or v]))
    elif kind == "unsound counter":
        rows[index][draw(st.sampled_from(["flop", "m"]))] = draw(st.sampled_from(UNSOUND_COUNTER))
    elif kind == "duplicate row":
        rows.append(copy.deepcopy(rows[index]))
    elif kind == "nothing measured":
        for row in rows:
            row.update(error_occurred=True, error_message="does not fit in device memory: x")
    elif kind in ("some disturbed", "all disturbed"):
        for i in measured:
            hit = kind == "all disturbed" or i % 2 == 0
            rows[i].update(disturbed=int(hit), disturbed_by=int(hit), cpu_wait_cores=float(hit))
            rows[i]["cpu_other_cores"] = float(hit)
            for key in ("real_time", "cpu_time"):
                rows[i][key] *= 3 if hit else 1
    text = json.dumps(doc, indent=1)  # NaN and Infinity as Python's json writes them
    if kind == "cut off":
        # In the last quarter: the complete rows hold some of every kind (the advisor's GPU rows
        # and probes); a cut before the first row is no bench file.
        text = text[
            : draw(st.integers(max(_first_row_end(text), 3 * len(text) // 4), len(text) - 2))
        ]
    elif kind == "not a bench file":
        way = draw(st.sampled_from(["prefix", "deep", "trailing"]))
        if way == "prefix":
            text = text[: draw(st.integers(0, _first_row_end(text) - 2))]
        elif way == "deep":
            depth = draw(st.sampled_from([33, 2000, 200_000]))
            text = text.replace(
                '"benchmarks": [', '"benchmarks": [' + "[" * depth + "]" * depth + ",", 1
            )
        else:
            text += draw(st.sampled_from(["\0" * 16, "\0\0 }", "x", text[: len(text) // 3]]))
    return kind, text


# --- running one command ----------------------------------------------------------------------


def _run(
    capsys: pytest.CaptureFixture[str], main: Callable[[list[str]], int], *args: str
) -> tuple[int, str, str]:
    code, out, err = run_tool(capsys, main, *args)
    for line in err.splitlines():  # the input never forges a CI command or moves the cursor
        assert not line.lstrip().startswith(("::", "##vso")) and "\x1b" not in line, line
    if code == UNUSABLE:  # unusable input is said on an error line
        assert any("error" in line for line in err.splitlines()), err
    return code, out, err


def _expect(kind: str, command: str, code: int, err: str) -> None:
    assert code == STATUS[kind][command], (kind, command, code, err[-2000:])


def _no_raw_html(text: str) -> None:
    # A code span shows its text literally (CommonMark escapes it): only text outside code
    # spans could carry markup.
    lowered = re.sub(r"``.*?``|`[^`\n]*`", "", text).lower()
    assert "<script" not in lowered and "<img src=x" not in lowered, "raw HTML from the input"


def _file(tmp: Path, text: str) -> Path:
    path = tmp / "run.json"
    path.write_text(text)
    return path


@examples(60)
@given(case=bad_input("ci_cpu"))
def test_benchjson_and_table(case: tuple[str, str], capsys, tmp_path_factory) -> None:
    kind, text = case
    path = _file(tmp_path_factory.mktemp("p"), text)
    code, out, err = _run(capsys, errors_main, "--errors", str(path))
    _expect(kind, "benchjson --errors", code, err)
    if code == OK:
        assert "failed" in out and "skipped" in out
        # Rows are counted only in a whole file: never for a truncated one.
        assert not benchjson.load_report(str(path)).recovered_from_truncation
    code, out, err = _run(capsys, errors_main, "--gpu-rows", str(path))
    _expect(kind, "table --gpu-rows", code, err)
    if code == OK:
        assert int(out.strip()) >= 0


@examples(40)
@given(case=bad_input("ci_cpu"))
@example(
    case=(
        "unsound row",
        json.dumps(
            {**CI_CPU, "benchmarks": [dict(r, real_time=1e308) for r in CI_CPU["benchmarks"]]}
        ),
    )
)
def test_export_both_formats(case: tuple[str, str], capsys, tmp_path_factory) -> None:
    kind, text = case
    tmp = tmp_path_factory.mktemp("p")
    path = _file(tmp, text)
    for fmt in export.FORMATS:
        out = tmp / f"{fmt}.json"
        code, _, err = _run(capsys, export.main, "--format", fmt, str(path), "--out", str(out))
        _expect(kind, "export", code, err)
        if code == OK:
            # Strict JSON: no NaN or Infinity ever reaches a dashboard.
            doc = json.loads(out.read_text(), parse_constant=pytest.fail)
            values = (
                [e["value"] for e in doc]
                if isinstance(doc, list)
                else [m["latency"]["value"] for m in doc.values()]
            )
            assert values and all(0 < v < 1e20 for v in values)


@examples(40)
@given(case=bad_input("ci_cpu"))
def test_history_add_and_check(case: tuple[str, str], capsys, tmp_path_factory) -> None:
    kind, text = case
    tmp = tmp_path_factory.mktemp("p")
    path, db = _file(tmp, text), str(tmp / "h.db")
    for i, date in enumerate(("2026-01-01T00:00:00", "2026-01-02T00:00:00")):
        args = ("add", db, str(CI_CPU_PATH), "--commit", f"c{i}", "--date", date)
        assert _run(capsys, history_main, *args)[0] == OK
    args = ("add", db, str(path), "--commit", "new", "--date", "2026-01-03T00:00:00")
    code, _, err = _run(capsys, history_main, *args)
    _expect(kind, "history add", code, err)
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == (3 if code == OK else 2)
        samples = conn.execute("SELECT real_time_s, cpu_time_s, iterations FROM samples")
        for real_s, cpu_s, iterations in samples:
            # Only sound measurements are ever stored as times.
            assert math.isfinite(real_s) and 0 < real_s <= 1e6
            assert cpu_s is None or (math.isfinite(cpu_s) and 0 < cpu_s <= 1e6)
            assert 0 < iterations <= 1e15
    code, out, err = _run(capsys, history_main, "check", db)
    _expect(kind, "history check", code, err)


@examples(30)
@given(case=bad_input("ci_cpu"))
def test_compare(case: tuple[str, str], capsys, tmp_path_factory) -> None:
    kind, text = case
    tmp = tmp_path_factory.mktemp("p")
    path, md = _file(tmp, text), tmp / "compare.md"
    base, config = str(CI_CPU_PATH), str(CI_CONFIG)
    code, out, err = _run(
        capsys, compare_main, base, str(path), "--config", config, "--markdown", str(md)
    )
    _expect(kind, "compare", code, err)
    if kind in ("cut off", "not a bench file", "nothing measured", "malformed row"):
        # A gate never passes what is not a whole, well-formed, measured run, even when told
        # to let missing benchmarks pass.
        assert "gate: PASS" not in out
        code, _, err = _run(capsys, compare_main, base, str(path), "--allow-missing")
        assert code == STATUS[kind]["compare"], (kind, "--allow-missing", code, err[-2000:])
    if md.exists():
        _no_raw_html(md.read_text())
    # The same file on both sides, hostile names included, never regresses against itself.
    code, out, err = _run(capsys, compare_main, str(path), str(path), "--markdown", str(md))
    _expect(kind, "compare self", code, err)


@examples(25)
@given(case=bad_input("h100"))
def test_advise(case: tuple[str, str], capsys, tmp_path_factory) -> None:
    kind, text = case
    path = _file(tmp_path_factory.mktemp("p"), text)
    for request in (["--gemm", "256x256x256"], ["--gemm", "64x64x64", "--json"]):
        code, out, err = _run(capsys, advise_main, str(path), *request)
        _expect(kind, "advise", code, err)
        if code == OK and "--json" in request:
            json.loads(out, parse_constant=pytest.fail)


def _one_row(key: str, value: Any, row: int = 5) -> str:
    doc = copy.deepcopy(CPU_ONLY)
    doc["benchmarks"][row][key] = value
    return json.dumps(doc, indent=1)


@examples(15)
@given(case=bad_input("cpu_only"))
@example(case=("unsound row", _one_row("real_time", 0)))
def test_report(case: tuple[str, str], capsys, tmp_path_factory) -> None:
    kind, text = case
    tmp = tmp_path_factory.mktemp("p")
    path, out = _file(tmp, text), tmp / "r"
    code, _, err = _run(capsys, report_main, str(path), "--out", str(out), "--quiet")
    _expect(kind, "report", code, err)
    if code == OK:
        md = (out / "report.md").read_text()
        _no_raw_html(md)
        for line in md.splitlines():
            assert not line.startswith("# injected"), line
        _no_raw_html((out / "report.html").read_text().split("<body>", 1)[1])


@pytest.mark.parametrize("value", [0, -1.5])
def test_compare_self_with_a_zero_work_counter_is_no_regression(value, capsys, tmp_path) -> None:
    doc = copy.deepcopy(CI_CPU)
    doc["benchmarks"][0]["flop"] = value
    path = _file(tmp_path, json.dumps(doc))
    assert _run(capsys, compare_main, str(path), str(path))[0] == OK


UNEXPECTED_ERROR_TOOLS: dict[str, tuple[Callable[[list[str]], int], list[str]]] = {
    "report": (report_main, ["--out", "OUT"]),
    "export": (export.main, ["--format", "bencher"]),
    "history add": (history_main, ["add", "OUT/h.db"]),
    "benchjson": (errors_main, ["--errors"]),
}


@pytest.mark.parametrize("tool", sorted(UNEXPECTED_ERROR_TOOLS))
def test_an_unexpected_error_is_one_line_and_exit_2(
    tool: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr(benchjson, "_make_row", broken)
    main, args = UNEXPECTED_ERROR_TOOLS[tool]
    args = [a.replace("OUT", str(tmp_path)) for a in args] + [str(CPU_ONLY_PATH)]
    code, _, err = call_tool(capsys, main, *args)
    assert code == UNUSABLE
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "ZeroDivisionError" in lines[0] and "Traceback" not in err
    code, _, err = call_tool(capsys, main, *args, "--debug")
    assert code == UNUSABLE and "Traceback" in err
