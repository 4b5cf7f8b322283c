"""Numbers behind the report: crossovers, the copy and launch fits, the model, the sentences."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, GPU_CONTEXT, gb_row, write_bench_json

from gpubench_tools.crossover import find_crossover
from gpubench_tools.dataset import load_sources
from gpubench_tools.report.matmul_analysis import speedup_series
from gpubench_tools.overhead_model import build_model, copy_count, fit_line
from gpubench_tools.report.sentences import (
    breakdown_sentences,
    mlp_sentences,
    overhead_sentences,
    speedup_sentences,
    utilisation_sentences,
)

# --- crossover -------------------------------------------------------------------------------


def test_crossover_of_a_power_law_is_exact() -> None:
    xs = [100, 300, 1000, 3000]
    c = find_crossover(xs, [(x / 900) ** 1.3 for x in xs])
    assert c.kind == "cross"
    assert c.x == pytest.approx(900, rel=1e-12)
    assert (c.x_lo, c.x_hi) == (300, 1000)


def test_crossover_interpolates_in_log_log_space() -> None:
    # Half-way in log(speedup) between 0.5 and 2 is 1; half-way in log(size) is the geometric mean.
    assert find_crossover([100, 400], [0.5, 2.0]).x == pytest.approx(200)


def test_crossover_uses_the_last_upward_crossing() -> None:
    c = find_crossover([16, 32, 64, 128, 256], [0.5, 1.2, 0.9, 1.5, 3.0])
    assert c.kind == "cross" and 64 < c.x < 128


def test_crossover_edge_cases() -> None:
    assert find_crossover([16, 64], [1.5, 3.0]).kind == "always_faster"
    slow = find_crossover([16, 64], [0.1, 0.5])
    assert slow.kind == "slower_at_largest" and slow.x_lo == 64
    assert find_crossover([], []).kind == "no_data"
    assert find_crossover([16, 64], [math.nan, 0.0]).kind == "no_data"


def _square_rows(
    cpu_time: dict[int, float],
    gpu: dict[str, dict[int, float]],
    phases: dict[int, dict[str, float]] | None = None,
) -> list[dict[str, Any]]:
    rows = []
    for n, t in cpu_time.items():
        rows.append(
            gb_row(
                f"matmul/cpu/openblas/dtype:fp32/m:{n}/n:{n}/k:{n}/threads:1",
                t,
                {"m": n, "n": n, "k": n, "flop": 2.0 * n**3, "pct_peak": 50.0, "threads": 1.0},
                "dtype=fp32 shape=square",
            )
        )
    for variant, times in gpu.items():
        for n, t in times.items():
            c: dict[str, float] = {
                "m": n,
                "n": n,
                "k": n,
                "flop": 2.0 * n**3,
                "pct_peak": 2.0 * n**3 / 5e13 / t * 100,
                "kernels": 1.0,
                "t_compute": t,
                "t_wall": t,
                "t_h2d": 0.0,
                "t_d2h": 0.0,
                "t_overhead": 0.0,
            }
            label = "dtype=fp32 shape=square"
            if variant == "pinned":
                label += " host=pinned"
                share = (phases or {}).get(
                    n, {"t_h2d": 0.25, "t_compute": 0.25, "t_d2h": 0.25, "t_overhead": 0.25}
                )
                c.update({k: v * t for k, v in share.items()})
                c["t_wall"] = t
                c["bytes_h2d"] = 8.0 * n * n
                c["bytes_d2h"] = 4.0 * n * n
                c["pinned"] = 1.0
            name = "cublas_kernel" if variant == "kernel" else "cublas_e2e"
            rows.append(
                gb_row(f"matmul/gpu/{name}/dtype:fp32/m:{n}/n:{n}/k:{n}/manual_time", t, c, label)
            )
    return rows


def test_speedup_series_crossover_from_bench_rows(tmp_path: Path) -> None:
    sizes = [64, 128, 256, 512, 1024]
    cpu = {n: 1e-10 * n**3 for n in sizes}
    # GPU time chosen so that CPU/GPU = (n/300)^1.5: a known crossover at n = 300.
    gpu = {n: cpu[n] / (n / 300) ** 1.5 for n in sizes}
    path = write_bench_json(tmp_path / "x.json", _square_rows(cpu, {"pinned": gpu}), GPU_CONTEXT)
    (src,), _ = load_sources([str(path)])
    (series,) = speedup_series(src)
    assert series.variant == "e2e pinned" and series.dtype == "fp32"
    assert series.crossover.x == pytest.approx(300, rel=1e-9)


def test_cpu_reference_is_the_fastest_thread_count(tmp_path: Path) -> None:
    rows = _square_rows({256: 4e-3}, {"kernel": {256: 1e-3}})
    fast = dict(rows[0])
    fast.update(name="matmul/cpu/openblas/dtype:fp32/m:256/n:256/k:256/threads:8", threads=8.0)
    fast["run_name"] = fast["name"]
    fast["real_time"] = 2e-3 * 1e6
    path = write_bench_json(tmp_path / "t.json", rows + [fast], GPU_CONTEXT)
    (src,), _ = load_sources([str(path)])
    (series,) = speedup_series(src)
    assert series.speedup == [pytest.approx(2.0)]
    assert series.cpu[0].c("threads") == 8.0


# --- overhead model --------------------------------------------------------------------------

PROBE_BYTES = [4**i for i in range(1, 16)]


def _probe_rows(alpha: float, beta: float, noise: float = 0.0) -> list[dict[str, Any]]:
    rows = []
    for direction in ("h2d", "d2h"):
        for i, b in enumerate(PROBE_BYTES):
            # Deterministic +-noise so the test does not depend on a random seed.
            t = (alpha + b / beta) * (1 + noise * (1 if i % 2 else -1))
            rows.append(
                gb_row(
                    f"overhead/{direction}/pinned/bytes:{b}/manual_time",
                    t,
                    {
                        "bytes": float(b),
                        f"bytes_{direction}": float(b),
                        f"t_{direction}": t,
                        "pinned": 1.0,
                    },
                    f"probe={direction} host=pinned",
                )
            )
    return rows


def _launch_rows(t_launch: float, t_sync: float) -> list[dict[str, Any]]:
    rows = [
        gb_row(
            f"overhead/launch/burst/kernels:{n}/manual_time",
            n * t_launch,
            {
                "kernels": float(n),
                "t_per_launch": (t_sync + n * t_launch) / n,
                "t_wall": t_sync + n * t_launch,
            },
            "probe=launch_burst",
        )
        for n in (1, 10, 100, 1000)
    ]
    rows.append(
        gb_row("overhead/sync/stream/manual_time", t_sync, {"t_sync": t_sync}, "probe=sync_stream")
    )
    rows.append(
        gb_row(
            "overhead/launch/roundtrip/manual_time",
            t_sync + t_launch,
            {"t_wall": t_sync + t_launch},
            "probe=launch_roundtrip",
        )
    )
    return rows


def test_fit_line_recovers_exact_values() -> None:
    xs = [float(b) for b in PROBE_BYTES]
    a, b, err = fit_line(xs, [5e-6 + x / 20e9 for x in xs])
    assert a == pytest.approx(5e-6, rel=1e-6)
    assert 1 / b == pytest.approx(20e9, rel=1e-6)
    assert err < 1e-9


def test_copy_fit_recovers_alpha_beta_from_noisy_probe_rows(tmp_path: Path) -> None:
    path = write_bench_json(tmp_path / "p.json", _probe_rows(5e-6, 20e9, noise=0.02), GPU_CONTEXT)
    (src,), _ = load_sources([str(path)])
    model = build_model(src)
    for direction in ("h2d", "d2h"):
        fit = model.copies[(direction, "pinned")]
        assert fit.alpha_s == pytest.approx(5e-6, rel=0.03)
        assert fit.beta_bytes_per_s == pytest.approx(20e9, rel=0.03)
        assert fit.half_bandwidth_bytes == pytest.approx(5e-6 * 20e9, rel=0.06)


def test_small_copies_matter_in_the_fit(tmp_path: Path) -> None:
    """An unweighted fit is ruled by the 1 GiB copy and gets alpha wrong by orders of magnitude;
    the relative-error fit must not."""
    path = write_bench_json(tmp_path / "p.json", _probe_rows(3e-6, 50e9, noise=0.01), GPU_CONTEXT)
    (src,), _ = load_sources([str(path)])
    fit = build_model(src).copies[("h2d", "pinned")]
    assert fit.alpha_s == pytest.approx(3e-6, rel=0.03)


def test_launch_costs_and_model_terms(tmp_path: Path) -> None:
    rows = _probe_rows(2e-6, 40e9) + _launch_rows(2.5e-6, 4e-6)
    n = 512
    t_compute = 2.0 * n**3 / (0.5 * 5e13)  # kernel at 50% of the fp32 peak
    kernel = _square_rows({}, {"kernel": {n: t_compute}})
    e2e = _square_rows({}, {"pinned": {n: 1e-3}})
    path = write_bench_json(tmp_path / "m.json", rows + kernel + e2e, GPU_CONTEXT)
    (src,), _ = load_sources([str(path)])
    model = build_model(src)
    assert model.launch.t_launch == pytest.approx(2.5e-6, rel=1e-6)
    assert model.launch.t_sync == pytest.approx(4e-6)
    assert model.launch.t_roundtrip == pytest.approx(6.5e-6)
    (p,) = src.matmul_e2e()
    terms = model.predict(p)
    assert terms is not None
    assert terms.h2d == pytest.approx(2e-6 + 8.0 * n * n / 40e9, rel=1e-6)
    assert terms.d2h == pytest.approx(2e-6 + 4.0 * n * n / 40e9, rel=1e-6)
    assert terms.compute == pytest.approx(t_compute, rel=1e-9)
    assert terms.launch == pytest.approx(2.5e-6)
    assert terms.total == pytest.approx(terms.h2d + terms.compute + terms.d2h + 2.5e-6 + 4e-6)


def test_each_copy_call_pays_alpha(tmp_path: Path) -> None:
    """The e2e GEMM copies A and B with two cudaMemcpyAsync calls: T_h2d carries 2 alpha."""
    alpha, beta, n = 7e-6, 25e9, 256
    rows = _probe_rows(alpha, beta) + _launch_rows(2.5e-6, 4e-6)
    rows += _square_rows({}, {"kernel": {n: 1e-4}})
    e2e = _square_rows({}, {"pinned": {n: 1e-3}})
    e2e[0].update(copies_h2d=2.0, copies_d2h=1.0)
    path = write_bench_json(tmp_path / "c.json", rows + e2e, GPU_CONTEXT)
    (src,), _ = load_sources([str(path)])
    (p,) = src.matmul_e2e()
    terms = build_model(src).predict(p)
    assert terms is not None
    assert terms.h2d == pytest.approx(2 * alpha + 8.0 * n * n / beta, rel=1e-6)
    assert terms.d2h == pytest.approx(1 * alpha + 4.0 * n * n / beta, rel=1e-6)


def test_files_without_copy_counters_count_one_copy_per_phase() -> None:
    """The H100 fixture is written like files from before copies_h2d / copies_d2h."""
    (src,), _ = load_sources([str(FIXTURES / "h100.json")])
    model = build_model(src)
    points = [p for p in src.matmul_e2e() if model.predict(p) is not None]
    assert points
    for p in points:
        assert not p.has("copies_h2d") and copy_count(p, "h2d") == 1.0
        terms = model.predict(p)
        fit = model.copies[("h2d", p.labels.get("host", "pinned"))]
        assert terms is not None
        assert terms.h2d == pytest.approx(fit.alpha_s + p.c("bytes_h2d") / fit.beta_bytes_per_s)


def test_committed_h100_run_counts_its_copy_calls() -> None:
    """The committed H100 run has the counters: A and B in (2 copies), C out (1)."""
    baseline = Path(__file__).resolve().parents[2] / "reports/baselines/h100-80gb-hbm3-matmul.json"
    (src,), _ = load_sources([str(baseline)])
    model = build_model(src)
    points = [p for p in src.matmul_e2e() if model.predict(p) is not None]
    assert points
    for p in points:
        assert copy_count(p, "h2d") == 2.0 and copy_count(p, "d2h") == 1.0
        terms = model.predict(p)
        fit = model.copies[("h2d", p.labels.get("host", "pinned"))]
        assert terms is not None
        assert terms.h2d == pytest.approx(2 * fit.alpha_s + p.c("bytes_h2d") / fit.beta_bytes_per_s)


# --- sentences -------------------------------------------------------------------------------


def _story_file(tmp_path: Path, kernels_per_step_counter: bool = False) -> Path:
    """Data built so that the speedup sentence has known numbers: at n=256 the e2e GPU run is
    4.1x slower with 71% host-to-device copy, crossovers at n=900 (e2e) and n=180 (kernel)."""
    sizes = [128, 256, 512, 2048]
    cpu = {n: 1e-10 * n**3 for n in sizes}
    e2e_speedup = {128: 0.15, 256: 1 / 4.1, 512: (512 / 900) ** 2, 2048: (2048 / 900) ** 2}
    kernel_speedup = {n: (n / 180) ** 2 for n in sizes}
    phases = {256: {"t_h2d": 0.71, "t_compute": 0.1, "t_d2h": 0.1, "t_overhead": 0.09}}
    rows = _square_rows(
        cpu,
        {
            "pinned": {n: cpu[n] / s for n, s in e2e_speedup.items()},
            "kernel": {n: cpu[n] / s for n, s in kernel_speedup.items()},
        },
        phases,
    )
    rows += _probe_rows(5e-6, 20e9) + _launch_rows(2.74e-6, 4e-6)
    # Iris: CPU 10 us per epoch, eager 14 launches in 40 us, fused 2.3x faster than the CPU.
    for variant, t, kernels, threads in (
        ("small", 10e-6, None, 1.0),
        ("eager", 40e-6, 14.0, None),
        ("fused", 10e-6 / 2.3, 1 / 20000, None),
    ):
        c = {
            "batch": 120.0,
            "hidden": 10.0,
            "readback": 0.0,
            "t_epoch": t,
            "samples_per_s": 120 / t,
        }
        if kernels is not None and kernels_per_step_counter:
            # Files from this version on: `kernels` per iteration (20000 steps) and per step.
            c["kernels"] = kernels * 20000
            c["kernels_per_step"] = kernels
        elif kernels is not None:
            c["kernels"] = kernels  # older files: launches per step under `kernels`
        if threads is not None:
            c["threads"] = threads
        backend = "gpu" if kernels is not None else "cpu"
        rows.append(
            gb_row(
                f"mlp/{backend}/{variant}/data:iris/batch:120/hidden:10/readback:0",
                t * 20000,
                c,
                f"data=iris variant={variant}",
            )
        )
    return write_bench_json(tmp_path / "story.json", rows, GPU_CONTEXT)


def test_speedup_sentence_carries_the_numbers(tmp_path: Path) -> None:
    (src,), _ = load_sources([str(_story_file(tmp_path))])
    first = speedup_sentences(src)[0]
    assert first == (
        "Test GPU against Test CPU: at n=256 the GPU end-to-end (fp32, pinned) is 4.1x slower "
        "than the CPU: 71% of its time is host-to-device copy; it overtakes the CPU at n~900 "
        "(compute-only: n~180)."
    )


@pytest.mark.parametrize("kernels_per_step_counter", [False, True])
def test_mlp_verdict_sentence(tmp_path: Path, kernels_per_step_counter: bool) -> None:
    (src,), _ = load_sources([str(_story_file(tmp_path, kernels_per_step_counter))])
    verdict = mlp_sentences(src, build_model(src))[0]
    # 14 launches x 2.74 us / 40 us = 95.9% of the epoch.
    assert verdict == (
        "Test GPU: on Iris the eager GPU path spends 96% of each epoch on 14 launches and is 4x "
        "slower than the CPU; the fused path removes them and runs 2.3x faster than the CPU "
        "(CPU small, 1 thread: 10.0 us per epoch)."
    )


def test_overhead_and_breakdown_sentences(tmp_path: Path) -> None:
    (src,), _ = load_sources([str(_story_file(tmp_path))])
    text = " ".join(overhead_sentences(src, build_model(src)))
    assert "H2D pinned alpha = 5.00 us, beta = 20.0 GB/s" in text
    assert "D2H pinned alpha = 5.00 us, beta = 20.0 GB/s" in text
    assert "2.74 us per kernel in a burst" in text
    assert "4.00 us per stream synchronise" in text
    assert "half of beta at alpha x beta = 97.7 KiB" in text
    breakdown = breakdown_sentences(src)[0]
    assert breakdown.startswith("Test GPU, end to end (fp32, pinned): ")
    assert "H2D copy 71% at n=256" not in breakdown  # n=256 is not the first size
    assert "at n=128" in breakdown and "n=2048" in breakdown


def test_cpu_only_and_no_mlp_sentences(tmp_path: Path) -> None:
    rows = _square_rows({64: 1e-5, 128: 8e-5}, {})
    path = write_bench_json(tmp_path / "cpu.json", rows, {"cpu_model": "Test CPU", "gpu": "none"})
    (src,), _ = load_sources([str(path)])
    assert speedup_sentences(src)[0].startswith("No GPU data in ")
    assert overhead_sentences(src, build_model(src))[0].startswith("No GPU data in ")
    assert mlp_sentences(src, build_model(src)) == ["Test CPU: no MLP data."]
    assert "the CPU reaches at most 50% of its fp32 peak" in utilisation_sentences(src)[0]


def test_aggregates_only_file_uses_the_median_rows(tmp_path: Path) -> None:
    """--benchmark_report_aggregates_only writes no iteration rows: the median row stands in."""
    counters = {"m": 64.0, "n": 64.0, "k": 64.0, "flop": 2.0 * 64**3, "pct_peak": 40.0}
    name = "matmul/cpu/openblas/dtype:fp32/m:64/n:64/k:64/threads:1"
    rows = [
        gb_row(name, t, counters, "dtype=fp32 shape=square", run_type="aggregate", aggregate_name=a)
        for a, t in (("mean", 2.2e-5), ("median", 2.0e-5), ("stddev", 1e-6))
    ]
    (src,), _ = load_sources([str(write_bench_json(tmp_path / "agg.json", rows))])
    (point,) = src.points
    assert point.time == pytest.approx(2.0e-5)
    assert point.repetitions == 1


def test_mlp_rows_of_deeper_nets_and_input_copies_stay_out_of_the_main_charts() -> None:
    from gpubench_tools.report.mlp_analysis import mlp_points, speedup_grid, sweep_lines

    (src,), _ = load_sources([str(FIXTURES / "h100.json")])
    everything = mlp_points(src, layers=None)
    one_layer = mlp_points(src)
    assert {m.layers for m in everything} == {1, 2}
    assert {m.layers for m in one_layer} == {1}
    lines = sweep_lines(one_layer, "synthetic", 64, 0)
    # CPU rows are readback=1 in real files and still belong in a readback=0 chart.
    assert "CPU openblas, 1 thread" in lines and "GPU eager" in lines
    assert not any("input" in name for name in lines)
    batches, hiddens, grid = speedup_grid(one_layer, "eager")
    assert batches == [1, 16, 256, 4096, 65536] and hiddens == [8, 64, 512, 4096]
    assert all(math.isfinite(v) for row in grid for v in row)


# --- several files of one machine ------------------------------------------------------------


def _ctx(**extra: Any) -> dict[str, Any]:
    return {**GPU_CONTEXT, "cpu_logical_cpus": "16", **extra}


def test_same_machine_compares_gpu_cpu_threads_and_host_where_both_have_one() -> None:
    from gpubench_tools.dataset import same_machine

    assert same_machine(_ctx(host_name="a"), _ctx(host_name="a", date="later"))
    assert same_machine(_ctx(host_name="a"), _ctx())  # host recorded in one file only
    assert not same_machine(_ctx(host_name="a"), _ctx(host_name="b"))
    assert not same_machine(_ctx(), _ctx(gpu="NVIDIA Other GPU"))
    assert not same_machine(_ctx(), _ctx(cpu_model="Other CPU"))
    assert not same_machine(_ctx(), _ctx(cpu_logical_cpus="32"))
    assert not same_machine({}, {})  # a context that names no hardware identifies nothing


def test_files_of_one_machine_merge_and_shared_benchmarks_become_repetitions(
    tmp_path: Path,
) -> None:
    counters = {"m": 64.0, "n": 64.0, "k": 64.0, "flop": 2.0 * 64**3, "pct_peak": 40.0}
    label = "dtype=fp32 shape=square"
    shared = "matmul/cpu/openblas/dtype:fp32/m:64/n:64/k:64/threads:1"
    only_b = "matmul/cpu/openblas/dtype:fp32/m:64/n:64/k:64/threads:2"
    a = write_bench_json(
        tmp_path / "a.json", [gb_row(shared, 1e-5, counters, label)], _ctx(host_name="n1")
    )
    b = write_bench_json(
        tmp_path / "b.json",
        [
            gb_row(shared, 3e-5, counters, label, repetitions=2),
            gb_row(shared, 2e-5, counters, label, repetition_index=1, repetitions=2),
            gb_row(only_b, 4e-5, dict(counters, threads=2.0), label),
        ],
        _ctx(host_name="n1", date="later"),
    )
    (src,), warnings = load_sources([str(a), str(b)])
    assert src.paths == [str(a), str(b)] and src.tag == "" and src.label == "Test GPU"
    assert src.report.context.get("date") is None  # the context of the first file
    points = {p.run_name: p for p in src.points}
    assert set(points) == {shared, only_b}
    assert points[shared].repetitions == 3
    assert points[shared].time == pytest.approx(2e-5)  # median of 1, 3 and 2 us
    (warning,) = warnings
    assert "1 benchmark appears in more than one of" in warning
    assert "treated as repetitions" in warning and shared in warning
