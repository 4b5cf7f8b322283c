"""The text a reader sees in a Markdown file the tools wrote: escape.md_text undone (its
backslash escapes and HTML entities), so tests can look for the report's sentences as text."""

from __future__ import annotations

import re
from pathlib import Path

_ESCAPED = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|~])")


def md_plain(text: str) -> str:
    text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return _ESCAPED.sub(r"\1", text)


def read_md(path: Path) -> str:
    return md_plain(Path(path).read_text(encoding="utf-8"))
