"""The one way the tools build a Jinja2 environment for their pages and texts.

Every tool's templates live in its package's `templates/` folder (package data, so an installed
tool finds them). Block tags on lines of their own leave no line behind (`trim_blocks`,
`lstrip_blocks`), so a template reads like the text it writes. A name the code does not pass is
an error, not an empty string (`StrictUndefined`): a template left behind by a change in the data
fails the tests instead of printing nothing. The Markdown filters `md` (escape.md_text) and
`code` (escape.md_code) are always there, and so are the counts' grammar, `plural` and `agree`
(units.py: "1 row", "2 rows"; "was", "were"), decided in Python; what else differs (autoescaping for HTML, `finalize`,
trailing newlines, extensions) each tool says in its call.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import jinja2

from .escape import md_code, md_text
from .units import agree, plural


def environment(package: str, **options: Any) -> jinja2.Environment:
    """An environment over `package`'s templates/ folder; `options` go to jinja2.Environment."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader(package, "templates"),
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
        **options,
    )
    env.filters.update(md=md_text, code=md_code)
    env.globals.update(plural=plural, agree=agree)
    return env


class Words:
    """The one way the tools reach their words: `words("macro", name=value, ...)` renders the named
    macro of one template of a package, with keyword arguments only, and returns its text.

    The environment is made on the first call (`make_environment`), so a command that only parses
    its arguments or refuses its input never imports matplotlib's or Jinja's startup cost twice.
    Printing is not here: the command lines print (output.py), words only return text.
    """

    def __init__(self, make_environment: Callable[[], jinja2.Environment], template: str) -> None:
        self._make_environment = make_environment
        self.template = template

    @functools.cached_property
    def _macros(self) -> Any:
        return self._make_environment().get_template(self.template).module

    def __call__(self, macro: str, /, **values: Any) -> str:
        return str(getattr(self._macros, macro)(**values))
