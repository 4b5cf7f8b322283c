"""A workload no tool names (one declared through the public API, docs/your-own-workload.md) gets
its report section from its rows alone: the answer's row, the speedup curve and crossover, the
breakdown with its sentences by the workload's own axis, and the kernel-only utilisation chart.
The rows are tests/tools/own_workload_rows.py's (hand-made, not a measurement): a
SAXPY-like workload whose axis is the counter `n`, and one whose axes are `axis:rows` and
`axis:cols` counters."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from own_workload_rows import write_own_workload_json

from gpubench_tools.report.build import build_document
from gpubench_tools.report.context import discovered_topics
from gpubench_tools.report.topics import TOPICS
from gpubench_tools.table import load_table, summarize

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def own_workload(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_own_workload_json(tmp_path_factory.mktemp("own_workload") / "own.json")


def _summary(*paths: Path):
    return summarize(load_table([str(p) for p in paths]).rows)


def test_each_undeclared_workload_is_a_topic_by_its_rows(own_workload: Path) -> None:
    saxpy, stencil = discovered_topics(_summary(own_workload), TOPICS)
    assert (saxpy.id, saxpy.x, saxpy.keys, saxpy.series) == ("saxpy", "n", ("n",), None)
    assert saxpy.gpu == {
        "workload": "saxpy",
        "backend": "gpu",
        "variant": ("cuda_e2e",),
        "host": "pinned",
    }
    assert saxpy.parts is not None and saxpy.parts.rows == {"workload": "saxpy", "host": "pinned"}
    # rows varies, cols does not: the curve runs along rows, one line.
    assert (stencil.x, stencil.x_name, stencil.series) == ("axis:rows", "rows", None)
    assert set(stencil.keys) == {"axis:rows", "axis:cols"}


def test_declared_workloads_are_not_discovered_again() -> None:
    committed = sorted((REPO / "reports" / "baselines").glob("h100-80gb-hbm3-*.json"))
    assert committed
    assert discovered_topics(_summary(*committed), TOPICS) == ()


def test_the_report_answers_for_the_undeclared_workloads(
    own_workload: Path, tmp_path: Path
) -> None:
    document = build_document(load_table([str(own_workload)]), tmp_path)
    answer = {row["anchor"]: row for row in document["answer"]}
    assert set(answer) == {"saxpy", "stencil"}
    text = " ".join(str(v) for v in answer["saxpy"].values())
    assert "n ≈ 190k" in text and "n ≥ 262k" in text
    assert "rows ≈ 250" in " ".join(str(v) for v in answer["stencil"].values())
    for chart in ("speedup", "time", "utilisation"):
        for workload in ("saxpy", "stencil"):
            assert (tmp_path / f"{chart}_{workload}.svg").is_file(), (chart, workload)
    breakdown = next(s for s in document["sections"] if s.get("id") == "breakdown")
    said = " ".join(map(str, breakdown.get("paragraphs", [])))
    assert "transfer is the largest part for n 65.5k–67.1M" in said
    assert "rows 256–65.5k" in said and "axis:" not in said


def test_no_tool_names_a_workload_of_the_public_api() -> None:
    # Their names as a value (quoted): "softmax" the word is the MLP's loss, in the advisor.
    names = re.compile(r"[\"'](saxpy|softmax|polynomial|stencil)[\"']")
    hits = [
        f"{path.relative_to(REPO)}:{number}"
        for path in sorted((REPO / "tools" / "gpubench_tools").rglob("*"))
        if path.suffix in {".py", ".j2", ".json"}
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if names.search(line)
    ]
    assert hits == []
