"""The instruction lane's outputs: the gate line, the terminal table, the Markdown and the JSON.
The words are templates/ (words.j2: the sentences; terminal.txt.j2, lane.md.j2: the pages).

One verdict frame (judge.judge_counts) in; nothing here computes a verdict."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import jinja2
import pandas as pd

from ..status import EXIT_OK, EXIT_REGRESSION, EXIT_UNRESOLVED
from ..escape import term_text
from ..json_values import finite_or_none
from ..templating import environment
from .judge import FEWER, MISSING, MORE, NEW, SAME, InstructionRules

_ORDER = (MORE, MISSING, FEWER, SAME, NEW)


@dataclass
class LaneResult:
    """What the lane found: the verdicts, its exit status, and how it was measured."""

    exit_code: int
    rules: InstructionRules
    verdicts: pd.DataFrame
    why: str = ""  # for a lane that counted nothing: why not
    openblas: dict[str, str] = field(default_factory=dict)  # side -> core under Valgrind
    regions: dict[str, int] = field(default_factory=dict)  # side -> regions dumped
    wall_seconds: float | None = None


@functools.cache
def templates() -> jinja2.Environment:
    """The lane's and the gate's templates/ (combine.py renders the gate's from here too)."""
    env = environment(__package__, keep_trailing_newline=True)
    env.filters.update(term=term_text)
    env.tests.update(na=pd.isna)
    exits = dict(EXIT_OK=EXIT_OK, EXIT_REGRESSION=EXIT_REGRESSION, EXIT_UNRESOLVED=EXIT_UNRESOLVED)
    env.globals.update(exits, MISSING=MISSING, NEW=NEW)
    return env


def _counts(result: LaneResult) -> dict[str, int]:
    """How many benchmarks have each verdict, in _ORDER."""
    found = result.verdicts["verdict"].value_counts() if len(result.verdicts) else {}
    return {k: int(found.get(k, 0)) for k in _ORDER}


def words() -> Any:
    """templates/words.j2 as a module: its macros (the lane's sentences) called from Python."""
    return templates().get_template("words.j2").module


def lane_line(result: LaneResult) -> str:
    """'instructions: PASS|FAIL|NOT COUNTED: ...', the lane's one summary line."""
    return words().lane_line(result, _counts(result))


def render(template: str, result: LaneResult) -> str:
    """The lane's terminal text (terminal.txt.j2) or Markdown (lane.md.j2)."""
    rows = list(result.verdicts.itertuples(index=False))
    page = templates().get_template(template)
    return page.render(result=result, rows=rows, counts=_counts(result))


def as_dict(result: LaneResult) -> dict[str, Any]:
    return {
        "exit_code": result.exit_code,
        "gate": lane_line(result),
        "lane": "instructions",
        "max_change": result.rules.max_change,
        "why": result.why or None,
        "openblas_core_under_valgrind": result.openblas,
        "regions": result.regions,
        "wall_seconds": result.wall_seconds,
        "summary": _counts(result) if len(result.verdicts) else {},
        "benchmarks": [
            {k: finite_or_none(v) for k, v in row._asdict().items()}
            for row in result.verdicts.itertuples(index=False)
        ],
    }
