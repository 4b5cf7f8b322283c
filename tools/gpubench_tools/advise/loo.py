"""Leave-one-out accuracy: how well the advisor predicts rows it was not given.

For every measured end-to-end GEMM row, the row and every other GEMM row of the same shape (m, n,
k: the kernel-only rows of every dtype, the other host-memory kind, the CPU rows) are removed;
the advisor then predicts the row from what is left (neighbouring sizes and the overhead probes)
and is compared with the measurement. Likewise every eager MLP row, without any GEMM row at one
of its layer products' shapes (no MLP row feeds a prediction, so the rows of its network and
batch are left out as it is). The transfer and launch probes are never removed: they are the
model's parameters, not rows of the same shape.

Reported per class of rows: the median and 90th percentile of |predicted - measured| / measured,
and the fraction of rows where the predicted winner (the faster of the CPU, best thread count,
and the GPU) is the measured winner (where the run measured the CPU at that shape too). The
CPU's own predictions are scored the same way, each CPU row without the rows of its shape.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..overhead_model import OverheadModel, build_model
from .curves import GemmShape, lookup
from .model import Advisor, Run, mlp_config_of

# What leave_one_out measured on the committed H100 run (reports/baselines/h100-80gb-hbm3-*.json),
# quoted in the advisor's answers and in docs/advisor.md; tests/tools/test_advise_accuracy.py
# recomputes it and fails when the model no longer reaches it.
REPORTED_ACCURACY: dict[str, dict[str, float]] = {
    "gemm_e2e": {"median": 0.145, "p90": 0.406, "winner": 0.900},  # 84 rows; winner: 72 of 80
    "mlp_eager": {"median": 0.212, "p90": 0.442, "winner": 0.919},  # 38 rows; winner: 34 of 37
}
TITLES = {
    "gemm_e2e": "end-to-end GEMM rows, GPU time",
    "mlp_eager": "eager MLP rows, GPU time per step",
    "gemm_cpu": "CPU GEMM rows, CPU time",
    "mlp_cpu": "OpenBLAS MLP rows, CPU time per step",
}
CASE_COLUMNS = ["name", "predicted", "measured", "predicted_winner", "measured_winner"]


@dataclass
class LooClass:
    title: str
    cases: pd.DataFrame  # CASE_COLUMNS, extrapolated and rel_error, a row per predicted row

    def _stat(self, values: pd.Series, q: float) -> float:
        return float(np.percentile(values, q)) if len(values) else math.nan

    @property
    def median(self) -> float:
        return self._stat(self.cases["rel_error"].abs(), 50)

    @property
    def p90(self) -> float:
        return self._stat(self.cases["rel_error"].abs(), 90)

    @property
    def bias(self) -> float:
        """Median signed error: positive when the model predicts too slow."""
        return self._stat(self.cases["rel_error"], 50)

    def winners(self) -> pd.DataFrame:
        return self.cases.dropna(subset=["predicted_winner", "measured_winner"])

    @property
    def winner_agreement(self) -> float:
        w = self.winners()
        return float((w["predicted_winner"] == w["measured_winner"]).mean()) if len(w) else math.nan

    def summary(self) -> dict[str, float | int | None]:
        """The numbers, None where there were no rows to compute one from (JSON has no NaN)."""

        def num(x: float) -> float | None:
            return x if math.isfinite(x) else None

        return {
            "rows": len(self.cases),
            "median_abs_rel_error": num(self.median),
            "p90_abs_rel_error": num(self.p90),
            "median_rel_error": num(self.bias),
            "winner_rows": len(self.winners()),
            "winner_agreement": num(self.winner_agreement),
        }


@dataclass
class LooReport:
    run: Run
    classes: dict[str, LooClass]


def _winner(cpu: pd.Series, gpu: float) -> str | None:
    """The measured winner, where the run measured the CPU too."""
    if cpu.empty or not cpu.min() > 0:
        return None
    return "gpu" if gpu < cpu.min() else "cpu"


def leave_one_out(run: Run, overhead: OverheadModel | None = None) -> LooReport:
    """Every class of rows predicted one by one; `overhead` replaces the model fitted from the
    run's probes (the tests pass a broken one to see the accuracy check fail)."""
    if overhead is None:
        overhead = build_model(run.rows[run.rows["backend"] == "gpu"])
    rows = run.rows
    gemm = rows["kind"].isin(["gemm_kernel", "gemm_e2e", "gemm_cpu"])
    cases: dict[str, list[dict[str, Any]]] = {key: [] for key in TITLES}

    def case(key: str, row: pd.Series, *values: Any, winners: Any = (None, None)) -> None:
        """`values`: predicted, measured, extrapolated; `winners`: predicted, measured."""
        predicted, measured, extrapolated = values
        found = dict(zip(CASE_COLUMNS, (row["name"], predicted, measured, *winners)))
        cases[key].append(dict(found, extrapolated=extrapolated))

    for _, p in rows[rows["kind"].isin(["gemm_e2e", "gemm_cpu"])].iterrows():
        advisor = Advisor(run, gemm & rows["mnk"].isin([p["mnk"]]), overhead)
        shape = GemmShape(*p["mnk"])
        if p["kind"] == "gemm_e2e":
            advice = advisor.gemm(shape, p["dtype"], p["host"])
            measured = p["t_wall"] if pd.notna(p["t_wall"]) else p["time_s"]
            winners = advice.winner, _winner(advice.measured_cpu["time_s"], measured)
            case("gemm_e2e", p, advice.gpu_total, measured, advice.extrapolated, winners=winners)
        elif (
            lk := lookup(advisor.curves.get(("cpu", p["dtype"], p["threads"])), shape)
        ) is not None:
            case("gemm_cpu", p, lk.seconds, p["time_s"], lk.extrapolated)

    for _, p in rows[rows["kind"] == "mlp"].iterrows():
        config = mlp_config_of(p)
        gpu = p["backend"] == "gpu"
        if config is None or p["variant"] != ("eager" if gpu else "openblas"):
            continue
        shapes = [s.mnk for _, s in config.products()]
        advice = Advisor(run, gemm & rows["mnk"].isin(shapes), overhead).mlp(config)
        if gpu:
            winners = advice.winner, _winner(advice.measured_cpu["t_step"], p["t_step"])
            case(
                "mlp_eager", p, advice.gpu_total, p["t_step"], advice.extrapolated, winners=winners
            )
        for est in (e for e in advice.cpu if not gpu and e.threads == p["threads"]):
            case("mlp_cpu", p, est.seconds, p["t_step"], est.extrapolated)

    classes: dict[str, LooClass] = {}
    for key, found in cases.items():
        if found:
            frame = pd.DataFrame(found).reindex(columns=[*CASE_COLUMNS, "extrapolated"])
            frame["rel_error"] = (frame["predicted"] - frame["measured"]) / frame["measured"]
            classes[key] = LooClass(TITLES[key], frame)
    return LooReport(run, classes)
