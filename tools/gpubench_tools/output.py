"""The one writer of every tool: the verdict is decided first, and nothing that happens to an
output afterwards changes it.

- `decide(code)` records the exit status a command has decided (a gate's verdict) before it
  prints anything; cli.run_main returns it whatever happens to the output afterwards.
- `write_lines(line)` / `warn(line)` print one line on stdout / stderr, sanitised for a terminal or CI
  log (escape.log_line: no control characters, no line a CI runner takes for a command; a line
  coloured whole keeps its colour only where the caller says the terminal takes it). A closed
  stdout (`tool | head`, `tool | true` under pipefail: EPIPE) is noted once and the rest of stdout
  is dropped: the command goes on, and its exit status stays the decided one. stderr keeps
  working, so the reason for an exit status is never lost with stdout.
- `write_side(path, text, what)` writes a side output (--markdown, --json, --out): it returns
  None, or the one line saying that it could not, which the command prints on stderr and counts
  under its documented rule (docs/input-policy.md, "Outputs") instead of losing its verdict.
- `write_reports` writes the --markdown and --json pair of a judging command; `write_after_verdict`
  does so after the verdict and names on stderr what could not be written.
"""

from __future__ import annotations

import errno
import json
import os
import sys
from typing import Any, Callable

from .escape import log_line, term_text

_state: dict[str, object] = {"code": None, "stdout_closed": False}


def reset() -> None:
    """Forget a decided status (run_main calls it when a command starts)."""
    _state.update(code=None, stdout_closed=False)


def decide(code: int) -> int:
    """Record the exit status the command has decided; returns it."""
    _state["code"] = code
    return code


def decided() -> int | None:
    return _state["code"]  # type: ignore[return-value]


def _drop_stdout() -> None:
    """After EPIPE: send the rest of stdout to /dev/null, so that neither a later print nor the
    interpreter's final flush fails (Python would exit 120 after a failed final flush)."""
    _state["stdout_closed"] = True
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass  # not a real file (a test's capture): nothing will be flushed to a pipe


def _write(stream: Any, lines: tuple[str, ...], color: bool = False) -> bool:
    """Each of `lines` one line on `stream`, sanitised; False where the reader closed it."""
    try:
        stream.write("".join(log_line(line, color) + "\n" for line in lines))
        stream.flush()
    except OSError as exc:  # BrokenPipeError is one; EINVAL is a closed pipe on some systems
        if not isinstance(exc, BrokenPipeError) and exc.errno not in (errno.EPIPE, errno.EINVAL):
            raise
        return False
    return True


def write_lines(*lines: str, color: bool = False) -> None:
    """Each argument one line on stdout, sanitised (a newline inside one is data: folded). A
    block the command built line by line is passed as block.splitlines(). `color`: stdout is a
    terminal that takes colour (a line coloured whole keeps its colour code)."""
    if not _state["stdout_closed"] and not _write(sys.stdout, lines, color):
        _drop_stdout()


def warn(*lines: str) -> None:
    """Each argument one line on stderr, sanitised like write_lines(); a closed stderr is ignored."""
    _write(sys.stderr, lines)


def write_side(path: str, text: str, what: str) -> str | None:
    """Write a side output; None when written, else one line naming it and why not."""
    try:
        folder = os.path.dirname(os.path.abspath(path))
        os.makedirs(folder, exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except (OSError, ValueError) as exc:
        why = getattr(exc, "strerror", None) or str(exc)
        return f"could not write the {what} {term_text(path)}: {term_text(why)}"
    return None


def write_reports(
    markdown: str | None,
    render_markdown: Callable[[], str],
    json_path: str | None = None,
    doc: Callable[[], Any] = dict,
) -> list[str]:
    """Write a command's --markdown (`render_markdown()`) and --json (`doc()` as JSON) where
    their paths are set; the one line for each that could not be written (a renderer that fails
    counts as a failed side output: it must not take the verdict with it)."""
    problems = []
    sides = (
        (markdown, "Markdown report (--markdown)", render_markdown),
        (json_path, "JSON result (--json)", lambda: json.dumps(doc(), indent=2) + "\n"),
    )
    for path, what, render in (side for side in sides if side[0]):
        try:
            problems.append(write_side(path, render(), what))
        except Exception as exc:  # noqa: BLE001 - a side output never costs the verdict
            problems.append(f"could not render the {what}: {type(exc).__name__}: {exc}")
    return [problem for problem in problems if problem is not None]


def write_after_verdict(
    prog: str,
    code: int,
    markdown: str | None,
    render_markdown: Callable[[], str],
    json_path: str | None = None,
    doc: Callable[[], Any] = dict,
) -> None:
    """write_reports once the verdict `code` is decided: a side output that could not be written
    is named on stderr, and the exit status stays the verdict's."""
    for problem in write_reports(markdown, render_markdown, json_path, doc):
        warn(f"{prog}: {problem}; the verdict above stands (exit {code})")
