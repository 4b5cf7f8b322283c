"""The shared loader: units, counters, labels, repetitions, truncation and bad input."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, gb_row, write_bench_json

from gpubench_tools.benchjson import FAILED, SKIPPED, VALID, BenchJsonError, iteration_rows
from gpubench_tools.benchjson import ErrorCounts, error_counts, load_report, parse_label
from gpubench_tools.row_rules import SKIP_PREFIXES, skip_reason
from gpubench_tools.__main__ import main as errors_main
from gpubench_tools.wording import cut_off_lines, words
from gpubench_tools.table import load_table, summarize
from bad_inputs import CPU_ONLY, OK, UNUSABLE, call_tool, with_value

from gpubench_tools import benchjson


def test_real_cpu_file_loads_with_units_counters_and_labels() -> None:
    rep = load_report(str(FIXTURES / "cpu_only.json"))
    assert len(rep.rows) == 54
    assert not rep.recovered_from_truncation and cut_off_lines(rep) == []
    assert rep.truncated_after is None
    first = rep.rows[0]
    assert first.name == "matmul/cpu/openblas/dtype:fp32/m:16/n:16/k:16/threads:1"
    assert first.real_time_s == pytest.approx(0.2904122620267966e-6)  # written in us
    assert first.labels == {"dtype": "fp32", "shape": "square"}
    assert first.counters["flop"] == 8192.0
    assert "real_time" not in first.counters and "iterations" not in first.counters
    assert rep.context["cpu_model"] == "AMD EPYC"


def test_threads_user_counter_is_kept_apart_from_google_benchmark_threads() -> None:
    # The file holds "threads": 1 (Google Benchmark) and later "threads": 2.0 (the counter).
    rep = load_report(str(FIXTURES / "cpu_only.json"))
    two = [r for r in rep.rows if r.name.endswith("threads:2")]
    assert two and all(r.counters["threads"] == 2.0 for r in two)


def test_blas_threads_counter_is_read_as_threads(tmp_path: Path) -> None:
    # Files from this version on name the OpenBLAS thread count "blas_threads".
    row = gb_row("matmul/cpu/openblas/m:8/threads:2", 1e-5, {"blas_threads": 2.0})
    counters = load_report(str(write_bench_json(tmp_path / "b.json", [row]))).rows[0].counters
    assert counters["threads"] == 2.0 and counters["blas_threads"] == 2.0


def test_gpu_rows_without_threads_counter_have_none(tmp_path: Path) -> None:
    path = write_bench_json(tmp_path / "g.json", [gb_row("matmul/gpu/x", 1e-5, {"t_wall": 1e-5})])
    assert "threads" not in load_report(str(path)).rows[0].counters


@pytest.mark.parametrize("unit", ["ns", "us", "ms", "s"])
def test_time_units_convert_to_seconds(tmp_path: Path, unit: str) -> None:
    path = write_bench_json(tmp_path / "u.json", [gb_row("a", 2.5e-3, unit=unit)])
    row = load_report(str(path)).rows[0]
    assert row.real_time_s == pytest.approx(2.5e-3)
    assert row.cpu_time_s == pytest.approx(2.5e-3)


def test_cv_aggregate_is_a_ratio_not_a_time(tmp_path: Path) -> None:
    rows = [
        gb_row("a", 1e-6),
        gb_row("a", 0.05, run_type="aggregate", aggregate_name="cv", unit="s"),
    ]
    rows[1]["real_time"] = 0.05
    rows[1]["time_unit"] = "us"
    rep = load_report(str(write_bench_json(tmp_path / "cv.json", rows)))
    assert rep.rows[1].real_time_s == pytest.approx(0.05)


def test_iteration_rows_skip_aggregates_and_the_table_gives_median_min_max() -> None:
    rep = load_report(str(FIXTURES / "h100_reps.json"))
    iters = iteration_rows(rep)
    assert all(r.run_type == "iteration" for r in iters)
    assert len(rep.rows) > len(iters)  # the mean/median/stddev/cv rows are there but skipped
    name = "matmul/cpu/openblas/dtype:fp32/m:256/n:256/k:256/threads:16"
    times = sorted(r.real_time_s for r in iters if r.run_name == name)
    assert len(times) == 3
    summary = summarize(load_table([str(FIXTURES / "h100_reps.json")]).rows)
    (row,) = summary[summary["name"] == name].to_dict("records")
    assert (row["time_s"], row["time_min_s"], row["time_max_s"]) == pytest.approx(
        (times[1], times[0], times[2])
    )
    assert row["repetitions"] == 3


ON_CHIP = (
    "does not fit on chip: needs 377300 bytes of shared memory, 232448 available "
    "(network 64-64-64-10, batch 256)"
)
IN_MEMORY = "does not fit in device memory: needs 103079215104 bytes, 8 of 85045231616 bytes free"


def test_rows_that_do_not_fit_are_skipped_not_failed(tmp_path: Path) -> None:
    assert SKIP_PREFIXES == (
        "does not fit on chip",
        "does not fit in device memory",
        "not supported on this machine",
    )
    assert skip_reason(ON_CHIP) == "does not fit on chip"
    assert skip_reason(IN_MEMORY) == "does not fit in device memory"
    unsupported = "not supported on this machine: no native bf16 products: no cblas_sbgemm"
    assert skip_reason(unsupported) == "not supported on this machine"
    # Only at the start: anything else is a failure, even when it mentions fitting.
    assert skip_reason("CUDA error: out of memory (does not fit in device memory)") is None
    assert skip_reason("result differs from the reference beyond tolerance") is None
    assert skip_reason(None) is None
    rows = [
        gb_row("ok", 1e-6),
        gb_row("chip", 0.0, error=ON_CHIP),
        gb_row("memory", 0.0, error=IN_MEMORY),
        gb_row("wrong", 0.0, error="result differs from the reference beyond tolerance"),
        gb_row("agg", 0.0, run_type="aggregate", aggregate_name="mean", error=ON_CHIP),
    ]
    rep = load_report(str(write_bench_json(tmp_path / "s.json", rows)))
    by_name = {r.run_name: r for r in rep.rows if r.run_type == "iteration"}
    assert [n for n, r in by_name.items() if r.status == SKIPPED] == ["chip", "memory"]
    assert [n for n, r in by_name.items() if r.status == FAILED] == ["wrong"]
    assert by_name["ok"].status == VALID
    # Counted over the measured rows only (no aggregates), each skip with its reason.
    assert words("errors", counts=error_counts(rep)) == (
        "1 row failed, 2 skipped (does not fit on chip: 1, does not fit in device memory: 1)"
    )
    clean = load_report(str(write_bench_json(tmp_path / "c.json", [gb_row("ok", 1e-6)])))
    assert words("errors", counts=error_counts(clean)) == "0 rows failed, 0 skipped"
    # The record the line renders: the template only words it.
    assert error_counts(rep) == ErrorCounts(
        failed=1,
        skipped={"does not fit on chip": 1, "does not fit in device memory": 1},
        skipped_total=2,
        invalid=0,
        interrupted=None,
    )


def test_error_rows_are_loaded_but_not_measured(tmp_path: Path) -> None:
    rows = [gb_row("ok", 1e-6), gb_row("bad", 0.0, error="does not fit in device memory")]
    del rows[1]["real_time"]  # some error rows carry no times at all
    rep = load_report(str(write_bench_json(tmp_path / "e.json", rows)))
    assert rep.rows[1].error == "does not fit in device memory"
    assert math.isnan(rep.rows[1].real_time_s)
    assert [r.name for r in iteration_rows(rep)] == ["ok"]


@pytest.mark.parametrize(
    "label, expected",
    [
        (
            "dtype=bf16 shape=square host=pinned",
            {"dtype": "bf16", "shape": "square", "host": "pinned"},
        ),
        ("", {}),
        ("  probe=h2d   host=pinned ", {"probe": "h2d", "host": "pinned"}),
        ("flag a=b=c", {"flag": "", "a": "b=c"}),
    ],
)
def test_parse_label(label: str, expected: dict[str, str]) -> None:
    assert parse_label(label) == expected


def _complete_rows_before(text: str, cut: int) -> int:
    """How many row objects are complete in text[:cut] (rows are the only '{' at depth 2)."""
    doc = json.loads(text)
    count = 0
    start = text.index('"benchmarks"')
    pos = start
    for _ in doc["benchmarks"]:
        open_at = text.index("{", pos)
        depth, i = 0, open_at
        while True:
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        if i < cut:
            count += 1
        pos = i + 1
    return count


@pytest.mark.parametrize("fraction", [0.3, 0.5, 0.77, 0.999])
def test_truncated_file_recovers_complete_rows(tmp_path: Path, fraction: float) -> None:
    text = (FIXTURES / "cpu_only.json").read_text()
    cut = int(len(text) * fraction)
    path = tmp_path / "cut.json"
    path.write_text(text[:cut])
    rep = load_report(str(path))
    expected = _complete_rows_before(text, cut)
    assert expected > 0
    assert rep.recovered_from_truncation
    assert len(rep.rows) == expected == rep.truncated_after
    assert cut_off_lines(rep) == [
        f"recovered {expected} complete benchmark rows from truncated file {path}"
    ]
    assert rep.context["cpu_model"] == "AMD EPYC"
    assert rep.rows[-1].real_time_s > 0


def test_truncated_before_any_row_is_an_error(tmp_path: Path) -> None:
    text = (FIXTURES / "cpu_only.json").read_text()
    path = tmp_path / "early.json"
    path.write_text(text[: text.index('"benchmarks"') + 20])
    with pytest.raises(BenchJsonError, match="truncated and holds no complete benchmark row"):
        load_report(str(path))


MALFORMED = {
    "empty": ("", "file is empty"),
    "blank": ("  \n\n", "file is empty"),
    "not_json": ("hello world\n", "not valid JSON"),
    "top_level_list": ("[1, 2, 3]", "top level is a list"),
    "top_level_number": ("42", "top level is int"),
    "foreign_object": ('{"name": "package.json", "version": "1.0"}', "no 'benchmarks' list"),
    "benchmarks_not_list": ('{"context": {}, "benchmarks": {"a": 1}}', "no 'benchmarks' list"),
    "corrupt_middle": (
        '{"context": {}, "benchmarks": [{"name": "a", "real_time": 1}, {"name": "b", "real_time": x}]\n}',
        "not valid JSON",
    ),
}


# A row that breaks the schema is an invalid row of its file, named with the field and the value
# as read (a row that breaks the schema does not make the whole file unreadable).
ROW_FIELD = {
    "row_not_object": (
        '{"context": {}, "benchmarks": [1]}',
        "row 0",
        "row 0 is 1, expected an object",
    ),
    "row_without_name": ('{"benchmarks": [{"real_time": 1.0}]}', "row 0", "name is missing"),
    "row_without_time": (
        '{"benchmarks": [{"name": "b", "run_name": "b", "run_type": "iteration", "iterations": 1,'
        ' "cpu_time": 1, "time_unit": "us"}]}',
        "b",
        "real_time is missing",
    ),
    "bad_time_unit": (
        '{"benchmarks": [{"name": "a", "run_name": "a", "run_type": "iteration", "iterations": 1,'
        ' "real_time": 1, "cpu_time": 1, "time_unit": "h"}]}',
        "a",
        'time_unit is "h" (expected one of ns, us, ms, s)',
    ),
    "no_time_unit": (
        '{"benchmarks": [{"name": "a", "run_name": "a", "run_type": "iteration", "iterations": 1,'
        ' "real_time": 1, "cpu_time": 1}]}',
        "a",
        "time_unit is missing",
    ),
    "exact_counter_as_string": (
        '{"benchmarks": [{"name": "a", "run_name": "a", "run_type": "iteration", "iterations": 1,'
        ' "real_time": 1, "cpu_time": 1, "time_unit": "us", "flop": "12"}]}',
        "a",
        'flop is "12" (expected a number)',
    ),
    "nan_as_read": (
        '{"benchmarks": [{"name": "a", "run_name": "a", "run_type": "iteration", "iterations": 1e30,'
        ' "real_time": NaN, "cpu_time": 1, "time_unit": "us"}]}',
        "a",
        "iterations is 1e30 (above 1e+15)",
    ),
}


@pytest.mark.parametrize("case", sorted(ROW_FIELD))
def test_a_row_that_breaks_the_schema_is_invalid_naming_the_field(
    tmp_path: Path, case: str
) -> None:
    content, name, reason = ROW_FIELD[case]
    path = tmp_path / f"{case}.json"
    path.write_text(content)
    (row,) = load_report(str(path)).rows
    assert (row.name, row.status, row.invalid) == (name, "invalid", reason)
    assert math.isnan(row.real_time_s) and not row.usable


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_input_raises_one_line_error_naming_file(tmp_path: Path, case: str) -> None:
    content, message = MALFORMED[case]
    path = tmp_path / f"{case}.json"
    path.write_text(content)
    with pytest.raises(BenchJsonError) as info:
        load_report(str(path))
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith(str(path) + ": ")
    assert message in text


def test_binary_and_missing_files(tmp_path: Path) -> None:
    binary = tmp_path / "image.png"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe\x00")
    with pytest.raises(BenchJsonError, match="not valid UTF-8"):
        load_report(str(binary))
    with pytest.raises(BenchJsonError, match="cannot read file"):
        load_report(str(tmp_path / "missing.json"))
    with pytest.raises(BenchJsonError, match="cannot read file"):
        load_report(str(tmp_path))


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


def test_errors_names_a_truncated_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = CPU_ONLY.read_text()
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) // 2])
    code, out, err = call_tool(capsys, errors_main, "--errors", str(cut))
    assert code == UNUSABLE and out == ""
    assert len(err.strip().splitlines()) == 1 and str(cut) in err and "truncated" in err


def test_errors_counts_invalid_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = with_value(tmp_path, 0, "real_time", math.nan)
    code, out, _ = call_tool(capsys, errors_main, "--errors", str(path))
    assert code == OK and out.strip().endswith(", 1 invalid")


def test_errors_is_the_package_command_gpu_check_runs(tmp_path: Path) -> None:
    """`python -m gpubench_tools --errors FILE`, as tools/gpu-check and check-examples.sh run it:
    the count on stdout (exit 0), or one line naming the program and the file (exit 2)."""
    env = dict(os.environ, PYTHONPATH=str(FIXTURES.parents[2] / "tools"))
    command = [sys.executable, "-m", "gpubench_tools", "--errors"]
    run = subprocess.run([*command, str(CPU_ONLY)], env=env, capture_output=True, text=True)
    assert (run.returncode, run.stdout, run.stderr) == (OK, "0 rows failed, 0 skipped\n", "")
    empty = tmp_path / "empty.json"
    empty.write_text("")
    run = subprocess.run([*command, str(empty)], env=env, capture_output=True, text=True)
    assert run.returncode == UNUSABLE and run.stdout == ""
    assert (
        run.stderr
        == f"python -m gpubench_tools: error: {empty}: file is empty, expected bench JSON\n"
    )
