"""Threshold configuration of the regression compare tool.

The defaults are one file, package data of gpubench_tools.compare: default-thresholds.json, read
with importlib.resources. `python -m gpubench_tools.compare` and the installed console script
`gpubench-compare` therefore read the same file, and there is no second, built-in copy of the
defaults that could disagree with it. A --config FILE is read over the defaults: a key FILE sets
replaces the default ("thresholds" key by key), a key it omits keeps the default, except
"overrides" and "normalize", which belong to one file (tuned for one machine): absent from FILE
means none.

The file is JSON (no extra dependency, and the same format as the results). Shape:

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

__all__ = [
    "DEFAULT_CONFIG_RESOURCE",
    "DEFAULT_CONFIG_SOURCE",
    "TIME_FIELDS",
    "CompareConfig",
    "ConfigError",
    "NormalizeSpec",
    "Override",
    "default_config",
    "default_config_text",
    "load_config",
    "parse_config",
]

TIME_FIELDS = ("real_time", "cpu_time")
# A counter's direction in the schema, as the compare tool's "better".
_SCHEMA_TO_BETTER: dict[str, str] = {schema.SMALLER: "lower", schema.BIGGER: "higher"}
_THRESHOLD_KEYS = ("max_ratio", "alpha", "max_cv", "check_fastest")
_TEXT_KEYS = ("why", "comment", "note")
_TOP_KEYS = (
    "time",
    "thresholds",
    "counters",
    "counter_direction",
    "exact_counters",
    "gate_counters",
    "overrides",
    "normalize",
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


def _packaged(attr: str) -> Callable[[], Any]:
    """A field's default: its value in the packaged defaults file (a fresh copy)."""
    return lambda: copy.deepcopy(getattr(_packaged_config(), attr))


@dataclass
class CompareConfig:
    """A configuration; every field not given is the packaged default's value."""

    time: str = field(default_factory=_packaged("time"))
    thresholds: Thresholds = field(default_factory=_packaged("thresholds"))
    counters: list[str] = field(default_factory=_packaged("counters"))
    counter_direction: dict[str, str] = field(default_factory=_packaged("counter_direction"))
    exact_counters: list[str] = field(default_factory=_packaged("exact_counters"))
    gate_counters: bool = field(default_factory=_packaged("gate_counters"))
    overrides: list[Override] = field(default_factory=_packaged("overrides"))
    normalize: NormalizeSpec | None = field(default_factory=_packaged("normalize"))
    source: str = DEFAULT_CONFIG_SOURCE

    def thresholds_for(self, name: str) -> tuple[Thresholds, list[str]]:
        """Thresholds of one benchmark and the override patterns that produced them."""
        current = self.thresholds
        matched: list[str] = []
        for override in self.overrides:
            if override.pattern.search(name):
                current = replace(current, **override.values)
                matched.append(override.pattern.pattern)
        return current, matched

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
            "normalize": (
                None
                if self.normalize is None
                else {
                    "reference": self.normalize.reference.pattern,
                    **self.normalize.thresholds.as_dict(),
                }
            ),
        }


def _fail(path: str, problem: str) -> ConfigError:
    return ConfigError(f"{path}: {problem}")


def _check_unknown(path: str, where: str, obj: dict[str, Any], allowed: tuple[str, ...]) -> None:
    for key in obj:
        if key.startswith("_") or key in _TEXT_KEYS or key in allowed:
            continue
        raise _fail(path, f"unknown key {key!r} in {where} (allowed: {', '.join(allowed)})")


def _threshold_values(path: str, where: str, obj: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key in _THRESHOLD_KEYS:
        if key not in obj:
            continue
        value = obj[key]
        if key == "check_fastest":
            if not isinstance(value, bool):
                raise _fail(path, f"{where}.check_fastest must be true or false, got {value!r}")
            values[key] = value
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _fail(path, f"{where}.{key} must be a number, got {value!r}")
        value = float(value)
        if key == "max_ratio" and value < 1.0:
            raise _fail(path, f"{where}.max_ratio must be >= 1 (1.05 = 5 % slower), got {value}")
        if key == "alpha" and not 0.0 < value < 1.0:
            raise _fail(path, f"{where}.alpha must be between 0 and 1, got {value}")
        if key == "max_cv" and value <= 0.0:
            raise _fail(path, f"{where}.max_cv must be > 0, got {value}")
        values[key] = value
    return values


def _regex(path: str, where: str, text: Any) -> re.Pattern[str]:
    if not isinstance(text, str) or not text:
        raise _fail(path, f"{where} must be a non-empty regular expression string")
    try:
        return re.compile(text)
    except re.error as exc:
        raise _fail(path, f"{where} {text!r} is not a valid regular expression ({exc})") from None


def _str_list(path: str, where: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _fail(path, f"{where} must be a list of strings")
    return list(value)


def _parse(doc: Any, path: str, base: CompareConfig | None) -> CompareConfig:
    """`doc` read over `base` (see the module docstring); with base None, `doc` must set every
    key of _REQUIRED_IN_DEFAULTS (the packaged defaults are the source of every default)."""
    if not isinstance(doc, dict):
        raise _fail(path, "top level must be a JSON object")
    _check_unknown(path, "the top level", doc, _TOP_KEYS)
    if base is None:
        missing = [k for k in _REQUIRED_IN_DEFAULTS if k not in doc]
        thresholds = doc.get("thresholds")
        if isinstance(thresholds, dict):
            missing += [f"thresholds.{k}" for k in _THRESHOLD_KEYS if k not in thresholds]
        if missing:
            raise _fail(path, f"the defaults file must set {', '.join(missing)}")
        start: dict[str, Any] = {}
    else:
        # "overrides" and "normalize" belong to one file: a file without them has none.
        inherited = (k for k in _TOP_KEYS if k not in ("overrides", "normalize"))
        start = {k: copy.deepcopy(getattr(base, k)) for k in inherited}
    if "time" in doc:
        if doc["time"] not in TIME_FIELDS:
            raise _fail(
                path, f"'time' must be one of {', '.join(TIME_FIELDS)}, got {doc['time']!r}"
            )
        start["time"] = doc["time"]
    if "thresholds" in doc:
        if not isinstance(doc["thresholds"], dict):
            raise _fail(path, "'thresholds' must be an object")
        _check_unknown(path, "thresholds", doc["thresholds"], _THRESHOLD_KEYS)
        values = _threshold_values(path, "thresholds", doc["thresholds"])
        start["thresholds"] = (
            Thresholds(**values) if base is None else replace(start["thresholds"], **values)
        )
    if "counters" in doc:
        start["counters"] = _str_list(path, "counters", doc["counters"])
    if "exact_counters" in doc:
        start["exact_counters"] = _str_list(path, "exact_counters", doc["exact_counters"])
    if "counter_direction" in doc:
        directions = doc["counter_direction"]
        if not isinstance(directions, dict):
            raise _fail(path, "'counter_direction' must be an object of counter -> direction")
        merged = dict(start.get("counter_direction", {}))
        for counter, better in directions.items():
            if better not in BETTER_CHOICES:
                raise _fail(
                    path,
                    f"counter_direction[{counter!r}] is {better!r}, expected one of "
                    f"{', '.join(BETTER_CHOICES)}",
                )
            merged[counter] = better
        start["counter_direction"] = merged
    if "gate_counters" in doc:
        if not isinstance(doc["gate_counters"], bool):
            raise _fail(path, "'gate_counters' must be true or false")
        start["gate_counters"] = doc["gate_counters"]
    overrides = doc.get("overrides", [])
    if not isinstance(overrides, list):
        raise _fail(path, "'overrides' must be a list of objects")
    start["overrides"] = []
    for i, entry in enumerate(overrides):
        where = f"overrides[{i}]"
        if not isinstance(entry, dict):
            raise _fail(path, f"{where} must be an object")
        _check_unknown(path, where, entry, ("pattern",) + _THRESHOLD_KEYS)
        start["overrides"].append(
            Override(
                pattern=_regex(path, f"{where}.pattern", entry.get("pattern")),
                values=_threshold_values(path, where, entry),
                why=str(entry.get("why", "")),
            )
        )
    start["normalize"] = None
    norm = doc.get("normalize")
    if norm is not None:
        if not isinstance(norm, dict):
            raise _fail(path, "'normalize' must be an object with a 'reference' regex")
        _check_unknown(path, "normalize", norm, ("reference",) + _THRESHOLD_KEYS)
        start["normalize"] = NormalizeSpec(
            reference=_regex(path, "normalize.reference", norm.get("reference")),
            thresholds=replace(start["thresholds"], **_threshold_values(path, "normalize", norm)),
        )
    return CompareConfig(source=path, **start)


def default_config_text() -> str:
    """The packaged defaults file, as text (importlib.resources: works from a checkout, an
    editable install and a wheel alike)."""
    resource = resources.files(__package__).joinpath(DEFAULT_CONFIG_RESOURCE)
    return resource.read_text(encoding="utf-8")


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
        reason = getattr(exc, "strerror", None) or exc
        raise _fail(path, f"cannot read config: {reason}") from None
    return parse_config(_json(text, path), path)
