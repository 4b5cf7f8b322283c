"""A workload one machine measured on one side only (no GPU rows, or no CPU rows, and no
reference): what it measured, since there is no speedup to show. Its times against the work of
each call, and each row's place under that side's roofs (roofline.placed): how much of its time
is at the roof that binds and how much below it, and which bound applies.

This is the section a laptop or a CI runner without a GPU gets for the suite's own workloads and
for a user's (include/gpubench/workload.hpp) alike. A workload here is the first part of the
benchmark names; it is shown where it does known work (`flop`), so that its rows have a size to
be drawn against and a place under the roofs.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .analysis import NOISY_SPREAD
from .context import AXIS_PREFIX, SIZE_COUNTERS
from .roofs import BoundCount


@dataclass(frozen=True)
class OneSide:
    """One machine's workload, measured on `side` only ("cpu" or "gpu"; `missing` is the other,
    as the answer says it).

    `rows`: one per benchmark, least work first, with `line` (its name without the size parts),
    `size` (those parts), `flop`, `time`, `low`, `high` (median and min..max over repetitions),
    `hollow` (drawn hollow: analysis.typed's `_flagged`), `repetitions` and the table's marks
    (`few_samples`, `noisy`, `disturbed`), `reached` (FLOP/s by the time it is placed by),
    `t_at_roof` and `t_below_roof` (roofline.place: NaN for a cache-resident row), `bound` (roofline's name, None
    where the row has no place) and `derived` (bytes from its name). `counts`: rows per bound;
    `largest`: the row of most work with a place under the roofs (of all rows where none has
    one), whose bound the section states."""

    machine: int
    workload: str
    side: str
    missing: str
    rows: pd.DataFrame
    counts: tuple[BoundCount, ...]
    largest: dict

    @property
    def anchor(self) -> str:
        return anchor(self.machine, self.workload)


def anchor(machine: int, workload: str) -> str:
    """The section's id, which the answer's row of the workload links to."""
    return f"{workload}-{machine}-one-side"


def _is_size(part: str) -> bool:
    key = part.split(":", 1)[0]
    return ":" in part and (key in SIZE_COUNTERS or key.startswith(AXIS_PREFIX))


def _rows(rows: pd.DataFrame) -> pd.DataFrame:
    parts = rows["name"].astype(str).str.split("/")
    return pd.DataFrame(
        {
            "name": rows["name"],
            "line": parts.map(lambda p: "/".join(x for x in p if not _is_size(x))),
            "size": parts.map(lambda p: "/".join(x for x in p if _is_size(x))),
            "flop": rows["flop"],
            "time": rows["time_s"],
            "low": rows["time_min_s"].fillna(rows["time_s"]),
            "high": rows["time_max_s"].fillna(rows["time_s"]),
            "hollow": rows["_flagged"].astype(bool),
            "repetitions": rows["repetitions"].fillna(1).astype(int),
            # the marks of the report's tables (templates/words.j2's `mark`)
            "few_samples": rows["_few"].astype(bool),
            "noisy": rows["spread"] > NOISY_SPREAD,
            "disturbed": rows["_disturbed"].astype(bool),
            "reached": rows["flop"] / rows["t_placed"],
            "t_at_roof": rows["t_at_roof"],
            "t_below_roof": rows["t_below_roof"],
            "bound": rows["bound"],
            "derived": rows["work_derived"].astype(bool),
        }
    ).sort_values(["flop", "name"], kind="stable", ignore_index=True)


def one_sides(summary: pd.DataFrame) -> list[OneSide]:
    """Every workload a machine measured on one side only, in the order of its first row."""
    # The probes (copies, launches, allocations) are not workloads. A workload's sides are those
    # of all its rows; the section shows those that do known work.
    probe = summary["probe"].notna() if "probe" in summary else False
    rows_of = summary[summary["workload"].notna() & ~probe]
    found = []
    for (machine, workload), rows in rows_of.groupby(["machine", "workload"], sort=False):
        sides, rows = set(rows["backend"]), rows[rows["flop"] > 0]
        if len(sides) != 1 or rows.empty:
            continue
        (side,) = sides
        shown = _rows(rows)
        counts = tuple(
            BoundCount(side, str(bound), int(n))
            for bound, n in shown["bound"].dropna().value_counts(sort=False).sort_index().items()
        )
        # The row of most work the roofs place (of equal work, the last by name), else of all.
        placed = shown[shown["bound"].notna()]
        largest = (placed if len(placed) else shown).iloc[-1].to_dict()
        missing = "GPU" if side == "cpu" else "CPU"
        found.append(OneSide(int(machine), str(workload), side, missing, shown, counts, largest))
    return sorted(found, key=lambda f: f.machine)
