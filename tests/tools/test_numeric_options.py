"""Every numeric option of every command: a value at or beyond its extremes (0, negative,
1e-320, 1e308, NaN, inf, a string) is refused with one line that names the option, the value as
given and the valid range, and exit 2; a value in range is taken as the number it is.

The options are found by walking each command's argparse parser (subcommands included), not by
a list: an option whose `type` is a `cli.Number` is checked, and an option with a bare `int` or
`float` type fails the test, so a new numeric option is covered the day it is added.
"""

from __future__ import annotations

import argparse
import math
from typing import Any, Callable

import pytest
from conftest import REPO, caught_parser, examples
from hypothesis import given
from hypothesis import strategies as st

from gpubench_tools.cli import Number

EXTREMES = ["0", "-1", "-0.5", "1e-320", "1e308", "-1e308", "nan", "NaN", "inf", "-inf", "fast"]
EXTREMES += ["", "1e400", "0x10", "1_000", " ", "99999999999999999999999999", "1.5", "2**10"]


def _script_parser(name: str) -> Callable[[], argparse.ArgumentParser]:
    """The parser a script's main() builds, caught as it parses (the scripts build it inline)."""
    return lambda: caught_parser(REPO / name)


def _parsers() -> dict[str, Callable[[], argparse.ArgumentParser]]:
    from gpubench_tools.advise import cli as advise
    from gpubench_tools.compare import cli as compare
    from gpubench_tools.compare import interleave
    from gpubench_tools.history import cli as history
    from gpubench_tools.instructions import lane
    from gpubench_tools import export
    from gpubench_tools.report import cli as report

    return {
        "gpubench-compare": lambda: compare._parser("gpubench-compare"),
        "gpubench-paired-gate": lambda: interleave._parser("paired"),
        "gpubench-history": history._parser,
        "gpubench-report": report._parser,
        "gpubench-export": export._parser,
        "gpubench-advise": advise._parser,
        "instruction lane": lambda: lane._parser("instructions"),
        **{
            f"scripts/{name}": _script_parser(f"scripts/{name}")
            for name in (
                "measure-gate-power.py",
                "measure-gate-real.py",
                "measure_conditions.py",
                "measure_history_check.py",
            )
        },
    }


def _walk(parser: argparse.ArgumentParser, words: list[str]) -> list[tuple[list[str], Any]]:
    """(the words that reach the parser, action) for every action, through subcommands."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _walk(sub, words + [name])
        else:
            found.append((words, action))
    return found


def _required(parser: argparse.ArgumentParser, words: list[str]) -> list[str]:
    """Words that satisfy every required argument of the (sub)parser `words` reach."""
    out = list(words)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            continue
        if not action.option_strings:
            count = 1 if action.nargs in (None, "+") else 0
            out += ["x.json"] * count
        elif action.required:
            out += [action.option_strings[0], str((action.choices or ["x"])[0])]
    for action in parser._mutually_exclusive_groups:
        if action.required:
            first = action._group_actions[0]
            out += [first.option_strings[0]] + ([] if first.nargs == 0 else ["1x1x1"])
    return out


def _subparser(parser: argparse.ArgumentParser, words: list[str]) -> argparse.ArgumentParser:
    for word in words:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[word]
    return parser


def _options() -> list[tuple[str, Callable[[], argparse.ArgumentParser], list[str], str, Any]]:
    out = []
    for tool, build in _parsers().items():
        parser = build()
        for words, action in _walk(parser, []):
            if action.type in (int, float):
                pytest.fail(f"{tool} {' '.join(words)} {action.option_strings}: bare {action.type}")
            if isinstance(action.type, Number):
                out.append((tool, build, words, action.option_strings[0], action.type))
    return out


OPTIONS = _options()


def test_the_walk_finds_the_numeric_options() -> None:
    """Not an empty sweep: the options this page was written against are among those found."""
    found = {(tool, " ".join(words), flag) for tool, _, words, flag, _ in OPTIONS}
    for expected in [
        ("gpubench-compare", "", "--alpha"),
        ("gpubench-compare", "", "--max-ratio"),
        ("gpubench-compare", "", "--max-cv"),
        ("gpubench-history", "check", "--window"),
        ("gpubench-history", "chart", "--min-ratio"),
        ("gpubench-paired-gate", "", "--timeout"),
        ("scripts/measure_conditions.py", "", "--pairs"),
    ]:
        assert expected in found
    assert len(found) >= 25


def _parse(build: Callable[[], argparse.ArgumentParser], words: list[str], flag: str, value: str):
    parser = build()
    args = _required(_subparser(parser, words), words) + [f"{flag}={value}"]
    return parser.parse_args(args)


@pytest.mark.parametrize(
    "tool, build, words, flag, kind",
    OPTIONS,
    ids=[f"{o[0]} {' '.join(o[2])} {o[3]}" for o in OPTIONS],
)
@pytest.mark.parametrize("value", EXTREMES)
def test_an_extreme_value_is_one_line_naming_option_value_and_range(
    tool: str, build: Any, words: list[str], flag: str, kind: Number, value: str, capsys
) -> None:
    try:
        parsed = _parse(build, words, flag, value)
    except SystemExit as exc:
        _, err = capsys.readouterr()
        assert exc.code == 2
        assert len(err.strip().splitlines()) == 1, err
        assert flag in err and repr(value) in err and kind.range in err, err
        assert "unexpected" not in err and "Traceback" not in err
        return
    # Taken: then the value is a number inside the range (0 is a count for some options).
    assert parsed is not None and kind.inside(kind(value)), (tool, flag, value)


@examples(300)
@given(
    st.sampled_from(OPTIONS),
    st.one_of(
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
        st.integers(min_value=-(10**30), max_value=10**30).map(str),
        st.text(max_size=12),
    ),
)
def test_any_value_is_a_number_in_range_or_one_line(option: tuple[Any, ...], value: str) -> None:
    tool, build, words, flag, kind = option
    try:
        kind_value = kind(value)
    except argparse.ArgumentTypeError as exc:
        message = str(exc)
        assert "\n" not in message and repr(value) in message and kind.range in message
        return
    assert math.isfinite(kind_value) and kind.inside(kind_value)
    assert isinstance(kind_value, int) == kind.integer
