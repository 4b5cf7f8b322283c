"""What a row of a bench file is: sound (it meets the declared JSON Schema), invalid (why, naming
the field and its value as read), or an error row, skipped for lack of room or failed.

The schema (`json_schema()`) is generated from the counter declaration in schema.py, the one
`bench --schema` is tested against, and the row-validity limits below; the jsonschema library
checks rows against it (docs/input-policy.md).
"""

from __future__ import annotations

import functools
import json
import math
import re
from typing import Any, Callable, Hashable, Iterable, Iterator, TypeVar

from . import schema
from .json_values import as_read, is_number

# Seconds in each time_unit Google Benchmark writes; any other unit makes a row invalid.
TIME_UNIT_TO_S: dict[str, float] = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}

# A row whose error message starts with one of these did not run because the machine has no room
# for it, not because anything is wrong: bench reports "does not fit on chip: needs X bytes of
# shared memory, Y available (...)" for a fused training net that one thread block cannot hold,
# and "does not fit in device memory: needs X bytes, Y of Z bytes free" for a size beyond the
# GPU's free memory; "not supported on this machine: ..." for a path the CPU or its libraries lack
# (a trainer's AVX2 small-matrix path, bf16 products without cblas_sbgemm). Such rows are
# *skipped*; every other error row *failed*. tools/gpu-check counts rows with this same rule (it
# calls `python -m gpubench_tools --errors`).
SKIP_PREFIXES: tuple[str, ...] = (
    "does not fit on chip",
    "does not fit in device memory",
    "not supported on this machine",
)


def skip_reason(message: str | None) -> str | None:
    """The skip prefix an error message starts with (the reason a row was skipped), or None
    when the message is a failure (or there is no message)."""
    if message is None:
        return None
    return next((p for p in SKIP_PREFIXES if message.startswith(p)), None)


_Item = TypeVar("_Item")
_Reason = TypeVar("_Reason", bound=Hashable)


def group_reasons(
    items: Iterable[_Item], reason: Callable[[_Item], _Reason]
) -> list[tuple[_Reason, list[_Item]]]:
    """Items (rows, benchmarks) with the same reason together, in order of first appearance:
    [(reason, items)]. Every tool says one line per reason, not one per row: a CPU-only run skips
    every bf16 row for one reason."""
    groups: dict[_Reason, list[_Item]] = {}
    for item in items:
        groups.setdefault(reason(item), []).append(item)
    return list(groups.items())


# The row-validity rule, the same for every tool: a row whose numbers cannot be a measurement is
# *invalid*. It is reported as such (next to failed and skipped rows) and never used as a time.
# A time per iteration above MAX_TIME_S (about 11.6 days) or an iteration count above
# MAX_ITERATIONS is a corrupt value, not a slow benchmark. Counters do not make a row invalid: a
# NaN final_loss is what a diverged training run reports, next to a sound time; they are kept as
# read, and each use of a counter asks schema.usable_counter.
MAX_TIME_S = 1e6
MAX_ITERATIONS = 1e15
MAX_REPETITION_INDEX = 1e6
TIMES = ("real_time", "cpu_time")


# --- the declared schema ------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a bench file, generated from the counter declaration
    in schema.py (the one `bench --schema` is tested against) and the row-validity limits above.

    A row that reports an error is judged by its message (Google Benchmark writes 0 times for
    it); every other row needs its name, run type, iterations, both times and their unit. Times and
    iterations must be finite ("finite", the one keyword added to JSON Schema: standard JSON has
    no NaN, Google Benchmark and Python write it), not negative, not 0 in an iteration row that
    ran, and at most MAX_TIME_S seconds in their unit. Declared counters must be numbers (NaN
    included: a diverged loss is a result); other keys are free.
    """
    number = {"type": "number"}
    measured = {"finite": True, "minimum": 0}  # a count or time: finite, not negative
    counters = {key: number for key in schema.COUNTERS}
    counters["threads"] = number  # Google Benchmark's thread count, or the counter of that name
    row = {
        "type": "object",
        "required": ["name"],
        "properties": {
            **counters,
            "name": {"type": "string", "minLength": 1},
            "run_name": {"type": "string", "minLength": 1},
            "run_type": {"enum": ["iteration", "aggregate"]},
            "family_index": {"type": "integer"},
            "per_family_instance_index": {"type": "integer"},
            "repetitions": {"type": "integer", "minimum": 0},
            "repetition_index": {"type": "integer", **measured, "maximum": MAX_REPETITION_INDEX},
            "iterations": {"type": "number", **measured, "maximum": MAX_ITERATIONS},
            **{key: {"type": "number", **measured} for key in TIMES},
            "time_unit": {"enum": list(TIME_UNIT_TO_S)},
            "label": {"type": "string"},
            "aggregate_name": {"type": "string"},
            "aggregate_unit": {"enum": ["time", "percentage"]},
            "error_occurred": {"type": "boolean"},
            "error_message": {"type": "string"},
        },
        "patternProperties": {
            "^" + re.escape(prefix): number for prefix in schema.COUNTER_PREFIXES
        },
        "if": {"required": ["error_occurred"], "properties": {"error_occurred": {"const": True}}},
        "then": {"required": ["error_message"]},
        "else": _measured_row(),
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "bench JSON (Google Benchmark --benchmark_out_format=json)",
        "type": "object",
        "required": ["benchmarks"],
        "properties": {
            "context": {"type": "object"},
            "benchmarks": {"type": "array", "items": {"$ref": "#/$defs/row"}},
        },
        "$defs": {"row": row},
    }


def _measured_row() -> dict[str, Any]:
    """What a row that reports no error needs: its run name, run type, iterations, both times and
    their unit; times above 0 in an iteration row that ran, and at most MAX_TIME_S seconds in
    their unit (a "cv" aggregate, marked aggregate_unit=percentage, is a ratio, not a time)."""
    not_a_ratio = {"not": {"const": "percentage"}}  # a "cv" aggregate's "times" are ratios
    unit_limits = [
        _when(
            {"time_unit": {"const": unit}, "aggregate_unit": not_a_ratio},
            {key: {"maximum": MAX_TIME_S / scale} for key in TIMES},
            required=["time_unit"],
        )
        for unit, scale in TIME_UNIT_TO_S.items()
    ]
    ran_iterations = {"type": "number", "exclusiveMinimum": 0}
    ran = _when(
        {"run_type": {"const": "iteration"}, "iterations": ran_iterations},
        {key: {"exclusiveMinimum": 0} for key in TIMES},
    )
    return {
        "required": ["run_name", "run_type", "iterations", *TIMES, "time_unit"],
        "allOf": [ran, *unit_limits],
    }


def _when(
    properties: dict[str, Any], then: dict[str, Any], required: list[str] | None = None
) -> dict[str, Any]:
    """A rule of a row: where it has the keys `required` (all of `properties` unless given) and
    they meet `properties`, its properties meet `then`."""
    required = list(properties) if required is None else required
    return {"if": {"required": required, "properties": properties}, "then": {"properties": then}}


def _finite(validator: Any, wanted: Any, instance: Any, subschema: Any) -> Iterator[Any]:
    from jsonschema import ValidationError

    if wanted and is_number(instance) and not math.isfinite(instance):
        yield ValidationError(f"{instance!r} is not a finite number")


@functools.lru_cache(maxsize=1)
def _validator() -> Any:
    """The validator of one row. Imported here: jsonschema is only needed to read."""
    from jsonschema import Draft202012Validator, validators

    Validator = validators.extend(Draft202012Validator, {"finite": _finite})
    return Validator(json_schema()["$defs"]["row"])


_TYPE_WORDS = {
    "number": "a number",
    "integer": "an integer",
    "string": "a string",
    "boolean": "true or false",
    "object": "an object",
    "array": "a list",
}
# Field order in which a row's problems are named (the first one is the one said).
_FIELD_ORDER = (
    "name run_name run_type error_occurred error_message iterations real_time cpu_time time_unit "
    "repetition_index aggregate_unit"
).split()


# Keywords that say a field is missing or of the wrong kind (the row is *malformed*); the others
# (finite, minimum, maximum, ...) say a value cannot be a measurement (the row is *unsound*).
_FORM_KEYWORDS = frozenset({"required", "type", "enum", "const", "minLength"})


def _problem(error: Any) -> tuple[int, str, str, bool]:
    """(order, field, one line, malformed) of one schema violation of a row."""
    malformed = error.validator in _FORM_KEYWORDS
    if error.validator == "required":
        missing = [k for k in error.validator_value if k not in error.instance]
        key = min(missing, key=_order)
        return _order(key), key, f"{key} is missing", True
    key = str(error.path[0]) if error.path else "row"
    value = as_read(error.instance)
    expected = {
        "type": lambda: "expected " + _TYPE_WORDS.get(error.validator_value, "another type"),
        "enum": lambda: "expected one of " + ", ".join(map(str, error.validator_value)),
        "const": lambda: f"expected {json.dumps(error.validator_value)}",
        "finite": lambda: "not a finite number",
        "minimum": lambda: f"below {error.validator_value:g}",
        "exclusiveMinimum": lambda: (
            "0 in a row that ran iterations"
            if error.validator_value == 0 and key in TIMES and error.instance == 0
            else f"not above {error.validator_value:g}"
        ),
        "maximum": lambda: (
            f"more than {MAX_TIME_S:g} s" if key in TIMES else f"above {error.validator_value:g}"
        ),
        "minLength": lambda: "empty",
    }.get(error.validator, lambda: error.message)()
    return _order(key), key, f"{key} is {value} ({expected})", malformed


def _order(key: str) -> int:
    return _FIELD_ORDER.index(key) if key in _FIELD_ORDER else len(_FIELD_ORDER)


def first_problem(seen: dict[str, Any]) -> tuple[str, bool] | None:
    """(reason, malformed) of the first problem of a row (its keys as read), None for a sound row
    (see json_schema): the reason names the first field in question and its value as read."""
    # A missing or mistyped field first: such a row is malformed whatever else it holds.
    problems = sorted(
        (_problem(e) for e in _validator().iter_errors(seen)), key=lambda p: (not p[3], p[:3])
    )
    return (problems[0][2], problems[0][3]) if problems else None
