"""gpubench-export: github-action-benchmark and Bencher JSON, one rule per test."""

from __future__ import annotations

import contextlib
import io
import json
import math
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, gb_row, write_bench_json

from gpubench_tools.export import main
from bad_inputs import OK, UNUSABLE, bf16_run, call_tool, with_value

from gpubench_tools.export import FORMATS, ExportError, benchmark_values, file_notes
from gpubench_tools.timing import read_rows

CPU = "matmul/cpu/openblas/dtype:fp32/m:64/n:64/k:64/threads:1"
GPU = "matmul/gpu/cublas_kernel/dtype:fp32/m:64/n:64/k:64/manual_time"
COMPARE_FIXTURES = Path(__file__).resolve().parent / "compare_fixtures"


def strict_json(text: str) -> Any:
    """Parse the way a browser does: NaN and Infinity are not JSON."""

    def refuse(token: str) -> None:
        raise ValueError(f"non-standard JSON constant {token}")

    return json.loads(text, parse_constant=refuse)


def export(*args: str) -> tuple[int, Any, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    text = out.getvalue()
    return code, (strict_json(text) if code == 0 and text else None), err.getvalue()


def reps(name: str, times_s: list[float], **kwargs: Any) -> list[dict[str, Any]]:
    """Repetition rows followed by Google Benchmark's aggregates (deliberately wrong values)."""
    rows = [
        gb_row(name, t, repetition_index=i, repetitions=len(times_s), **kwargs)
        for i, t in enumerate(times_s)
    ]
    for agg in ("mean", "median", "stddev", "cv"):
        rows.append(gb_row(name, 123.0, aggregate_name=agg, run_type="aggregate", **kwargs))
    return rows


@pytest.fixture
def run(tmp_path: Path) -> Path:
    rows = reps(CPU, [3e-6, 1e-6, 2e-6, 5e-6, 4e-6], counters={"blas_threads": 1.0})
    rows += reps(GPU, [8e-6, 9e-6, 10e-6])
    rows.append(gb_row("mlp/gpu/fused/data:synthetic/manual_time", 0.0, error="does not fit"))
    return write_bench_json(tmp_path / "run.json", rows)


def by_name(entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in entries}


def test_github_action_benchmark_median_of_repetitions_with_range(run: Path) -> None:
    code, doc, err = export("--format", "github-action-benchmark", str(run))
    assert code == 0
    assert isinstance(doc, list) and [e["name"] for e in doc] == [CPU, GPU]
    cpu = by_name(doc)[CPU]
    assert set(cpu) == {"name", "unit", "value", "range", "extra"}
    assert cpu["unit"] == "ns" and cpu["value"] == pytest.approx(3000.0)  # not the 123 s aggregate
    assert cpu["range"] == "± 2000.0"  # covers the fastest (1 us) and the slowest (5 us)
    assert (
        "median of 5 repetitions" in cpu["extra"] and "min 1.000 us, max 5.000 us" in cpu["extra"]
    )
    assert "1 row dropped" in err and "mlp/gpu/fused" in err and "not exported" in err


def test_bencher_metric_format(run: Path) -> None:
    code, doc, _ = export("--format", "bencher", str(run))
    assert code == 0
    assert set(doc) == {CPU, GPU}
    assert doc[CPU] == {"latency": {"value": 3000.0, "lower_value": 1000.0, "upper_value": 5000.0}}
    assert doc[GPU]["latency"]["value"] == pytest.approx(9000.0)


def test_failed_and_skipped_rows_are_dropped(tmp_path: Path) -> None:
    skipped = gb_row("overhead/sync/device/manual_time", 0.0)
    skipped["iterations"] = 0  # a Google Benchmark 1.8 SkipWithMessage row
    rows = [
        gb_row(GPU, 0.0, error="no usable CUDA device"),  # real_time 0: "infinitely fast"
        skipped,
        gb_row(CPU, 2e-6, repetition_index=0, repetitions=2),
        gb_row(CPU, 0.0, repetition_index=1, repetitions=2, error="validation failed"),
    ]
    path = write_bench_json(tmp_path / "run.json", rows)
    for fmt in ("github-action-benchmark", "bencher"):
        code, doc, err = export("--format", fmt, str(path))
        assert code == 0
        names = [e["name"] for e in doc] if fmt != "bencher" else list(doc)
        assert names == [CPU]
        assert "no usable CUDA device" in err and "skipped" in err
    _, doc, _ = export("--format", "bencher", str(path))
    assert doc[CPU] == {"latency": {"value": 2000.0}}  # one good repetition: no range claimed


def test_nothing_measured_is_an_error(tmp_path: Path) -> None:
    path = write_bench_json(tmp_path / "run.json", [gb_row(GPU, 0.0, error="no device")])
    code, _, err = export("--format", "bencher", str(path))
    assert code == 2 and "no benchmark with a usable time" in err


def test_gpu_rows_use_the_event_time(tmp_path: Path) -> None:
    rows = [gb_row(GPU, 9e-6), gb_row(CPU, 2e-6, {"blas_threads": 1.0})]
    rows[0]["cpu_time"] = 40.0  # host time of the launching thread, in us
    rows[1]["real_time"] = 7.0  # wall time of a single-threaded CPU row on a busy machine
    path = write_bench_json(tmp_path / "run.json", rows)
    for clock, cpu_ns in (("auto", 2000.0), ("cpu", 2000.0), ("real", 7000.0)):
        _, doc, _ = export("--format", "bencher", "--time", clock, str(path))
        assert doc[GPU]["latency"]["value"] == pytest.approx(9000.0), clock
        assert doc[CPU]["latency"]["value"] == pytest.approx(cpu_ns), clock


def test_aggregates_are_used_only_when_nothing_else_is_there(tmp_path: Path) -> None:
    rows = [
        gb_row(CPU, 4e-6, aggregate_name="mean", run_type="aggregate"),
        gb_row(CPU, 3e-6, aggregate_name="median", run_type="aggregate"),
        gb_row(CPU, 0.5e-6, aggregate_name="stddev", run_type="aggregate"),
        gb_row(CPU, 0.2, aggregate_name="cv", run_type="aggregate"),
    ]
    path = write_bench_json(tmp_path / "agg.json", rows)
    _, doc, _ = export("--format", "bencher", str(path))
    assert doc == {CPU: {"latency": {"value": 3000.0}}}
    _, doc, _ = export("--format", "github-action-benchmark", str(path))
    (entry,) = doc
    assert "range" not in entry and "aggregate" in entry["extra"]


def test_real_bench_output_exports_finite_numbers(tmp_path: Path) -> None:
    """The H100 fixtures (with repetitions, aggregates and a failed GPU row) round-trip strictly."""
    out = tmp_path / "gab.json"
    for fixture in ("h100.json", "h100_reps.json"):
        code, _, _ = export(
            "--format", "github-action-benchmark", str(FIXTURES / fixture), "--out", str(out)
        )
        assert code == 0
        doc = strict_json(out.read_text())
        assert doc and all(math.isfinite(e["value"]) and e["value"] > 0 for e in doc)
        assert len({e["name"] for e in doc}) == len(doc)


def test_units_and_filter(run: Path) -> None:
    _, doc, _ = export("--format", "github-action-benchmark", "--unit", "us", str(run))
    cpu = by_name(doc)[CPU]
    assert (cpu["unit"], cpu["value"], cpu["range"]) == ("us", 3.0, "± 2.0")
    _, doc, _ = export("--format", "bencher", "--filter", "/gpu/", str(run))
    assert list(doc) == [GPU]
    assert export("--format", "bencher", "--unit", "us", str(run))[0] == 2


@pytest.mark.parametrize(
    "fixture, problem",
    [("malformed.json", "not valid JSON"), ("not_bench.json", "no 'benchmarks' list")],
)
def test_unusable_input_exits_2_naming_the_file(fixture: str, problem: str) -> None:
    path = COMPARE_FIXTURES / fixture
    code, _, err = export("--format", "bencher", str(path))
    assert code == 2 and str(path) in err and problem in err


def test_truncated_file_is_refused(tmp_path: Path, run: Path) -> None:
    cut = tmp_path / "cut.json"
    cut.write_text(run.read_text()[: len(run.read_text()) // 2])
    code, _, err = export("--format", "bencher", str(cut))
    assert code == 2 and "truncated" in err


def test_the_same_benchmark_in_two_files_is_ambiguous(run: Path) -> None:
    code, _, err = export("--format", "bencher", str(run), str(run))
    assert code == 2 and "also in" in err


@pytest.mark.parametrize("fmt", FORMATS)
def test_export_refuses_an_absurd_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    path = with_value(tmp_path, 2, "real_time", 1e308)
    code, out, err = call_tool(capsys, main, "--format", fmt, str(path))
    assert code == UNUSABLE and out == ""
    assert len(err.strip().splitlines()) == 1 and str(path) in err and "1 row invalid" in err


def test_export_groups_one_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = bf16_run(tmp_path)
    out_file = str(tmp_path / "o.json")
    code, _, err = call_tool(capsys, main, "--format", "bencher", str(path), "--out", out_file)
    # The file has no condition counters: besides the dropped rows, one line says so, once.
    lines = [line for line in err.strip().splitlines() if "conditions unknown" not in line]
    assert code == OK and len(lines) == 1 and "18 rows dropped" in err
    assert err.count("conditions unknown") == 1
    code, _, err = call_tool(
        capsys, main, "--format", "bencher", str(path), "--out", out_file, "--verbose"
    )
    lines = [line for line in err.strip().splitlines() if "conditions unknown" not in line]
    assert code == OK and len(lines) == 19
    code, out, err = call_tool(
        capsys, main, "--format", "bencher", str(path), "--out", out_file, "--quiet"
    )
    assert (code, out, err) == (OK, "", "")
    assert list(json.loads(Path(out_file).read_text())) == [
        "matmul/cpu/openblas/dtype:fp32/m:64/n:64/k:64/threads:1"
    ]


def test_the_records_export_words_from(tmp_path: Path) -> None:
    """The summary rows the `extra` of an entry words, and what is said of a file (FileNotes):
    each computed here, the templates only render them."""
    rows = reps(CPU, [3e-6, 1e-6, 2e-6]) + [gb_row(GPU, 9e-6)]
    rows += [gb_row(f"b/{i}", 0.0, error="no GPU") for i in range(3)]
    rows += [gb_row("c/x", 1e-3, repetition_index=0, repetitions=2)]
    rows += [gb_row("c/x", 0.0, error="no GPU", repetition_index=1, repetitions=2)]
    path = str(write_bench_json(tmp_path / "run.json", rows))
    _, table = read_rows(path, "export", ExportError, "not exported")
    found, dropped, silent = benchmark_values(table)
    assert list(found["spread"]) == [True, False, False]  # 3 repetitions, 1, 1
    assert list(found["repetitions"]) == [3, 1, 1] and silent == []
    notes = file_notes("run.json", found, dropped, silent)
    (reason,) = notes.dropped
    assert (reason.reason, reason.rows, reason.count, reason.gone) == ("error: no GPU", 4, 4, 3)
    assert not reason.one and not reason.all_gone  # c/x keeps its good repetition
    assert [d.name for d in reason.benchmarks] == ["b/0", "b/1", "b/2", "c/x"]
    assert (notes.disturbed, notes.first_disturbed, notes.left_out) == (0, None, 0)
    assert notes.unknown  # written without condition counters
