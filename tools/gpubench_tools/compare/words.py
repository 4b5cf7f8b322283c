"""The one Jinja2 environment of compare's templates, reached through templating.Words: `say`
the notes, warnings and errors of the draws and the statistics (templates/notes.j2), render.words
the renderer's sentences (templates/words.j2). Python decides, as data, and passes every figure
and choice as plain values; the templates word it. No autoescape: the outputs are text and Markdown, not HTML; every piece of data goes through
`md`/`code` (Markdown) or finalize (one_line, terminal)."""

from __future__ import annotations

import functools
from typing import Any

import jinja2

from ..escape import one_line
from ..templating import Words, environment
from ..units import plural
from ..row_rules import group_reasons
from ..wording import cut_off_words


class Painted(str):
    """Terminal text already laid out, which finalize keeps: a line folded to one line with its
    colour codes, or the lines a macro's caller wrote (each of their pieces already folded)."""


def by_message(j: Any, verdict: str) -> list[tuple[str, list[str]]]:
    """Names of the benchmarks of a Judgement with this verdict (failed, skipped), one group per
    message."""
    groups = group_reasons(j.of(verdict), lambda bench: bench.why or "")
    return [(message, [bench.name for bench in group]) for message, group in groups]


@functools.cache
def templates(terminal: bool = False) -> jinja2.Environment:
    """The environment; `terminal`: every {{ }} is folded to one line but a Painted line."""
    finalize = (lambda v: v if isinstance(v, Painted) else one_line(v)) if terminal else None
    env = environment(__package__, finalize=finalize, keep_trailing_newline=True)
    env.filters.update(one=one_line)
    env.globals.update(plural=plural, repr=repr, cut_off=cut_off_words)
    return env


# The notes, warnings and errors of the draws and the statistics: say("macro", name=value).
say = Words(templates, "notes.j2")
