"""The conditions of a repetition: quiet, disturbed or conditions unknown, and what disturbed the
disturbed ones (`disturbances`, a record that wording.py words).

One rule for every tool (docs/timing-method.md, "Conditions and disturbed repetitions"); the
counters it reads are declared in schema.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

from .schema import usable_counter

# What the harness's rule (docs/timing-method.md, "Conditions and disturbed repetitions") said of a
# repetition, decided here for every tool: *disturbed* (counter `disturbed` is 1: something else
# took the machine while its loop ran), *quiet* (`disturbed` is 0), or *conditions unknown* (no
# usable `disturbed` counter: a file from a bench older than the counters, a run with
# GPUBENCH_CONDITIONS=off, or a NaN). Unknown is never taken for quiet, and never an error: such a
# repetition is used as it was before the counters existed, and the tools say "conditions
# unknown" once. On an aggregate row (a file written with --benchmark_report_aggregates_only) the
# same reading applies to the aggregate of the 0/1 counter: a mean above 0 or a median of 1 says
# disturbed repetitions went into it.
QUIET, DISTURBED, UNKNOWN = "quiet", "disturbed", "conditions unknown"

# The bits of `disturbed_by` (harness/conditions.hpp, DisturbanceRule): which part of the rule
# fired, in the words the tools print, and the counters that say by how much (the first present).
DISTURBED_BY: dict[int, tuple[str, tuple[str, ...]]] = {
    1: ("waited for a CPU while other processes ran", ("cpu_wait_cores", "cpu_other_cores")),
    2: ("lost CPU time to the hypervisor (steal)", ("cpu_steal_cores",)),
    4: ("GPU slowed down (thermal, hardware slowdown or power brake)", ()),
    8: ("ran while other processes used a large share of the CPUs", ("cpu_other_cores",)),
}


# The counters that say by how much, in the order the rule's parts name them.
CONDITION_FIGURES: tuple[str, ...] = tuple(
    dict.fromkeys(key for _, keys in DISTURBED_BY.values() for key in keys)
)


def _by_how_much(counters: dict[str, float], keys: tuple[str, ...]) -> float | None:
    values = (counters.get(key) for key in keys)
    return next((v for v in values if v is not None and usable_counter(v)), None)


def condition_of(counters: dict[str, float]) -> str:
    """DISTURBED, QUIET or UNKNOWN for one row's counters (see QUIET, DISTURBED, UNKNOWN)."""
    value = counters.get("disturbed")
    if value is None or not math.isfinite(value):
        return UNKNOWN
    return DISTURBED if value > 0 else QUIET


def _bits(counters: dict[str, float]) -> int:
    """The bits of `disturbed_by`, 0 where it is absent, not finite or not above 0."""
    value = counters.get("disturbed_by")
    return int(value) if value is not None and usable_counter(value) and value > 0 else 0


@dataclass(frozen=True)
class Cause:
    """One part of the rule (DISTURBED_BY) and the disturbed repetitions it caught."""

    count: int
    what: str  # the part of the rule, in the words the tools print
    most: float | None  # the largest figure that says by how much (cores), None without one


@dataclass(frozen=True)
class Disturbances:
    """The disturbed repetitions among the counters of some rows, and what disturbed them."""

    disturbed: int
    of: int  # the repetitions counted
    causes: tuple[Cause, ...]
    unexplained: int  # disturbed repetitions without a recorded cause


def disturbances(rows: Iterable[dict[str, float]]) -> Disturbances:
    """What disturbed the disturbed repetitions among the counters of `rows`, by how much: each
    part of the rule that fired, with its count and its largest figure."""
    counters = list(rows)
    disturbed = [c for c in counters if condition_of(c) == DISTURBED]
    causes = []
    for bit, (words, figures) in DISTURBED_BY.items():
        hit = [c for c in disturbed if _bits(c) & bit]
        values = [v for c in hit if (v := _by_how_much(c, figures)) is not None]
        causes += [Cause(len(hit), words, max(values, default=None))] if hit else []
    unexplained = sum(1 for c in disturbed if not _bits(c))
    return Disturbances(len(disturbed), len(counters), tuple(causes), unexplained)
