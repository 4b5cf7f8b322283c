"""What a row is (workload, backend, kernel-only or end to end): from the label, else from the name
of an older file; never from which counters the row has."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, GPU_CONTEXT, REPO, gb_row, write_bench_json

from gpubench_tools.dataset import load_sources, name_backend, name_workload
from gpubench_tools.report.matmul_analysis import speedup_series
from gpubench_tools.report.mlp_analysis import mlp_points

BASELINES = REPO / "reports" / "baselines"

# Files written before labels carried workload and backend, and what they hold: CPU GEMMs,
# kernel-only and end-to-end GPU GEMMs, CPU and GPU MLP rows, probes.
OLDER_FILES = {
    FIXTURES / "h100.json": (44, 72, 66, 51, 64, 72),
    FIXTURES / "a100_pcie.json": (44, 72, 40, 0, 0, 72),
    FIXTURES / "cpu_only.json": (54, 0, 0, 0, 0, 0),
    FIXTURES / "h100_reps.json": (24, 13, 26, 0, 0, 72),
    BASELINES / "ci-cpu.json": (5, 0, 0, 0, 0, 0),
    BASELINES / "h100-80gb-hbm3-matmul.json": (50, 137, 84, 0, 0, 72),
    BASELINES / "h100-80gb-hbm3-mlp.json": (0, 0, 0, 62, 84, 0),
    BASELINES / "h100-80gb-hbm3-torch-matmul.json": (0, 25, 0, 0, 0, 0),
    BASELINES / "h100-80gb-hbm3-torch-iris.json": (0, 0, 0, 2, 2, 0),
}


def _kinds(path: Path) -> tuple[int, ...]:
    (src,), _ = load_sources([str(path)])
    mlp = src.mlp()
    return (
        len(src.matmul_cpu()),
        len(src.matmul_kernel()),
        len(src.matmul_e2e()),
        sum(not p.is_gpu for p in mlp),
        sum(p.is_gpu for p in mlp),
        sum(1 for p in src.points if p.probe),
    )


@pytest.mark.parametrize("path", list(OLDER_FILES), ids=lambda p: str(p.relative_to(REPO)))
def test_older_files_are_read_as_before(path: Path) -> None:
    assert _kinds(path) == OLDER_FILES[path]


def test_the_name_of_an_older_row() -> None:
    assert name_workload("matmul/gpu/cublas_kernel/dtype:fp32/m:16/n:16/k:16/manual_time") == (
        "matmul"
    )
    assert name_backend("matmul/gpu/cublas_kernel/dtype:fp32/m:16/n:16/k:16/manual_time") == "gpu"
    assert name_backend("mlp/cpu/small/data:iris/batch:120/hidden:10/readback:1") == "cpu"
    assert name_backend("mlp/gpu/torch_eager/data:iris/batch:120/hidden:10/readback:0") == "gpu"
    assert name_workload("overhead/launch/roundtrip/manual_time") == "overhead"
    assert name_backend("overhead/h2d/pinned/bytes:4/manual_time") == "gpu"
    assert name_backend("something") is None and name_backend("a/b/c") is None


def _gemm(n: int, **counters: float) -> dict[str, float]:
    return {"m": n, "n": n, "k": n, "flop": 2.0 * n**3, **counters}


def test_the_label_decides_and_counters_never_do(tmp_path: Path) -> None:
    rows = [
        # A GPU GEMM whose name says nothing: the label alone makes it kernel-only GPU.
        gb_row(
            "gemm-a",
            1e-5,
            _gemm(64),
            "workload=matmul backend=gpu variant=cublas_kernel dtype=fp32 shape=square",
        ),
        # CPU by its label, although it carries counters only GPU rows used to have.
        gb_row(
            "gemm-b",
            4e-5,
            _gemm(64, t_compute=1e-5, kernels=1.0),
            "workload=matmul backend=cpu variant=openblas dtype=fp32 shape=square",
        ),
        # The label wins over an older-style name that says otherwise.
        gb_row(
            "matmul/cpu/openblas/dtype:fp32/m:64/n:64/k:64/threads:1",
            2e-5,
            _gemm(64),
            "workload=matmul backend=gpu variant=cublas_e2e dtype=fp32 shape=square host=pinned",
        ),
        # An MLP path the tools have no list for is GPU because its label says so.
        gb_row(
            "mlp-c",
            1e-3,
            {"batch": 120.0, "hidden": 10.0, "t_epoch": 1e-3},
            "workload=mlp backend=gpu variant=new_path data=iris input=resident",
        ),
        # A workload the report does not chart is neither a GEMM nor an MLP, whatever it has.
        gb_row(
            "cnn-d",
            1.0,
            {"batch": 64.0, "t_epoch": 1.0, "m": 1.0, "n": 1.0, "k": 1.0, "flop": 2.0},
            "workload=cnn backend=gpu variant=eager data=cifar dtype=fp32",
        ),
    ]
    path = write_bench_json(tmp_path / "labels.json", rows, GPU_CONTEXT)
    (src,), _ = load_sources([str(path)])
    points = {p.run_name: p for p in src.points}
    assert [p.run_name for p in src.matmul_kernel()] == ["gemm-a"]
    assert [p.run_name for p in src.matmul_cpu()] == ["gemm-b"]
    assert [p.run_name for p in src.matmul_e2e()] == [
        "matmul/cpu/openblas/dtype:fp32/m:64/n:64/k:64/threads:1"
    ]
    (mlp,) = mlp_points(src)
    assert mlp.point.run_name == "mlp-c" and mlp.backend == "gpu"
    cnn = points["cnn-d"]
    assert cnn.workload == "cnn" and cnn.is_gpu and not cnn.is_matmul and not cnn.is_mlp


def _with_new_labels(doc: dict[str, Any]) -> dict[str, Any]:
    """An older file rewritten the way current bench labels rows: workload and backend first in
    the label, and names the tools cannot read anything from."""
    renamed: dict[str, str] = {}
    for row in doc["benchmarks"]:
        run = row["run_name"]
        new = renamed.setdefault(run, f"row-{len(renamed)}")
        workload, backend = name_workload(run), name_backend(run)
        row["label"] = f"workload={workload} backend={backend} {row.get('label', '')}".strip()
        row["name"] = row["name"].replace(run, new)
        row["run_name"] = new
    return doc


def test_rows_labelled_like_current_bench_give_the_same_analysis(tmp_path: Path) -> None:
    original = FIXTURES / "h100.json"
    relabelled = tmp_path / "h100-labels.json"
    relabelled.write_text(json.dumps(_with_new_labels(json.loads(original.read_text()))))
    assert _kinds(relabelled) == _kinds(original)
    (old,), _ = load_sources([str(original)])
    (new,), _ = load_sources([str(relabelled)])
    assert all("workload" in p.labels for p in new.points)
    summary = [(s.name, s.xs, s.speedup, s.crossover) for s in speedup_series(old)]
    assert len(summary) >= 3
    assert summary == [(s.name, s.xs, s.speedup, s.crossover) for s in speedup_series(new)]
    assert sorted((m.name, m.data, m.batch, m.hidden) for m in mlp_points(old)) == sorted(
        (m.name, m.data, m.batch, m.hidden) for m in mlp_points(new)
    )


def test_precision_comes_from_the_label_and_mlp_rows_default_to_fp32(tmp_path: Path) -> None:
    label = "workload=mlp backend=cpu variant=openblas data=iris input=resident"
    name = "mlp/cpu/openblas/data:iris/batch:120/hidden:10/readback:1/threads:1"
    rows = [
        gb_row(name, 1.0, {"t_epoch": 1e-5, "batch": 120}, label),
        gb_row(
            f"{name}/precision:bf16",
            1.0,
            {"t_epoch": 2e-5, "batch": 120},
            label + " precision=bf16",
        ),
    ]
    (src,), _ = load_sources([str(write_bench_json(tmp_path / "p.json", rows))])
    assert [p.run_name for p in src.mlp()] == [name]
    assert [p.precision for p in src.mlp("bf16")] == ["bf16"]
    assert len(src.mlp(None)) == 2
    assert [m.point.run_name for m in mlp_points(src)] == [name]


def test_every_repetition_of_a_counter_is_kept(tmp_path: Path) -> None:
    name = "overhead/alloc/async/bytes:4096/repeats:3/manual_time"
    label = "workload=overhead backend=gpu variant=alloc_async host=device probe=alloc_async"
    rows = [
        gb_row(name, t, {"t_wall": t}, label, repetition_index=i, repetitions=3)
        for i, t in enumerate((3e-6, 1e-6, 2e-6))
    ]
    rows.append(
        gb_row(name, 2e-6, {"t_wall": 2e-6}, label, run_type="aggregate", aggregate_name="median")
    )
    (src,), _ = load_sources([str(write_bench_json(tmp_path / "r.json", rows))])
    (point,) = src.points
    assert point.counter_samples["t_wall"] == [3e-6, 1e-6, 2e-6]
    assert point.c("t_wall") == 2e-6 and point.repetitions == 3
