"""The counters and label keys of bench's rows, with each counter's unit and direction.

This is the one declaration the Python tools use for "which way is better" and "what unit is
this": nothing guesses from a counter's name. It is kept as data, schema.json beside this module
(read with importlib.resources); `bench --schema` prints the C++ side's declaration in the same
shape, and tests/tools/test_schema.py fails when the two disagree:

    {"schema_version": 1,
     "counters": {"<key>": {"unit": "<unit>", "direction": "smaller" | "bigger" | "none"}, ...},
     "counter_prefixes": {"<prefix>": {"unit": ..., "direction": ...}},
     "label_keys": ["workload", "backend", ...]}

A counter prefix declares a family of counters whose names the benchmark chooses: `t_op:<operation>`
(seconds per training step spent in one operation of a profiled step, e.g. `t_op:conv1.gemm`), and
`axis:<name>` (a numeric axis of a workload declared through the public API that has no counter of
its own, e.g. `axis:rows`).

Direction: "smaller" is better when smaller (times, errors), "bigger" when bigger (rates,
accuracy), "none" is a description of the work or of the run (sizes, counts, bytes) that is
neither better nor worse. Units: "s" seconds, "flop", "flop/s", "%", "B" bytes, "B/s",
"1/s" (per second), "count", "1" (a dimensionless number), "cores" (CPU seconds per second),
"Hz", "W", "J" (joules), "degC".

The condition counters (harness/conditions.hpp: cpu_other_cores ... disturbed_by, and the GPU's
clocks, temperature, power and energy) describe what else took the machine
while a repetition's timed loop ran and whether the rule (docs/timing-method.md, "Disturbed
repetitions") calls it disturbed; a file without them was written by an older bench.
"""

from __future__ import annotations

import json
import math
from importlib import resources
from dataclasses import dataclass
from typing import Any

_DOC: dict[str, Any] = json.loads(
    resources.files(__package__).joinpath("schema.json").read_text("utf-8")
)
SCHEMA_VERSION: int = _DOC["schema_version"]

SMALLER = "smaller"
BIGGER = "bigger"
NONE = "none"
DIRECTIONS: tuple[str, ...] = (SMALLER, BIGGER, NONE)


@dataclass(frozen=True)
class CounterSpec:
    unit: str
    direction: str


# Keep in step with `bench --schema` (tests/tools/test_schema.py compares the two).
COUNTERS: dict[str, CounterSpec] = {k: CounterSpec(**v) for k, v in _DOC["counters"].items()}
# Families of counters named `<prefix><name>`: the per-operation times of a profiled step.
COUNTER_PREFIXES: dict[str, CounterSpec] = {
    k: CounterSpec(**v) for k, v in _DOC["counter_prefixes"].items()
}
# The keys a row's label may hold ("workload=matmul backend=gpu dtype=fp32 ..."); bench writes
# workload, backend and variant first, the others in the order of the row's parameters.
LABEL_KEYS: tuple[str, ...] = tuple(_DOC["label_keys"])


def counter(key: str) -> CounterSpec | None:
    """The declaration of one counter (its own, else its prefix family's), None for a key the
    schema does not know."""
    family = (s for prefix, s in COUNTER_PREFIXES.items() if key.startswith(prefix))
    return COUNTERS.get(key) or next(family, None)


def direction_of(key: str) -> str | None:
    spec = counter(key)
    return spec.direction if spec else None


def is_seconds(key: str) -> bool:
    spec = counter(key)
    return spec is not None and spec.unit == "s"


# A counter value above this is corrupt, not a measurement: the largest real counters (FLOP/s of a
# GPU, bytes of a sweep) are below 1e18. A counter never makes a row invalid (a NaN final_loss is
# what a diverged training run reports, next to a sound time); each use of one asks usable_counter.
MAX_ABS_COUNTER = 1e30


def usable_counter(value: float) -> bool:
    """A counter value that can be used as a number: finite, and not absurdly large."""
    return math.isfinite(value) and abs(value) <= MAX_ABS_COUNTER


def schema_document() -> dict[str, Any]:
    """The declaration in the JSON shape `bench --schema` prints."""
    return json.loads(json.dumps(_DOC))  # a copy: the caller may change it
