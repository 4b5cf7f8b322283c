"""How the report says a number: marks, sizes, speedups, context values, and the plain dicts of a
section and a table that the templates render.

Every sentence, table and name is a macro of templates/words.j2, reached through
templating.Words (`WORDS`) with keyword arguments only: `say` (a sentence's lines), `table_of` (a
table), `cells` (a list's rows), `named` (one name). A macro gets its values `plain`: a frame as
its records, a missing number as None, every decision already made by the caller's record.

Every function here takes numbers or rows already computed and returns text; none selects or
pairs rows. Nothing here formats markup: the templates escape every text for HTML or Markdown.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

import jinja2
import pandas as pd

from ..wording import unknown_conditions_note
from ..templating import Words, environment
from ..units import approx, fmt_bytes, fmt_flops, fmt_pct, fmt_rate, fmt_ratio, fmt_size, fmt_time
from .analysis import short_benchmark

# Marks in tables: a median of fewer than 3 repetitions is one draw from a noisy machine, not
# a measurement to act on; a wide spread says the same.
FEW_MARK, NOISY_MARK = "†", "~"
# A median that includes repetitions measured while disturbed (fewer than MIN_UNDISTURBED
# undisturbed ones remained: policy.HEADLINE_RULE).
DISTURBED_MARK = "‡"


def section(
    id: str,
    paragraphs: Iterable[str] = (),
    charts: Iterable[dict[str, str]] = (),
    tables: Iterable[dict[str, Any]] = (),
    **extra: Any,
) -> dict[str, Any]:
    """A section of the document, titled `title` (in `extra`) or by its id (`section_titles`);
    `extra` holds its `notes` and `details` where it has them."""
    title = extra.pop("title", None) or named("section_titles", id)
    page = {"id": id, "title": title, "paragraphs": list(paragraphs), "charts": list(charts)}
    return {**page, "tables": list(tables), **extra}


def key_text(value: object) -> str:
    """A size key's value for a sentence: a number as fmt_size writes it, a value that is not one
    as the name has it (hidden 4096x2: a width and a depth)."""
    try:
        return fmt_size(float(value))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(value)


# A context value in its unit, as a person reads it (85017493504 bytes: "79.2 GiB").
_UNIT_FORMATS = {
    "bytes": fmt_bytes,
    "bytes/s": fmt_rate,
    "flop/s": fmt_flops,
    "Hz": lambda hz: f"{hz / 1e9:.3g} GHz" if hz >= 1e8 else f"{hz / 1e6:.3g} MHz",
}


def context_text(value: Any, unit: str = "") -> str:
    if value is None or value == "":
        return ""
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    text = str(value)
    try:
        number = float(text)
    except ValueError:
        return text
    if unit in _UNIT_FORMATS and math.isfinite(number) and number > 0:
        return _UNIT_FORMATS[unit](number)
    return f"{number:.4g}" if abs(number) >= 1e5 else text


# A macro's lines are its template's lines, a table row's cells are joined by a tab: a newline
# or a tab inside a value (a hostile benchmark name) is held apart until the lines and cells
# are split, then given back.
_NL, _TAB = "\ue000n", "\ue000t"


class _Cells(str):
    """A table row's cells, joined by tabs: written as they are."""


def _finalize(value: Any) -> Any:
    if isinstance(value, str) and not isinstance(value, _Cells):
        return value.replace("\n", _NL).replace("\t", _TAB)
    return value


def _restore(text: str) -> str:
    return text.replace(_NL, "\n").replace(_TAB, "\t")


def _row(*cells: Any) -> _Cells:
    """A table row's cells, a list among them standing for its own cells."""
    flat = (c for cell in cells for c in (cell if isinstance(cell, list) else [cell]))
    return _Cells("\t".join(_finalize(str(cell)) for cell in flat))


def threads_text(t: Any) -> str:
    """A CPU side's threads: "1 thread", "16 threads", "CPU" where the row has no count."""
    return "CPU" if t is None or pd.isna(t) else f"{int(t)} thread" + ("" if int(t) == 1 else "s")


def _environment() -> jinja2.Environment:
    env = environment("gpubench_tools.report", finalize=_finalize)
    units = dict(time=fmt_time, size=fmt_size, pct=fmt_pct, ratio=fmt_ratio, bytes=fmt_bytes)
    env.filters.update(units, signed=lambda v: f"{v:+.0%}", g3=lambda v: f"{v:.3g}")
    env.filters.update(key=key_text, short=short_benchmark, approx=approx, threads=threads_text)
    env.filters.update(gbs=lambda v: f"{v / 1e9:.3g} GB/s", context=context_text)
    env.filters["unknown_conditions"] = unknown_conditions_note
    env.filters["apply"] = lambda value, macro, *args: macro(value, *args)
    env.globals.update(few=FEW_MARK, noisy=NOISY_MARK, disturbed=DISTURBED_MARK, row=_row)
    return env


# The report's words: every sentence, table, name and chart text is a macro of words.j2.
WORDS = Words(_environment, "words.j2")


def plain(value: Any) -> Any:
    """A value as a macro reads it: a frame as its records, a row as a dict, a missing number
    as None (so that a template asks `is none`, never a number's value)."""
    if isinstance(value, (pd.DataFrame, pd.Series)):
        value = value.astype(object).where(value.notna(), None)
        return value.to_dict("records") if isinstance(value, pd.DataFrame) else value.to_dict()
    return value


def named(table: str, key: str) -> str:
    """One name a reader sees, as templates/words.j2 sets it: `section_titles`,
    `chart_names`, `chart_defaults` or `cli_help`, by its key."""
    return WORDS("named", table=table, key=key)


def _lines(macro: str, values: dict[str, Any]) -> list[str]:
    """The lines a macro of templates/words.j2 writes, its values' own newlines and tabs held
    apart (frames are passed as lists of records, a row as a dict)."""
    text = WORDS(macro, **{name: plain(value) for name, value in values.items()})
    return [line for line in text.split("\n") if line]


def say(sentence: str, **values: Any) -> list[str]:
    """The lines of a sentence macro of templates/words.j2, given the values it words."""
    return [_restore(line) for line in _lines(sentence, values)]


def table_of(macro: str, **values: Any) -> dict[str, Any]:
    """A table from a table macro of templates/words.j2: its caption, headers and rows."""
    (caption,), headers, *rows = cells(macro, **values)
    return {"caption": caption, "headers": headers, "rows": rows}


def cells(macro: str, **values: Any) -> list[list[str]]:
    """The rows of a list macro of templates/words.j2, each its cells."""
    return [[_restore(cell) for cell in row.split("\t")] for row in _lines(macro, values)]
