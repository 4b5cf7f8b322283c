"""The gate's instruction lane: a base and a contender bench under Valgrind's callgrind, the
instructions per iteration of each timed loop compared.

``python -m gpubench_tools.instructions --base-bench A --contender-bench B`` runs each side once
as ``valgrind --tool=callgrind --instr-atstart=no --collect-atstart=no --trace-children=yes``
with one iteration per benchmark, the two side by side (the counts do not depend on the load, so
the lane takes the time of one side), reads the regions the timers dumped (dumps.py, counts.py),
judges them (judge.py) and prints the verdicts (render.py). Exit 0 pass, 1 a benchmark runs at
least --max-change more instructions per iteration or lost its count, 2 nothing was counted (no
valgrind, a side without instruction regions, a side that failed under Valgrind); the reason is
one line. ``--from DIR`` judges the dumps of an earlier run again without running anything.

How each side runs, and why:

- ``--trace-children=yes``: a side may be a wrapper script that execs bench (``ci_gate.sh
  --against`` makes one); without it Valgrind would leave bench itself running natively.
- ``OPENBLAS_CORETYPE=Haswell`` (``--openblas-coretype``): Valgrind's emulated CPU has AVX2 but no
  AVX-512, so OpenBLAS's own choice under Valgrind depends on the host; one fixed kernel set
  makes the base and the contender run the same OpenBLAS code, and stops bench from restarting
  itself with another core type, which would leave Valgrind.
- ``CUDA_VISIBLE_DEVICES=`` (empty): no GPU row runs under Valgrind.
- ``--benchmark_min_time=1e-9``: one iteration per benchmark; the counts do not need more.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from .. import output
from ..cli import EXIT_UNUSABLE, ArgumentParser, Number, UnusableInput, add_debug_flag
from ..cli import program_name, run_main
from ..policy import CUT_OFF, NOT_BENCH, NOTHING_MEASURED, REFUSE, action
from .counts import per_iteration
from .dumps import DumpError, read_dumps
from .judge import MAX_CHANGE, VERDICT_COLUMNS, InstructionRules, judge_counts, lane_exit
from .render import LaneResult, as_dict, render, words

MODULE = "gpubench_tools.instructions"
BASE, CONTENDER = "base", "contender"
SIDES = (BASE, CONTENDER)
# The gate's default set: the smaller GEMMs of the timing lane's sweep (OpenBLAS and the harness's
# loop) and the hand-written small-matrix CPU path (the project's own CPU code, variant "small") at
# three shapes. Each is one iteration; all six take about 10 s a side under callgrind on a 2-core
# machine. Left out: the GEMMs at 384 and 512 (10-20 s more each: Valgrind emulates AVX2 FMAs
# slowly), the Iris rows (20000 epochs an iteration: 367 M instructions, 30 s) and the OpenBLAS
# training rows (0.5 s an iteration natively, billions of instructions).
DEFAULT_FILTER = (
    "^(matmul/cpu/openblas/dtype:fp32/m:(64|192|256)/n:(64|192|256)/k:(64|192|256)/threads:1"
    "|[a-z]+/cpu/small/data:(digits/batch:64/hidden:32|synthetic/batch:(16|256)/hidden:8)"
    "/readback:1/threads:1)$"
)
DEFAULT_CORETYPE = "Haswell"
DEFAULT_TIMEOUT_S = 600.0
DUMP_PREFIX = "callgrind.out"
TIMEOUT = Number(0.0, 7 * 86_400.0, low_open=True, unit="seconds")


def valgrind_command(
    valgrind: str, side_dir: Path, bench: Sequence[str], benchmark_filter: str
) -> list[str]:
    """The command line of one side (module docstring)."""
    counted = "--tool=callgrind --instr-atstart=no --collect-atstart=no --trace-children=yes"
    once = "--benchmark_min_time=1e-9 --benchmark_repetitions=1"
    out = [f"--benchmark_out={side_dir / 'bench.json'}", "--benchmark_out_format=json"]
    dumps = f"--callgrind-out-file={side_dir / DUMP_PREFIX}.%p"
    return [valgrind, *counted.split(), dumps, *bench, f"--benchmark_filter={benchmark_filter}",
            *once.split(), *out]  # fmt: skip


def _openblas_core(side_dir: Path) -> str:
    """The OpenBLAS kernels a side's bench ran (its JSON's context); a JSON that is not a bench
    file leaves them unnamed (policy: the dumps are judged all the same)."""
    from ..benchjson import BenchJsonError, load_report
    from ..compare.engine import openblas_core

    try:
        return openblas_core(load_report(str(side_dir / "bench.json")).context) or ""
    except (BenchJsonError, OSError) as exc:
        if action("instructions", NOT_BENCH).kind == REFUSE:
            raise UnusableInput(str(exc)) from None
        return ""


def judge_dirs(folder: Path, rules: InstructionRules) -> LaneResult:
    """Judges the dumps the two sides left in their folders under `folder` (base/, contender/).
    A side that counted nothing (no single-threaded region) is policy's "nothing measured"."""
    frames, regions, cores = {}, {}, {}
    for side in SIDES:
        try:
            dumped = read_dumps(sorted((folder / side).glob(f"{DUMP_PREFIX}.*")))
        except DumpError as exc:
            raise UnusableInput(str(exc)) from None
        frames[side] = per_iteration(dumped)
        regions[side] = len(dumped)
        cores[side] = _openblas_core(folder / side)
    empty = [side for side in SIDES if frames[side].empty]
    if empty:
        why = words("no_regions", sides=empty)
        return _not_counted(why, rules, NOTHING_MEASURED, openblas=cores, regions=regions)
    verdicts = judge_counts(frames[BASE], frames[CONTENDER], rules)
    return LaneResult(lane_exit(verdicts), rules, verdicts, "", cores, regions)


def _executable(args: argparse.Namespace, side: str) -> list[str]:
    """The bench command of a side (--base-bench, --contender-bench), checked."""
    path, what = getattr(args, f"{side}_bench"), f"--{side}-bench"
    if not path:
        raise UnusableInput(f"{what} is empty")
    # which() looks a bare name up on PATH and checks a path as given: an executable file.
    if shutil.which(path) is None:
        raise UnusableInput(f"{what} '{path}' not found or not executable")
    return [path]


def _last_line(path: Path) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "(no log)"
    useful = [ln for ln in lines if not ln.startswith("==")] or lines
    return " ".join(useful[-1].split())[:300] if useful else "(no output)"


def run_sides(
    commands: dict[str, list[str]], out_dir: Path, env: dict[str, str], timeout_s: float
) -> list[dict[str, Any]]:
    """Runs both sides at once; the sides that did not exit 0: `code` (None: still running at
    the timeout, and killed), the last line of the `log` (words.j2 says it)."""

    def run(side: str) -> dict[str, Any] | None:
        side_dir = out_dir / side
        if side_dir.exists():
            shutil.rmtree(side_dir)
        side_dir.mkdir(parents=True)
        log = side_dir / "valgrind.log"
        with open(log, "w", encoding="utf-8") as out:
            try:
                code: int | None = subprocess.call(
                    commands[side], stdout=out, stderr=subprocess.STDOUT, env=env, timeout=timeout_s
                )
            except subprocess.TimeoutExpired:  # call() killed it
                code = None
        return None if code == 0 else dict(side=side, code=code, last_line=_last_line(log), log=log)

    with ThreadPoolExecutor(len(SIDES)) as pool:
        return [failed for failed in pool.map(run, SIDES) if failed]


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog=prog,
        description="Count the instructions per iteration of each single-threaded CPU benchmark's "
        "timed loop under callgrind, base against contender. Exit 0 pass; 1 a benchmark runs "
        "--max-change more instructions or lost its count; 2 nothing counted.",
    )
    add = parser.add_argument
    add("--base-bench", metavar="CMD", help="the reference bench (or a wrapper that execs it)")
    add("--contender-bench", metavar="CMD", help="the bench to judge")
    add("--from", dest="from_dir", metavar="DIR", help="judge the dumps an earlier run left in DIR")
    add("--benchmark_filter", "--benchmark-filter", dest="filter", default=DEFAULT_FILTER)
    change = "smallest change of instructions per iteration that fails, as a fraction (0.01)"
    add("--max-change", type=MAX_CHANGE, default=InstructionRules().max_change, help=change)
    add("--openblas-coretype", default=DEFAULT_CORETYPE, help="OPENBLAS_CORETYPE of both sides")
    add("--valgrind", default="valgrind", help="the valgrind executable")
    add("--out-dir", default="reports/ci/instructions", help="where the dumps and logs go")
    add("--timeout", type=TIMEOUT, default=DEFAULT_TIMEOUT_S, help="seconds for both sides")
    add("--markdown", metavar="OUT.md", help="also write the verdict as Markdown")
    add("--json", metavar="OUT.json", help="also write the verdict as JSON")
    add_debug_flag(parser)
    return parser


def _not_counted(
    why: str, rules: InstructionRules, situation: str = CUT_OFF, **measured: dict[str, Any]
) -> LaneResult:
    """Exit 2 with the reason (words.j2): no valgrind, a side that did not finish under it
    (policy: a cut-off or interrupted run is not counted), or a side that dumped no region
    (policy: nothing measured)."""
    code = action("instructions", situation).exit_code or EXIT_UNUSABLE
    return LaneResult(code, rules, pd.DataFrame(columns=VERDICT_COLUMNS), why, **measured)


def _judge(args: argparse.Namespace) -> LaneResult:
    rules = InstructionRules(args.max_change)
    if args.from_dir:
        if args.base_bench or args.contender_bench:
            why = "--from judges an earlier run: it takes no --base-bench/--contender-bench"
            raise UnusableInput(why)
        return judge_dirs(Path(args.from_dir), rules)
    if not (args.base_bench and args.contender_bench):
        raise UnusableInput("give --base-bench and --contender-bench, or --from DIR")
    benches = {side: _executable(args, side) for side in SIDES}
    valgrind = shutil.which(args.valgrind)
    if valgrind is None:
        return _not_counted(words("no_valgrind", valgrind=args.valgrind), rules)
    out_dir, start = Path(args.out_dir), time.monotonic()
    commands = {s: valgrind_command(valgrind, out_dir / s, benches[s], args.filter) for s in SIDES}
    env = {**os.environ, "OPENBLAS_CORETYPE": args.openblas_coretype, "CUDA_VISIBLE_DEVICES": ""}
    failed = run_sides(commands, out_dir, env, args.timeout)
    if failed:
        return _not_counted(words("failed_sides", failed=failed, timeout_s=args.timeout), rules)
    result = judge_dirs(out_dir, rules)
    result.wall_seconds = time.monotonic() - start
    return result


def _run(prog: str, argv: Sequence[str] | None) -> int:
    args = _parser(prog).parse_args(argv)
    result = _judge(args)
    code = output.decide(result.exit_code)
    output.write_lines(*render("terminal.txt.j2", result).splitlines())
    markdown, doc = (lambda: render("lane.md.j2", result)), (lambda: as_dict(result))
    output.write_after_verdict(prog, code, args.markdown, markdown, args.json, doc)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    prog = program_name(MODULE)
    return run_main(prog, lambda a: _run(prog, a), argv)
