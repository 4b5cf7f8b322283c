"""A run without GPU rows reported with the GPU rows of a committed reference run
(`gpubench-report RUN.json --gpu-reference REF.json ...`): CPU rows only from the run, GPU rows
only from the reference, and every number labelled with the machine it was measured on."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import CPU_RUN, FIXTURES, REFERENCE, REPO

from gpubench_tools.report.build import build_document
from gpubench_tools.table import gpu_benchmark_count, load_table
from gpubench_tools.wording import note_lines
from gpubench_tools.report import PROG, main


def _report(args: list[str]) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(args)
    return code, stdout.getvalue(), stderr.getvalue()


def _section(md: str, title: str) -> str:
    return md.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def test_cpu_only_run_gets_its_gpu_side_from_the_reference(mixed_report: dict[str, Any]) -> None:
    assert mixed_report["code"] == 0, mixed_report["stderr"]
    written = {p.stem for p in mixed_report["out"].glob("*.png")}
    assert {"speedup_gemm", "breakdown_gemm", "breakdown_training", "cpu_threads"} <= written
    # Stderr says first whose GPU numbers these are.
    assert mixed_report["stderr"].startswith(
        f"{PROG}: warning: GPU numbers come from the reference run h100-80gb-hbm3-matmul.json, "
        "h100-80gb-hbm3-mlp.json (NVIDIA H100 80GB HBM3, recorded 2026-11-23 on another machine)"
    )
    # Every chart's subtitle names both machines and whose each side is.
    for svg in mixed_report["out"].glob("*.svg"):
        text = svg.read_text()
        assert "AMD EPYC (this run)" in text, svg.name
        if svg.stem != "cpu_threads":
            assert "H100 80GB HBM3 (reference run, 2026-11-23)" in text, svg.name


def test_a_cpu_run_with_the_reference_says_whose_each_number_is(mixed_doc: dict[str, Any]) -> None:
    (gemm,) = [r for r in mixed_doc["answer"] if r["anchor"] == "gemm"]
    assert gemm["measured"] == "CPU: this run · GPU: reference run"
    assert "2026-11-23" in mixed_doc["reference"] and "another machine" in mixed_doc["reference"]
    assert mixed_doc["headline"] == "AMD EPYC vs H100 80GB HBM3"
    # The single-repetition rows are marked, and the document says so.
    assert mixed_doc["thin"] and "†" in gemm["ends"]


def test_reference_without_gpu_rows_is_rejected(tmp_path: Path) -> None:
    code, _, err = _report([CPU_RUN, "--gpu-reference", CPU_RUN, "--out", str(tmp_path)])
    assert code == 2
    assert err.strip().splitlines() == [
        f"{PROG}: error: {CPU_RUN}: --gpu-reference needs a run with GPU rows; " "this one has none"
    ]
    assert not (tmp_path / "report.html").exists()


def test_reference_from_two_gpu_machines_is_rejected(tmp_path: Path) -> None:
    a100, h100 = str(FIXTURES / "a100_pcie.json"), str(FIXTURES / "h100.json")
    code, _, err = _report([CPU_RUN, "--gpu-reference", h100, a100, "--out", str(tmp_path)])
    assert code == 2
    assert (
        "--gpu-reference files come from 2 GPU machines" in err and "give the files of one" in err
    )


def test_reference_with_two_cpu_machines_is_rejected(tmp_path: Path) -> None:
    other = json.loads(Path(CPU_RUN).read_text())
    other["context"]["cpu_model"] = "Another CPU"
    path = tmp_path / "other.json"
    path.write_text(json.dumps(other))
    code, _, err = _report(
        [CPU_RUN, str(path), "--gpu-reference", *REFERENCE, "--out", str(tmp_path / "r")]
    )
    assert code == 2
    assert "pairs the reference GPU with one machine's CPU; these files come from 2 machines" in err


def _quickstart_report_step(tmp_path: Path, run: Path) -> list[str]:
    """Run quickstart.sh's report step (from the comment that opens it to the end of the script)
    on `run`, with a Python that answers the GPU-row count for real and prints the report's
    arguments instead of writing the report. Returns those arguments."""
    script = (REPO / "scripts" / "quickstart.sh").read_text()
    step = script[script.index("# Without a GPU") :]
    run_dir = tmp_path / "run"
    run_dir.mkdir(parents=True)
    (run_dir / "bench.json").write_text(run.read_text())
    python = tmp_path / "python"
    python.write_text(
        "#!/usr/bin/env bash\n"
        'if [[ "$2" == gpubench_tools.report ]]; then printf "%s\\n" "${@:3}"; exit 0; fi\n'
        f'exec {sys.executable} "$@"\n'
    )
    python.chmod(0o755)
    proc = subprocess.run(
        ["bash", "-c", "set -euo pipefail\n" + step],
        capture_output=True,
        text=True,
        env=dict(os.environ, ROOT=str(REPO), PYTHON=str(python), run_dir=str(run_dir)),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return [line for line in proc.stdout.splitlines() if not line.startswith("gpubench:")]


def test_quickstart_adds_the_committed_reference_only_without_gpu_rows(tmp_path: Path) -> None:
    """quickstart.sh decides from the run's JSON (the count above): the committed reference for a
    run without GPU rows, nothing for a run with them."""
    args = _quickstart_report_step(tmp_path / "cpu", Path(CPU_RUN))
    assert args[1:] == ["--gpu-reference", *REFERENCE, "--out", str(tmp_path / "cpu" / "run")]
    assert args[0] == str(tmp_path / "cpu" / "run" / "bench.json")
    args = _quickstart_report_step(tmp_path / "gpu", FIXTURES / "h100.json")
    assert args[1:] == ["--out", str(tmp_path / "gpu" / "run")]


@pytest.mark.slow
def test_real_cpu_run_with_the_reference(tmp_path: Path, cpu_bench_run: Path) -> None:
    run = cpu_bench_run
    assert gpu_benchmark_count([str(run)]) == 0
    doc = build_document(load_table([str(run)], REFERENCE), tmp_path)
    gemm, iris = (
        next(r for r in doc["answer"] if r["anchor"] == anchor) for anchor in ("gemm", "mlp-iris")
    )
    for row in (gemm, iris):
        assert row["measured"] == "CPU: this run · GPU: reference run"
    # Three repetitions a side on the CPU, one on the reference: marked as few samples.
    assert "†" in gemm["ends"] and re.search(r"at n 16 → .* at 256", gemm["ends"])
    assert (tmp_path / "speedup_gemm.png").stat().st_size > 10_000


def test_a_reference_from_this_host_is_called_a_separate_run(
    tmp_path: Path, mixed_doc: dict[str, Any]
) -> None:
    """A CPU-only run on the reference's own host (its CPU, CPU count and host name): the GPU
    numbers are another run's, not another machine's, and the wording says so."""
    ref_context = json.loads(Path(REFERENCE[0]).read_text())["context"]
    doc = json.loads(Path(CPU_RUN).read_text())
    doc["context"].update(
        {k: ref_context[k] for k in ("cpu_model", "cpu_logical_cpus", "host_name")}
    )
    path = tmp_path / "here.json"
    path.write_text(json.dumps(doc))
    here = build_document(load_table([str(path)], REFERENCE), tmp_path / "here")
    assert "on this host" in here["reference"]
    assert "on another machine" in mixed_doc["reference"]


def test_an_interrupted_reference_is_said_once_at_the_top(tmp_path: Path) -> None:
    """A reference stopped by a signal holds only the benchmarks it finished: the report says so
    at its top, once, beside the run's own interruption (also said once)."""
    from test_interrupted import interrupted

    ref, ref_done, ref_all = interrupted(Path(REFERENCE[0]), tmp_path / "ref.json")
    run, run_done, run_all = interrupted(Path(CPU_RUN), tmp_path / "run.json")
    ref_line = (
        f"{ref}: the GPU reference run was interrupted by SIGTERM after {ref_done} of {ref_all} "
        f"benchmarks: {ref_all - ref_done} selected benchmarks were not measured (no rows)"
    )
    run_line = (
        f"{run}: the run was interrupted by SIGTERM after {run_done} of {run_all} benchmarks: "
        f"{run_all - run_done} selected benchmarks were not measured (no rows)"
    )
    assert note_lines(load_table([str(run)], [str(ref)]).cut_off) == [run_line, ref_line]
    out = tmp_path / "report"
    code, _, err = _report([str(run), "--gpu-reference", str(ref), "--out", str(out)])
    assert code == 0, err
    # First on the terminal, each once; then whose GPU numbers these are.
    lines = err.splitlines()
    assert lines[:2] == [f"{PROG}: warning: {run_line}", f"{PROG}: warning: {ref_line}"]
    assert err.count(ref_line) == 1 and err.count(run_line) == 1
    assert "GPU numbers come from the reference run ref.json" in lines[2]
    html = (out / "report.html").read_text()
    top = html.split("<h2", 1)[0]
    assert top.count(f"<strong>{ref_line}</strong>") == 1 and html.count(ref_line) == 1
    assert top.count(f"<strong>{run_line}</strong>") == 1 and html.count(run_line) == 1
