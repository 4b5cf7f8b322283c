"""The document into report.html (self-contained: charts inlined) and report.md, by templates.

The document holds plain text only; escaping is the templates' job, by context: HTML
autoescaping for the page, `md` (escape.md_text) for Markdown prose and table cells, `code`
(escape.md_code) for benchmark names. So a name like `<script>` is shown, never run.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import jinja2

from ..escape import html_line
from ..templating import environment


def _environment(out: Path, autoescape: bool) -> jinja2.Environment:
    env = environment("gpubench_tools.report", autoescape=autoescape)
    env.filters["html_line"] = html_line
    # Inline each PNG so the one HTML file opens offline and can be mailed around.
    env.filters["inline_png"] = lambda name: base64.b64encode((out / name).read_bytes()).decode()
    return env


def write_report(doc: dict[str, Any], out: Path) -> tuple[Path, Path]:
    """Write report.html and report.md into `out` (where the charts already are)."""
    html_path, md_path = out / "report.html", out / "report.md"
    html = _environment(out, True).get_template("report.html.j2").render(doc=doc)
    markdown = _environment(out, False).get_template("report.md.j2").render(doc=doc)
    html_path.write_text(html, encoding="utf-8")
    md_path.write_text(markdown, encoding="utf-8")
    return html_path, md_path
