"""`bench`'s command line beyond Google Benchmark's: --help names `bench` and lists gpubench's own
flags and every environment variable the source reads; run flags that would run forever, abort or
run nothing are rejected with exit code 2 before anything runs; output that was not written
completely (--benchmark_out, stdout) is exit code 1, never a silent success. The --benchmark_out
file is written whole or not at all (its folder created), a closed stdout never costs it, and the
console stays readable (compact rows, progress lines apart from them).
"""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import subprocess
import time
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
        # Values at the extremes: finite, but a run (or a warm-up) that would outlast any job.
        "--benchmark_min_time=1e308",
        "--benchmark_min_time=86401",
        "--benchmark_min_time=1e-320",
        "--benchmark_min_warmup_time=1e308",
        "--benchmark_repetitions=1e308",
        "--benchmark_repetitions=99999999999",
        "--wait-idle=1e308",
        "--wait-idle=nan",
        "--wait-idle=-1",
        "--v=1e308",
        "--v=-1",
        "--v=nan",
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
    "variable, value",
    [
        ("GPUBENCH_PROGRESS_SECONDS", "abc"),
        ("GPUBENCH_PROGRESS_SECONDS", "-1"),
        ("GPUBENCH_PROGRESS_SECONDS", "nan"),
        ("GPUBENCH_PROGRESS_SECONDS", "inf"),
        ("GPUBENCH_PROGRESS_SECONDS", "1e308"),
        ("GPUBENCH_PROGRESS_SECONDS", "1e-320"),
        ("GPUBENCH_FULL", "2"),
        ("GPUBENCH_FULL", "yes"),
        ("GPUBENCH_CONDITIONS", "maybe"),
        ("GPUBENCH_CEILINGS", "maybe"),
    ],
)
def test_invalid_variable_is_rejected_before_anything_runs(
    tmp_path: Path, variable: str, value: str
) -> None:
    out = tmp_path / "out.json"
    run = run_bench(TINY_FILTER, f"--benchmark_out={out}", env={**os.environ, variable: value})
    assert run.returncode == 2, f"exit {run.returncode}; stderr: {run.stderr}"
    messages = [line for line in run.stderr.splitlines() if f"{variable}='{value}'" in line]
    assert len(messages) == 1, run.stderr
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
        TINY_FILTER,
        SHORT_TIME,
        "--benchmark_out=/dev/full",
        f"--benchmark_out_format={out_format}",
    )
    assert run.returncode == 1, f"exit {run.returncode}; stderr: {run.stderr}"
    messages = [line for line in run.stderr.splitlines() if "/dev/full" in line]
    assert len(messages) == 1 and "failed" in messages[0], run.stderr


def limit_file_size() -> None:
    # A file-size limit cuts the output file off as a full disk would; with SIGXFSZ ignored the
    # write fails (EFBIG) instead of killing the process.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


def test_output_cut_off_by_a_full_disk_is_exit_code_1_and_keeps_the_file_there(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out.json"
    out.write_text("the previous run's results\n")
    run = run_bench(
        "--benchmark_filter=^matmul/cpu/openblas/dtype:fp32/m:(16|32|64)/n:(16|32|64)/k:(16|32|64)/",
        SHORT_TIME,
        f"--benchmark_out={out}",
        preexec_fn=limit_file_size,
    )
    assert run.returncode == 1, f"exit {run.returncode}; stderr: {run.stderr}"
    messages = [line for line in run.stderr.splitlines() if str(out) in line]
    assert len(messages) == 1, run.stderr
    # The file-size limit did cut the results off (the test tests), and nothing replaced the file.
    assert "writing it failed" in messages[0], messages[0]
    assert out.read_text() == "the previous run's results\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out.json"]


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


# --- The --benchmark_out file: whole or not at all, its folder created ---------------------------


# Six small products, three repetitions each: about a second, and over 8 KB of JSON, so that
# Google Benchmark's file stream has written part of it to disk while the run goes on.
def squares_filter(*sizes: int) -> str:
    """The single-threaded fp32 square products of `sizes`."""
    squares = "|".join(f"m:{n}/n:{n}/k:{n}" for n in sizes)
    return f"--benchmark_filter=^matmul/cpu/openblas/dtype:fp32/({squares})/threads:1$"


SEVERAL_FILTER = squares_filter(16, 32, 48, 64, 96, 128)
SEVERAL_NAMES = 6


def progress_environment() -> dict[str, str]:
    return {**os.environ, "GPUBENCH_PROGRESS_SECONDS": "0"}


def wait_for_progress(process: subprocess.Popen, done: int) -> list[str]:
    """Reads `process`'s stderr until its progress line for `done` benchmarks; returns the lines."""
    lines = []
    for line in process.stderr:
        lines.append(line)
        if line.startswith(f"gpubench: {done}/"):
            return lines
    raise AssertionError(f"bench ended before {done} benchmarks: {''.join(lines)}")


def start_bench(*arguments: str, preexec_fn=None) -> subprocess.Popen:
    """bench with `arguments`, started in the background with a progress line per benchmark on
    its stderr (read it with wait_for_progress) and its stdout discarded."""
    return subprocess.Popen(
        [str(bench_binary()), *arguments],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=progress_environment(),
        preexec_fn=preexec_fn,
    )


def start_several(out: Path, min_time: str) -> subprocess.Popen:
    """bench on SEVERAL_FILTER, 3 repetitions, writing `out` (start_bench)."""
    return start_bench(
        SEVERAL_FILTER,
        f"--benchmark_min_time={min_time}",
        "--benchmark_repetitions=3",
        f"--benchmark_out={out}",
    )


def test_two_runs_writing_one_file_leave_one_complete_document(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    long_run = start_several(out, min_time="0.05")
    try:
        # The second run starts while the first is half way, and usually ends before it.
        wait_for_progress(long_run, 3)
        short_run = run_bench(TINY_FILTER, SHORT_TIME, f"--benchmark_out={out}")
        long_stderr = long_run.stderr.read()
        long_run.wait(timeout=TIMEOUT_S)
    finally:
        long_run.kill()
    assert short_run.returncode == 0, short_run.stderr
    assert long_run.returncode == 0, long_stderr
    text = out.read_bytes()
    assert b"\0" not in text
    document = json.loads(text)  # exactly one document: trailing bytes are an error here
    names = {row["run_name"] for row in document["benchmarks"]}
    # The run that finished last wrote the file, whole: usually the long one.
    if len(names) == 1:
        assert names == {"matmul/cpu/openblas/dtype:fp32/m:16/n:16/k:16/threads:1"}
        assert len(document["benchmarks"]) == 1
    else:
        assert len(names) == SEVERAL_NAMES, names
        assert len(document["benchmarks"]) == SEVERAL_NAMES * (3 + 4)  # 3 repetitions, 4 aggregates
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out.json"]


# --- A run told to stop keeps what finished ---------------------------------------------------

# Every signal bench stops on (benchmarks/interruption.cpp says why each).
STOP_SIGNALS = (
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGXCPU,
    signal.SIGUSR1,
    signal.SIGUSR2,
)


def default_stop_signals() -> None:
    """In the child before bench starts: the default action for the stop signals, whatever the
    test's own process inherited (a non-interactive shell starts background jobs with SIGINT
    ignored, nohup ignores SIGHUP), so the test sees bench's handling and nothing else.
    """
    for number in STOP_SIGNALS:
        signal.signal(number, signal.SIG_DFL)


def start_long(out: Path | None) -> subprocess.Popen:
    """bench on SEVERAL_FILTER, 3 repetitions of 0.1 s or more each, so that a signal sent after a
    benchmark's progress line lands inside the next one (0.3 s long, a long time for the test to
    send one signal); writing `out` when given."""
    return start_bench(
        SEVERAL_FILTER,
        "--benchmark_min_time=0.1",
        "--benchmark_repetitions=3",
        *([f"--benchmark_out={out}"] if out else []),
        preexec_fn=default_stop_signals,
    )


def stop_after(process: subprocess.Popen, done: int, *signals: signal.Signals) -> str:
    """Sends `signals` to `process` once `done` benchmarks have finished; returns its stderr."""
    try:
        lines = wait_for_progress(process, done)
        for number in signals:
            process.send_signal(number)
        lines.append(process.stderr.read())
        process.wait(timeout=TIMEOUT_S)
    finally:
        process.kill()
    return "".join(lines)


@pytest.mark.parametrize("stop", STOP_SIGNALS, ids=lambda number: signal.Signals(number).name)
def test_a_stopped_run_keeps_every_finished_benchmark_in_a_valid_file(
    tmp_path: Path, stop: signal.Signals
) -> None:
    out = tmp_path / "out.json"
    out.write_text("the previous run's results\n")
    process = start_long(out)
    stderr = stop_after(process, 2, stop)
    assert process.returncode == 128 + stop, stderr
    # One valid document, not the previous file (stderr says why bench could not write it).
    assert not out.read_text().startswith("the previous run's results"), stderr
    document = json.loads(out.read_text())
    context = document["context"]
    assert context["interrupted"] == signal.Signals(stop).name
    assert context["benchmarks_selected"] == SEVERAL_NAMES
    finished = context["benchmarks_finished"]
    # The two that had finished when the signal was sent; the one in progress is left out unless
    # it finished before the signal arrived.
    assert 2 <= finished < SEVERAL_NAMES, finished
    names = [row["run_name"] for row in document["benchmarks"]]
    assert len(set(names)) == finished
    for name in set(names):  # each benchmark whole: 3 repetitions and 4 aggregates
        assert names.count(name) == 3 + 4, name
    assert f"interrupted by {signal.Signals(stop).name}" in stderr
    assert f"holds the {finished} of {SEVERAL_NAMES} benchmarks that finished" in stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out.json"]


def test_a_signal_before_any_benchmark_finished_leaves_a_valid_empty_document(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out.json"
    process = start_bench(
        TINY_FILTER,
        "--benchmark_min_time=5",
        f"--benchmark_out={out}",
        preexec_fn=default_stop_signals,
    )
    try:
        for line in process.stderr:  # the context is printed before the first benchmark starts
            if line.startswith("openblas_default_threads"):
                break
        time.sleep(0.5)
        process.send_signal(signal.SIGTERM)
        stderr = process.stderr.read()
        process.wait(timeout=TIMEOUT_S)
    finally:
        process.kill()
    assert process.returncode == 128 + signal.SIGTERM, stderr
    document = json.loads(out.read_text())
    assert document["benchmarks"] == []
    assert document["context"]["benchmarks_finished"] == 0
    assert document["context"]["benchmarks_selected"] == 1
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out.json"]


def test_a_second_signal_ends_at_once_and_never_leaves_a_half_written_file(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out.json"
    out.write_text("the previous run's results\n")
    process = start_long(out)
    stderr = stop_after(process, 1, signal.SIGTERM, signal.SIGTERM)
    # Either the first signal's file was published before the second arrived (exit 143), or the
    # second ended the process (killed by SIGTERM) and the previous file stayed: never a mix.
    assert process.returncode in (128 + signal.SIGTERM, -signal.SIGTERM), stderr
    text = out.read_text()
    if text != "the previous run's results\n":
        assert json.loads(text)["context"]["interrupted"] == "SIGTERM"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out.json"]


def test_a_stopped_run_without_an_output_file_says_so_and_exits_128_plus_the_signal() -> None:
    process = start_long(None)
    stderr = stop_after(process, 1, signal.SIGINT)
    assert process.returncode == 128 + signal.SIGINT, stderr
    assert "interrupted by SIGINT; the benchmarks that finished are above" in stderr


def test_a_signal_the_caller_ignores_stays_ignored(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    # Sent at once: bench's start alone (its context) outlasts sending it.
    process = start_bench(
        TINY_FILTER,
        "--benchmark_min_time=0.1",
        f"--benchmark_out={out}",
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),  # as nohup does
    )
    try:
        process.send_signal(signal.SIGHUP)  # ignored from the start: no time to wait for
        stderr = process.stderr.read()
        process.wait(timeout=TIMEOUT_S)
    finally:
        process.kill()
    assert process.returncode == 0, stderr
    assert "interrupted" not in json.loads(out.read_text())["context"]


def test_folder_of_the_output_file_is_created(tmp_path: Path) -> None:
    out = tmp_path / "results" / "nested" / "out.json"
    run = run_bench(TINY_FILTER, SHORT_TIME, f"--benchmark_out={out}")
    assert run.returncode == 0, run.stderr
    assert len(json.loads(out.read_text())["benchmarks"]) == 1
    assert sorted(path.name for path in out.parent.iterdir()) == ["out.json"]


def test_output_file_keeps_the_permissions_of_a_new_file(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    run = run_bench(TINY_FILTER, SHORT_TIME, f"--benchmark_out={out}")
    assert run.returncode == 0, run.stderr
    mask = os.umask(0)
    os.umask(mask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~mask  # not the temporary file's private 0600


@pytest.mark.parametrize(
    "where, cause",
    [
        (
            "a-file/out.json",
            "cannot create the folder",
        ),  # a folder named like an existing file
        ("", "is a folder"),  # the output path is the folder itself
    ],
)
def test_output_path_that_cannot_be_written_is_exit_code_2_before_anything_runs(
    tmp_path: Path, where: str, cause: str
) -> None:
    (tmp_path / "a-file").write_text("not a folder\n")
    out = tmp_path / where
    run = run_bench(TINY_FILTER, SHORT_TIME, f"--benchmark_out={out}")
    assert run.returncode == 2, f"exit {run.returncode}; stderr: {run.stderr}"
    messages = [line for line in run.stderr.splitlines() if str(out) in line]
    assert len(messages) == 1 and cause in messages[0], run.stderr
    assert messages[0].startswith("gpubench: --benchmark_out="), messages[0]
    assert "matmul/cpu" not in run.stdout  # nothing ran


def test_listing_leaves_the_output_file_as_it_was(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    out.write_text("the previous run's results\n")
    run = run_bench("--benchmark_list_tests", TINY_FILTER, f"--benchmark_out={out}")
    assert run.returncode == 0, run.stderr
    assert "matmul/cpu/openblas/dtype:fp32/m:16/n:16/k:16/threads:1" in run.stdout
    assert out.read_text() == "the previous run's results\n"


# --- A closed stdout ---------------------------------------------------------------------------

# Nine rows of at least 0.05 s each: stdout is still being written well after `head` has exited.
NINE_FILTER = squares_filter(16, 32, 48, 64, 96, 128, 192, 256, 384)


def run_into_head(*arguments: str) -> tuple[int, str]:
    """`bench ARGUMENTS | head -1`: bench's exit code and stderr."""
    bench = subprocess.Popen(
        [str(bench_binary()), *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    head = subprocess.Popen(["head", "-1"], stdin=bench.stdout, stdout=subprocess.DEVNULL)
    bench.stdout.close()  # head holds the only reading end
    try:
        stderr = bench.stderr.read().decode()
        bench.wait(timeout=TIMEOUT_S)
        head.wait(timeout=TIMEOUT_S)
    finally:
        bench.kill()
    return bench.returncode, stderr


def test_closed_stdout_keeps_the_file_whole_and_exits_1_with_one_message(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out.json"
    exit_code, stderr = run_into_head(
        NINE_FILTER, "--benchmark_min_time=0.05", f"--benchmark_out={out}"
    )
    assert exit_code == 1, f"exit {exit_code}; stderr: {stderr}"
    messages = [line for line in stderr.splitlines() if "stdout" in line]
    assert len(messages) == 1, stderr
    assert "stdout was closed" in messages[0] and str(out) in messages[0], messages[0]
    assert len(json.loads(out.read_text())["benchmarks"]) == 9  # every row, the run went on


def test_closed_stdout_without_an_output_file_stops_the_run_with_exit_1() -> None:
    exit_code, stderr = run_into_head(NINE_FILTER, "--benchmark_min_time=0.05")
    assert exit_code == 1, f"exit {exit_code}; stderr: {stderr}"
    messages = [line for line in stderr.splitlines() if "stdout" in line]
    assert len(messages) == 1 and "stopping" in messages[0], stderr


# --- The terminal ------------------------------------------------------------------------------

TABLE_ROW = re.compile(
    r"^matmul/\S+ +[0-9.]+ (?:[mun]?s|%) +[0-9.]+ (?:[mun]?s|%) +\d+( \S+=\S+)*$"
)


def test_console_rows_are_compact_and_show_no_nan(tmp_path: Path) -> None:
    # Two repetitions: Google Benchmark's _cv row divides by a mean of 0 for bytes_h2d and
    # bytes_d2h, which it would print as -nan%.
    run = run_bench(
        TINY_FILTER,
        SHORT_TIME,
        "--benchmark_repetitions=2",
        f"--benchmark_out={tmp_path / 'out.json'}",
    )
    assert run.returncode == 0, run.stderr
    rows = [line for line in run.stdout.splitlines() if line.startswith("matmul/")]
    assert len(rows) == 2 + 4, run.stdout
    assert all("FLOP/s=" in row and "pct_peak=" in row for row in rows), run.stdout
    assert "nan" not in run.stdout.lower()
    assert "bytes_h2d" not in run.stdout and "workload=" not in run.stdout  # in the JSON only
    assert max(len(row) for row in rows) < 200, run.stdout
    row = json.loads((tmp_path / "out.json").read_text())["benchmarks"][0]
    assert "bytes_h2d" in row and "workload=" in row["label"]  # the file keeps everything


def test_all_counters_shows_every_counter_and_the_label_but_no_nan() -> None:
    run = run_bench(TINY_FILTER, SHORT_TIME, "--benchmark_repetitions=2", "--all-counters")
    assert run.returncode == 0, run.stderr
    rows = [line for line in run.stdout.splitlines() if line.startswith("matmul/")]
    assert len(rows) == 2 + 4, run.stdout
    # The _cv row has no bytes_h2d: 0/0 is not a number.
    assert all(
        "bytes_h2d=" in row for row in rows if not row.split()[0].endswith("_cv")
    ), run.stdout
    assert "workload=matmul" in rows[0]
    assert "nan" not in run.stdout.lower()


def test_progress_lines_never_land_inside_a_table_row(tmp_path: Path) -> None:
    # Twelve repetitions: each benchmark writes over 4 KB of rows, more than stdout's buffer holds,
    # so a row that is not flushed before a progress line is written would be cut by it.
    log = tmp_path / "log.txt"
    with open(log, "w", encoding="utf-8") as both:  # `bench >log 2>&1`
        run = subprocess.run(
            [
                str(bench_binary()),
                SEVERAL_FILTER,
                SHORT_TIME,
                "--benchmark_repetitions=12",
            ],
            stdout=both,
            stderr=both,
            env=progress_environment(),
            timeout=TIMEOUT_S,
        )
    assert run.returncode == 0
    lines = log.read_text().splitlines()
    for line in lines:
        assert "gpubench:" not in line or line.startswith("gpubench: "), line
        if line.startswith("matmul/"):
            assert TABLE_ROW.match(line), line
    rows = [line for line in lines if line.startswith("matmul/")]
    assert len(rows) == SEVERAL_NAMES * (12 + 4)
    # One progress line per benchmark (its repetitions and their aggregates together), after its
    # rows, then the last one.
    progress = [
        index
        for index, line in enumerate(lines)
        if line.startswith("gpubench: ") and "benchmarks, " in line
    ]
    assert len(progress) == SEVERAL_NAMES + 1, "\n".join(lines)
    for index in progress[:-1]:
        name = lines[index].rsplit(", ", 1)[1]
        last_row = max(number for number, line in enumerate(lines) if line.startswith(name))
        assert last_row < index, f"the progress line for {name} comes before its rows"


def test_progress_lines_show_the_time_left() -> None:
    run = run_bench(SEVERAL_FILTER, SHORT_TIME, env=progress_environment())
    assert run.returncode == 0, run.stderr
    progress = [line for line in run.stderr.splitlines() if " benchmarks, " in line]
    assert len(progress) == SEVERAL_NAMES + 1, run.stderr
    for line in progress[: SEVERAL_NAMES - 1]:  # every line before the last benchmark
        assert re.match(
            rf"gpubench: \d/{SEVERAL_NAMES} benchmarks, \d+:\d\d elapsed, about \d+:\d\d left, "
            r"matmul/",
            line,
        ), line
    assert progress[-1].endswith(" elapsed, done"), progress[-1]


def test_debug_build_warning_of_the_library_is_explained() -> None:
    run = run_bench(TINY_FILTER, SHORT_TIME)
    assert run.returncode == 0, run.stderr
    lines = run.stderr.splitlines()
    warnings = [index for index, line in enumerate(lines) if "Library was built as DEBUG" in line]
    if not warnings:
        pytest.skip("this Google Benchmark library was built as release: no warning to explain")
    assert len(warnings) == 1
    note = lines[warnings[0] + 1]
    assert note.startswith("gpubench: ") and "not the code measured" in note, note
    assert "docs/running-bench.md" in note
