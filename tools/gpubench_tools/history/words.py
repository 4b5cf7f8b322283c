"""What gpubench-history and gpubench-export say: the macros of the package's templates, callable
from Python. The check, the store and the export decide, as data; these templates word it
(templates/words.j2: the check and `add`; templates/export.j2: the export)."""

from __future__ import annotations

import functools
from typing import Any

from ..wording import unknown_conditions_note
from ..escape import one_line, term_text
from ..policy import MIN_UNDISTURBED
from ..templating import environment
from ..units import fmt_time, plural
from .check import FAILING, LISTED, MISSING, OK, REGRESSION, SUMMED, SUSPECT


@functools.cache
def words(template: str = "words.j2") -> Any:
    """The macros of one template of templates/ (the environment, filters and names it words
    with are one for both)."""
    env = environment(__package__)
    env.filters.update(term=term_text, one_line=one_line)
    env.globals.update(fmt_time=fmt_time, plural=plural, MIN_UNDISTURBED=MIN_UNDISTURBED)
    env.globals.update(unknown_conditions_note=unknown_conditions_note, FAILING=FAILING)
    env.globals.update(LISTED=LISTED, SUMMED=SUMMED, KINDS=[OK, *LISTED, *SUMMED, MISSING])
    env.globals.update(REGRESSION=REGRESSION, SUSPECT=SUSPECT, OK=OK, MISSING=MISSING)
    return env.get_template(template).make_module()
