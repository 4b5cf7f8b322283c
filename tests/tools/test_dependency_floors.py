"""The tools' dependency floors: one list (tools/requirements.txt) that covers every third-party
import, that the package build reads, and that an interpreter below it is told about in one line."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from gpubench_tools import dependency_floors

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "tools" / "gpubench_tools"

# Import names whose distribution is named otherwise.
_DISTRIBUTION_OF = {"yaml": "pyyaml", "PIL": "pillow"}


def _third_party_imports() -> set[str]:
    names: set[str] = set()
    for source in PACKAGE.rglob("*.py"):
        tree = ast.parse(source.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return {
        _DISTRIBUTION_OF.get(n, n).lower()
        for n in names
        if n not in sys.stdlib_module_names and n != "gpubench_tools"
    }


def test_every_third_party_import_has_a_floor() -> None:
    floors = dependency_floors()
    assert {"numpy", "scipy", "matplotlib"} <= floors.keys()
    missing = _third_party_imports() - floors.keys()
    assert not missing, f"imported by gpubench_tools without a floor in requirements.txt: {missing}"


def test_matplotlib_floor_has_the_outside_legend() -> None:
    # The report's figure legends use loc='outside ...', new in matplotlib 3.7.
    major, minor = (int(x) for x in dependency_floors()["matplotlib"].split(".")[:2])
    assert (major, minor) >= (3, 7)


def test_the_package_build_reads_the_same_list() -> None:
    pyproject = (REPO / "tools" / "pyproject.toml").read_text(encoding="utf-8")
    assert 'dynamic = ["dependencies"]' in pyproject
    assert 'dependencies = { file = ["requirements.txt"] }' in pyproject


def test_an_older_matplotlib_is_named_at_import(tmp_path: Path) -> None:
    # A distribution's matplotlib 3.6 (Debian bookworm's python3-matplotlib) found first on the path.
    info = tmp_path / "matplotlib-3.6.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: matplotlib\nVersion: 3.6.3\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO / "tools")]))
    result = subprocess.run(
        [sys.executable, "-m", "gpubench_tools.report", "--help"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert "matplotlib 3.6.3 is older than" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1
