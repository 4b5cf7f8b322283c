"""Threshold configuration of the regression compare tool.

The defaults are one file, the package data default-thresholds.json, so every way of running the
tool reads the same defaults and no built-in copy can disagree with them; a --config FILE is read
over them (docs/regression-gate.md, "Thresholds"). JSON, like the results. Shape:

    {
      "time": "real_time",
      "thresholds": {"max_ratio": 1.05, "alpha": 0.05, "max_cv": 0.10, "check_fastest": false},
      "counters": ["FLOP/s", "pct_peak", "t_epoch"],
      "counter_direction": {"t_overhead": "info"},
      "exact_counters": ["flop"],
      "gate_counters": true,
      "overrides": [
        {"pattern": "^overhead/", "max_ratio": 1.25, "max_cv": 0.30, "why": "..."}
      ],
      "normalize": {"reference": "regex", "max_ratio": 1.25, "alpha": 0.01, "max_cv": 0.25}
    }

The packaged defaults set every key but "normalize"; in a --config file every key is optional.
"time" picks the clock that is compared: real_time (wall or, for GPU benchmarks, CUDA-event
time) or cpu_time (CPU time of the benchmark's main thread, which a single-threaded CPU benchmark
does not accumulate while other processes hold the core). Exact counters always gate (they
cannot be noisy); "gate_counters" decides whether the timing-derived counters (FLOP/s, pct_peak,
t_epoch, ...) gate too or are only shown. A counter's direction comes from the schema
(gpubench_tools/schema.py: "smaller" is judged "lower", "bigger" "higher", the rest "info");
"counter_direction" overrides it for one counter (lower, higher, exact or info). Overrides are
regular expressions searched in the benchmark name; every matching override applies, in file
order, so a later, more specific entry can refine an earlier, broader one. Keys starting with "_"
and "why"/"comment" are free text for the reader.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from dataclasses import dataclass, field, replace
from importlib import resources
from typing import Any, Callable

from .. import schema
from .stats import BETTER_CHOICES, Thresholds

TIME_FIELDS = ("real_time", "cpu_time")
# A counter's direction in the schema, as the compare tool's "better".
_SCHEMA_TO_BETTER: dict[str, str] = {schema.SMALLER: "lower", schema.BIGGER: "higher"}
_THRESHOLD_KEYS = ("max_ratio", "alpha", "max_cv", "check_fastest")
# When a numeric threshold is unusable, and what it must be instead (the CLI's flags say the same).
THRESHOLD_RULES: dict[str, tuple[Callable[[float], bool], str]] = {
    "max_ratio": (lambda v: v < 1.0, "must be >= 1 (1.05 = 5 % slower)"),
    "alpha": (lambda v: not 0.0 < v < 1.0, "must be between 0 and 1"),
    "max_cv": (lambda v: v <= 0.0, "must be > 0"),
}
_TEXT_KEYS = ("why", "comment", "note")
_TOP_KEYS = tuple(
    "time thresholds counters counter_direction exact_counters gate_counters overrides "
    "normalize".split()
)
# Keys the packaged defaults must set: they are the only source of every default value.
_REQUIRED_IN_DEFAULTS = tuple(k for k in _TOP_KEYS if k != "normalize")

# The packaged defaults: gpubench_tools/compare/default-thresholds.json (package data).
DEFAULT_CONFIG_RESOURCE = "default-thresholds.json"
DEFAULT_CONFIG_SOURCE = f"packaged defaults ({__package__}/{DEFAULT_CONFIG_RESOURCE})"


class ConfigError(Exception):
    """An unusable config file. str() is one line naming the file and the problem."""


@dataclass
class Override:
    pattern: re.Pattern[str]
    values: dict[str, Any]
    why: str = ""


@dataclass
class NormalizeSpec:
    """Divide every time by the reference time of the same file.

    The reference is the geometric mean of the median times of the benchmarks the regex matches
    (one or several), leaving out the benchmark being normalised. That cancels whatever slows or
    speeds up a whole run (another CPU model, a lower clock, a neighbour busy for the whole run),
    leaving what changed for one benchmark relative to the others.
    """

    reference: re.Pattern[str]
    thresholds: Thresholds


def _packaged(attr: str) -> Any:
    """A field whose default is its value in the packaged defaults file (a fresh copy)."""
    return field(default_factory=lambda: copy.deepcopy(getattr(_packaged_config(), attr)))


@dataclass
class CompareConfig:
    """A configuration; every field not given is the packaged default's value."""

    time: str = _packaged("time")
    thresholds: Thresholds = _packaged("thresholds")
    counters: list[str] = _packaged("counters")
    counter_direction: dict[str, str] = _packaged("counter_direction")
    exact_counters: list[str] = _packaged("exact_counters")
    gate_counters: bool = _packaged("gate_counters")
    overrides: list[Override] = _packaged("overrides")
    normalize: NormalizeSpec | None = _packaged("normalize")
    source: str = DEFAULT_CONFIG_SOURCE

    def thresholds_for(self, name: str) -> tuple[Thresholds, list[str]]:
        """Thresholds of one benchmark and the override patterns that produced them."""
        current = self.thresholds
        matched = [o for o in self.overrides if o.pattern.search(name)]
        for override in matched:
            current = replace(current, **override.values)
        return current, [o.pattern.pattern for o in matched]

    def direction(self, counter: str) -> str:
        """How a counter is judged: the config's counter_direction, else "exact" for the
        exact counters, else its direction in the schema; "info" (shown, never judged) for a
        counter the schema does not know or calls neither better nor worse."""
        if counter in self.counter_direction:
            return self.counter_direction[counter]
        if counter in self.exact_counters:
            return "exact"
        return _SCHEMA_TO_BETTER.get(schema.direction_of(counter) or "", "info")

    def as_dict(self) -> dict[str, Any]:
        norm = self.normalize
        return {
            "source": self.source,
            "time": self.time,
            "thresholds": self.thresholds.as_dict(),
            "counters": list(self.counters),
            "exact_counters": list(self.exact_counters),
            "counter_direction": {c: self.direction(c) for c in self.counters},
            "gate_counters": self.gate_counters,
            "overrides": [
                {"pattern": o.pattern.pattern, **o.values, **({"why": o.why} if o.why else {})}
                for o in self.overrides
            ],
            "normalize": norm
            and {"reference": norm.reference.pattern, **norm.thresholds.as_dict()},
        }


def _fail(path: str, problem: str) -> ConfigError:
    return ConfigError(f"{path}: {problem}")


def _check_unknown(path: str, where: str, obj: dict[str, Any], allowed: tuple[str, ...]) -> None:
    for key in obj:
        if not (key.startswith("_") or key in _TEXT_KEYS or key in allowed):
            raise _fail(path, f"unknown key {key!r} in {where} (allowed: {', '.join(allowed)})")


def _threshold_values(path: str, where: str, obj: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key in (k for k in _THRESHOLD_KEYS if k in obj):
        value = obj[key]
        if key == "check_fastest":
            if not isinstance(value, bool):
                raise _fail(path, f"{where}.check_fastest must be true or false, got {value!r}")
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _fail(path, f"{where}.{key} must be a number, got {value!r}")
        else:
            value = float(value)
            unusable, rule = THRESHOLD_RULES[key]
            if unusable(value):
                raise _fail(path, f"{where}.{key} {rule}, got {value}")
        values[key] = value
    return values


def _regex(path: str, where: str, text: Any) -> re.Pattern[str]:
    if not isinstance(text, str) or not text:
        raise _fail(path, f"{where} must be a non-empty regular expression string")
    try:
        return re.compile(text)
    except re.error as exc:
        raise _fail(path, f"{where} {text!r} is not a valid regular expression ({exc})") from None


def _parse(doc: Any, path: str, base: CompareConfig | None) -> CompareConfig:
    """`doc` read over `base` (see the module docstring); with base None, `doc` must set every
    key of _REQUIRED_IN_DEFAULTS (the packaged defaults are the source of every default)."""

    def check(ok: bool, problem: str) -> None:
        if not ok:
            raise _fail(path, problem)

    check(isinstance(doc, dict), "top level must be a JSON object")
    _check_unknown(path, "the top level", doc, _TOP_KEYS)
    start: dict[str, Any] = {}
    if base is None:
        missing = [k for k in _REQUIRED_IN_DEFAULTS if k not in doc]
        if isinstance(doc.get("thresholds"), dict):
            missing += [f"thresholds.{k}" for k in _THRESHOLD_KEYS if k not in doc["thresholds"]]
        check(not missing, f"the defaults file must set {', '.join(missing)}")
    else:
        # "overrides" and "normalize" belong to one file: a file without them has none.
        inherited = (k for k in _REQUIRED_IN_DEFAULTS if k != "overrides")
        start = {k: copy.deepcopy(getattr(base, k)) for k in inherited}
    if "time" in doc:
        check(
            doc["time"] in TIME_FIELDS,
            f"'time' must be one of {', '.join(TIME_FIELDS)}, got {doc['time']!r}",
        )
        start["time"] = doc["time"]
    if "thresholds" in doc:
        check(isinstance(doc["thresholds"], dict), "'thresholds' must be an object")
        _check_unknown(path, "thresholds", doc["thresholds"], _THRESHOLD_KEYS)
        values = _threshold_values(path, "thresholds", doc["thresholds"])
        start["thresholds"] = (
            Thresholds(**values) if base is None else replace(start["thresholds"], **values)
        )
    for key in ("counters", "exact_counters"):
        if key in doc:
            value = doc[key]
            strings = isinstance(value, list) and all(isinstance(v, str) for v in value)
            check(strings, f"{key} must be a list of strings")
            start[key] = list(value)
    if "counter_direction" in doc:
        directions = doc["counter_direction"]
        check(
            isinstance(directions, dict),
            "'counter_direction' must be an object of counter -> direction",
        )
        for counter, better in directions.items():
            check(
                better in BETTER_CHOICES,
                f"counter_direction[{counter!r}] is {better!r}, expected one of "
                f"{', '.join(BETTER_CHOICES)}",
            )
        start["counter_direction"] = {**start.get("counter_direction", {}), **directions}
    if "gate_counters" in doc:
        check(isinstance(doc["gate_counters"], bool), "'gate_counters' must be true or false")
        start["gate_counters"] = doc["gate_counters"]
    overrides = doc.get("overrides", [])
    check(isinstance(overrides, list), "'overrides' must be a list of objects")
    start["overrides"] = []
    for i, entry in enumerate(overrides):
        where = f"overrides[{i}]"
        check(isinstance(entry, dict), f"{where} must be an object")
        _check_unknown(path, where, entry, ("pattern",) + _THRESHOLD_KEYS)
        pattern = _regex(path, f"{where}.pattern", entry.get("pattern"))
        values = _threshold_values(path, where, entry)
        start["overrides"].append(Override(pattern, values, str(entry.get("why", ""))))
    start["normalize"] = norm = doc.get("normalize")
    if norm is not None:
        check(isinstance(norm, dict), "'normalize' must be an object with a 'reference' regex")
        _check_unknown(path, "normalize", norm, ("reference",) + _THRESHOLD_KEYS)
        start["normalize"] = NormalizeSpec(
            reference=_regex(path, "normalize.reference", norm.get("reference")),
            thresholds=replace(start["thresholds"], **_threshold_values(path, "normalize", norm)),
        )
    return CompareConfig(source=path, **start)


def default_config_text() -> str:
    """The packaged defaults file, as text (importlib.resources: works from a checkout, an
    editable install and a wheel alike)."""
    return (
        resources.files(__package__).joinpath(DEFAULT_CONFIG_RESOURCE).read_text(encoding="utf-8")
    )


@functools.lru_cache(maxsize=1)
def _packaged_config() -> CompareConfig:
    return _parse(_json(default_config_text(), DEFAULT_CONFIG_SOURCE), DEFAULT_CONFIG_SOURCE, None)


def default_config() -> CompareConfig:
    """The packaged defaults (a fresh copy: callers may change it)."""
    return copy.deepcopy(_packaged_config())


def parse_config(doc: Any, path: str = "<config>") -> CompareConfig:
    """A --config document, read over the packaged defaults."""
    return _parse(doc, path, _packaged_config())


def _json(text: str, path: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise _fail(
            path, f"config is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from None


def load_config(path: str | None) -> CompareConfig:
    """Read a --config file over the packaged defaults; None gives the packaged defaults."""
    if path is None:
        return default_config()
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise _fail(path, f"cannot read config: {getattr(exc, 'strerror', None) or exc}") from None
    return parse_config(_json(text, path), path)
