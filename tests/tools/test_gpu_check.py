"""tools/gpu-check: its count of a sweep's rows (failed and skipped, "does not fit ...", apart, by
the rule of benchjson.SKIP_PREFIXES), its steps, and the lists it derives instead of naming
workloads (sweep steps, GPU tests by CTest label, scaling rows, references), which equal the ones
it named before. Runs gpu-check with a stand-in nvidia-smi and bench, so no GPU is needed.
"""

from __future__ import annotations

import json
import re
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, bench_binary, gb_row
from md_plain import read_md

from gpubench_tools.row_rules import SKIP_PREFIXES

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def _bench() -> Path:
    """The built bench as an absolute path: GPUBENCH_BENCH may be relative to where pytest runs,
    and the tests link it from other folders and hand its folder to gpu-check."""
    return bench_binary().absolute()


def _executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _sweep_rows() -> list[dict[str, object]]:
    return [
        gb_row("mlp/gpu/eager/data:iris/batch:120/hidden:10/readback:0", 1e-3),
        gb_row(
            "mlp/gpu/fused/data:synthetic/batch:256/hidden:64x2/readback:0/manual_time",
            0.0,
            error="does not fit on chip: needs 377300 bytes of shared memory, 232448 available "
            "(network 64-64-64-10, batch 256)",
        ),
        gb_row(
            "mlp/gpu/fused/data:synthetic/batch:65536/hidden:4096/readback:0/manual_time",
            0.0,
            error="does not fit in device memory: needs 9 bytes, 8 of 80 bytes free",
        ),
        gb_row(
            "mlp/gpu/graph/data:iris/batch:120/hidden:10/readback:0/manual_time",
            0.0,
            error="loss after step 200 differs from the CPU's beyond 1e-3",
        ),
    ]


# A build's CTest file as tests/CMakeLists.txt writes it for the GPU tests gpu-check runs first
# (their labels), with executables that are not there.
STAND_IN_CTEST_FILE = """
add_test([=[test_mlp_gpu]=] "/nowhere/test_mlp_gpu")
set_tests_properties([=[test_mlp_gpu]=] PROPERTIES LABELS "gpu;risky:1;sanitizer:2")
add_test([=[test_mlp_gpu_mixed]=] "/nowhere/test_mlp_gpu_mixed")
set_tests_properties([=[test_mlp_gpu_mixed]=] PROPERTIES LABELS "gpu;risky:2;sanitizer:1;unproven")
"""


def _stand_in_machine(
    tmp_path: Path, sweep_rows: list[dict[str, object]], listed: list[str] | None = None
) -> dict[str, str]:
    """The environment for gpu-check with a stand-in nvidia-smi (one "NVIDIA Test GPU", so the
    files are named test-gpu-*) and a stand-in bench that writes `sweep_rows` wherever
    --benchmark_out points and lists `listed` (default: the names of `sweep_rows`) for
    --list-all, the names gpu-check derives its sweep steps from."""
    fake_bin = tmp_path / "bin"
    build = tmp_path / "build"
    (build / "benchmarks").mkdir(parents=True)
    (build / "tests").mkdir()
    (build / "CTestTestfile.cmake").write_text('subdirs("tests")\n')
    (build / "tests" / "CTestTestfile.cmake").write_text(STAND_IN_CTEST_FILE)
    names = tmp_path / "names.txt"
    names.write_text(
        "".join(f"{name}\n" for name in listed or [r["name"] for r in sweep_rows])
    )
    fake_bin.mkdir()
    _executable(
        fake_bin / "nvidia-smi",
        '#!/usr/bin/env bash\n[[ $* == *--query-gpu=name* ]] && echo "NVIDIA Test GPU" || true\n',
    )
    rows = tmp_path / "rows.json"
    rows.write_text(
        json.dumps({"context": {"gpu": "NVIDIA Test GPU"}, "benchmarks": sweep_rows})
    )
    _executable(
        build / "benchmarks" / "bench",
        "#!/usr/bin/env bash\n"
        f'[[ " $* " == *" --list-all "* ]] && {{ cat "{names}"; exit 0; }}\n'
        'for a in "$@"; do [[ $a == --benchmark_out=* ]] && '
        f'cp "{rows}" "${{a#--benchmark_out=}}"; done\nexit 0\n',
    )
    return dict(
        os.environ,
        PATH=f"{fake_bin}{os.pathsep}{os.environ['PATH']}",
        BUILD_DIR=str(build),
        PYTHON=sys.executable,
    )


def _gpu_check(
    env: dict[str, str], steps: str, out: Path
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(REPO / "tools" / "gpu-check"), "--only", steps, str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_gpu_check_counts_skipped_rows_apart_from_failed_ones(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = _gpu_check(_stand_in_machine(tmp_path, _sweep_rows()), "mlp", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = (out / "summary.txt").read_text()
    line = next(line for line in summary.splitlines() if "bench mlp:" in line)
    assert line.endswith(
        "1 row failed, 2 skipped (does not fit on chip: 1, does not fit in device memory: 1)"
    ), line


@pytest.mark.slow
def test_within_stops_a_sweep_at_the_limit_and_starts_no_step_after_it(
    tmp_path: Path,
) -> None:
    """--within: a sweep that outlasts the limit is stopped with SIGTERM (bench then keeps the
    benchmarks that finished), and the steps after it are not started, each said in summary.txt.
    The margins are shortened (WITHIN_MIN_LEFT 2 s, WITHIN_SPARE 1 s instead of 15 s and 5 s), so
    a 4 s limit is reached in about 3 s."""
    rows = [
        gb_row(
            "mlp/gpu/eager/data:synthetic/batch:1/hidden:8/readback:0/manual_time", 1e-3
        )
    ]
    env = _stand_in_machine(
        tmp_path,
        rows,
        listed=[rows[0]["name"], "cnn/gpu/eager/data:synthetic/batch:1/manual_time"],
    )
    # A bench that measures until it is told to stop, then writes what it has, as bench does.
    finished = tmp_path / "finished.json"
    context = {
        "interrupted": "SIGTERM",
        "benchmarks_finished": 1,
        "benchmarks_selected": 3,
    }
    finished.write_text(json.dumps({"context": context, "benchmarks": rows}))
    bench = Path(env["BUILD_DIR"]) / "benchmarks" / "bench"
    listing = bench.read_text().splitlines()[1]  # the stand-in's --list-all line
    _executable(
        bench,
        "#!/usr/bin/env bash\n"
        f"{listing}\n"
        'for a in "$@"; do [[ $a == --benchmark_out=* ]] && out=${a#--benchmark_out=}; done\n'
        f'trap \'cp "{finished}" "$out"; exit 143\' TERM\n'
        "sleep 120 & wait\n",
    )
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            "bash",
            str(REPO / "tools" / "gpu-check"),
            "--within",
            "4",
            "--only",
            "mlp,cnn",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=dict(env, WITHIN_MIN_LEFT="2", WITHIN_SPARE="1"),
        timeout=120,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    summary = (out / "summary.txt").read_text()
    mlp = next(line for line in summary.splitlines() if "bench mlp:" in line)
    assert (
        "stopped at the --within limit (the benchmarks that finished are kept)" in mlp
    ), mlp
    assert mlp.endswith(
        "0 rows failed, 0 skipped; cut off: interrupted by SIGTERM after 1 of 3 benchmarks"
    ), mlp
    left = re.search(r"bench cnn: not started, (-?\d+) s left of --within 4", summary)
    assert left and int(left.group(1)) < 2, summary
    assert json.loads((out / "test-gpu-mlp.json").read_text())["benchmarks"] == rows


@pytest.mark.parametrize("value", ["0", "-5", "1e308", "nan", "ten", "86401", ""])
def test_within_takes_a_whole_number_of_seconds(tmp_path: Path, value: str) -> None:
    proc = subprocess.run(
        [
            "bash",
            str(REPO / "tools" / "gpu-check"),
            "--within",
            value,
            "--list-families",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"gpu-check: --within needs a whole number of seconds from 1 to 86400, not '{value}'"
    ]


def test_within_margins_leave_every_command_some_time() -> None:
    """WITHIN_SPARE must be less than WITHIN_MIN_LEFT: else a step that just starts would get no
    time, or (at 0) no limit at all."""
    proc = subprocess.run(
        ["bash", str(REPO / "tools" / "gpu-check"), "--list-families"],
        capture_output=True,
        text=True,
        env=dict(os.environ, WITHIN_MIN_LEFT="5", WITHIN_SPARE="5"),
        timeout=60,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "gpu-check: WITHIN_SPARE (5) must be less than WITHIN_MIN_LEFT (5)"
    ]


def test_references_step_runs_the_mixed_precision_reference(tmp_path: Path) -> None:
    env = _stand_in_machine(tmp_path, [])
    # A stand-in Python with "PyTorch and CUDA": it answers the import check and, for a
    # reference script, records the script and writes an empty run where --out points.
    calls = tmp_path / "calls.txt"
    _executable(
        tmp_path / "python",
        "#!/usr/bin/env bash\n"
        "[[ $1 == -c ]] && exit 0\n"
        f'echo "$1" >> "{calls}"\n'
        "while [[ $# -gt 0 ]]; do [[ $1 == --out ]] && "
        """echo '{"context": {}, "benchmarks": []}' > "$2"; shift; done\n""",
    )
    env["PYTHON"] = str(tmp_path / "python")
    out = tmp_path / "out"
    proc = _gpu_check(env, "references", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (
        str(REPO / "tools" / "reference" / "torch_mlp_amp.py")
        in calls.read_text().splitlines()
    )
    assert (out / "test-gpu-torch-mlp-amp.json").is_file()
    assert (
        "PyTorch mixed-precision MLP reference written"
        in (out / "summary.txt").read_text()
    )


def test_report_step_compares_the_sweep_with_pytorch_autocast(tmp_path: Path) -> None:
    """The report step gives the torch-mlp-amp file to the report with the sweeps; its context names
    the same machine, so its rows meet the sweep's in the mixed-precision section."""
    from handmade_rows import CONTEXT, gpu_mlp_rows, torch_rows

    out = tmp_path / "out"
    out.mkdir()
    (out / "test-gpu-mlp.json").write_text(
        json.dumps({"context": CONTEXT, "benchmarks": gpu_mlp_rows()})
    )
    (out / "test-gpu-torch-mlp-amp.json").write_text(
        json.dumps({"context": CONTEXT, "benchmarks": torch_rows()})
    )
    listed = [row["name"] for row in gpu_mlp_rows()]
    proc = _gpu_check(_stand_in_machine(tmp_path, [], listed), "report", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    md = read_md(out / "report" / "report.md")
    # One machine: the torch-mlp-amp file's rows meet the sweep's, PyTorch's step over ours.
    assert md.startswith("# gpubench report: Hand-made Test CPU vs H100 80GB HBM3\n")
    assert "Inputs: test-gpu-mlp.json, test-gpu-torch-mlp-amp.json;" in md
    assert "| case | ours | PyTorch eager | PyTorch eager / ours |" in md


def test_gpu_check_uses_the_python_rule() -> None:
    """The prefixes live in one place: gpu-check asks the reader instead of grepping itself."""
    script = (REPO / "tools" / "gpu-check").read_text()
    assert "-m gpubench_tools --errors" in script
    assert "error_occurred" not in script
    assert SKIP_PREFIXES == (
        "does not fit on chip",
        "does not fit in device memory",
        "not supported on this machine",
    )


# The parts of a name that make a GPU family (tools/gpu-check's header): every path part without
# a value, and the values of these keys; sizes are left out.
_FAMILY_KEYS = ("dtype", "host", "precision", "input", "net")


def _family(name: str) -> str:
    return "/".join(
        part
        for part in name.split("/")
        if ":" not in part or part.split(":")[0] in _FAMILY_KEYS
    )


def _is_gpu(name: str) -> bool:
    return name.startswith("overhead/") or name.split("/")[1:2] == ["gpu"]


def test_list_families_names_the_cheapest_row_of_every_gpu_family(
    tmp_path: Path,
) -> None:
    """The sanitizer and smoke steps cover every GPU family of the real sweep, including the ones
    the old hand-written filter missed: mixed precision, input copies, allocation, largest batch.
    """
    bench = _bench()
    if not bench.is_file():
        pytest.skip(f"no bench at {bench}")
    names = subprocess.run(
        [str(bench), "--list-all"], capture_output=True, text=True, check=True
    ).stdout.split()
    build = tmp_path / "build"
    (build / "benchmarks").mkdir(parents=True)
    (build / "benchmarks" / "bench").symlink_to(bench)
    proc = subprocess.run(
        ["bash", str(REPO / "tools" / "gpu-check"), "--list-families"],
        capture_output=True,
        text=True,
        env=dict(os.environ, BUILD_DIR=str(build)),
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    chosen = proc.stdout.split()
    families = {_family(name) for name in names if _is_gpu(name)}
    assert sorted(_family(name) for name in chosen) == sorted(families)
    assert set(chosen) <= set(names)
    for family in (
        "overhead/alloc/async/manual_time",
        "mlp/gpu/eager/precision:bf16/manual_time",
        "mlp/gpu/graph/input:pinned/manual_time",
        "cnn/gpu/graph/precision:fp16/manual_time",
        "memory/gpu/largest_batch/net:cnn/precision:fp32/manual_time",
    ):
        assert family in families, family
    # Synthetic data wherever a family has it: Iris and digits rows train thousands of epochs.
    by_family = {_family(name): name for name in chosen}
    assert "data:synthetic" in by_family["mlp/gpu/eager/precision:bf16/manual_time"]
    assert "/batch:1/" in by_family["cnn/gpu/eager/manual_time"]
    assert "/m:16/" in by_family["matmul/gpu/cublas_kernel/dtype:fp32/manual_time"]


def test_quick_runs_the_risky_steps_and_smokes_every_family(tmp_path: Path) -> None:
    """--quick: the tests, sanitizer and smoke steps only; smoke measures exactly the rows
    --list-families names, three repetitions each, into <device>-smoke.json."""
    env = _stand_in_machine(tmp_path, _sweep_rows()[:1])
    bench = Path(env["BUILD_DIR"]) / "benchmarks" / "bench"
    calls = tmp_path / "bench-calls.txt"
    listed = [
        "matmul/gpu/cublas_kernel/dtype:fp32/m:16/n:16/k:16/manual_time",
        "matmul/gpu/cublas_kernel/dtype:fp32/m:32/n:32/k:32/manual_time",
        "overhead/alloc/async/bytes:4096/repeats:10/manual_time",
        "mlp/gpu/eager/data:iris/batch:120/hidden:10/readback:0/precision:bf16/manual_time",
        "mlp/gpu/eager/data:synthetic/batch:256/hidden:512/readback:0/precision:bf16/manual_time",
        "matmul/cpu/openblas/dtype:fp32/m:16/n:16/k:16/threads:1",
    ]
    script = bench.read_text().replace(
        "#!/usr/bin/env bash\n",
        "#!/usr/bin/env bash\n"
        f'echo "$*" >> "{calls}"\n'
        f"[[ $1 == --list-all ]] && {{ printf '%s\\n' {' '.join(listed)}; exit 0; }}\n",
    )
    _executable(bench, script)
    # No compute-sanitizer and no ctest on this machine: those steps fail, smoke still runs.
    out = tmp_path / "out"
    proc = subprocess.run(
        ["bash", str(REPO / "tools" / "gpu-check"), "--quick", str(out)],
        capture_output=True,
        text=True,
        env=dict(env, PATH=env["PATH"]),
        timeout=300,
    )
    summary = (out / "summary.txt").read_text()
    assert "steps: tests sanitizer smoke" in summary
    smoke = [
        line for line in calls.read_text().splitlines() if "test-gpu-smoke.json" in line
    ]
    assert len(smoke) == 1, calls.read_text()
    expected = "|".join([listed[0], listed[2], listed[4]])
    assert f"--benchmark_filter=^({expected})$" in smoke[0]
    assert "--benchmark_repetitions=3" in smoke[0]
    assert (out / "test-gpu-smoke.json").is_file()
    assert "bench smoke (--benchmark_repetitions=3): exit 0" in summary
    assert "bench mlp" not in summary
    # This stand-in build has no CTest tests: a GPU test that is not there fails, never passes.
    assert "ctest test_mlp_gpu: FAILED or skipped" in summary
    assert proc.returncode == 1, proc.stdout + proc.stderr


def test_quick_leaves_the_largest_batch_memcheck_to_the_full_step(
    tmp_path: Path,
) -> None:
    """Under memcheck the largest-batch rows take minutes: --quick says it leaves them out (the
    smoke step runs them), the full sanitizer step runs them apart from the other families.
    """
    listed = [
        "overhead/alloc/async/bytes:4096/repeats:10/manual_time",
        "memory/gpu/largest_batch/net:mlp/data:synthetic/hidden:4096x2/precision:fp32/"
        "iterations:1/manual_time",
    ]
    env = _stand_in_machine(tmp_path, [], listed)
    calls = tmp_path / "sanitizer-calls.txt"
    _executable(
        tmp_path / "bin" / "compute-sanitizer",
        f'#!/usr/bin/env bash\necho "$*" >> "{calls}"\n',
    )

    def sanitized_filters(*args: str) -> tuple[list[str], str]:
        calls.unlink(missing_ok=True)
        out = tmp_path / "-".join(args).strip("-")
        subprocess.run(
            ["bash", str(REPO / "tools" / "gpu-check"), *args, str(out)],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        return [
            part
            for line in calls.read_text().splitlines()
            for part in line.split()
            if part.startswith("--benchmark_filter=")
        ], (out / "summary.txt").read_text()

    quick_filters, quick_summary = sanitized_filters("--quick")
    assert quick_filters == [f"--benchmark_filter=^({listed[0]})$"]
    assert (
        "memcheck bench-largest-batch: left to the full sanitizer step" in quick_summary
    )
    full_filters, full_summary = sanitized_filters("--only", "sanitizer")
    assert full_filters == [
        f"--benchmark_filter=^({listed[0]})$",
        f"--benchmark_filter=^({listed[1]})$",
    ]
    assert "left to the full" not in full_summary


def test_a_sanitizer_failure_names_the_kernels_it_is_in(tmp_path: Path) -> None:
    """The summary line of a failed sanitizer run names the kernels of its reports, most first,
    so a hazard in a library's kernel reads apart from one in the suite's."""
    listed = ["overhead/alloc/async/bytes:4096/repeats:10/manual_time"]
    env = _stand_in_machine(tmp_path, [], listed)
    report = (
        "========= Error: Race reported between Read access at nvjet_sm90_tss_64x8_h_bz_TNT+0xb00\n"
        "=========     and Write access at nvjet_sm90_tss_64x8_h_bz_TNT+0x2840 [224 hazards]\n"
        "========= Error: Race reported between Write access at "
        "void gpubench::softmax_kernel<float>(const float *, int)+0x70\n"
        "========= Invalid __global__ write of size 4 bytes\n"
        "=========     at sgd_update_kernel(float *, const float *, float, int)+0x90\n"
    )
    _executable(
        tmp_path / "bin" / "compute-sanitizer",
        f"#!/usr/bin/env bash\nprintf '%s' '{report}'\nexit 9\n",
    )
    out = tmp_path / "out"
    subprocess.run(
        ["bash", str(REPO / "tools" / "gpu-check"), "--only", "sanitizer", str(out)],
        capture_output=True,
        text=True,
        env={**env, "SANITIZER_TOOLS": "memcheck"},
        timeout=300,
    )
    summary = (out / "summary.txt").read_text()
    line = next(line for line in summary.splitlines() if "memcheck bench" in line)
    assert (
        "FAILED (exit 9), reports in: nvjet_sm90_tss_64x8_h_bz_TNT (2), "
        "void gpubench::softmax_kernel<float> (1), sgd_update_kernel (1)" in line
    ), line


# compute-sanitizer --help lines of a version with the options gpu-check adds where it finds them.
SANITIZER_HELP_WITH_OPTIONS = """\
  --check-bulk-copy arg (=yes)   Enables checks related to the PTX cp.async.bulk instructions.
  --kernel-name arg              Filter the kernels to check.
  --kernel-name-exclude arg      Filter the kernels not to check.
  --print-limit arg (=100)       Stop printing errors after the given number. 0: unlimited.
"""


def _sanitized(
    tmp_path: Path, help_text: str, *args: str, **extra_env: str
) -> tuple[list[list[str]], str]:
    """Runs gpu-check's sanitizer step on the stand-in machine with a stand-in compute-sanitizer
    that prints `help_text` for --help, records every other call's arguments, and ends each run
    as `timeout` ends one that outlasts its limit (exit 124), so the summary names each run's
    limit. Returns the recorded calls and summary.txt."""
    listed = ["overhead/alloc/async/bytes:4096/repeats:10/manual_time"]
    env = _stand_in_machine(tmp_path, [], listed)
    for test in ("test_mlp_gpu", "test_mlp_gpu_mixed"):
        _executable(Path(env["BUILD_DIR"]) / "tests" / test, "#!/usr/bin/env bash\n")
    # The stand-in CTest file names /nowhere/...; gpu-check runs BUILD_DIR/tests/<test> itself.
    help_file = tmp_path / "sanitizer-help.txt"
    help_file.write_text(help_text)
    calls = tmp_path / "sanitizer-calls.txt"
    _executable(
        tmp_path / "bin" / "compute-sanitizer",
        "#!/usr/bin/env bash\n"
        f'[[ $1 == --help ]] && {{ cat "{help_file}"; exit 0; }}\n'
        '[[ $1 == --version ]] && { echo "Version 2099.1.0 (stand-in)"; exit 0; }\n'
        f'echo "$*" >> "{calls}"\n'
        "exit 124\n",
    )
    out = tmp_path / "out"
    subprocess.run(
        [
            "bash",
            str(REPO / "tools" / "gpu-check"),
            *args,
            "--only",
            "sanitizer",
            str(out),
        ],
        capture_output=True,
        text=True,
        env={**env, **extra_env},
        timeout=300,
    )
    return [line.split() for line in calls.read_text().splitlines()], (
        out / "summary.txt"
    ).read_text()


def _tool(call: list[str]) -> str:
    return call[call.index("--tool") + 1]


def test_the_sanitizer_checks_bulk_copies_prints_every_report_and_races_in_the_suites_kernels(
    tmp_path: Path,
) -> None:
    """Where compute-sanitizer's --help lists them, every run gets --check-bulk-copy yes and
    --print-limit 0 (SANITIZER_PRINT_LIMIT overrides it), racecheck runs on the suite's own
    kernels only, and the summary says which version ran with which options."""
    calls, summary = _sanitized(tmp_path, SANITIZER_HELP_WITH_OPTIONS)
    assert {_tool(call) for call in calls} == {
        "memcheck",
        "racecheck",
        "synccheck",
        "initcheck",
    }
    for call in calls:
        line = " ".join(call)
        assert "--check-bulk-copy yes --print-limit 0" in line, line
        racecheck = _tool(call) == "racecheck"
        assert ("--kernel-name kernel_substring=gpubench" in line) == racecheck, line
    assert (
        "compute-sanitizer: Version 2099.1.0 (stand-in), with --check-bulk-copy yes "
        "--print-limit 0; racecheck --kernel-name kernel_substring=gpubench" in summary
    ), summary

    calls, _ = _sanitized(
        tmp_path / "limit", SANITIZER_HELP_WITH_OPTIONS, SANITIZER_PRINT_LIMIT="7"
    )
    assert all("--print-limit 7" in " ".join(call) for call in calls)


def test_a_sanitizer_without_those_options_runs_without_them(tmp_path: Path) -> None:
    """An older compute-sanitizer that does not list an option is not given it (it would refuse
    to start), and the summary says so."""
    calls, summary = _sanitized(
        tmp_path, "  --tool arg (=memcheck)  The tool to run.\n"
    )
    assert calls
    for call in calls:
        assert not {"--check-bulk-copy", "--print-limit", "--kernel-name"} & set(
            call
        ), call
    assert "with no extra options; racecheck on every kernel" in summary, summary


def test_quick_gives_racecheck_and_initcheck_a_longer_limit(tmp_path: Path) -> None:
    """--quick: memcheck and synccheck within QUICK_SANITIZER_TIMEOUT (60 s), racecheck and
    initcheck within QUICK_SLOW_SANITIZER_TIMEOUT (180 s); SANITIZER_TIMEOUT sets every tool's.
    """
    _, summary = _sanitized(tmp_path, "", "--quick")
    for tool, limit in (
        ("memcheck", 60),
        ("synccheck", 60),
        ("racecheck", 180),
        ("initcheck", 180),
    ):
        assert (
            f"{tool} test_mlp_gpu_mixed: did not finish within {limit} s" in summary
        ), summary
    _, summary = _sanitized(
        tmp_path / "slow", "", "--quick", QUICK_SLOW_SANITIZER_TIMEOUT="240"
    )
    assert (
        "racecheck test_mlp_gpu_mixed: did not finish within 240 s" in summary
    ), summary
    _, summary = _sanitized(tmp_path / "set", "", "--quick", SANITIZER_TIMEOUT="30")
    assert (
        "racecheck test_mlp_gpu_mixed: did not finish within 30 s" in summary
    ), summary
    _, summary = _sanitized(tmp_path / "full", "")
    assert (
        "racecheck test_mlp_gpu_mixed: did not finish within 600 s" in summary
    ), summary


def test_quick_says_when_the_build_labels_no_test(tmp_path: Path) -> None:
    """A build whose CTest files carry none of the labels --quick reads (risky:N, sanitizer:N)
    fails those steps saying so, instead of running an empty test name."""
    env = _stand_in_machine(tmp_path, [])
    ctest_file = Path(env["BUILD_DIR"]) / "tests" / "CTestTestfile.cmake"
    ctest_file.write_text(
        re.sub(r'LABELS "[^"]*"', 'LABELS "gpu"', STAND_IN_CTEST_FILE)
    )
    _executable(tmp_path / "bin" / "compute-sanitizer", "#!/usr/bin/env bash\n")
    out = tmp_path / "out"
    subprocess.run(
        ["bash", str(REPO / "tools" / "gpu-check"), "--quick", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    summary = (out / "summary.txt").read_text()
    assert "label no test risky:N" in summary, summary
    assert "label no test sanitizer:N" in summary, summary
    assert "ctest : " not in summary and "ctest-.log" not in summary


def test_quick_and_full_exclude_each_other(tmp_path: Path) -> None:
    env = _stand_in_machine(tmp_path, [])
    proc = subprocess.run(
        [
            "bash",
            str(REPO / "tools" / "gpu-check"),
            "--quick",
            "--full",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 2 and "exclude each other" in proc.stderr


# --- The lists gpu-check derives equal the ones it held by name before (main at f98597e) --------

TODAY_SWEEPS = {
    "mlp": "^mlp/",
    "matmul": "^(matmul|overhead)/",
    "cnn": "^cnn/",
    "memory": "^memory/",
}
TODAY_RISKY = [
    "test_cnn_gpu",
    "test_mlp_gpu",
    "test_mlp_gpu_mixed",
    "test_cnn_gpu_mixed",
]
TODAY_SANITIZER = [
    "test_mlp_gpu_mixed",
    "test_cnn_gpu",
    "test_cnn_gpu_mixed",
    "test_mlp_gpu",
    "test_gpu_gemm",
]
TODAY_UNPROVEN = {
    "test_mlp_gpu_mixed",
    "test_cnn_gpu",
    "test_cnn_gpu_mixed",
    "test_mlp_gpu",
}
TODAY_SCALING = re.compile(
    r"^(mlp/cpu/openblas/data:(iris/batch:120/hidden:10|synthetic/batch:4096/hidden:512)"
    r"|cnn/cpu/openblas/data:[a-z0-9]+/batch:64)/readback:1/threads:[0-9]+$"
)
# Script, output name and summary line; torch_amp.py is torch_mlp_amp.py now, and two summary
# lines come from the docstrings (they were "torch.mm reference" and "PyTorch Iris reference").
TODAY_REFERENCES = {
    ("torch_matmul.py", "torch-matmul", "PyTorch cuBLAS GEMM reference"),
    ("torch_iris.py", "torch-iris", "PyTorch Iris MLP reference"),
    ("torch_cnn.py", "torch-cnn", "PyTorch CNN reference"),
    ("torch_mlp_amp.py", "torch-mlp-amp", "PyTorch mixed-precision MLP reference"),
}


def _list_data(build: Path) -> dict[str, list[list[str]]]:
    proc = subprocess.run(
        ["bash", str(REPO / "tools" / "gpu-check"), "--list-data"],
        capture_output=True,
        text=True,
        env=dict(os.environ, BUILD_DIR=str(build), PYTHON=sys.executable),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    data: dict[str, list[list[str]]] = {}
    for line in proc.stdout.splitlines():
        kind, *fields = line.split("\t")
        data.setdefault(kind, []).append(fields)
    return data


def _staged_build(tmp_path: Path) -> Path:
    """What scripts/stage-build.sh carries of the build beside bench: bench and CTest's files."""
    bench = _bench()
    build = bench.parent.parent
    ctest_file = build / "tests" / "CTestTestfile.cmake"
    if not bench.is_file() or not ctest_file.is_file():
        pytest.skip(f"no bench and CTest files in {build}")
    if (
        "risky:1" not in ctest_file.read_text()
        and f"{REPO}/tests" not in ctest_file.read_text()
    ):
        pytest.skip(
            f"{build} is another checkout's build, configured before the GPU tests' labels"
        )
    stage_script = (REPO / "scripts" / "stage-build.sh").read_text()
    assert 'cp "$BUILD_DIR/tests/CTestTestfile.cmake" "$stage/tests/"' in stage_script
    staged = tmp_path / "staged"
    (staged / "benchmarks").mkdir(parents=True)
    (staged / "tests").mkdir()
    shutil.copy(build / "CTestTestfile.cmake", staged)
    shutil.copy(ctest_file, staged / "tests")
    (staged / "benchmarks" / "bench").symlink_to(bench)
    return staged


def test_stage_build_gpu_tests_stages_bench_and_only_the_gpu_tests(
    tmp_path: Path,
) -> None:
    """scripts/stage-build.sh --gpu-tests: bench, CTest's files, the libraries, and of the tests
    exactly those CTest labels gpu (what gpu-check --quick runs), none of the CPU ones.
    """
    build = _bench().parent.parent
    if not (build / "tests" / "CTestTestfile.cmake").is_file():
        pytest.skip(f"no configured build in {build}")
    listed = subprocess.run(
        ["ctest", "--test-dir", str(build), "--show-only=json-v1", "-L", "^gpu$"],
        capture_output=True,
        text=True,
        check=True,
    )
    gpu_tests = {test["name"] for test in json.loads(listed.stdout)["tests"]}
    if not gpu_tests:
        pytest.skip(
            f"{build} was configured without CUDA: it has no GPU tests to stage"
        )
    staged = tmp_path / "staged"
    proc = subprocess.run(
        ["bash", str(REPO / "scripts" / "stage-build.sh"), "--gpu-tests", str(staged)],
        capture_output=True,
        text=True,
        env=dict(os.environ, BUILD_DIR=str(build)),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert {p.name for p in (staged / "tests").iterdir()} == gpu_tests | {
        "CTestTestfile.cmake"
    }
    assert (
        "test_cpu_gemm" not in gpu_tests
        and (build / "tests" / "test_cpu_gemm").is_file()
    )
    assert (staged / "benchmarks" / "bench").is_file()
    assert (staged / "CTestTestfile.cmake").is_file()
    assert any(p.name.startswith("libopenblas") for p in (staged / "lib").iterdir())


def test_the_derived_lists_are_todays(tmp_path: Path) -> None:
    """From a staged build (bench and CTest's files only): the sweep steps, the GPU tests of
    --quick and the sanitizer in their order, the references, and the scaling rows."""
    data = _list_data(_staged_build(tmp_path))
    assert dict(data["sweep"]) == TODAY_SWEEPS
    # The steps run in bench's order (it lists the GEMM rows first), no longer mlp first.
    assert [name for name, _ in data["sweep"]] == ["matmul", "mlp", "cnn", "memory"]
    assert [test for (test,) in data["risky"]] == TODAY_RISKY
    assert [test for (test,) in data["sanitizer"]] == TODAY_SANITIZER
    assert {test for (test,) in data["unproven"]} == TODAY_UNPROVEN
    assert {tuple(fields) for fields in data["reference"]} == TODAY_REFERENCES
    assert data["report_references"] == [["torch-*amp"]]

    names = subprocess.run(
        [str(_bench()), "--full", "--list-all"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    ((scaling,),) = data["scaling"]
    derived = {name for name in names if scaling and re.search(scaling, name)}
    today = {name for name in names if TODAY_SCALING.search(name)}
    if len({name.rsplit("/threads:", 1)[1] for name in today}) > 2:
        assert derived == today
    else:
        # 2 cores or fewer: the scaling rows run at the same counts as every CPU row (1 and all
        # cores), so nothing tells them apart; the step says so and fails (the next test uses
        # a 16-core listing).
        assert scaling == "" and derived == set()


def _threads(case: str, counts: tuple[int, ...]) -> list[str]:
    return [f"{case}/threads:{count}" for count in counts]


def test_the_scaling_rows_are_the_families_over_more_than_two_thread_counts(
    tmp_path: Path,
) -> None:
    """A 16-core host's full listing (hand-made): the scaling families run at 1, 2, 4, 8 and 16
    threads, the other CPU rows at 1 and 16; the derived rows are exactly today's."""
    scaling, single = (1, 2, 4, 8, 16), (1, 16)
    listed = [
        *_threads("matmul/cpu/openblas/dtype:fp32/m:16/n:16/k:16", single),
        *_threads("mlp/cpu/openblas/data:iris/batch:120/hidden:10/readback:1", scaling),
        *_threads("mlp/cpu/openblas/data:iris/batch:120/hidden:10/readback:0", single),
        *_threads(
            "mlp/cpu/openblas/data:synthetic/batch:4096/hidden:512/readback:1", scaling
        ),
        *_threads(
            "mlp/cpu/openblas/data:synthetic/batch:4096/hidden:64/readback:1", single
        ),
        *_threads(
            "mlp/cpu/openblas/data:synthetic/batch:4096/hidden:512/readback:1/precision:bf16",
            single,
        ),
        *_threads("cnn/cpu/openblas/data:synthetic/batch:64/readback:1", scaling),
        *_threads("cnn/cpu/openblas/data:synthetic/batch:16/readback:1", single),
        "mlp/gpu/graph/data:iris/batch:120/hidden:10/readback:0/manual_time",
    ]
    env = _stand_in_machine(tmp_path, [], listed)
    data = _list_data(Path(env["BUILD_DIR"]))
    ((scaling_filter,),) = data["scaling"]
    derived = [name for name in listed if re.search(scaling_filter, name)]
    assert derived == [name for name in listed if TODAY_SCALING.search(name)]
    assert len(derived) == 15


def test_scaling_step_without_scaling_rows_fails_and_says_why(tmp_path: Path) -> None:
    listed = _threads(
        "mlp/cpu/openblas/data:iris/batch:120/hidden:10/readback:1", (1, 2)
    )
    env = _stand_in_machine(tmp_path, [], listed)
    out = tmp_path / "out"
    proc = _gpu_check(env, "scaling", out)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    summary = (out / "summary.txt").read_text()
    assert (
        "scaling: no row of bench --full --list-all scales over more than two thread"
        in summary
    )
    assert not (out / "test-gpu-cpu-scaling.json").exists()


def test_only_names_the_derived_sweep_steps(tmp_path: Path) -> None:
    env = _stand_in_machine(tmp_path, _sweep_rows())
    proc = _gpu_check(env, "tests,matmul", tmp_path / "out")
    assert proc.returncode == 2
    assert proc.stderr == (
        "gpu-check: unknown step 'matmul' (steps: tests sanitizer smoke examples mlp scaling "
        "references report)\n"
    )
