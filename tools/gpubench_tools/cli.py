"""What every gpubench command line shares: the program name in usage lines, the argument parser's
error line, and the rule that an unexpected exception is a one-line message, never a traceback.
The exit statuses themselves, UnusableInput and Number are status.py's (below every layer); they
are named here too, for the command lines.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from typing import Callable, NoReturn, Sequence

# Imported by the command lines from here as well (`from ..cli import EXIT_OK, Number, ...`).
from .status import EXIT_OK, EXIT_REGRESSION, EXIT_UNRESOLVED, EXIT_UNUSABLE, Number, UnusableInput


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser with the tools' error contract: a usage error is one line on stderr
    naming the program and the problem (`gpubench-compare: error: argument --alpha: ...`),
    exit 2. Subcommands' parsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_UNUSABLE, f"{self.prog}: error: {message} (--help for usage)\n")


def program_name(module: str) -> str:
    """The name the user typed: ``python -m gpubench_tools.X`` when run as a module, else the
    console script's own name (``gpubench-compare``), so the usage line can be pasted back."""
    argv0 = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if not argv0 or argv0 in ("__main__.py", "-c", "-m") or argv0.endswith(".py"):
        return f"python -m {module}"
    return argv0


def add_debug_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--debug",
        action="store_true",
        help="on an unexpected error, print the Python traceback as well as the one-line message",
    )


def run_main(
    prog: str, body: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None = None
) -> int:
    """Runs ``body(argv)`` under the exit-code contract: its return value is the exit status;
    ``UnusableInput`` and any exception it did not expect become one line on stderr and exit 2
    (the traceback only with ``--debug``); ``SystemExit`` from argparse and ``KeyboardInterrupt``
    pass through (neither is an Exception)."""
    from . import output  # the writer: it imports escape, which must not import this module

    args = list(sys.argv[1:] if argv is None else argv)
    output.reset()
    try:
        return body(args)
    except UnusableInput as error:
        output.warn(f"{prog}: error: {error}")
        return EXIT_UNUSABLE
    except BrokenPipeError:
        # `tool | head`: the reader left. Not a failure of the input, and no reason to change a
        # verdict the command had decided before it printed (output.decide).
        output._drop_stdout()
        return output.decided() or EXIT_OK
    except Exception as error:  # noqa: BLE001 - the contract: never a bare traceback, never 1
        if "--debug" in args:
            traceback.print_exc()
        output.warn(
            f"{prog}: error: unexpected {type(error).__name__}: {error} "
            "(unusable input; rerun with --debug for the traceback)"
        )
        return EXIT_UNUSABLE
