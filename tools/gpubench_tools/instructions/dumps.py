"""Callgrind's dump files, one table: a row per region a bench process dumped.

bench's timers (harness/instruction_region.hpp) collect events only inside their timed loop and
end it with ``CALLGRIND_DUMP_STATS_AT("gpubench-region iterations=N name=ROW")``; callgrind then
writes one file per dump (``OUT.<part>``) whose header holds that text on its ``desc: Trigger:``
line and the loop's event counts on its ``summary:`` line (``totals:`` in some versions; the
``events:`` line names the columns). Files dumped for another reason (the final dump at program
termination, with nothing collected) are not regions and are left out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import pandas as pd

__all__ = ["DumpError", "Region", "parse_dump", "read_dumps", "COLUMNS"]

TRIGGER = re.compile(
    r"^desc:\s*Trigger:\s*Client Request:\s*gpubench-region iterations=(\d+) name=(\S+)\s*$",
    re.MULTILINE,
)
COLUMNS = ["path", "pid", "part", "name", "iterations", "instructions"]
# The header lines read; cost lines (``fn=``, ``calls=``, numbers) never start with their keys.
_HEADER = re.compile(r"^(pid|part|events|summary|totals):(.*)$", re.MULTILINE)


class DumpError(Exception):
    """A region dump that cannot be read: the message names the file and what is missing."""


@dataclass(frozen=True)
class Region:
    """One timed loop's counts: `iterations` iterations of the row `name`, `instructions` in all
    (callgrind's Ir: instructions executed, by the thread that ran the loop)."""

    path: str
    pid: int
    part: int
    name: str
    iterations: int
    instructions: int


def parse_dump(text: str, path: str = "") -> Region | None:
    """The region a dump file's text holds; None for a dump that is not a region's."""
    triggers = TRIGGER.findall(text)
    if not triggers:
        return None
    iterations, name = int(triggers[-1][0]), triggers[-1][1]
    header: dict[str, str] = {}
    for key, value in _HEADER.findall(text):
        header.setdefault(key, value.strip())  # the first of each key
    events = header.get("events", "").split()
    values = (header.get("summary") or header.get("totals") or "").split()
    if "Ir" not in events or len(values) < len(events):
        raise DumpError(f"{path or 'dump'}: region {name} has no Ir count (events/summary lines)")
    try:
        instructions = int(values[events.index("Ir")])
        pid, part = int(header.get("pid", "0")), int(header.get("part", "0"))
    except ValueError as exc:
        raise DumpError(f"{path or 'dump'}: region {name}: {exc}") from None
    return Region(path, pid, part, name, iterations, instructions)


def read_dumps(paths: Iterable[Path | str]) -> pd.DataFrame:
    """Every region in the dump files, as a frame with COLUMNS, in the order dumped (pid, part)."""
    # Latin-1: a byte that is not UTF-8 in a path or symbol name must not stop the reader.
    regions = [parse_dump(Path(p).read_text(encoding="latin-1"), str(p)) for p in paths]
    frame = pd.DataFrame([r.__dict__ for r in regions if r is not None], columns=COLUMNS)
    return frame.sort_values(["pid", "part"], kind="stable").reset_index(drop=True)
