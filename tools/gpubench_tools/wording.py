"""What the tools say of what the reader read: a run that did not finish, invalid and error rows,
grouped by reason, the disturbed repetitions, the policy table. The reader (benchjson), the loader
(table), conditions.py and policy.py decide, as data; the macros of templates/words.j2 word it
(`words`, the package's templating.Words), and these are the lines every tool prints.
"""

from __future__ import annotations

from typing import Iterable

from .benchjson import BenchReport, BenchRow, Interruption, Refusal, cut_off_notes
from .benchjson import invalid_groups
from .conditions import disturbances
from .status import Said
from .templating import Words, environment

# `words("macro", name=value)`: the line a macro of templates/words.j2 writes.
words = Words(lambda: environment(__package__), "words.j2")


def note_lines(notes: Iterable[Said]) -> list[str]:
    """The line of each note the reader or the loader left as data (cut_off_notes, Table.notes):
    its macro of templates/words.j2 given its values."""
    return [words(note.macro, **note.values) for note in notes]


def interruption_words(interrupted: Interruption) -> str:
    """'interrupted by SIGTERM after 32 of 46 benchmarks': what an interrupted run's context says
    of it."""
    return words("interruption", stopped=interrupted)


def cut_off_words(report: BenchReport) -> str | None:
    """Why a file is cut off, in words ("interrupted by SIGTERM after 32 of 46 benchmarks",
    "truncated after 12 complete rows"), None for a complete file."""
    return words("cut_off", report=report) or None


def cut_off_lines(report: BenchReport, run: str = "the run") -> list[str]:
    """What every tool says of a file whose run did not finish, one line per cause (none for a
    complete file): the interruption its context records (which signal, how far `run` got, what
    is missing), and the truncation of its text."""
    return note_lines(cut_off_notes(report, run))


def describe_invalid(rows: list[BenchRow], limit: int = 3) -> str:
    """'2 rows invalid (real_time is NaN: a, b; iterations is 1e+30: c)': one line, grouped by
    reason, at most `limit` names per reason (then how many more)."""
    return words("invalid", **invalid_groups(rows, limit))


def refusal_words(refusal: Refusal) -> str:
    """The one line of a file timing.read_rows refuses: what the run, its invalid rows or its
    unmeasured rows are, then "; " and what the command does not do with it."""
    path, not_done = refusal.report.path, refusal.not_done
    if refusal.invalid:
        return f"{path}: {describe_invalid(list(refusal.invalid))}; {not_done}"
    if refusal.unmeasured:
        return f"{path}: {' and '.join(refusal.unmeasured)}s; {not_done}"
    return f"{'; '.join(cut_off_lines(refusal.report))}; {not_done}"


def error_words(error: BaseException) -> str:
    """An error's line: a Refusal's words, else its str()."""
    refusal = error.args[0] if error.args else None
    return refusal_words(refusal) if isinstance(refusal, Refusal) else str(error)


def disturbance_causes_line(rows: Iterable[dict[str, float]]) -> str:
    """What disturbed the disturbed repetitions among the counters of `rows`, by how much: "3
    waited for a CPU while other processes ran, up to 1.02 core; 1 lost CPU time to the
    hypervisor (steal), up to 0.20 core"; "" where none is disturbed."""
    return words("disturbance_causes", found=disturbances(rows))


def describe_conditions(rows: Iterable[dict[str, float]]) -> str | None:
    """One line on the disturbed repetitions among the counters of `rows` (measured repetitions),
    None when none is disturbed: "3 of 40 repetitions were measured while disturbed (3 waited
    for a CPU while other processes ran, up to 1.02 core)"."""
    found = disturbances(rows)
    return words("disturbed", found=found) if found.disturbed else None


def unknown_conditions_note(what: str) -> str:
    """The one line a tool says once for repetitions without condition counters (`what`: "2 files",
    "the baseline", ...)."""
    return words("unknown_conditions", what=what)
