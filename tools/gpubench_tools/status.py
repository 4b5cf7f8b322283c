"""The exit statuses of every gpubench command, the input a command cannot use, and the check of
every number an option or a file gives: the contract below every layer, so that readers and
computations can say "unusable" without importing a command line (cli.py).

Exit codes (the same for report, compare, history, export, advise, instructions and table):

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
import re
from dataclasses import dataclass
from typing import Any

EXIT_OK = 0
EXIT_REGRESSION = 1
EXIT_UNUSABLE = 2
EXIT_UNRESOLVED = 3


class UnusableInput(Exception):
    """Input the command cannot use; the message names the file and the problem."""


@dataclass(frozen=True)
class Said:
    """A sentence as data, for a computation that must not word it: the macro of the rendering
    layer's templates that says it and the keyword values it is given (templating.Words)."""

    macro: str
    values: dict[str, Any]


def said(macro: str, /, **values: Any) -> Said:
    """The Said of `macro` given `values` (keyword arguments, as templating.Words takes them)."""
    return Said(macro, values)


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
