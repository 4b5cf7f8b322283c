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
import tempfile
from pathlib import Path
from typing import Any, Callable

import pytest
from conftest import FIXTURES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpubench_tools import benchjson, dataset, export
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
BASES = {"cpu_only": CPU_ONLY, "h100": H100}

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
TEXT_KEYS = ["name", "run_name", "label", "error_message", "time_unit", "run_type"]
CONTEXT_KEYS = ["cpu_model", "gpu", "gpubench_git_commit", "host_name", "date", "openblas_config"]


# --- mutations --------------------------------------------------------------------------------


@st.composite
def row_mutation(draw: st.DrawFn, n_rows: int) -> Callable[[dict[str, Any]], None]:
    index = draw(st.integers(0, n_rows - 1))
    kind = draw(st.sampled_from(["number", "text", "delete", "duplicate", "error"]))
    if kind == "number":
        key = draw(st.sampled_from(NUMERIC_KEYS))
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
        row = rows[index % len(rows)]
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
    name = base or draw(st.sampled_from(sorted(BASES)))
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


def examples(n: int) -> settings:
    """`n` examples, no deadline (a report draws charts), the same examples on every run."""
    return settings(
        max_examples=n,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        derandomize=True,
        database=None,
    )


@examples(40)
@given(case=mutated_text())
def test_benchjson_and_dataset(case: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    _, text = case
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.json"
        path.write_text(text)
        code, out, _ = _run(capsys, benchjson._main, ["--errors", str(path)])
        assert code in (OK, UNUSABLE)
        if code == OK:
            assert "failed" in out and "skipped" in out
        code, out, _ = _run(capsys, dataset._main, ["--gpu-rows", str(path)])
        assert code in (OK, UNUSABLE)
        if code == OK:
            assert int(out.strip()) >= 0


@examples(35)
@given(case=mutated_text())
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
        code, out, _ = _run(capsys, history_main, ["check", db])
        assert code in (OK, REGRESSION, UNUSABLE)
        for line in out.splitlines():
            # Never a NaN or Infinity judged as a time.
            assert "nan" not in line.split(":")[-1].lower().split(), line


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


@examples(6)
@given(case=mutated_text(base="cpu_only"))
def test_report(case: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    _, text = case
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.json"
        path.write_text(text)
        out = Path(tmp) / "r"
        code, _, _ = _run(capsys, report_main, [str(path), "--out", str(out), "--quiet"])
        assert code in (OK, UNUSABLE)
        if code == OK:
            md = (out / "report.md").read_text()
            _no_raw_script(md)
            for line in md.splitlines():
                assert not line.startswith("# injected"), line
            _no_raw_script((out / "report.html").read_text().split("<body>", 1)[1])
