"""What compare says in its notes, warnings and errors: the macros of templates/notes.j2, callable
from Python. The draws and the statistics decide, as data; the template words it."""

from __future__ import annotations

import functools
from typing import Any

from ..templating import environment
from ..units import plural


@functools.cache
def say() -> Any:
    """The sentences of templates/notes.j2 (each macro one line of text, without escaping)."""
    env = environment(__package__)
    env.globals.update(plural=plural, repr=repr)
    return env.get_template("notes.j2").make_module()
