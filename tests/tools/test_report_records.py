"""The report's records, checked directly: the typed summary every section reads, a topic's path
facts, and the sections' steps, which ask for their charts (`Drawing`) and draw none."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import REPO

from gpubench_tools.report.analysis import PathCurve, typed
from gpubench_tools.report.build import machine_labels
from gpubench_tools.report.context import Context, Drawing
from gpubench_tools.report.gpu_time import Breakdown, FixedCosts, gpu_time
from gpubench_tools.report.pages import page, topic_page
from gpubench_tools.report.resources import Threads, resources
from gpubench_tools.report.speedups import speedups
from gpubench_tools.report.words import say
from gpubench_tools.table import load_table

H100 = [str(REPO / "reports" / "baselines" / f"h100-80gb-hbm3-{w}.json") for w in ("matmul", "mlp")]


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory) -> Context:
    return Context.of(load_table(H100), tmp_path_factory.mktemp("charts"))


def test_the_table_is_typed_at_load() -> None:
    rows = load_table(H100).rows
    # A file writes the peaks as strings; the table holds them as numbers, as every counter.
    assert rows["context.gpu_peak_fp32_flops"].dtype == np.float64
    assert rows["context.gpu_peak_fp32_flops"].max() == pytest.approx(6.69082e13)
    assert all(rows[c].dtype == np.float64 for c in ("t_h2d", "flop", "kernels", "pct_peak"))


def test_the_typed_summary_has_every_counter_and_each_median_flags() -> None:
    summary = pd.DataFrame(
        {
            "repetitions": [2, 5, 5, 5],
            "spread": [0.1, 0.3, 0.1, 0.1],
            "conditions": ["quiet", "quiet", "disturbed", "conditions unknown"],
        }
    )
    out = typed(summary)
    assert out["_few"].tolist() == [True, False, False, False]
    assert out["_disturbed"].tolist() == [False, False, True, False]
    assert out["_flagged"].tolist() == [True, True, True, False]
    # A counter no row has is a column of NaN: no section asks whether it is there.
    assert out["gpu_energy_j"].isna().all() and out["threads"].isna().all()


def test_a_path_states_where_the_gpu_wins_and_how_much_slower_it_is(ctx: Context) -> None:
    found = speedups(ctx)
    (machine,) = found.pairs["gemm"]
    path = machine.paths[-1]
    assert isinstance(path, PathCurve) and path.facts is not None
    facts, curve = path.facts, path.curve
    assert facts["wins_from"] == min(facts["wins"])
    first = facts["first"]
    # The smallest GEMM loses: the record says by how much; a win has no `slower`.
    assert 0 < first["speedup"] < 1 and first["slower"] == pytest.approx(1 / first["speedup"])
    assert facts["last"]["speedup"] > 1 and facts["last"]["slower"] is None
    assert list(curve["n"]) == sorted(curve["n"])


def test_the_sections_are_records_their_pages_ask_for_charts_and_draw_none(ctx: Context) -> None:
    found = speedups(ctx)
    others, thin = resources(ctx, found.pairs)
    timed = gpu_time(ctx)
    assert [type(r) for r in timed] == [Breakdown, FixedCosts]
    assert isinstance(others[0], Threads)
    # A record holds numbers and rows, not words: the breakdown's bars by size carry no names.
    gemm, *_ = timed[0].views
    assert gemm.view.size == "n" and "bar" not in gemm.rows and gemm.ranges is not None
    labels = machine_labels(ctx.table)
    pages = [topic_page(ctx, labels, t)[1] for t in found.topics]
    sections = [s for s in pages if s is not None] + [page(ctx, labels, r) for r in timed + others]
    ids = [s["id"] for s in sections]
    assert ids[0] == "gemm" and ids.index("breakdown") < ids.index("model") < ids.index("threads")
    charts = [c for s in sections for c in s["charts"]]
    assert charts and all(isinstance(c, Drawing) for c in charts)
    assert not list(Path(ctx.out).iterdir())  # nothing drawn before build's one step
    # Whose thin medians: the reference-less H100 run's own CPU and GPU rows.
    assert {side for _, side, _ in found.thin | thin} <= {"cpu", "gpu"}


def test_words_take_their_values_by_name() -> None:
    assert say("threads", worst=0.5, best=0.9)[0].endswith(
        "reaches 50% to 90% of ideal scaling (efficiency = speedup over 1 thread / threads)."
    )
    with pytest.raises(TypeError):
        say("threads", 0.5, 0.9)  # type: ignore[call-arg]
