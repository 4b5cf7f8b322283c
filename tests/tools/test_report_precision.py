"""The report's mixed-precision section: bf16 and fp16 against fp32 per path and case, the
explanation of a mixed run that does not help, loss scaling, the suite against PyTorch autocast,
and what the section says when rows are missing.

The GPU rows are hand-made test data with plausible values (tests/tools/handmade_rows.py), not a
measurement: no GPU run of the mixed-precision rows exists yet."""

from __future__ import annotations

import contextlib
import io
import math
from pathlib import Path
from typing import Any

import pytest
from conftest import write_bench_json
from md_plain import read_md
from handmade_rows import (
    CONTEXT,
    CPU_CONTEXT,
    all_gpu_rows,
    cpu_mlp_rows,
    gpu_mlp_rows,
    mlp_row,
    step_flop,
)

from gpubench_tools.dataset import Source, load_sources
from gpubench_tools.report import main
from gpubench_tools.report.mlp_analysis import mlp_points
from gpubench_tools.report.precision_analysis import (
    fp32_name,
    precision_lines,
    precision_pairs,
    torch_comparisons,
    unpaired_mixed,
)
from gpubench_tools.report.precision_sentences import precision_gaps, precision_sentences

SECTION = "7. Mixed precision: bf16 and fp16 against fp32"
IRIS = "iris, batch 120, hidden 10"


def _source(
    tmp_path: Path, rows: list[dict[str, Any]], context: dict[str, Any] = CONTEXT
) -> Source:
    (src,), _ = load_sources([str(write_bench_json(tmp_path / "in.json", rows, context))])
    return src


def _pair(src: Source, path: str, precision: str, case: str) -> Any:
    return next(
        p for p in precision_pairs(src) if (p.path, p.precision, p.case) == (path, precision, case)
    )


def _report(args: list[str]) -> tuple[int, str]:
    stderr = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(stderr):
        code = main(args)
    return code, stderr.getvalue()


def _section(md: str, title: str) -> str:
    return md.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


# --- pairing and speedups ----------------------------------------------------------------------


def test_the_fp32_twin_is_the_name_without_the_precision_segment() -> None:
    assert (
        fp32_name(
            "mlp/gpu/eager/data:iris/batch:120/hidden:10/readback:0/precision:bf16/manual_time"
        )
        == "mlp/gpu/eager/data:iris/batch:120/hidden:10/readback:0/manual_time"
    )
    assert (
        fp32_name(
            "mlp/cpu/openblas/data:iris/batch:120/hidden:10/readback:1/threads:2/precision:bf16"
        )
        == "mlp/cpu/openblas/data:iris/batch:120/hidden:10/readback:1/threads:2"
    )


def test_speedup_is_fp32_time_over_mixed_time_of_the_same_path_and_case(tmp_path: Path) -> None:
    src = _source(tmp_path, gpu_mlp_rows() + cpu_mlp_rows())
    assert _pair(src, "GPU eager", "bf16", IRIS).speedup == pytest.approx(81 / 90)
    assert _pair(src, "GPU graph", "fp16", IRIS).speedup == pytest.approx(30 / 34)
    wide = _pair(src, "GPU eager", "bf16", "synthetic, batch 4096, hidden 4096x2")
    assert wide.speedup == pytest.approx(4.0 / 1.25)
    assert wide.step_flop == pytest.approx(step_flop("synthetic", 4096, "4096x2"))
    cpu = _pair(src, "CPU openblas, 1 thread", "bf16", "synthetic, batch 4096, hidden 512")
    assert cpu.speedup == pytest.approx(1.8)
    iris = _pair(src, "GPU eager", "bf16", IRIS)
    assert iris.extra_kernels == 4
    assert iris.compute_speedup == pytest.approx((0.3 * 81) / (0.35 * 90))
    # 7 GPU cases with bf16 (7 pairs), fp16 on 4 of them, 2 CPU cases.
    assert len(precision_pairs(src)) == 7 + 4 + 2


def test_lines_are_ordered_by_work_per_step(tmp_path: Path) -> None:
    src = _source(tmp_path, gpu_mlp_rows())
    eager = next(
        line
        for line in precision_lines(precision_pairs(src))
        if (line.path, line.precision) == ("GPU eager", "bf16")
    )
    flops = [p.step_flop for p in eager.pairs]
    assert flops == sorted(flops) and eager.pairs[0].case == IRIS
    # Slower at Iris and at batch 256 x 64, faster from the wide nets on.
    c = eager.crossover
    assert c.kind == "cross" and c.x_lo == step_flop("synthetic", 256, "64")


def test_the_fp32_training_charts_keep_only_fp32_rows(tmp_path: Path) -> None:
    src = _source(tmp_path, gpu_mlp_rows() + cpu_mlp_rows())
    assert {m.point.precision for m in mlp_points(src, layers=None)} == {"fp32"}
    assert {p.precision for p in src.mlp()} == {"fp32"}
    assert {p.precision for p in src.mlp(None)} == {"fp32", "bf16", "fp16"}


# --- sentences ---------------------------------------------------------------------------------


def test_does_not_help_at_iris_with_the_reasons_from_the_counters(tmp_path: Path) -> None:
    text = " ".join(precision_sentences(_source(tmp_path, gpu_mlp_rows())))
    assert (
        f"mixed precision does not help GPU eager at {IRIS}: bf16 runs at 0.9x fp32's speed "
        "(90.0 us against 81.0 us per epoch, 40.8k flop per step): even its compute phase is slower "
        "(0.77x fp32's speed): at 40.8k flop per step the products are too small for tensor "
        "cores to make up for the conversions; its conversions add 4 kernel launches per step "
        "(16 against 12)." in text
    )


def test_compute_faster_but_launches_eat_the_gain(tmp_path: Path) -> None:
    rows = [
        mlp_row("gpu", "eager", "synthetic", 256, "64", 60e-6, kernels=12, compute_share=0.5),
        mlp_row(
            "gpu",
            "eager",
            "synthetic",
            256,
            "64",
            66e-6,
            precision="bf16",
            kernels=16,
            compute_share=0.4,
        ),
    ]
    text = " ".join(precision_sentences(_source(tmp_path, rows)))
    assert (
        "its compute phase is 1.1x faster, but the time outside it (launches, synchronisation) "
        "grows from 30.0 us to 39.6 us per epoch and eats the gain" in text
    )


def test_no_does_not_help_sentence_where_mixed_precision_is_faster(tmp_path: Path) -> None:
    wide = [r for r in gpu_mlp_rows() if "hidden:4096" in r["name"]]
    sentences = precision_sentences(_source(tmp_path, wide))
    assert sentences and not any("does not help" in s for s in sentences)
    assert any("faster than fp32 at every size measured" in s for s in sentences)
    # The same rows with the Iris case added: the sentence appears, for Iris only.
    sentences = precision_sentences(_source(tmp_path, gpu_mlp_rows()))
    helps_not = [s for s in sentences if "does not help" in s]
    assert helps_not and all(IRIS in s for s in helps_not)
    assert not any("does not help" in s and "hidden 4096x2:" in s for s in sentences)


def test_where_tensor_cores_pay_off_most(tmp_path: Path) -> None:
    text = " ".join(precision_sentences(_source(tmp_path, gpu_mlp_rows())))
    assert (
        "tensor cores pay off most at synthetic, batch 4096, hidden 4096x2 (418G flop per step), "
        "where GPU eager fp16 runs at 3.3x fp32's speed." in text
    )


def test_fp16_skipped_steps_and_final_scale(tmp_path: Path) -> None:
    text = " ".join(precision_sentences(_source(tmp_path, all_gpu_rows())))
    assert "fp16 with dynamic loss scaling: 4 of 6 fp16 runs skipped steps" in text
    assert f"GPU eager at {IRIS}: 5 of 20000 steps" in text
    assert "the final loss scale is 8192 to 65536" in text


def test_no_fp16_run_skipped(tmp_path: Path) -> None:
    rows = [r for r in gpu_mlp_rows() if "data:synthetic" in r["name"]]
    text = " ".join(precision_sentences(_source(tmp_path, rows)))
    assert "none of the 2 fp16 runs skipped a step; the final loss scale is 65536." in text


def test_final_loss_against_fp32(tmp_path: Path) -> None:
    text = " ".join(precision_sentences(_source(tmp_path, gpu_mlp_rows())))
    assert "The mixed-precision runs end within 0% of fp32's final loss" in text
    rows = [
        mlp_row("gpu", "eager", "iris", 120, "10", 81e-6, final_loss=0.05),
        mlp_row("gpu", "eager", "iris", 120, "10", 90e-6, precision="fp16", final_loss=0.06),
    ]
    text = " ".join(precision_sentences(_source(tmp_path, rows)))
    assert (
        "The final loss moves with the precision: up to 20% away from fp32's (GPU eager fp16 at "
        f"{IRIS}, 0.06 against 0.05)." in text
    )


def test_against_pytorch_autocast_per_case(tmp_path: Path) -> None:
    src = _source(tmp_path, all_gpu_rows())
    eager = {
        (c.ours.data, c.precision): c.ratio
        for c in torch_comparisons(src)
        if c.ours.variant == "eager"
    }
    assert eager[("iris", "bf16")] == pytest.approx(1.3e-3 / 90e-6)
    assert eager[("synthetic", "fp32")] == pytest.approx(4.4e-3 / 4.0e-3)
    assert eager[("synthetic", "fp16")] == pytest.approx(1.44e-3 / 1.2e-3)
    # The graph path is compared where it ran (Iris), PyTorch's own pairs are made too.
    assert any(c.ours.variant == "graph" for c in torch_comparisons(src))
    assert _pair(src, "PyTorch GPU eager", "bf16", IRIS).speedup == pytest.approx(1.05 / 1.3)
    text = " ".join(precision_sentences(src))
    assert "against PyTorch bf16 autocast: our bf16 eager step is faster in 2 of 2 cases" in text


# --- missing data ------------------------------------------------------------------------------


def test_gpu_mixed_rows_without_pytorch_rows_say_so(tmp_path: Path) -> None:
    gaps = precision_gaps(_source(tmp_path, gpu_mlp_rows()))
    assert any(g.startswith("No PyTorch autocast rows to compare with") for g in gaps)


def test_gpu_fp32_rows_without_gpu_mixed_rows_say_so(tmp_path: Path) -> None:
    fp32_gpu = [r for r in gpu_mlp_rows() if "precision" not in r["name"]]
    src = _source(tmp_path, fp32_gpu + cpu_mlp_rows())
    gaps = precision_gaps(src)
    assert any("no GPU mixed-precision rows to set against the GPU's fp32 rows" in g for g in gaps)
    assert {p.path for p in precision_pairs(src)} == {"CPU openblas, 1 thread"}


def test_mixed_rows_without_fp32_are_not_compared(tmp_path: Path) -> None:
    bf16_only = [r for r in gpu_mlp_rows() if "precision:bf16" in r["name"]]
    src = _source(tmp_path, bf16_only)
    assert not precision_pairs(src) and len(unpaired_mixed(src)) == 7
    code, err = _report([str(tmp_path / "in.json"), "--out", str(tmp_path / "r")])
    assert code == 0, err
    section = _section(read_md(tmp_path / "r" / "report.md"), SECTION)
    assert (
        "No mixed-precision row can be compared with fp32: 7 have no fp32 row of the same case"
        in section
    )
    assert not (tmp_path / "r" / "precision_speedup.png").exists()


def test_a_report_without_mixed_rows_says_what_is_missing(h100_report: dict[str, Any]) -> None:
    section = _section(read_md(h100_report["out"] / "report.md"), SECTION)
    assert "No mixed-precision rows in the input files: bench writes them as" in section
    assert not (h100_report["out"] / "precision_speedup.png").exists()


def test_skipped_cpu_bf16_rows_are_reported(tmp_path: Path) -> None:
    skipped = mlp_row("cpu", "openblas", "iris", 120, "10", 1.0, precision="bf16", threads=1)
    skipped.update(error_occurred=True, error_message="not supported on this machine: no sbgemm")
    rows = [mlp_row("cpu", "openblas", "iris", 120, "10", 10e-6, threads=1), skipped]
    src = _source(tmp_path, rows, CPU_CONTEXT)
    assert not precision_pairs(src)
    gaps = precision_gaps(src)
    assert any("1 mixed-precision rows were skipped" in g and "no sbgemm" in g for g in gaps)


# --- the report --------------------------------------------------------------------------------


def test_report_renders_the_section_with_chart_and_tables(tmp_path: Path) -> None:
    path = write_bench_json(tmp_path / "h.json", all_gpu_rows() + cpu_mlp_rows(), CONTEXT)
    out = tmp_path / "r"
    code, err = _report([str(path), "--out", str(out)])
    assert code == 0, err
    md = read_md(out / "report.md")
    section = _section(md, SECTION)
    assert "](precision_speedup.png)" in section
    assert (out / "precision_speedup.png").stat().st_size > 10_000
    assert (
        f"| H100 80GB HBM3 | {IRIS} | GPU eager | bf16 | 40.8k flop | 81.0 us | 90.0 us | 0.9x | 12 -> 16 |"
        in section
    )
    assert f"| H100 80GB HBM3 | {IRIS} | bf16 | GPU eager | 90.0 us | 1.30 ms | 14x |" in section
    assert "5 of 20000 skipped, scale 8192" in section
    assert "H100 80GB HBM3: GPU eager, bf16 against fp32: from 0.9x" in _section(md, "Summary")


def test_cpu_run_with_a_gpu_reference_labels_both_machines(tmp_path: Path) -> None:
    cpu = write_bench_json(tmp_path / "cpu.json", cpu_mlp_rows(), CPU_CONTEXT)
    gpu = write_bench_json(tmp_path / "gpu.json", gpu_mlp_rows(), CONTEXT)
    (src,), _ = load_sources([str(cpu)], [str(gpu)])
    text = precision_sentences(src)
    assert any(
        t.startswith("Hand-made Test CPU (this run): CPU openblas, 1 thread, bf16") for t in text
    )
    assert any(t.startswith("H100 80GB HBM3 (reference run): GPU eager, bf16") for t in text)
    assert all(math.isfinite(p.speedup) for p in precision_pairs(src))
