"""A training workload has one home: kernels/<W>/, its fixture files benchmarks/<W>_* and its
own tools.

Outside them the generic layers (C++ and tools alike) speak of "training workloads" and "a
trainer", never of one by name, so adding a workload is a folder and a declaration. The counting
rule: a file *names* workload W when `grep -i W` matches anywhere in it (code or
comment). Counted are the repository's files that are not tests (tests/), not docs (*.md, docs/),
not data or results (reports/, *.json, *.csv, *.html, *.svg, *.png), and not W's own homes:
kernels/W/, benchmarks/W_*, its PyTorch references (tools/reference/*W*; torch_iris.py for the
MLP) and, for the MLP, the advisor (tools/gpubench_tools/advise/: its cost model is the MLP
training step's, docs/layout.md). The files that still name a workload are listed in
NAMING_ALLOWED with the reason each has to; the list only shrinks, and holds 4 files at most per
workload.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CPP_SUFFIXES = {".cpp", ".hpp", ".cu", ".cuh", ".h"}
NOT_COUNTED_FOLDERS = ("tests/", "docs/", "reports/")
NOT_COUNTED_SUFFIXES = {".md", ".json", ".csv", ".html", ".svg", ".png"}
# A workload's homes beyond kernels/<W>/, benchmarks/<W>_* and tools/reference/*<W>*, by path
# prefix: the PyTorch reference whose name does not say the workload, and the MLP's advisor.
OTHER_HOMES = {"mlp": ("tools/reference/torch_iris.py", "tools/gpubench_tools/advise/")}

# Every file outside a training workload's homes that names it, and why it has to. A file that names a workload and is not here fails the test; an entry whose file no
# longer names it fails too, so the list follows the code down.
NAMING_ALLOWED: dict[str, dict[str, str]] = {
    "cnn": {
        "kernels/CMakeLists.txt": "add_subdirectory(cnn): its kernel folder in the build",
        "benchmarks/CMakeLists.txt": "its fixture sources and its place in "
        "GPUBENCH_TRAINING_WORKLOADS (the table of declarations is generated from it)",
        "tools/gpubench_tools/report/topics.py": "its topic: the tools' declaration of its rows",
    },
    "mlp": {
        "kernels/CMakeLists.txt": "add_subdirectory(mlp): its kernel folder in the build",
        "benchmarks/CMakeLists.txt": "its fixture sources and its place in "
        "GPUBENCH_TRAINING_WORKLOADS (the table of declarations is generated from it)",
        "benchmarks/sweep.cpp": "the matmul rows' shape label `mlp_layer`, part of their names "
        "and labels (the names contract keeps it)",
        "tools/gpubench_tools/report/topics.py": "its topics: the tools' declaration of its rows",
    },
}


def repository_files() -> list[str]:
    """Tracked files and new ones git does not ignore, relative to the repository root."""
    listing = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split("\n")
    return sorted({path for path in listing if path and (REPO / path).is_file()})


def training_workloads() -> list[str]:
    """The folders of kernels/ that have fixture files benchmarks/<W>_* (gemm's are matmul_*)."""
    kernels = sorted(path.name for path in (REPO / "kernels").iterdir() if path.is_dir())
    return [name for name in kernels if any((REPO / "benchmarks").glob(f"{name}_*"))]


def is_home(path: str, workload: str) -> bool:
    return (
        path.startswith(f"kernels/{workload}/")
        or path.startswith(f"benchmarks/{workload}_")
        or (path.startswith("tools/reference/") and workload in Path(path).name)
        or path.startswith(OTHER_HOMES.get(workload, ()))
    )


def files_naming(workload: str, files: list[str]) -> set[str]:
    """The counted files (see the module's docstring) in which `workload` occurs, any case."""
    pattern = re.compile(re.escape(workload), re.IGNORECASE)
    found = set()
    for path in files:
        if path.startswith(NOT_COUNTED_FOLDERS) or Path(path).suffix in NOT_COUNTED_SUFFIXES:
            continue
        if is_home(path, workload):
            continue
        if pattern.search((REPO / path).read_text(encoding="utf-8", errors="replace")):
            found.add(path)
    return found


def test_the_training_workloads_are_found() -> None:
    # Guards the scans below: an empty list would make every check pass.
    assert {"cnn", "mlp"} <= set(training_workloads()), training_workloads()
    assert set(NAMING_ALLOWED) == set(training_workloads()), (
        "NAMING_ALLOWED needs one entry per training workload (kernels/<W>/ with a "
        f"benchmarks/<W>_* fixture): {training_workloads()}"
    )


def test_harness_includes_no_workload_header() -> None:
    sources = [
        path for path in sorted((REPO / "harness").rglob("*")) if path.suffix in CPP_SUFFIXES
    ]
    assert sources, "no C++ files under harness/: the scan is broken"
    include = re.compile(r'^\s*#\s*include\s+"(kernels/[^"]+)"', re.MULTILINE)
    wrong = [
        f"{path.relative_to(REPO)} includes {header}"
        for path in sources
        for header in include.findall(path.read_text(encoding="utf-8"))
        if not header.startswith("kernels/common/")
    ]
    assert not wrong, "harness/ is generic; it includes only kernels/common/:\n" + "\n".join(wrong)


@pytest.mark.parametrize("workload", sorted(NAMING_ALLOWED))
def test_a_training_workload_is_named_only_where_it_must_be(workload: str) -> None:
    files = repository_files()
    assert len(files) > 100, "the repository listing is truncated: the scan is broken"
    naming = files_naming(workload, files)
    allowed = NAMING_ALLOWED[workload]
    unexpected = sorted(naming - set(allowed))
    assert not unexpected, (
        f"{len(unexpected)} file(s) outside {workload}'s homes name it (generic code says "
        "'a training workload' or 'a trainer', or the text moves to kernels/"
        f"{workload}/ or benchmarks/{workload}_*):\n" + "\n".join(unexpected)
    )
    stale = sorted(set(allowed) - naming)
    assert not stale, f"these no longer name {workload}; drop them from NAMING_ALLOWED: {stale}"
    assert len(allowed) <= 4, f"{workload} is named in {len(allowed)} files: the goal is 4 at most"


def test_the_whole_repository_is_counted() -> None:
    # Guards the scan: tools/ counts like the C++ (gpu-check and the report are generic), and a
    # workload's own tools are homes only where named above.
    files = repository_files()
    assert "tools/gpu-check" in files and "tools/gpubench_tools/report/build.py" in files
    assert not is_home("tools/gpu-check", "mlp") and not is_home("tools/gpu-check", "cnn")
    assert is_home("tools/gpubench_tools/advise/model.py", "mlp")
    assert not is_home("tools/gpubench_tools/advise/model.py", "cnn")
    assert is_home("tools/reference/torch_mlp_amp.py", "mlp")
