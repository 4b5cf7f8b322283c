"""The instruction lane's outputs: the gate line, the terminal table, the Markdown and the JSON.
Each is rendered from one frozen record (LaneText) that lane_text computes from
the verdict frame (judge.judge_counts); the words are templates/ (words.j2: the sentences;
terminal.txt.j2, lane.md.j2: the pages), which decide nothing."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import jinja2
import pandas as pd

from ..status import EXIT_OK, EXIT_REGRESSION
from ..escape import term_text
from ..json_values import finite_or_none
from ..templating import Words, environment
from .judge import FEWER, MISSING, MORE, NEW, SAME, InstructionRules

_ORDER = (MORE, MISSING, FEWER, SAME, NEW)
_VERDICT = {EXIT_OK: "PASS", EXIT_REGRESSION: "FAIL"}  # any other status: NOT COUNTED


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


@dataclass(frozen=True)
class LaneText:
    """What every output of the lane says. verdict: PASS, FAIL or NOT COUNTED; tally: (count,
    verdict) of the verdicts present, in _ORDER ("(2 more, 5 same)"); openblas: (side, core) of
    the sides whose kernels are named; rows: the verdict frame's rows with None for a count not
    made, and the change in percent (change_pct)."""

    verdict: str
    threshold_pct: float
    tally: tuple[tuple[int, str], ...]
    why: str
    openblas: tuple[tuple[str, str], ...]
    rows: tuple[Any, ...]
    width: int  # of the names' column in the terminal
    wall_seconds: float | None


@functools.cache
def templates() -> jinja2.Environment:
    """The lane's and the gate's templates/ (combine.py renders the gate's from here too)."""
    env = environment(__package__, keep_trailing_newline=True)
    env.filters.update(term=term_text)
    return env


words = Words(templates, "words.j2")


def _counts(result: LaneResult) -> dict[str, int]:
    """How many benchmarks have each verdict, in _ORDER."""
    found = result.verdicts["verdict"].value_counts() if len(result.verdicts) else {}
    return {k: int(found.get(k, 0)) for k in _ORDER}


def lane_text(result: LaneResult) -> LaneText:
    frame = result.verdicts.assign(change_pct=result.verdicts["change"] * 100)
    rows = tuple(frame.astype(object).where(frame.notna(), None).itertuples(index=False))
    tally = tuple((n, verdict) for verdict, n in _counts(result).items() if n)
    openblas = tuple((side, core) for side, core in result.openblas.items() if core)
    width = max((len(row.name) for row in rows), default=0)
    verdict, threshold = _VERDICT.get(result.exit_code, "NOT COUNTED"), result.rules.max_change
    return LaneText(verdict, threshold * 100, tally, result.why, openblas, rows, width,
                    result.wall_seconds)  # fmt: skip


def render(template: str, result: LaneResult) -> str:
    """The lane's terminal text (terminal.txt.j2) or Markdown (lane.md.j2)."""
    return templates().get_template(template).render(t=lane_text(result))


def as_dict(result: LaneResult) -> dict[str, Any]:
    """The --json document; its "gate" the lane's one line ('instructions: PASS|FAIL|...')."""
    return {
        "exit_code": result.exit_code,
        "gate": words("lane_line", t=lane_text(result)),
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
