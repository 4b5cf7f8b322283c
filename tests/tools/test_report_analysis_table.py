"""report.analysis and overhead_model on the summary table: numbers and structure, not wording.

The pinned facts come from the committed H100 run (reports/baselines/h100-80gb-hbm3-*.json,
one repetition per row); the rest from hand-made rows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import GPU_CONTEXT, REPO, gb_row, write_bench_json

from gpubench_tools.overhead_model import build_model, fit_line
from gpubench_tools.report import analysis as A
from gpubench_tools.report.gpu_time import dominant_by_range, model_bias
from gpubench_tools.table import load_table

BASE = REPO / "reports" / "baselines"
US = 1e-6


@pytest.fixture(scope="module")
def h100() -> pd.DataFrame:
    paths = [str(BASE / "h100-80gb-hbm3-matmul.json"), str(BASE / "h100-80gb-hbm3-mlp.json")]
    return A.summary_of(load_table(paths).rows)


@pytest.fixture(scope="module")
def h100_breakdown(h100: pd.DataFrame) -> pd.DataFrame:
    return A.breakdown(h100)


def _e2e(frame: pd.DataFrame, n: float, dtype: str = "fp32", host: str = "pinned") -> pd.Series:
    rows = frame[
        (frame["workload"] == "matmul")
        & (frame["shape"] == "square")
        & (frame["dtype"] == dtype)
        & (frame["host"] == host)
        & (frame["n"] == n)
    ]
    assert len(rows) == 1
    return rows.iloc[0]


# --- breakdown: pinned H100 facts ----------------------------------------------------------


def test_h100_e2e_fp32_pinned_n16_is_fixed_costs(h100_breakdown: pd.DataFrame) -> None:
    row = _e2e(h100_breakdown, 16)
    assert row["parts"] == 4 and row["why"] is None
    # H2D 8.3 us + D2H 5.2 us; compute event 12.3 us for 8,192 flop; overhead 7.3 us.
    assert row["transfer"] == pytest.approx((8.3 + 5.2) * US, abs=0.1 * US)
    assert row["overhead"] == pytest.approx(7.3 * US, abs=0.1 * US)
    # 8,192 flop at ~67 TFLOP/s take 0.12 ns, 3,072 bytes at 3.35 TB/s 0.92 ns: the memory roof
    # binds, and the time at the roof is memory bandwidth, not work at peak (both a sliver).
    assert row["work_at_peak"] == 0
    assert row["memory_bandwidth"] == pytest.approx(3 * 16 * 16 * 4 / 3.35232e12, rel=0.02)
    assert row["under_utilisation"] == pytest.approx(12.3 * US, abs=0.1 * US)
    parts = ("transfer", "overhead", "under_utilisation", "work_at_peak", "memory_bandwidth")
    assert row["total"] == pytest.approx(sum(row[p] for p in parts))
    assert row["dominant"] == "transfer"


def test_h100_e2e_fp32_pinned_n4096_work_at_peak_leads_compute(
    h100_breakdown: pd.DataFrame,
) -> None:
    row = _e2e(h100_breakdown, 4096)
    assert row["work_at_peak"] > row["under_utilisation"] > 0
    assert row["work_at_peak"] == pytest.approx(2 * 4096**3 / 6.69e13, rel=0.02)
    assert row["work_at_peak"] + row["under_utilisation"] == pytest.approx(row["compute"])


def test_h100_iris_eager_step_is_launch_bound(h100: pd.DataFrame, h100_breakdown) -> None:
    name = "mlp/gpu/eager/data:iris/batch:120/hidden:10/readback:0/manual_time"
    raw = h100[h100["name"] == name].iloc[0]
    row = h100_breakdown[h100_breakdown["name"] == name].iloc[0]
    # The counters are totals over the run: per step they add up to t_step.
    steps = raw["steps"]
    parts = raw[["t_h2d", "t_d2h", "t_compute", "t_overhead"]].astype(float).sum() / steps
    assert parts == pytest.approx(raw["t_step"], rel=0.01)
    assert row["total"] == pytest.approx(81 * US, abs=1 * US)
    assert row["compute"] == pytest.approx(27 * US, abs=1 * US)
    assert row["overhead"] == pytest.approx(54.6 * US, abs=1 * US)
    assert row["dominant"] == "overhead" and row["parts"] == 4


def test_every_gpu_training_row_is_per_step(h100: pd.DataFrame, h100_breakdown) -> None:
    mlp = h100_breakdown[h100_breakdown["workload"] == "mlp"].merge(
        h100[["name", "t_step"]], on="name"
    )
    assert len(mlp) == 84
    # Graph rows' overhead is clipped at 0 (their events overlap), so allow a hair of slack.
    assert np.allclose(mlp["total"], mlp["t_step"], rtol=0.02)


def test_breakdown_three_parts_without_peak(tmp_path: Path) -> None:
    name = "matmul/gpu/cublas_e2e/dtype:fp64/host:pinned/m:8/n:8/k:8/manual_time"
    counters = dict(m=8, n=8, k=8, flop=1024, t_h2d=2e-6, t_d2h=1e-6, t_compute=9e-6)
    counters["t_overhead"] = 1e-6
    path = write_bench_json(
        tmp_path / "a.json",
        [gb_row(name, 13e-6, counters, "workload=matmul backend=gpu dtype=fp64 host=pinned")],
        GPU_CONTEXT,  # no fp64 peak
    )
    row = A.breakdown(A.summary_of(load_table([str(path)]).rows)).iloc[0]
    assert row["parts"] == 3 and "fp64" in row["why"]
    assert np.isnan(row["work_at_peak"]) and row["compute"] == pytest.approx(9e-6)
    assert row["dominant"] == "compute"


def test_dominant_by_range() -> None:
    rows = pd.DataFrame(
        {"n": [512, 16, 64, 1024, 2048], "dominant": ["work", "t", "t", "work", "work"]}
    )
    out = dominant_by_range(rows, "n")
    assert out.to_dict("list") == {
        "dominant": ["t", "work"],
        "x_from": [16, 512],
        "x_to": [64, 2048],
        "rows": [2, 3],
    }


def test_h100_dominant_ranges(h100_breakdown: pd.DataFrame) -> None:
    b = h100_breakdown
    sq = b[(b["shape"] == "square") & (b["dtype"] == "fp32") & (b["host"] == "pinned")]
    ranges = dominant_by_range(sq, "n")
    assert ranges["rows"].sum() == 15 and ranges.iloc[-1]["dominant"] == "transfer"
    assert ranges.iloc[-1]["x_to"] == 4096


# --- speedup curve and crossover -----------------------------------------------------------


def _summary(**columns) -> pd.DataFrame:
    frame = pd.DataFrame(columns)
    defaults = dict(machine=0, repetitions=5, measured_on="this run", conditions="quiet")
    for key, value in defaults.items():
        if key not in frame:
            frame[key] = value
    for col, low, high in (("time_s", "time_min_s", "time_max_s"),):
        frame[low] = frame.get(low, frame[col] * 0.95)
        frame[high] = frame.get(high, frame[col] * 1.05)
    frame["spread"] = (frame["time_max_s"] - frame["time_min_s"]) / frame["time_s"]
    return A.typed(frame)


def test_speedup_curve_takes_fastest_cpu_threads() -> None:
    s = _summary(
        backend=["cpu"] * 4 + ["gpu"] * 2,
        n=[64, 64, 1024, 1024, 64, 1024],
        threads=[1, 4, 1, 4, np.nan, np.nan],
        time_s=[1.0, 2.0, 8.0, 2.0, 4.0, 0.5],
        repetitions=[5, 5, 5, 2, 5, 5],
    )
    curve = A.speedup_curve(s, {"backend": "cpu"}, {"backend": "gpu"}, ["n"])
    assert curve["n"].tolist() == [64, 1024]
    assert curve["cpu_threads"].tolist() == [1, 4]  # small n: 1 thread wins; large: 4
    assert curve["cpu_time"].tolist() == [1.0, 2.0]
    assert curve["speedup"].tolist() == pytest.approx([0.25, 4.0])
    assert curve["speedup_low"].tolist() == pytest.approx([0.95 / 4.2, 1.9 / 0.525])
    assert curve["speedup_high"].tolist() == pytest.approx([1.05 / 3.8, 2.1 / 0.475])
    assert curve["few_samples"].tolist() == [False, True]  # the 4-thread 1024 row: 2 reps
    assert not curve["noisy"].any()


def test_speedup_curve_flags_noise_and_few_repetitions() -> None:
    s = _summary(
        backend=["cpu", "cpu", "gpu", "gpu"],
        n=[1, 2, 1, 2],
        time_s=[1.0, 1.0, 1.0, 1.0],
        time_max_s=[1.0 + A.NOISY_SPREAD + 0.01, 1.0, 1.0, 1.0],
        time_min_s=[1.0, 1.0, 1.0, 1.0],
        repetitions=[5, 5, 5, 2],
    )
    curve = A.speedup_curve(s, {"backend": "cpu"}, {"backend": "gpu"}, ["n"])
    assert curve["noisy"].tolist() == [True, False]
    assert curve["few_samples"].tolist() == [False, True]


def test_speedup_curve_training_uses_t_step(h100: pd.DataFrame) -> None:
    curve = A.speedup_curve(
        h100,
        {"workload": "mlp", "backend": "cpu", "variant": "openblas"},
        {
            "workload": "mlp",
            "backend": "gpu",
            "variant": "eager",
            "readback": 0,
            "input": "resident",
        },
        ["data", "hidden", "batch"],
        time_col="t_step",
    )
    iris = curve[curve["data"] == "iris"].iloc[0]
    assert iris["gpu_time"] == pytest.approx(81.2 * US, abs=1 * US)
    assert iris["speedup"] < 1  # a 120-sample step: the CPU wins by ~10x
    assert curve["few_samples"].all()  # the committed run has one repetition per row
    assert set(curve["gpu_measured_on"]) == {"this run"}


def test_h100_square_fp32_crossover(h100: pd.DataFrame) -> None:
    curve = A.speedup_curve(
        h100,
        {"workload": "matmul", "backend": "cpu", "shape": "square", "dtype": "fp32"},
        {
            "workload": "matmul",
            "backend": "gpu",
            "shape": "square",
            "dtype": "fp32",
            "host": "pinned",
        },
        ["n"],
    )
    c = A.crossover(curve, "n")
    assert c.kind == "cross" and 96 < c.x < 128  # between the measured sizes either side
    assert c.x == pytest.approx(118.5, abs=0.5)


@pytest.mark.parametrize(
    "speedups, kind",
    [
        ([2.0, 3.0, 4.0], "always_faster"),
        ([0.1, 0.5, 0.9], "never_faster"),
        ([0.5, 2.0, 0.8], "never_faster"),
        ([], "no_data"),
    ],
)
def test_crossover_kinds(speedups: list[float], kind: str) -> None:
    curve = pd.DataFrame({"n": [16, 64, 256][: len(speedups)], "speedup": speedups})
    c = A.crossover(curve, "n")
    assert c.kind == kind and c.x is None


def test_crossover_interpolates_the_last_upward_crossing_in_log_log() -> None:
    # Noise around 1 at small sizes (1.2 then 0.5): the crossing reported is the last one.
    curve = pd.DataFrame({"n": [10, 100, 1000, 10000], "speedup": [1.2, 0.5, 0.5, 2.0]})
    c = A.crossover(curve, "n")
    assert c.kind == "cross" and 1000 < c.x < 10000
    # log-log straight line from (1000, 0.5) to (10000, 2): 1 halfway, at sqrt(1e7).
    assert c.x == pytest.approx(10**3.5)


# --- overhead model and its bias -----------------------------------------------------------


def test_fit_line_recovers_alpha_beta() -> None:
    x = np.array([4, 64, 4096, 2**20, 2**26], dtype=float)
    a, b, err = fit_line(x, 5e-6 + x / 5e10)
    assert a == pytest.approx(5e-6) and 1 / b == pytest.approx(5e10) and err < 1e-9


def test_h100_model_fits(h100: pd.DataFrame) -> None:
    model = build_model(h100[h100["backend"] == "gpu"])
    pinned = model.copies[("h2d", "pinned")]
    assert pinned.alpha_s == pytest.approx(4.6 * US, abs=0.1 * US)
    assert pinned.beta_bytes_per_s == pytest.approx(53.4e9, rel=0.01)
    assert model.launch.t_launch == pytest.approx(3.6 * US, abs=0.1 * US)
    assert model.launch.t_sync == pytest.approx(0.335 * US, abs=0.01 * US)
    row = _e2e(h100, 16)
    terms = model.predict(row)
    assert model.utilisation(row) == pytest.approx(2.281e-5, rel=0.01)  # kernel-only pct_peak
    assert terms.total == pytest.approx(22.6 * US, abs=0.2 * US)  # measured: 33 us


def test_h100_model_bias_bands(h100: pd.DataFrame) -> None:
    model = build_model(h100[h100["backend"] == "gpu"])
    bias = model_bias(h100, model)
    assert len(bias.rows) == 84 and bias.library_cost_s == pytest.approx(6.45 * US, abs=0.1 * US)
    before = bias.before.set_index(["dtype", "host", "band"])
    after = bias.after.set_index(["dtype", "host", "band"])
    small = ("fp32", "pinned", "n < 256")
    # Small GEMMs: the model under-predicts (no per-call library cost); the term narrows it.
    assert before.loc[small, "direction"] == "under"
    assert before.loc[small, "median"] == pytest.approx(-0.165, abs=0.01)
    assert abs(after.loc[small, "median"]) < abs(before.loc[small, "median"])
    assert (before["direction"] == np.where(before["median"] < 0, "under", "over")).all()
    assert before["rows"].sum() == 84
    # Every prediction gains one library cost per cuBLAS call.
    added = bias.rows["predicted_after"] - bias.rows["predicted"]
    assert np.allclose(added, bias.library_cost_s)


def _model_rows(library_cost: float) -> list[dict]:
    """Copy probes with alpha 1 us and beta 10 GB/s exactly, a 2 us launch, a 0.1 us sync,
    kernel-only GEMMs at n = 16 and 32 that take `library_cost` beyond flop / peak, and e2e
    GEMMs measured at exactly what the model predicts plus that cost."""
    gemm = "workload=matmul backend=gpu dtype=fp32"
    rows = []
    for direction in ("h2d", "d2h"):
        for b in (4, 4096, 2**20):
            name = f"overhead/{direction}/pinned/bytes:{b}/manual_time"
            label = f"probe={direction} host=pinned"
            rows.append(gb_row(name, 1e-6 + b / 1e10, dict(bytes=b), label))
    counters = dict(kernels=1, t_per_launch=2e-6)
    rows.append(gb_row("overhead/launch/burst/kernels:1/manual_time", 2e-6, counters))
    rows[-1]["label"] = "probe=launch_burst"
    rows.append(gb_row("overhead/sync/stream/manual_time", 1e-7, dict(t_sync=1e-7)))
    rows[-1]["label"] = "probe=sync_stream"
    for n in (16, 32):
        t = library_cost + 2 * n**3 / 5e13  # GPU_CONTEXT's fp32 peak
        name = f"matmul/gpu/cublas_kernel/dtype:fp32/m:{n}/n:{n}/k:{n}/manual_time"
        rows.append(gb_row(name, t, dict(m=n, n=n, k=n, flop=2 * n**3, t_compute=t), gemm))
    for n in (16, 512, 2048):
        compute = 1e-6 + 2 * n**3 / 5e13
        predicted = (1e-6 + 8 * n * n / 1e10) + compute + (1e-6 + 4 * n * n / 1e10) + 2.1e-6
        counters = dict(m=n, n=n, k=n, flop=2 * n**3, bytes_h2d=8 * n * n, bytes_d2h=4 * n * n)
        counters.update(t_compute=compute, t_wall=predicted + library_cost, kernels=1)
        name = f"matmul/gpu/cublas_e2e/dtype:fp32/host:pinned/m:{n}/n:{n}/k:{n}/manual_time"
        rows.append(gb_row(name, predicted + library_cost, counters, gemm + " host=pinned"))
    return rows


def test_model_bias_sign_and_library_term_on_handmade_rows(tmp_path: Path) -> None:
    path = write_bench_json(tmp_path / "m.json", _model_rows(5e-6), GPU_CONTEXT)
    s = A.summary_of(load_table([str(path)]).rows)
    bias = model_bias(s, build_model(s[s["backend"] == "gpu"]))
    assert bias.library_cost_s == pytest.approx(5e-6)  # the median of the two kernel-only rows
    before = bias.before.set_index("band")
    assert before.index.tolist() == ["n < 256", "256 <= n < 1024", "n >= 1024"]
    assert (before["direction"] == "under").all()  # the model misses 5 us everywhere
    small = bias.rows.set_index("n").loc[16]
    assert small["error"] == pytest.approx(-5e-6 / small["measured"])
    # Below 256 the missing 5 us is a large share; at 2048 a small one.
    assert before.loc["n < 256", "median"] < before.loc["n >= 1024", "median"] < 0
    assert np.allclose(bias.after["median"], 0.0, atol=1e-9)  # the term is the whole miss


def test_model_bias_without_kernel_rows(tmp_path: Path) -> None:
    rows = [r for r in _model_rows(0.0) if "cublas_kernel" not in r["name"]]
    path = write_bench_json(tmp_path / "m.json", rows, GPU_CONTEXT)
    s = A.summary_of(load_table([str(path)]).rows)
    bias = model_bias(s, build_model(s[s["backend"] == "gpu"]))
    assert bias.library_cost_s is None
    assert np.allclose(bias.rows["error"], 0.0, atol=1e-9)
    assert (bias.rows["error"] == bias.rows["error_after"]).all()


# --- thread scaling ------------------------------------------------------------------------


def test_thread_scaling_handmade() -> None:
    names = [f"matmul/cpu/openblas/n:{n}/threads:{t}" for n in (64, 1024) for t in (1, 2, 4)]
    s = _summary(
        name=names,
        label="",
        backend="cpu",
        workload="matmul",
        threads=[1, 2, 4] * 2,
        time_s=[1.0, 1.25, 2.0, 8.0, 4.0, 2.5],
    )
    s = pd.concat(
        [
            s,
            _summary(
                name=["matmul/cpu/openblas/n:9/threads:1"],
                label="",
                backend="cpu",
                workload="matmul",
                threads=[1],
                time_s=[1.0],
            ),
        ]
    )
    out = A.thread_scaling(s)
    assert len(out) == 6  # the single-thread-only benchmark is left out
    big = out[out["base_name"] == "matmul/cpu/openblas/n:1024"]
    assert big["speedup"].tolist() == pytest.approx([1.0, 2.0, 3.2])
    assert big["ideal"].tolist() == [1, 2, 4]
    assert big["efficiency"].tolist() == pytest.approx([1.0, 1.0, 0.8])
    small = out[out["base_name"] == "matmul/cpu/openblas/n:64"]
    assert small["speedup"].tolist() == pytest.approx([1.0, 0.8, 0.5])
    assert not out["few_samples"].any() and not out["noisy"].any()
    assert not out["flagged"].any()
    # Bands: every time spans 0.95..1.05 of its median, so the 4-thread speedup 3.2 of n=1024
    # spans 3.2 x 0.95 / 1.05 .. 3.2 x 1.05 / 0.95; the 1-thread row is the reference, exactly 1.
    assert big["speedup_low"].tolist() == pytest.approx([1.0, 2 * 0.95 / 1.05, 3.2 * 0.95 / 1.05])
    assert big["speedup_high"].tolist() == pytest.approx([1.0, 2 * 1.05 / 0.95, 3.2 * 1.05 / 0.95])
    # A 2-thread row whose repetitions spread over 25% of its median is flagged, and so is every
    # row compared with a 1-thread row of too few repetitions.
    noisy = s.assign(time_max_s=s["time_s"].where(s["name"] != names[4], 6.0), repetitions=5)
    noisy.loc[noisy["name"] == names[0], "repetitions"] = 2
    out = A.thread_scaling(A.typed(noisy)).set_index(["base_name", "threads"])["flagged"]
    assert out[("matmul/cpu/openblas/n:1024", 2)] and out[("matmul/cpu/openblas/n:64", 4)]
    assert not out[("matmul/cpu/openblas/n:1024", 4)]


def test_h100_thread_scaling_training_uses_t_step(h100: pd.DataFrame) -> None:
    out = A.thread_scaling(h100)
    assert set(out["threads"]) == {1, 16} and out["few_samples"].all()
    sq = out[out["base_name"] == "matmul/cpu/openblas/dtype:fp32/m:1024/n:1024/k:1024"]
    assert sq["speedup"].iloc[-1] == pytest.approx(8.99, abs=0.01)
    iris = out[out["base_name"].str.startswith("mlp/cpu/openblas/data:iris")]
    assert len(iris) == 2 and (iris["time"] < 20 * US).all()  # per step, not per run
