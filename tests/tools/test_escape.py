"""Escaping by output context: text from a file is data in Markdown and HTML, never markup."""

from __future__ import annotations

import pytest

from gpubench_tools.escape import html_text, md_code, md_text

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
