"""tools/reference/torch_mlp_amp.py: PyTorch's fp32, bf16-autocast and fp16-autocast (GradScaler)
training of the suite's MLP, written as rows the report pairs with each other and with the suite.

The runs use --device cpu, so no GPU is needed, with a Python that has PyTorch:
$GPUBENCH_TORCH_PYTHON, else the interpreter running the tests; they are skipped when neither has
it. The argument and no-PyTorch checks, the flop count and the skipped-step count (on a stand-in
trainer) need no PyTorch at all."""

from __future__ import annotations

import importlib
import os
import socket
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from conftest import REPO

from gpubench_tools.benchjson import SKIPPED, iteration_rows, load_report
from gpubench_tools.table import load_table

SCRIPT = REPO / "tools" / "reference" / "torch_mlp_amp.py"
# bench's flop count of one Iris epoch (4-10-3, batch 120): the committed H100 run's
# mlp/*/data:iris rows carry flop = 816000000 over 20000 epochs.
IRIS_STEP_FLOP = 816000000 / 20000
# The same run's mlp/*/data:synthetic/batch:4096/hidden:512x2 rows: flop 142103019520, 20 epochs.
TWO_LAYER_STEP_FLOP = 142103019520 / 20


def _has_torch(python: str) -> bool:
    probe = subprocess.run([python, "-c", "import torch"], capture_output=True, timeout=120)
    return probe.returncode == 0


def _torch_python() -> str:
    for candidate in (os.environ.get("GPUBENCH_TORCH_PYTHON"), sys.executable):
        if candidate and _has_torch(candidate):
            return candidate
    pytest.skip("no Python with PyTorch (set GPUBENCH_TORCH_PYTHON to one)")


def _run(python: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([python, str(SCRIPT), *args], capture_output=True, text=True, timeout=600)


def test_cpu_rows_are_named_labelled_and_paired_like_the_suites(tmp_path: Path) -> None:
    out = tmp_path / "torch-mlp-amp.json"
    proc = _run(
        _torch_python(),
        "--device=cpu",
        "--cases=iris,synthetic:64:16x2",
        "--iris-epochs=30",
        "--synthetic-epochs=5",
        "--seconds=0.02",
        f"--out={out}",
    )
    assert proc.returncode == 0, proc.stderr
    report = load_report(str(out))
    stem = "mlp/cpu/torch_eager/data:"
    iris, synthetic = f"{stem}iris/batch:120/hidden:10/readback:0", (
        f"{stem}synthetic/batch:64/hidden:16x2/readback:0"
    )
    expected = {
        f"{case}{suffix}"
        for case in (iris, synthetic)
        for suffix in ("", "/precision:bf16", "/precision:fp16")
    }
    assert {r.name for r in report.rows} == expected
    for row in report.rows:
        precision = row.name.rpartition("precision:")[2] if "precision:" in row.name else "fp32"
        assert row.labels["precision"] == precision
        assert (row.labels["workload"], row.labels["backend"], row.labels["variant"]) == (
            "mlp",
            "cpu",
            "torch_eager",
        )
        if row.error is not None:
            # fp16 on a CPU whose PyTorch has no CPU GradScaler: skipped, saying why.
            assert precision == "fp16" and row.status == SKIPPED, row.error
            continue
        c = row.counters
        assert c["t_epoch"] > 0 and c["t_wall"] == pytest.approx(c["t_epoch"] * c["epochs"])
        assert c["final_loss"] > 0
        assert ("loss_scale" in c and "skipped_steps" in c) == (precision == "fp16")
    iris_fp32 = next(r for r in report.rows if r.name == iris)
    assert iris_fp32.counters["flop"] == pytest.approx(IRIS_STEP_FLOP * 30)
    assert iris_fp32.counters["batch"] == 120 and iris_fp32.counters["epochs"] == 30
    # The context identifies the machine the way bench's does, so the two files merge.
    assert report.context["host_name"] == socket.gethostname()
    assert report.context["cpu_logical_cpus"] == str(os.cpu_count())
    # The table reads every row with its precision and a step time.
    rows = load_table([str(out)]).rows
    ran = {r.name for r in iteration_rows(report) if "precision:" in r.name}
    mixed = rows[rows["name"].isin(ran)]
    assert set(mixed["name"]) == ran and (mixed["precision"] != "fp32").all()
    assert (mixed["t_step"] > 0).all()


def test_without_pytorch_it_says_so_and_exits_2(tmp_path: Path) -> None:
    if _has_torch(sys.executable):
        pytest.skip("this interpreter has PyTorch")
    proc = _run(sys.executable, "--out", str(tmp_path / "x.json"))
    assert proc.returncode == 2
    assert "PyTorch is not installed" in proc.stderr
    assert not (tmp_path / "x.json").exists()


def test_without_cuda_the_default_device_exits_2(tmp_path: Path) -> None:
    python = _torch_python()
    cuda = subprocess.run(
        [python, "-c", "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"],
        timeout=120,
    )
    if cuda.returncode == 0:
        pytest.skip("PyTorch sees a CUDA device here")
    proc = _run(python, "--out", str(tmp_path / "x.json"))
    assert proc.returncode == 2
    assert "sees no CUDA device" in proc.stderr and "--device cpu" in proc.stderr


@pytest.mark.parametrize(
    "argument, message",
    [
        ("--cases=synthetic:64", "unknown case 'synthetic:64'"),
        ("--cases=synthetic:0:16", "batch and widths must be positive"),
        ("--precisions=fp32,tf32", "unknown precision tf32"),
    ],
)
def test_bad_arguments_are_usage_errors(tmp_path: Path, argument: str, message: str) -> None:
    proc = _run(sys.executable, argument, "--out", str(tmp_path / "x.json"))
    assert proc.returncode == 2
    assert message in proc.stderr


def _module(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """torch_mlp_amp.py as a module (it imports PyTorch only in main())."""
    monkeypatch.syspath_prepend(str(SCRIPT.parent))
    return importlib.import_module("torch_mlp_amp")


def test_flop_per_step_is_counted_like_the_suites(monkeypatch: pytest.MonkeyPatch) -> None:
    module = _module(monkeypatch)
    assert module.step_flop(4, [10], 3, 120) == IRIS_STEP_FLOP
    assert module.step_flop(64, [512, 512], 10, 4096) == TWO_LAYER_STEP_FLOP
    case = module.parse_case("synthetic:4096:512x2", 20000, 20)
    assert (case.batch, case.hidden, case.epochs, case.hidden_text) == (
        4096,
        [512, 512],
        20,
        "512x2",
    )


class _Loss:
    def item(self) -> float:
        return 0.25


class _Scaler:
    """GradScaler's get_scale() after each step of a scripted run."""

    def __init__(self, scales: list[float]) -> None:
        self.scale, self.after_steps = scales[0], scales[1:]

    def get_scale(self) -> float:
        return self.scale


class _Trainer:
    def __init__(self, scales: list[float]) -> None:
        self.scaler = _Scaler(scales)

    def step(self) -> _Loss:
        self.scaler.scale = self.scaler.after_steps.pop(0)
        return _Loss()


def test_a_step_is_counted_as_skipped_when_the_scale_drops(monkeypatch: pytest.MonkeyPatch) -> None:
    module = _module(monkeypatch)
    # Two overflows (the scale halves), two clean steps, then a growth (not a skip).
    trainer = _Trainer([65536.0, 32768.0, 16384.0, 16384.0, 16384.0, 32768.0])
    result = module.counted_run(trainer, 5)
    assert (result.skipped_steps, result.loss_scale, result.final_loss) == (2, 32768.0, 0.25)
