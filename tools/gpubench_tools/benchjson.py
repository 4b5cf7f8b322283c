"""Load the Google Benchmark JSON that the `bench` binary writes.

This module is the single place that knows the file format; every other tool works on
`BenchReport` / `BenchRow`. It reads JSON only and never touches the C++ code.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Iterable, Sequence, TypeVar

from .cli import EXIT_OK, UnusableInput, add_debug_flag, program_name, run_main

__all__ = [
    "BenchJsonError",
    "BenchRow",
    "BenchReport",
    "load_report",
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
]

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
# shared memory, Y available (...)" for a fused MLP net that one thread block cannot hold, and
# "does not fit in device memory: needs X bytes, Y of Z bytes free" for a size beyond the GPU's
# free memory; "not supported on this machine: ..." for a path the CPU or its libraries lack (the
# AVX2 small-matrix MLP path, bf16 products without cblas_sbgemm). Such rows are *skipped*; every
# other error row *failed*. tools/gpu-check counts
# rows with this same rule (it calls `python -m gpubench_tools.benchjson --errors`).
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


def _describe_value(value: Any) -> str:
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, float) and math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if _is_number(value):
        return f"{value:g}"
    return type(value).__name__


def usable_counter(value: float) -> bool:
    """A counter value that can be used as a number: finite, and not absurdly large."""
    return math.isfinite(value) and abs(value) <= MAX_ABS_COUNTER


def invalid_reason(seen: dict[str, Any]) -> str | None:
    """Why the values of one row (its keys as read) cannot be a measurement, or None when they
    can. Failed rows (error_occurred) are judged by their error, not their numbers: Google
    Benchmark writes 0 times for them. A time of 0 is invalid only in a row that ran iterations
    (Google Benchmark 1.8 writes 0 for a row skipped with SkipWithMessage)."""
    if seen.get("error_occurred"):
        return None
    aggregate = seen.get("run_type") == "aggregate"
    iterations = seen.get("iterations", 0)
    if not (_is_number(iterations) and 0 <= iterations <= MAX_ITERATIONS):
        return f"iterations is {_describe_value(iterations)}"
    ran = iterations > 0
    for key in ("real_time", "cpu_time"):
        if key not in seen and key == "cpu_time":
            continue
        value = seen.get(key)
        if not _is_number(value) or not math.isfinite(value):
            return f"{key} is {_describe_value(value)}"
        if value < 0 or (ran and not aggregate and value == 0):
            return f"{key} is {_describe_value(value)}"
        scale = _TIME_UNIT_TO_S.get(seen.get("time_unit", "ns"), 1.0)
        if seen.get("aggregate_unit") != "percentage" and value * scale > MAX_TIME_S:
            return f"{key} is {_describe_value(value)} {seen.get('time_unit', 'ns')}"
    rep = seen.get("repetition_index")
    if rep is not None and not (_is_number(rep) and 0 <= rep <= MAX_REPETITION_INDEX):
        return f"repetition_index is {_describe_value(rep)}"
    return None


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
    # Why the row's values cannot be a measurement (see invalid_reason), None for a sound row.
    invalid: str | None = None

    @property
    def usable(self) -> bool:
        """A measurement: no error and sound values."""
        return self.error is None and self.invalid is None

    @property
    def skipped(self) -> bool:
        """Did not run for lack of room on the machine (see SKIP_PREFIXES): not a failure."""
        return skip_reason(self.error) is not None

    @property
    def failed(self) -> bool:
        """Reported an error that is not a skip: a wrong result, a CUDA error, ..."""
        return self.error is not None and not self.skipped


@dataclass
class BenchReport:
    path: str
    context: dict[str, Any]
    rows: list[BenchRow]
    recovered_from_truncation: bool = False
    warnings: list[str] = field(default_factory=list)


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


def _to_plain(value: Any) -> Any:
    """Turn _Pairs objects (used outside rows, e.g. the context) back into dicts."""
    if isinstance(value, _Pairs):
        return {k: _to_plain(v) for k, v in value}
    if isinstance(value, list):
        return [_to_plain(v) for v in value]
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _make_row(path: str, index: int, obj: Any) -> BenchRow:
    if not isinstance(obj, _Pairs):
        raise BenchJsonError(path, f"benchmark row {index} is not a JSON object")
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
            counters[key] = float(value)
        elif key == "threads" and isinstance(value, float):
            # Google Benchmark writes its thread count as an integer and user counters as
            # floats, so a lone float "threads" (a file rewritten by a JSON library that kept
            # only the last duplicate key) is the counter.
            counters["threads"] = value

    if "blas_threads" in counters:
        # The OpenBLAS thread count of a CPU row. Files written before it had this name carry it
        # as a second "threads" key (handled above); the tools read it as "threads".
        counters["threads"] = counters["blas_threads"]

    name = seen.get("name")
    if not isinstance(name, str) or not name:
        raise BenchJsonError(path, f"benchmark row {index} has no 'name'")
    error: str | None = None
    if seen.get("error_occurred"):
        error = str(seen.get("error_message") or "error_occurred without a message")
    real_time = seen.get("real_time")
    if "real_time" not in seen and error is None:
        raise BenchJsonError(path, f"benchmark row {index} ('{name}') has no numeric 'real_time'")
    unit = seen.get("time_unit", "ns")
    if unit not in _TIME_UNIT_TO_S:
        raise BenchJsonError(
            path, f"benchmark row {index} ('{name}') has unknown time_unit {unit!r}"
        )
    invalid = invalid_reason(seen)
    if invalid is not None:
        # Never a time: a NaN, Infinity or absurd value must not reach a chart, a store or an
        # upload. Its counters go too: they were measured with the same broken run.
        real_time = cpu_time = math.nan
        counters = {}
    if not _is_number(real_time) or not math.isfinite(real_time):
        real_time = math.nan
    cpu_time = seen.get("cpu_time")
    if invalid is not None or not _is_number(cpu_time) or not math.isfinite(cpu_time):
        cpu_time = math.nan
    # A "cv" aggregate is a ratio, not a time: Google Benchmark marks it aggregate_unit=percentage.
    scale = 1.0 if seen.get("aggregate_unit") == "percentage" else _TIME_UNIT_TO_S[unit]

    label = seen.get("label", "")
    label = label if isinstance(label, str) else str(label)
    rep = seen.get("repetition_index")
    agg = seen.get("aggregate_name")
    iterations = seen.get("iterations", 0)
    if not (_is_number(iterations) and 0 <= iterations <= MAX_ITERATIONS):
        iterations = 0
    if not (_is_number(rep) and 0 <= rep <= MAX_REPETITION_INDEX):
        rep = None
    return BenchRow(
        name=name,
        run_name=str(seen.get("run_name", name)),
        run_type=str(seen.get("run_type", "iteration")),
        aggregate_name=str(agg) if agg is not None else None,
        repetition_index=int(rep) if _is_number(rep) else None,
        iterations=int(iterations) if _is_number(iterations) else 0,
        real_time_s=float(real_time) * scale,
        cpu_time_s=float(cpu_time) * scale,
        label=label,
        labels=parse_label(label),
        counters=counters,
        error=error,
        invalid=invalid,
    )


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _recover_truncated(path: str, text: str) -> tuple[dict[str, Any], list[Any]] | None:
    """Parse the complete prefix of a file whose writer was interrupted.

    Google Benchmark writes the context first and then one row object at a time, so an
    interrupted run leaves `{"context": {...}, "benchmarks": [ {..}, {..}, {.` . Returns
    (context, complete row objects), or None when the text does not look like such a prefix.
    """
    stripped = text.rstrip()
    # A file that ends like a complete document ("...]\n}") but still fails to parse is
    # corrupt, not cut off, and must not be passed off as a partial run.
    if stripped.endswith("}") and stripped[:-1].rstrip().endswith("]"):
        return None
    decoder = json.JSONDecoder(object_pairs_hook=_pairs_hook)
    context: dict[str, Any] = {}
    ctx_at = text.find('"context"')
    bench_at = text.find('"benchmarks"')
    if bench_at < 0:
        if ctx_at >= 0:
            return {}, []  # cut off inside the context: a run that wrote no row at all
        return None
    if 0 <= ctx_at < bench_at:
        colon = _skip_ws(text, ctx_at + len('"context"'))
        if colon < len(text) and text[colon] == ":":
            try:
                ctx_obj, _ = decoder.raw_decode(text, _skip_ws(text, colon + 1))
                context = _to_plain(ctx_obj)
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
    return (context if isinstance(context, dict) else {}), rows


def load_report(path: str) -> BenchReport:
    """Read one bench JSON file. Raises BenchJsonError for anything that is not bench output."""
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
        doc = json.loads(text, object_pairs_hook=_pairs_hook)
    except json.JSONDecodeError as exc:
        salvage = _recover_truncated(path, text) if text.lstrip().startswith("{") else None
        if salvage is None:
            raise BenchJsonError(
                path, f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
            ) from None
        context, raw_rows = salvage
        if not raw_rows:
            raise BenchJsonError(path, "file is truncated and holds no complete benchmark row")
        recovered = True
        warnings.append(
            f"recovered {len(raw_rows)} complete benchmark rows from truncated file {path}"
        )
    else:
        if not isinstance(doc, _Pairs):
            kind = "a list" if isinstance(doc, list) else type(doc).__name__
            raise BenchJsonError(path, f"top level is {kind}, expected a JSON object")
        top = dict(doc)
        raw_rows = top.get("benchmarks")
        if not isinstance(raw_rows, list) or isinstance(raw_rows, _Pairs):
            raise BenchJsonError(
                path, "no 'benchmarks' list: not Google Benchmark JSON from the bench binary"
            )
        context_obj = top.get("context", {})
        context = _to_plain(context_obj) if isinstance(context_obj, _Pairs) else {}

    rows = [_make_row(path, i, obj) for i, obj in enumerate(raw_rows)]
    return BenchReport(
        path=path,
        context=context,
        rows=rows,
        recovered_from_truncation=recovered,
        warnings=warnings,
    )


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
    JSON, or truncated (an interrupted run: its counts would leave out the rows never written)."""
    prog = program_name("gpubench_tools.benchjson")

    def body(args_list: Sequence[str] | None) -> int:
        import argparse

        parser = argparse.ArgumentParser(
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
        if report.recovered_from_truncation:
            raise UnusableInput(
                f"{args.errors}: file is truncated (the run was interrupted after "
                f"{len(report.rows)} complete rows); rows not counted"
            )
        print(describe_errors(report))
        return EXIT_OK

    return run_main(prog, body, argv)


if __name__ == "__main__":
    raise SystemExit(_main())
