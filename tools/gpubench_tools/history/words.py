"""What gpubench-history and gpubench-export say: the macros of the package's templates
(templates/words.j2: the check and `add`; templates/export.j2: the export), reached the one way
(templating.Words). The check, the store and the export decide, as records; these word them."""

from __future__ import annotations

import functools

import jinja2

from ..wording import unknown_conditions_note
from ..escape import one_line, term_text
from ..policy import MIN_UNDISTURBED
from ..templating import Words, environment
from ..units import fmt_time, plural


@functools.cache
def _environment() -> jinja2.Environment:
    env = environment(__package__)
    env.filters.update(term=term_text, one_line=one_line)
    env.globals.update(fmt_time=fmt_time, plural=plural, MIN_UNDISTURBED=MIN_UNDISTURBED)
    env.globals.update(unknown_conditions_note=unknown_conditions_note)
    return env


WORDS = Words(_environment, "words.j2")
EXPORT_WORDS = Words(_environment, "export.j2")
