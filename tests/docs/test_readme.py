"""Every shell example in the README runs, or says why it does not.

Each ```sh block of README.md is preceded by a marker comment:

- ``<!-- doctest: run [creates=PATH,PATH] -->``: run here, in order, every block in one scratch
  folder that looks like a checkout after the quick start (``build``, ``tools``, ``scripts``,
  ``data``, ``reports/baselines`` and ``.venv`` are links to the real ones) and holds nothing a
  user would not have: no ``results/``, which the commands themselves must create. Later blocks
  read what earlier ones wrote. A block runs under ``bash -eu``:
  every line must succeed (no pipefail, as in an interactive shell, so ``| head`` is fine); it must
  write no traceback and create the files named.
- ``<!-- doctest: gpu (reason) -->``: needs a GPU; listed and skipped with the reason.
- ``<!-- doctest: ci (reason) -->``: run by ``.ci/run`` itself (the quick start in a fresh clone,
  and the test command, which cannot run itself).

A block without a marker fails the test, so a new example is run or explicitly excused.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"

_BLOCK = re.compile(
    r"(?:<!--\s*doctest:\s*(?P<marker>[^>]*?)\s*-->\s*\n)?```(?P<lang>[a-z]*)\n(?P<body>.*?)```",
    re.S,
)


@dataclass(frozen=True)
class Example:
    line: int
    kind: str  # run, gpu or ci
    reason: str
    creates: tuple[str, ...]
    body: str


def readme_examples() -> list[Example]:
    text = README.read_text(encoding="utf-8")
    examples = []
    for match in _BLOCK.finditer(text):
        if match.group("lang") not in ("sh", "bash", "console"):
            continue
        line = text.count("\n", 0, match.start("lang")) + 1
        marker = (match.group("marker") or "").strip()
        kind, _, rest = marker.partition(" ")
        creates: tuple[str, ...] = ()
        found = re.search(r"creates=(\S+)", rest)
        if found:
            creates = tuple(found.group(1).split(","))
        examples.append(Example(line, kind, rest.strip(), creates, match.group("body")))
    return examples


EXAMPLES = readme_examples()


def test_every_shell_block_has_a_marker() -> None:
    assert EXAMPLES, "no shell examples found in README.md"
    unmarked = [e.line for e in EXAMPLES if e.kind not in ("run", "gpu", "ci")]
    assert not unmarked, f"README.md shell blocks without a doctest marker at lines {unmarked}"
    excused = [e for e in EXAMPLES if e.kind in ("gpu", "ci")]
    assert all(e.reason for e in excused), "a gpu or ci marker must say why"


def test_the_two_quick_start_commands_are_the_ones_ci_runs() -> None:
    ci_blocks = "".join(e.body for e in EXAMPLES if e.kind == "ci")
    assert "./scripts/quickstart.sh" in ci_blocks and "./scripts/test.sh" in ci_blocks
    ci_run = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^\./scripts/test\.sh$", ci_run, re.M), ".ci/run must call the test command"
    assert re.search(r"^\./scripts/check-fresh-clone\.sh$", ci_run, re.M)
    fresh = (REPO / "scripts" / "check-fresh-clone.sh").read_text(encoding="utf-8")
    assert "./scripts/quickstart.sh" in fresh


@pytest.fixture(scope="module")
def checkout_like(tmp_path_factory: pytest.TempPathFactory) -> Path:
    bench = Path(
        os.environ.get("GPUBENCH_BENCH", REPO / "build" / "benchmarks" / "bench")
    ).resolve()
    if not bench.is_file():
        pytest.fail(f"bench is not built at {bench} (set GPUBENCH_BENCH or run scripts/test.sh)")
    venv = Path(sys.executable).parent.parent
    if not (venv / "bin" / "gpubench-report").exists():
        pytest.fail(
            f"{sys.executable} has no gpubench console scripts beside it: run the tests with the "
            "project's .venv/bin/python after scripts/install-deps.sh"
        )
    root = tmp_path_factory.mktemp("readme")
    (root / "build").symlink_to(bench.parent.parent)
    for name in ("tools", "scripts", "data"):
        (root / name).symlink_to(REPO / name)
    (root / ".venv").symlink_to(venv)
    (root / "reports").mkdir()
    (root / "reports" / "baselines").symlink_to(REPO / "reports" / "baselines")
    return root


RUN = [e for e in EXAMPLES if e.kind == "run"]


@pytest.mark.slow
@pytest.mark.parametrize("example", RUN, ids=[f"README.md:{e.line}" for e in RUN])
def test_readme_example_runs(example: Example, checkout_like: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    result = subprocess.run(
        ["bash", "-eu", "-c", example.body],
        cwd=checkout_like,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    shown = f"README.md:{example.line}\n{example.body}\nstdout:\n{result.stdout[-3000:]}\nstderr:\n{result.stderr[-3000:]}"
    assert result.returncode == 0, shown
    assert "Traceback (most recent call last)" not in result.stderr, shown
    for path in example.creates:
        created = checkout_like / path
        assert created.is_file() and created.stat().st_size > 0, f"{path} not written\n{shown}"


@pytest.mark.parametrize(
    "example",
    [e for e in EXAMPLES if e.kind == "gpu"],
    ids=[f"README.md:{e.line}" for e in EXAMPLES if e.kind == "gpu"],
)
def test_readme_gpu_example(example: Example) -> None:
    pytest.skip(f"needs a GPU: {example.reason}")


def test_readme_links_resolve() -> None:
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if "://" not in t]
    assert local, "the README links into docs/"
    missing = [t for t in local if not (REPO / t).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"
