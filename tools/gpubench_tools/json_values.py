"""Values of a JSON file as the file wrote them, for the reader and for the messages about them;
and the one rule for a number a tool writes into JSON (`finite_or_none`).

A number with a fraction or an exponent keeps its text (`1e30`, `NaN`, `-Infinity`), and an
object keeps its (key, value) pairs in order, so that a message can quote a value as written
(`as_read`) and the reader can tell a repeated key from a single one.
"""

from __future__ import annotations

import json
import math
from typing import Any

from .units import plural


class ReadFloat(float):
    """A number as a float, with the text it was read from: an invalid value is shown as the
    file wrote it (`1e30`, `NaN`, `-Infinity`), never as Python prints it."""

    text: str

    def __new__(cls, value: float, text: str) -> "ReadFloat":
        number = super().__new__(cls, value)
        number.text = text
        return number


def read_number(text: str) -> ReadFloat:
    """A number with a fraction or an exponent, or NaN / Infinity / -Infinity, with its text."""
    return ReadFloat(float(text.replace("Infinity", "inf")), text)


def loads_as_read(text: str) -> Any:
    """A JSON document (a config file) with every number that has a fraction or an exponent kept
    with its text, and NaN / Infinity accepted as Python writes them: so that a message about a
    value can quote it as the file has it (as_read)."""
    return json.loads(text, parse_float=read_number, parse_constant=read_number)


def as_read(value: Any, limit: int = 40) -> str:
    """A value of a file as the file wrote it, in JSON (`"12"` for a string, `NaN`, `null`,
    `1e30`), cut to `limit` characters: for one line that names a field and its value."""
    if isinstance(value, (list, dict)):  # Pairs, an object as read, is a list
        kind = "an object" if isinstance(value, (Pairs, dict)) else "a list"
        return f"{kind} of {plural(len(value), 'item')}"
    text = value.text if isinstance(value, ReadFloat) else json.dumps(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Pairs(list):
    """Marker type: a JSON object kept as its ordered (key, value) pairs.

    Google Benchmark writes its own "threads" key and then, for benchmarks that define a
    "threads" user counter, the same key again. A plain dict would keep only the last one,
    so the loader sees the pairs and decides which is which.
    """


def to_plain(value: Any) -> Any:
    """Turn Pairs objects (used outside rows, e.g. the context) back into dicts, and numbers
    read with their text back into plain floats."""
    if isinstance(value, Pairs):
        return {k: to_plain(v) for k, v in value}
    if isinstance(value, list):
        return [to_plain(v) for v in value]
    return float(value) if isinstance(value, ReadFloat) else value


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def finite_or_none(value: Any) -> Any:
    """`value` for a JSON document a tool writes: None for a NaN or an infinite float (JSON has
    neither), anything else as it is."""
    return None if isinstance(value, float) and not math.isfinite(value) else value
