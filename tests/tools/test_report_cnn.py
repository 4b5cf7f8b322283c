"""The report's CNN section: time per step against batch, the crossover batch, the per-operation
breakdown and the sentences computed from them; CPU-only, GPU-only, one machine, and a CPU run
whose GPU side comes from a reference run.

The GPU rows are tests/tools/fixtures/cnn_gpu_synthetic.json: hand-made test data with plausible
values (tests/tools/fixtures/make_cnn_gpu_fixture.py), not a measurement."""

from __future__ import annotations

import contextlib
import io
import json
import math
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, GPU_CONTEXT, gb_row, write_bench_json
from md_plain import read_md

from gpubench_tools.dataset import load_sources
from gpubench_tools.report import main
from gpubench_tools.report.cnn_analysis import (
    best_cpu_by_batch,
    cnn_crossovers,
    cnn_data_set,
    cnn_lines,
    cnn_points,
    kind_shares,
    layer_shares,
    op_kind,
    op_layer,
    profile_batch,
)
from gpubench_tools.report.sentences import cnn_sentences

GPU_FIXTURE = FIXTURES / "cnn_gpu_synthetic.json"

# The operations of one step as the CPU trainer names them (kernels/cnn/cnn_cpu.hpp).
CPU_OPS = {
    "conv1.im2col": 4e-3,
    "conv1.gemm": 6e-3,
    "pool1.forward": 1e-3,
    "conv1.bias": 0.5e-3,
    "conv2.im2col": 3e-3,
    "conv2.gemm": 9e-3,
    "pool2.forward": 0.4e-3,
    "conv2.bias": 0.2e-3,
    "conv3.im2col": 1e-3,
    "conv3.gemm": 4.5e-3,
    "pool3.forward": 0.2e-3,
    "conv3.bias": 0.1e-3,
    "fc1.forward": 0.3e-3,
    "fc2.forward": 0.02e-3,
    "loss": 0.02e-3,
    "fc2.backward": 0.04e-3,
    "fc1.backward": 0.6e-3,
    "conv3.bias_gradient": 0.05e-3,
    "pool3.backward": 0.2e-3,
    "conv3.weight_gradient": 5e-3,
    "conv3.input_gradient": 5.5e-3,
    "conv2.bias_gradient": 0.1e-3,
    "pool2.backward": 0.5e-3,
    "conv2.weight_gradient": 10e-3,
    "conv2.input_gradient": 11e-3,
    "conv1.bias_gradient": 0.3e-3,
    "pool1.backward": 1.2e-3,
    "conv1.weight_gradient": 7e-3,
    "update": 0.1e-3,
}
CPU_CONTEXT = {"cpu_model": "Test CPU", "gpu": "none", "cpu_logical_cpus": "2"}


def cpu_rows(batches: tuple[int, ...] = (1, 16, 64, 256)) -> list[dict[str, Any]]:
    """CPU CNN rows shaped like bench's: a step that scales with the batch, 2 threads 0.6x of
    1 thread, the profile at every batch."""
    rows = []
    for batch in batches:
        for threads, factor in ((1, 1.0), (2, 0.6)):
            ops = {k: v * batch / 64 * factor for k, v in CPU_OPS.items()}
            t_step = sum(ops.values()) * 1.02
            counters = {
                "t_step": t_step,
                "images_per_s": batch / t_step,
                "t_epoch_cifar": t_step * 50000 / batch,
                "steps": 5,
                "batch": batch,
                "readback": 1,
                "blas_threads": threads,
                "final_loss": 2.29,
                **{f"t_op:{k}": v for k, v in ops.items()},
            }
            name = f"cnn/cpu/openblas/data:synthetic/batch:{batch}/readback:1/threads:{threads}"
            label = "workload=cnn backend=cpu variant=openblas data=synthetic"
            rows.append(gb_row(name, t_step * 5, counters, label))
    return rows


def _report(args: list[str]) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(args)
    return code, stdout.getvalue(), stderr.getvalue()


def _section(md: str, title: str) -> str:
    return md.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def _gpu_rows() -> list[dict[str, Any]]:
    return json.loads(GPU_FIXTURE.read_text())["benchmarks"]


# --- analysis -------------------------------------------------------------------------------


def test_operations_are_grouped_by_kind_and_layer() -> None:
    kinds = {op: op_kind(op) for op in [*CPU_OPS, "launch_gaps"]}
    assert {op for op, k in kinds.items() if k == "im2col"} == {
        "conv1.im2col",
        "conv2.im2col",
        "conv3.im2col",
    }
    assert {op for op, k in kinds.items() if k == "GEMM"} == {
        "conv1.gemm",
        "conv2.gemm",
        "conv3.gemm",
        "fc1.forward",
        "fc2.forward",
        "fc2.backward",
        "fc1.backward",
        "conv3.weight_gradient",
        "conv3.input_gradient",
        "conv2.weight_gradient",
        "conv2.input_gradient",
        "conv1.weight_gradient",
    }
    assert {op for op, k in kinds.items() if k == "bias"} == {
        f"conv{i}.{p}" for i in (1, 2, 3) for p in ("bias", "bias_gradient")
    }
    assert {op for op, k in kinds.items() if k == "pool"} == {
        f"pool{i}.{p}" for i in (1, 2, 3) for p in ("forward", "backward")
    }
    assert (kinds["loss"], kinds["update"], kinds["launch_gaps"]) == (
        "loss",
        "update",
        "launch gaps",
    )
    assert op_layer("pool2.backward") == "conv2" and op_layer("conv3.im2col") == "conv3"
    assert op_layer("fc1.backward") == "fc1" and op_layer("launch_gaps") == "launch gaps"
    assert op_kind("conv1.something_new") == "other"


def test_shares_of_the_profiled_step(tmp_path: Path) -> None:
    (src,), _ = load_sources([str(write_bench_json(tmp_path / "c.json", cpu_rows(), CPU_CONTEXT))])
    m = next(m for m in cnn_points(src) if m.batch == 64 and m.threads == 1)
    total = sum(CPU_OPS.values())
    assert m.profiled_step == pytest.approx(total)
    gemm = sum(v for k, v in CPU_OPS.items() if op_kind(k) == "GEMM")
    assert kind_shares(m)["GEMM"] == pytest.approx(gemm / total)
    assert sum(kind_shares(m).values()) == pytest.approx(1.0)
    conv2 = sum(v for k, v in CPU_OPS.items() if k.startswith(("conv2.", "pool2.")))
    assert layer_shares(m)["conv2"] == pytest.approx(conv2 / total)
    assert m.threads == 1 and m.t_step == pytest.approx(total * 1.02)


def _crossing_file(tmp_path: Path, gpu_times: dict[int, float]) -> Path:
    """CPU: 1 ms per image on 1 thread; on 2 threads 0.5 ms per image plus 5 ms (slower at small
    batches, faster at large ones), so the best CPU step switches thread count."""
    rows = []
    for batch in (1, 16, 256):
        for threads, t in ((1, 1e-3 * batch), (2, 0.5e-3 * batch + 5e-3)):
            name = f"cnn/cpu/openblas/data:synthetic/batch:{batch}/readback:1/threads:{threads}"
            counters = {"t_step": t, "batch": batch, "readback": 1, "blas_threads": threads}
            rows.append(gb_row(name, t, counters, "workload=cnn backend=cpu variant=openblas"))
    for batch, t in gpu_times.items():
        name = f"cnn/gpu/graph/data:synthetic/batch:{batch}/readback:0/manual_time"
        counters = {"t_step": t, "batch": batch, "readback": 0}
        rows.append(gb_row(name, t, counters, "workload=cnn backend=gpu variant=graph"))
    return write_bench_json(tmp_path / "x.json", rows, GPU_CONTEXT)


def test_crossover_batch_against_the_best_cpu_step_is_interpolated_in_log_log(
    tmp_path: Path,
) -> None:
    (src,), _ = load_sources([str(_crossing_file(tmp_path, {1: 10e-3, 16: 10e-3, 256: 10e-3}))])
    pts = cnn_points(src)
    lines = cnn_lines(pts, cnn_data_set(pts))
    best = best_cpu_by_batch(lines)
    assert {b: m.threads for b, m in best.items()} == {1: 1, 16: 2, 256: 2}
    (c,) = cnn_crossovers(lines)
    # Best CPU / GPU: 0.1 at batch 1, 13 ms / 10 ms = 1.3 at batch 16.
    assert c.speedup[:2] == pytest.approx([0.1, 1.3])
    expected = math.exp(math.log(16) * math.log(10) / (math.log(1.3) - math.log(0.1)))
    assert c.crossover.kind == "cross" and c.crossover.x == pytest.approx(expected)
    assert round(expected) == 12
    text = cnn_sentences(src)[0]
    assert text == (
        "Test GPU: CNN training (data=synthetic), the GPU graph step against the best CPU step "
        "is faster from batch ~12 on (interpolated between batch 1 and 16)."
    )


def test_gpu_faster_everywhere_or_never(tmp_path: Path) -> None:
    (src,), _ = load_sources([str(_crossing_file(tmp_path, {1: 0.5e-3, 16: 1e-3, 256: 2e-3}))])
    assert "is faster at every batch measured (2x at batch 1, 66x at batch 256)" in (
        cnn_sentences(src)[0]
    )
    (src,), _ = load_sources([str(_crossing_file(tmp_path, {1: 1.0, 16: 1.0, 256: 1.0}))])
    assert cnn_sentences(src)[0].endswith(
        "is never faster within the batches measured (up to batch 256, where it is 7.5x slower)."
    )


def test_pytorch_rows_are_read_by_name_and_kept_out_of_the_crossover(tmp_path: Path) -> None:
    rows = [
        # As tools/reference/torch_cnn.py writes them: no workload or backend in the label.
        gb_row(
            "cnn/cpu/torch_eager/data:synthetic/batch:64/readback:1/threads:2",
            1e-3 * 20,
            {"t_step": 1e-3, "batch": 64, "readback": 1, "steps": 20, "torch_threads": 2},
            "data=synthetic variant=torch_eager input=resident",
        ),
        gb_row(
            "cnn/gpu/torch_eager/data:synthetic/batch:64/readback:1",
            2e-3 * 20,
            {"t_step": 2e-3, "batch": 64, "readback": 1, "steps": 20},
            "data=synthetic variant=torch_eager input=resident",
        ),
    ]
    path = write_bench_json(tmp_path / "t.json", cpu_rows() + rows, CPU_CONTEXT)
    (src,), _ = load_sources([str(path)])
    pts = cnn_points(src)
    torch = {m.name: m for m in pts if m.is_torch}
    assert set(torch) == {"PyTorch CPU, 2 threads", "PyTorch GPU"}
    # Faster than every suite CPU step, yet not the CPU side of anything.
    lines = cnn_lines(pts, "synthetic")
    assert not best_cpu_by_batch(lines)[64].is_torch
    text = cnn_sentences(src)
    suite_best = min(
        m.t_step for m in pts if m.batch == 64 and m.backend == "cpu" and not m.is_torch
    )
    ratio = 1e-3 / suite_best
    assert (
        f"PyTorch CPU, 2 threads (eager, loss read every step): 1.00 ms per step at batch 64; "
        f"the suite's CPU openblas, 2 threads is {1 / ratio:.0f}x slower than PyTorch." in text
    )
    assert "PyTorch GPU (eager, loss read every step): 2.00 ms per step at batch 64." in text


# --- sentences on the synthetic GPU fixture -------------------------------------------------


def _one_machine(tmp_path: Path) -> Path:
    """The CPU rows and the synthetic GPU rows as one machine's run."""
    return write_bench_json(tmp_path / "one.json", cpu_rows() + _gpu_rows(), GPU_CONTEXT)


def test_batch_64_sentences_carry_the_numbers(tmp_path: Path) -> None:
    (src,), _ = load_sources([str(_one_machine(tmp_path))])
    gpu = {r["name"]: r for r in _gpu_rows()}
    graph = gpu["cnn/gpu/graph/data:synthetic/batch:64/readback:0/manual_time"]
    eager = gpu["cnn/gpu/eager/data:synthetic/batch:64/readback:0/manual_time"]
    cpu = sum(CPU_OPS.values()) * 1.02 * 0.6  # 2 threads: the best CPU step
    ratio = cpu / graph["t_step"]
    text = cnn_sentences(src)
    assert text[1] == (
        f"At batch 64 the GPU graph step is {ratio:.0f}x faster than the CPU's best "
        f"({graph['t_step'] * 1e6:.0f} us against {cpu * 1e3:.1f} ms, CPU openblas, 2 threads)."
    )
    gemm = sum(v for k, v in CPU_OPS.items() if op_kind(k) == "GEMM") / sum(CPU_OPS.values())
    gaps = eager["t_op:launch_gaps"]
    profiled = sum(v for k, v in eager.items() if k.startswith("t_op:"))
    saved = eager["t_step"] - graph["t_step"]
    assert text[2] == (
        f"At batch 64, GEMMs take {gemm * 100:.0f}% of the CPU step (2 threads) and im2col "
        f"11%; launch gaps take {gaps / profiled * 100:.1f}% of the GPU eager step "
        f"({gaps * 1e6:.1f} us of {profiled * 1e6:.0f} us profiled), which the graph removes: "
        f"its step is {saved * 1e6:.1f} us shorter ({saved / gaps * 100:.0f}% of the gaps)."
    )
    assert 0.5 < saved / gaps < 1.0  # the fixture's graph removes most, not all, of the gaps
    assert any(t.startswith("At batch 256 the GPU graph path trains ") for t in text)
    assert any(t.startswith("Copying each batch from host memory every step") for t in text)
    assert not any("reference run" in t or "this run" in t for t in text)


def test_gpu_only_rows_say_there_is_no_crossover() -> None:
    (src,), _ = load_sources([str(GPU_FIXTURE)])
    text = cnn_sentences(src)
    assert text[0] == (
        f"H100 80GB HBM3: no CPU CNN rows in {GPU_FIXTURE}, so there is no CPU/GPU crossover "
        "for the CNN."
    )
    assert text[1].startswith("At batch 64, launch gaps take ")


def test_fixture_is_labelled_hand_made_and_regenerates_identically(tmp_path: Path) -> None:
    import importlib.util

    context = json.loads(GPU_FIXTURE.read_text())["context"]
    assert "hand-made test data" in context["generated_by"]
    assert "not a measurement" in context["generated_by"]
    spec = importlib.util.spec_from_file_location("make_cnn", FIXTURES / "make_cnn_gpu_fixture.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(tmp_path / "again.json")
    assert (tmp_path / "again.json").read_text() == GPU_FIXTURE.read_text()


# --- the report ------------------------------------------------------------------------------


def test_cpu_only_run_says_the_gpu_side_is_missing(tmp_path: Path) -> None:
    path = write_bench_json(tmp_path / "cpu.json", cpu_rows(), CPU_CONTEXT)
    code, _, err = _report([str(path), "--out", str(tmp_path / "r")])
    assert code == 0, err
    md = read_md(tmp_path / "r" / "report.md")
    cnn = _section(md, "6. CNN training (CIFAR-10 tutorial network)")
    assert (
        f"Test CPU: no GPU CNN rows in {path}, so the GPU side of the CNN story is missing (a run "
        "on a GPU, or --gpu-reference with one that has cnn/ rows, adds it); one CPU training "
        "step at batch 64 takes " in cnn
    )
    assert "CNN crossover" not in cnn
    assert "Test CPU: no GPU CNN rows" in _section(md, "Summary")
    assert {"cnn_step_time", "cnn_breakdown"} <= {p.stem for p in (tmp_path / "r").glob("*.png")}
    assert "| Test CPU | CPU openblas, 1 thread | 64 |" in cnn


def test_cpu_run_with_gpu_reference_tells_the_cnn_story(tmp_path: Path) -> None:
    path = write_bench_json(tmp_path / "cpu.json", cpu_rows(), CPU_CONTEXT)
    out = tmp_path / "r"
    code, _, err = _report([str(path), "--gpu-reference", str(GPU_FIXTURE), "--out", str(out)])
    assert code == 0, err
    md = read_md(out / "report.md")
    cnn = _section(md, "6. CNN training (CIFAR-10 tutorial network)")
    both = "H100 80GB HBM3 (reference run) against Test CPU (this run)"
    assert (
        f"{both}: CNN training (data=synthetic), the GPU graph step against the best CPU step is "
        "faster at every batch measured" in cnn
    )
    assert f"{both}: at batch 64 the GPU graph step is " in cnn
    assert "H100 80GB HBM3 (reference run): PyTorch GPU (eager, loss read every step)" in cnn
    assert (
        "| H100 80GB HBM3 (reference run) vs Test CPU (this run) | GPU graph | "
        "GPU faster at every batch measured |" in cnn
    )
    assert "| H100 80GB HBM3 (reference run) | GPU eager | 64 |" in cnn
    summary = _section(md, "Summary")
    assert f"{both}: CNN training (data=synthetic)" in summary
    assert f"{both}: at batch 64 the GPU graph step is " in summary
    captions = [c for c in md.splitlines() if c.startswith("*") and "](cnn_" in c]
    assert len(captions) == 2
    assert all("(reference run)" in c and "(this run)" in c for c in captions)
    svg = (out / "cnn_breakdown.svg").read_text()
    assert "launch gaps" in svg and "GPU eager" in svg and "CPU openblas, 2 threads" in svg


def test_a_report_without_cnn_rows_says_so(h100_report: dict[str, Any]) -> None:
    md = read_md(h100_report["out"] / "report.md")
    assert "No CNN data in the input files (run the cnn/ benchmarks to add it)." in md
    assert not (h100_report["out"] / "cnn_step_time.png").exists()


def test_profile_batch_is_the_tutorial_batch_or_the_nearest(tmp_path: Path) -> None:
    path = write_bench_json(tmp_path / "c.json", cpu_rows((1, 32, 256)), CPU_CONTEXT)
    (src,), _ = load_sources([str(path)])
    assert profile_batch(cnn_points(src), "synthetic") == 32
    path = write_bench_json(tmp_path / "d.json", cpu_rows(), CPU_CONTEXT)
    (src,), _ = load_sources([str(path)])
    assert profile_batch(cnn_points(src), "synthetic") == 64


def test_reference_without_cnn_rows_leaves_the_gpu_side_missing(tmp_path: Path) -> None:
    from conftest import REPO

    path = write_bench_json(tmp_path / "cpu.json", cpu_rows(), CPU_CONTEXT)
    reference = [
        str(REPO / "reports" / "baselines" / f"h100-80gb-hbm3-{w}.json") for w in ("matmul", "mlp")
    ]
    (src,), _ = load_sources([str(path)], reference)
    text = cnn_sentences(src)
    assert text[0].startswith(
        f"Test CPU (this run): no GPU CNN rows in {path}, so the GPU side of the CNN story is "
        "missing (the reference run (H100 80GB HBM3) has no CNN rows either); one CPU training "
        "step at batch 64 takes "
    )
    assert text[1].startswith("Test CPU (this run): at batch 64, GEMMs take ")


# --- the CPU rows of the real bench (tests/tools/fixtures/cnn_cpu.json) ----------------------

CPU_FIXTURE = FIXTURES / "cnn_cpu.json"


def _fixture_rows(path: Path) -> list[dict[str, Any]]:
    return [r for r in json.loads(path.read_text())["benchmarks"] if r["run_type"] == "iteration"]


def _best_cpu_at(batch: int) -> dict[str, Any]:
    rows = [r for r in _fixture_rows(CPU_FIXTURE) if r["batch"] == batch]
    assert len(rows) == 2  # 1 thread and all cores
    return min(rows, key=lambda r: r["t_step"])


def test_bench_cpu_rows_with_the_synthetic_gpu_reference(tmp_path: Path) -> None:
    from gpubench_tools.units import fmt_pct, fmt_ratio, fmt_time

    out = tmp_path / "r"
    code, _, err = _report(
        [str(CPU_FIXTURE), "--gpu-reference", str(GPU_FIXTURE), "--out", str(out)]
    )
    assert code == 0, err
    md = read_md(out / "report.md")
    cnn = _section(md, "6. CNN training (CIFAR-10 tutorial network)")
    cpu = _best_cpu_at(64)
    graph = next(
        r
        for r in _gpu_rows()
        if r["name"] == "cnn/gpu/graph/data:synthetic/batch:64/readback:0/manual_time"
    )
    threads = int(cpu["blas_threads"])
    both = "H100 80GB HBM3 (reference run) against AMD EPYC (this run)"
    assert (
        f"{both}: at batch 64 the GPU graph step is "
        f"{fmt_ratio(cpu['t_step'] / graph['t_step'])} faster than the CPU's best "
        f"({fmt_time(graph['t_step'])} against {fmt_time(cpu['t_step'])}, CPU openblas, "
        f"{threads} thread{'s' if threads > 1 else ''})." in cnn
    )
    ops = {k: v for k, v in cpu.items() if k.startswith("t_op:")}
    gemm = sum(v for k, v in ops.items() if op_kind(k.removeprefix("t_op:")) == "GEMM")
    assert f"at batch 64, GEMMs take {fmt_pct(gemm / sum(ops.values()))} of the CPU step" in cnn
    assert {"cnn_step_time", "cnn_breakdown"} <= {p.stem for p in out.glob("*.png")}
    assert "| AMD EPYC (this run) | CPU openblas, 1 thread | 64 |" in cnn
    assert "| H100 80GB HBM3 (reference run) | GPU eager | 64 |" in cnn


def test_bench_cpu_rows_alone_say_the_gpu_side_is_missing() -> None:
    from gpubench_tools.units import fmt_time

    (src,), _ = load_sources([str(CPU_FIXTURE)])
    rows = sorted(
        (r for r in _fixture_rows(CPU_FIXTURE) if r["batch"] == 64), key=lambda r: r["blas_threads"]
    )
    steps = f"{fmt_time(rows[0]['t_step'])} (1 thread), {fmt_time(rows[1]['t_step'])} (2 threads)"
    assert cnn_sentences(src)[0] == (
        f"AMD EPYC: no GPU CNN rows in {CPU_FIXTURE}, so the GPU side of the CNN story is missing "
        f"(a run on a GPU, or --gpu-reference with one that has cnn/ rows, adds it); one CPU "
        f"training step at batch 64 takes {steps}."
    )
    # Every operation bench profiles has a kind: nothing falls into "other".
    m = next(m for m in cnn_points(src) if m.batch == 64)
    assert len(m.ops) == 29 and kind_shares(m)["other"] == 0


def test_real_bench_cnn_rows_make_a_cnn_section(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    from conftest import REPO, bench_binary

    bench = bench_binary()
    if not (bench.is_file() and os.access(bench, os.X_OK)):
        pytest.skip(f"bench binary not found at {bench} (build it, or set GPUBENCH_BENCH)")
    names = subprocess.run(
        [str(bench), "--benchmark_list_tests", "--benchmark_filter=cnn/cpu"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if names.returncode != 0 or "cnn/cpu/" not in names.stdout:
        pytest.skip(f"{bench} has no cnn/cpu rows (built before the CNN workload)")
    run = tmp_path / "bench.json"
    proc = subprocess.run(
        [
            str(bench),
            "--benchmark_filter=cnn/cpu/openblas/data:synthetic/batch:(1|16)/",
            "--benchmark_min_time=0.01",
            f"--benchmark_out={run}",
            "--benchmark_out_format=json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = tmp_path / "r"
    report = subprocess.run(
        [sys.executable, "-m", "gpubench_tools.report", str(run), "--out", str(out)],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(REPO / "tools")),
        timeout=300,
    )
    assert report.returncode == 0, report.stderr
    cnn = _section(read_md(out / "report.md"), "6. CNN training (CIFAR-10 tutorial network)")
    assert "no GPU CNN rows in" in cnn and "one CPU training step at batch 16 takes " in cnn
    assert "At batch 16, GEMMs take " in cnn
    assert (out / "cnn_breakdown.png").stat().st_size > 10_000
