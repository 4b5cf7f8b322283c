"""The numbers the scripts read from the environment (JOBS, REPS, MIN_TIME, PAIRS, the sanitizer
timeouts, gpu-check's --within margins): each checked where it is read, by scripts/common.sh's
require_number, with one line naming the variable, its value and the range, and exit 2, before
anything runs. The variables are found in the scripts' text (a default of digits, `${NAME:-9}`,
or a number handed on to a flag), so a new one without its check fails here."""

from __future__ import annotations

import os
import re
import subprocess

import pytest
from conftest import REPO

SCRIPTS = sorted((REPO / "scripts").glob("*.sh")) + [REPO / "tools" / "gpu-check"]
BAD = ["nan", "-1", "0", "1e308", "fast", "1e-320"]

# How each script is started without running anything long: the check comes first.
COMMANDS = {
    "scripts/ci_gate.sh": ["scripts/ci_gate.sh", "--contender", "/nonexistent.json"],
    "tools/gpu-check": ["tools/gpu-check", "--list-families"],
    "scripts/common.sh": ["bash", "-c", "source scripts/common.sh"],
}


def _checked() -> dict[str, set[str]]:
    return {
        str(path.relative_to(REPO)): set(re.findall(r"require_number (\w+)", path.read_text()))
        for path in SCRIPTS
    }


def test_every_numeric_variable_of_a_script_is_checked() -> None:
    checked = _checked()
    everywhere = checked["scripts/common.sh"]  # sourced by the others
    for path in SCRIPTS:
        text = path.read_text()
        numeric = set(re.findall(r"\$\{(\w+):-[0-9]", text))
        numeric |= set(
            re.findall(
                r'--(?:pairs|max-pairs|max-change|benchmark_repetitions)[ =]"?\$\{?(\w+)', text
            )
        )
        name = str(path.relative_to(REPO))
        missing = numeric - checked[name] - everywhere
        assert not missing, f"{name} reads {sorted(missing)} as numbers without require_number"


CASES = [
    (script, variable, value)
    for script, variables in (
        ("scripts/common.sh", ["JOBS"]),
        (
            "scripts/ci_gate.sh",
            ["REPS", "MIN_TIME", "PAIRS", "MAX_PAIRS", "INSTRUCTIONS_MAX_CHANGE"],
        ),
        (
            "tools/gpu-check",
            ["SANITIZER_TIMEOUT", "QUICK_SANITIZER_TIMEOUT", "WITHIN_MIN_LEFT", "WITHIN_SPARE"],
        ),
    )
    for variable in variables
    for value in BAD
]


@pytest.mark.parametrize("script, variable, value", CASES)
def test_a_bad_value_is_one_line_naming_it_and_exit_2(
    script: str, variable: str, value: str
) -> None:
    run = subprocess.run(
        COMMANDS[script],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, variable: value},
    )
    assert run.returncode == 2, run.stdout + run.stderr
    lines = run.stderr.strip().splitlines()
    assert lines[-1].startswith(f"gpubench: {variable}='{value}' is not "), run.stderr
    assert len(lines) == 1, run.stderr


def test_a_good_value_passes() -> None:
    run = subprocess.run(
        ["bash", "-c", "source scripts/common.sh && echo $JOBS"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "JOBS": "3"},
    )
    assert run.returncode == 0 and run.stdout.strip() == "3", run.stderr
