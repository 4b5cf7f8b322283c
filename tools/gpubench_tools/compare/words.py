"""The one Jinja2 environment of compare's templates, reached through templating.Words: `say`
the notes, warnings and errors of the draws and the statistics (templates/notes.j2), which the
draws and the statistics leave as data (status.Said; `worded`, `error_line`), render.words
the renderer's sentences (templates/words.j2). Python decides, as data, and passes every figure
and choice as plain values; the templates word it. No autoescape: the outputs are text and Markdown, not HTML; every piece of data goes through
`md`/`code` (Markdown) or finalize (one_line, terminal).

Each macro of notes.j2 and words.j2 is one line of text, without escaping (the caller's template
escapes it for its output). notes.j2 holds, in this order, the notes of independent repetitions
(engine.py), of one metric's statistics (stats.py), of interleaved pairs (paired.py) and of the
files before anything is judged (verdict.check_files). words.j2 holds the sentences of the
verdicts, shared by the terminal text, the Markdown and the --json document, render.py computing
every figure and choice they state: the gate's reasons, the information lines (render.Group: how
many benchmarks, of which kind, and why), and last the pairs' (a benchmark's estimate as signed
changes in percent, the gate line of render.GateLine)."""

from __future__ import annotations

import functools
from typing import Any, Callable

import jinja2

from ..escape import one_line
from ..templating import Words, environment
from ..units import plural
from ..row_rules import group_reasons
from ..status import Said
from ..wording import cut_off_lines, cut_off_words, disturbance_causes_line
from ..wording import unknown_conditions_note
from .stats import repetitions_needed


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


# The core's words (wording.py) a Said of the draws may name, beside the macros of notes.j2.
_CORE: dict[str, Callable[..., Any]] = {
    f.__name__: f for f in (cut_off_lines, disturbance_causes_line, unknown_conditions_note)
}


def spoken(note: Any) -> Any:
    """A Said's words (cut_off_lines: a list of lines); any other value as it is."""
    if not isinstance(note, Said):
        return note
    return _CORE.get(note.macro, functools.partial(say, note.macro))(**note.values)


def lines(notes: list[Any]) -> list[str]:
    """The notes' words, one line each."""
    groups = [note if isinstance(note, list) else [note] for note in map(spoken, notes)]
    return [line for group in groups for line in group]


def worded(j: Any) -> Any:
    """The Judgement `j` with the notes, reasons and warnings its draws left as data worded, in
    place (once: words stay words)."""
    j.warnings[:], j.cut_off = lines(j.warnings), spoken(j.cut_off)
    for b in j.benchmarks:
        b.why = spoken(b.why)
        if b.disturbance is not None:
            b.disturbance.why = spoken(b.disturbance.why)
        for m in b.metrics:
            m.notes[:] = lines(m.notes)
    return j


def error_line(error: BaseException) -> str:
    """An error's line: the words of the Said it carries, else its str()."""
    return spoken(error.args[0]) if error.args and isinstance(error.args[0], Said) else str(error)


def repetition_rule(alpha: float) -> str:
    """The rule in words, the same in the tool's output, docs/regression-gate.md and the README."""
    return say("repetition_rule", needed=repetitions_needed(alpha), alpha=alpha)
