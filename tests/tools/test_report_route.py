"""The report's route stays short: how often the way from `build_report`'s inputs to the page
goes back into a module it has already left.

The route is traced, not read: `sys.setprofile` sees every call while the report of the committed
H100 run is built. A call is on the route when it passes the inputs on, that is when one of its
arguments (other than `self`) is a pandas frame or series or one of the tools' own objects (the
table, a topic, a context). An entry is a distinct module-crossing call on the route (caller
function, callee function); every entry beyond the first into each module is a return to a module
already left. Formatting a number or wording a sentence does not carry the inputs and is not
counted.

`python tests/tools/test_report_route.py` prints the entries per module.
"""

from __future__ import annotations

import sys
import tempfile
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

import pandas as pd

import gpubench_tools
from gpubench_tools.report.cli import build_report

REPO = Path(__file__).resolve().parents[2]
INPUTS = [
    str(REPO / "reports" / "baselines" / "h100-80gb-hbm3-matmul.json"),
    str(REPO / "reports" / "baselines" / "h100-80gb-hbm3-mlp.json"),
]
MOST_RETURNS = 25
_ROOT = str(Path(gpubench_tools.__file__).parent)


def _module(frame: FrameType) -> str | None:
    name = frame.f_code.co_filename
    return name[len(_ROOT) + 1 :] if name.startswith(_ROOT) else None


def _carries_inputs(frame: FrameType) -> bool:
    code = frame.f_code
    for name in code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]:
        value = frame.f_locals.get(name)
        if name == "self":
            continue
        if isinstance(value, (pd.DataFrame, pd.Series)):
            return True
        if type(value).__module__.startswith("gpubench_tools"):
            return True
    return False


def route(inputs: list[str]) -> set[tuple[str, str, str, str]]:
    """(caller module, caller, callee module, callee) of every call on the route."""
    entries: set[tuple[str, str, str, str]] = set()

    def watch(frame: FrameType, event: str, _arg: Any) -> None:
        callee = _module(frame) if event == "call" else None
        if callee is None:
            return
        back = frame.f_back
        while back is not None and _module(back) is None:
            back = back.f_back  # a callback through pandas: the tools' frame that made the call
        caller = _module(back) if back is not None else None
        if caller is not None and back is not None and caller != callee and _carries_inputs(frame):
            entries.add((caller, back.f_code.co_qualname, callee, frame.f_code.co_qualname))

    with tempfile.TemporaryDirectory() as out:
        sys.setprofile(watch)
        try:
            build_report(inputs, Path(out))
        finally:
            sys.setprofile(None)
    return entries


def returns(entries: set[tuple[str, str, str, str]]) -> int:
    return len(entries) - len({callee for _, _, callee, _ in entries})


def test_the_route_returns_to_a_module_it_left_at_most_25_times() -> None:
    entries = route(INPUTS)
    per_module = Counter(callee for _, _, callee, _ in entries)
    assert returns(entries) <= MOST_RETURNS, per_module.most_common()


if __name__ == "__main__":
    found = route(sys.argv[1:] or INPUTS)
    for module, count in Counter(callee for _, _, callee, _ in found).most_common():
        print(f"{count:4d} {module}")
    modules = len({callee for _, _, callee, _ in found})
    print(f"{len(found)} entries into {modules} modules: {returns(found)} returns")
