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
from conftest import FIXTURES, REPO, bench_binary
from md_plain import read_md

from gpubench_tools.dataset import gpu_benchmark_count, load_sources
from gpubench_tools.overhead_model import build_model
from gpubench_tools.report import PROG, main
from gpubench_tools.report.matmul_analysis import speedup_series

BASELINES = REPO / "reports" / "baselines"
REFERENCE = [
    str(BASELINES / "h100-80gb-hbm3-matmul.json"),
    str(BASELINES / "h100-80gb-hbm3-mlp.json"),
]
CPU_RUN = str(FIXTURES / "cpu_only.json")


def _report(args: list[str]) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(args)
    return code, stdout.getvalue(), stderr.getvalue()


def _section(md: str, title: str) -> str:
    return md.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


@pytest.fixture(scope="module")
def mixed_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("mixed")
    code, stdout, stderr = _report([CPU_RUN, "--gpu-reference", *REFERENCE, "--out", str(out)])
    return {"code": code, "out": out, "stderr": stderr, "md": read_md(out / "report.md")}


def test_cpu_only_run_gets_the_speedup_charts_from_the_reference(
    mixed_report: dict[str, Any],
) -> None:
    assert mixed_report["code"] == 0, mixed_report["stderr"]
    written = {p.stem for p in mixed_report["out"].glob("*.png")}
    assert {
        "speedup_square",
        "speedup_shapes",
        "breakdown_h100_80gb_hbm3_reference_run",
        "overhead_copies",
        "overhead_launch",
        "overhead_model",
    } <= written
    md = mixed_report["md"]
    assert "No GPU data" not in md and "no GPU data" not in mixed_report["stderr"]
    # The crossover table pairs this run's CPU with the reference GPU, and says so per row.
    assert "| H100 80GB HBM3 (reference run) vs AMD EPYC (this run) | e2e pinned | fp32 | n~" in md


def test_summary_names_both_machines(mixed_report: dict[str, Any]) -> None:
    summary = _section(mixed_report["md"], "Summary")
    assert "CPU numbers are this run's: AMD EPYC (cpu_only.json)." in summary
    assert (
        "GPU numbers are not from this machine: they are the NVIDIA H100 80GB HBM3 of a reference "
        "run recorded on another host (Intel Xeon Processor, 16 logical CPUs, host vm) on "
        "2026-11-23 at suite commit c24b26935322 "
        "(h100-80gb-hbm3-matmul.json + h100-80gb-hbm3-mlp.json)." in summary
    )
    assert "H100 80GB HBM3 (reference run) against AMD EPYC (this run): at n=" in summary
    assert "it overtakes the CPU at n~" in summary
    # The warning box and stderr say it too, ahead of everything else.
    assert mixed_report["stderr"].startswith(
        f"{PROG}: warning: GPU numbers come from the reference run "
        "h100-80gb-hbm3-matmul.json + h100-80gb-hbm3-mlp.json (NVIDIA H100 80GB HBM3, recorded "
        "on another host"
    )
    inputs = mixed_report["md"].split("\n\n")[1]
    assert inputs.startswith(
        "Inputs: cpu_only.json (AMD EPYC (this run), CPU only, 54 benchmarks), with the GPU rows "
        "of the reference run h100-80gb-hbm3-matmul.json + h100-80gb-hbm3-mlp.json "
        "(H100 80GB HBM3 (reference run), "
    )
    # The reference's own CPU rows (its Xeon's GEMMs) are not counted as this run's.
    assert "(H100 80GB HBM3 (reference run), 377 benchmarks, 1 skipped, recorded" in inputs


def test_every_chart_and_sentence_that_mixes_machines_says_so(
    mixed_report: dict[str, Any],
) -> None:
    md = mixed_report["md"]
    captions = re.findall(r"^\*(.+)\* \(\[SVG\]", md, flags=re.M)
    assert len(captions) == len(list(mixed_report["out"].glob("*.png")))
    for caption in captions:
        assert "H100 80GB HBM3 (reference run)" in caption, caption
        if not caption.startswith(
            ("Where the end-to-end", "Host <-> device", "Fixed costs", "Over")
        ):
            assert "AMD EPYC (this run)" in caption, caption
    # Outside the hardware table, the GPU is never named without saying it is the reference's.
    text = md.split("## Hardware and software")[0] + md.split("## 1. Speedup")[1]
    for match in re.finditer(r"H100 80GB HBM3(?! \(reference run\))", text):
        around = text[max(0, match.start() - 40) : match.end() + 20]
        assert re.search(
            r"NVIDIA H100 80GB HBM3( of a reference run|, recorded)|the H100 80GB HBM3 would"
            r"|reference run's \(H100 80GB HBM3\)",
            around,
        ), around
    # Sentences that compare with the CPU name this run's CPU.
    for line in md.splitlines():
        if "faster than the CPU" in line or "slower than the CPU" in line:
            assert "AMD EPYC (this run)" in line, line
    hardware = _section(md, "Hardware and software")
    assert (
        "|  | this run: AMD EPYC (cpu_only.json) | GPU reference run: H100 80GB HBM3 "
        "(h100-80gb-hbm3-matmul.json + h100-80gb-hbm3-mlp.json) |" in hardware
    )
    assert "| GPU | none | NVIDIA H100 80GB HBM3 |" in hardware
    svg = (mixed_report["out"] / "speedup_square.svg").read_text()
    assert "reference run" in svg and "another machine" in svg


def test_cpu_rows_come_from_the_run_and_gpu_rows_from_the_reference() -> None:
    (mixed,), _ = load_sources([CPU_RUN], REFERENCE)
    (run,), _ = load_sources([CPU_RUN])
    (ref,), _ = load_sources(REFERENCE)
    assert mixed.mixes_machines and mixed.has_gpu and not run.has_gpu
    # 128^3 is both a square and an MLP-layer shape under one name: the label tells them apart.
    run_cpu = {(p.run_name, p.shape): p.time for p in run.points}
    ref_gpu = {(p.run_name, p.shape): p.time for p in ref.points if p.is_gpu}
    assert len(mixed.matmul_cpu()) == len(run.matmul_cpu()) == 54
    assert len(ref.matmul_cpu()) == 50  # the reference's own CPU rows, which must stay out
    assert {(p.run_name, p.shape) for p in mixed.points} == set(run_cpu) | set(ref_gpu)
    series = speedup_series(mixed)
    assert series
    for s in series:
        for c, g, v in zip(s.cpu, s.gpu, s.speedup):
            assert c.time == run_cpu[(c.run_name, c.shape)]
            assert g.time == ref_gpu[(g.run_name, g.shape)]
            assert v == pytest.approx(c.time / g.time)
    # The overhead model and the GPU peaks are the reference's alone.
    mine, theirs = build_model(mixed), build_model(ref)
    assert mine.copies.keys() == theirs.copies.keys() and mine.copies
    for key, fit in mine.copies.items():
        assert fit.alpha_s == theirs.copies[key].alpha_s
    assert mine.launch.t_launch == theirs.launch.t_launch is not None
    assert mixed.gpu_peak("fp32") == ref.gpu_peak("fp32") == pytest.approx(6.69e13, rel=0.01)
    assert mixed.report.context["cpu_model"] == "AMD EPYC"


def test_run_with_its_own_gpu_rows_does_not_use_the_reference(
    tmp_path: Path, h100_report: dict[str, Any]
) -> None:
    code, _, err = _report(
        [
            str(FIXTURES / "h100.json"),
            "--gpu-reference",
            str(FIXTURES / "a100_pcie.json"),
            "--out",
            str(tmp_path),
        ]
    )
    assert code == 0, err
    assert "--gpu-reference a100_pcie.json not used: h100.json has GPU rows of its own" in err
    md = read_md(tmp_path / "report.md")
    assert "A100" not in md and "reference run" not in md
    whole = read_md(h100_report["out"] / "report.md")
    assert _section(md, "Summary") == _section(whole, "Summary")
    assert "--gpu-reference a100_pcie.json not used" in md.split("## Summary")[0]


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


def test_gpu_rows_are_counted_from_the_json(tmp_path: Path) -> None:
    assert gpu_benchmark_count([CPU_RUN]) == 0
    assert gpu_benchmark_count(REFERENCE) == 377
    env = dict(os.environ, PYTHONPATH=str(REPO / "tools"))
    cmd = [sys.executable, "-m", "gpubench_tools.dataset", "--gpu-rows"]
    proc = subprocess.run(cmd + [CPU_RUN], capture_output=True, text=True, env=env, timeout=60)
    assert (proc.returncode, proc.stdout) == (0, "0\n")
    proc = subprocess.run(cmd + REFERENCE, capture_output=True, text=True, env=env, timeout=60)
    assert (proc.returncode, proc.stdout) == (0, "377\n")
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    proc = subprocess.run(cmd + [str(bad)], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 2 and "top level is a list" in proc.stderr


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


def test_real_cpu_run_with_the_reference(tmp_path: Path) -> None:
    bench = bench_binary()
    if not (bench.is_file() and os.access(bench, os.X_OK)):
        pytest.skip(f"bench binary not found at {bench} (build it, or set GPUBENCH_BENCH)")
    run = tmp_path / "bench.json"
    proc = subprocess.run(
        [
            str(bench),
            "--benchmark_filter=matmul/cpu/openblas/dtype:fp32/m:(16|64|256)/n:[0-9]+/k:[0-9]+/"
            "|mlp/cpu/small/data:iris",
            "--benchmark_min_time=0.01",
            f"--benchmark_out={run}",
            "--benchmark_out_format=json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, CUDA_VISIBLE_DEVICES=""),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert gpu_benchmark_count([str(run)]) == 0
    cpu = json.loads(run.read_text())["context"]["cpu_model"]
    out = tmp_path / "r"
    report = subprocess.run(
        [sys.executable, "-m", "gpubench_tools.report", str(run), "--gpu-reference", *REFERENCE]
        + ["--out", str(out)],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(REPO / "tools")),
        timeout=300,
    )
    assert report.returncode == 0, report.stderr
    md = read_md(out / "report.md")
    summary = _section(md, "Summary")
    assert f"CPU numbers are this run's: {cpu} (bench.json)." in summary
    assert "they are the NVIDIA H100 80GB HBM3 of a reference run" in summary
    assert "(this run): at n=" in summary
    assert "(reference run) against " in summary and "on Iris the eager GPU path" in summary
    assert (out / "speedup_square.png").stat().st_size > 10_000
    assert (out / "mlp_iris.png").stat().st_size > 10_000


def test_a_reference_from_this_host_is_called_a_separate_run(tmp_path: Path) -> None:
    """A CPU-only run on the reference's own host (its CPU, CPU count and host name): the GPU
    numbers are another run's, not another machine's, and the wording says so."""
    from gpubench_tools.report.charts_common import machines_note
    from gpubench_tools.report.sentences import whose_numbers_sentences

    ref_context = json.loads(Path(REFERENCE[0]).read_text())["context"]
    doc = json.loads(Path(CPU_RUN).read_text())
    doc["context"].update(
        {k: ref_context[k] for k in ("cpu_model", "cpu_logical_cpus", "host_name")}
    )
    path = tmp_path / "here.json"
    path.write_text(json.dumps(doc))
    (src,), _ = load_sources([str(path)], REFERENCE)
    assert src.gpu_reference is not None and src.gpu_reference.same_host
    first = whose_numbers_sentences(src)[0]
    assert (
        "GPU numbers are not from this run: they are the NVIDIA H100 80GB HBM3 of a reference "
        in first
    )
    assert "recorded on a host with this run's CPU and host name (Intel Xeon Processor" in first
    assert machines_note([src]).endswith("measured in a separate run on this host")
    (other,), _ = load_sources([CPU_RUN], REFERENCE)
    assert machines_note([other]).endswith("measured on another machine")
    assert "GPU numbers are not from this machine" in whose_numbers_sentences(other)[0]
