"""The report's story as a reader meets it: every in-page link has its target, a training
workload's answer shows the framework-like (eager) GPU path beside the fastest one, a run
without GPU rows is told how to get the committed GPU side, files of the same name are told
apart, the † note says whose rows are thin, and hardware values read in their units.
Asserts numbers and structure, not the wording of sentences.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import COMMITTED, CPU_RUN, REFERENCE, write_bench_json

from gpubench_tools.report import main
from gpubench_tools.report.build import build_document
from gpubench_tools.report.context import distinct_names
from gpubench_tools.report.topics import COMMITTED_GPU_REFERENCE
from gpubench_tools.table import load_table


def _handmade(tmp_path: Path) -> tuple[list[str], list[str]]:
    """HAND-MADE rows (handmade_rows.py, labelled as such in their context): a CPU run and the
    GPU rows (mixed precision, memory, allocation probes, largest batch) as its reference."""
    from handmade_rows import CONTEXT, all_gpu_rows, cpu_mlp_rows

    gpu = write_bench_json(tmp_path / "handmade-gpu.json", all_gpu_rows(), CONTEXT)
    cpu = write_bench_json(
        tmp_path / "handmade-cpu.json", cpu_mlp_rows(), dict(CONTEXT, gpu="none")
    )
    return [str(cpu)], [str(gpu)]


def _two_cpu_runs_named_bench(tmp_path: Path) -> tuple[list[str], list[str]]:
    paths = []
    for folder in ("monday", "tuesday"):
        (tmp_path / folder).mkdir()
        paths.append(str(shutil.copy(CPU_RUN, tmp_path / folder / "bench.json")))
    return paths, []


CASES = {
    "cpu-only": lambda tmp: ([CPU_RUN], []),
    "cpu-with-reference": lambda tmp: ([CPU_RUN], REFERENCE),
    "committed-h100": lambda tmp: (COMMITTED, []),
    "handmade-gpu-rows": _handmade,
    "two-cpu-runs-both-bench-json": _two_cpu_runs_named_bench,
}


def _report(tmp_path: Path, inputs: list[str], reference: list[str]) -> tuple[str, str]:
    out = tmp_path / "out"
    args = [*inputs, *(["--gpu-reference", *reference] if reference else []), "--out", str(out)]
    assert main([*args, "--quiet"]) == 0
    return (out / "report.html").read_text(), (out / "report.md").read_text()


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_in_page_link_has_its_target(tmp_path: Path, case: str, request) -> None:
    # The session's reports of these files, made once for every test that reads them.
    shared = {"cpu-with-reference": "mixed_report", "committed-h100": "committed_report"}
    if case in shared:
        out = request.getfixturevalue(shared[case])["out"]
        html, md = (out / "report.html").read_text(), (out / "report.md").read_text()
    else:
        html, md = _report(tmp_path, *CASES[case](tmp_path))
    html_links = set(re.findall(r'href="#([^"]*)"', html))
    html_ids = set(re.findall(r'\sid="([^"]*)"', html))
    assert html_links and html_links <= html_ids, sorted(html_links - html_ids)
    md_links = set(re.findall(r"\]\(#([^)]*)\)", md))
    md_ids = set(re.findall(r'<a id="([^"]*)"></a>', md))
    assert md_links and md_links <= md_ids, sorted(md_links - md_ids)


def _doc(tmp_path: Path, inputs: list[str], reference: list[str] = ()) -> dict[str, Any]:
    return build_document(load_table(inputs, reference), tmp_path)


def _row(doc: dict[str, Any], anchor: str) -> dict[str, Any]:
    (row,) = [r for r in doc["answer"] if r["anchor"] == anchor]
    return row


def _speedup(text: str) -> float:
    return float(re.match(r"([\d.]+)x", text).group(1))


def test_the_iris_answer_sets_the_eager_path_against_the_fastest(
    committed_doc: dict[str, Any],
) -> None:
    """The committed H100 run: eager 81.2 us per step against the CPU's 1.94 us (42x slower,
    two thirds of the step launch overhead); the fused kernel 1.43 us, faster than the CPU."""
    iris = _row(committed_doc, "mlp-iris")
    eager, fastest = iris["paths"]
    assert (eager["path"], fastest["path"]) == ("eager", "fastest")
    assert 1 / _speedup(eager["ends"]) == pytest.approx(42, rel=0.05)
    assert "(eager)" in eager["ends"] and eager["why"].startswith("overhead")
    assert _speedup(fastest["ends"]) > 1 and "(fused)" in fastest["ends"]
    assert not fastest["why"].startswith("overhead")
    # The row's own fields are the fastest path's: the section's curve.
    assert iris["ends"] == fastest["ends"]


def test_every_training_workload_states_eager_and_fastest(committed_doc: dict[str, Any]) -> None:
    doc = committed_doc
    for anchor in ("mlp-iris", "mlp-digits", "mlp-sweep"):
        row = _row(doc, anchor)
        assert [p["path"] for p in row["paths"]] == ["eager", "fastest"]
        # Eager is one of the paths the fastest chooses from: never faster than it.
        eager, fastest = (_speedup(p["ends"].split("→")[-1].strip()) for p in row["paths"])
        assert eager <= fastest
    # The Iris section's table carries the eager path's time and speedup beside the fastest.
    (section,) = [s for s in doc["sections"] if s["id"] == "mlp-iris"]
    (table,) = section["tables"]
    assert "eager GPU time, speedup" in table["headers"]
    cell = table["rows"][0][table["headers"].index("eager GPU time, speedup")]
    assert cell.startswith("81.") and cell.endswith("0.024x")


def test_two_machines_share_the_eager_column_of_a_training_section(tmp_path: Path) -> None:
    """HAND-MADE rows (handmade_rows.py) on two machines (two GPUs): the Iris section's table has
    one eager column and a line per machine, each with its own machine's eager time."""
    from handmade_rows import CONTEXT, cpu_mlp_rows, gpu_mlp_rows

    files = [
        str(write_bench_json(tmp_path / f"{name}-{side}.json", rows, dict(CONTEXT, gpu=gpu)))
        for name, gpu in (("a", "NVIDIA A"), ("b", "NVIDIA B"))
        for side, rows in (("cpu", cpu_mlp_rows()), ("gpu", gpu_mlp_rows()))
    ]
    doc = build_document(load_table(files), tmp_path / "doc")
    (section,) = [s for s in doc["sections"] if s["id"] == "mlp-iris"]
    (table,) = section["tables"]
    assert table["headers"].count("eager GPU time, speedup") == 1
    lines = {
        row[0]: row[table["headers"].index("eager GPU time, speedup")] for row in table["rows"]
    }
    assert len(lines) == 2 and all(cell != "—" for cell in lines.values())


def test_a_run_without_gpu_rows_is_given_the_reference_line(
    tmp_path: Path, mixed_doc: dict[str, Any]
) -> None:
    doc = _doc(tmp_path, [CPU_RUN])
    suggestion = doc["suggestion"]
    assert "--gpu-reference" in suggestion and CPU_RUN in suggestion
    named = suggestion.split("--gpu-reference", 1)[1].split()
    assert [Path(p).name for p in named] == [Path(p).name for p in COMMITTED_GPU_REFERENCE]
    assert all(Path(p).is_file() for p in named)
    # With the reference given, nothing is suggested.
    assert mixed_doc["suggestion"] == ""


def test_files_of_the_same_name_are_listed_by_their_distinct_paths(tmp_path: Path) -> None:
    inputs, _ = _two_cpu_runs_named_bench(tmp_path)
    doc = _doc(tmp_path / "out", inputs)
    assert "monday/bench.json, tuesday/bench.json" in doc["inputs"]
    assert distinct_names(["x/a/run.json", "y/a/run.json", "z/b.json"]) == {
        "x/a/run.json": "x/a/run.json",
        "y/a/run.json": "y/a/run.json",
        "z/b.json": "b.json",
    }


def test_the_thin_note_says_whose_rows_can_be_rerun(
    tmp_path: Path, mixed_doc: dict[str, Any]
) -> None:
    """CPU-only fixture and the reference: both single repetitions. This run's rows can be
    rerun; the reference run's cannot (another machine). A 5-repetition CPU run is not thin:
    only the reference is named."""
    thin = mixed_doc["thin"]
    assert "cpu_only.json" in thin and "h100-80gb-hbm3-matmul.json" in thin
    assert thin.count("--benchmark_repetitions=5") == 1
    assert thin.index("cpu_only.json") < thin.index("--benchmark_repetitions") < thin.index("h100")

    from conftest import gb_row

    rows = [
        gb_row(f"matmul/cpu/openblas/dtype:fp32/m:{n}/n:{n}/k:{n}/threads:1", 1e-6 * n,
               {"m": n, "n": n, "k": n, "flop": 2.0 * n**3}, "dtype=fp32 shape=square",
               repetition_index=i, repetitions=5)
        for n in (16, 64, 256, 1024) for i in range(5)
    ]  # fmt: skip
    five = write_bench_json(tmp_path / "five.json", rows, {"cpu_model": "AMD EPYC", "gpu": "none"})
    thin = _doc(tmp_path / "five", [str(five)], REFERENCE)["thin"]
    assert "five.json" not in thin and "--benchmark_repetitions" not in thin
    assert "h100-80gb-hbm3-matmul.json" in thin


def test_hardware_values_read_in_their_units(reference_doc: dict[str, Any]) -> None:
    rows = {r[0]: r[1:] for r in reference_doc["appendix"]["rows"]}
    assert rows["GPU memory"] == ["79.2 GiB"]  # 85017493504 bytes
    assert rows["L2 cache"] == ["50 MiB"]
    assert rows["SM clock"] == ["1.98 GHz"]
    assert rows["GPU peak fp32"] == ["66.9 TFLOP/s"]
    assert not any("e+" in v for values in rows.values() for v in values)


def test_the_speedup_definition_names_each_side(committed_doc: dict[str, Any]) -> None:
    definition = committed_doc["speedup_definition"]
    assert "CPU wall time per call / GPU wall time per call" in definition
    assert "CPU wall time per training step / GPU wall time per training step" in definition


def test_the_thin_note_names_only_the_machine_whose_medians_are_thin(tmp_path: Path) -> None:
    """Two machines measure the same CPU benchmarks at 1 and 2 threads: one with 5 repetitions,
    the other with 1. The thread scaling's thin medians are the second machine's file only,
    though the first has benchmarks of the same names."""
    from conftest import gb_row

    from gpubench_tools.report import analysis
    from gpubench_tools.report.context import Context

    files = []
    for name, cpu, repetitions in (("steady", "AMD EPYC", 5), ("single", "Intel Xeon", 1)):
        rows = [
            gb_row(f"matmul/cpu/openblas/dtype:fp32/m:{n}/n:{n}/k:{n}/threads:{t}", 1e-6 * n / t,
                   {"m": n, "n": n, "k": n, "threads": t, "flop": 2.0 * n**3},
                   "dtype=fp32 shape=square", repetition_index=i, repetitions=repetitions)
            for n in (256, 1024) for t in (1, 2) for i in range(repetitions)
        ]  # fmt: skip
        context = {"cpu_model": cpu, "gpu": "none"}
        files.append(str(write_bench_json(tmp_path / f"{name}.json", rows, context)))
    ctx = Context.of(load_table(files), tmp_path / "out")
    assert ctx.several
    scaling = analysis.thread_scaling(ctx.summary)
    assert set(scaling["machine"]) == {0, 1}
    thin = ctx.thin(scaling["row"], "cpu")
    assert {Path(f).name for *_, f in thin} == {"single.json"}
    note = build_document(load_table(files), tmp_path / "doc")["thin"]
    assert "single.json" in note and "steady.json" not in note


def test_thin_allocation_probes_name_only_their_own_machine(tmp_path: Path) -> None:
    """The allocation probes of two GPUs: ten repetitions on one, a single one on the other.
    Only the second GPU's file holds thin medians."""
    from conftest import GPU_CONTEXT
    from handmade_rows import alloc_rows

    from gpubench_tools.report import resources
    from gpubench_tools.report.context import Context

    steady = alloc_rows()
    single = [
        dict(r, repetitions=1)
        for r in steady
        if r["run_type"] == "iteration" and r["repetition_index"] == 0
    ]
    files = [
        str(write_bench_json(tmp_path / f"{name}.json", rows, dict(GPU_CONTEXT, gpu=gpu)))
        for name, rows, gpu in (("steady", steady, "NVIDIA A"), ("single", single, "NVIDIA B"))
    ]
    ctx = Context.of(load_table(files), tmp_path / "out")
    costs = resources.allocation_costs(ctx.table.rows)
    assert ctx.several and set(costs["machine"]) == {0, 1}
    thin = ctx.thin(ctx.summary.index[ctx.summary["name"].str.match(resources.ALLOC_NAME)], "gpu")
    assert {Path(f).name for *_, f in thin} == {"single.json"}
