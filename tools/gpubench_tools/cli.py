"""What every gpubench command line shares: the exit-code contract, the program name in usage
lines, and the rule that an unexpected exception is a one-line message, never a traceback.

Exit codes (the same for report, compare, history, export, advise, benchjson and table):

- ``EXIT_OK`` (0): done; for a gate, nothing regressed.
- ``EXIT_REGRESSION`` (1): a real regression or failure that the command was asked to judge.
  Never used for a crash: an exception the code did not expect is unusable input (2), because a
  CI step reads 1 as "performance got worse".
- ``EXIT_UNUSABLE`` (2): unusable input or usage (a missing or malformed file, a bad option).
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from typing import Callable, Sequence

__all__ = [
    "EXIT_OK",
    "EXIT_REGRESSION",
    "EXIT_UNUSABLE",
    "UnusableInput",
    "add_debug_flag",
    "program_name",
    "run_main",
]

EXIT_OK = 0
EXIT_REGRESSION = 1
EXIT_UNUSABLE = 2


class UnusableInput(Exception):
    """Input the command cannot use; the message names the file and the problem."""


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
    (the traceback only with ``--debug``); ``SystemExit`` from argparse passes through."""
    from . import output  # the writer: it imports escape, which must not import this module

    args = list(sys.argv[1:] if argv is None else argv)
    output.reset()
    try:
        return body(args)
    except UnusableInput as error:
        output.warn(f"{prog}: error: {error}")
        return EXIT_UNUSABLE
    except (KeyboardInterrupt, SystemExit):
        raise
    except BrokenPipeError:
        # `tool | head`: the reader left. Not a failure of the input, and no reason to change a
        # verdict the command had decided before it printed (output.decide).
        output._drop_stdout()
        code = output.decided()
        return EXIT_OK if code is None else code
    except Exception as error:  # noqa: BLE001 - the contract: never a bare traceback, never 1
        if "--debug" in args:
            traceback.print_exc()
        output.warn(
            f"{prog}: error: unexpected {type(error).__name__}: {error} "
            "(unusable input; rerun with --debug for the traceback)"
        )
        return EXIT_UNUSABLE
