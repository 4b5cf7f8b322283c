"""The report: the answer first, numbers that match the data, noise marked, and the three inputs a
user has (a CPU-only run with the committed reference, the committed H100 files alone, and runs
with CNN and mixed-precision rows). Asserts numbers and structure, not the wording of sentences.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from conftest import BASELINES, CPU_RUN, FIXTURES, gb_row, write_bench_json

from gpubench_tools.report.build import build_document
from gpubench_tools.table import load_table


def _document(tmp_path: Path, inputs: list[str], reference: list[str] = ()) -> dict[str, Any]:
    return build_document(load_table(inputs, reference), tmp_path)


def _answer(doc: dict[str, Any], anchor: str) -> dict[str, Any]:
    (row,) = [r for r in doc["answer"] if r["anchor"] == anchor]
    return row


def _section(doc: dict[str, Any], section_id: str) -> dict[str, Any]:
    (section,) = [s for s in doc["sections"] if s["id"] == section_id]
    return section


def _table(section: dict[str, Any], first_header: str) -> dict[str, Any]:
    (table,) = [t for t in section["tables"] if t["headers"][0] == first_header]
    return table


@pytest.fixture(scope="module")
def h100_doc(reference_doc: dict[str, Any]) -> dict[str, Any]:
    return reference_doc


def test_the_h100_files_alone_answer_for_gemm_and_the_mlp(h100_doc: dict[str, Any]) -> None:
    assert [r["anchor"] for r in h100_doc["answer"]][:2] == ["gemm", "gemm-bf16"]
    gemm = _answer(h100_doc, "gemm")
    # The committed run's own CPU (16 threads at most) against its GPU, both "this run".
    assert gemm["measured"] == "CPU: this run · GPU: this run"
    crossover = float(re.search(r"n ≈ (\d+)", gemm["crossover"]).group(1))
    assert 64 <= crossover <= 256
    iris = _answer(h100_doc, "mlp-iris")
    assert "fused" not in iris["wins"]  # a size, not a path


def test_gemm_breakdown_at_n16_is_under_utilisation_not_work(h100_doc: dict[str, Any]) -> None:
    """The pinned H100 numbers: H2D 8.3 us, D2H 5.2 us, compute event 12.3 us for 8,192 flop,
    overhead 7.3 us. The 12.3 us are under-utilisation; at n=4096 work at peak dominates. At
    n=16 the memory roof binds (3,072 bytes at 3.35 TB/s outlast 8,192 flop at the peak), a
    sliver either way."""
    table = _table(_section(h100_doc, "breakdown"), "n")
    rows = {r[0]: r for r in table["rows"]}
    transfer, overhead, under, at_peak, memory, total, largest = rows["16"][1:]
    assert (transfer, overhead, under) == ("13.5 us", "7.26 us", "12.3 us")
    assert at_peak == "0 ns" and memory == "0.916 ns"
    assert rows["4096"][5] == "0 ns"  # the compute roof binds: no memory part
    assert largest == "transfer"
    # At n=4096 work at peak is the larger part of the compute (2.05 ms against 0.595 ms).
    assert rows["4096"][3:5] == ["595 us", "2.05 ms"]


def test_the_iris_eager_step_is_mostly_launch_overhead(h100_doc: dict[str, Any]) -> None:
    table = _table(_section(h100_doc, "breakdown"), "GPU path")
    eager = [r for r in table["rows"] if r[0] == "eager readback:0"]
    assert eager and eager[0][-1] == "overhead"


def test_every_chart_exists_and_has_a_short_title(
    mixed_doc: dict[str, Any], tmp_path: Path
) -> None:
    charts = [c for s in mixed_doc["sections"] for c in s["charts"]]
    assert charts
    for chart in charts:
        assert len(chart["alt"]) <= 140


def test_cnn_and_mixed_precision_rows_reach_the_answer(tmp_path: Path) -> None:
    """HAND-MADE GPU rows (fixtures/cnn_gpu_synthetic.json, handmade_rows.py), labelled as such
    in their context: no GPU has run the CNN or mixed-precision rows yet."""
    from handmade_rows import CONTEXT, cpu_mlp_rows, gpu_mlp_rows

    gpu = write_bench_json(tmp_path / "handmade-gpu.json", gpu_mlp_rows(), CONTEXT)
    cpu = write_bench_json(
        tmp_path / "handmade-cpu.json", cpu_mlp_rows(), dict(CONTEXT, gpu="none")
    )
    doc = _document(tmp_path / "mixed", [str(cpu)], [str(gpu)])
    mixed = _answer(doc, "mixed")
    assert mixed["measured"] == "CPU: this run · GPU: reference run"
    # The speedup stated is the fastest CPU step over the fastest GPU step (bf16, batch 120).
    rows = load_table([str(cpu)], [str(gpu)]).rows
    bf16 = rows[
        (rows["precision"] == "bf16") & (rows["batch"] == 120) & (rows["readback"] == 0)
        | (rows["precision"] == "bf16") & (rows["batch"] == 120) & (rows["backend"] == "cpu")
    ]
    cpu_step = bf16.loc[bf16["backend"] == "cpu", "t_step"].min()
    gpu_step = bf16.loc[bf16["backend"] == "gpu", "t_step"].min()
    slower = r"( \([\d.]+x slower\))?"  # a speedup below 1 also says how many times slower
    assert re.fullmatch(
        r"[\d.]+x†" + slower + r" at batch 120 \((eager|graph|fused)\)", mixed["ends"]
    )
    assert float(mixed["ends"].split("x")[0]) == pytest.approx(cpu_step / gpu_step, rel=0.05)
    doc = _document(
        tmp_path / "cnn",
        [str(FIXTURES / "cnn_cpu.json")],
        [str(FIXTURES / "cnn_gpu_synthetic.json")],
    )
    cnn = _answer(doc, "cnn")
    assert cnn["crossover"] != "—" and "best of" in cnn["cpu_config"]


def test_the_page_opens_with_the_answer_then_contents_then_sections(
    mixed_report: dict[str, Any],
) -> None:
    assert mixed_report["code"] == 0, mixed_report["stderr"]
    tmp_path = mixed_report["out"]
    html = (tmp_path / "report.html").read_text()
    answer, contents = html.index('id="answer"'), html.index("<nav>")
    first_figure, hardware = html.index("<figure>"), html.index('id="hardware"')
    assert answer < contents < first_figure < hardware
    # Raw context keys only in the folded appendix block.
    assert html.count("cpu_fp32_flop_per_cycle_per_core") == html[hardware:].count(
        "cpu_fp32_flop_per_cycle_per_core"
    )
    md = (tmp_path / "report.md").read_text()
    assert md.index("## The answer") < md.index("**Contents**") < md.index("## Hardware")


def test_thread_scaling_names_every_cpu_configuration(tmp_path: Path) -> None:
    doc = _document(tmp_path, [CPU_RUN])
    rows = _table(_section(doc, "threads"), "benchmark")["rows"]
    # Each benchmark at its most threads: 2 on the machine that wrote the fixture.
    assert {r[1] for r in rows} == {"2"}
    two = [float(r[2].rstrip("x")) for r in rows]
    assert two and all(0.5 < s < 2.5 for s in two)


def test_mixed_precision_is_set_against_fp32_on_the_same_path(tmp_path: Path) -> None:
    """HAND-MADE rows (handmade_rows.py): the eager 4096x4096 step at batch 4096 takes 1.00 ms in
    fp32 and 400 us in bf16, so mixed precision is 2.5x; on Iris it is slower (0.9x)."""
    from handmade_rows import CONTEXT, gpu_mlp_rows

    gpu = write_bench_json(tmp_path / "handmade-gpu.json", gpu_mlp_rows(), CONTEXT)
    doc = _document(tmp_path / "r", [str(gpu)])
    (table,) = [t for t in _section(doc, "peers")["tables"] if t["headers"][1] == "bf16"]
    ratios = {r[0]: r[3] for r in table["rows"]}
    case = "backend=gpu variant=eager data=synthetic hidden=4096 batch=4096 readback=0"
    assert ratios[case] == "2.5x†"
    assert ratios["backend=gpu variant=eager data=iris hidden=10 batch=120 readback=0"] == "0.9x†"


def test_the_cnn_profile_groups_operations_by_kind(tmp_path: Path) -> None:
    doc = _document(
        tmp_path, [str(FIXTURES / "cnn_cpu.json")], [str(FIXTURES / "cnn_gpu_synthetic.json")]
    )
    (chart,) = _section(doc, "profile")["charts"]
    assert chart["alt"] == "Where a CNN training step goes, batch 64"
    from gpubench_tools.report.gpu_time import operation_kind
    from gpubench_tools.report.topics import TOPICS

    (profile,) = [t.profile for t in TOPICS if t.profile is not None]
    kinds = {
        operation_kind(f"t_op:{op}", profile.kinds)
        for op in (
            "conv2.weight_gradient",
            "fc1.forward",
            "conv1.im2col",
            "conv3.bias_gradient",
            "pool2.backward",
            "update",
            "launch_gaps",
        )
    }
    assert kinds == {"GEMM", "im2col", "bias", "pool", "update", "launch gaps"}


def test_a_gpu_row_without_a_flop_count_keeps_three_parts_and_says_why(tmp_path: Path) -> None:
    """HAND-MADE rows: an end-to-end GEMM whose file has no flop counter. Its compute time is
    shown unsplit with the reason, in the table and as its own part of the bar."""
    label = "workload=matmul backend=gpu variant=cublas_e2e dtype=fp32 shape=square host=pinned"
    parts = {"t_h2d": 4e-6, "t_d2h": 2e-6, "t_compute": 10e-6, "t_overhead": 3e-6}
    rows = [
        gb_row(f"matmul/gpu/cublas_e2e/dtype:fp32/host:pinned/m:{n}/n:{n}/k:{n}/manual_time",
               19e-6, {"m": n, "n": n, "k": n, **parts}, label)  # fmt: skip
        for n in (16.0, 32.0)
    ]
    context = {"cpu_model": "Test CPU", "gpu": "NVIDIA Test GPU", "gpu_peak_fp32_flops": "5e13"}
    doc = _document(tmp_path, [str(write_bench_json(tmp_path / "noflop.json", rows, context))])
    table = _table(_section(doc, "breakdown"), "n")
    assert table["rows"][0] == [
        "16", "6.00 us", "3.00 us", "10.0 us compute, not split: no flop count", "—", "—",
        "19.0 us", "compute (not split)",
    ]  # fmt: skip
    svg = (tmp_path / "breakdown_gemm.svg").read_text()
    assert "compute (not split)" in svg


def test_allocation_costs_are_the_median_and_slowest_decile_of_the_repetitions(
    tmp_path: Path,
) -> None:
    """HAND-MADE probes (handmade_rows.py): ten repetitions at base x (1.0, 1.1, 0.9, 1.05,
    0.95, 1.2, 1.0, 0.98, 1.02, 3.0): the median is 1.01x the base and the slowest decile (the
    9th of 10 sorted, a measured value) 1.2x, where an interpolated 90th percentile would be
    1.38x. The warm pool saves (2 + 1) / 0.5 = 6x at 4 KiB and (500 + 300) / 0.6 = 1333x at 1 GiB.
    """
    from handmade_rows import (
        ALLOC_BASE,
        ALLOC_SIZES,
        CONTEXT,
        MEDIAN_FACTOR,
        P90_FACTOR,
        alloc_rows,
    )

    from gpubench_tools.report import resources

    path = write_bench_json(tmp_path / "alloc.json", alloc_rows(), CONTEXT)
    costs = resources.allocation_costs(load_table([str(path)]).rows)
    assert len(costs) == len(ALLOC_BASE) * len(ALLOC_SIZES)
    assert set(costs["repetitions"]) == {10}
    probe = {("malloc", "device"): "malloc/device", ("free", "device"): "free/device"}
    probe |= {("async", "device"): "async", ("malloc", "pinned"): "malloc/pinned"}
    probe |= {("free", "pinned"): "free/pinned"}
    for key, bases in ALLOC_BASE.items():
        rows = costs[costs["probe"] == probe[key]].sort_values("bytes")
        assert list(rows["bytes"]) == list(ALLOC_SIZES)
        assert rows["time_s"].tolist() == pytest.approx([b * MEDIAN_FACTOR for b in bases])
        assert rows["slowest_decile_s"].tolist() == pytest.approx([b * P90_FACTOR for b in bases])
    savings = resources.pool_savings(costs).set_index("bytes")["saving"]
    assert savings[4096] == pytest.approx(6.0)
    assert savings[1024 * 2**20] == pytest.approx(800 / 0.6)
    # A file of aggregates only: one value per probe, the median aggregate, and no decile.
    path = write_bench_json(tmp_path / "agg.json", alloc_rows(aggregates_only=True), CONTEXT)
    costs = resources.allocation_costs(load_table([str(path)]).rows)
    assert set(costs["repetitions"]) == {1} and costs["slowest_decile_s"].isna().all()
    doc = _document(tmp_path / "r", [str(path)])
    section = _section(doc, "allocation")
    assert [c["png"] for c in section["charts"]] == ["allocation.png"]
    assert {r[3] for r in _table(section, "call")["rows"]} == {"—"}
    assert (tmp_path / "r" / "allocation.png").is_file()
    # A probe the report does not name yet is shown under its own name, after the known ones.
    label = "workload=overhead backend=gpu variant=alloc_managed"
    managed = gb_row("overhead/alloc/managed/bytes:4096/manual_time", 1e-6, {}, label)
    path = write_bench_json(tmp_path / "new.json", alloc_rows() + [managed], CONTEXT)
    calls = [
        r[0]
        for r in _table(_section(_document(tmp_path / "n", [str(path)]), "allocation"), "call")[
            "rows"
        ]
    ]
    assert calls[-1] == "managed" and calls.count("managed") == 1


def test_device_memory_sets_the_measured_peak_against_the_model(tmp_path: Path) -> None:
    """HAND-MADE rows: every MLP row's peak is its model plus 8 MiB rounded up to 2 MiB pages,
    the CNN largest-batch row measured 72 GB against 70 GB, the bf16 MLP one did not fit."""
    from handmade_rows import CONTEXT, gpu_mlp_rows, largest_batch_rows

    from gpubench_tools.report import resources

    rows = gpu_mlp_rows() + largest_batch_rows()
    path = write_bench_json(tmp_path / "handmade-gpu.json", rows, CONTEXT)
    table = load_table([str(path)])
    from gpubench_tools.report.analysis import summary_of

    agreement = resources.memory_agreement(summary_of(table.rows))
    assert len(agreement) == len(gpu_mlp_rows()) + 1
    mlp = agreement[agreement["workload"] == "mlp"]
    assert (
        (mlp["device_bytes_peak"] - mlp["device_bytes_model"]).between(8 * 2**20, 10 * 2**20).all()
    )
    cnn = agreement[agreement["workload"] == "memory"]
    assert cnn["ratio"].tolist() == pytest.approx([72 / 70])
    doc = _document(tmp_path / "r", [str(path)])
    section = _section(doc, "memory")
    assert [c["png"] for c in section["charts"]] == ["memory_model.png"]
    table_rows = _table(section, "benchmark")["rows"]
    assert len(table_rows) == len(agreement)
    # Largest disagreement first: the smallest Iris model under its fixed 8 MiB.
    assert table_rows[0][0].startswith("mlp/gpu/") and "iris" in table_rows[0][0]
    # The trained largest batch and the one that did not fit are both told.
    text = " ".join(section["paragraphs"])
    assert "largest_batch/net:cnn" in text and "9000" in text
    assert "net:mlp" in text and "does not fit" in text


# The first GPU run of the CNN, mixed precision, the memory meter and NVML (an H200), with the
# PyTorch references measured beside it: real rows the hand-made fixtures cannot stand in for.
H200 = BASELINES / "h200-43879cd"


def test_the_h200_run_with_its_references_reports_energy_and_keeps_pytorch_a_peer(
    tmp_path: Path,
) -> None:
    inputs = [str(p) for p in sorted(H200.glob("h200-*.json"))]
    doc = _document(tmp_path, inputs)
    energy = _section(doc, "energy")
    (table,) = energy["tables"]
    sizes = [row[1] for row in table["rows"]]
    # A size key whose value is not a number (hidden 4096x2 beside 4096) is written as named.
    assert "hidden 4096, batch 4096" in sizes, sizes
    assert all(row[3].endswith(" J") for row in table["rows"])
    # PyTorch's CPU rows (torch_cnn.py's 16-thread run) are a peer, never the CNN's CPU side.
    cnn = _answer(doc, "cnn")
    assert cnn["paths"] == [] and cnn["why"] == "no CPU rows to compare", cnn
