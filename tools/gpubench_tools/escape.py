"""Escaping by output context: the one sanitizer per context. Benchmark names, labels, error
messages and context values come from files anyone can write; in every output they are data, never
markup and never a line of their own. Every writer escapes through these functions and nowhere else:

- terminal and CI log: `term_text` (a piece of data) and `log_line` (a whole line, which
  output.write_lines applies to everything a tool prints): one line, no control character (newline, CR,
  ESC, C1 controls, bidirectional overrides), bounded length, and no line that a CI runner reads
  as a command (`::error::...` for GitHub Actions, `##vso[` / `##[` for Azure Pipelines); on a
  terminal that takes colour, a whole line the renderer coloured keeps its colour code and
  nothing else;
- a cell of a terminal table laid out by its caller: `one_line` (one line, not bounded);
- Markdown: `md_text`, `md_code`; HTML: `html_text`, `html_line`;
- file names: `file_name`.

Every piece of data (but `one_line`'s) is cut to a bounded length (MAX_TEXT, or the caller's
limit), saying how much was left out: a 10,000-character benchmark name must not widen every
line, cell or chart.
"""

from __future__ import annotations

import html
import re

# Characters of one piece of text in Markdown or HTML: far above any real name, message or
# sentence (the longest benchmark names are about 90 characters, the report's longest sentence
# about 530), far below what breaks a page.
MAX_TEXT = 2000
# Characters of one piece of input text on a terminal or log line (a name, a message, a path).
MAX_TERM_TEXT = 300
# Line breaks, C0 and C1 control characters (ESC starts terminal sequences, CSI is one C1
# character), Unicode line and paragraph separators, and the bidirectional overrides that make a
# terminal show text in another order than it is.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]+")
# A line a CI runner executes as a command: GitHub Actions reads `::name ...::` after leading
# whitespace, Azure Pipelines `##vso[` and `##[`.
_CI_COMMAND = re.compile(r"^\s*(::|##\[|##vso\[)")
# A whole line in one foreground colour (SGR 30-37, bold or not) and reset at its end: the only
# escape sequence a coloured line keeps. Nothing else (cursor moves, titles, hidden text) passes.
_COLOURED = re.compile(r"\x1b\[(3[0-7](?:;1)?)m(.*)\x1b\[0m")


def bounded(text: object, limit: int = MAX_TEXT) -> str:
    """`text` cut to at most about `limit` characters, saying how many were left out."""
    line = str(text)
    if len(line) <= limit:
        return line
    keep = max(1, limit - 30)
    return f"{line[:keep]}... ({len(line) - keep} more characters)"


def term_text(text: object, limit: int = MAX_TERM_TEXT) -> str:
    """A piece of data for a terminal or CI log line: one line, no control characters, bounded."""
    return bounded(one_line(text), limit)


def log_line(line: object, color: bool = False) -> str:
    """A whole line for a terminal or CI log: control characters folded, and a line that would
    start with a CI workflow command (data at the start of a line) shown after "> " instead.
    With `color` (a terminal that takes it), a line wrapped whole in one colour code keeps the
    code; the text inside is sanitised as any line."""
    coloured = _COLOURED.fullmatch(str(line)) if color else None
    if coloured:
        return f"\x1b[{coloured[1]}m{log_line(coloured[2])}\x1b[0m"
    text = one_line(line)
    return "> " + text if _CI_COMMAND.match(text) else text


def file_name(text: object, limit: int = 80) -> str:
    """Data as part of a file name: letters, digits, '.', '_' and '-' only (no path separator,
    no control character, no leading dot), bounded; never empty."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", str(text)).strip(".-")
    return name[:limit].rstrip(".-") or "unnamed"


# What can turn text into markup anywhere in a CommonMark / GitHub Markdown line: backslash,
# code spans, emphasis, link and image brackets, table pipes, strikethrough. '<', '>' and '&' become
# entities so no raw HTML survives (GitHub renders a subset of HTML inside Markdown, e.g.
# <img onerror=...> or <details>). Other punctuation ('.', '-', '(', '#') is markup only at the
# start of a line (a heading, a list item, a quote, a rule), so it is escaped only there and
# numbers such as "2.20 us" stay readable in the raw file.
_MD_INLINE = re.compile(r"([\\`*_\[\]|~])")
_MD_LINE_START = re.compile(r"^(\s*)(?:([#>+=-])|(\d+)([.)])(?=\s|$))")


def one_line(text: object) -> str:
    """Data on one line, unbounded: every line break and other control character folded into a
    space. A newline would end a table row or start a new block (a fake heading, a fake
    "**gate: PASS**" line); on a terminal it would start a forged line of the log."""
    return _CONTROL.sub(" ", str(text))


def md_text(text: object, limit: int = MAX_TEXT) -> str:
    """Text for a Markdown paragraph, list item or table cell: one line, no markup, no HTML."""
    line = _MD_INLINE.sub(r"\\\1", html.escape(bounded(one_line(text), limit), quote=False))
    return _MD_LINE_START.sub(
        lambda m: m.group(1) + (f"\\{m.group(2)}" if m.group(2) else f"{m.group(3)}\\{m.group(4)}"),
        line,
    )


def md_code(text: object, limit: int = MAX_TEXT) -> str:
    """Text shown as inline code (a benchmark name). A code span cannot escape a backtick, so
    the fence is longer than the longest run of backticks inside; '|' is escaped because GitHub
    splits table cells on it even inside code spans; HTML inside a code span is inert."""
    line = bounded(one_line(text), limit).replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", line)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if line.startswith("`") or line.endswith("`") or not line.strip() else ""
    return f"{fence}{pad}{line}{pad}{fence}"


def html_text(text: object, limit: int = MAX_TEXT) -> str:
    """Text for HTML element content or a quoted attribute value."""
    return html.escape(bounded(text, limit), quote=True)


def html_line(text: object, limit: int = MAX_TEXT) -> str:
    """HTML text on one line: for an element inside Markdown (a <summary>), where a line break
    would end the HTML block and start Markdown (a fake heading)."""
    return html_text(one_line(text), limit)
