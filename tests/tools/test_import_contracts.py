"""The tools' layers as contracts: tools/pyproject.toml's [tool.importlinter] says which module may
import which (readers < computations < rendering < command lines; the reader holds no words and
no command line; no import cycle between the modules and subpackages of one package), and
import-linter checks them on the import graph, direct imports and chains alike.

Each contract is a test of its own, so a broken one names itself and the imports that break it;
and the contracts are shown to fail on a copy of the package with planted imports."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / "tools"
CONTRACTS = ("reader", "layers", "acyclic")
# lint-imports beside this interpreter (a virtual environment's bin/), else on PATH.
LINT = shutil.which(
    "lint-imports",
    path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
)


def lint(tools: Path, *contracts: str) -> subprocess.CompletedProcess[str]:
    """lint-imports over the package under `tools`, with the contracts of its pyproject.toml
    (all of them, or those named)."""
    assert LINT is not None, "lint-imports is not installed (tools/requirements-dev.txt)"
    args = [LINT, "--no-cache", "--config", str(tools / "pyproject.toml")]
    args += [f"--contract={contract}" for contract in contracts]
    env = dict(os.environ, PYTHONPATH=str(tools))
    return subprocess.run(args, cwd=tools, env=env, capture_output=True, text=True, timeout=300)


def broken_imports(result: subprocess.CompletedProcess[str]) -> set[str]:
    """The imports a run names as breaking a contract: 'a.b -> a.c' (layers, forbidden) or
    '.b -> .c' (a cycle's breaker), without their line numbers and counts (and without the colour
    codes some versions write even into a pipe)."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout)
    return {m.group(1) for m in re.finditer(r"^-\s+(\S+ -> \S+)", text, re.MULTILINE)}


def test_the_configuration_declares_each_contract_tested() -> None:
    declared = re.findall(r'^id = "([^"]+)"', (TOOLS / "pyproject.toml").read_text(), re.M)
    assert sorted(declared) == sorted(CONTRACTS)


@pytest.mark.parametrize("contract", CONTRACTS)
def test_the_contract_holds(contract: str) -> None:
    result = lint(TOOLS, contract)
    assert result.returncode == 0, sorted(broken_imports(result)) or result.stdout + result.stderr


def test_planted_imports_break_the_contracts(tmp_path: Path) -> None:
    """A reader that imports words, and a cycle between two subpackages, planted in a copy of the
    package: lint-imports exits 1 and names exactly the planted imports as new."""
    copy = tmp_path / "tools"
    shutil.copytree(TOOLS / "gpubench_tools", copy / "gpubench_tools")
    shutil.copy(TOOLS / "pyproject.toml", copy / "pyproject.toml")
    before = {contract: lint(copy, contract) for contract in CONTRACTS}
    for module, planted in {
        "benchjson.py": "from . import wording",  # the reader words
        "compare/stats.py": "from ..history import check",  # history.ingest imports compare
    }.items():
        path = copy / "gpubench_tools" / module
        path.write_text(path.read_text() + f"\n{planted}  # planted\n")
    after = {contract: lint(copy, contract) for contract in CONTRACTS}

    assert before["reader"].returncode == 0, broken_imports(before["reader"])
    assert after["reader"].returncode == 1
    reader = broken_imports(after["reader"]) - broken_imports(before["reader"])
    assert reader == {"gpubench_tools.benchjson -> gpubench_tools.wording"}
    assert after["layers"].returncode == 1
    layers = broken_imports(after["layers"]) - broken_imports(before["layers"])
    assert "gpubench_tools.benchjson -> gpubench_tools.wording" in layers
    assert after["acyclic"].returncode == 1
    cycle = broken_imports(after["acyclic"]) - broken_imports(before["acyclic"])
    assert cycle & {".compare -> .history", ".history -> .compare"}, after["acyclic"].stdout
