"""Thresholds of the compare tool (docs/regression-gate.md, "Thresholds").

The defaults are one file, the package data default-thresholds.json, so every way of running the
tool reads the same defaults and no built-in copy can disagree with them; it sets every key but
"normalize". A --config FILE (every key optional) is read over them: a key it sets replaces the
default ("thresholds" and "counter_direction" key by key), except "overrides" and "normalize",
which belong to one file. Overrides are regular expressions searched in the benchmark name;
every match applies in file order, so a later, narrower entry refines an earlier one. Keys
starting with "_" and "why"/"comment"/"note" are free text for the reader.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from dataclasses import asdict, dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from .. import schema
from ..json_values import as_read, loads_as_read
from ..status import Number
from .stats import BETTER_CHOICES, Thresholds

TIME_FIELDS = ("real_time", "cpu_time")
# A counter's direction in the schema, as the compare tool's "better".
_SCHEMA_TO_BETTER: dict[str, str] = {schema.SMALLER: "lower", schema.BIGGER: "higher"}
_THRESHOLD_KEYS = ("max_ratio", "alpha", "max_cv", "check_fastest")
# The range of each numeric threshold: the one rule for the command line's flags (their argparse
# type) and every --config file (top level, overrides, normalize). A NaN or an infinity would
# switch the gate off (every comparison with NaN is false); an alpha so small that no number of
# repetitions can reach it, or a ratio so large that nothing is ever slower, is no gate either.
THRESHOLD_RANGES: dict[str, Number] = {
    "max_ratio": Number(1.0, 1000.0, unit="1.05 = 5 % slower"),
    "alpha": Number(1e-6, 1.0, high_open=True),
    "max_cv": Number(0.0, 100.0, low_open=True, unit="0.10 = a spread of 10 %"),
}

_TEXT_KEYS = ("why", "comment", "note")
_TOP_KEYS = ("time", "thresholds", "counters", "counter_direction", "exact_counters")
_TOP_KEYS += ("gate_counters", "overrides", "normalize")
# Keys the packaged defaults must set: they are the only source of every default value.
_REQUIRED_IN_DEFAULTS = _TOP_KEYS[:-1]

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
    """Divide every time by the geometric mean of the median times of the benchmarks `reference`
    matches in the same file (leaving out the benchmark itself). That cancels whatever changes a
    whole run (another CPU, a lower clock, a neighbour busy for the whole run), leaving what
    changed for one benchmark relative to the others."""

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
        matched = [o for o in self.overrides if o.pattern.search(name)]
        current = functools.reduce(lambda t, o: replace(t, **o.values), matched, self.thresholds)
        return current, [o.pattern.pattern for o in matched]

    def direction(self, counter: str) -> str:
        """How a counter is judged: the config's counter_direction, else "exact" for the exact
        counters, else its direction in the schema ("info", shown and never judged, for one the
        schema does not know or calls neither better nor worse)."""
        exact = "exact" if counter in self.exact_counters else None
        better = exact or _SCHEMA_TO_BETTER.get(schema.direction_of(counter) or "", "info")
        return self.counter_direction.get(counter, better)

    def as_dict(self) -> dict[str, Any]:
        norm = self.normalize
        overrides = [
            {"pattern": o.pattern.pattern, **o.values} | ({"why": o.why} if o.why else {})
            for o in self.overrides
        ]
        doc = {"source": self.source, "time": self.time, "thresholds": asdict(self.thresholds)}
        doc |= {"counters": list(self.counters), "exact_counters": list(self.exact_counters)}
        doc["counter_direction"] = {c: self.direction(c) for c in self.counters}
        doc |= {"gate_counters": self.gate_counters, "overrides": overrides}
        doc["normalize"] = norm and {"reference": norm.reference.pattern, **asdict(norm.thresholds)}
        return doc


@dataclass(frozen=True)
class _Checks:
    """The checks of one config document: a problem is a ConfigError naming the file."""

    path: str

    def check(self, ok: bool, problem: str) -> None:
        if not ok:
            raise ConfigError(f"{self.path}: {problem}")

    def known(self, where: str, obj: Any, allowed: tuple[str, ...], what: str) -> dict[str, Any]:
        """`obj`, checked to be an object (else the problem `what`) whose keys are `allowed` or free
        text."""
        self.check(isinstance(obj, dict), what)
        for key in obj:
            ok = key.startswith("_") or key in _TEXT_KEYS or key in allowed
            self.check(ok, f"unknown key {as_read(key)} in {where} (allowed: {', '.join(allowed)})")
        return obj

    def thresholds(self, where: str, obj: dict[str, Any]) -> dict[str, Any]:
        """The threshold keys `obj` sets, each checked against its range."""
        values = {key: obj[key] for key in _THRESHOLD_KEYS if key in obj}
        for key, value in values.items():
            if key == "check_fastest":
                bad = f"{where}.{key} must be true or false, got {as_read(value)}"
                self.check(isinstance(value, bool), bad)
            else:
                # Quoted as the file has it ("NaN is not a number ...").
                problem = THRESHOLD_RANGES[key].problem(value, as_read(value))
                self.check(problem is None, f"{where}.{key}: {problem}")
                values[key] = float(value)
        return values

    def matching(
        self, where: str, obj: Any, key: str, what: str
    ) -> tuple[re.Pattern[str], dict[str, Any]]:
        """An object of a regular expression `key` and thresholds (an override, "normalize"): the
        pattern and the threshold keys it sets."""
        self.known(where, obj, (key,) + _THRESHOLD_KEYS, what)
        text, named = obj.get(key), f"{where}.{key}"
        bad = f"{named} must be a non-empty regular expression string"
        self.check(isinstance(text, str) and bool(text), bad)
        try:
            pattern = re.compile(text)
        except re.error as exc:
            bad = f"{as_read(text, 200)} is not a valid regular expression ({exc})"
            raise ConfigError(f"{self.path}: {named} {bad}") from None
        return pattern, self.thresholds(where, obj)


def _parse(doc: Any, path: str, base: CompareConfig | None) -> CompareConfig:
    """`doc` read over `base`; with base None (the packaged defaults themselves) `doc` must set
    every key of _REQUIRED_IN_DEFAULTS."""
    checks = _Checks(path)
    check, known, thresholds = checks.check, checks.known, checks.thresholds
    known("the top level", doc, _TOP_KEYS, "top level must be a JSON object")
    if base is None:
        missing = [k for k in _REQUIRED_IN_DEFAULTS if k not in doc]
        if isinstance(doc.get("thresholds"), dict):
            missing += [f"thresholds.{k}" for k in _THRESHOLD_KEYS if k not in doc["thresholds"]]
        check(not missing, f"the defaults file must set {', '.join(missing)}")
        start: dict[str, Any] = {}
    else:  # "overrides" and "normalize" belong to one file: a file without them has none
        inherited = (k for k in _REQUIRED_IN_DEFAULTS if k != "overrides")
        start = {k: copy.deepcopy(getattr(base, k)) for k in inherited}
    if "time" in doc:
        start["time"], fields = doc["time"], ", ".join(TIME_FIELDS)
        bad = f"'time' must be one of {fields}, got {as_read(doc['time'])}"
        check(doc["time"] in TIME_FIELDS, bad)
    if "thresholds" in doc:
        known("thresholds", doc["thresholds"], _THRESHOLD_KEYS, "'thresholds' must be an object")
        values = thresholds("thresholds", doc["thresholds"])
        old = asdict(start["thresholds"]) if base else {}
        start["thresholds"] = Thresholds(**old | values)
    for key in ("counters", "exact_counters"):
        if key in doc:
            strings = isinstance(doc[key], list) and all(isinstance(v, str) for v in doc[key])
            check(strings, f"{key} must be a list of strings")
            start[key] = list(doc[key])
    if "counter_direction" in doc:
        directions, choices = doc["counter_direction"], ", ".join(BETTER_CHOICES)
        bad = "'counter_direction' must be an object of counter -> direction"
        check(isinstance(directions, dict), bad)
        for counter, better in directions.items():
            bad = f"counter_direction[{as_read(counter)}] is {as_read(better)}"
            check(better in BETTER_CHOICES, f"{bad}, expected one of {choices}")
        start["counter_direction"] = {**start.get("counter_direction", {}), **directions}
    if "gate_counters" in doc:
        check(isinstance(doc["gate_counters"], bool), "'gate_counters' must be true or false")
        start["gate_counters"] = doc["gate_counters"]
    overrides = doc.get("overrides", [])
    check(isinstance(overrides, list), "'overrides' must be a list of objects")
    start["overrides"] = []
    for where, entry in ((f"overrides[{i}]", o) for i, o in enumerate(overrides)):
        pattern, values = checks.matching(where, entry, "pattern", f"{where} must be an object")
        start["overrides"].append(Override(pattern, values, str(entry.get("why", ""))))
    start["normalize"] = norm = doc.get("normalize")
    if norm is not None:
        what = "'normalize' must be an object with a 'reference' regex"
        reference, values = checks.matching("normalize", norm, "reference", what)
        start["normalize"] = NormalizeSpec(reference, replace(start["thresholds"], **values))
    return CompareConfig(source=path, **start)


def default_config_text() -> str:
    """The packaged defaults file, as text (importlib.resources: works from a checkout, an
    editable install and a wheel alike)."""
    return resources.files(__package__).joinpath(DEFAULT_CONFIG_RESOURCE).read_text("utf-8")


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
        return loads_as_read(text)
    except json.JSONDecodeError as exc:
        where = f"{exc.msg} at line {exc.lineno} column {exc.colno}"
        raise ConfigError(f"{path}: config is not valid JSON ({where})") from None


def load_config(path: str | None) -> CompareConfig:
    """Read a --config file over the packaged defaults; None gives the packaged defaults."""
    if path is None:
        return default_config()
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        problem = getattr(exc, "strerror", None) or exc
        raise ConfigError(f"{path}: cannot read config: {problem}") from None
    return parse_config(_json(text, path), path)
