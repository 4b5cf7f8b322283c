"""Hand-made inputs that once broke a tool (a zero, NaN or 1e308 time, 1e30 iterations, a
truncated file, 18 rows skipped for one reason), and the in-process call the tests that feed
them to a tool share."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest
from conftest import FIXTURES, gb_row, write_bench_json

OK, REGRESSION, UNUSABLE = 0, 1, 2
CPU_ONLY = FIXTURES / "cpu_only.json"
BF16_REASON = (
    "not supported on this machine: no native bf16 products: the loaded OpenBLAS (OpenBLAS "
    "0.3.21 NO_LAPACKE DYNAMIC_ARCH core=Cooperlake) exports no cblas_sbgemm: it was built "
    "without BUILD_BFLOAT16"
)


def call_tool(
    capsys: pytest.CaptureFixture[str], main: Callable[[list[str]], int], *args: str
) -> tuple[int, str, str]:
    """A tool's main() in-process: its exit status, stdout and stderr."""
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def cpu_doc() -> dict[str, Any]:
    return json.loads(CPU_ONLY.read_text())


def write(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(json.dumps(doc))  # NaN and Infinity as Python's json writes them
    return path


def with_value(tmp_path: Path, index: int, key: str, value: Any) -> Path:
    """The CPU-only fixture with row `index`'s `key` set to `value`."""
    doc = cpu_doc()
    doc["benchmarks"][index][key] = value
    return write(tmp_path / "run.json", doc)


def bf16_run(tmp_path: Path) -> Path:
    """A CPU-only run whose 18 bf16 MLP rows all skip for one long reason, like bench on a CPU
    whose OpenBLAS has no cblas_sbgemm."""
    rows = [gb_row("matmul/cpu/openblas/dtype:fp32/m:64/n:64/k:64/threads:1", 3e-5)]
    rows[0].update(flop=2 * 64**3, m=64, n=64, k=64, threads=1.0)
    rows[0]["label"] = "workload=matmul backend=cpu dtype=fp32 shape=square"
    for i in range(18):
        name = f"mlp/cpu/openblas/data:synthetic/batch:{2 ** (i + 1)}/hidden:64/precision:bf16"
        rows.append(gb_row(name, 0.0, error=BF16_REASON))
    return write_bench_json(tmp_path / "cpu.json", rows, {"cpu_model": "AMD EPYC"})
