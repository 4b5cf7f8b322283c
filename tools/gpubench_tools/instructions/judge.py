"""The instruction lane's rule: base against contender, instructions per iteration.

Per benchmark, change = contender / base - 1 of the instructions per iteration (counts.py):

- MORE when the change is at least ``max_change`` (1 % by default): the contender's code does
  more work in the timed loop. Fails the lane. Counts of deterministic code do not vary between
  runs (the A/A spread is measured and written down in docs/regression-gate.md), so any threshold
  above that spread sees a change of that size on any machine, busy or not;
- FEWER when it is at most -max_change: listed, passes;
- SAME otherwise;
- MISSING: counted in the base, not in the contender while the contender counted others: the
  benchmark no longer runs, or no longer opens a region. Fails;
- NEW: only in the contender. Listed.

The lane exits 0 (pass), 1 (MORE or MISSING) or 2 (nothing counted: no region on a side).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..status import EXIT_OK, EXIT_REGRESSION, Number

MORE, FEWER, SAME, MISSING, NEW = "more", "fewer", "same", "missing", "new"
FAILING = (MORE, MISSING)
# The range of --max-change: a fraction, above 0, below 1 (100 %).
MAX_CHANGE = Number(0.0, 1.0, low_open=True, high_open=True)
VERDICT_COLUMNS = (
    "name verdict base_per_iteration contender_per_iteration change base_spread_pct "
    "contender_spread_pct"
).split()


@dataclass(frozen=True)
class InstructionRules:
    """``max_change``: the smallest relative change of instructions per iteration that is a
    verdict (0.01: 1 %)."""

    max_change: float = 0.01


def judge_counts(
    base: pd.DataFrame, contender: pd.DataFrame, rules: InstructionRules = InstructionRules()
) -> pd.DataFrame:
    """A verdict per benchmark (VERDICT_COLUMNS), in the base's order, the contender's new
    benchmarks after it. `base` and `contender` are counts.per_iteration frames."""
    merged = base.merge(contender, on="name", how="outer", suffixes=("_b", "_c"))
    # An outer merge sorts the names as text; the base's order (the order bench ran them) reads
    # better (m:64 before m:192), the contender's new ones after it.
    order = list(base["name"]) + [n for n in contender["name"] if n not in set(base["name"])]
    merged = merged.set_index("name").loc[order].reset_index()
    b, c = merged["instructions_per_iteration_b"], merged["instructions_per_iteration_c"]
    # A base of 0 instructions: the same when the contender has 0 too, else infinitely more.
    change = (c / b - 1).where(b > 0, np.where(c == 0, 0.0, np.inf)).where(b.notna() & c.notna())
    cases = [c.isna(), b.isna(), change >= rules.max_change, change <= -rules.max_change]
    verdict = np.select(cases, [MISSING, NEW, MORE, FEWER], SAME)
    spreads = [merged["spread_pct_b"], merged["spread_pct_c"]]
    columns = [merged["name"], verdict, b, c, change, *spreads]
    return pd.DataFrame(dict(zip(VERDICT_COLUMNS, columns)))


def lane_exit(verdicts: pd.DataFrame) -> int:
    """The exit status of a lane that counted both sides (lane.judge_dirs decides the one that
    did not): 1 when a benchmark has MORE instructions or is MISSING, else 0."""
    return EXIT_REGRESSION if verdicts["verdict"].isin(FAILING).any() else EXIT_OK
