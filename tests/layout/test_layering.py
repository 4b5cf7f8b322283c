"""The layering rule of the source tree: each folder includes only from the folders below it.

kernels/ holds the compute and may use OpenBLAS, CUDA and cuBLAS only; inside it each workload folder
(gemm/, mlp/, cnn/, probes/) uses only itself and common/, so a workload can be read, moved or
removed on its own. harness/ (measurement) may use kernels/; benchmarks/ may use both, and
implements the public API, include/gpubench/, which itself includes nothing of the project: a
program built against the installed package sees only that header. The examples are such programs.
The Python tools read JSON and never import or run the C++.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CPP_SUFFIXES = {".cpp", ".hpp", ".cu", ".cuh", ".h"}
PROJECT_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"/]+)/', re.MULTILINE)

ALLOWED = {
    "kernels": {"kernels"},
    "harness": {"harness", "kernels"},
    "benchmarks": {"benchmarks", "harness", "kernels", "gpubench"},
}


PROJECT_INCLUDE_PATH = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def project_includes(folder: str) -> list[tuple[Path, str]]:
    """Every (file, top-level folder) pair for the project headers that files under `folder` include."""
    found = []
    for path in sorted((REPO / folder).rglob("*")):
        if path.suffix in CPP_SUFFIXES:
            for match in PROJECT_INCLUDE.finditer(path.read_text(encoding="utf-8")):
                found.append((path.relative_to(REPO), match.group(1)))
    return found


def test_kernel_workloads_include_only_themselves_and_common() -> None:
    kernels = REPO / "kernels"
    workloads = sorted(path.name for path in kernels.iterdir() if path.is_dir())
    assert {"common", "gemm", "mlp"} <= set(workloads), f"kernels/ holds {workloads}"
    wrong = []
    for workload in workloads:
        allowed = {"kernels/common/", f"kernels/{workload}/"}
        for path in sorted((kernels / workload).rglob("*")):
            if path.suffix not in CPP_SUFFIXES:
                continue
            for match in PROJECT_INCLUDE_PATH.finditer(path.read_text(encoding="utf-8")):
                header = match.group(1)
                if header.startswith("kernels/") and not header.startswith(tuple(allowed)):
                    wrong.append(f"{path.relative_to(REPO)} includes {header}")
    assert not wrong, "a kernel workload reaches into another:\n" + "\n".join(wrong)


def test_kernel_workloads_do_no_timing() -> None:
    # Timing lives in harness/ (one timer per policy); a trainer names its operations through
    # kernels/common/step_observer.hpp and leaves the clocks to the caller.
    clocks = re.compile(r"seconds_between|cudaEventElapsedTime|std::chrono|benchmark::")
    wrong = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for folder in sorted((REPO / "kernels").iterdir())
        if folder.is_dir() and folder.name != "common"
        for path in sorted(folder.rglob("*"))
        if path.suffix in CPP_SUFFIXES
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if clocks.search(line)
    ]
    assert not wrong, "timing inside kernels/:\n" + "\n".join(wrong)


def test_harness_holds_no_workload_compute() -> None:
    # The trainers (buffers, graphs, cuBLASLt plans) are compute and live beside their kernels.
    trainers = sorted(path.name for path in (REPO / "harness").glob("*trainer*"))
    assert not trainers, f"trainers belong in kernels/<workload>/: {trainers}"


@pytest.mark.parametrize("folder", sorted(ALLOWED))
def test_cpp_layers_include_only_from_below(folder: str) -> None:
    includes = project_includes(folder)
    assert includes, f"no project includes found under {folder}/: the scan is broken"
    wrong = [f"{path} includes {top}/" for path, top in includes if top not in ALLOWED[folder]]
    assert not wrong, "layering broken:\n" + "\n".join(wrong)


def test_python_tools_never_touch_the_cpp() -> None:
    package = REPO / "tools" / "gpubench_tools"
    sources = sorted(package.rglob("*.py"))
    assert sources, "tools/gpubench_tools has no Python files: the scan is broken"
    forbidden = re.compile(r"\bsubprocess\b|\bctypes\b|\bos\.system\b|benchmarks/bench\b")
    # The exceptions: the drivers of the paired gate's two lanes run the two bench executables
    # they are given, interleaved or under valgrind (docs/regression-gate.md, "Paired gate",
    # "Instruction lane"); they still link nothing and name no binary.
    runs_benches = {
        package / "compare" / "interleave.py": re.compile(r"\bsubprocess\b"),
        package / "instructions" / "lane.py": re.compile(r"\bsubprocess\b"),
    }
    wrong = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in sources
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if forbidden.search(runs_benches[path].sub("", line) if path in runs_benches else line)
    ]
    assert not wrong, "the tools must read JSON only:\n" + "\n".join(wrong)


def test_public_api_and_examples_use_nothing_of_the_source_tree() -> None:
    # The installed package holds include/gpubench/ and libraries only: a quoted include of the
    # project (or an include of harness/, kernels/, benchmarks/ in any form) would not be there.
    inside = re.compile(
        r'^\s*#\s*include\s+(?:"[^"]*"|<(?:harness|kernels|benchmarks)/[^>]*>)', re.M
    )
    files = [
        path
        for folder in ("include", "examples")
        for path in sorted((REPO / folder).rglob("*"))
        if path.suffix in CPP_SUFFIXES
    ]
    assert len(files) >= 4, f"the scan found {files}"
    wrong = [
        f"{path.relative_to(REPO)}: {match.group(0).strip()}"
        for path in files
        for match in inside.finditer(path.read_text(encoding="utf-8"))
    ]
    assert not wrong, "the public API or an example reaches into the source tree:\n" + "\n".join(
        wrong
    )
