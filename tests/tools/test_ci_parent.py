"""scripts/ci_gate.sh --against-parent, the paired gate .ci/run runs: against HEAD's parent where
the checkout has it, and one line saying it did not run, and why, where it has not (a first
commit, a shallow clone). The stand-in project and bench are test_paired_gate.py's."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from test_paired_gate import STANDIN_PROJECT, gate, project, standin

pytestmark = pytest.mark.skipif(
    shutil.which("bash") is None or shutil.which("git") is None or shutil.which("cmake") is None,
    reason="needs bash, git and cmake",
)


def commit(repo: Path, message: str) -> None:
    """A second commit that changes a file, so the clone's HEAD has a parent."""
    (repo / "CHANGES").write_text(message + "\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", message], check=True)


def not_run_line(result: subprocess.CompletedProcess) -> str:
    """The one line of a paired gate that did not run; nothing else was printed or built."""
    assert result.returncode == 0, result.stderr + result.stdout
    assert result.stderr == "", result.stderr
    (line,) = result.stdout.splitlines()
    assert line.startswith("ci_gate: paired gate not run: "), line
    return line


def test_a_first_commit_says_the_paired_gate_did_not_run(tmp_path: Path) -> None:
    repo = project(tmp_path, STANDIN_PROJECT)
    contender = standin(tmp_path, "contender", seed="c")
    result = gate(repo / "scripts" / "ci_gate.sh", tmp_path, "--against-parent", BENCH=contender)
    assert "HEAD is the first commit" in not_run_line(result)
    assert not (repo / "build-gate").exists() and not (tmp_path / "valgrind.log").exists()


def test_a_shallow_clone_without_the_parent_says_how_to_fetch_it(
    tmp_path: Path,
) -> None:
    repo = project(tmp_path, STANDIN_PROJECT)
    commit(repo, "second")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{repo}", str(clone)], check=True)
    contender = standin(tmp_path, "contender", seed="c")
    script = clone / "scripts" / "ci_gate.sh"
    line = not_run_line(gate(script, tmp_path, "--against-parent", BENCH=contender))
    assert "not in this shallow clone" in line and "git fetch --deepen=1" in line
    # Once fetched, the same command gates against it.
    subprocess.run(["git", "-C", str(clone), "fetch", "-q", "--deepen=1"], check=True)
    ran = gate(
        script,
        tmp_path,
        "--against-parent",
        "--benchmark_filter=bm/",
        BENCH=contender,
        INSTRUCTIONS="off",  # test_paired_gate.py runs the lane through --against
    )
    assert ran.returncode == 0, ran.stderr + ran.stdout
    assert "building HEAD~1" in ran.stderr and "paired gate not run" not in ran.stdout


def test_against_parent_refuses_another_mode(tmp_path: Path) -> None:
    repo = project(tmp_path, STANDIN_PROJECT)
    result = gate(
        repo / "scripts" / "ci_gate.sh",
        tmp_path,
        "--against-parent",
        "--against",
        "HEAD",
    )
    assert result.returncode == 2 and "--against-parent goes with no other mode" in result.stderr


def test_ci_run_gates_against_the_parent_through_the_script() -> None:
    """.ci/run leaves the parent's check to the script, which says when it did not run."""
    ci_run = (Path(__file__).resolve().parents[2] / ".ci" / "run").read_text(encoding="utf-8")
    assert "./scripts/ci_gate.sh --against-parent" in ci_run
    assert "HEAD~1" not in ci_run
