"""gpubench-advise end to end on the committed H100 run: the winner at the extremes, what the
answers say and hold, the JSON, and the clear exit-2 errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
from conftest import FIXTURES, GPU_CONTEXT, REPO, gb_row, write_bench_json

from gpubench_tools.advise import PROG, cli, main
from gpubench_tools.advise.cli import parse_gemm, parse_mlp
from gpubench_tools.advise.loo import LooReport, leave_one_out
from gpubench_tools.advise.curves import GemmShape
from gpubench_tools.advise.model import Advisor, AdviseError, MlpConfig, Run, load_runs
from gpubench_tools.advise.render import error_text, gemm_answer, loo_answer, mlp_answer

BASE = REPO / "reports" / "baselines"
MATMUL = str(BASE / "h100-80gb-hbm3-matmul.json")
MLP = str(BASE / "h100-80gb-hbm3-mlp.json")


@pytest.fixture(autouse=True, scope="module")
def runs_read_once() -> Iterator[dict[str, LooReport]]:
    """Each set of input files is read once for the module, and a run's leave-one-out computed
    once (the answers leave both as they are): the requests share the committed run. Yields the
    leave-one-out reports, by run."""
    loaded: dict[tuple[str, ...], Any] = {}
    reports: dict[str, LooReport] = {}

    def load(paths: list[str]) -> Any:
        if tuple(paths) not in loaded:
            loaded[tuple(paths)] = load_runs(paths)
        return loaded[tuple(paths)]

    def loo(run: Run, overhead: Any = None) -> LooReport:
        if run.name not in reports:
            reports[run.name] = leave_one_out(run, overhead)
        return reports[run.name]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cli, "load_runs", load)
        patch.setattr(cli, "leave_one_out", loo)
        yield reports


def advise(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def advise_json(args: list[str], capsys: pytest.CaptureFixture[str]) -> Any:
    code, out, err = advise([*args, "--json"], capsys)
    assert code == 0, err
    return json.loads(out)


# --- the winner at the extremes -------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["fp32", "bf16", "fp64"])
@pytest.mark.parametrize("host", ["pinned", "pageable", "resident"])
def test_a_tiny_gemm_goes_to_the_cpu(
    dtype: str, host: str, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = advise_json([MATMUL, "--gemm", "16x16x16", "--dtype", dtype, "--host", host], capsys)
    assert doc["winner"] == "cpu"
    assert doc["ratio"] > 10  # microseconds of fixed GPU cost against a sub-microsecond GEMM


@pytest.mark.parametrize("dtype", ["fp32", "tf32", "bf16", "fp16", "fp64"])
@pytest.mark.parametrize("host", ["pinned", "pageable"])
def test_8192_cubed_goes_to_the_gpu(
    dtype: str, host: str, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = advise_json(
        [MATMUL, "--gemm", "8192x8192x8192", "--dtype", dtype, "--host", host], capsys
    )
    assert doc["winner"] == "gpu"
    assert doc["ratio"] > 3
    # The CPU never ran a GEMM this big: its time is an extrapolation and says so.
    assert doc["extrapolated"] is True
    assert all(e["extrapolated"] for e in doc["cpu"]["by_threads"])


def test_a_tiny_mlp_goes_to_the_cpu_and_a_big_one_to_the_gpu(
    capsys: pytest.CaptureFixture[str],
) -> None:
    tiny = advise_json([MATMUL, MLP, "--mlp", "batch=120,hidden=10,data=iris"], capsys)
    assert tiny["winner"] == "cpu"
    big = advise_json([MATMUL, MLP, "--mlp", "batch=65536,hidden=512"], capsys)
    assert big["winner"] == "gpu" and big["ratio"] > 10


def test_the_crossover_lies_where_the_report_puts_it(capsys: pytest.CaptureFixture[str]) -> None:
    """README: the end-to-end pinned fp32 crossover against the 16-core host is n ~ 120."""
    winners = {
        n: advise_json([MATMUL, "--gemm", f"{n}x{n}x{n}"], capsys)["winner"]
        for n in (48, 64, 256, 512)
    }
    assert winners == {48: "cpu", 64: "cpu", 256: "gpu", 512: "gpu"}


# --- what an answer holds -------------------------------------------------------------------


def test_gemm_json_parts_add_up_and_name_their_sources(capsys: pytest.CaptureFixture[str]) -> None:
    doc = advise_json([MATMUL, MLP, "--gemm", "1000x1000x1000", "--dtype", "bf16"], capsys)
    assert doc["request"] == {
        "kind": "gemm",
        "m": 1000,
        "n": 1000,
        "k": 1000,
        "flop": 2e9,
        "dtype": "bf16",
        "host": "pinned",
        "cpu_dtype": "fp32",
    }
    gpu = doc["gpu"]
    assert set(gpu["parts"]) == {"h2d", "compute", "d2h", "launch", "sync"}
    assert sum(gpu["parts"].values()) == pytest.approx(gpu["seconds"])
    assert gpu["compute"]["where"] == "interpolated"
    assert gpu["compute"]["curve"]["family"] == "square"
    assert doc["cpu"]["seconds"] == min(e["seconds"] for e in doc["cpu"]["by_threads"])
    assert {e["threads"] for e in doc["cpu"]["by_threads"]} == {1, 16}
    assert doc["extrapolated"] is False
    # Copies: 2 alphas in (A and B), 1 out, and the bytes of bf16 operands.
    h2d_bytes = 2 * 1000 * 1000 * 2
    assert gpu["parts"]["h2d"] > h2d_bytes / 60e9
    assert doc["typical_error"]["median"] > 0


def test_resident_operands_pay_no_copies(capsys: pytest.CaptureFixture[str]) -> None:
    pinned = advise_json([MATMUL, "--gemm", "512x512x512"], capsys)
    resident = advise_json([MATMUL, "--gemm", "512x512x512", "--host", "resident"], capsys)
    assert resident["gpu"]["parts"]["h2d"] == 0 and resident["gpu"]["parts"]["d2h"] == 0
    assert resident["gpu"]["parts"]["compute"] == pinned["gpu"]["parts"]["compute"]
    assert resident["gpu"]["seconds"] < pinned["gpu"]["seconds"]


def test_pageable_copies_cost_more_than_pinned(capsys: pytest.CaptureFixture[str]) -> None:
    pinned = advise_json([MATMUL, "--gemm", "2048x2048x2048"], capsys)
    pageable = advise_json([MATMUL, "--gemm", "2048x2048x2048", "--host", "pageable"], capsys)
    assert pageable["gpu"]["parts"]["h2d"] > 2 * pinned["gpu"]["parts"]["h2d"]


def test_gemm_text_has_sentences_a_table_and_the_measurement(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = advise([MATMUL, MLP, "--gemm", "1024x1024x1024"], capsys)
    assert code == 0 and err == ""
    assert "The GPU wins:" in out
    assert "Of the GPU's time, copies" in out
    assert "| CPU fp32, 16 threads" in out
    assert "H2D copies (2 x " in out
    assert "launch + sync" in out
    # The measurement leads; the prediction follows with its error.
    assert "The GPU wins: 353 us (end to end, measured)" in out
    assert "Predicted: GPU 319 us (-10%)" in out
    assert "median 14%" in out


def test_extrapolation_is_flagged_in_words_and_in_the_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = advise([MATMUL, "--gemm", "16384x16384x16384", "--dtype", "bf16"], capsys)
    assert code == 0
    assert "GPU compute: EXTRAPOLATED above the GPU bf16 square curve" in out
    assert "CPU (16 threads): EXTRAPOLATED above" in out
    assert "* extrapolated beyond the measured sizes" in out
    code, out, _ = advise([MATMUL, "--gemm", "700x700x700"], capsys)
    assert "EXTRAPOLATED" not in out and "interpolated on the GPU fp32 square curve" in out


def test_a_shape_unlike_any_measured_one_is_called_a_rough_guide(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = advise([MATMUL, "--gemm", "3x5x100000", "--dtype", "fp64"], capsys)
    assert code == 0
    assert "rough guide" in out


def test_mlp_answer_shows_the_measurement_beside_the_prediction(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = [MATMUL, MLP, "--mlp", "batch=4096,hidden=512"]
    doc = advise_json(args, capsys)
    assert doc["request"]["widths"] == [64, 512, 10]
    assert doc["request"]["kernels_per_step"] == 12
    measured = doc["measured"]["gpu_eager"]
    assert measured["run_name"].startswith("mlp/gpu/eager/data:synthetic/batch:4096/hidden:512/")
    assert measured["seconds_per_step"] == pytest.approx(105.2e-6, rel=0.01)
    assert {c["threads"] for c in doc["measured"]["cpu"]} == {1, 16}
    assert len(doc["gpu"]["products"]) == 5
    assert sum(doc["gpu"]["parts"].values()) == pytest.approx(doc["gpu"]["seconds"])
    code, out, _ = advise(args, capsys)
    assert "The run measured this configuration; prediction against it: GPU eager" in out
    assert "GPU graph (measured only" in out
    assert "launches (12 x 3.60 us)" in out


def test_mlp_options_change_the_step(capsys: pytest.CaptureFixture[str]) -> None:
    base = advise_json([MATMUL, MLP, "--mlp", "batch=256,hidden=64"], capsys)
    deep = advise_json([MATMUL, MLP, "--mlp", "batch=256,hidden=64x2"], capsys)
    assert deep["request"]["kernels_per_step"] == 18 and deep["request"]["layers"] == 2
    assert deep["gpu"]["seconds"] > base["gpu"]["seconds"]
    readback = advise_json([MATMUL, MLP, "--mlp", "batch=256,hidden=64,readback=1"], capsys)
    assert readback["gpu"]["parts"]["loss readback"] > 5e-6
    pageable = advise_json([MATMUL, MLP, "--mlp", "batch=256,hidden=64,input=pageable"], capsys)
    assert pageable["gpu"]["parts"]["input copy"] > 0
    assert base["measured"]["gpu_eager"] is not None  # measured with readback 0


def test_an_unmeasured_mlp_has_no_measured_rows(capsys: pytest.CaptureFixture[str]) -> None:
    doc = advise_json([MATMUL, MLP, "--mlp", "batch=100,hidden=300,layers=3"], capsys)
    assert doc["measured"] == {"gpu_eager": None, "cpu": [], "other": []}
    assert doc["request"]["widths"] == [64, 300, 300, 300, 10]


@pytest.mark.slow
def test_leave_one_out_mode(
    capsys: pytest.CaptureFixture[str], runs_read_once: dict[str, LooReport]
) -> None:
    code, out, err = advise([MATMUL, MLP, "--leave-one-out"], capsys)
    assert code == 0, err
    assert "| end-to-end GEMM rows, GPU time" in out
    assert "| eager MLP rows, GPU time per step" in out
    assert "Largest errors:" in out
    doc = advise_json([MATMUL, MLP, "--leave-one-out"], capsys)
    assert len(runs_read_once) == 1  # the JSON rendered the report the text did
    assert doc["classes"]["gemm_e2e"]["rows"] == 84
    assert len(doc["classes"]["mlp_eager"]["cases"]) == 38


def test_python_dash_m_runs_the_advisor() -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO / "tools"))
    proc = subprocess.run(
        [sys.executable, "-m", "gpubench_tools.advise", MATMUL, "--gemm", "64x64x64"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "The CPU wins:" in proc.stdout


# --- parsing ----------------------------------------------------------------------------------


def test_parse_gemm() -> None:
    assert parse_gemm("1x2x3").mnk == (1, 2, 3)
    assert parse_gemm(" 4096X1024x7 ").mnk == (4096, 1024, 7)


@pytest.mark.parametrize("text", ["", "12x3", "axbxc", "1x2x3x4", "0x4x4", "-1x2x3", "1.5x2x3"])
def test_parse_gemm_rejects(text: str) -> None:
    with pytest.raises(AdviseError) as refused:
        parse_gemm(text)
    assert "--gemm" in error_text(refused.value)


def test_parse_mlp() -> None:
    assert parse_mlp("batch=256,hidden=512") == MlpConfig(256, 512)
    assert parse_mlp("hidden=64x2, batch=16") == MlpConfig(16, 64, layers=2)
    assert parse_mlp("batch=1,hidden=8,layers=3,data=iris,readback=1,input=pinned") == MlpConfig(
        1, 8, 3, "iris", 1, "pinned"
    )


@pytest.mark.parametrize(
    "text, problem",
    [
        ("hidden=512", "missing batch"),
        ("batch=4", "missing hidden"),
        ("batch=4,hidden=8,depth=2", "unknown key 'depth'"),
        ("batch=4,hidden=8,batch=5", "'batch' given twice"),
        ("batch=0,hidden=8", "'batch=0': 0 is not an integer from 1 to 1000000000000"),
        ("batch=four,hidden=8", "batch=four"),
        ("batch=4,hidden=8,data=mnist", "data=mnist: unknown data set"),
        ("batch=4,hidden=8x2,layers=3", "disagree"),
        ("batch=4,hidden=8,input=disk", "input=disk"),
        ("batch=4,hidden", "key=value pairs"),
        ("batch=4;hidden=8", "missing hidden"),
    ],
)
def test_parse_mlp_rejects(text: str, problem: str) -> None:
    with pytest.raises(AdviseError) as refused:
        parse_mlp(text)
    assert problem in error_text(refused.value)


# --- errors: exit 2, one line naming the problem --------------------------------------------


def error_of(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exc:
        code = main(args)
        raise SystemExit(code)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{PROG}: error: ") and err.count("\n") == 1, err
    return err


@pytest.mark.parametrize(
    "args, problem",
    [
        (["--gemm", "12x3"], "--gemm '12x3': expected MxNxK"),
        (["--gemm", "64x64x64", "--dtype", "fp8"], "unknown dtype 'fp8': choose one of fp32"),
        (["--gemm", "64x64x64", "--host", "managed"], "unknown --host 'managed'"),
        (["--mlp", "batch=4"], "missing hidden"),
        ([], "one of the arguments --gemm --mlp --leave-one-out is required"),
        (["--gemm", "8x8x8", "--mlp", "batch=1,hidden=2"], "not allowed with argument"),
    ],
)
def test_bad_requests_exit_2(
    args: list[str], problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert problem in error_of([MATMUL, *args], capsys)


def test_a_run_without_gpu_rows_points_to_the_reference_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = error_of([str(FIXTURES / "cpu_only.json"), "--gemm", "64x64x64"], capsys)
    assert "cpu_only.json has no GPU rows (recorded without a GPU: no usable CUDA device" in err
    assert "reports/baselines/h100-80gb-hbm3-matmul.json" in err
    err = error_of([str(FIXTURES / "cpu_only.json"), "--leave-one-out"], capsys)
    assert "has no GPU rows" in err


def test_malformed_json_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text("{this is not json")
    err = error_of([str(bad), "--gemm", "64x64x64"], capsys)
    assert "broken.json" in err and "not valid JSON" in err
    other = tmp_path / "list.json"
    other.write_text("[1, 2]")
    assert "expected a JSON object" in error_of([str(other), "--gemm", "64x64x64"], capsys)
    missing = tmp_path / "missing.json"
    assert "cannot read file" in error_of([str(missing), "--gemm", "64x64x64"], capsys)


def _partial_gpu_run(tmp_path: Path, *, probes: bool) -> str:
    """A GPU run with fp32 kernel and CPU rows only; launch probes, and copy probes if asked."""
    rows = []
    for n, t_gpu, t_cpu in ((64, 5e-6, 10e-6), (256, 8e-6, 400e-6), (1024, 60e-6, 20e-3)):
        flop = 2.0 * n**3
        counters = {"m": n, "n": n, "k": n, "flop": flop}
        rows.append(
            gb_row(
                f"matmul/gpu/cublas_kernel/dtype:fp32/m:{n}/n:{n}/k:{n}/manual_time",
                t_gpu,
                {**counters, "t_compute": t_gpu},
                "workload=matmul backend=gpu variant=cublas_kernel dtype=fp32 shape=square",
            )
        )
        rows.append(
            gb_row(
                f"matmul/cpu/openblas/dtype:fp32/m:{n}/n:{n}/k:{n}/threads:1",
                t_cpu,
                {**counters, "blas_threads": 1},
                "workload=matmul backend=cpu variant=openblas dtype=fp32 shape=square",
            )
        )
    for kernels in (1, 10, 100):
        rows.append(
            gb_row(
                f"overhead/launch/burst/kernels:{kernels}/manual_time",
                kernels * 4e-6,
                {"kernels": kernels, "t_wall": kernels * 4e-6},
                "probe=launch_burst",
            )
        )
    if probes:
        for direction in ("h2d", "d2h"):
            for nbytes in (4, 4096, 4 << 20):
                rows.append(
                    gb_row(
                        f"overhead/{direction}/pinned/bytes:{nbytes}/manual_time",
                        5e-6 + nbytes / 50e9,
                        {"bytes": nbytes, f"t_{direction}": 5e-6 + nbytes / 50e9},
                        f"probe={direction} host=pinned",
                    )
                )
    path = tmp_path / ("probes.json" if probes else "no_probes.json")
    return str(write_bench_json(path, rows, dict(GPU_CONTEXT)))


def test_a_run_without_the_rows_needed_says_which(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    no_probes = _partial_gpu_run(tmp_path, probes=False)
    err = error_of([no_probes, "--gemm", "128x128x128"], capsys)
    assert "no h2d pinned transfer probes" in err
    with_probes = _partial_gpu_run(tmp_path, probes=True)
    err = error_of([with_probes, "--gemm", "128x128x128", "--host", "pageable"], capsys)
    assert "no h2d pageable transfer probes" in err
    err = error_of([with_probes, "--gemm", "128x128x128", "--dtype", "bf16"], capsys)
    assert "no kernel-only GPU GEMM rows for bf16" in err and "it has: fp32" in err
    err = error_of([with_probes, "--gemm", "128x128x128", "--dtype", "fp64"], capsys)
    assert "no kernel-only GPU GEMM rows for fp64" in err


def test_a_partial_run_still_answers_what_it_can(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _partial_gpu_run(tmp_path, probes=True)
    doc = advise_json([run, "--gemm", "512x512x512"], capsys)
    assert doc["winner"] == "gpu"
    # No round-trip or sync probe: the burst's fixed cost stands in for the sync.
    assert doc["gpu"]["parts"]["sync"] >= 0
    doc = advise_json([run, "--gemm", "128x128x128", "--host", "resident"], capsys)
    assert doc["gpu"]["parts"]["h2d"] == 0


def test_a_file_name_cannot_forge_a_line_of_the_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The answer names its input file; a name with a newline and a CI workflow command stays on
    its line (output.write_lines sanitises every line it prints)."""
    hostile = tmp_path / "run\n::error::forged.json"
    hostile.write_bytes(Path(MATMUL).read_bytes())
    code, out, err = advise([str(hostile), "--gemm", "1024x1024x1024"], capsys)
    assert code == 0, err
    assert not any(line.startswith("::") for line in out.splitlines())
    assert "forged.json" in out


def test_a_thread_count_that_is_no_number_reads_as_one_thread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A CPU row without a thread counter whose name's `threads:` part is no number (the reader
    keeps it as text) is read at one thread: the advisor answers, it does not fail."""
    doc = json.loads(Path(MATMUL).read_text())
    renamed = 0
    for row in doc["benchmarks"]:
        if row["run_name"].startswith("matmul/cpu/"):
            row.pop("blas_threads", None)
            row.pop("threads", None)
            for key in ("name", "run_name"):
                row[key] = row[key].replace("/threads:", "/threads:all")
            renamed += 1
    assert renamed
    path = tmp_path / "threads.json"
    path.write_text(json.dumps(doc))
    answer = advise_json([str(path), "--gemm", "256x256x256"], capsys)
    assert [e["threads"] for e in answer["cpu"]["by_threads"]] == [1]


def test_the_answers_are_records_the_templates_only_render() -> None:
    """What the answers say, computed (render.Answer): the prediction beside a measured headline,
    the parts the run measured here, the shares and the tie."""
    (run,), _ = cli.load_runs([MATMUL, MLP])
    advisor, shape = Advisor(run), GemmShape(1024, 1024, 1024)
    pinned = gemm_answer(advisor, advisor.gemm(shape, "fp32", "pinned"))
    assert pinned.headline["gpu"]["source"] == "measured" and pinned.measured is None
    p, measured = pinned.predicted, pinned.headline["gpu"]["seconds"]
    assert p.gpu_error == pytest.approx((pinned.a.gpu_total - measured) / measured)
    assert p.same_winner and p.differs["part"] == "copies to the GPU"
    assert pinned.top == "copies" and sum(pinned.share.values()) == pytest.approx(1.0)
    assert not pinned.tie  # 6.4x: far beyond the typical error
    resident = gemm_answer(advisor, advisor.gemm(shape, "fp32", "resident"))
    # A kernel-only row never leads (it lacks launch and sync): said beside the prediction.
    assert resident.kernel_row and resident.headline["gpu"]["source"] == "predicted"
    assert [m.side for m in resident.measured] == ["gpu", "cpu"]
    assert resident.predicted.gpu_error is None and set(resident.share) == {"compute", "overhead"}
    mlp = mlp_answer(advisor, advisor.mlp(MlpConfig(256, 512)))
    assert mlp.products == 5 and mlp.top == "layer products"
    assert [(m.side, m.threads) for m in mlp.measured] == [("gpu", 0), ("cpu", 1), ("cpu", 16)]
    assert "| GPU graph (measured only, readback 0) |" in mlp.table


def test_the_leave_one_out_answer_is_a_record() -> None:
    (run,), _ = cli.load_runs([MATMUL, MLP])
    answer = loo_answer(cli.leave_one_out(run, None))
    errors = [abs(c.rel_error) for c in answer.worst]
    assert len(errors) == 5 and errors == sorted(errors, reverse=True)
    assert "| end-to-end GEMM rows, GPU time " in answer.table
