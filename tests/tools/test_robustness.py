"""The exit-code contract, the row-validity rule, escaping by context and grouped skip reasons,
each on the input that once broke a tool: a zero or NaN time, 1e308, 1e30 iterations, a
truncated file, a `<script>` in a benchmark name, 18 rows skipped for one reason."""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path
from typing import Any, Callable

import pandas as pd
import pytest
from conftest import FIXTURES, gb_row, write_bench_json

from gpubench_tools import benchjson, export, schema
from gpubench_tools.history.cli import main as history_main
from gpubench_tools.report import main as report_main

OK, REGRESSION, UNUSABLE = 0, 1, 2
CPU_ONLY = FIXTURES / "cpu_only.json"
BF16_REASON = (
    "not supported on this machine: no native bf16 products: the loaded OpenBLAS (OpenBLAS "
    "0.3.21 NO_LAPACKE DYNAMIC_ARCH core=Cooperlake) exports no cblas_sbgemm: it was built "
    "without BUILD_BFLOAT16"
)


def run(
    capsys: pytest.CaptureFixture[str], main: Callable[[list[str]], int], *args: str
) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def cpu_doc() -> dict[str, Any]:
    return json.loads(CPU_ONLY.read_text())


def write(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(json.dumps(doc))  # NaN and Infinity as Python's json writes them
    return path


def with_value(tmp_path: Path, index: int, key: str, value: Any) -> Path:
    doc = cpu_doc()
    doc["benchmarks"][index][key] = value
    return write(tmp_path / "run.json", doc)


# --- the row-validity rule in the one reader ----------------------------------------------------


@pytest.mark.parametrize(
    "key, value",
    [
        ("real_time", math.nan),
        ("real_time", math.inf),
        ("real_time", 0),
        ("real_time", -3.0),
        ("real_time", 1e308),
        ("real_time", "fast"),
        ("cpu_time", math.nan),
        ("cpu_time", -1.0),
        ("iterations", 1e30),
        ("iterations", math.nan),
        ("iterations", -5),
        ("repetition_index", math.inf),
    ],
)
def test_unsound_values_make_the_row_invalid(tmp_path: Path, key: str, value: Any) -> None:
    report = benchjson.load_report(str(with_value(tmp_path, 3, key, value)))
    bad = benchjson.invalid_rows(report)
    assert [r.name for r in bad] == [report.rows[3].name]
    assert key in (bad[0].invalid or "")
    row = bad[0]
    assert math.isnan(row.real_time_s) and row.counters == {} and not row.usable
    assert row not in benchjson.iteration_rows(report)
    assert len(benchjson.iteration_rows(report)) == len(report.rows) - 1


@pytest.mark.parametrize("key, value", [("flop", math.inf), ("FLOP/s", 1e308), ("m", math.nan)])
def test_a_bad_counter_keeps_the_time_and_is_left_out_of_the_point(
    tmp_path: Path, key: str, value: Any
) -> None:
    # A diverged training run writes final_loss NaN next to a sound time: the row stays a
    # measurement (compare judges the counter itself), and the report's point goes without it.
    from gpubench_tools.table import load_table, summarize

    path = with_value(tmp_path, 3, key, value)
    report = benchjson.load_report(str(path))
    row = report.rows[3]
    assert row.usable and row.real_time_s > 0
    assert not schema.usable_counter(row.counters[key])
    summary = summarize(load_table([str(path)]).rows)
    (point,) = summary[summary["name"] == row.run_name].itertuples()
    assert pd.isna(
        getattr(point, key.replace("/", "_"), math.nan)
        if key != "FLOP/s"
        else summary.loc[summary["name"] == row.run_name, key].iloc[0]
    )
    assert point.time_s == row.real_time_s


def test_sound_rows_failed_rows_and_aggregates_are_not_invalid(tmp_path: Path) -> None:
    rows = [
        gb_row("a", 2e-6),
        gb_row("b", 0.0, error="result differs"),  # failed: real_time 0 is Google Benchmark's
        gb_row("a", 0.05, aggregate_name="cv", run_type="aggregate", counters={"m": math.nan}),
    ]
    skip = gb_row("c", 0.0)
    skip["iterations"] = 0  # Google Benchmark 1.8 SkipWithMessage: no iterations, time 0
    report = benchjson.load_report(str(write_bench_json(tmp_path / "r.json", rows + [skip])))
    assert benchjson.invalid_rows(report) == []
    assert [r.name for r in benchjson.iteration_rows(report)] == ["a", "c"]


def test_every_fixture_is_sound() -> None:
    for path in FIXTURES.glob("*.json"):
        assert benchjson.invalid_rows(benchjson.load_report(str(path))) == [], path


# --- benchjson --errors -------------------------------------------------------------------------


def test_errors_names_a_truncated_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = CPU_ONLY.read_text()
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) // 2])
    code, out, err = run(capsys, benchjson._main, "--errors", str(cut))
    assert code == UNUSABLE and out == ""
    assert len(err.strip().splitlines()) == 1 and str(cut) in err and "truncated" in err


def test_errors_counts_invalid_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = with_value(tmp_path, 0, "real_time", math.nan)
    code, out, _ = run(capsys, benchjson._main, "--errors", str(path))
    assert code == OK and out.strip().endswith(", 1 invalid")


# --- report -------------------------------------------------------------------------------------


def test_report_on_a_zero_time_lists_the_row_invalid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = with_value(tmp_path, 5, "real_time", 0)
    code, _, err = run(capsys, report_main, str(path), "--out", str(tmp_path / "r"))
    assert code == OK, err
    md = (tmp_path / "r" / "report.md").read_text()
    name = cpu_doc()["benchmarks"][5]["name"]
    assert "1 invalid in run.json: real_time is 0" in md
    assert f"- `{name}`" in md
    assert "Traceback" not in err


def _bf16_run(tmp_path: Path) -> Path:
    """A CPU-only run whose 18 bf16 MLP rows all skip for one long reason, like bench on a CPU
    whose OpenBLAS has no cblas_sbgemm."""
    rows = [gb_row("matmul/cpu/openblas/dtype:fp32/m:64/n:64/k:64/threads:1", 3e-5)]
    rows[0].update(flop=2 * 64**3, m=64, n=64, k=64, threads=1.0)
    rows[0]["label"] = "workload=matmul backend=cpu dtype=fp32 shape=square"
    for i in range(18):
        name = f"mlp/cpu/openblas/data:synthetic/batch:{2 ** (i + 1)}/hidden:64/precision:bf16"
        rows.append(gb_row(name, 0.0, error=BF16_REASON))
    return write_bench_json(tmp_path / "cpu.json", rows, {"cpu_model": "AMD EPYC"})


def test_report_says_one_reason_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _bf16_run(tmp_path)
    code, _, err = run(capsys, report_main, str(path), "--out", str(tmp_path / "r"))
    assert code == OK, err
    md = (tmp_path / "r" / "report.md").read_text()
    html = (tmp_path / "r" / "report.html").read_text()
    failed_section = md.split("## Failed, skipped and invalid benchmarks")[1]
    assert failed_section.count("<summary>") == 1  # one line for the 18 skipped benchmarks
    assert "18 skipped in" in failed_section and failed_section.count("cblas_sbgemm") == 1
    assert failed_section.count("<details>") == 1 and failed_section.count("\n- `mlp/cpu/") == 18
    assert html.count("<details><summary>18 skipped") == 1
    assert html.count("<li><code>mlp/cpu/") == 18
    # The terminal: one warning line for the reason, the names only with --verbose.
    assert sum("skipped" in line for line in err.splitlines()) == 1
    code, _, err = run(capsys, report_main, str(path), "--out", str(tmp_path / "v"), "--verbose")
    assert code == OK and sum("/precision:bf16" in line for line in err.splitlines()) == 18
    code, out, err = run(capsys, report_main, str(path), "--out", str(tmp_path / "q"), "--quiet")
    assert (code, out, err) == (OK, "", "")


# --- export -------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", export.FORMATS)
def test_export_refuses_an_absurd_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    path = with_value(tmp_path, 2, "real_time", 1e308)
    code, out, err = run(capsys, export.main, "--format", fmt, str(path))
    assert code == UNUSABLE and out == ""
    assert len(err.strip().splitlines()) == 1 and str(path) in err and "1 row invalid" in err


def test_export_groups_one_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _bf16_run(tmp_path)
    out_file = str(tmp_path / "o.json")
    code, _, err = run(capsys, export.main, "--format", "bencher", str(path), "--out", out_file)
    # The file has no condition counters: besides the dropped rows, one line says so, once.
    lines = [line for line in err.strip().splitlines() if "conditions unknown" not in line]
    assert code == OK and len(lines) == 1 and "18 rows dropped" in err
    assert err.count("conditions unknown") == 1
    code, _, err = run(
        capsys, export.main, "--format", "bencher", str(path), "--out", out_file, "--verbose"
    )
    lines = [line for line in err.strip().splitlines() if "conditions unknown" not in line]
    assert code == OK and len(lines) == 19
    code, out, err = run(
        capsys, export.main, "--format", "bencher", str(path), "--out", out_file, "--quiet"
    )
    assert (code, out, err) == (OK, "", "")
    assert list(json.loads(Path(out_file).read_text())) == [
        "matmul/cpu/openblas/dtype:fp32/m:64/n:64/k:64/threads:1"
    ]


# --- history ------------------------------------------------------------------------------------


def _add(capsys: pytest.CaptureFixture[str], db: Path, path: Path, i: int) -> tuple[int, str]:
    code, _, err = run(
        capsys,
        history_main,
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


# --- the exit-code contract ---------------------------------------------------------------------


TOOLS: dict[str, tuple[Callable[[list[str]], int], list[str]]] = {
    "report": (report_main, ["--out", "OUT"]),
    "export": (export.main, ["--format", "bencher"]),
    "history add": (history_main, ["add", "OUT/h.db"]),
    "benchjson": (benchjson._main, ["--errors"]),
}


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_an_unexpected_error_is_one_line_and_exit_2(
    tool: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr(benchjson, "_make_row", broken)
    main, args = TOOLS[tool]
    args = [a.replace("OUT", str(tmp_path)) for a in args] + [str(CPU_ONLY)]
    code, _, err = run(capsys, main, *args)
    assert code == UNUSABLE
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "ZeroDivisionError" in lines[0] and "Traceback" not in err
    code, _, err = run(capsys, main, *args, "--debug")
    assert code == UNUSABLE and "Traceback" in err


def test_history_quiet_prints_nothing_but_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "h.db")
    args = ["--commit", "c0", "--date", "2026-01-01T00:00:00", "--quiet"]
    assert run(capsys, history_main, "add", db, str(CPU_ONLY), *args) == (OK, "", "")
    assert run(capsys, history_main, "check", db, "--quiet") == (OK, "", "")
    code, out, err = run(capsys, history_main, "check", db)
    assert code == OK and out and err  # without --quiet: the verdicts and the unjudged count
