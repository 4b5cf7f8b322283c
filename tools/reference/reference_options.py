"""The command lines of the PyTorch references: every numeric option checked where it is read.

A value outside its range (0, a negative count, 1e308 seconds, nan, inf, a word) is refused with
one line naming the option, the value as given and the range, and exit status 2, as the tools
do (gpubench_tools.cli.Number). The references run under a framework's interpreter (the one with
PyTorch, on a GPU machine), which need not hold the tools' packages, so they use this small
standard-library form of the same rule instead of importing the tools.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Callable, NoReturn


class ReferenceParser(argparse.ArgumentParser):
    """argparse with one line for a usage error: `<script>: error: argument --seconds: ...`."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message} (--help for usage)\n")
        raise SystemExit(2)


def number(
    low: float, high: float, integer: bool = False, unit: str = ""
) -> Callable[[str], float]:
    """An argparse type: a finite number (`integer`: a whole number) from `low` to `high`."""
    kind = "an integer" if integer else "a number"
    bounds = f"{int(low)} to {int(high)}" if integer else f"{low:g} to {high:g}"
    wanted = f"{kind} from {bounds}" + (f" ({unit})" if unit else "")

    def parse(text: str) -> float:
        try:
            value: float = int(text) if integer else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not {wanted}") from None
        if not (math.isfinite(value) and low <= value <= high):
            raise argparse.ArgumentTypeError(f"'{text}' is not {wanted}")
        return value

    parse.__name__ = "integer" if integer else "number"
    return parse


def integers(low: int, high: int) -> Callable[[str], list[int]]:
    """An argparse type: a comma-separated list of integers from `low` to `high` ("1,16,64")."""
    one = number(low, high, integer=True)

    def parse(text: str) -> list[int]:
        try:
            return [int(one(part.strip())) for part in text.split(",")]
        except argparse.ArgumentTypeError:
            raise argparse.ArgumentTypeError(
                f"'{text}' is not a comma-separated list of integers from {low} to {high}"
            ) from None

    parse.__name__ = "list of integers"
    return parse


# The ranges the references share.
SECONDS = number(0.001, 3600, unit="seconds")
EPOCHS = number(1, 10_000_000, integer=True)
BATCHES = integers(1, 1 << 24)
THREADS = integers(1, 4096)
