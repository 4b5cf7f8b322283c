"""The advisor's accuracy on the committed H100 run: the leave-one-out numbers docs/advisor.md and the
answers quote are what the model reaches, a model with a broken part does not reach them, the
FLOP counts agree with bench's, and the curves interpolate and extrapolate as documented."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from conftest import REPO

import pandas as pd

from gpubench_tools.advise.curves import GemmShape, lookup
from gpubench_tools.advise.loo import REPORTED_ACCURACY, LooReport, leave_one_out
from gpubench_tools.advise.model import Advisor, Run, load_runs, mlp_config_of
from gpubench_tools.overhead_model import OverheadModel, build_model

RUNS = [str(REPO / "reports" / "baselines" / f"h100-80gb-hbm3-{w}.json") for w in ("matmul", "mlp")]
# The reported numbers are rounded to three decimals.
TOLERANCE = 0.0051


@pytest.fixture(scope="module")
def h100() -> Run:
    runs, _ = load_runs(RUNS)
    assert len(runs) == 1
    return runs[0]


@pytest.fixture(scope="module")
def loo(h100: Run) -> LooReport:
    return leave_one_out(h100)


def misses(report: LooReport) -> list[str]:
    """Where a leave-one-out result is worse than the accuracy reported for its class."""
    out = []
    for key, acc in REPORTED_ACCURACY.items():
        cls = report.classes[key]
        if cls.median > acc["median"] + TOLERANCE:
            out.append(f"{key}: median {cls.median:.3f} > {acc['median']}")
        if cls.p90 > acc["p90"] + TOLERANCE:
            out.append(f"{key}: p90 {cls.p90:.3f} > {acc['p90']}")
        if cls.winner_agreement < acc["winner"] - TOLERANCE:
            out.append(f"{key}: winner {cls.winner_agreement:.3f} < {acc['winner']}")
    return out


def test_leave_one_out_reaches_the_reported_accuracy(loo: LooReport) -> None:
    assert misses(loo) == []


def test_reported_accuracy_is_what_leave_one_out_measures(loo: LooReport) -> None:
    """Not better either: the numbers quoted are the model's, not stale ones."""
    for key, acc in REPORTED_ACCURACY.items():
        cls = loo.classes[key]
        assert cls.median == pytest.approx(acc["median"], abs=TOLERANCE), key
        assert cls.p90 == pytest.approx(acc["p90"], abs=TOLERANCE), key
        assert cls.winner_agreement == pytest.approx(acc["winner"], abs=TOLERANCE), key
    assert len(loo.classes["gemm_e2e"].cases) == 84
    assert len(loo.classes["mlp_eager"].cases) == 38


def test_docs_quote_the_measured_numbers() -> None:
    section = (REPO / "docs" / "advisor.md").read_text()
    for acc in REPORTED_ACCURACY.values():
        for value in (acc["median"], acc["p90"]):
            assert f"{value * 100:.1f}%" in section
        assert f"{acc['winner'] * 100:.0f}%" in section


def test_leave_one_out_really_leaves_the_shape_out(h100: Run) -> None:
    """With its own kernel row removed, a shape is interpolated, not read back."""
    rows = h100.rows
    e2e = rows[(rows["kind"] == "gemm_e2e") & (rows["dtype"] == "fp32")]
    p = e2e[e2e["mnk"].isin([(1024, 1024, 1024)])].iloc[0]
    advisor = Advisor(h100, rows["mnk"].isin([p["mnk"]]))
    advice = advisor.gemm(GemmShape(*p["mnk"]), "fp32", "pinned")
    assert advice.compute.where == "interpolated"
    assert all(lk.where == "interpolated" for e in advice.cpu for *_, lk in e.lookups)
    assert Advisor(h100).gemm(GemmShape(*p["mnk"])).compute.where == "measured"


def test_plain_predictions_of_measured_rows_are_within_the_reported_accuracy(
    h100: Run,
) -> None:
    """With every row available (the answer a user gets for a measured shape) the end-to-end
    rows are predicted at least as well as leave-one-out says."""
    advisor = Advisor(h100)
    errors = []
    for _, p in h100.rows[h100.rows["kind"] == "gemm_e2e"].iterrows():
        advice = advisor.gemm(GemmShape(*p["mnk"]), p["dtype"], p["host"])
        errors.append(abs(advice.gpu_total / p["t_wall"] - 1))
    errors.sort()
    acc = REPORTED_ACCURACY["gemm_e2e"]
    assert errors[len(errors) // 2] <= acc["median"]
    assert errors[int(0.9 * (len(errors) - 1))] <= acc["p90"]


def _broken(h100: Run, **what: float) -> OverheadModel:
    model = build_model(h100.rows[h100.rows["backend"] == "gpu"])
    if "alpha" in what:
        model.copies = {k: replace(v, alpha_s=what["alpha"]) for k, v in model.copies.items()}
    if "beta_scale" in what:
        model.copies = {
            k: replace(v, beta_bytes_per_s=v.beta_bytes_per_s * what["beta_scale"])
            for k, v in model.copies.items()
        }
    if "t_launch" in what:
        model.launch = replace(model.launch, t_launch=what["t_launch"])
    return model


@pytest.mark.parametrize(
    "broken, cls",
    [
        ({"alpha": 0.0}, "gemm_e2e"),  # the copy latency ignored
        ({"beta_scale": 2.0}, "gemm_e2e"),  # copies counted at twice the bandwidth
        ({"t_launch": 0.0}, "mlp_eager"),  # the launches of an eager step ignored
    ],
)
def test_a_broken_overhead_model_misses_the_reported_accuracy(
    h100: Run, broken: dict[str, float], cls: str
) -> None:
    report = leave_one_out(h100, _broken(h100, **broken))
    assert any(m.startswith(cls) for m in misses(report)), broken


def test_a_wrong_element_size_misses_the_reported_accuracy(
    h100: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gpubench_tools.advise import model

    monkeypatch.setitem(model.DTYPE_BYTES, "fp32", 2)
    monkeypatch.setitem(model.DTYPE_BYTES, "bf16", 1)
    assert any(m.startswith("gemm_e2e") for m in misses(leave_one_out(h100)))


def test_gemm_flop_is_benchs_count(h100: Run) -> None:
    rows = h100.rows[h100.rows["kind"].isin(["gemm_kernel", "gemm_e2e", "gemm_cpu"])]
    assert len(rows) > 200
    for _, p in rows.iterrows():
        assert GemmShape(*p["mnk"]).flop == p["flop"], p["name"]


def test_mlp_step_products_are_benchs_flop_count(h100: Run) -> None:
    """The layer products of a step (forward, weight gradient, input gradient below the first
    layer) add up to bench's FLOP count of every MLP row, on every data set and depth."""
    rows = h100.rows[h100.rows["kind"] == "mlp"].dropna(subset=["flop", "epochs"])
    assert len(rows) > 100
    depths = set()
    for _, p in rows.iterrows():
        config = mlp_config_of(p)
        assert config is not None, p["name"]
        depths.add(config.layers)
        assert config.flop * p["epochs"] == pytest.approx(p["flop"], rel=1e-12), p["name"]
    assert depths == {1, 2}


def test_mlp_kernels_per_step_is_benchs(h100: Run) -> None:
    rows = h100.rows
    for _, p in rows[(rows["kind"] == "mlp") & (rows["variant"] == "eager")].iterrows():
        if p["backend"] == "gpu":
            config = mlp_config_of(p)
            assert config is not None
            assert config.kernels_per_step == p["kernels_per_step"], p["name"]


def test_step_seconds_is_t_epoch_for_one_step_epochs(h100: Run) -> None:
    """The advisor's measured step time is the table's `t_step`: one SGD step, t_epoch on
    this run, whose epochs are one full-batch step each."""
    mlp = h100.rows[h100.rows["kind"] == "mlp"]
    assert len(mlp) > 100
    for step, epoch in zip(mlp["t_step"], mlp["t_epoch"]):
        assert step == pytest.approx(epoch)


# --- the curves ----------------------------------------------------------------------------------


def _curve(*points: tuple[tuple[int, int, int], float], family: str = "square") -> pd.DataFrame:
    """GPU fp32 rows of one family, as Advisor.curves holds them."""
    rows = [dict(m=m, n=n, k=k, flop=2.0 * m * n * k, seconds=t) for (m, n, k), t in points]
    return pd.DataFrame(rows).assign(backend="gpu", dtype="fp32", threads=0, family=family)


def test_interpolation_is_linear_in_log_flop_and_log_rate() -> None:
    # 64^3 at 1 us and 256^3 at 16 us: 128^3 lies halfway in log FLOP.
    curve = _curve(((64, 64, 64), 1e-6), ((256, 256, 256), 16e-6))
    lk = lookup(curve, GemmShape(128, 128, 128))
    assert lk is not None and lk.where == "interpolated" and not lk.extrapolated
    assert lk.seconds == pytest.approx(math.sqrt(1e-6 * 16e-6))


def test_exact_shape_is_the_measurement() -> None:
    curve = _curve(((64, 64, 64), 1e-6), ((256, 256, 256), 16e-6))
    lk = lookup(curve, GemmShape(256, 256, 256))
    assert lk is not None and lk.where == "measured" and lk.seconds == 16e-6


def test_above_the_range_holds_the_rate_and_says_so() -> None:
    curve = _curve(((64, 64, 64), 1e-6), ((256, 256, 256), 16e-6))
    lk = lookup(curve, GemmShape(512, 512, 512))
    assert lk is not None and lk.where == "above" and lk.extrapolated
    assert lk.seconds == pytest.approx(16e-6 * 8)


def test_below_the_range_follows_the_smallest_sizes_trend_within_bounds() -> None:
    fixed = _curve(((64, 64, 64), 5e-6), ((128, 128, 128), 5e-6))  # all fixed cost
    lk = lookup(fixed, GemmShape(16, 16, 16))
    assert lk is not None and lk.where == "below" and lk.seconds == pytest.approx(5e-6)
    busy = _curve(((64, 64, 64), 1e-6), ((128, 128, 128), 8e-6))  # all arithmetic
    lk = lookup(busy, GemmShape(32, 32, 32))
    assert lk is not None and lk.seconds == pytest.approx(1e-6 / 8)


def test_a_slow_small_shape_does_not_slow_its_neighbours() -> None:
    curve = _curve(((16, 128, 128), 54e-6), ((1024, 128, 128), 10e-6), ((1, 128, 128), 6e-6))
    lk = lookup(curve, GemmShape(64, 128, 128))
    assert lk is not None and lk.seconds <= 10e-6
    # ... while the shape itself keeps its measurement.
    lk = lookup(curve, GemmShape(16, 128, 128))
    assert lk is not None and lk.seconds == 54e-6


def test_a_family_that_spans_the_size_beats_a_nearer_one_that_does_not() -> None:
    deepbench = _curve(((2048, 16, 2048), 20e-6), ((2048, 128, 2048), 30e-6), family="deepbench")
    square = _curve(*(((n, n, n), t) for n, t in ((64, 5e-6), (256, 8e-6), (1024, 60e-6))))
    table = pd.concat([deepbench, square], ignore_index=True)
    near = lookup(table, GemmShape(2048, 64, 2048))
    assert near is not None and near.family == "deepbench" and near.where == "interpolated"
    # 1024 x 4 x 1024 is 8.4M FLOP: below the deepbench sizes, inside the squares'.
    small = lookup(table, GemmShape(1024, 4, 1024))
    assert small is not None and small.family == "square" and small.where == "interpolated"
    # No rows of a dtype (Advisor.curves has no such key), no answer.
    assert lookup(None, GemmShape(64, 64, 64)) is None
    assert lookup(table.iloc[:0], GemmShape(64, 64, 64)) is None


def test_shapes_unlike_any_measured_one_are_flagged(h100: Run) -> None:
    advisor = Advisor(h100)
    assert not advisor.gpu_gemm(GemmShape(1000, 1000, 1000), "fp32").unlike_measured
    assert advisor.gpu_gemm(GemmShape(3, 5, 100000), "fp32").unlike_measured


def test_skinny_products_are_held_to_the_memory_bandwidth(h100: Run) -> None:
    advisor = Advisor(h100)
    shape = GemmShape(65536, 10, 512)
    lk = advisor.gpu_gemm(shape, "fp32")
    bw = h100.ctx_float("gpu_memory_bandwidth_bytes_per_s")
    assert bw is not None
    assert lk.seconds >= 4 * sum(shape.elements()) / bw * (1 - 1e-12)


def test_readme_points_to_the_advisor_page() -> None:
    readme = (REPO / "README.md").read_text()
    assert "gpubench-advise" in readme and "(docs/advisor.md)" in readme
