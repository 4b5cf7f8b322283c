"""Every command on mutated bench JSON: whatever the file holds, the exit status is one the
contract allows (0 done, 1 a real regression or failure, 2 unusable input), stderr never holds a
traceback, and no Markdown or HTML carries a raw `<script>` from the input.

The inputs start from real bench output (tests/tools/fixtures) and are mutated the way files go
wrong: NaN, Infinity, zero, negative and absurd (1e308) values, strings where numbers belong,
missing keys, duplicate names, a file cut short, and hostile text (newlines, `<script>`, `|`,
backticks) in names, labels, error messages and context values.
"""

from __future__ import annotations

import copy
import json
import math
import sqlite3
import tempfile
from pathlib import Path
from typing import Any, Callable

import pytest
from conftest import FIXTURES, REPO, examples
from hypothesis import example, given
from hypothesis import strategies as st

from gpubench_tools import benchjson, export, table
from gpubench_tools.advise import main as advise_main
from gpubench_tools.history.cli import main as history_main
from gpubench_tools.report import main as report_main

OK, REGRESSION, UNUSABLE = 0, 1, 2

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
CI_CPU = json.loads((REPO / "reports" / "baselines" / "ci-cpu.json").read_text())
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
]
BAD_NUMBERS: list[Any] = [
    float("nan"),
    float("inf"),
    float("-inf"),
    0,
    -1.5,
    1e308,
    -1e308,
    1e30,
    "12",
    "fast",
    None,
    True,
    [],
    {},
]
NUMERIC_KEYS = ["real_time", "cpu_time", "iterations", "repetition_index", "threads", "flop", "m"]
# Times are what every tool divides by, stores and uploads: drawn more often.
NUMERIC_DRAWS = ["real_time"] * 3 + ["cpu_time"] * 2 + ["iterations"] * 2 + NUMERIC_KEYS
TEXT_KEYS = ["name", "run_name", "label", "error_message", "time_unit", "run_type"]
CONTEXT_KEYS = ["cpu_model", "gpu", "gpubench_git_commit", "host_name", "date", "openblas_config"]


# --- mutations --------------------------------------------------------------------------------


@st.composite
def row_mutation(draw: st.DrawFn, n_rows: int) -> Callable[[dict[str, Any]], None]:
    # One row, or every step-th row from a start: a value broken in many rows reaches the rows
    # a tool actually uses (the GEMM sweep of the report, the probes of the advisor).
    start = draw(st.integers(0, n_rows - 1))
    step = draw(st.sampled_from([0, 1, 3, 7]))
    kind = draw(st.sampled_from(["number", "number", "text", "delete", "duplicate", "error"]))
    if kind == "number":
        key = draw(st.sampled_from(NUMERIC_DRAWS))
        value = draw(st.sampled_from(BAD_NUMBERS))
    elif kind == "text":
        key = draw(st.sampled_from(TEXT_KEYS))
        value = draw(st.sampled_from(HOSTILE_TEXT + BAD_NUMBERS[:3]))
    elif kind == "delete":
        key = draw(st.sampled_from(NUMERIC_KEYS + TEXT_KEYS))
        value = None
    elif kind == "error":
        key, value = "error_message", draw(st.sampled_from(HOSTILE_TEXT))
    else:
        key, value = "", None

    def apply(doc: dict[str, Any]) -> None:
        rows = doc["benchmarks"]
        chosen = rows[start % len(rows) :: step] if step else [rows[start % len(rows)]]
        for row in chosen:
            if kind == "delete":
                row.pop(key, None)
            elif kind == "duplicate":
                rows.append(copy.deepcopy(row))
            elif kind == "error":
                row["error_occurred"] = True
                row[key] = value
            else:
                row[key] = value

    return apply


@st.composite
def context_mutation(draw: st.DrawFn) -> Callable[[dict[str, Any]], None]:
    key = draw(st.sampled_from(CONTEXT_KEYS))
    value = draw(st.sampled_from(HOSTILE_TEXT + [None, 12, float("nan")]))

    def apply(doc: dict[str, Any]) -> None:
        doc["context"][key] = value

    return apply


@st.composite
def mutated_text(draw: st.DrawFn, base: str | None = None) -> tuple[str, str]:
    """(base name, file text) of a fixture with one to three mutations, maybe cut short."""
    name = base or draw(st.sampled_from(["cpu_only", "h100"]))
    doc = copy.deepcopy(BASES[name])
    n_rows = len(doc["benchmarks"])
    changes = draw(
        st.lists(st.one_of(row_mutation(n_rows), context_mutation()), min_size=1, max_size=3)
    )
    for change in changes:
        change(doc)
    text = json.dumps(doc, indent=1)  # NaN and Infinity as Python's json writes them
    if draw(st.integers(0, 5)) == 0:
        text = text[: draw(st.integers(0, len(text)))]
    return name, text


def known(
    base: str, key: str, value: Any, cut: bool = False, row: int | None = None
) -> tuple[str, str]:
    """An explicit example: `key` set to `value` in one row (`row`) or every row of a fixture:
    the inputs that once broke a tool, run on every test run besides the generated ones."""
    doc = copy.deepcopy(BASES[base])
    for i, one in enumerate(doc["benchmarks"]):
        if row is None or i == row:
            one[key] = value
    text = json.dumps(doc)
    return base, text[: len(text) // 2] if cut else text


# --- running one command ----------------------------------------------------------------------


def _run(
    capsys: pytest.CaptureFixture[str], main: Callable[[list[str]], int], args: list[str]
) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        code = main(args)
    except SystemExit as exc:  # argparse's usage errors
        code = exc.code if isinstance(exc.code, int) else UNUSABLE
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    return code, out, err


def _no_raw_script(text: str) -> None:
    lowered = text.lower()
    assert "<script" not in lowered and "<img src=x" not in lowered, "raw HTML from the input"


@examples(40)
@given(case=mutated_text())
@example(case=known("cpu_only", "label", "x", cut=True))
def test_benchjson_and_table(case: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    _, text = case
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.json"
        path.write_text(text)
        code, out, _ = _run(capsys, benchjson._main, ["--errors", str(path)])
        assert code in (OK, UNUSABLE)
        if code == OK:
            assert "failed" in out and "skipped" in out
            # Rows are counted only in a whole file: never for a truncated one.
            assert not benchjson.load_report(str(path)).recovered_from_truncation
        code, out, _ = _run(capsys, table._main, ["--gpu-rows", str(path)])
        assert code in (OK, UNUSABLE)
        if code == OK:
            assert int(out.strip()) >= 0


@examples(35)
@given(case=mutated_text())
@example(case=known("h100", "real_time", 1e308))
def test_export_both_formats(case: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    _, text = case
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.json"
        path.write_text(text)
        for fmt in export.FORMATS:
            out = Path(tmp) / f"{fmt}.json"
            code, _, _ = _run(capsys, export.main, ["--format", fmt, str(path), "--out", str(out)])
            assert code in (OK, UNUSABLE)
            if code == OK:
                # Strict JSON: no NaN or Infinity ever reaches a dashboard.
                doc = json.loads(out.read_text(), parse_constant=pytest.fail)
                values = (
                    [e["value"] for e in doc]
                    if isinstance(doc, list)
                    else [m["latency"]["value"] for m in doc.values()]
                )
                assert values and all(0 < v < 1e20 for v in values)


@examples(30)
@given(case=mutated_text())
@example(case=known("cpu_only", "iterations", 1e30))
@example(case=known("cpu_only", "real_time", float("nan")))
def test_history_add_and_check(case: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    name, text = case
    with tempfile.TemporaryDirectory() as tmp:
        base, path, db = Path(tmp) / "base.json", Path(tmp) / "run.json", str(Path(tmp) / "h.db")
        base.write_text(json.dumps(BASES[name]))
        path.write_text(text)
        for i, date in enumerate(("2026-01-01T00:00:00", "2026-01-02T00:00:00")):
            code, _, _ = _run(
                capsys, history_main, ["add", db, str(base), "--commit", f"c{i}", "--date", date]
            )
            assert code == OK
        code, _, _ = _run(
            capsys,
            history_main,
            ["add", db, str(path), "--commit", "new", "--date", "2026-01-03T00:00:00"],
        )
        assert code in (OK, UNUSABLE)
        with sqlite3.connect(db) as conn:
            samples = conn.execute("SELECT real_time_s, cpu_time_s, iterations FROM samples")
            for real_s, cpu_s, iterations in samples:
                # Only sound measurements are ever stored as times.
                assert math.isfinite(real_s) and 0 < real_s <= 1e6
                assert cpu_s is None or (math.isfinite(cpu_s) and 0 < cpu_s <= 1e6)
                assert 0 < iterations <= 1e15
        code, out, _ = _run(capsys, history_main, ["check", db])
        assert code in (OK, REGRESSION, UNUSABLE)


@examples(25)
@given(case=mutated_text(base="h100"))
def test_advise(case: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    _, text = case
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.json"
        path.write_text(text)
        for request in (["--gemm", "256x256x256"], ["--gemm", "64x64x64", "--json"]):
            code, out, _ = _run(capsys, advise_main, [str(path), *request])
            assert code in (OK, UNUSABLE)
            if code == OK and "--json" in request:
                json.loads(out, parse_constant=pytest.fail)


@examples(12)
@given(case=mutated_text(base="cpu_only"))
@example(case=known("cpu_only", "real_time", 0, row=5))
@example(case=known("cpu_only", "name", "<script>alert(1)</script>\n# injected |", row=5))
def test_report(case: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    _, text = case
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.json"
        path.write_text(text)
        out = Path(tmp) / "r"
        code, _, _ = _run(capsys, report_main, [str(path), "--out", str(out)])
        assert code in (OK, UNUSABLE)
        if code == OK:
            md = (out / "report.md").read_text()
            _no_raw_script(md)
            for line in md.splitlines():
                assert not line.startswith("# injected"), line
            _no_raw_script((out / "report.html").read_text().split("<body>", 1)[1])


# --- compare ------------------------------------------------------------------------------------


@st.composite
def text_only_mutation(draw: st.DrawFn, base: str) -> str:
    """The fixture with hostile text where no time is: context values, an extra string key in
    rows, the messages of rows that already failed. Nothing a gate may call a regression."""
    doc = copy.deepcopy(BASES[base])
    for change in draw(st.lists(context_mutation(), min_size=1, max_size=3)):
        change(doc)
    rows = doc["benchmarks"]
    for index in draw(st.lists(st.integers(0, len(rows) - 1), max_size=4)):
        rows[index]["note"] = draw(st.sampled_from(HOSTILE_TEXT))
        if rows[index].get("error_occurred"):
            rows[index]["error_message"] = draw(st.sampled_from(HOSTILE_TEXT))
    return json.dumps(doc)


def _compare(
    capsys: pytest.CaptureFixture[str], base: Path, contender: Path, tmp: str
) -> tuple[int, str]:
    from gpubench_tools.compare import main as compare_main

    md = Path(tmp) / "compare.md"
    code, _, _ = _run(capsys, compare_main, [str(base), str(contender), "--markdown", str(md)])
    assert code in (OK, REGRESSION, UNUSABLE)
    text = md.read_text() if md.exists() else ""
    _no_raw_script(text)
    return code, text


@examples(30)
@given(case=mutated_text(base="ci_cpu"))
def test_compare_on_mutated_input(
    case: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    name, text = case
    with tempfile.TemporaryDirectory() as tmp:
        base, path = Path(tmp) / "base.json", Path(tmp) / "run.json"
        base.write_text(json.dumps(BASES[name]))
        path.write_text(text)
        _compare(capsys, base, path, tmp)
        # The same file on both sides, hostile names included, never regresses against itself.
        code, _ = _compare(capsys, path, path, tmp)
        assert code in (OK, UNUSABLE)


@examples(25)
@given(text=text_only_mutation("ci_cpu"))
def test_compare_text_only_changes_are_no_regression(
    text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base, path = Path(tmp) / "base.json", Path(tmp) / "run.json"
        base.write_text(json.dumps(BASES["ci_cpu"]))
        path.write_text(text)
        code, _ = _compare(capsys, base, path, tmp)
        assert code != REGRESSION
