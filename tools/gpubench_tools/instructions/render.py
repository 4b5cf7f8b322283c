"""The instruction lane's words: the gate line, the terminal table, the Markdown and the JSON.

One verdict frame (judge.judge_counts) in; nothing here computes a verdict."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..cli import EXIT_OK, EXIT_REGRESSION
from ..escape import md_code, md_text, term_text
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


def _count(value: float) -> str:
    return "-" if pd.isna(value) else f"{value:,.0f}"


def _change(value: float) -> str:
    return "" if pd.isna(value) else f"{value * 100:+.2f}%"


def _counts(result: LaneResult) -> dict[str, int]:
    """How many benchmarks have each verdict, in _ORDER."""
    found = result.verdicts["verdict"].value_counts() if len(result.verdicts) else {}
    return {k: int(found.get(k, 0)) for k in _ORDER}


def lane_line(result: LaneResult) -> str:
    """'instructions: PASS|FAIL|NOT COUNTED: ...', the lane's one summary line."""
    threshold = f"{result.rules.max_change * 100:g}%"
    if result.exit_code == EXIT_REGRESSION:
        head = f"instructions: FAIL: more instructions per iteration by {threshold} or more, or missing"
    elif result.exit_code == EXIT_OK:
        head = f"instructions: PASS: no benchmark runs {threshold} more instructions per iteration"
    else:
        return f"instructions: NOT COUNTED: {result.why}"
    return f"{head} ({', '.join(f'{n} {k}' for k, n in _counts(result).items() if n)})"


def describe(row: Any) -> str:
    if row.verdict == MISSING:
        return f"{_count(row.base_per_iteration)} in the base; no count in the contender"
    if row.verdict == NEW:
        return f"{_count(row.contender_per_iteration)}; only in the contender"
    return (
        f"{_count(row.base_per_iteration)} → {_count(row.contender_per_iteration)} "
        f"({_change(row.change)})"
    )


def _header(result: LaneResult) -> str:
    cores = ", ".join(f"{side} {core}" for side, core in result.openblas.items() if core)
    return (
        "instruction lane: instructions per iteration of each timed loop under callgrind, "
        f"contender against base, threshold {result.rules.max_change * 100:g}%; single-threaded "
        "CPU rows only" + (f"; OpenBLAS kernels under Valgrind: {cores}" if cores else "")
    )


def render_terminal(result: LaneResult) -> str:
    lines = [term_text(_header(result))]
    rows = list(result.verdicts.itertuples(index=False))
    width = max((len(r.name) for r in rows), default=0)
    for row in rows:
        lines.append(f"  {row.verdict.upper():<8} {term_text(row.name):<{width}}  {describe(row)}")
    if result.wall_seconds is not None:
        lines.append(f"instruction lane: {result.wall_seconds:.0f} s")
    lines.append(term_text(lane_line(result)))
    return "\n".join(lines) + "\n"


def render_markdown(result: LaneResult) -> str:
    out = [f"**{md_text(lane_line(result))}**", "", md_text(_header(result)) + "."]
    if len(result.verdicts):
        out += ["", "| verdict | benchmark | instructions per iteration, base → contender |"]
        out += ["|---|---|---|"] + [
            f"| {md_text(r.verdict.upper())} | {md_code(r.name)} | {md_text(describe(r))} |"
            for r in result.verdicts.itertuples(index=False)
        ]
    return "\n".join(out) + "\n"


def _number(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value


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
            {k: _number(v) for k, v in row._asdict().items()}
            for row in result.verdicts.itertuples(index=False)
        ],
    }
