"""The advisor as a newcomer meets it: a CPU run passed with the committed GPU reference is
answered with that GPU (never told to pass the file it just passed), a measured request leads
with the measurement and says how the prediction differs, and a shape beyond the GPU memory the
run recorded is refused (exit 2, one line with the bytes needed and available)."""

from __future__ import annotations

import json
from typing import Any, Iterator

import pytest
from conftest import FIXTURES, REPO

from gpubench_tools.advise import cli, main
from gpubench_tools.advise.model import load_runs

BASE = REPO / "reports" / "baselines"
MATMUL = str(BASE / "h100-80gb-hbm3-matmul.json")
MLP = str(BASE / "h100-80gb-hbm3-mlp.json")
CPU_RUN = str(FIXTURES / "cpu_only.json")
H100_MEMORY_BYTES = 85017493504  # gpu_memory_bytes of the committed run


@pytest.fixture(autouse=True, scope="module")
def runs_read_once() -> Iterator[None]:
    """Each set of input files is read once for the module (the answers leave the runs as they
    are): the requests share the committed run."""
    loaded: dict[tuple[str, ...], Any] = {}

    def load(paths: list[str]) -> Any:
        if tuple(paths) not in loaded:
            loaded[tuple(paths)] = load_runs(paths)
        return loaded[tuple(paths)]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cli, "load_runs", load)
        yield


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def _json(args: list[str], capsys: pytest.CaptureFixture[str]) -> Any:
    code, out, err = _run([*args, "--json"], capsys)
    assert code == 0, err
    return json.loads(out)


def test_a_cpu_run_with_the_reference_is_answered_with_that_gpu(
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = _json([CPU_RUN, MATMUL, "--gemm", "1024x1024x1024"], capsys)
    # One answer: this CPU (AMD EPYC, 2 threads at most) against the reference's GPU.
    assert doc["machine"]["cpu"] == "AMD EPYC" and "H100" in doc["machine"]["gpu"]
    assert doc["machine"]["files"] == [CPU_RUN] and doc["machine"]["gpu_files"] == [MATMUL]
    assert {c["threads"] for c in doc["cpu"]["by_threads"]} == {1, 2}
    # The GPU side is the reference's own end-to-end row at this shape.
    assert doc["measured"]["gpu"]["seconds"] == pytest.approx(353e-6, rel=0.01)
    code, out, err = _run([CPU_RUN, MATMUL, MLP, "--mlp", "batch=256,hidden=512"], capsys)
    assert code == 0, err
    assert "try the committed reference run" not in out + err


def test_the_hint_never_names_a_file_already_passed(capsys: pytest.CaptureFixture[str]) -> None:
    """The MLP file alone has no kernel-only GEMM rows: the hint names only the matmul file."""
    code, _, err = _run([CPU_RUN, MLP, "--gemm", "64x64x64"], capsys)
    assert code == 2
    hint = err.split("try the committed reference run:", 1)[1].split()
    assert [h.rsplit("/", 1)[-1] for h in hint] == ["h100-80gb-hbm3-matmul.json"]


def test_a_measured_mlp_step_leads_with_the_measurement(capsys: pytest.CaptureFixture[str]) -> None:
    """batch 256, hidden 512 on the committed run: eager measured 171 us per step (its
    prediction 98.5 us), OpenBLAS measured 642 us at 16 threads. The launch and sync part is
    where they differ most: 43.2 us predicted, 128 us measured per step."""
    doc = _json([MATMUL, MLP, "--mlp", "batch=256,hidden=512"], capsys)
    head = doc["headline"]
    assert head["gpu"]["source"] == "measured" and head["cpu"]["source"] == "measured"
    assert head["gpu"]["seconds"] == pytest.approx(171.3e-6, rel=0.01)
    assert head["gpu"]["predicted"] == pytest.approx(doc["gpu"]["seconds"])
    assert head["cpu"]["seconds"] == pytest.approx(642.4e-6, rel=0.01)
    assert head["cpu"]["threads"] == 16
    assert head["ratio"] == pytest.approx(642.4 / 171.3, rel=0.01)
    code, out, _ = _run([MATMUL, MLP, "--mlp", "batch=256,hidden=512"], capsys)
    first = out.split("\n\n")[1].splitlines()
    assert first[0].startswith("The GPU wins: 171 us per step") and "measured" in first[0]
    assert first[1].startswith("Predicted: GPU 98.5 us (-43%)")
    assert "43.2 us predicted, 128 us measured" in first[1]


def test_an_unmeasured_shape_says_predicted(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json([MATMUL, "--gemm", "1000x1000x1000"], capsys)
    assert doc["headline"]["gpu"]["source"] == "predicted"
    assert doc["headline"]["gpu"]["seconds"] == pytest.approx(doc["gpu"]["seconds"])
    assert doc["headline"]["winner"] == doc["winner"]
    _, out, _ = _run([MATMUL, "--gemm", "1000x1000x1000"], capsys)
    assert "Predicted:" not in out and "(end to end, predicted)" in out


def test_a_gemm_beyond_the_recorded_gpu_memory_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A 100000^3 fp32 GEMM needs 3 x 4e10 bytes of A, B and C: 1.2e11 > 8.5e10."""
    code, out, err = _run([MATMUL, "--gemm", "100000x100000x100000"], capsys)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert "120000000000 bytes" in err and f"{H100_MEMORY_BYTES} bytes" in err
    # The same shape in bf16 needs half: 6e10 bytes fit, and the GPU answers.
    assert _json([MATMUL, "--gemm", "100000x100000x100000", "--dtype", "bf16"], capsys)
    # Just over the memory is refused, just under answered.
    side = int((H100_MEMORY_BYTES / 12) ** 0.5)  # 3 square fp32 matrices: 12 n^2 bytes
    assert _run([MATMUL, "--gemm", f"{side + 1}x{side + 1}x{side + 1}"], capsys)[0] == 2
    assert _run([MATMUL, "--gemm", f"{side}x{side}x{side}"], capsys)[0] == 0


def test_an_mlp_step_beyond_the_recorded_gpu_memory_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = _run([MATMUL, "--mlp", "batch=1000000000,hidden=64"], capsys)
    assert code == 2 and f"{H100_MEMORY_BYTES} bytes" in err
