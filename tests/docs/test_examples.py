"""The examples of the public API (examples/*/) stay what docs/your-own-workload.md promises: each
a separate CMake project that uses the installed package only, with at most 40 lines of user code
(the declaration plus its CPU and GPU functions: every line that is not blank, a comment or an
#include), and the page's SAXPY is the example's file, word for word. scripts/check-examples.sh
builds and runs them against an installed suite."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(path for path in (REPO / "examples").iterdir() if path.is_dir())


def user_code_lines(source: str) -> list[str]:
    return [
        line
        for line in source.splitlines()
        if line.strip() and not line.strip().startswith(("//", "#include"))
    ]


def test_there_are_the_three_examples_the_page_names() -> None:
    assert {path.name for path in EXAMPLES} >= {"saxpy", "softmax", "polynomial"}


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda path: path.name)
def test_example_is_a_project_of_its_own_with_at_most_40_lines_of_user_code(
    example: Path,
) -> None:
    cmake = (example / "CMakeLists.txt").read_text(encoding="utf-8")
    assert re.search(r"^find_package\(gpubench REQUIRED\)", cmake, re.M), cmake
    assert "gpubench::gpubench" in cmake and "gpubench::main" in cmake
    assert "add_subdirectory" not in cmake and "../" not in cmake
    sources = sorted(example.glob("*.cu")) + sorted(example.glob("*.cpp"))
    assert sources, f"{example} has no source"
    lines = [line for path in sources for line in user_code_lines(path.read_text("utf-8"))]
    assert "GPUBENCH_WORKLOAD(" + example.name + ")" in "\n".join(lines)
    assert len(lines) <= 40, f"{example.name}: {len(lines)} lines of user code"


def test_the_page_shows_the_saxpy_example_as_it_is() -> None:
    page = (REPO / "docs" / "your-own-workload.md").read_text(encoding="utf-8")
    source = (REPO / "examples" / "saxpy" / "saxpy.cu").read_text(encoding="utf-8")
    shown = source[source.index("#include <gpubench/workload.hpp>") :]
    assert shown in page
