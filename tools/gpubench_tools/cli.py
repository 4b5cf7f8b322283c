"""What every gpubench command line shares: the exit-code contract, the program name in usage
lines, and the rule that an unexpected exception is a one-line message, never a traceback.

Exit codes (the same for report, compare, history, export, advise, benchjson and table):

- ``EXIT_OK`` (0): done; for a gate, nothing regressed.
- ``EXIT_REGRESSION`` (1): a real regression or failure that the command was asked to judge.
  Never used for a crash: an exception the code did not expect is unusable input (2), because a
  CI step reads 1 as "performance got worse".
- ``EXIT_UNUSABLE`` (2): unusable input or usage (a missing or malformed file, a bad option).
- ``EXIT_UNRESOLVED`` (3): the gates only (compare, the paired gate): what they could measure could
  not resolve the question (the machine was busy: nothing judged but for disturbed repetitions;
  or, in the paired gate, an interval still includes a slowdown it cannot pass). Neither a pass
  nor a regression; a CI job decides how to treat it (.ci/run: README).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import traceback
from dataclasses import dataclass
from typing import Any, Callable, NoReturn, Sequence

EXIT_OK = 0
EXIT_REGRESSION = 1
EXIT_UNUSABLE = 2
EXIT_UNRESOLVED = 3


class UnusableInput(Exception):
    """Input the command cannot use; the message names the file and the problem."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser with the tools' error contract: a usage error is one line on stderr
    naming the program and the problem (`gpubench-compare: error: argument --alpha: ...`),
    exit 2. Subcommands' parsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_UNUSABLE, f"{self.prog}: error: {message} (--help for usage)\n")


_INTEGER = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True)
class Number:
    """The type of every numeric option and the check of every numeric config value: a finite
    number (`integer`: a whole number, written as one) from `low` to `high`, an end excluded
    where `low_open` / `high_open`. As an argparse `type` it turns the text into the number or
    refuses it with one line naming the value as given and the range (argparse adds the option:
    `argument --alpha: '1e-320' is not a number from 1e-06, below 1`); `problem(value, text)`
    says the same of a value read from a file, None for a usable one."""

    low: float
    high: float
    integer: bool = False
    low_open: bool = False
    high_open: bool = False
    unit: str = ""

    @property
    def __name__(self) -> str:  # argparse names a type in messages of its own
        return "integer" if self.integer else "number"

    @property
    def range(self) -> str:
        """'an integer from 1 to 10000', 'a number above 0, at most 3600 (seconds)'."""
        kind = "an integer" if self.integer else "a number"
        lo, hi = (f"{int(v)}" if self.integer else f"{v:g}" for v in (self.low, self.high))
        low = f"above {lo}" if self.low_open else f"from {lo}"
        if self.low_open or self.high_open:
            high = f", below {hi}" if self.high_open else f", at most {hi}"
        else:
            high = f" to {hi}"
        return f"{kind} {low}{high}" + (f" ({self.unit})" if self.unit else "")

    def inside(self, value: float | int) -> bool:
        """A finite value in the range (an integer too large for a float is not)."""
        try:
            number = float(value)
        except OverflowError:
            return False
        above = number > self.low if self.low_open else number >= self.low
        below = number < self.high if self.high_open else number <= self.high
        return math.isfinite(number) and above and below

    def problem(self, value: Any, text: str) -> str | None:
        """What is wrong with `value`, read from a file where it is written `text`: "NaN is not
        a number above 0, at most 100"; None for a usable value."""
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        whole = isinstance(value, int) or not self.integer
        return None if number and whole and self.inside(value) else f"{text} is not {self.range}"

    def __call__(self, text: str) -> float | int:
        stripped = text.strip()
        value: float | int
        try:
            if self.integer and not _INTEGER.fullmatch(stripped):
                raise ValueError(text)
            value = int(stripped) if self.integer else float(stripped)
            if not self.inside(value):
                raise ValueError(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {self.range}") from None
        return value


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
