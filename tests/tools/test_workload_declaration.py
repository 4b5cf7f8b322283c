"""A workload has one home on the tools side: the report's topic declaration (report/topics.py).

(a) The modules that turn topics into a report name no workload, GEMM included. (Which files of
the whole repository, tools included, may name a training workload is
tests/layout/test_workload_home.py's counting rule.)
(b) A new training workload is one entry in `TOPICS`: a 1-D convolution net's rows, with that
one entry added to a copy of topics.py and no other change, get their answer lines, their
section, their part of the GPU-time breakdown and their energy row.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import REPO, gb_row, write_bench_json
from md_plain import read_md

# The training workloads (tests/layout/test_workload_home.py counts where they are named).
WORKLOADS = ("cnn", "mlp")
# The modules that turn topics into a report (every module of the report but its declaration):
# they name no workload at all, GEMM's included.
GENERIC = tuple(
    str(path.relative_to(REPO))
    for path in sorted((REPO / "tools" / "gpubench_tools" / "report").glob("*.py"))
    if path.name != "topics.py"
)


def test_the_report_builder_and_analysis_name_no_workload() -> None:
    from gpubench_tools.report.topics import TOPICS

    assert "tools/gpubench_tools/report/build.py" in GENERIC, GENERIC  # the scan finds them
    labels = sorted({str(t.cpu["workload"]) for t in TOPICS} | set(WORKLOADS))
    found = {
        module: [w for w in labels if re.search(w, (REPO / module).read_text(), re.IGNORECASE)]
        for module in GENERIC
    }
    assert found == {module: [] for module in GENERIC}


# --- (b) a new training workload as one topic entry --------------------------------------------

# The entry a person would add to TOPICS for a 1-D convolution net, as the other training topics
# are declared, nothing else.
CONV1D_TOPIC = """
    _training_topic(
        id="conv1d",
        title="1-D convolution training",
        workload="conv1d",
        keys=("batch",),
    ),"""

CONTEXT: dict[str, Any] = {
    "generated_by": "tests/tools/test_workload_declaration.py: hand-made rows, not a measurement",
    "host_name": "conv1d-test",
    "cpu_model": "Hand-made Test CPU",
    "cpu_logical_cpus": "16",
    "gpu": "NVIDIA H100 80GB HBM3",
    "gpu_peak_fp32_flops": "6.69e+13",
}
STEPS = 100
# Per batch: CPU step, eager GPU step, graph GPU step (seconds). The CPU wins at batch 1 and 16,
# the GPU from 256; the eager path is all launch overhead, the graph path mostly compute.
CONV1D_STEPS = {
    1: (20e-6, 300e-6, 60e-6),
    16: (150e-6, 310e-6, 70e-6),
    256: (2.4e-3, 400e-6, 150e-6),
}


def _conv1d_rows() -> list[dict[str, Any]]:
    """The rows bench would write for the net: a CPU row and two GPU paths per batch, named and
    labelled like the other training workloads' rows."""
    rows = []
    for batch, (cpu, eager, graph) in CONV1D_STEPS.items():
        flop = 1e6 * batch
        case = f"data:synthetic/batch:{batch}"
        rows.append(
            gb_row(
                f"conv1d/cpu/openblas/{case}/readback:1/threads:1",
                cpu * STEPS,
                {"batch": batch, "steps": STEPS, "t_step": cpu, "t_wall": cpu * STEPS,
                 "flop": flop * STEPS, "blas_threads": 1},  # fmt: skip
                "workload=conv1d backend=cpu variant=openblas data=synthetic precision=fp32",
            )
        )
        for variant, step, compute_share in (("eager", eager, 0.2), ("graph", graph, 0.9)):
            wall = step * STEPS
            rows.append(
                gb_row(
                    f"conv1d/gpu/{variant}/{case}/readback:0/manual_time",
                    wall,
                    {"batch": batch, "steps": STEPS, "t_step": step, "t_wall": wall,
                     "t_compute": compute_share * wall, "t_overhead": (1 - compute_share) * wall,
                     "t_h2d": 0.0, "t_d2h": 0.0, "flop": flop * STEPS, "kernels": 12.0 * STEPS,
                     "readback": 0, "gpu_energy_j": 50.0 * wall},  # fmt: skip
                    f"workload=conv1d backend=gpu variant={variant} data=synthetic "
                    "precision=fp32 input=resident",
                )
            )
    return rows


def _tools_with_entry(tmp_path: Path) -> Path:
    """A copy of the tools package whose topics.py has the one entry added at the end of TOPICS."""
    tools = tmp_path / "tools"
    shutil.copytree(
        REPO / "tools" / "gpubench_tools",
        tools / "gpubench_tools",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    topics = tools / "gpubench_tools" / "report" / "topics.py"
    text = topics.read_text(encoding="utf-8")
    start = text.index("TOPICS: tuple[Topic, ...] = (")
    end = text.index("\n)\n", start)
    topics.write_text(text[:end] + CONV1D_TOPIC + text[end:], encoding="utf-8")
    return tools


def _section(md: str, title: str) -> str:
    start = md.index(f"\n## {title}\n")
    end = md.find("\n## ", start + 1)
    return md[start : end if end >= 0 else len(md)]


def _report(tmp_path: Path, tools: Path) -> str:
    """report.md of the conv1d rows, written by the tools package under `tools`."""
    run = write_bench_json(tmp_path / "conv1d.json", _conv1d_rows(), CONTEXT)
    out = tmp_path / "report"
    proc = subprocess.run(
        [sys.executable, "-m", "gpubench_tools.report", str(run), "--out", str(out), "--quiet"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(tools)),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return read_md(out / "report.md")


def test_a_new_training_workload_is_one_topic_entry(tmp_path: Path) -> None:
    md = _report(tmp_path, _tools_with_entry(tmp_path))

    # The answer: a row with a line per declared GPU path, each saying where the GPU wins and
    # what dominates its time (from the breakdown, which must know the new training rows).
    answer = [line for line in _section(md, "The answer").splitlines() if line.startswith("|")]
    (first,) = [i for i, line in enumerate(answer) if "1-D convolution training" in line]
    eager, fastest = answer[first], answer[first + 1]
    assert "| eager: one launch per operation" in eager, eager
    assert "| batch ≥ 256 |" in eager, eager
    assert "| overhead: launches, synchronisation, API calls (where it loses) |" in eager, eager
    assert fastest.startswith("|  | fastest: "), fastest
    assert "| batch ≥ 16 |" in fastest, fastest
    assert "| under-utilisation: too little work to fill the GPU (where it loses) |" in fastest

    # Its section, with the speedup and time charts every topic has.
    section = _section(md, "1-D convolution training")
    assert "(speedup_conv1d.png)" in section and "(time_conv1d.png)" in section, section

    # Its GPU rows in the breakdown (the input has no other training rows), a bar per path,
    # under a title that names no other workload's data.
    breakdown = _section(md, "Where the GPU time goes")
    assert "![Where a GPU training step goes](breakdown_training.png)" in breakdown, breakdown
    assert "\n| eager readback:0 |" in breakdown and "\n| graph readback:0 |" in breakdown

    # Its pairs in the energy table, one per batch, at the fastest GPU path.
    energy = _section(md, "Energy per training step, CPU vs GPU")
    assert energy.count("\n| 1-D convolution training | batch ") == len(CONV1D_STEPS), energy


def test_without_the_entry_the_rows_make_no_workload(tmp_path: Path) -> None:
    """What the check above proves is the entry: the same rows without it get no answer line."""
    md = _report(tmp_path, REPO / "tools")
    assert "1-D convolution training" not in md
    assert "conv1d" in md  # the rows were read: the inputs line and the hardware name them
