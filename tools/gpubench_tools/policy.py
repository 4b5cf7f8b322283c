"""What each tool does with each class of input the reader finds: one table, as data.

benchjson (the one reader) says per file *complete*, *cut off* or *not a bench file*, and per row
*valid*, *skipped*, *failed* or *invalid* (a field missing or mistyped: *malformed*; or a value
that cannot be a measurement: *unsound*). This module says, for every tool, what follows from
each: refuse the input (exit 2), fail the gate (exit 1), use the sound rest and warn, or list it
without changing the exit status. The tools ask `action(tool, situation)` at each of these
decisions instead of deciding on their own. The table is data, policy.json beside this module;
docs/input-policy.md shows it as a Markdown table (tests/tools/test_reader_policy.py keeps the two
equal).

Principles the table follows: a run that is not whole (cut off, or interrupted by a signal) or
measured nothing never passes a gate; what cannot be judged is unusable input (2), never a pass
and never a regression; a malformed file is the writer's problem (2), an unsound value bench
wrote is the code's (a gate's 1); tools that describe (report, advise) show what is sound and say what was left out; tools
that store or publish (history add, export) take a file whole or not at all. The instruction lane
counts instructions, which no load changes, from every row that opened a region. History check
meets only what history add stored: whole files with sound rows, and the finished rows of
interrupted runs, marked.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

from .status import EXIT_REGRESSION, EXIT_UNUSABLE

# What a tool does (Action.kind).
REFUSE = "refuse"  # exit 2: one line naming the file (and row and field); nothing of it used
FAIL = "fail"  # exit 1: a gate's failure, named in the verdict
USE = "use"  # the sound rest is used; one warning line says what was left out
LIST = "list"  # named in the output; does not change the exit status

# Situations (what the reader found).
NOT_BENCH = "not a bench file"
CUT_OFF = "cut-off file"
INTERRUPTED = "interrupted run"
NOTHING_MEASURED = "nothing measured"
MALFORMED_ROW = "malformed row"
UNSOUND_ROW = "unsound row"
FAILED_ROW = "failed row"
SKIPPED_ROW = "skipped row"
DISTURBED_ROW = "disturbed repetition"
UNKNOWN_CONDITIONS = "conditions unknown"

# A benchmark's number (a headline, a dashboard's value) comes from its undisturbed repetitions
# when at least this many remain; with fewer, a median of one or two would be a guess, so all its
# repetitions are used and the number is marked as measured while disturbed.
MIN_UNDISTURBED = 3
HEADLINE_RULE = (
    f"a benchmark's number is the median of its undisturbed repetitions where at least "
    f"{MIN_UNDISTURBED} remain (or none was disturbed); else the median of all of them, marked "
    "as measured while disturbed"
)


@dataclass(frozen=True)
class Action:
    kind: str  # REFUSE, FAIL, USE or LIST
    # Whether the tool names what it found in its output (a warning, a listed line): always for
    # LIST; for USE where the sound rest is used with a warning, not where it is left out silently.
    says: bool
    does: str  # what the tool does, in the words of the table

    @property
    def exit_code(self) -> int | None:
        """The exit status this action forces, None where it leaves the status alone."""
        return {REFUSE: EXIT_UNUSABLE, FAIL: EXIT_REGRESSION}.get(self.kind)


# The table, as data (policy.json beside this module): a description per situation, and per tool
# the (kind, says, words) of what it does in each situation it meets, tools in the docs' column
# order.
_TABLE = json.loads(resources.files(__package__).joinpath("policy.json").read_text("utf-8"))
SITUATIONS: dict[str, str] = _TABLE["situations"]
POLICY: dict[str, dict[str, Action]] = {
    tool: {situation: Action(*cell) for situation, cell in row.items()}
    for tool, row in _TABLE["tools"].items()
}
TOOLS: tuple[str, ...] = tuple(POLICY)


def action(tool: str, situation: str) -> Action:
    """What `tool` does in `situation`; KeyError for a pair the table does not declare (a new
    tool or situation must be added to the table, not decided in place)."""
    return POLICY[tool][situation]


def refused(tool: str) -> set[str]:
    """The situations `tool` refuses (exit 2)."""
    return {s for s, a in POLICY[tool].items() if a.kind == REFUSE}


def file_situation(report: Any) -> str | None:
    """The situation of a whole file the reader read (a benchjson.BenchReport): INTERRUPTED for
    a run a signal stopped, CUT_OFF for one whose writer stopped halfway, None for a complete
    file. An interrupted file whose text is cut short as well is CUT_OFF: its rows are a
    prefix."""
    if report.recovered_from_truncation:
        return CUT_OFF
    return INTERRUPTED if report.interrupted is not None else None
