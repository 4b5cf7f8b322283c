"""The PyTorch references' numeric options (tools/reference/reference_options.py): a value at or
beyond its extremes is refused with one line naming the option, the value as given and the range,
and exit 2, before PyTorch is imported; no option takes a bare int or float.

The options are found by catching each script's parser as its main() parses, so a new option is
covered the day it is added. The scripts run as a user runs them, in a subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, caught_parser

REFERENCE = REPO / "tools" / "reference"
SCRIPTS = sorted(p.name for p in REFERENCE.glob("*.py") if "\ndef main(" in p.read_text())
NUMERIC_TYPES = ("number", "integer", "list of integers")
EXTREMES = ["0", "-1", "1e-320", "1e308", "nan", "inf", "fast", "", "99999999999999999999"]


def _options() -> list[tuple[str, str]]:
    found = []
    for script in SCRIPTS:
        for action in caught_parser(REFERENCE / script, imports_beside=True)._actions:
            if action.type in (int, float):
                pytest.fail(f"{script} {action.option_strings}: bare {action.type}")
            if getattr(action.type, "__name__", "") in NUMERIC_TYPES:
                found.append((script, action.option_strings[0]))
    return found


OPTIONS = _options()


def test_the_walk_finds_the_numeric_options() -> None:
    for expected in [
        ("torch_cnn.py", "--seconds"),
        ("torch_cnn.py", "--cuda-batches"),
        ("torch_iris.py", "--epochs"),
        ("torch_matmul.py", "--iterations"),
        ("torch_mlp_amp.py", "--synthetic-epochs"),
        ("cnn_cpu_against_torch.py", "--rounds"),
    ]:
        assert expected in OPTIONS


@pytest.mark.parametrize("script, flag", OPTIONS, ids=[f"{s} {f}" for s, f in OPTIONS])
def test_an_extreme_value_is_one_line_and_exit_2(script: str, flag: str, tmp_path: Path) -> None:
    for value in EXTREMES:
        run = subprocess.run(
            [sys.executable, str(REFERENCE / script), "--out", str(tmp_path / "o.json")]
            + [f"{flag}={value}"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=REPO,
        )
        assert run.returncode == 2, f"{script} {flag}={value!r}: exit {run.returncode}"
        lines = run.stderr.strip().splitlines()
        assert len(lines) == 1, run.stderr
        assert flag in lines[0] and f"'{value}'" in lines[0] and " is not " in lines[0], lines[0]
