"""What gpubench-history and gpubench-export say: the macros of the package's templates
(templates/words.j2: the check and `add`; templates/export.j2: the export), reached the one way
(templating.Words). The check, the store and the export decide, as records; these word them."""

from __future__ import annotations

import functools

import jinja2

from ..status import Said
from ..wording import error_words, interruption_words, unknown_conditions_note
from ..escape import one_line, term_text
from ..policy import MIN_UNDISTURBED
from ..templating import Words, environment
from ..units import fmt_time, plural
from .store import RunRecord


@functools.cache
def _environment() -> jinja2.Environment:
    env = environment(__package__)
    env.filters.update(term=term_text, one_line=one_line)
    env.globals.update(fmt_time=fmt_time, plural=plural, MIN_UNDISTURBED=MIN_UNDISTURBED)
    env.globals.update(unknown_conditions_note=unknown_conditions_note)
    return env


WORDS = Words(_environment, "words.j2")
EXPORT_WORDS = Words(_environment, "export.j2")


def error_text(error: BaseException) -> str:
    """An error's line: a Said's macro of words.j2 given its values, else wording.error_words."""
    said = error.args[0] if error.args else None
    return WORDS(said.macro, **said.values) if isinstance(said, Said) else error_words(error)


def stored(record: RunRecord) -> RunRecord:
    """The record as the store keeps it: the interruption in words."""
    stop = record.interrupted
    return record if stop is None else record._replace(interrupted=interruption_words(stop))
