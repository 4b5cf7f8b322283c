"""The one way the tools build a Jinja2 environment for their pages and texts.

Every tool's templates live in its package's `templates/` folder (package data, so an installed
tool finds them). Block tags on lines of their own leave no line behind (`trim_blocks`,
`lstrip_blocks`), so a template reads like the text it writes. A name the code does not pass is
an error, not an empty string (`StrictUndefined`): a template left behind by a change in the data
fails the tests instead of printing nothing. The Markdown filters `md` (escape.md_text) and
`code` (escape.md_code) are always there; what else differs (autoescaping for HTML, `finalize`,
trailing newlines, extensions) each tool says in its call.
"""

from __future__ import annotations

from typing import Any

import jinja2

from .escape import md_code, md_text


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
    return env
