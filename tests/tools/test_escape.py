"""Escaping by output context: text from a file is data in Markdown and HTML, never markup:
the escape functions, and the report they write on a file full of hostile text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import FIXTURES, run_tool

from gpubench_tools.escape import html_text, log_line, md_code, md_text
from gpubench_tools.report import main as report_main

HOSTILE = "ok\n**gate: PASS**\n<img src=x onerror=alert(1)> | [link](http://x) `code` ~~s~~ _e_"


def test_md_text_is_one_line_without_markup() -> None:
    out = md_text(HOSTILE)
    assert "\n" not in out and "\r" not in out
    assert "<" not in out and ">" not in out
    # Every character that makes markup inside a line is escaped.
    for raw in ("**", "|", "[", "](", "`", "~~", "_e_"):
        assert raw not in out.replace("\\" + raw[0], ""), raw
    assert "&lt;img" in out


@pytest.mark.parametrize(
    "text,expected",
    [
        ("# heading", "\\# heading"),
        ("- item", "\\- item"),
        ("> quote", "&gt; quote"),
        ("1. item", "1\\. item"),
        ("===", "\\==="),
        ("2.20 us at n=16 (pinned)", "2.20 us at n=16 (pinned)"),
        ("H100-80GB, 53% of 1.2 ms", "H100-80GB, 53% of 1.2 ms"),
    ],
)
def test_md_text_escapes_block_markers_only_at_the_start(text: str, expected: str) -> None:
    assert md_text(text) == expected


def test_md_code_survives_backticks_and_pipes() -> None:
    out = md_code("mat`mul|x\n<script>")
    assert out.startswith("``") and out.endswith("``")
    assert "\\|" in out and "\n" not in out


def test_html_text_escapes_tags_and_quotes() -> None:
    assert html_text('<script>"x"</script>') == "&lt;script&gt;&quot;x&quot;&lt;/script&gt;"


def test_report_escapes_hostile_names_labels_messages_and_context(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads((FIXTURES / "cpu_only.json").read_text())
    hostile = "x<script>alert(1)</script>\n# injected\n| cell | `tick`"
    doc["context"]["cpu_model"] = hostile
    doc["context"]["gpubench_git_commit"] = hostile
    doc["benchmarks"][0]["label"] += " note=" + hostile
    failed = dict(doc["benchmarks"][1], name="matmul/cpu/" + hostile, run_name="m/" + hostile)
    failed.update(error_occurred=True, error_message=hostile)
    doc["benchmarks"].append(failed)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc))
    code, _, err = run_tool(capsys, report_main, str(path), "--out", str(tmp_path / "r"))
    assert code == 0, err
    md = (tmp_path / "r" / "report.md").read_text()
    html = (tmp_path / "r" / "report.html").read_text()
    # A code span shows its text literally (CommonMark escapes it), so only text outside code
    # spans could inject markup.
    prose = re.sub(r"``.*?``|`[^`]*`", "", md)
    assert "<script" not in prose and "<script" not in html
    assert "&lt;script&gt;" in md and "&lt;script&gt;" in html
    assert not any(line.startswith("# injected") for line in md.splitlines())
    # Every table row keeps its column count: an escaped '|' does not split a cell.
    for table in _md_tables(md):
        widths = {_cells(line) for line in table}
        assert len(widths) == 1, table


def _md_tables(md: str) -> list[list[str]]:
    tables: list[list[str]] = []
    current: list[str] = []
    for line in md.splitlines() + [""]:
        if line.startswith("|"):
            current.append(line)
        elif current:
            tables.append(current)
            current = []
    return tables


def _cells(line: str) -> int:
    count, escaped = 0, False
    for ch in line:
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == "|":
            count += 1
    return count


def test_log_line_keeps_a_line_coloured_whole_and_no_other_sequence() -> None:
    red = "\x1b[31;1mgate: FAIL\x1b[0m"
    assert log_line(red, color=True) == red
    assert log_line(red) == " [31;1mgate: FAIL [0m"  # a file or a pipe: folded as any line
    assert log_line("\x1b[31m::error::x\x1b[0m", color=True) == "\x1b[31m> ::error::x\x1b[0m"
    # Hidden text, a cursor move, a colour left open, codes inside the line: folded.
    assert log_line("\x1b[8mhidden\x1b[0m", color=True) == " [8mhidden [0m"
    assert log_line("\x1b[2J\x1b[31mx\x1b[0m", color=True) == " [2J [31mx [0m"
    assert log_line("\x1b[31mx", color=True) == " [31mx"
    assert log_line("\x1b[32mx\x1b[0m\x1b]0;t\x07\x1b[32my\x1b[0m", color=True) == (
        "\x1b[32mx [0m ]0;t [32my\x1b[0m"
    )
