"""The one reader of the Google Benchmark JSON that the `bench` binary writes.

Every tool reads bench files here (`load_report`), and nowhere else; `table.load_table` and `table.file_rows` are its front for the tools
that work on pandas tables. A file is validated against one declared JSON Schema
(`row_rules.json_schema()`, generated from the counter declaration in schema.py that `bench
--schema` is tested against, with the row-validity limits) by the jsonschema library, and
classified:

- per file: *complete*, *cut off* (a prefix of a bench document: a run whose writer stopped
  halfway, its complete rows recovered; or a whole document whose context says the run was
  interrupted by a signal: `interrupted`, `benchmarks_finished`, `benchmarks_selected`) or *not a
  bench file* (unreadable, not UTF-8, empty, not JSON, JSON of
  another shape, nested deeper than any bench file, or a document followed by other bytes);
- per row: *valid*, *skipped* (its reason), *failed* (its message) or *invalid* (the field named
  and its value shown as read: `time_unit is missing`, `flop is "12" (expected a number)`,
  `real_time is NaN (not a finite number)`). Nothing missing or mistyped is given a default.

What each tool then does with each class is policy.py's table (docs/input-policy.md). The reader
imports no words and no command line (a contract in tools/pyproject.toml): it says what it found
as data (and, for a file it refuses, in its BenchJsonError); what the tools say of a file or row
is wording.py's (`cut_off_lines`, `cut_off_words`, ...), and `python -m gpubench_tools --errors
FILE` is a command line's (__main__.py). It reads JSON only and never touches the C++ code.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .conditions import condition_of
from .json_values import Pairs, ReadFloat, as_read, is_number, read_number, to_plain
from .row_rules import TIME_UNIT_TO_S, first_problem, group_reasons, skip_reason
from .status import Said, UnusableInput, said

# What a file is (BenchReport.state; anything else is a BenchJsonError, not a bench file).
COMPLETE, CUT_OFF = "complete", "cut off"
# What a row is.
VALID, SKIPPED, FAILED, INVALID = "valid", "skipped", "failed", "invalid"

# Keys Google Benchmark writes itself; every other numeric top-level key is a user counter.
GBENCH_KEYS: frozenset[str] = frozenset(
    "name family_index per_family_instance_index run_name run_type repetitions repetition_index "
    "threads iterations real_time cpu_time time_unit label aggregate_name aggregate_unit "
    "error_occurred error_message".split()
)

# Deeper than any bench file (its deepest value is a cache entry of the context, 4 levels down):
# a file nested beyond this is not ours, and reading it on would only recurse.
MAX_DEPTH = 32


# --- an interrupted run ---------------------------------------------------------------------------

# A bench stopped by one of these signals writes the benchmarks it finished as one whole document
# and says so in its context (docs/running-bench.md): the signal's name, the benchmarks whose
# repetitions all finished and were written, and the benchmarks the filter selected.
INTERRUPT_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP", "SIGXCPU", "SIGUSR1", "SIGUSR2")
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


def _interruption(path: str, context: Pairs) -> Interruption | None:
    """The interruption a file's context (its pairs as read) records, None where it has none of
    the keys; BenchJsonError naming the key and its value as written where a key is missing,
    repeated or of the wrong kind: a file that says it was interrupted must say how far."""
    found: dict[str, Any] = {}
    for key, value in context:
        if key in INTERRUPT_KEYS:
            if key in found:
                raise BenchJsonError(path, f'context "{key}" appears more than once')
            found[key] = value
    if not found:
        return None
    missing = [key for key in INTERRUPT_KEYS if key not in found]
    signal, finished, selected = (found.get(key) for key in INTERRUPT_KEYS)
    counts = (key for key in INTERRUPT_KEYS[1:] if not _is_count(found[key]))
    if missing:
        present = next(key for key in INTERRUPT_KEYS if key in found)
        quoted = ", ".join(f'"{key}"' for key in INTERRUPT_KEYS)
        problem = f'has "{present}" but no "{missing[0]}": an interrupted run names all of {quoted}'
    elif signal not in INTERRUPT_SIGNALS:
        expected = ", ".join(f'"{s}"' for s in INTERRUPT_SIGNALS)
        problem = f'"interrupted" is {as_read(signal)} (expected one of {expected})'
    elif (key := next(counts, None)) is not None:
        problem = (
            f'"{key}" is {as_read(found[key])} (expected an integer from 0 to {MAX_BENCHMARKS})'
        )
    elif finished > selected:
        problem = f'"benchmarks_finished" is {as_read(finished)}, more than "benchmarks_selected" '
        problem += as_read(selected)
    else:
        return Interruption(signal, finished, selected)
    raise BenchJsonError(path, f"context {problem}")


def _is_count(value: Any) -> bool:
    """A count of benchmarks as a file must write it: an integer from 0 to MAX_BENCHMARKS."""
    return type(value) is int and 0 <= value <= MAX_BENCHMARKS


class BenchJsonError(UnusableInput):
    """A file that is not usable bench JSON. str() is one line naming the file and the problem:
    unusable input (exit 2) to a command that does not catch it."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


@dataclass
class BenchRow:
    name: str
    run_name: str
    run_type: str
    label: str
    # Google Benchmark's values; an invalid row has none of them (never a time).
    aggregate_name: str | None = None
    repetition_index: int | None = None
    iterations: int = 0
    real_time_s: float = math.nan
    cpu_time_s: float = math.nan
    counters: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    # Why the row is not a sound bench row (see row_rules.first_problem), None for a sound row.
    invalid: str | None = None
    # For an invalid row: a field is missing or of the wrong type (else a value is unsound).
    malformed: bool = False

    @property
    def labels(self) -> dict[str, str]:
        """The label's key=value pairs (parse_label)."""
        return parse_label(self.label)

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


@dataclass
class BenchReport:
    path: str
    context: dict[str, Any]
    rows: list[BenchRow]
    recovered_from_truncation: bool = False
    # What the context says of a run stopped by a signal (a whole document, cut off all the same).
    interrupted: Interruption | None = None

    @property
    def state(self) -> str:
        """COMPLETE, or CUT_OFF for a file of a run that did not finish: one its writer left
        halfway (its complete rows recovered) or one whose context says it was interrupted."""
        cut = self.recovered_from_truncation or self.interrupted is not None
        return CUT_OFF if cut else COMPLETE

    @property
    def truncated_after(self) -> int | None:
        """The complete rows recovered from a file whose writer stopped halfway, None for a file
        whose text is whole."""
        return len(self.rows) if self.recovered_from_truncation else None


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


def _make_row(index: int, obj: Any) -> BenchRow:
    """One row as read; a row that breaks the schema is an INVALID row (never an exception),
    named by its name where it has one, else by its position."""
    if not isinstance(obj, Pairs):
        name = f"row {index}"
        problem = f"{name} is {as_read(obj)}, expected an object"
        return BenchRow(name, name, "iteration", "", invalid=problem, malformed=True)
    seen: dict[str, Any] = {}
    counters: dict[str, float] = {}
    for key, value in obj:
        if key == "threads" and "threads" in seen:
            # Second "threads": the user counter (first one is Google Benchmark's thread count).
            if is_number(value):
                counters["threads"] = float(value)
            continue
        seen[key] = value
        if key not in GBENCH_KEYS and is_number(value):
            # kept with its text where it has one: a message quotes it as written (as_read)
            counters[key] = value if isinstance(value, ReadFloat) else float(value)
        elif key == "threads" and isinstance(value, float):
            # Google Benchmark writes its thread count as an integer and user counters as
            # floats, so a lone float "threads" (a file rewritten by a JSON library that kept
            # only the last duplicate key) is the counter.
            counters["threads"] = float(value)
    if "blas_threads" in counters:
        # The OpenBLAS thread count of a CPU row. Files written before it had this name carry it
        # as a second "threads" key (handled above); the tools read it as "threads".
        counters["threads"] = counters["blas_threads"]

    def text(key: str, default: str) -> str:
        value = seen.get(key)
        return value if isinstance(value, str) and value else default

    name = text("name", f"row {index}")
    label = text("label", "")
    run_type = seen.get("run_type")
    run_type = run_type if run_type in ("iteration", "aggregate") else "iteration"
    invalid, malformed = first_problem(seen) or (None, False)
    if invalid is not None:
        # Never a time: a NaN, a missing unit or an absurd value must not reach a chart, a store
        # or an upload. Its counters go too: they were measured with the same broken run.
        run_name = text("run_name", name)
        return BenchRow(name, run_name, run_type, label, invalid=invalid, malformed=malformed)
    # A "cv" aggregate is a ratio, not a time: Google Benchmark marks it aggregate_unit=percentage.
    percent = seen.get("aggregate_unit") == "percentage"
    scale = 1.0 if percent else TIME_UNIT_TO_S.get(seen.get("time_unit"), math.nan)

    def seconds(key: str) -> float:  # a sound row's times are finite numbers where present
        return float(seen[key]) * scale if key in seen else math.nan

    rep, iterations = seen.get("repetition_index"), seen.get("iterations", 0)
    return BenchRow(
        name=name,
        run_name=seen.get("run_name", name),
        run_type=run_type,
        aggregate_name=seen.get("aggregate_name"),
        repetition_index=int(rep) if is_number(rep) else None,
        iterations=int(iterations) if is_number(iterations) else 0,
        real_time_s=seconds("real_time"),
        cpu_time_s=seconds("cpu_time"),
        label=label,
        counters=counters,
        error=seen["error_message"] if seen.get("error_occurred") else None,
    )


# A value a writer was interrupted inside: the start of a literal or of a number.
_LITERALS = ("true", "false", "null", "NaN", "Infinity", "-Infinity")
_NUMBER_PREFIX = re.compile(r"-?(\d+(\.\d*)?([eE][-+]?\d*)?)?")


def _cut_off_here(text: str, error: json.JSONDecodeError) -> bool:
    """Whether a parse error is the end of the text arriving, not a mistake: what is left
    from the error on is empty, a string still open, or the start of a literal or number."""
    rest = text[error.pos :].rstrip(" \t\r\n")
    if rest and error.msg.startswith("Unterminated string"):
        return re.fullmatch(r'"(?:[^"\\]|\\.)*\\?', rest, re.DOTALL) is not None
    # An empty rest starts every literal; "-" alone is a number's start.
    literal = any(lit.startswith(rest) for lit in _LITERALS)
    return literal or _NUMBER_PREFIX.fullmatch(rest) is not None


# Every number and object of a file as read (json_values): the text of a number, keys in order.
_DECODER = json.JSONDecoder(
    object_pairs_hook=Pairs, parse_float=read_number, parse_constant=read_number
)
_WS = "[ \t\r\n]*"  # JSON's whitespace
_CONTEXT, _ROWS = re.compile(f'"context"{_WS}:{_WS}'), re.compile(f'"benchmarks"{_WS}:{_WS}\\[')
_NEXT_ROW = re.compile(f"{_WS},?{_WS}")


def _recover_truncated(text: str) -> tuple[Any, list[Any]] | None:
    """Parse the complete prefix of a file whose writer was interrupted.

    Google Benchmark writes the context first and then one row object at a time, so an
    interrupted run leaves `{"context": {...}, "benchmarks": [ {..}, {..}, {.` . Returns
    (context as read, complete row objects), or None when the text does not look like such a
    prefix.
    """
    context: Any = Pairs()
    ctx_at, bench_at = text.find('"context"'), text.find('"benchmarks"')
    if bench_at < 0:
        # cut off inside the context: a run that wrote no row at all
        return (Pairs(), []) if ctx_at >= 0 else None
    colon = _CONTEXT.match(text, ctx_at) if 0 <= ctx_at < bench_at else None
    if colon:
        try:
            context, _ = _DECODER.raw_decode(text, colon.end())
        except json.JSONDecodeError:
            return None
    opening = _ROWS.match(text, bench_at)
    if opening is None:
        return None
    pos, rows = opening.end(), []
    while True:
        pos = _NEXT_ROW.match(text, pos).end()  # type: ignore[union-attr]  # matches ""
        if pos >= len(text) or text[pos] == "]":
            break
        try:
            obj, pos = _DECODER.raw_decode(text, pos)
        except json.JSONDecodeError:
            break  # the incomplete last row
        rows.append(obj)
    return (context if isinstance(context, Pairs) else Pairs()), rows


def _depth(doc: Any) -> int:
    """How deeply lists and objects nest in a parsed document (iteratively: a deep one must not
    exhaust the stack while it is measured)."""
    # Lists only: Pairs, an object as read, is one too (its items are (key, value) tuples).
    deepest, stack = 0, [(doc, 1)] if isinstance(doc, list) else []
    while stack:
        value, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:
            return depth
        children = (item[1] if isinstance(value, Pairs) else item for item in value)
        stack += [(child, depth + 1) for child in children if isinstance(child, list)]
    return deepest


def load_report(path: str) -> BenchReport:
    """Read one bench JSON file: a BenchReport (COMPLETE or CUT_OFF, every row classified), or
    BenchJsonError saying why anything else is not a bench file (one bad file in a batch stops
    nothing else: each tool decides, by the policy table, what follows)."""
    try:
        return _read(path)
    except RecursionError:
        raise BenchJsonError(
            path, f"not a bench file: nested deeper than {MAX_DEPTH} levels"
        ) from None


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

    recovered = False
    try:
        doc = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":
            extra = len(raw) - len(text[: exc.pos].encode("utf-8"))
            nul = " (NUL bytes: two writers, or a file written over)" * ("\0" in text[exc.pos :])
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
        if _depth(Pairs([("context", context_obj), ("benchmarks", raw_rows)])) > MAX_DEPTH:
            raise RecursionError
        if not raw_rows:
            raise BenchJsonError(path, "file is truncated and holds no complete benchmark row")
        recovered = True
    else:
        if _depth(doc) > MAX_DEPTH:
            raise RecursionError
        if not isinstance(doc, Pairs):
            kind = "a list" if isinstance(doc, list) else type(doc).__name__
            kind = "float" if isinstance(doc, float) else kind
            raise BenchJsonError(path, f"top level is {kind}, expected a JSON object")
        top = dict(doc)
        raw_rows = top.get("benchmarks")
        if not isinstance(raw_rows, list) or isinstance(raw_rows, Pairs):
            raise BenchJsonError(
                path, "no 'benchmarks' list: not Google Benchmark JSON from the bench binary"
            )
        context_obj = top.get("context", Pairs())
        if not isinstance(context_obj, Pairs):
            raise BenchJsonError(path, f"'context' is {as_read(context_obj)}, expected an object")

    interrupted = _interruption(path, context_obj)
    rows = [_make_row(i, obj) for i, obj in enumerate(raw_rows)]
    return BenchReport(path, to_plain(context_obj), rows, recovered, interrupted)


def iteration_rows(report: BenchReport) -> list[BenchRow]:
    """Measured rows only: no aggregates (mean/median/...), no failed, skipped or invalid rows."""
    return [r for r in report.rows if r.run_type == "iteration" and r.usable]


@dataclass(frozen=True)
class Refusal:
    """Why timing.read_rows refuses a file, as data (wording.refusal_words says it): the run did
    not finish (neither `invalid` nor `unmeasured`), rows are invalid, or rows hold no measurement
    (their row classes); `not_done`, what the command does not do with the file."""

    report: BenchReport
    not_done: str
    invalid: tuple[BenchRow, ...] = ()
    unmeasured: tuple[str, ...] = ()


def invalid_rows(report: BenchReport) -> list[BenchRow]:
    """Rows (measured or aggregate) whose values cannot be a measurement (see first_problem)."""
    return [row for row in report.rows if row.invalid is not None]


def invalid_groups(rows: list[BenchRow], limit: int = 3) -> dict[str, Any]:
    """The values of the `invalid` macro of templates/words.j2 for `rows`: how many, and per
    reason (in order of first appearance) its first `limit` names and how many more."""
    groups = group_reasons(rows, lambda r: r.invalid or "")
    named = [(why, [r.name for r in g[:limit]], max(0, len(g) - limit)) for why, g in groups]
    return dict(count=len(rows), groups=named)


def cut_off_notes(report: BenchReport, run: str = "the run") -> list[Said]:
    """What every tool says of a file whose run did not finish, one note per cause (none for a
    complete file), as data (wording words it): the interruption its context records (which
    signal, how far `run` got, what is missing), and the truncation of its text."""
    causes = [dict(stopped=report.interrupted)] if report.interrupted is not None else []
    causes += [dict(recovered=report.truncated_after)] * report.recovered_from_truncation
    return [said("cut_off_line", path=report.path, run=run, **cause) for cause in causes]


@dataclass(frozen=True)
class ErrorCounts:
    """A file's measured (non-aggregate) rows that failed, and that were skipped per reason; its
    rows (measured or aggregate) whose values cannot be a measurement; how far its run got."""

    failed: int
    skipped: dict[str, int]  # per skip reason, in order of first appearance
    skipped_total: int
    invalid: int
    interrupted: Interruption | None


def error_counts(report: BenchReport) -> ErrorCounts:
    """The counts `python -m gpubench_tools --errors` says of a file (the `errors` macro
    of templates/words.j2)."""
    errors = [r for r in report.rows if r.run_type == "iteration" and r.error is not None]
    skipped = Counter(reason for r in errors if (reason := skip_reason(r.error)) is not None)
    failed, invalid = len(errors) - sum(skipped.values()), len(invalid_rows(report))
    return ErrorCounts(failed, dict(skipped), sum(skipped.values()), invalid, report.interrupted)
