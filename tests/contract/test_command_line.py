"""`bench`'s command line beyond Google Benchmark's: --help names `bench` and lists gpubench's own
flags and every environment variable the source reads; run flags that would run forever, abort or
run nothing are rejected with exit code 2 before anything runs; output that was not written
completely (--benchmark_out, stdout) is exit code 1, never a silent success.
"""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCE_FOLDERS = ("benchmarks", "harness", "kernels")
# One 16x16 product: the smallest CPU row, well under a second with a short minimum time.
TINY_FILTER = "--benchmark_filter=^matmul/cpu/openblas/dtype:fp32/m:16/n:16/k:16/threads:1$"
SHORT_TIME = "--benchmark_min_time=0.001"
# Long enough for a run of the tiny row; a value that makes bench run forever (nan, inf) ends here.
TIMEOUT_S = 60


def bench_binary() -> Path:
    path = os.environ.get("GPUBENCH_BENCH")
    if not path:
        pytest.skip("GPUBENCH_BENCH is not set (scripts/test.sh sets it to the built binary)")
    return Path(path)


def run_bench(*arguments: str, **options) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(bench_binary()), *arguments],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        **options,
    )


def source_text() -> str:
    return "\n".join(
        path.read_text(encoding="utf-8")
        for folder in SOURCE_FOLDERS
        for path in sorted((REPO / folder).rglob("*"))
        if path.suffix in {".cpp", ".hpp", ".cu", ".cuh", ".h"}
    )


def environment_variables_read() -> set[str]:
    """Every variable the C++ reads with getenv, and every "GPUBENCH_*" string it names."""
    text = source_text()
    names = set(re.findall(r'getenv\(\s*"([A-Za-z_][A-Za-z0-9_]*)"', text))
    names |= set(re.findall(r'"(GPUBENCH_[A-Z0-9_]+)"', text))
    return names


def own_flags() -> set[str]:
    """The flags bench takes out of argv before Google Benchmark sees it."""
    return set(re.findall(r'"(--(?!benchmark_)[a-z][a-z-]*)"', source_text()))


def google_benchmark_version() -> tuple[int, int]:
    help_text = run_bench("--help").stdout
    match = re.search(r"^Google Benchmark (\d+)\.(\d+)", help_text, re.MULTILINE)
    assert match, "--help does not say which Google Benchmark bench links"
    return int(match.group(1)), int(match.group(2))


def test_the_source_reads_the_variables_the_help_must_name() -> None:
    # Guards the grep itself: were it to find nothing, the help test below would pass vacuously.
    assert {"GPUBENCH_FULL", "GPUBENCH_PROGRESS_SECONDS", "GPUBENCH_CIFAR10_DIR"} <= (
        environment_variables_read()
    )
    assert {"--full", "--schema", "--list-all"} <= own_flags()


def test_help_names_bench_and_lists_every_flag_and_variable() -> None:
    run = run_bench("--help")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("bench ["), lines[0]
    assert not any(line.startswith("benchmark ") for line in lines)
    # Google Benchmark's own flags come first, then gpubench's.
    assert any("--benchmark_filter=" in line for line in lines)
    own_section = run.stdout.index("gpubench flags:")
    assert run.stdout.index("--benchmark_filter=") < own_section
    wanted = (
        own_flags() | environment_variables_read() | {"OPENBLAS_CORETYPE", "CUDA_VISIBLE_DEVICES"}
    )
    for name in sorted(wanted):
        described = [line for line in lines if re.match(rf"\s+{re.escape(name)}\b", line)]
        assert len(described) == 1, f"--help has {len(described)} lines for {name}:\n{run.stdout}"
        assert len(described[0].split()) > 2, f"{name} has no description"
    min_time = [line for line in lines if re.match(r"\s+--benchmark_min_time\b", line)]
    assert min_time and "0.05 s" in min_time[0], run.stdout


@pytest.mark.parametrize(
    "argument",
    [
        "--benchmark_min_time=nan",
        "--benchmark_min_time=inf",
        "--benchmark_min_time=-inf",
        "--benchmark_min_time=0",
        "--benchmark_min_time=0s",
        "--benchmark_min_time=-1",
        "--benchmark_min_time=abc",
        "--benchmark_min_time=0.5ss",
        "--benchmark_min_time=",
        "--benchmark_min_time=0x",
        "--benchmark_min_time=-5x",
        "--benchmark_repetitions=0",
        "--benchmark_repetitions=-1",
        "--benchmark_repetitions=two",
        "--benchmark_min_warmup_time=-1",
        "--benchmark_min_warmup_time=nan",
        "--benchmark_min_warmup_time=inf",
        "--benchmark_format=xml",
        "--benchmark_out_format=xml",
    ],
)
def test_invalid_run_flag_is_rejected_before_anything_runs(tmp_path: Path, argument: str) -> None:
    out = tmp_path / "out.json"
    run = run_bench(TINY_FILTER, argument, f"--benchmark_out={out}")
    assert run.returncode == 2, f"exit {run.returncode}; stderr: {run.stderr}"
    messages = [line for line in run.stderr.splitlines() if argument in line]
    assert len(messages) == 1, run.stderr
    assert messages[0].startswith("gpubench: "), messages[0]
    assert "matmul/cpu" not in run.stdout  # no benchmark ran
    assert not out.exists()


@pytest.mark.parametrize(
    "argument",
    [
        "--benchmark_min_time=0.001",
        "--benchmark_min_time=0.001s",
        "--benchmark_min_time=1e-3",
        "--benchmark_repetitions=2",
        "--benchmark_min_warmup_time=0",
        "--benchmark_min_warmup_time=0.001",
    ],
)
def test_valid_run_flag_runs(tmp_path: Path, argument: str) -> None:
    out = tmp_path / "out.json"
    run = run_bench(TINY_FILTER, SHORT_TIME, argument, f"--benchmark_out={out}")
    assert run.returncode == 0, run.stderr
    rows = json.loads(out.read_text())["benchmarks"]
    repetitions = 2 if argument.endswith("repetitions=2") else 1
    assert len([row for row in rows if row["run_type"] == "iteration"]) == repetitions


def test_iteration_count_runs_where_the_library_supports_it(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    run = run_bench(TINY_FILTER, "--benchmark_min_time=100x", f"--benchmark_out={out}")
    if google_benchmark_version() >= (1, 8):
        assert run.returncode == 0, run.stderr
        assert json.loads(out.read_text())["benchmarks"][0]["iterations"] == 100
    else:
        assert run.returncode == 2
        assert "needs Google Benchmark 1.8" in run.stderr, run.stderr
        assert not out.exists()


@pytest.mark.parametrize("out_format", ["json", "csv", "console"])
def test_output_to_a_full_device_is_exit_code_1(out_format: str) -> None:
    run = run_bench(
        TINY_FILTER, SHORT_TIME, "--benchmark_out=/dev/full", f"--benchmark_out_format={out_format}"
    )
    assert run.returncode == 1, f"exit {run.returncode}; stderr: {run.stderr}"
    messages = [line for line in run.stderr.splitlines() if "/dev/full" in line]
    assert len(messages) == 1 and "failed" in messages[0], run.stderr


def limit_file_size() -> None:
    # A file-size limit cuts the output file off as a full disk would; with SIGXFSZ ignored the
    # write fails (EFBIG) instead of killing the process.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


def test_output_cut_off_by_a_full_disk_is_exit_code_1(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    run = run_bench(
        "--benchmark_filter=^matmul/cpu/openblas/dtype:fp32/m:(16|32|64)/n:(16|32|64)/k:(16|32|64)/",
        SHORT_TIME,
        f"--benchmark_out={out}",
        preexec_fn=limit_file_size,
    )
    assert out.stat().st_size == 4096, "the file was not cut off: the test does not test"
    assert run.returncode == 1, f"exit {run.returncode}; stderr: {run.stderr}"
    messages = [line for line in run.stderr.splitlines() if str(out) in line]
    assert len(messages) == 1, run.stderr


def test_stdout_that_cannot_be_written_is_exit_code_1(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    with open("/dev/full", "w", encoding="utf-8") as full:
        run = subprocess.run(
            [str(bench_binary()), TINY_FILTER, SHORT_TIME, f"--benchmark_out={out}"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=TIMEOUT_S,
        )
    assert run.returncode == 1, f"exit {run.returncode}; stderr: {run.stderr}"
    assert "stdout" in run.stderr
    assert len(json.loads(out.read_text())["benchmarks"]) == 1  # the file itself is complete


def test_complete_output_is_exit_code_0(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    run = run_bench(TINY_FILTER, SHORT_TIME, f"--benchmark_out={out}")
    assert run.returncode == 0, run.stderr
    assert len(json.loads(out.read_text())["benchmarks"]) == 1
