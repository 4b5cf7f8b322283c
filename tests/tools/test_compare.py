"""Tests of the regression compare tool on synthetic bench JSON pairs."""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import gb_row

from gpubench_tools import compare
from gpubench_tools.benchjson import load_report
from gpubench_tools.compare.config import ConfigError, parse_config
from gpubench_tools.compare.stats import Thresholds, compare_metric

FIXTURES = Path(__file__).parent / "compare_fixtures"

CPU_CONTEXT: dict[str, Any] = {
    "date": "2026-11-22T10:00:00+00:00",
    "host_name": "ci",
    "num_cpus": 2,
    "library_build_type": "release",
    "cpu_model": "AMD EPYC",
    "cpu_logical_cpus": "2",
    "gpu": "none",
    "gpubench_git_commit": "abc1234",
}

GEMM = "matmul/cpu/openblas/dtype:fp32/m:{m}/n:{m}/k:{m}/threads:1"
# The global thresholds of the packaged defaults, spelled out (Thresholds has no defaults).
STRICT = Thresholds(1.05, 0.05, 0.10, False)


def samples(center_us: float, n: int = 7, cv: float = 0.01, seed: int = 0) -> list[float]:
    """Repetition times in microseconds around center_us with the given relative spread."""
    rng = random.Random(seed)
    return [center_us * (1.0 + rng.gauss(0.0, cv)) for _ in range(n)]


def bench(
    name: str,
    times_us: list[float],
    counters: dict[str, list[float]] | None = None,
    label: str = "dtype=fp32 shape=square",
    unit: str = "us",
    with_aggregates: bool = True,
) -> list[dict[str, Any]]:
    """Rows Google Benchmark writes for one benchmark run with --benchmark_repetitions."""
    scale = {"ns": 1e3, "us": 1.0, "ms": 1e-3, "s": 1e-6}[unit]
    rows = []
    for i, t in enumerate(times_us):
        row: dict[str, Any] = {
            "name": name,
            "run_name": name,
            "run_type": "iteration",
            "repetitions": len(times_us),
            "repetition_index": i,
            "threads": 1,
            "iterations": 100,
            "real_time": t * scale,
            "cpu_time": t * scale,
            "time_unit": unit,
            "label": label,
        }
        for counter, values in (counters or {}).items():
            row[counter] = values[i]
        rows.append(row)
    if with_aggregates:
        # Deliberately absurd aggregates: the tool must recompute from the repetitions.
        for agg in ("mean", "median", "stddev", "cv"):
            rows.append(
                {
                    "name": f"{name}_{agg}",
                    "run_name": name,
                    "run_type": "aggregate",
                    "repetitions": len(times_us),
                    "threads": 1,
                    "aggregate_name": agg,
                    "aggregate_unit": "percentage" if agg == "cv" else "time",
                    "iterations": len(times_us),
                    "real_time": 1e9,
                    "cpu_time": 1e9,
                    "time_unit": unit,
                    "label": label,
                }
            )
    return rows


def gemm_rows(m: int, times_us: list[float], **kw: Any) -> list[dict[str, Any]]:
    flop = 2.0 * m * m * m
    counters = {
        "flop": [flop] * len(times_us),
        "FLOP/s": [flop / (t * 1e-6) for t in times_us],
        "pct_peak": [flop / (t * 1e-6) / 3.3e11 * 100 for t in times_us],
        "m": [float(m)] * len(times_us),
    }
    counters.update(kw.pop("counters", {}))
    return bench(GEMM.format(m=m), times_us, counters, **kw)


def write(path: Path, rows: list[dict[str, Any]], context: dict[str, Any] | None = None) -> str:
    path.write_text(json.dumps({"context": context or CPU_CONTEXT, "benchmarks": rows}))
    return str(path)


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = compare.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def sweep(factor: float = 1.0, seed: int = 0, cv: float = 0.01) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for i, (m, t) in enumerate(((64, 6.0), (256, 330.0), (512, 2700.0))):
        rows += gemm_rows(m, [x * factor for x in samples(t, cv=cv, seed=seed * 10 + i)])
    return rows


@pytest.fixture
def pair(tmp_path: Path):
    """Write a baseline/contender pair and return their paths."""

    def make(base_rows, cont_rows, base_ctx=None, cont_ctx=None) -> tuple[str, str]:
        return (
            write(tmp_path / "base.json", base_rows, base_ctx),
            write(tmp_path / "cont.json", cont_rows, cont_ctx),
        )

    return make


@pytest.fixture
def no_default_config(tmp_path: Path) -> str:
    """An empty config: the packaged global thresholds without their per-name overrides."""
    path = tmp_path / "empty-config.json"
    path.write_text("{}")
    return str(path)


# --- the verdicts -------------------------------------------------------------------------------


def test_known_regression_is_flagged_and_exits_1(pair, capsys, no_default_config) -> None:
    unchanged = [r for r in sweep(seed=2) if "/m:512/" not in r["run_name"]]
    slow = gemm_rows(512, [x * 1.3 for x in samples(2700.0, seed=99)])
    base, cont = pair(sweep(seed=1), unchanged + slow)
    code, out, _ = run_cli(capsys, base, cont, "--config", no_default_config)
    assert code == 1
    assert "SLOWER" in out and "REGRESSION matmul/cpu/openblas/dtype:fp32/m:512" in out
    result = compare.compare_reports(load_report(base), load_report(cont), parse_config({}))
    verdicts = {b.name: b.verdict for b in result.benchmarks}
    assert verdicts[GEMM.format(m=512)] == "slower"
    assert verdicts[GEMM.format(m=64)] == "same"
    time = result.benchmarks[-1].metric("time")
    assert time is not None and time.ratio == pytest.approx(1.3, rel=0.03)
    assert time.p_value is not None and time.p_value < 0.01


def test_known_speedup_is_reported_and_passes(pair, capsys, no_default_config) -> None:
    base, cont = pair(sweep(seed=1), sweep(factor=0.7, seed=2))
    code, out, _ = run_cli(capsys, base, cont, "--config", no_default_config)
    assert code == 0
    assert "3 faster" in out
    assert "PASS" in out


def test_noise_is_not_flagged(pair, capsys, no_default_config) -> None:
    # Same distribution, different draws: 3 % spread, no real change.
    base, cont = pair(sweep(seed=1, cv=0.03), sweep(seed=2, cv=0.03))
    code, out, _ = run_cli(capsys, base, cont, "--config", no_default_config)
    assert code == 0, out
    assert "SLOWER" not in out


def test_high_spread_is_too_noisy_to_judge_not_a_failure() -> None:
    # 20 % spread and a 12 % shift: the samples overlap, so noise could explain it.
    base = samples(100.0, n=7, cv=0.2, seed=3)
    cont = [x * 1.12 for x in samples(100.0, n=7, cv=0.2, seed=4)]
    result = compare_metric("time", "lower", base, cont, Thresholds(1.05, 0.05, 0.10, False))
    assert result.verdict == "noisy"
    assert not result.fails


def test_noisy_but_non_overlapping_is_still_slower() -> None:
    # A spread above max_cv cannot hide a shift so large that the samples do not overlap.
    base = [100.0, 130.0, 90.0, 100.0, 125.0, 95.0, 105.0]
    cont = [x * 2 for x in base]
    result = compare_metric("time", "lower", base, cont, Thresholds(1.05, 0.05, 0.10, False))
    assert result.base.cv > 0.10
    assert result.verdict == "slower"


def test_beyond_ratio_but_not_significant_is_same() -> None:
    # Median 6 % slower but the samples interleave: the U test does not support a change.
    base = [100.0, 108.0, 92.0, 104.0, 96.0, 102.0, 98.0]
    cont = [106.0, 99.0, 112.0, 94.0, 110.0, 101.0, 108.0]
    result = compare_metric("time", "lower", base, cont, Thresholds(1.05, 0.05, 0.10, False))
    assert result.slowdown > 1.05 and result.p_value is not None and result.p_value > 0.05
    assert result.verdict == "same"
    assert any("not significant" in n for n in result.notes)


def test_burst_on_part_of_a_run_is_not_slower_with_check_fastest() -> None:
    # Two thirds of the contender's repetitions hit by load, a third untouched: the median
    # moves 1.7x, the best repetition does not, so it is not a regression of the code.
    base = [132.6, 132.5, 131.4, 132.1, 131.8, 138.9, 138.5, 140.6, 139.8]
    cont = [234.3, 223.7, 235.5, 231.0, 247.9, 231.6, 137.0, 132.2, 142.9]
    plain = compare_metric("time", "lower", base, cont, Thresholds(1.5, 0.01, 0.25, False))
    assert plain.verdict == "slower"
    guarded = compare_metric("time", "lower", base, cont, Thresholds(1.5, 0.01, 0.25, True))
    assert guarded.verdict == "same" and guarded.best_slowdown < 1.1
    # A real 2x slowdown moves the best repetition too.
    real = compare_metric(
        "time", "lower", base, [2 * x for x in base], Thresholds(1.5, 0.01, 0.25, True)
    )
    assert real.verdict == "slower"


def test_aggregate_rows_are_ignored(pair, no_default_config) -> None:
    # bench() writes mean/median aggregates of 1e9 us; including them would change everything.
    base, cont = pair(sweep(seed=1), sweep(seed=1))
    result = compare.compare_reports(load_report(base), load_report(cont), parse_config({}))
    assert all(b.verdict == "same" for b in result.benchmarks)
    time = result.benchmarks[0].metric("time")
    assert time is not None and time.base.n == 7 and time.base.median < 1e-4


def test_identical_files_pass(pair, capsys, no_default_config) -> None:
    rows = sweep(seed=5)
    base, cont = pair(rows, rows)
    code, out, _ = run_cli(capsys, base, cont, "--config", no_default_config)
    assert code == 0
    assert "3 same" in out


def test_time_units_are_converted(pair, no_default_config) -> None:
    times = samples(2700.0, seed=1)
    base, cont = pair(
        bench(GEMM.format(m=512), times, unit="us"),
        bench(GEMM.format(m=512), [t for t in times], unit="ms"),
    )
    result = compare.compare_reports(load_report(base), load_report(cont), parse_config({}))
    time = result.benchmarks[0].metric("time")
    assert time is not None and time.ratio == pytest.approx(1.0)


# --- listing, hardware, errors -----------------------------------------------------------------


def test_missing_benchmarks_fail_unless_allowed(pair, capsys, no_default_config) -> None:
    rows = sweep(seed=1)
    missing = "matmul/cpu/openblas/dtype:fp64/m:64/n:64/k:64/threads:1"
    new = "matmul/cpu/openblas/dtype:fp32/m:1024/n:1024/k:1024/threads:1"
    base, cont = pair(rows + bench(missing, samples(9.0)), rows + bench(new, [1.0] * 7))
    js = str(Path(base).with_name("out.json"))
    code, out, _ = run_cli(capsys, base, cont, "--config", no_default_config, "--json", js)
    assert code == 1
    assert len([line for line in out.splitlines() if line.startswith("REGRESSION")]) == 1
    assert f"  {missing}" in out.splitlines()  # a failure is always named
    doc = json.loads(Path(js).read_text())
    assert doc["only_in_baseline"] == [missing] and doc["only_in_contender"] == [new]
    assert doc["allow_missing"] is False and doc["exit_code"] == 1

    # The old flag is accepted and changes nothing.
    code, _, _ = run_cli(capsys, base, cont, "--config", no_default_config, "--fail-on-missing")
    assert code == 1

    # A run filtered on purpose: listed, not failed.
    code, out, _ = run_cli(
        capsys, base, cont, "--config", no_default_config, "--allow-missing", "--json", js
    )
    assert code == 0
    assert not [line for line in out.splitlines() if line.startswith("REGRESSION")]
    doc = json.loads(Path(js).read_text())
    assert doc["allow_missing"] is True and doc["summary"]["only_in_baseline"] == 1


def test_new_benchmarks_do_not_fail(pair, capsys, no_default_config) -> None:
    rows = sweep(seed=1)
    extra = bench("matmul/cpu/openblas/dtype:fp32/m:1024/n:1024/k:1024/threads:1", [1.0] * 7)
    base, cont = pair(rows, rows + extra)
    code, _, _ = run_cli(capsys, base, cont, "--config", no_default_config)
    assert code == 0


def test_different_hardware_is_warned_loudly(pair, capsys, no_default_config, tmp_path) -> None:
    gpu_ctx = dict(CPU_CONTEXT, cpu_model="Intel Xeon Platinum 8480", gpu="NVIDIA H100 80GB HBM3")
    base, cont = pair(sweep(seed=1), sweep(seed=2), CPU_CONTEXT, gpu_ctx)
    md, js = str(tmp_path / "o.md"), str(tmp_path / "o.json")
    code, out, _ = run_cli(
        capsys, base, cont, "--config", no_default_config, "--markdown", md, "--json", js
    )
    assert code == 0
    first_lines = out.splitlines()[:4]
    assert any("DIFFERENT HARDWARE" in line for line in first_lines)
    assert "cpu_model: AMD EPYC  ->  Intel Xeon Platinum 8480" in out
    assert "gpu: none  ->  NVIDIA H100 80GB HBM3" in out
    text = Path(md).read_text()
    assert text.index("DIFFERENT HARDWARE") < text.index("| benchmark")
    doc = json.loads(Path(js).read_text())
    assert doc["hardware_differs"] is True
    assert {d["key"] for d in doc["hardware_differences"]} == {"cpu_model", "gpu"}


def test_same_hardware_has_no_warning(pair, capsys, no_default_config) -> None:
    other_host = dict(CPU_CONTEXT, host_name="another-runner", date="2026-12-01T00:00:00+00:00")
    base, cont = pair(sweep(seed=1), sweep(seed=2), CPU_CONTEXT, other_host)
    _, out, _ = run_cli(capsys, base, cont, "--config", no_default_config)
    assert "DIFFERENT HARDWARE" not in out


def test_other_openblas_kernels_are_warned(pair, capsys, no_default_config) -> None:
    config = "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY {0} MAX_THREADS=64 core={0}"
    haswell = dict(CPU_CONTEXT, openblas_config=config.format("Haswell"))
    cooperlake = dict(CPU_CONTEXT, openblas_config=config.format("Cooperlake"))
    base, cont = pair(sweep(seed=1), sweep(seed=2), haswell, cooperlake)
    _, out, _ = run_cli(capsys, base, cont, "--config", no_default_config)
    assert "warning: OpenBLAS ran different kernels: core=Haswell in the baseline, " in out
    assert "set OPENBLAS_CORETYPE=Haswell" in out
    same_base, same_cont = pair(sweep(seed=1), sweep(seed=2), haswell, dict(haswell))
    _, same_out, _ = run_cli(capsys, same_base, same_cont, "--config", no_default_config)
    assert "OpenBLAS ran different kernels" not in same_out
    assert compare.openblas_core({"openblas_config": "OpenBLAS 0.3.26 core=SkylakeX"}) == "SkylakeX"
    assert compare.openblas_core({}) is None


@pytest.mark.parametrize(
    "fixture", ["malformed.json", "not_bench.json", "empty.json", "does-not-exist.json"]
)
def test_unusable_input_exits_2_with_one_line(fixture, pair, capsys, no_default_config) -> None:
    base, _ = pair(sweep(seed=1), sweep(seed=1))
    bad = str(FIXTURES / fixture)
    for args in ((base, bad), (bad, base)):
        code, out, err = run_cli(capsys, *args, "--config", no_default_config)
        assert code == 2
        assert out == ""
        assert len(err.strip().splitlines()) == 1
        assert fixture in err


def test_no_common_benchmarks_exits_2(pair, capsys, no_default_config, tmp_path) -> None:
    base, cont = pair(
        bench("mlp/cpu/openblas/data:iris/batch:120/hidden:10/readback:1", samples(5e5)),
        sweep(seed=1),
    )
    md = str(tmp_path / "o.md")
    code, out, err = run_cli(capsys, base, cont, "--config", no_default_config, "--markdown", md)
    assert code == 2
    assert "no common benchmarks" in err
    assert len(err.strip().splitlines()) == 1
    assert "could not compare" in Path(md).read_text()


def test_contender_sharing_no_benchmark_exits_2(pair, capsys, no_default_config) -> None:
    failed = [gb_row(GEMM.format(m=64), 0.0, error="no usable CUDA device")]
    base, cont = pair(
        bench("mlp/cpu/openblas/data:iris/batch:120/hidden:10/readback:1", samples(5e5)), failed
    )
    code, _, err = run_cli(capsys, base, cont, "--config", no_default_config)
    assert code == 2
    assert "cont.json" in err


def test_benchmark_that_now_fails_is_a_regression(pair, capsys, no_default_config) -> None:
    rows = sweep(seed=1)
    name = GEMM.format(m=64)
    broken = [r for r in sweep(seed=1) if r["run_name"] != name] + [
        gb_row(name, 0.0, error="result differs from the reference beyond tolerance")
    ]
    base, cont = pair(rows, broken)
    js = str(Path(base).with_name("out.json"))
    code, out, _ = run_cli(capsys, base, cont, "--config", no_default_config, "--json", js)
    assert code == 1
    (line,) = [ln for ln in out.splitlines() if ln.startswith("REGRESSION")]
    assert "beyond tolerance" in line and f"  {name}" in out.splitlines()
    doc = json.loads(Path(js).read_text())
    (entry,) = [b for b in doc["benchmarks"] if b["name"] == name]
    assert entry["verdict"] == "failed" and entry["fails"]
    assert doc["summary"]["failed"] == 1 and doc["summary"]["failing"] == 1


NO_ROOM = "does not fit in device memory: needs 103079215104 bytes, 8 of 85045231616 bytes free"


def test_benchmark_that_no_longer_fits_is_skipped_not_failed(
    pair, capsys, no_default_config, tmp_path
) -> None:
    rows = sweep(seed=1)
    name = GEMM.format(m=64)
    skipped = [r for r in sweep(seed=1) if r["run_name"] != name] + [
        gb_row(name, 0.0, error=NO_ROOM)
    ]
    base, cont = pair(rows, skipped)
    md, js = str(tmp_path / "o.md"), str(tmp_path / "o.json")
    code, out, _ = run_cli(
        capsys, base, cont, "--config", no_default_config, "--markdown", md, "--json", js
    )
    assert code == 0
    assert "REGRESSION" not in out
    # One line for the reason; the name only with --verbose.
    assert sum(NO_ROOM in line for line in out.splitlines()) == 1
    assert name not in out
    assert "1 skipped" in out.splitlines()[-2]
    text = Path(md).read_text()
    assert text.count(NO_ROOM) == 1 and text.count(name) == 1
    code, verbose, _ = run_cli(capsys, base, cont, "--config", no_default_config, "--verbose")
    assert code == 0 and f"  {name}" in verbose.splitlines()
    doc = json.loads(Path(js).read_text())
    assert doc["summary"]["skipped"] == 1 and doc["summary"]["failed"] == 0
    assert doc["summary"]["compared"] == len(doc["benchmarks"]) - 1
    (entry,) = [b for b in doc["benchmarks"] if b["name"] == name]
    assert entry["verdict"] == "skipped" and not entry["fails"] and entry["error"] == NO_ROOM


def test_skipped_in_the_baseline_is_listed_not_compared(pair, capsys, no_default_config) -> None:
    name = GEMM.format(m=64)
    base_rows = [r for r in sweep(seed=1) if r["run_name"] != name] + [
        gb_row(name, 0.0, error="does not fit on chip: needs 9 bytes of shared memory, 8 available")
    ]
    base, cont = pair(base_rows, sweep(seed=2))
    js = str(Path(base).with_name("out.json"))
    code, out, _ = run_cli(capsys, base, cont, "--config", no_default_config, "--json", js)
    assert code == 0
    assert sum("does not fit on chip: needs 9 bytes" in line for line in out.splitlines()) == 1
    doc = json.loads(Path(js).read_text())
    assert [g["names"] for g in doc["not_compared"]] == [[name]]
    assert doc["not_compared"][0]["kind"] == "skipped_in_baseline"
    assert name not in [b["name"] for b in doc["benchmarks"]]


def test_the_summary_says_why_the_baseline_has_no_time(pair, capsys, no_default_config) -> None:
    """A row skipped on both sides (bf16 GEMM where OpenBLAS has no sbgemm) is "skipped in the
    baseline" in the summary line, in the words of its line below the table, never "not
    measured"; a row that failed in the baseline is counted apart."""
    skipped, failed = GEMM.format(m=64), GEMM.format(m=128)
    skip = gb_row(skipped, 0.0, error="not supported on this machine: no cblas_sbgemm")
    rows = [r for r in sweep(seed=1) if r["run_name"] not in (skipped, failed)]
    base_rows = rows + [skip, gb_row(failed, 0.0, error="cuBLAS error 13")]
    cont_rows = [r for r in sweep(seed=2) if r["run_name"] != skipped] + [skip]
    base, cont = pair(base_rows, cont_rows)
    code, out, _ = run_cli(capsys, base, cont, "--config", no_default_config)
    assert code == 0, out
    (summary,) = [line for line in out.splitlines() if line.startswith("summary: ")]
    assert summary.endswith("1 failed in the baseline, 1 skipped in the baseline"), summary
    assert "not measured" not in out
    assert "1 benchmark skipped in the baseline, not compared: not supported" in out


def test_bad_config_exits_2(pair, capsys, tmp_path) -> None:
    base, cont = pair(sweep(seed=1), sweep(seed=1))
    cfg = tmp_path / "bad.json"
    cfg.write_text(json.dumps({"overrides": [{"pattern": "matmul/(cpu", "max_ratio": 1.2}]}))
    code, _, err = run_cli(capsys, base, cont, "--config", str(cfg))
    assert code == 2
    assert "bad.json" in err and "regular expression" in err


@pytest.mark.parametrize(
    "doc, message",
    [
        ({"thresholds": {"max_ratio": 0.9}}, "max_ratio: 0.9 is not a number from 1 to 1000"),
        ({"thresholds": {"alpha": 2}}, "alpha: 2 is not a number from 1e-06, below 1"),
        ({"thresholds": {"max_rato": 1.1}}, 'unknown key "max_rato"'),
        ({"counter_direction": {"FLOP/s": "up"}}, "expected one of"),
        ({"time": "wall"}, "'time' must be one of"),
        ({"normalize": {"max_ratio": 1.2}}, "normalize.reference"),
    ],
)
def test_config_is_validated(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(doc, "cfg.json")


# --- thresholds and counters -------------------------------------------------------------------


def test_per_pattern_override_changes_the_threshold(pair, tmp_path) -> None:
    # Both sizes 8 % slower: beyond the global 5 %, within the 10 % allowed for m:512.
    base_rows = gemm_rows(64, samples(6.0, seed=1)) + gemm_rows(512, samples(2700.0, seed=2))
    cont_rows = gemm_rows(64, [x * 1.08 for x in samples(6.0, seed=3)]) + gemm_rows(
        512, [x * 1.08 for x in samples(2700.0, seed=4)]
    )
    base, cont = pair(base_rows, cont_rows)
    config = parse_config(
        {
            "thresholds": {"max_ratio": 1.05},
            "counters": [],
            "overrides": [
                {"pattern": "^matmul/cpu/", "max_ratio": 1.5, "why": "broad"},
                {"pattern": "/m:512/", "max_ratio": 1.10, "why": "later and narrower wins"},
            ],
        }
    )
    result = compare.compare_reports(load_report(base), load_report(cont), config)
    by_name = {b.name: b for b in result.benchmarks}
    small, large = by_name[GEMM.format(m=64)], by_name[GEMM.format(m=512)]
    assert large.verdict == "same"
    assert large.overrides == ["^matmul/cpu/", "/m:512/"]
    assert large.metrics[0].thresholds.max_ratio == 1.10
    assert small.verdict == "same"  # 1.5 from the broad override
    config.overrides.pop(0)
    result = compare.compare_reports(load_report(base), load_report(cont), config)
    by_name = {b.name: b.verdict for b in result.benchmarks}
    assert by_name == {GEMM.format(m=64): "slower", GEMM.format(m=512): "same"}
    assert result.exit_code == 1


def test_rate_counters_higher_is_better(pair) -> None:
    # Time unchanged, but FLOP/s halves (e.g. the flop count stayed, the counter fell): a loss.
    times = samples(330.0, seed=1)
    rates = [1e11 * (1 + 0.01 * i) for i in range(7)]
    base, cont = pair(
        bench(GEMM.format(m=256), times, {"FLOP/s": rates}),
        bench(GEMM.format(m=256), times, {"FLOP/s": [r / 2 for r in rates]}),
    )
    config = parse_config({"counters": ["FLOP/s"]})
    result = compare.compare_reports(load_report(base), load_report(cont), config)
    flops = result.benchmarks[0].metric("FLOP/s")
    assert flops is not None
    assert flops.better == "higher" and flops.ratio == pytest.approx(0.5)
    assert flops.slowdown == pytest.approx(2.0)
    assert flops.verdict == "slower" and result.exit_code == 1

    # The other way round: twice the FLOP/s is an improvement, not a regression.
    result = compare.compare_reports(load_report(cont), load_report(base), config)
    assert result.benchmarks[0].metric("FLOP/s").verdict == "faster"
    assert result.exit_code == 0


def test_time_counters_lower_is_better_and_cli_selects_counters(pair, capsys, tmp_path) -> None:
    name = "mlp/gpu/eager/data:iris/batch:120/hidden:10/readback:1/manual_time"
    times = samples(4e5, seed=1)
    epoch = samples(20.0, seed=2)
    pct = [1.0 + 0.01 * i for i in range(7)]
    base, cont = pair(
        bench(name, times, {"t_epoch": [e * 1e-6 for e in epoch], "pct_peak": pct}),
        bench(
            name,
            times,
            {"t_epoch": [e * 1.5e-6 for e in epoch], "pct_peak": [p * 1.5 for p in pct]},
        ),
    )
    cfg = tmp_path / "cfg.json"
    cfg.write_text("{}")
    js = str(tmp_path / "o.json")
    code, out, _ = run_cli(
        capsys, base, cont, "--config", str(cfg), "--counters", "t_epoch,pct_peak", "--json", js
    )
    assert code == 1
    doc = json.loads(Path(js).read_text())
    metrics = {m["metric"]: m for m in doc["benchmarks"][0]["metrics"]}
    assert metrics["t_epoch"]["better"] == "lower" and metrics["t_epoch"]["verdict"] == "slower"
    assert metrics["pct_peak"]["better"] == "higher"
    assert metrics["pct_peak"]["verdict"] == "faster"
    assert metrics["time"]["verdict"] == "same"

    # Without counters only the time is compared, and it did not change.
    code, _, _ = run_cli(capsys, base, cont, "--config", str(cfg), "--counters", "")
    assert code == 0


def test_exact_counter_change_fails(pair) -> None:
    times = samples(330.0, seed=1)
    base, cont = pair(
        bench(GEMM.format(m=256), times, {"flop": [3.3e7] * 7}),
        bench(GEMM.format(m=256), times, {"flop": [6.6e7] * 7}),
    )
    result = compare.compare_reports(
        load_report(base), load_report(cont), parse_config({"counters": []})
    )
    assert result.benchmarks[0].verdict == "changed"
    assert result.exit_code == 1


def test_exact_counter_must_match_the_base_repetition_by_repetition(pair) -> None:
    """One contender repetition doing other work fails; a base whose repetitions already differed
    compared with the same repetitions is the same work (a file against itself)."""
    times = samples(330.0, seed=1)
    steady, one_off = [3.3e7] * 7, [3.3e7] * 6 + [0.0]
    for base_flop, cont_flop, verdict in (
        (steady, one_off, "changed"),
        (one_off, one_off, "same"),
        (one_off, steady, "same"),
    ):
        base, cont = pair(
            bench(GEMM.format(m=256), times, {"flop": base_flop}),
            bench(GEMM.format(m=256), times, {"flop": cont_flop}),
        )
        result = compare.compare_reports(
            load_report(base), load_report(cont), parse_config({"counters": []})
        )
        assert result.benchmarks[0].verdict == verdict, (base_flop, cont_flop)


def test_non_gating_counters_are_shown_but_do_not_fail(pair) -> None:
    times = samples(330.0, seed=1)
    rates = [1e11] * 7
    base, cont = pair(
        bench(GEMM.format(m=256), times, {"FLOP/s": rates}),
        bench(GEMM.format(m=256), times, {"FLOP/s": [r / 2 for r in rates]}),
    )
    config = parse_config({"counters": ["FLOP/s"], "gate_counters": False})
    result = compare.compare_reports(load_report(base), load_report(cont), config)
    assert result.benchmarks[0].metric("FLOP/s").verdict == "slower"
    assert result.exit_code == 0


def test_cpu_time_can_be_compared_instead_of_real_time(pair) -> None:
    base_rows = bench(GEMM.format(m=256), samples(330.0, seed=1))
    cont_rows = bench(GEMM.format(m=256), samples(330.0, seed=2))
    for row in cont_rows:
        row["real_time"] *= 3  # the process waited for the core; its CPU time did not grow
    base, cont = pair(base_rows, cont_rows)
    real = compare.compare_reports(load_report(base), load_report(cont), parse_config({}))
    cpu = compare.compare_reports(
        load_report(base), load_report(cont), parse_config({"time": "cpu_time"})
    )
    assert real.benchmarks[0].verdict == "slower"
    assert cpu.benchmarks[0].verdict == "same"


# --- normalisation -----------------------------------------------------------------------------


NORMALIZED = {
    "time": "real_time",
    "thresholds": {"max_ratio": 1.5, "alpha": 0.01},
    "counters": [],
    "normalize": {"reference": "^matmul/cpu/", "max_ratio": 1.3, "alpha": 0.01},
}


def test_uniformly_slower_machine_is_not_a_regression_when_normalised(pair) -> None:
    # The whole run 1.4x slower (another machine, a busy neighbour): below the absolute 1.5x,
    # and the normalised times do not move at all.
    base, cont = pair(sweep(seed=1), sweep(factor=1.4, seed=2))
    result = compare.compare_reports(load_report(base), load_report(cont), parse_config(NORMALIZED))
    assert result.exit_code == 0
    for b in result.benchmarks:
        ref = b.metric("time/ref")
        assert ref is not None and ref.ratio == pytest.approx(1.0, abs=0.05)


def test_one_benchmark_slower_relative_to_the_others_is_caught_when_normalised(pair) -> None:
    # m:512 1.4x slower: below the absolute 1.5x, but beyond 1.3x relative to the same run.
    rows = sweep(seed=2)
    slow = [r for r in rows if "/m:512/" not in r["run_name"]] + gemm_rows(
        512, [x * 1.4 for x in samples(2700.0, seed=77)]
    )
    base, cont = pair(sweep(seed=1), slow)
    result = compare.compare_reports(load_report(base), load_report(cont), parse_config(NORMALIZED))
    verdicts = {b.name: b.verdict for b in result.benchmarks}
    assert verdicts[GEMM.format(m=512)] == "slower"
    assert verdicts[GEMM.format(m=64)] == "same" and verdicts[GEMM.format(m=256)] == "same"
    assert result.exit_code == 1
    assert len(result.reference) == 3


def test_uniform_2x_slowdown_is_caught_by_the_absolute_check(pair) -> None:
    base, cont = pair(sweep(seed=1), sweep(factor=2.0, seed=2))
    result = compare.compare_reports(load_report(base), load_report(cont), parse_config(NORMALIZED))
    assert {b.verdict for b in result.benchmarks} == {"slower"}
    assert result.exit_code == 1


def test_normalize_reference_matching_nothing_exits_2(pair, capsys, tmp_path) -> None:
    base, cont = pair(sweep(seed=1), sweep(seed=2))
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"normalize": {"reference": "^mlp/"}}))
    code, _, err = run_cli(capsys, base, cont, "--config", str(cfg))
    assert code == 2 and "normalize.reference" in err


# --- statistics details ------------------------------------------------------------------------


def test_too_few_repetitions_for_the_u_test_are_not_judged() -> None:
    # 3 vs 3 can never reach p < 0.05: a clean 30 % shift is not enough samples, not "slower".
    result = compare_metric("time", "lower", [100.0, 101.0, 99.0], [130.0, 131.0, 129.0], STRICT)
    assert result.verdict == "few" and not result.fails
    assert result.needed == 4 and result.slowdown == pytest.approx(1.3, rel=0.01)
    # 4 vs 4 can (smallest p 0.029 < 0.05).
    four = compare_metric(
        "time", "lower", [100.0, 101.0, 99.0, 100.5], [130.0, 131.0, 129.0, 130.5], STRICT
    )
    assert four.verdict == "slower" and four.needed is None


@pytest.mark.parametrize(
    "base, cont",
    [
        ([100.0], [200.0]),  # one repetition: any two numbers "do not overlap"
        ([200.0], [100.0]),
        ([100.0], [101.0]),  # not "same" either: nothing was tested
        ([100.0], [87.0]),
        ([100.0], [114.0]),
        ([100.0, 101.0], [200.0, 201.0]),
        ([200.0, 201.0], [100.0, 101.0]),
    ],
)
def test_one_or_two_repetitions_are_never_judged(base: list[float], cont: list[float]) -> None:
    result = compare_metric("time", "lower", base, cont, STRICT)
    assert result.verdict == "few" and not result.fails and result.needed == 4


def test_one_side_with_one_repetition_is_not_judged() -> None:
    rate = compare_metric("FLOP/s", "higher", [2e9] * 7, [1e9], STRICT)
    assert rate.verdict == "few" and rate.needed == 4
    assert rate.slowdown == pytest.approx(2.0)


def test_failure_reason_names_the_p_value(pair, capsys, no_default_config) -> None:
    base, cont = pair(gemm_rows(64, samples(6.0, seed=1)), gemm_rows(64, samples(9.0, seed=2)))
    code, out, _ = run_cli(capsys, base, cont, "--config", no_default_config)
    assert code == 1
    (line,) = [ln for ln in out.splitlines() if ln.startswith("REGRESSION")]
    assert "1.50x worse" in line and "< 0.05)" in line


@pytest.mark.parametrize("side", ["baseline", "contender"])
def test_aggregates_only_file_exits_2_and_says_why(
    side, pair, capsys, no_default_config, tmp_path
) -> None:
    full = sweep(seed=1)
    aggregates = [r for r in full if r["run_type"] == "aggregate"]
    base, cont = pair(aggregates, full) if side == "baseline" else pair(full, aggregates)
    code, out, err = run_cli(capsys, base, cont, "--config", no_default_config)
    assert code == 2 and out == ""
    path = base if side == "baseline" else cont
    assert err.endswith(
        f": error: {path}: only aggregate rows (written with "
        "--benchmark_report_aggregates_only); rerun without it so the repetitions can be "
        "compared\n"
    )
    assert len(err.splitlines()) == 1


def test_same_name_different_labels_are_kept_apart(pair) -> None:
    name = GEMM.format(m=128)
    rows = bench(name, samples(50.0, seed=1), label="dtype=fp32 shape=square") + bench(
        name, samples(80.0, seed=2), label="dtype=fp32 shape=mlp_layer"
    )
    base, cont = pair(rows, rows)
    result = compare.compare_reports(load_report(base), load_report(cont), parse_config({}))
    assert sorted(b.name for b in result.benchmarks) == [
        f"{name} [dtype=fp32 shape=mlp_layer]",
        f"{name} [dtype=fp32 shape=square]",
    ]
    assert all(b.verdict == "same" for b in result.benchmarks)


def test_json_output_is_strict_json(pair, capsys, no_default_config, tmp_path) -> None:
    # Single repetitions give NaN spreads: the JSON must still parse without NaN extensions.
    base, cont = pair(bench(GEMM.format(m=64), [6.0]), bench(GEMM.format(m=64), [6.1]))
    js = tmp_path / "o.json"
    code, _, _ = run_cli(capsys, base, cont, "--config", no_default_config, "--json", str(js))
    assert code == 2  # one repetition a side: cannot judge
    doc = json.loads(js.read_text(), parse_constant=lambda c: pytest.fail(f"non-JSON {c}"))
    assert doc["schema"] == "gpubench-compare/1" and doc["exit_code"] == 2
    assert doc["benchmarks"][0]["metrics"][0]["baseline"]["cv"] is None


def test_markdown_is_a_pr_comment(pair, capsys, no_default_config, tmp_path) -> None:
    base, cont = pair(sweep(seed=1), sweep(factor=2.0, seed=2))
    md = tmp_path / "o.md"
    run_cli(capsys, base, cont, "--config", no_default_config, "--markdown", str(md))
    text = md.read_text()
    assert text.startswith("<!-- gpubench-compare -->")
    assert "regression" in text.splitlines()[1]
    assert "| benchmark | metric |" in text and "**SLOWER**" in text


def test_default_config_file_is_valid() -> None:
    config = compare.default_config()
    assert config.thresholds.max_ratio >= 1.0
    assert config.direction("FLOP/s") == "higher" and config.direction("t_epoch") == "lower"
    # Overrides must say why they exist.
    assert all(o.why for o in config.overrides)


def test_runs_as_a_module(pair, tmp_path) -> None:
    import subprocess
    import sys

    base, cont = pair(sweep(seed=1), sweep(factor=2.0, seed=2))
    env = dict(os.environ)
    tools = str(Path(compare.__file__).resolve().parents[2])
    env["PYTHONPATH"] = tools + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, "-m", "gpubench_tools.compare", base, cont],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 1, proc.stderr
    assert "REGRESSION" in proc.stdout


# --- colour -------------------------------------------------------------------------------------


class _Terminal(io.StringIO):
    """A stdout that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    "stdout, no_color, coloured",
    [
        (_Terminal, None, True),
        (_Terminal, "", True),  # NO_COLOR set but empty does not turn colour off
        (_Terminal, "1", False),
        (io.StringIO, None, False),  # a file or a pipe: never
    ],
)
def test_colour_only_on_a_terminal_and_never_from_the_data(
    pair, no_default_config, monkeypatch, stdout, no_color, coloured
) -> None:
    """The verdict's colour reaches a terminal; a benchmark name's escape sequences never do
    (neither in a coloured line nor in a plain one), and no line a CI runner reads as a command
    gets through behind a colour code."""
    hostile = "::error::m/\x1b[2J\x1b]0;title\x07\x1b[8mhidden\x1b[0m"
    slow = bench(hostile, [x * 1.3 for x in samples(2700.0, seed=99)])
    base, cont = pair(sweep(seed=1) + bench(hostile, samples(2700.0, seed=9)), sweep(seed=2) + slow)
    if no_color is None:
        monkeypatch.delenv("NO_COLOR", raising=False)
    else:
        monkeypatch.setenv("NO_COLOR", no_color)
    out = stdout()
    with contextlib.redirect_stdout(out):
        code = compare.main([base, cont, "--config", no_default_config])
    text = out.getvalue()
    assert code == 1 and "SLOWER" in text
    painted = re.findall(r"\x1b\[([0-9;]*)m(.*?)\x1b\[0m", text)
    assert [line for line in text.splitlines() if "\x1b" in line] == [
        f"\x1b[{c}m{line}\x1b[0m" for c, line in painted
    ]
    assert not any("\x1b" in line for _, line in painted)
    if not coloured:
        assert not painted
        return
    # The slower row is red, its name folded and shown after "> "; the gate line is red too.
    (row,) = [(c, line) for c, line in painted if "SLOWER" in line]
    assert row[0] == "31;1" and row[1].startswith("> ::error::m/ [2J ]0;title [8mhidden [0m ")
    assert painted[-1][0] == "31;1" and painted[-1][1].startswith("gate: FAIL")


# --- the records the texts render ---------------------------------------------------------------


def test_the_page_record_of_a_regression(pair, no_default_config) -> None:
    from gpubench_tools.compare.render import page

    slow = gemm_rows(512, [x * 1.3 for x in samples(2700.0, seed=99)])
    unchanged = [r for r in sweep(seed=2) if "/m:512/" not in r["run_name"]]
    base, cont = pair(sweep(seed=1), unchanged + slow + gemm_rows(32, samples(1.0)))
    j = compare.compare_reports(load_report(base), load_report(cont), parse_config({}))
    p = page(j)
    assert (p.word, p.colour, p.n_unchanged) == ("FAIL", "slower", 2)
    assert p.reason == "1 benchmark regressed"
    assert p.headline == "3 compared, 1 slower, 2 same, 1 new"  # the new one is not compared
    [failure] = p.failures
    assert failure.line.startswith(f"REGRESSION {GEMM.format(m=512)}: time 1.3")
    [new] = p.info
    assert new.names == (GEMM.format(m=32),) and new.listed == ()
    assert page(j, verbose=True).info[0].listed == new.names
    assert [r.name for r in p.attention] == [GEMM.format(m=512)] + [None] * (len(p.attention) - 1)
    assert p.attention[0].fails and p.attention[0].verdict == "SLOWER"
