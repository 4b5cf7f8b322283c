"""The one loader: what a row is (from the label, else from the name of an older file; never from
which counters it has), a row per repetition, and a GPU reference's rows kept apart from the run's.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from conftest import FIXTURES, GPU_CONTEXT, REPO, gb_row, write_bench_json

from gpubench_tools.benchjson import BenchJsonError
from gpubench_tools.wording import note_lines
from gpubench_tools.table import REFERENCE_RUN, THIS_RUN, load_table, same_machine, summarize
from bad_inputs import with_value

from gpubench_tools import benchjson, schema

BASELINES = REPO / "reports" / "baselines"
REFERENCE = [
    str(BASELINES / "h100-80gb-hbm3-matmul.json"),
    str(BASELINES / "h100-80gb-hbm3-mlp.json"),
]
CPU_RUN = str(FIXTURES / "cpu_only.json")

# Files written before labels carried workload and backend, and what they hold: CPU GEMMs,
# kernel-only and end-to-end GPU GEMMs, fp32 CPU and GPU MLP rows, probes. The counts are the
# ones the loader this table replaced gave for the same files.
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
    s = summarize(load_table([str(path)]).rows)
    gemm = s[(s["workload"] == "matmul") & s.get("probe", pd.Series(index=s.index)).isna()]
    host = gemm["host"] if "host" in gemm else pd.Series(pd.NA, index=gemm.index)
    mlp = s[(s["workload"] == "mlp") & (s["precision"] == "fp32")]
    probes = s["probe"].notna().sum() if "probe" in s else 0
    return (
        int((gemm["backend"] == "cpu").sum()),
        int(((gemm["backend"] == "gpu") & host.isna()).sum()),
        int(((gemm["backend"] == "gpu") & host.notna()).sum()),
        int((mlp["backend"] == "cpu").sum()),
        int((mlp["backend"] == "gpu").sum()),
        int(probes),
    )


@pytest.mark.parametrize("path", list(OLDER_FILES), ids=lambda p: str(p.relative_to(REPO)))
def test_older_files_are_read_as_before(path: Path) -> None:
    assert _kinds(path) == OLDER_FILES[path]


def test_the_label_decides_and_the_name_only_for_older_rows(tmp_path: Path) -> None:
    rows = [
        gb_row("gemm-a", 1e-5, {"n": 64.0}, "workload=matmul backend=gpu dtype=fp32"),
        # The label wins over an older-style name that says otherwise.
        gb_row("matmul/cpu/openblas/m:64/threads:1", 2e-5, {}, "workload=matmul backend=gpu"),
        gb_row("overhead/h2d/pinned/bytes:4/manual_time", 1e-6, {"bytes": 4.0}, "probe=h2d"),
        gb_row("mlp/cpu/small/data:iris/batch:120/hidden:10", 1.0, {"t_epoch": 1e-5}),
    ]
    table = load_table([str(write_bench_json(tmp_path / "l.json", rows, GPU_CONTEXT))])
    got = table.rows.set_index("name")
    assert got.loc["gemm-a", "backend"] == "gpu"
    assert got.loc["matmul/cpu/openblas/m:64/threads:1", "backend"] == "gpu"
    assert got.loc["overhead/h2d/pinned/bytes:4/manual_time", ["workload", "backend"]].tolist() == [
        "overhead",
        "gpu",
    ]
    mlp = got.loc["mlp/cpu/small/data:iris/batch:120/hidden:10"]
    # Name parts fill what neither label nor counters give; an MLP epoch is one step.
    assert (mlp["backend"], mlp["data"], mlp["batch"], mlp["precision"]) == (
        "cpu",
        "iris",
        120,
        "fp32",
    )
    assert mlp["t_step"] == mlp["t_epoch"] == 1e-5


def test_a_row_per_repetition_and_the_summary_keeps_the_spread(tmp_path: Path) -> None:
    name = "matmul/cpu/openblas/dtype:fp32/m:8/n:8/k:8/threads:1"
    rows = [
        gb_row(
            name, t, {"n": 8.0}, "workload=matmul backend=cpu", repetition_index=i, repetitions=3
        )
        for i, t in enumerate((3e-6, 1e-6, 2e-6))
    ]
    rows.append(
        gb_row(
            name,
            2e-6,
            {},
            "workload=matmul backend=cpu",
            run_type="aggregate",
            aggregate_name="median",
        )
    )
    table = load_table([str(write_bench_json(tmp_path / "r.json", rows))])
    assert table.rows["real_time_s"].tolist() == pytest.approx([3e-6, 1e-6, 2e-6])
    (point,) = summarize(table.rows).itertuples()
    assert (point.time_s, point.time_min_s, point.time_max_s) == pytest.approx((2e-6, 1e-6, 3e-6))
    assert point.repetitions == 3 and point.spread == pytest.approx(1.0)


def test_an_aggregates_only_file_gives_its_medians(tmp_path: Path) -> None:
    name = "matmul/cpu/openblas/dtype:fp32/m:8/n:8/k:8/threads:1"
    rows = [
        gb_row(
            name,
            5e-6,
            {},
            "workload=matmul backend=cpu",
            run_type="aggregate",
            aggregate_name="mean",
        ),
        gb_row(
            name,
            4e-6,
            {},
            "workload=matmul backend=cpu",
            run_type="aggregate",
            aggregate_name="median",
        ),
    ]
    table = load_table([str(write_bench_json(tmp_path / "a.json", rows))])
    assert table.rows["real_time_s"].tolist() == pytest.approx([4e-6])


def test_cpu_rows_come_from_the_run_and_gpu_rows_from_the_reference() -> None:
    mixed = load_table([CPU_RUN], REFERENCE)
    run, ref = load_table([CPU_RUN]), load_table(REFERENCE)
    rows = mixed.rows
    assert set(rows.loc[rows["backend"] == "cpu", "measured_on"]) == {THIS_RUN}
    assert set(rows.loc[rows["backend"] == "gpu", "measured_on"]) == {REFERENCE_RUN}
    assert (rows["backend"] == "cpu").sum() == (run.rows["backend"] == "cpu").sum()
    assert (rows["backend"] == "gpu").sum() == (ref.rows["backend"] == "gpu").sum() > 0
    # Each row carries the context of the file it came from.
    gpu_cpu_model = rows.loc[rows["backend"] == "gpu", "context.cpu_model"].unique()
    assert list(gpu_cpu_model) == [ref.machines.at[0, "cpu"]]
    machine = mixed.machines.iloc[0]
    assert machine["cpu"] == "AMD EPYC" and machine["gpu"] == "NVIDIA H100 80GB HBM3"
    assert machine["gpu_date"] == "2026-11-23" and not machine["gpu_same_host"]


def test_run_with_its_own_gpu_rows_does_not_use_the_reference() -> None:
    table = load_table([str(FIXTURES / "h100.json")], [str(FIXTURES / "a100_pcie.json")])
    said = note_lines(table.said("report"))
    assert any("--gpu-reference a100_pcie.json not used" in w for w in said)
    assert set(table.rows["measured_on"]) == {THIS_RUN}


@pytest.mark.parametrize(
    "reference, problem",
    [
        ([CPU_RUN], "--gpu-reference needs a run with GPU rows; this one has none"),
        (
            [str(FIXTURES / "h100.json"), str(FIXTURES / "a100_pcie.json")],
            "come from 2 GPU machines",
        ),
    ],
)
def test_unusable_references_are_rejected(reference: list[str], problem: str) -> None:
    with pytest.raises(BenchJsonError, match=problem):
        load_table([CPU_RUN], reference)


def test_same_machine_compares_gpu_cpu_threads_and_host_where_both_have_one() -> None:
    a = {"gpu": "X", "cpu_model": "C", "cpu_logical_cpus": "8", "host_name": "h1"}
    assert same_machine(a, dict(a))
    assert same_machine(a, {k: v for k, v in a.items() if k != "host_name"})
    assert not same_machine(a, dict(a, host_name="h2"))
    assert not same_machine(a, dict(a, cpu_logical_cpus="16"))
    assert not same_machine({"gpu": "none"}, {"gpu": "none"})


def test_gpu_rows_are_counted_from_the_json(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO / "tools"))
    cmd = [sys.executable, "-m", "gpubench_tools", "--gpu-rows"]
    proc = subprocess.run(cmd + [CPU_RUN], capture_output=True, text=True, env=env, timeout=60)
    assert (proc.returncode, proc.stdout) == (0, "0\n")
    proc = subprocess.run(cmd + REFERENCE, capture_output=True, text=True, env=env, timeout=60)
    assert (proc.returncode, proc.stdout) == (0, "377\n")
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    proc = subprocess.run(cmd + [str(bad)], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 2 and "top level is a list" in proc.stderr


def test_a_machine_without_a_gpu_has_none_beside_one_with_a_gpu() -> None:
    """A GPU machine and a CPU-only one in one table: the CPU-only machine's GPU is None, not NaN
    (pandas 3's string dtype makes a missing string NaN, which is truthy and has no .strip)."""
    table = load_table([FIXTURES / "h100.json", FIXTURES / "cpu_only.json"])
    gpus = dict(zip(table.machines["cpu"], table.machines["gpu"]))
    assert gpus["AMD EPYC"] is None
    assert gpus["Intel(R) Xeon(R) Platinum 8480+"] == "NVIDIA H100 80GB HBM3"
    assert list(table.machines["tag"]) == [None, None]


def test_each_tool_says_what_its_policy_says_of_the_rows_left_out(tmp_path: Path) -> None:
    """The table's notes carry their situation and each tool says those its policy action lists
    or warns about: the report lists failed and skipped rows and warns of invalid ones; the
    advisor leaves failed and skipped rows out without a word but warns of invalid ones; the
    table's own notes (a benchmark in two files of one machine) are said by both."""
    label = "workload=matmul backend=cpu"
    rows = [
        gb_row("matmul/cpu/openblas/n:16", 1e-6, label=label),
        gb_row(
            "matmul/cpu/openblas/n:32", 1e-6, label=label, error="does not fit in device memory"
        ),
        gb_row("matmul/cpu/openblas/n:64", 1e-6, label=label, error="wrong result"),
        gb_row("matmul/cpu/openblas/n:128", -1e-6, label=label),
    ]
    first = write_bench_json(tmp_path / "a.json", rows)
    second = write_bench_json(tmp_path / "b.json", rows[:1])
    table = load_table([str(first), str(second)])
    report, advise = note_lines(table.said("report")), note_lines(table.said("advise"))
    listed = [w for w in report if w.endswith("(listed in the report)")]
    assert len(listed) == 2 and any("failed" in w for w in listed)
    assert any("skipped" in w for w in listed)
    assert not [w for w in advise if w.endswith("(listed in the report)")]
    invalid = [w for w in report if w.endswith(": not used")]
    assert len(invalid) == 1 and invalid == [w for w in advise if w.endswith(": not used")]
    shared = [w for w in report if "more than one of" in w]
    assert len(shared) == 1 and shared == [w for w in advise if "more than one of" in w]


@pytest.mark.parametrize("key, value", [("flop", math.inf), ("FLOP/s", 1e308), ("m", math.nan)])
def test_a_bad_counter_keeps_the_time_and_is_left_out_of_the_point(
    tmp_path: Path, key: str, value: Any
) -> None:
    # A diverged training run writes final_loss NaN next to a sound time: the row stays a
    # measurement (compare judges the counter itself), and the report's point goes without it.
    path = with_value(tmp_path, 3, key, value)
    report = benchjson.load_report(str(path))
    row = report.rows[3]
    assert row.usable and row.real_time_s > 0
    assert not schema.usable_counter(row.counters[key])
    summary = summarize(load_table([str(path)]).rows)
    (point,) = summary[summary["name"] == row.run_name].itertuples()
    assert pd.isna(
        getattr(point, key.replace("/", "_"), math.nan)
        if key != "FLOP/s"
        else summary.loc[summary["name"] == row.run_name, key].iloc[0]
    )
    assert point.time_s == row.real_time_s
