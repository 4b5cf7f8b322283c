"""Escaping by output context. Benchmark names, labels, error messages and context values come from
files anyone can write; in every output they are data, never markup. Every writer of Markdown or
HTML escapes through these functions and nowhere else.
"""

from __future__ import annotations

import html
import re

__all__ = ["html_line", "html_text", "md_code", "md_text"]

# What can turn text into markup anywhere in a CommonMark / GitHub Markdown line: backslash,
# code spans, emphasis, link and image brackets, table pipes, strikethrough. '<', '>' and '&' become
# entities so no raw HTML survives (GitHub renders a subset of HTML inside Markdown, e.g.
# <img onerror=...> or <details>). Other punctuation ('.', '-', '(', '#') is markup only at the
# start of a line (a heading, a list item, a quote, a rule), so it is escaped only there and
# numbers such as "2.20 us" stay readable in the raw file.
_MD_INLINE = re.compile(r"([\\`*_\[\]|~])")
_MD_LINE_START = re.compile(r"^(\s*)(?:([#>+=-])|(\d+)([.)])(?=\s|$))")


def _one_line(text: object) -> str:
    # A newline would end a table row or start a new block (a fake heading, a fake
    # "**gate: PASS**" line): fold every line break and other control character into a space.
    return re.sub(r"[\x00-\x1f\x7f\u2028\u2029]+", " ", str(text))


def md_text(text: object) -> str:
    """Text for a Markdown paragraph, list item or table cell: one line, no markup, no HTML."""
    line = _one_line(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    line = _MD_INLINE.sub(r"\\\1", line)
    return _MD_LINE_START.sub(
        lambda m: m.group(1) + (f"\\{m.group(2)}" if m.group(2) else f"{m.group(3)}\\{m.group(4)}"),
        line,
    )


def md_code(text: object) -> str:
    """Text shown as inline code (a benchmark name). A code span cannot escape a backtick, so
    the fence is longer than the longest run of backticks inside; '|' is escaped because GitHub
    splits table cells on it even inside code spans; HTML inside a code span is inert."""
    line = _one_line(text).replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", line)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if line.startswith("`") or line.endswith("`") or not line.strip() else ""
    return f"{fence}{pad}{line}{pad}{fence}"


def html_text(text: object) -> str:
    """Text for HTML element content or a quoted attribute value."""
    return html.escape(str(text), quote=True)


def html_line(text: object) -> str:
    """HTML text on one line: for an element inside Markdown (a <summary>), where a line break
    would end the HTML block and start Markdown (a fake heading)."""
    return html_text(_one_line(text))
