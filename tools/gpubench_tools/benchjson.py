"""The one reader of the Google Benchmark JSON that the `bench` binary writes.

Every tool reads bench files here (`load_report`, or `read_file` for a verdict per file without an
exception), and nowhere else; `table.load_table` and `table.file_rows` are its front for the tools
that work on pandas tables. A file is validated against one declared JSON Schema (`json_schema()`,
generated from the counter declaration in schema.py that `bench --schema` is tested against, with
the row-validity limits below) by the jsonschema library, and classified:

- per file: *complete*, *cut off* (a prefix of a bench document: a run whose writer stopped
  halfway, its complete rows recovered; or a whole document whose context says the run was
  interrupted by a signal: `interrupted`, `benchmarks_finished`, `benchmarks_selected`) or *not a
  bench file* (unreadable, not UTF-8, empty, not JSON, JSON of
  another shape, nested deeper than any bench file, or a document followed by other bytes);
- per row: *valid*, *skipped* (its reason), *failed* (its message) or *invalid* (the field named
  and its value shown as read: `time_unit is missing`, `flop is "12" (expected a number)`,
  `real_time is NaN (not a finite number)`). Nothing missing or mistyped is given a default.

What each tool then does with each class is policy.py's table (docs/input-policy.md).
It reads JSON only and never touches the C++ code.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Iterable, Iterator, Sequence, TypeVar

from . import schema
from .cli import EXIT_OK, ArgumentParser, UnusableInput, add_debug_flag, program_name, run_main

__all__ = [
    "BenchJsonError",
    "BenchRow",
    "BenchReport",
    "Interruption",
    "INTERRUPT_SIGNALS",
    "INTERRUPT_KEYS",
    "COMPLETE",
    "CUT_OFF",
    "NOT_BENCH",
    "VALID",
    "SKIPPED",
    "FAILED",
    "INVALID",
    "MAX_DEPTH",
    "as_read",
    "loads_as_read",
    "interruption_line",
    "cut_off_lines",
    "json_schema",
    "load_report",
    "read_file",
    "parse_label",
    "iteration_rows",
    "GBENCH_KEYS",
    "SKIP_PREFIXES",
    "skip_reason",
    "describe_errors",
    "describe_invalid",
    "invalid_rows",
    "invalid_reason",
    "group_reasons",
    "MAX_TIME_S",
    "MAX_ITERATIONS",
    "MAX_ABS_COUNTER",
    "usable_counter",
    "QUIET",
    "DISTURBED",
    "UNKNOWN",
    "CONDITION_STATES",
    "DISTURBED_BY",
    "CONDITION_FIGURES",
    "condition_of",
    "disturbance_causes",
    "describe_conditions",
    "disturbance_causes_line",
    "unknown_conditions_note",
]

# What a file is (read_file's verdict per file).
COMPLETE, CUT_OFF, NOT_BENCH = "complete", "cut off", "not a bench file"
# What a row is.
VALID, SKIPPED, FAILED, INVALID = "valid", "skipped", "failed", "invalid"

# Keys Google Benchmark writes itself; every other numeric top-level key is a user counter.
GBENCH_KEYS: frozenset[str] = frozenset(
    {
        "name",
        "family_index",
        "per_family_instance_index",
        "run_name",
        "run_type",
        "repetitions",
        "repetition_index",
        "threads",
        "iterations",
        "real_time",
        "cpu_time",
        "time_unit",
        "label",
        "aggregate_name",
        "aggregate_unit",
        "error_occurred",
        "error_message",
    }
)

_TIME_UNIT_TO_S: dict[str, float] = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}

# A row whose error message starts with one of these did not run because the machine has no room
# for it, not because anything is wrong: bench reports "does not fit on chip: needs X bytes of
# shared memory, Y available (...)" for a fused training net that one thread block cannot hold,
# and "does not fit in device memory: needs X bytes, Y of Z bytes free" for a size beyond the
# GPU's free memory; "not supported on this machine: ..." for a path the CPU or its libraries lack
# (a trainer's AVX2 small-matrix path, bf16 products without cblas_sbgemm). Such rows are
# *skipped*; every other error row *failed*. tools/gpu-check counts rows with this same rule (it
# calls `python -m gpubench_tools.benchjson --errors`).
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


# The row-validity rule, the same for every tool: a row whose numbers cannot be a measurement is
# *invalid*. It is reported as such (next to failed and skipped rows) and never used as a time.
# A time per iteration above MAX_TIME_S (about 11.6 days) or an iteration count above
# MAX_ITERATIONS is a corrupt value, not a slow benchmark. Counters do not make a row invalid: a
# NaN final_loss is what a diverged training run reports, next to a sound time; they are kept as
# read, and each use of a counter asks usable_counter (the largest real counters, FLOP/s of a GPU
# and bytes of a sweep, are below 1e18; MAX_ABS_COUNTER is far above them).
MAX_TIME_S = 1e6
MAX_ITERATIONS = 1e15
MAX_ABS_COUNTER = 1e30
MAX_REPETITION_INDEX = 1e6


# Deeper than any bench file (its deepest value is a cache entry of the context, 4 levels down):
# a file nested beyond this is not ours, and reading it on would only recurse.
MAX_DEPTH = 32
_TIMES = ("real_time", "cpu_time")


class _ReadFloat(float):
    """A number as a float, with the text it was read from: an invalid value is shown as the
    file wrote it (`1e30`, `NaN`, `-Infinity`), never as Python prints it."""

    text: str

    def __new__(cls, value: float, text: str) -> "_ReadFloat":
        number = super().__new__(cls, value)
        number.text = text
        return number


def _read_float(text: str) -> _ReadFloat:
    return _ReadFloat(float(text), text)


def _read_constant(text: str) -> _ReadFloat:
    return _ReadFloat(float(text.replace("Infinity", "inf")), text)


def loads_as_read(text: str) -> Any:
    """A JSON document (a config file) with every number that has a fraction or an exponent kept
    with its text, and NaN / Infinity accepted as Python writes them: so that a message about a
    value can quote it as the file has it (as_read)."""
    return json.loads(text, parse_float=_read_float, parse_constant=_read_constant)


def as_read(value: Any, limit: int = 40) -> str:
    """A value of a file as the file wrote it, in JSON (`"12"` for a string, `NaN`, `null`,
    `1e30`), cut to `limit` characters: for one line that names a field and its value."""
    if isinstance(value, _ReadFloat):
        text = value.text
    elif isinstance(value, (list, _Pairs)) or isinstance(value, dict):
        kind = "an object" if isinstance(value, (_Pairs, dict)) else "a list"
        return f"{kind} of {len(value)} item{'' if len(value) == 1 else 's'}"
    else:
        text = json.dumps(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def usable_counter(value: float) -> bool:
    """A counter value that can be used as a number: finite, and not absurdly large."""
    return math.isfinite(value) and abs(value) <= MAX_ABS_COUNTER


# --- an interrupted run ---------------------------------------------------------------------------

# A bench stopped by one of these signals writes the benchmarks it finished as one whole document
# and says so in its context (docs/running-bench.md): the signal's name, the benchmarks whose
# repetitions all finished and were written, and the benchmarks the filter selected.
INTERRUPT_SIGNALS: tuple[str, ...] = (
    "SIGINT",
    "SIGTERM",
    "SIGHUP",
    "SIGXCPU",
    "SIGUSR1",
    "SIGUSR2",
)
INTERRUPT_KEYS: tuple[str, ...] = ("interrupted", "benchmarks_finished", "benchmarks_selected")
# More benchmarks than one run can select: a count above it is a corrupt value.
MAX_BENCHMARKS = 1_000_000_000


@dataclass(frozen=True)
class Interruption:
    """What the context of an interrupted run says: the signal and how far the run got."""

    signal: str
    finished: int
    selected: int

    @property
    def missing(self) -> int:
        """Selected benchmarks the run did not finish (none of their rows is in the file)."""
        return self.selected - self.finished

    def __str__(self) -> str:
        return (
            f"interrupted by {self.signal} after {self.finished} of "
            f"{self.selected} benchmark{'' if self.selected == 1 else 's'}"
        )


def _interruption(path: str, context: Any) -> Interruption | None:
    """The interruption a file's context (its pairs as read) records, None where it has none of
    the keys; BenchJsonError naming the key and its value as written where a key is missing,
    repeated or of the wrong kind: a file that says it was interrupted must say how far."""
    pairs = list(context) if isinstance(context, _Pairs) else []
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in INTERRUPT_KEYS:
            if key in found:
                raise BenchJsonError(path, f'context "{key}" appears more than once')
            found[key] = value
    if not found:
        return None
    for key in INTERRUPT_KEYS:
        if key not in found:
            present = next(k for k in INTERRUPT_KEYS if k in found)
            raise BenchJsonError(
                path,
                f'context has "{present}" but no "{key}": an interrupted run names all of '
                + ", ".join(f'"{k}"' for k in INTERRUPT_KEYS),
            )
    signal = found["interrupted"]
    if signal not in INTERRUPT_SIGNALS:
        raise BenchJsonError(
            path,
            f'context "interrupted" is {as_read(signal)} (expected one of '
            + ", ".join(f'"{s}"' for s in INTERRUPT_SIGNALS)
            + ")",
        )
    counts: dict[str, int] = {}
    for key in INTERRUPT_KEYS[1:]:
        value = found[key]
        if type(value) is not int or not 0 <= value <= MAX_BENCHMARKS:
            raise BenchJsonError(
                path,
                f'context "{key}" is {as_read(value)} (expected an integer from 0 to '
                f"{MAX_BENCHMARKS})",
            )
        counts[key] = value
    finished, selected = counts["benchmarks_finished"], counts["benchmarks_selected"]
    if finished > selected:
        raise BenchJsonError(
            path,
            f'context "benchmarks_finished" is {as_read(found["benchmarks_finished"])}, more than '
            f'"benchmarks_selected" {as_read(found["benchmarks_selected"])}',
        )
    return Interruption(signal, finished, selected)


# --- the conditions of a repetition -------------------------------------------------------------

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
CONDITION_STATES: tuple[str, ...] = (DISTURBED, QUIET, UNKNOWN)

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
    for key in keys:
        value = counters.get(key)
        if value is not None and usable_counter(value):
            return value
    return None


def condition_of(counters: dict[str, float]) -> str:
    """DISTURBED, QUIET or UNKNOWN for one row's counters (see CONDITION_STATES)."""
    value = counters.get("disturbed")
    if value is None or not math.isfinite(value):
        return UNKNOWN
    return DISTURBED if value > 0 else QUIET


def disturbance_causes(counters: dict[str, float]) -> list[str]:
    """The parts of the rule that fired for a disturbed row, in words ("waited for a CPU while
    other processes ran"); ["cause not recorded"] where `disturbed_by` is absent or unreadable."""
    bits = _bits(counters)
    if not bits:
        return ["cause not recorded"]
    return [DISTURBED_BY[bit][0] if bit in DISTURBED_BY else f"rule part {bit}" for bit in bits]


def _bits(counters: dict[str, float]) -> list[int]:
    """The set bits of `disturbed_by`, [] where it is absent, not finite or not above 0."""
    value = counters.get("disturbed_by")
    if value is None or not usable_counter(value) or value <= 0:
        return []
    number = int(value)
    return [1 << i for i in range(number.bit_length()) if number >> i & 1]


def disturbance_causes_line(rows: Iterable[dict[str, float]]) -> str:
    """What disturbed the disturbed repetitions among the counters of `rows`, by how much: "3
    waited for a CPU while other processes ran, up to 1.02 core; 1 lost CPU time to the
    hypervisor (steal), up to 0.20 core"; "" where none is disturbed."""
    disturbed = [c for c in rows if condition_of(c) == DISTURBED]
    parts = []
    for bit, (words, figures) in DISTURBED_BY.items():
        hit = [c for c in disturbed if bit in _bits(c)]
        if not hit:
            continue
        values = [v for c in hit if (v := _by_how_much(c, figures)) is not None]
        most = f", up to {max(values):.2f} core" if values else ""
        parts.append(f"{len(hit)} {words}{most}")
    unexplained = len([c for c in disturbed if not _bits(c)])
    if unexplained:
        parts.append(f"{unexplained} without a recorded cause")
    return "; ".join(parts)


def describe_conditions(rows: Iterable[dict[str, float]]) -> str | None:
    """One line on the disturbed repetitions among the counters of `rows` (measured repetitions),
    None when none is disturbed: "3 of 40 repetitions were measured while disturbed (3 waited
    for a CPU while other processes ran, up to 1.02 core)"."""
    counters = list(rows)
    n = sum(1 for c in counters if condition_of(c) == DISTURBED)
    if not n:
        return None
    total = len(counters)
    verb = "was" if n == 1 else "were"
    return (
        f"{n} of {total} repetition{'' if total == 1 else 's'} {verb} measured while disturbed "
        f"({disturbance_causes_line(counters)})"
    )


def unknown_conditions_note(what: str) -> str:
    """The one line a tool says once for repetitions without condition counters (`what`: "2 files",
    "the baseline", ...)."""
    return (
        f"conditions unknown: {what} carry no condition counters (written by a bench older than "
        "them, or with GPUBENCH_CONDITIONS=off), so whether the machine was quiet is not known; "
        "used as measured"
    )


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
    counters = {key: number for key in schema.COUNTERS}
    counters["threads"] = number  # Google Benchmark's thread count, or the counter of that name
    unit_limits = [
        {
            "if": {
                "required": ["time_unit"],
                "properties": {
                    "time_unit": {"const": unit},
                    "aggregate_unit": {"not": {"const": "percentage"}},
                },
            },
            "then": {"properties": {key: {"maximum": MAX_TIME_S / scale} for key in _TIMES}},
        }
        for unit, scale in _TIME_UNIT_TO_S.items()
    ]
    ran = {
        "if": {
            "required": ["run_type", "iterations"],
            "properties": {
                "run_type": {"const": "iteration"},
                "iterations": {"type": "number", "exclusiveMinimum": 0},
            },
        },
        "then": {"properties": {key: {"exclusiveMinimum": 0} for key in _TIMES}},
    }
    measured = {
        "required": ["run_name", "run_type", "iterations", *_TIMES, "time_unit"],
        "allOf": [ran, *unit_limits],
    }
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
            "repetition_index": {
                "type": "integer",
                "finite": True,
                "minimum": 0,
                "maximum": MAX_REPETITION_INDEX,
            },
            "iterations": {
                "type": "number",
                "finite": True,
                "minimum": 0,
                "maximum": MAX_ITERATIONS,
            },
            **{key: {"type": "number", "finite": True, "minimum": 0} for key in _TIMES},
            "time_unit": {"enum": list(_TIME_UNIT_TO_S)},
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
        "else": measured,
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


def _finite(validator: Any, wanted: Any, instance: Any, subschema: Any) -> Iterator[Any]:
    from jsonschema import ValidationError

    if wanted and _is_number(instance) and not math.isfinite(instance):
        yield ValidationError(f"{instance!r} is not a finite number")


@functools.lru_cache(maxsize=1)
def _validators() -> tuple[Any, Any]:
    """(file validator, row validator). Imported here: jsonschema is only needed to read."""
    from jsonschema import Draft202012Validator, validators

    Validator = validators.extend(Draft202012Validator, {"finite": _finite})
    doc = json_schema()
    top = {k: v for k, v in doc.items() if k != "$defs"}
    top["properties"] = {"context": {"type": "object"}, "benchmarks": {"type": "array"}}
    return Validator(top), Validator(doc["$defs"]["row"])


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
            if error.validator_value == 0 and key in _TIMES and error.instance == 0
            else f"not above {error.validator_value:g}"
        ),
        "maximum": lambda: (
            f"more than {MAX_TIME_S:g} s" if key in _TIMES else f"above {error.validator_value:g}"
        ),
        "minLength": lambda: "empty",
    }.get(error.validator, lambda: error.message)()
    return _order(key), key, f"{key} is {value} ({expected})", malformed


def _order(key: str) -> int:
    return _FIELD_ORDER.index(key) if key in _FIELD_ORDER else len(_FIELD_ORDER)


def invalid_reason(seen: dict[str, Any]) -> str | None:
    """Why one row (its keys as read) is not a sound bench row, naming the first field in
    question and its value as read; None for a sound row (see json_schema)."""
    found = _first_problem(seen)
    return None if found is None else found[0]


def _first_problem(seen: dict[str, Any]) -> tuple[str, bool] | None:
    """(reason, malformed) of the first problem of a row, None for a sound row."""
    shape = _shape(seen)
    if _VALID_SHAPES.get(shape):
        return None
    # A missing or mistyped field first: such a row is malformed whatever else it holds.
    problems = sorted(
        (_problem(e) for e in _validators()[1].iter_errors(seen)), key=lambda p: (not p[3], p[:3])
    )
    if len(_VALID_SHAPES) < 100_000:  # bounded: a hostile file cannot grow it without end
        _VALID_SHAPES[shape] = not problems
    return (problems[0][2], problems[0][3]) if problems else None


@functools.lru_cache(maxsize=1)
def _limits() -> tuple[tuple[float, ...], frozenset[str]]:
    """Every number the schema compares a value with, and the keys whose string values it
    compares (enum, const): what a row's validity can depend on."""
    numbers: set[float] = {0.0}
    strings: set[str] = set()
    stack: list[Any] = [json_schema()]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
                    numbers.add(float(value))
                if key == "properties":
                    for name, sub in value.items():
                        if isinstance(sub, dict) and ({"enum", "const"} & set(sub)):
                            strings.add(name)
                stack.append(value)
        elif isinstance(node, list):
            stack.extend(node)
    return tuple(sorted(numbers)), frozenset(strings)


def _shape(seen: dict[str, Any]) -> tuple[Any, ...]:
    """The row with every value replaced by what the schema's keywords can tell apart: for a
    number its type, whether it is finite and an integer, and where it lies among the schema's
    limits; for a string its value where an enum or const compares it, else whether it is empty.
    Rows of one shape are all valid or all invalid, so validity is computed once per shape (a
    file's thousand rows have a handful of shapes), and the messages only for invalid rows."""
    limits, compared = _limits()

    def of(key: str, value: Any) -> Any:
        if isinstance(value, bool) or value is None:
            return value
        if isinstance(value, (int, float)):
            finite = math.isfinite(value)
            where = tuple((value > t) - (value < t) for t in limits) if value == value else ()
            integer = isinstance(value, int) or (finite and float(value).is_integer())
            return (type(value) is int, finite, integer, where)
        if isinstance(value, str):
            return value if key in compared else bool(value)
        return type(value).__name__ if not isinstance(value, _Pairs) else "object"

    return tuple((key, of(key, value)) for key, value in seen.items())


# Shape of a row (see _shape) -> whether the validator found such a row valid.
_VALID_SHAPES: dict[tuple[Any, ...], bool] = {}


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


class BenchJsonError(Exception):
    """A file that is not usable bench JSON. str() is one line naming the file and the problem."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


@dataclass
class BenchRow:
    name: str
    run_name: str
    run_type: str
    aggregate_name: str | None
    repetition_index: int | None
    iterations: int
    real_time_s: float
    cpu_time_s: float
    label: str
    labels: dict[str, str]
    counters: dict[str, float]
    error: str | None
    # Why the row is not a sound bench row (see invalid_reason), None for a sound row.
    invalid: str | None = None
    # For an invalid row: a field is missing or of the wrong type (else a value is unsound).
    malformed: bool = False

    @property
    def status(self) -> str:
        """VALID, SKIPPED, FAILED or INVALID."""
        if self.invalid is not None:
            return INVALID
        if self.error is not None:
            return SKIPPED if skip_reason(self.error) is not None else FAILED
        return VALID

    @property
    def conditions(self) -> str:
        """DISTURBED, QUIET or UNKNOWN: what the harness's rule said of this repetition."""
        return condition_of(self.counters)

    @property
    def usable(self) -> bool:
        """A measurement: no error and sound values."""
        return self.status == VALID

    @property
    def skipped(self) -> bool:
        """Did not run for lack of room on the machine (see SKIP_PREFIXES): not a failure."""
        return self.status == SKIPPED

    @property
    def failed(self) -> bool:
        """Reported an error that is not a skip: a wrong result, a CUDA error, ..."""
        return self.status == FAILED


@dataclass
class BenchReport:
    path: str
    context: dict[str, Any]
    rows: list[BenchRow]
    recovered_from_truncation: bool = False
    warnings: list[str] = field(default_factory=list)
    # What the context says of a run stopped by a signal (a whole document, cut off all the same).
    interrupted: Interruption | None = None

    @property
    def state(self) -> str:
        """COMPLETE, or CUT_OFF for a file of a run that did not finish: one its writer left
        halfway (its complete rows recovered) or one whose context says it was interrupted."""
        cut = self.recovered_from_truncation or self.interrupted is not None
        return CUT_OFF if cut else COMPLETE

    @property
    def cut_off(self) -> str | None:
        """Why the file is cut off, in words ("interrupted by SIGTERM after 32 of 46 benchmarks",
        "truncated after 12 complete rows"), None for a complete file."""
        parts = []
        if self.interrupted is not None:
            parts.append(str(self.interrupted))
        if self.recovered_from_truncation:
            parts.append(f"truncated after {len(self.rows)} complete rows")
        return ", then ".join(parts) or None


def parse_label(label: str) -> dict[str, str]:
    """Split "dtype=fp32 shape=square" into {"dtype": "fp32", "shape": "square"}.

    A bare word without '=' maps to "" so that nothing in the label is silently lost.
    """
    out: dict[str, str] = {}
    for token in label.split():
        key, sep, value = token.partition("=")
        if key:
            out[key] = value if sep else ""
    return out


class _Pairs(list):
    """Marker type: a JSON object kept as its ordered (key, value) pairs.

    Google Benchmark writes its own "threads" key and then, for benchmarks that define a
    "threads" user counter, the same key again. A plain dict would keep only the last one,
    so the loader sees the pairs and decides which is which.
    """


def _pairs_hook(pairs: list[tuple[str, Any]]) -> Any:
    return _Pairs(pairs)


def _plain_number(value: Any) -> Any:
    return float(value) if isinstance(value, _ReadFloat) else value


def _to_plain(value: Any) -> Any:
    """Turn _Pairs objects (used outside rows, e.g. the context) back into dicts, and numbers
    read with their text back into plain floats."""
    if isinstance(value, _Pairs):
        return {k: _to_plain(v) for k, v in value}
    if isinstance(value, list):
        return [_to_plain(v) for v in value]
    return _plain_number(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _make_row(path: str, index: int, obj: Any) -> BenchRow:
    """One row as read; a row that breaks the schema is an INVALID row (never an exception),
    named by its name where it has one, else by its position."""
    if not isinstance(obj, _Pairs):
        what = f"row {index}"
        row = _invalid_row(what, f"row {index} is {as_read(obj)}, expected an object")
        row.malformed = True
        return row
    seen: dict[str, Any] = {}
    counters: dict[str, float] = {}
    for key, value in obj:
        if key == "threads" and "threads" in seen:
            # Second "threads": the user counter (first one is Google Benchmark's thread count).
            if _is_number(value):
                counters["threads"] = float(value)
            continue
        seen[key] = value
        if key not in GBENCH_KEYS and _is_number(value):
            # kept with its text where it has one: a message quotes it as written (as_read)
            counters[key] = value if isinstance(value, _ReadFloat) else float(value)
        elif key == "threads" and isinstance(value, float):
            # Google Benchmark writes its thread count as an integer and user counters as
            # floats, so a lone float "threads" (a file rewritten by a JSON library that kept
            # only the last duplicate key) is the counter.
            counters["threads"] = float(value)

    if "blas_threads" in counters:
        # The OpenBLAS thread count of a CPU row. Files written before it had this name carry it
        # as a second "threads" key (handled above); the tools read it as "threads".
        counters["threads"] = counters["blas_threads"]

    name = seen.get("name")
    name = name if isinstance(name, str) and name else f"row {index}"
    found = _first_problem(seen)
    if found is not None:
        invalid, malformed = found
        # Never a time: a NaN, a missing unit or an absurd value must not reach a chart, a store
        # or an upload. Its counters go too: they were measured with the same broken run.
        row = _invalid_row(name, invalid)
        row.malformed = malformed
        run_name = seen.get("run_name")
        row.run_name = run_name if isinstance(run_name, str) and run_name else name
        run_type = seen.get("run_type")
        row.run_type = run_type if run_type in ("iteration", "aggregate") else "iteration"
        label = seen.get("label")
        row.label = label if isinstance(label, str) else ""
        row.labels = parse_label(row.label)
        return row
    error: str | None = None
    if seen.get("error_occurred"):
        error = seen["error_message"]
    unit = seen.get("time_unit")
    # A "cv" aggregate is a ratio, not a time: Google Benchmark marks it aggregate_unit=percentage.
    scale = (
        1.0 if seen.get("aggregate_unit") == "percentage" else _TIME_UNIT_TO_S.get(unit, math.nan)
    )

    def seconds(key: str) -> float:
        value = seen.get(key)
        return float(value) * scale if _is_number(value) and math.isfinite(value) else math.nan

    label = seen.get("label", "")
    rep = seen.get("repetition_index")
    agg = seen.get("aggregate_name")
    iterations = seen.get("iterations", 0)
    return BenchRow(
        name=name,
        run_name=seen.get("run_name", name),
        run_type=seen.get("run_type", "iteration"),
        aggregate_name=agg,
        repetition_index=int(rep) if _is_number(rep) else None,
        iterations=int(iterations) if _is_number(iterations) else 0,
        real_time_s=seconds("real_time"),
        cpu_time_s=seconds("cpu_time"),
        label=label,
        labels=parse_label(label),
        counters=counters,
        error=error,
        invalid=None,
    )


def _invalid_row(name: str, reason: str) -> BenchRow:
    nan = math.nan
    return BenchRow(name, name, "iteration", None, None, 0, nan, nan, "", {}, {}, None, reason)


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


# A value a writer was interrupted inside: the start of a literal or of a number.
_LITERALS = ("true", "false", "null", "NaN", "Infinity", "-Infinity")
_NUMBER_PREFIX = re.compile(r"-?(\d+(\.\d*)?([eE][-+]?\d*)?)?")


def _cut_off_here(text: str, error: json.JSONDecodeError) -> bool:
    """Whether a parse error is the end of the text arriving, not a mistake: what is left
    from the error on is empty, a string still open, or the start of a literal or number."""
    rest = text[error.pos :].rstrip(" \t\r\n")
    if not rest:
        return True
    if error.msg.startswith("Unterminated string"):
        return re.fullmatch(r'"(?:[^"\\]|\\.)*\\?', rest, re.DOTALL) is not None
    if any(lit.startswith(rest) for lit in _LITERALS):
        return True
    return _NUMBER_PREFIX.fullmatch(rest) is not None or rest in ("-",)


def _recover_truncated(text: str) -> tuple[Any, list[Any]] | None:
    """Parse the complete prefix of a file whose writer was interrupted.

    Google Benchmark writes the context first and then one row object at a time, so an
    interrupted run leaves `{"context": {...}, "benchmarks": [ {..}, {..}, {.` . Returns
    (context as read, complete row objects), or None when the text does not look like such a
    prefix.
    """
    decoder = json.JSONDecoder(
        object_pairs_hook=_pairs_hook, parse_float=_read_float, parse_constant=_read_constant
    )
    context: Any = _Pairs()
    ctx_at = text.find('"context"')
    bench_at = text.find('"benchmarks"')
    if bench_at < 0:
        if ctx_at >= 0:
            return _Pairs(), []  # cut off inside the context: a run that wrote no row at all
        return None
    if 0 <= ctx_at < bench_at:
        colon = _skip_ws(text, ctx_at + len('"context"'))
        if colon < len(text) and text[colon] == ":":
            try:
                context, _ = decoder.raw_decode(text, _skip_ws(text, colon + 1))
            except json.JSONDecodeError:
                return None
    pos = _skip_ws(text, bench_at + len('"benchmarks"'))
    if pos >= len(text) or text[pos] != ":":
        return None
    pos = _skip_ws(text, pos + 1)
    if pos >= len(text) or text[pos] != "[":
        return None
    pos += 1
    rows: list[Any] = []
    while True:
        pos = _skip_ws(text, pos)
        if pos < len(text) and text[pos] == ",":
            pos = _skip_ws(text, pos + 1)
        if pos >= len(text) or text[pos] == "]":
            break
        try:
            obj, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            break  # the incomplete last row
        rows.append(obj)
        pos = end
    return (context if isinstance(context, _Pairs) else _Pairs()), rows


def _depth(doc: Any) -> int:
    """How deeply lists and objects nest in a parsed document (iteratively: a deep one must not
    exhaust the stack while it is measured)."""
    deepest, stack = 0, [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, list):  # _Pairs too: its items are (key, value) tuples
            deepest = max(deepest, depth)
            if depth > MAX_DEPTH:
                return depth
            for item in value:
                child = item[1] if isinstance(value, _Pairs) else item
                if isinstance(child, list):
                    stack.append((child, depth + 1))
    return deepest


def read_file(path: str) -> BenchReport | BenchJsonError:
    """One file, classified: a BenchReport (COMPLETE or CUT_OFF, every row classified) or, for
    anything that is not a bench file, the BenchJsonError saying why. Never raises for what a
    file holds: one bad file in a batch stops nothing else."""
    try:
        return _read(path)
    except BenchJsonError as error:
        return error
    except RecursionError:
        return BenchJsonError(path, f"not a bench file: nested deeper than {MAX_DEPTH} levels")


def load_report(path: str) -> BenchReport:
    """Read one bench JSON file. Raises BenchJsonError for anything that is not a bench file
    (read_file's verdict) and for a cut-off file without one complete row."""
    read = read_file(path)
    if isinstance(read, BenchJsonError):
        raise read
    return read


def _read(path: str) -> BenchReport:
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise BenchJsonError(path, f"cannot read file: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BenchJsonError(
            path, "not a text file (not valid UTF-8), expected bench JSON"
        ) from None
    if not text.strip():
        raise BenchJsonError(path, "file is empty, expected bench JSON")

    warnings: list[str] = []
    recovered = False
    try:
        doc = json.loads(
            text,
            object_pairs_hook=_pairs_hook,
            parse_float=_read_float,
            parse_constant=_read_constant,
        )
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":
            extra = len(raw) - len(text[: exc.pos].encode("utf-8"))
            nul = (
                " (NUL bytes: two writers, or a file written over)"
                if "\0" in text[exc.pos :]
                else ""
            )
            raise BenchJsonError(
                path,
                f"a complete JSON document followed by {extra} more bytes at line {exc.lineno} "
                f"column {exc.colno}{nul}: not one bench file",
            ) from None
        salvage = None
        if text.lstrip().startswith("{") and _cut_off_here(text, exc):
            salvage = _recover_truncated(text)
        if salvage is None:
            raise BenchJsonError(
                path, f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
            ) from None
        context_obj, raw_rows = salvage
        if _depth(_Pairs([("context", context_obj), ("benchmarks", raw_rows)])) > MAX_DEPTH:
            raise RecursionError
        if not raw_rows:
            raise BenchJsonError(path, "file is truncated and holds no complete benchmark row")
        recovered = True
    else:
        if _depth(doc) > MAX_DEPTH:
            raise RecursionError
        if not isinstance(doc, _Pairs):
            kind = "a list" if isinstance(doc, list) else type(doc).__name__
            if isinstance(doc, _ReadFloat):
                kind = "float"
            raise BenchJsonError(path, f"top level is {kind}, expected a JSON object")
        top = dict(doc)
        raw_rows = top.get("benchmarks")
        if not isinstance(raw_rows, list) or isinstance(raw_rows, _Pairs):
            raise BenchJsonError(
                path, "no 'benchmarks' list: not Google Benchmark JSON from the bench binary"
            )
        context_obj = top.get("context", _Pairs())
        if not isinstance(context_obj, _Pairs):
            raise BenchJsonError(path, f"'context' is {as_read(context_obj)}, expected an object")

    interrupted = _interruption(path, context_obj)
    rows = [_make_row(path, i, obj) for i, obj in enumerate(raw_rows)]
    report = BenchReport(
        path=path,
        context=_to_plain(context_obj),
        rows=rows,
        recovered_from_truncation=recovered,
        interrupted=interrupted,
    )
    report.warnings = cut_off_lines(report) + warnings
    return report


def cut_off_lines(report: BenchReport) -> list[str]:
    """What every tool says of a file whose run did not finish, one line per cause (none for a
    complete file): the interruption its context records, and the truncation of its text."""
    lines = []
    if report.interrupted is not None:
        lines.append(interruption_line(report.path, report.interrupted))
    if report.recovered_from_truncation:
        lines.append(
            f"recovered {len(report.rows)} complete benchmark rows from truncated file "
            f"{report.path}"
        )
    return lines


def interruption_line(path: str, interrupted: Interruption) -> str:
    """The one line every tool says of an interrupted run: which signal, how far it got, and
    what is missing."""
    missing = interrupted.missing
    what = (
        "every selected benchmark finished"
        if not missing
        else f"{missing} selected benchmark{' was' if missing == 1 else 's were'} not measured "
        "(no rows)"
    )
    return f"{path}: the run was {interrupted}: {what}"


def iteration_rows(report: BenchReport) -> list[BenchRow]:
    """Measured rows only: no aggregates (mean/median/...), no failed, skipped or invalid rows."""
    return [r for r in report.rows if r.run_type == "iteration" and r.usable]


def invalid_rows(report: BenchReport) -> list[BenchRow]:
    """Rows (measured or aggregate) whose values cannot be a measurement (see invalid_reason)."""
    return [row for row in report.rows if row.invalid is not None]


def describe_invalid(rows: list[BenchRow], limit: int = 3) -> str:
    """'2 rows invalid (real_time is NaN: a, b; iterations is 1e+30: c)': one line, grouped by
    reason, at most `limit` names per reason."""
    parts = []
    for reason, group in group_reasons(rows, lambda r: r.invalid or ""):
        names = ", ".join(r.name for r in group[:limit])
        more = f" and {len(group) - limit} more" if len(group) > limit else ""
        parts.append(f"{reason}: {names}{more}")
    n = len(rows)
    return f"{n} row{'' if n == 1 else 's'} invalid ({'; '.join(parts)})"


def describe_errors(report: BenchReport) -> str:
    """'0 rows failed, 1 skipped (does not fit on chip: 1)': one line for logs and summaries,
    over the measured (non-aggregate) rows; ', 2 invalid' is added when rows hold values that
    cannot be a measurement."""
    errors = [r for r in report.rows if r.run_type == "iteration" and r.error is not None]
    skipped = Counter(reason for r in errors if (reason := skip_reason(r.error)) is not None)
    failed = len(errors) - sum(skipped.values())
    text = f"{failed} row{'' if failed == 1 else 's'} failed, {sum(skipped.values())} skipped"
    if skipped:
        text += " (" + ", ".join(f"{reason}: {n}" for reason, n in skipped.items()) + ")"
    invalid = len(invalid_rows(report))
    if invalid:
        text += f", {invalid} invalid"
    return text


def _main(argv: Sequence[str] | None = None) -> int:
    """`python -m gpubench_tools.benchjson --errors FILE`: the failed/skipped count of one file,
    one line on stdout (exit 0), or the reason the file is unusable on stderr (exit 2): not bench
    JSON, or truncated (its last rows may be half-written). A run a signal stopped wrote its
    finished benchmarks whole: they are counted, and the line says how far the run got (the
    rows never written are not in the counts)."""
    prog = program_name("gpubench_tools.benchjson")

    def body(args_list: Sequence[str] | None) -> int:
        import argparse

        parser = ArgumentParser(
            prog=prog,
            description="Count the failed, skipped and invalid rows of a bench JSON file.",
        )
        parser.add_argument("--errors", metavar="FILE", required=True, help="bench JSON file")
        add_debug_flag(parser)
        args = parser.parse_args(args_list)
        try:
            report = load_report(args.errors)
        except BenchJsonError as exc:
            raise UnusableInput(str(exc)) from None
        if report.state == CUT_OFF and report.interrupted is None:
            raise UnusableInput(
                f"{args.errors}: the run did not finish ({report.cut_off}); rows not counted"
            )
        cut = f"; cut off: {report.interrupted}" if report.interrupted is not None else ""
        print(describe_errors(report) + cut)
        return EXIT_OK

    return run_main(prog, body, argv)


if __name__ == "__main__":
    raise SystemExit(_main())
