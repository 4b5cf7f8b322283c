"""Render the assembled report as self-contained HTML (images inlined) and as Markdown.

Every text of the Document is plain text (prose with benchmark names, file names, error messages
and context values in it, none of them markup): the HTML writer escapes each with
escape.html_text, the Markdown writer with escape.md_text (and md_code for the benchmark names
of a Details list), so a name like `<script>` or one with a newline is shown, never run, and
cannot start a line of its own.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..escape import html_text, md_code, md_text

if TYPE_CHECKING:  # only the type: importing charts_common would load matplotlib
    from .charts_common import ChartFile

__all__ = ["Table", "Details", "Section", "Document", "write_html", "write_markdown"]


@dataclass
class Table:
    headers: list[str]
    rows: list[list[str]]
    caption: str = ""


@dataclass
class Details:
    """A folded list (HTML <details>): a one-line summary, and items (benchmark names) shown
    on demand, so 18 rows skipped for one reason take one line of the page."""

    summary: str
    items: list[str]


@dataclass
class Section:
    title: str
    paragraphs: list[str] = field(default_factory=list)
    charts: list["ChartFile"] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    details: list[Details] = field(default_factory=list)  # after the tables
    notes: list[str] = field(default_factory=list)  # smaller print: methods and caveats


@dataclass
class Document:
    title: str
    intro: list[str]
    warnings: list[str]
    sections: list[Section]


_CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; max-width: 1180px;
       margin: 2em auto; padding: 0 1em; color: #222; line-height: 1.45; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.88em; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
figure { margin: 1.2em 0; } figcaption { font-size: 0.85em; color: #555; }
img { max-width: 100%; height: auto; border: 1px solid #eee; }
.warn { background: #fff4e5; border-left: 4px solid #f0a030; padding: 0.5em 1em; }
.note { font-size: 0.88em; color: #555; }
"""


def _esc(text: str) -> str:
    return html_text(text)


def _html_details(d: Details) -> str:
    items = "".join(f"<li><code>{_esc(i)}</code></li>" for i in d.items)
    return f"<details><summary>{_esc(d.summary)}</summary><ul>{items}</ul></details>"


def _html_table(t: Table) -> str:
    head = "".join(f"<th>{_esc(h)}</th>" for h in t.headers)
    body = "".join("<tr>" + "".join(f"<td>{_esc(c)}</td>" for c in row) + "</tr>" for row in t.rows)
    cap = f"<caption>{_esc(t.caption)}</caption>" if t.caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def write_html(doc: Document, path: Path) -> None:
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_esc(doc.title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_esc(doc.title)}</h1>",
    ]
    parts += [f"<p>{_esc(p)}</p>" for p in doc.intro]
    if doc.warnings:
        items = "".join(f"<li>{_esc(w)}</li>" for w in doc.warnings)
        parts.append(f'<div class="warn"><strong>Warnings</strong><ul>{items}</ul></div>')
    for sec in doc.sections:
        parts.append(f"<h2>{_esc(sec.title)}</h2>")
        parts += [f"<p>{_esc(p)}</p>" for p in sec.paragraphs]
        parts += [_html_table(t) for t in sec.tables]
        parts += [_html_details(d) for d in sec.details]
        for chart in sec.charts:
            # Inline the PNG so the single HTML file opens offline and can be mailed around.
            data = base64.b64encode(chart.png.read_bytes()).decode("ascii")
            parts.append(
                f'<figure><img src="data:image/png;base64,{data}" alt="{_esc(chart.title)}">'
                f"<figcaption>{_esc(chart.title)} (vector version: "
                f'<a href="{_esc(chart.svg.name)}">{_esc(chart.svg.name)}</a>)</figcaption></figure>'
            )
        parts += [f'<p class="note">{_esc(n)}</p>' for n in sec.notes]
    parts.append("</body></html>")
    path.write_text("\n".join(parts), encoding="utf-8")


def _md_table(t: Table) -> list[str]:
    lines = []
    if t.caption:
        lines += [f"*{md_text(t.caption)}*", ""]
    lines.append("| " + " | ".join(md_text(h) for h in t.headers) + " |")
    lines.append("|" + "---|" * len(t.headers))
    lines += ["| " + " | ".join(md_text(c) for c in row) + " |" for row in t.rows]
    return lines + [""]


def _md_details(d: Details) -> list[str]:
    # GitHub renders <details> in Markdown; the summary is inside an HTML element, so it is
    # escaped as HTML; the list between blank lines is Markdown again.
    return (
        ["<details>", f"<summary>{html_text(d.summary)}</summary>", ""]
        + [f"- {md_code(i)}" for i in d.items]
        + ["", "</details>", ""]
    )


def write_markdown(doc: Document, path: Path) -> None:
    lines = [f"# {md_text(doc.title)}", ""]
    for p in doc.intro:
        lines += [md_text(p), ""]
    if doc.warnings:
        lines += ["**Warnings**", ""] + [f"- {md_text(w)}" for w in doc.warnings] + [""]
    for sec in doc.sections:
        lines += [f"## {md_text(sec.title)}", ""]
        for p in sec.paragraphs:
            lines += [md_text(p), ""]
        for t in sec.tables:
            lines += _md_table(t)
        for d in sec.details:
            lines += _md_details(d)
        for chart in sec.charts:
            title = md_text(chart.title)
            lines += [
                f"![{title}]({chart.png.name})",
                "",
                f"*{title}* ([SVG]({chart.svg.name}))",
                "",
            ]
        for n in sec.notes:
            lines += [f"> {md_text(n)}", ""]
    path.write_text("\n".join(lines), encoding="utf-8")
