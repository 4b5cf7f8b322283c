"""tools/gpu-check's count of a sweep's rows: failed and skipped ("does not fit ...") apart, with
the rule of benchjson.SKIP_PREFIXES. Runs gpu-check with a stand-in nvidia-smi and bench, so no
GPU is needed."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, gb_row

from gpubench_tools.benchjson import SKIP_PREFIXES

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


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


def test_gpu_check_counts_skipped_rows_apart_from_failed_ones(tmp_path: Path) -> None:
    fake_bin = tmp_path / "bin"
    build = tmp_path / "build"
    (build / "benchmarks").mkdir(parents=True)
    fake_bin.mkdir()
    _executable(
        fake_bin / "nvidia-smi",
        '#!/usr/bin/env bash\n[[ $* == *--query-gpu=name* ]] && echo "NVIDIA Test GPU" || true\n',
    )
    rows = tmp_path / "rows.json"
    rows.write_text(
        json.dumps({"context": {"gpu": "NVIDIA Test GPU"}, "benchmarks": _sweep_rows()})
    )
    # Writes the prepared rows wherever --benchmark_out points, like bench would.
    _executable(
        build / "benchmarks" / "bench",
        "#!/usr/bin/env bash\n"
        'for a in "$@"; do [[ $a == --benchmark_out=* ]] && '
        f'cp "{rows}" "${{a#--benchmark_out=}}"; done\nexit 0\n',
    )
    out = tmp_path / "out"
    env = dict(
        os.environ,
        PATH=f"{fake_bin}{os.pathsep}{os.environ['PATH']}",
        BUILD_DIR=str(build),
        PYTHON=sys.executable,
    )
    proc = subprocess.run(
        ["bash", str(REPO / "tools" / "gpu-check"), "--only", "mlp", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = (out / "summary.txt").read_text()
    line = next(line for line in summary.splitlines() if "bench mlp:" in line)
    assert line.endswith(
        "1 row failed, 2 skipped (does not fit on chip: 1, does not fit in device memory: 1)"
    ), line


def test_gpu_check_uses_the_python_rule() -> None:
    """The prefixes live in one place: gpu-check asks benchjson instead of grepping itself."""
    script = (REPO / "tools" / "gpu-check").read_text()
    assert "-m gpubench_tools.benchjson" in script and "--errors" in script
    assert "error_occurred" not in script
    assert SKIP_PREFIXES == (
        "does not fit on chip",
        "does not fit in device memory",
        "not supported on this machine",
    )
