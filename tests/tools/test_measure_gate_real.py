"""scripts/measure-gate-real.py: the candidate statistics, the pooled offset and the summary of
real gates (the figures docs/regression-gate.md states come from these)."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "measure-gate-real.py"


@pytest.fixture(scope="module")
def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("measure_gate_real", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["measure_gate_real"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_candidate_statistics(script: ModuleType) -> None:
    times = np.array([5.0, 3.0, 9.0, 4.0, 7.0])
    disturbed = np.array([False, True, False, False, True])
    assert script._quantile(0.0)(times, disturbed) == 3.0
    assert script._quantile(0.0, True)(times, disturbed) == 4.0  # 3.0 was disturbed
    assert script._quantile(0.5)(times, disturbed) == 5.0
    assert script._quantile(0.0, first=1)(times, disturbed) == 5.0
    # Every repetition disturbed: the candidate that leaves them out has no value for the process.
    assert script._quantile(0.0, True)(times, np.ones(5, dtype=bool)) is None


def test_pooled_offset_finds_the_centre(script: ModuleType) -> None:
    rng = np.random.default_rng(1)
    d = np.log(1.004) + rng.normal(0, 0.003, 400)
    centre, low, high = script.pooled_offset(d)
    assert low < centre < high
    assert centre == pytest.approx(0.4, abs=0.1) and high - low < 0.2


def run(slowdown: float, condition: str, exit_code: int, verdict: str, ratio: float) -> dict:
    other = {"verdict": "same", "ratio": 1.0, "interval": [0.99, 1.01], "pairs": 12}
    return {
        "slowdown": slowdown,
        "condition": condition,
        "exit": exit_code,
        "seconds": 20.0,
        "load_before": 1.0,
        "load_after": 1.5,
        "verdicts": {
            "m:64": other,
            "m:256": {"verdict": verdict, "ratio": ratio, "interval": [1, 1], "pairs": 24},
        },
        "log_ratios": {"m:64": [0.0] * 12, "m:256": [math.log(ratio)] * 12},
    }


def test_summary_counts_catches_with_wilson_intervals(script: ModuleType) -> None:
    runs = [run(0.05, "quiet", 1, "slower", 1.05) for _ in range(9)]
    runs += [run(0.05, "bursty", 1, "slower", 1.05) for _ in range(9)]
    runs += [run(0.05, "bursty", 3, "ambiguous", 1.04) for _ in range(2)]
    runs += [run(0.0, "quiet", 0, "same", 1.001) for _ in range(3)]
    summary = script.gates_summary({"slowed_size": 256, "runs": runs})
    five = summary["kinds"]["0.05 all"]
    assert five["gate_fail"]["hits"] == 18 and five["gate_fail"]["of"] == 20
    # The 95 % Wilson interval of 18 of 20.
    assert five["gate_fail"]["wilson95"] == pytest.approx([0.699, 0.972], abs=0.001)
    assert five["exits"] == {"0": 0, "1": 18, "2": 0, "3": 2}
    assert summary["kinds"]["0.05 bursty"]["slowed_benchmark_slower"]["hits"] == 9
    assert five["other_benchmarks_slower"] == {"hits": 0, "of": 20}
    assert summary["kinds"]["0.00 quiet"]["gate_fail"]["hits"] == 0
    offset = summary["same_binary_offset"]["m:256"]
    assert offset["pairs"] == 36 and offset["pooled_pct"] == pytest.approx(0.1, abs=1e-6)
    assert "| 5 % | bursty | 11 |" in script.gates_markdown({"slowed_size": 256, "runs": runs})
