"""The advisor reads the memory roofs the run measured: a CPU product is no faster than moving
its operands at the host's triad, and the GPU's floor is the device triad before the driver's
figure; a run from before bench measured them keeps its old answers."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pytest

from gpubench_tools.advise.curves import GemmShape, Lookup
from gpubench_tools.advise.model import HOST_ROOF as HOST
from gpubench_tools.advise.model import Advisor, Run, bandwidth_floor

SHAPE = GemmShape(4096, 4096, 4096)
FAST = Lookup(1e-6, "cpu", "fp32", "square", 1, "measured", (1.0, 2.0), SHAPE, False)


def _advisor(**context: float) -> Advisor:
    advisor = Advisor.__new__(Advisor)  # only the run's context is read here
    advisor.run = Run(pd.DataFrame(), [], None, "cpu", {k: str(v) for k, v in context.items()})
    return advisor


def test_a_cpu_product_is_floored_at_the_measured_triad() -> None:
    advisor = _advisor(
        cpu_bandwidth_1thread_bytes_per_s=20e9, cpu_bandwidth_all_cores_bytes_per_s=30e9
    )
    assert advisor.cpu_bandwidth(1) == 20e9 and advisor.cpu_bandwidth(2) == 30e9
    floored = bandwidth_floor(FAST, SHAPE, "fp32", advisor.cpu_bandwidth(1), HOST)
    assert floored.seconds == pytest.approx(3 * 4096 * 4096 * 4 / 20e9)
    assert floored.floor == "host memory bandwidth"
    slow = replace(FAST, seconds=1.0)
    assert bandwidth_floor(slow, SHAPE, "fp32", 20e9, HOST) == slow


def test_without_measured_roofs_the_answers_stay_as_they_were() -> None:
    advisor = _advisor(gpu_memory_bandwidth_bytes_per_s=3e12)
    assert advisor.cpu_bandwidth(1) is None
    assert bandwidth_floor(FAST, SHAPE, "fp32", None, HOST) == FAST
    assert advisor.gpu_bandwidth() == 3e12
    measured = _advisor(
        gpu_memory_bandwidth_bytes_per_s=3e12, gpu_bandwidth_measured_bytes_per_s=2.8e12
    )
    assert measured.gpu_bandwidth() == 2.8e12
