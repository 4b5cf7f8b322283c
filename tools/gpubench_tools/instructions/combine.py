"""The gate's verdict from its two lanes: the timing lane (compare/interleave.py) and the
instruction lane (lane.py).

The rule (``combined_exit``): a regression in either lane fails the gate (exit 1): a loop that
runs 1 % more instructions is slower code whatever the clock could resolve, and a loop the clock
shows slower is slower whatever its instructions (cache and memory effects, waiting). Otherwise
the timing lane's status stands: the instruction lane cannot vouch for what it does not see, so
its PASS never turns the timing lane's "cannot judge" into a pass, and an instruction lane that
counted nothing (no valgrind, a base built before the instruction regions) is said on its line
and changes nothing.

``python -m gpubench_tools.instructions.combine --timing-exit T --instructions-exit I`` prints
both lanes' lines and the gate's, writes one Markdown with both lanes (``--markdown``), and exits
with the combined status.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from .. import output
from ..cli import EXIT_OK, EXIT_REGRESSION, EXIT_UNRESOLVED, EXIT_UNUSABLE, ArgumentParser
from ..cli import Number, add_debug_flag, program_name, run_main
from .render import templates, words

MODULE = "gpubench_tools.instructions.combine"
EXIT = Number(0, 255, integer=True)
# The gate's word for its status, and a lane's for its own (None: the lane did not run); a status
# without a word could not judge.
_GATE = {EXIT_OK: "PASS", EXIT_REGRESSION: "FAIL", EXIT_UNRESOLVED: "NOT RESOLVED"}
_LANE = {EXIT_OK: "pass", EXIT_REGRESSION: "FAIL", EXIT_UNRESOLVED: "not resolved", None: "not run"}


@dataclass(frozen=True)
class GateLine:
    """The gate's line: its verdict word and exit status, and each lane's word."""

    verdict: str
    code: int
    timing: str
    instructions: str


def combined_exit(timing: int, instructions: int | None) -> int:
    """The gate's exit status from the two lanes' (None: the instruction lane did not run)."""
    return EXIT_REGRESSION if EXIT_REGRESSION in (timing, instructions) else timing


def gate_record(timing: int, instructions: int | None) -> GateLine:
    code = combined_exit(timing, instructions)
    lanes = [_LANE.get(c, "cannot judge or count") for c in (timing, instructions)]
    return GateLine(_GATE.get(code, "CANNOT JUDGE"), code, *lanes)


def gate_line(timing: int, instructions: int | None) -> str:
    """The gate's one line: its status and each lane's, in words (templates/words.j2)."""
    return words("gate_line", g=gate_record(timing, instructions))


def _read(path: str | None) -> str:
    """A lane's output file, "" where it was not given or cannot be read."""
    try:
        return Path(path).read_text(encoding="utf-8") if path else ""
    except OSError:
        return ""


def _gate_of(path: str | None) -> str | None:
    """The 'gate' line a lane's --json wrote, if it can be read."""
    try:
        doc = json.loads(_read(path))
    except ValueError:
        return None
    line = doc.get("gate") or doc.get("error") if isinstance(doc, dict) else None
    return str(line) if line else None


def render_markdown(timing: int, instructions: int | None, timing_md: str, instr_md: str) -> str:
    """Both lanes' Markdown under the gate's line (templates/gate.md.j2)."""
    page = templates().get_template("gate.md.j2")
    gate = gate_line(timing, instructions)
    return page.render(gate=gate, timing=timing_md.strip(), instructions=instr_md.strip())


def _run(prog: str, argv: Sequence[str] | None) -> int:
    parser = ArgumentParser(prog=prog, description="The gate's verdict from its two lanes.")
    add = parser.add_argument
    add("--timing-exit", type=EXIT, required=True, help="the timing lane's exit status")
    add("--instructions-exit", type=EXIT, help="the instruction lane's (omit: not run)")
    add("--timing-json", help="the timing lane's --json")
    add("--instructions-json", help="the instruction lane's --json")
    add("--timing-markdown", help="the timing lane's --markdown")
    add("--instructions-markdown", help="the instruction lane's --markdown")
    add("--markdown", metavar="OUT.md", help="write both lanes as one Markdown")
    add_debug_flag(parser)
    args = parser.parse_args(argv)
    timing, instructions = args.timing_exit, args.instructions_exit
    code = output.decide(combined_exit(timing, instructions))
    lanes = (("timing lane", args.timing_json), ("instruction lane", args.instructions_json))
    for lane, path in lanes:
        if line := _gate_of(path):
            output.write_lines(f"{lane}: {line}")
    output.write_lines(gate_line(timing, instructions))
    if code == EXIT_UNUSABLE:
        output.warn(f"{prog}: error: {gate_line(timing, instructions)}")
    lanes_md = args.timing_markdown, args.instructions_markdown
    markdown = lambda: render_markdown(timing, instructions, *map(_read, lanes_md))
    output.write_after_verdict(prog, code, args.markdown, markdown)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    prog = program_name(MODULE)
    return run_main(prog, lambda a: _run(prog, a), argv)


if __name__ == "__main__":
    sys.exit(main())
