"""The report command end to end: files written, robustness, error exits, the real binary."""

from __future__ import annotations

import json
import re
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, REPO
from md_plain import read_md

from gpubench_tools.report import main
from bad_inputs import OK, bf16_run, call_tool, cpu_doc, with_value

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

# The charts of the H100 fixture's report: its speedup curves, where the GPU time goes, and the
# CPU's thread scaling (the fixture has 1- and 16-thread CPU rows).
GPU_CHARTS = [
    "speedup_gemm",
    "speedup_mlp-iris",
    "speedup_mlp-sweep",
    "breakdown_gemm",
    "cpu_threads",
    "heatmap_mlp-sweep",
    "utilisation_gemm",
    "time_gemm",
    "time_mlp-iris",
    "time_mlp-sweep",
    "copies",
    "roofline_0",
]


def run_report(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_every_chart_is_written_and_non_empty(h100_report: dict[str, Any]) -> None:
    assert h100_report["code"] == 0
    out: Path = h100_report["out"]
    for key in GPU_CHARTS:
        png, svg = out / f"{key}.png", out / f"{key}.svg"
        assert png.read_bytes()[:8] == PNG_MAGIC, key
        assert png.stat().st_size > 10_000, key
        assert svg.read_text().lstrip().startswith("<?xml"), key
    written = {p.stem for p in out.glob("*.png")}
    assert written == set(GPU_CHARTS)


def test_model_section_states_the_probes_and_the_error(h100_report: dict[str, Any]) -> None:
    md = read_md(h100_report["out"] / "report.md")
    model = md.split("## The overhead model and its error")[1].split("\n## ")[0]
    assert "| copy h2d (pinned): fixed cost alpha, bandwidth beta | 2.20 us, 52 GB/s |" in model
    assert "Signed model error of the fp32 pinned GEMMs, per size band: n < 256:" in model
    assert "| GEMMs | count | median error | range | median after | range after |" in model


def test_html_is_self_contained_and_markdown_links_charts(h100_report: dict[str, Any]) -> None:
    out: Path = h100_report["out"]
    html = (out / "report.html").read_text()
    assert html.count('src="data:image/png;base64,') == len(GPU_CHARTS)
    assert '<img src="http' not in html and "<script" not in html
    md = read_md(out / "report.md")
    for key in GPU_CHARTS:
        assert f"]({key}.png)" in md
    assert "| GPU | NVIDIA H100 80GB HBM3 |" in md
    # The answer, from the fixture's numbers: the GPU wins from n = 256 on.
    assert re.search(r"\| \[Square GEMM, fp32\]\(#gemm\) \| [^|]+ \| n ≥ 256 \| n ≈ 230 \|", md)
    # The benchmark that does not fit is counted and listed as skipped, with bench's message.
    assert "Inputs: h100.json; 369 benchmarks measured, 1 skipped." in md
    assert "1 skipped in h100.json: does not fit in device memory" in md
    assert (
        "- `matmul/gpu/cublas_kernel/dtype:fp64/m:65536/n:65536/k:65536/manual_time`"
        in (out / "report.md").read_text()
    )
    assert "failed in" not in md


def test_prints_the_report_path_last(h100_report: dict[str, Any]) -> None:
    lines = h100_report["stdout"].strip().splitlines()
    assert lines[-1] == str(h100_report["out"] / "report.html")
    assert "1 benchmark in" in h100_report["stderr"]
    assert "h100.json was skipped, does not fit in device memory" in h100_report["stderr"]


def test_overlay_of_two_machines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = run_report(
        [str(FIXTURES / "h100.json"), str(FIXTURES / "a100_pcie.json"), "--out", str(tmp_path)],
        capsys,
    )
    assert code == 0
    md = read_md(tmp_path / "report.md")
    # An answer row per machine, and both machines in the overlaid chart.
    assert "[Square GEMM, fp32 (Intel Xeon Platinum 8480+ vs H100 80GB HBM3)](#gemm)" in md
    assert "[Square GEMM, fp32 (AMD EPYC 7742 64-Core Processor vs A100-PCIE-40GB)](#gemm)" in md
    assert "A100-PCIE-40GB" in (tmp_path / "speedup_gemm.svg").read_text()


def test_cpu_only_input_says_there_is_no_gpu_side(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_report([str(FIXTURES / "cpu_only.json"), "--out", str(tmp_path)], capsys)
    assert code == 0
    assert {p.stem for p in tmp_path.glob("*.png")} == {"cpu_threads", "measured_matmul-0-one-side"}
    md = read_md(tmp_path / "report.md")
    # No GPU side: the row says so, and links to the section of what was measured.
    row = "| [Square GEMM, fp32](#matmul-0-one-side) | — | — | — | — | no GPU rows to compare |"
    assert row in md and '<a id="matmul-0-one-side"></a>' in md


def test_failed_and_skipped_rows_are_told_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads((FIXTURES / "cpu_only.json").read_text())
    failed = dict(doc["benchmarks"][0], name="matmul/cpu/openblas/broken", run_name="x/broken")
    failed.update(error_occurred=True, error_message="result differs from the reference")
    fused = "mlp/gpu/fused/data:synthetic/batch:256/hidden:64x2/readback:0/manual_time"
    skipped = dict(failed, name=fused, run_name=fused, error_message="does not fit on chip: 9 B")
    # Two repetitions of the skipped benchmark: one line for it, not one per repetition.
    doc["benchmarks"] += [failed, skipped, dict(skipped, repetition_index=1)]
    path = tmp_path / "errors.json"
    path.write_text(json.dumps(doc))
    code, _, err = run_report([str(path), "--out", str(tmp_path / "r")], capsys)
    assert code == 0, err
    assert "1 benchmark in" in err and "errors.json failed (listed in the report)" in err
    assert "errors.json was skipped, does not fit on chip (listed in the report)" in err
    md = (tmp_path / "r" / "report.md").read_text()
    assert "54 benchmarks measured, 1 failed, 1 skipped." in read_md(tmp_path / "r" / "report.md")
    assert "1 failed in errors.json: result differs from the reference" in md
    assert "1 skipped in errors.json: does not fit on chip" in md
    assert md.count(f"- `{fused}`") == 1


def test_repetitions_plot_medians(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = run_report([str(FIXTURES / "h100_reps.json"), "--out", str(tmp_path)], capsys)
    assert code == 0
    assert (tmp_path / "speedup_gemm.png").stat().st_size > 0
    assert "mlp" not in {p.stem.split("_")[-1].split("-")[0] for p in tmp_path.glob("*.png")}


def test_truncated_input_uses_complete_rows_and_warns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (FIXTURES / "cpu_only.json").read_text()
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) // 2])
    code, out, err = run_report([str(cut), "--out", str(tmp_path / "r")], capsys)
    assert code == 0
    assert f"recovered 26 complete benchmark rows from truncated file {cut}" in err
    assert "recovered 26 complete benchmark rows" in read_md(tmp_path / "r" / "report.md")


ERROR_CASES = {
    "empty.json": ("", "file is empty"),
    "notjson.json": ("this is not json", "not valid JSON"),
    "list.json": ("[]", "top level is a list"),
    "foreign.json": ('{"compilerOptions": {"strict": true}}', "no 'benchmarks' list"),
    # A row that breaks the schema is an invalid row, named with its field; a file
    # with nothing else has nothing to report.
    "noname.json": ('{"benchmarks": [{"real_time": 3}]}', "row 0: name is missing"),
    "notime.json": ('{"benchmarks": [{"name": "x"}]}', "x: run_name is missing"),
    "onlyfailed.json": (
        '{"benchmarks": [{"name": "x", "run_type": "iteration", "error_occurred": true, "error_message": "no GPU"}]}',
        "no successful benchmark rows",
    ),
}


@pytest.mark.parametrize("name", sorted(ERROR_CASES))
def test_bad_input_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    content, message = ERROR_CASES[name]
    path = tmp_path / name
    path.write_text(content)
    code, out, err = run_report([str(path), "--out", str(tmp_path / "r")], capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert str(path) in lines[0] and message in lines[0]
    assert not (tmp_path / "r" / "report.html").exists()


def test_one_bad_file_among_good_ones_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    code, _, err = run_report(
        [str(FIXTURES / "cpu_only.json"), str(bad), "--out", str(tmp_path / "r")], capsys
    )
    assert code == 2 and str(bad) in err


def test_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_report([str(tmp_path / "nope.json"), "--out", str(tmp_path)], capsys)
    assert code == 2 and "cannot read file" in err


def _module_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "tools") + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_module_entry_point_reports_errors_on_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("[1]")
    proc = subprocess.run(
        [sys.executable, "-m", "gpubench_tools.report", str(bad), "--out", str(tmp_path / "r")],
        capture_output=True,
        text=True,
        env=_module_env(),
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"python -m gpubench_tools.report: error: {bad}: top level is a list, expected a JSON object"
    ]


@pytest.mark.slow
def test_real_binary_output_makes_a_report(tmp_path: Path, cpu_bench_run: Path) -> None:
    out_json = cpu_bench_run
    report = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpubench_tools.report",
            str(out_json),
            "--out",
            str(tmp_path / "r"),
        ],
        capture_output=True,
        text=True,
        env=_module_env(),
        timeout=300,
    )
    assert report.returncode == 0, report.stderr
    assert report.stdout.strip().splitlines()[-1] == str(tmp_path / "r" / "report.html")
    md = read_md(tmp_path / "r" / "report.md")
    # No GPU side: the row says so, and links to the section of what was measured.
    row = "| [Square GEMM, fp32](#matmul-0-one-side) | — | — | — | — | no GPU rows to compare |"
    assert row in md and '<a id="matmul-0-one-side"></a>' in md
    assert (tmp_path / "r" / "cpu_threads.png").stat().st_size > 0


@pytest.mark.parametrize("prefix", ["matmul/gpu/", "overhead/", "mlp/", "mlp/cpu/", "matmul/cpu/"])
def test_partial_runs_still_make_a_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], prefix: str
) -> None:
    """A filtered run (--benchmark_filter) holds only some workloads: every other section must
    say what is missing instead of failing."""
    doc = json.loads((FIXTURES / "h100.json").read_text())
    doc["benchmarks"] = [r for r in doc["benchmarks"] if r["name"].startswith(prefix)]
    path = tmp_path / "part.json"
    path.write_text(json.dumps(doc))
    code, out, err = run_report([str(path), "--out", str(tmp_path / "r")], capsys)
    assert code == 0, err
    md = read_md(tmp_path / "r" / "report.md")
    assert md.startswith("# gpubench report")
    # Only the workloads the filter kept answer.
    answered = "MLP training on Iris" in md.split("## The answer")[1].split("Contents")[0]
    assert answered == prefix.startswith("mlp")


def _split_h100(tmp_path: Path) -> tuple[Path, Path]:
    """The H100 fixture as one session writes it with one file per workload: matmul and
    overhead probes in one file, the MLP rows in another, the same context in both."""
    doc = json.loads((FIXTURES / "h100.json").read_text())
    mlp = [r for r in doc["benchmarks"] if r["name"].startswith("mlp/")]
    rest = [r for r in doc["benchmarks"] if not r["name"].startswith("mlp/")]
    a, b = tmp_path / "h100-matmul.json", tmp_path / "h100-mlp.json"
    a.write_text(json.dumps({"context": doc["context"], "benchmarks": rest}))
    later = dict(doc["context"], date="2026-01-01T12:00:00+00:00", load_avg=[0.1, 0.1, 0.1])
    b.write_text(json.dumps({"context": later, "benchmarks": mlp}))
    return a, b


def test_two_files_from_one_machine_are_merged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], h100_report: dict[str, Any]
) -> None:
    a, b = _split_h100(tmp_path)
    code, _, err = run_report([str(a), str(b), "--out", str(tmp_path / "r")], capsys)
    assert code == 0, err
    md = read_md(tmp_path / "r" / "report.md")
    # One machine, labelled by its device names, with both files on the inputs line.
    assert md.startswith("# gpubench report: Intel Xeon Platinum 8480+ vs H100 80GB HBM3\n")
    assert "Inputs: h100-matmul.json, h100-mlp.json; 369 benchmarks measured, 1 skipped." in md
    written = {p.stem for p in (tmp_path / "r").glob("*.png")}
    assert written == set(GPU_CHARTS)
    # Merging the halves tells the same story as the single file they came from.
    whole = read_md(h100_report["out"] / "report.md")

    def story(text: str) -> str:
        answer = text.split("## The answer")[1].split("**Warnings**")[0]
        sections = text.split("**Contents**")[1].split("## Hardware")[0]
        text = answer + sections
        return text.replace("h100-matmul.json, h100-mlp.json", "h100.json").replace(
            "h100-matmul.json", "h100.json"
        )

    assert story(md) == story(whole)
    assert "treated as repetitions" not in err


def test_files_of_machines_that_differ_only_in_host_stay_separate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _split_h100(tmp_path)
    doc = json.loads(b.read_text())
    doc["context"]["host_name"] = "other-node"
    b.write_text(json.dumps(doc))
    code, _, err = run_report([str(a), str(b), "--out", str(tmp_path / "r")], capsys)
    assert code == 0, err
    md = read_md(tmp_path / "r" / "report.md")
    # Same device names on two hosts: told apart by host name.
    assert "H100 80GB HBM3 (h100-node)" in md and "H100 80GB HBM3 (other-node)" in md


def test_verbose_tells_two_files_of_one_name_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--verbose lists each problem row with its file as the inputs line names it: two runs both
    called bench.json by their folders, not twice 'bench.json'."""
    doc = json.loads((FIXTURES / "cpu_only.json").read_text())
    paths = []
    for day in ("monday", "tuesday"):
        failed = dict(doc["benchmarks"][0], name=f"matmul/cpu/openblas/{day}")
        failed.update(run_name=failed["name"], error_occurred=True, error_message="wrong result")
        (tmp_path / day).mkdir()
        path = tmp_path / day / "bench.json"
        path.write_text(json.dumps(dict(doc, benchmarks=doc["benchmarks"] + [failed])))
        paths.append(str(path))
    code, _, err = run_report([*paths, "--out", str(tmp_path / "r"), "--verbose"], capsys)
    assert code == 0, err
    assert "monday/bench.json: failed: matmul/cpu/openblas/monday" in err
    assert "tuesday/bench.json: failed: matmul/cpu/openblas/tuesday" in err


def test_report_on_a_zero_time_lists_the_row_invalid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = with_value(tmp_path, 5, "real_time", 0)
    code, _, err = call_tool(capsys, main, str(path), "--out", str(tmp_path / "r"))
    assert code == OK, err
    md = (tmp_path / "r" / "report.md").read_text()
    name = cpu_doc()["benchmarks"][5]["name"]
    assert "1 invalid in run.json: real_time is 0" in md
    assert f"- `{name}`" in md
    assert "Traceback" not in err


def test_report_says_one_reason_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = bf16_run(tmp_path)
    code, _, err = call_tool(capsys, main, str(path), "--out", str(tmp_path / "r"))
    assert code == OK, err
    md = (tmp_path / "r" / "report.md").read_text()
    html = (tmp_path / "r" / "report.html").read_text()
    failed_section = md.split("## Failed, skipped and invalid benchmarks")[1]
    assert failed_section.count("<summary>") == 1  # one line for the 18 skipped benchmarks
    assert "18 skipped in" in failed_section and failed_section.count("cblas_sbgemm") == 1
    assert failed_section.count("<details>") == 1 and failed_section.count("\n- `mlp/cpu/") == 18
    assert html.count("<details><summary>18 skipped") == 1
    assert html.count("<li><code>mlp/cpu/") == 18
    # The terminal: one warning line for the reason, the names only with --verbose.
    assert sum("skipped" in line for line in err.splitlines()) == 1
    code, _, err = call_tool(capsys, main, str(path), "--out", str(tmp_path / "v"), "--verbose")
    assert code == OK and sum("/precision:bf16" in line for line in err.splitlines()) == 18
    code, out, err = call_tool(capsys, main, str(path), "--out", str(tmp_path / "q"), "--quiet")
    assert (code, out, err) == (OK, "", "")
