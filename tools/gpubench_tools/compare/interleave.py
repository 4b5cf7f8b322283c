"""Interleaved paired runs: a base and a contender `bench` on the same machine in one job.

Each *round* runs the base once and the contender once, in a random order (recorded), each a fresh
process, so a drift of the machine (a neighbour's build starting, a clock settling) lands on both
sides alike and a process's partner ran seconds from it. Per-process luck (where the buffers
landed, how OpenBLAS initialised) is a new draw for every pair, which keeps the pairs independent.

**One value per process.** Each process runs ``inner_repetitions`` short repetitions of every
benchmark (Google Benchmark's random interleaving spreads them over the process) and contributes
the repetition with the lowest time of the judged clock: noise on a shared machine only adds time
and comes in bursts, and the minimum is the statistic it reaches least (Chen and Revels, "Robust
benchmarking in noisy environments", 2016). The choice was measured on real runs beside a quiet and
a bursty neighbour (scripts/measure-gate-real.py; docs/regression-gate.md, "Measured in real
runs"). The kept row is that repetition's own row, so the two files are ordinary bench JSON.

**Both sides start alike.** Process layout moves times by a few tenths of a per cent (Mytkowicz et
al., ASPLOS 2009), the size of what the gate judges, so nothing but the code differs between the
sides: each side runs through a symbolic link of the same length (``launch/a/bench``,
``launch/b/bench``), with the same environment (a side's data folder, when given, is
``launch/a/data`` or ``launch/b/data`` in ``GPUBENCH_DATA_DIR``) and output paths of the same
length (``logs/round-001-a.json``).

The kept row of round r gets ``repetition_index`` r, the same on both sides, so the two files
are paired by index. Each file's context says so (the PAIR_ keys of paired.py): ``pair_id``
(the same in both files of one run), ``pair_role`` (base or contender), ``paired_with`` (the
other file's name), ``pair_order`` (which side ran first in each round), ``pair_time`` (the clock
judged), ``pair_repetitions_per_run`` (the inner repetitions of each process). gpubench-compare
recognises such a pair and judges it with the paired rules (paired.py).

``python -m gpubench_tools.compare.interleave --base-bench A --contender-bench B`` runs the rounds,
judges them (paired.py), runs more rounds of the benchmarks still unsettled up to a bound, and
exits 0 pass, 1 regression (or the contender crashed, or lost a benchmark), 2 unusable (the base
crashed or could not run, bad usage), 3 not resolved. scripts/ci_gate.sh calls it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import signal
import shutil
import subprocess
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ..cli import EXIT_REGRESSION, EXIT_UNUSABLE, UnusableInput, add_debug_flag, program_name
from ..cli import ArgumentParser, Number, run_main
from .. import output
from ..benchjson import load_report
from ..row_rules import group_reasons
from . import paired, stats
from .cli import emit, emit_error
from .words import error_line
from .paired import PAIR_ID, PAIR_ORDER, PAIR_REPS_PER_RUN, PAIR_ROLE, PAIR_TIME, PAIRED_WITH
from .verdict import Judgement

MODULE = "gpubench_tools.compare.interleave"
BASE, CONTENDER = "base", "contender"
SIDES = (BASE, CONTENDER)
FILE_NAMES = {BASE: "base.json", CONTENDER: "contender.json"}
# The launch folder of each side: names of the same length, so nothing but the code differs.
LAUNCH_NAMES = {BASE: "a", CONTENDER: "b"}
# One invocation of the smoke sweep takes 2-5 s on a busy 2-core machine; one that runs 2 minutes
# hangs (seen once: a bench that wrote its output and did not exit).
DEFAULT_INVOCATION_TIMEOUT_S = 120.0
# The inner repetitions of a process and their --benchmark_min_time, chosen on real runs
# (docs/regression-gate.md, "Measured in real runs").
DEFAULT_INNER_REPETITIONS = 9
DEFAULT_MIN_TIME_S = 0.01
# Characters that are syntax in the regular expressions of --benchmark_filter.
_REGEX_SYNTAX = re.compile(r"([.^$|()\[\]{}*+?\\])")
# Rows are kept as their (key, value) pairs: a file from an older bench can hold the key
# "threads" twice (Google Benchmark's and a user counter), which a dict would merge.
Pairs = list[tuple[str, Any]]


class BenchRunError(Exception):
    """An invocation that did not give a usable result. ``exit_code`` by the contract: the base
    failing leaves nothing to compare with (2); the contender failing where the base ran with the
    same arguments is a failure of the code under test (1). str() is the one line to print."""

    def __init__(self, exit_code: int, line: str) -> None:
        self.exit_code = exit_code
        super().__init__(line)


def exact_filter(names: Sequence[str]) -> str:
    """A --benchmark_filter that matches exactly these benchmark names."""
    return "^(" + "|".join(_REGEX_SYNTAX.sub(r"\\\1", n) for n in names) + ")$"


def _dumps_pairs(value: Any) -> str:
    if isinstance(value, list) and value and all(isinstance(p, tuple) for p in value):
        return "{" + ", ".join(f"{json.dumps(k)}: {_dumps_pairs(v)}" for k, v in value) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_dumps_pairs(v) for v in value) + "]"
    return json.dumps(value)


def _get(pairs: Pairs, key: str, default: Any = None) -> Any:
    return next((v for k, v in pairs if k == key), default)


def _set(pairs: Pairs, key: str, value: Any) -> Pairs:
    """The pairs with the first `key` set to value (added at the end when absent)."""
    i = next((i for i, (k, _) in enumerate(pairs) if k == key), len(pairs))
    return pairs[:i] + [(key, value)] + pairs[i + 1 :]


def _describe_exit(code: int) -> str:
    if code >= 0:
        return f"exited with status {code}"
    names = {s.value: f" ({s.name})" for s in signal.Signals}
    return f"was killed by signal {-code}{names.get(-code, '')}"


def _fastest(row: Pairs, time_field: str) -> float:
    """The time that makes a repetition its process's value: a failed repetition (an error row)
    or a time that is not a time is never the fastest; when every repetition is such, the first
    stands, so its error reaches the judgement."""
    try:
        t = math.inf if _get(row, "error_occurred") else float(_get(row, time_field))
    except (TypeError, ValueError):
        return math.inf
    return t if math.isfinite(t) and t > 0 else math.inf


@dataclass
class PairedRun:
    """Runs rounds of the two executables and keeps one row per benchmark and process for the
    two paired files.

    `base_cmd` and `contender_cmd` are argument lists (an executable or a wrapper script and its
    own arguments); the bench flags are appended. `data_dirs` gives a side's data folder
    (GPUBENCH_DATA_DIR), when the two builds read different ones.
    """

    base_cmd: list[str]
    contender_cmd: list[str]
    out_dir: Path
    benchmark_filter: str | None = None
    min_time: float = DEFAULT_MIN_TIME_S
    inner_repetitions: int = DEFAULT_INNER_REPETITIONS
    time_field: str = "cpu_time"
    timeout_s: float = DEFAULT_INVOCATION_TIMEOUT_S
    data_dirs: dict[str, str] | None = None
    rounds_done: int = 0
    bench_seconds: float = 0.0
    pair_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    contexts: dict[str, Pairs] = field(default_factory=dict)
    rows: dict[str, list[Pairs]] = field(default_factory=lambda: {BASE: [], CONTENDER: []})
    order: list[str] = field(default_factory=list)

    @property
    def commands(self) -> dict[str, list[str]]:
        return {BASE: self.base_cmd, CONTENDER: self.contender_cmd}

    def _command(
        self, side: str, out: Path, benchmark_filter: str | None
    ) -> tuple[list[str], dict[str, str]]:
        """The side's full command line, through its launch link, and its environment (with its
        data folder's link in GPUBENCH_DATA_DIR, when it has one)."""
        cmd, folder = self.commands[side], self.out_dir / "launch" / LAUNCH_NAMES[side]
        folder.mkdir(parents=True, exist_ok=True)
        data = (self.data_dirs or {}).get(side)
        for name, target in {"bench": shutil.which(cmd[0]) or cmd[0], "data": data}.items():
            if target:
                (folder / name).unlink(missing_ok=True)
                (folder / name).symlink_to(os.path.abspath(target))
        env = dict(os.environ) | ({"GPUBENCH_DATA_DIR": str(folder / "data")} if data else {})
        flags = [f"--benchmark_filter={benchmark_filter}"] if benchmark_filter else []
        reps = self.inner_repetitions
        flags += [f"--benchmark_min_time={self.min_time:g}", f"--benchmark_repetitions={reps}"]
        flags += [f"--benchmark_out={out}", "--benchmark_out_format=json"]
        if reps > 1:
            flags.append("--benchmark_enable_random_interleaving=true")
        return [str(folder / "bench"), *cmd[1:], *flags], env

    def _invoke(self, side: str, r: int, benchmark_filter: str | None) -> list[Pairs]:
        """Runs one invocation; returns its rows or raises BenchRunError."""
        stem = self.out_dir / "logs" / f"round-{r + 1:03d}-{LAUNCH_NAMES[side]}"
        out, log = stem.with_suffix(".json"), stem.with_suffix(".log")
        code = EXIT_UNUSABLE if side == BASE else EXIT_REGRESSION
        where = f"{side} bench ({self.commands[side][0]}), round {r + 1}"
        (cmd, env), start = self._command(side, out, benchmark_filter), time.monotonic()
        try:
            with open(log, "w", encoding="utf-8", errors="replace") as fh:
                run = dict(stdout=fh, stderr=subprocess.STDOUT, env=env, timeout=self.timeout_s)
                proc = subprocess.run(cmd, check=False, **run)
        except subprocess.TimeoutExpired:
            stopped = f"still running after {self.timeout_s:g} s, stopped (log {log})"
            raise BenchRunError(code, f"{where}: {stopped}") from None
        except OSError as exc:
            raise BenchRunError(EXIT_UNUSABLE, f"{where}: cannot run: {exc}") from None
        self.bench_seconds += time.monotonic() - start
        if proc.returncode != 0:
            text = log.read_text(encoding="utf-8", errors="replace").splitlines()
            lines = [" ".join(line.split()) for line in text if line.strip()] or ["(no output)"]
            last = re.sub(r"[\x00-\x1f\x7f]", " ", lines[-1])[:300]
            exited = _describe_exit(proc.returncode)
            raise BenchRunError(code, f"{where} {exited}: {last} (log {log})")
        try:
            doc = json.loads(out.read_text(encoding="utf-8"), object_pairs_hook=lambda p: p)
            context, rows = _get(doc, "context", []), _get(doc, "benchmarks")
            if not isinstance(rows, list):
                raise ValueError("no 'benchmarks' list")
        except (OSError, ValueError, TypeError) as exc:
            problem = f"exited 0 but its output {out} is not bench JSON: {exc}"
            raise BenchRunError(code, f"{where} {problem}") from None
        self.contexts.setdefault(side, context if isinstance(context, list) else [])
        return [row for row in rows if _get(row, "run_type", "iteration") == "iteration"]

    def keep(self, rows: list[Pairs], r: int) -> list[Pairs]:
        """The rows round r keeps of one process: per benchmark, the row of its fastest
        repetition (its conditions, ``disturbed`` included, are what that repetition saw)."""
        by_name = group_reasons(rows, lambda row: str(_get(row, "name")))
        kept = [
            min(group, key=lambda row: _fastest(row, paired.clock_of(name, self.time_field)))
            for name, group in by_name
        ]
        return [_set(row, "repetition_index", r) for row in kept]

    def run_rounds(self, count: int, benchmark_filter: str | None = None) -> None:
        """Runs `count` more rounds (all benchmarks of the run's filter, or only those of
        `benchmark_filter`). Rows of a round are kept only when both sides completed it."""
        (self.out_dir / "logs").mkdir(parents=True, exist_ok=True)
        # The order of each round is random, from a generator seeded by the run's id (so a run's
        # order can be replayed); pair_order records it.
        order = random.Random(f"{self.pair_id}-{self.rounds_done}")
        for _ in range(count):
            r, first_base = self.rounds_done, order.random() < 0.5
            sides = SIDES if first_base else SIDES[::-1]
            got = {s: self._invoke(s, r, benchmark_filter or self.benchmark_filter) for s in sides}
            for side in SIDES:
                self.rows[side] += self.keep(got[side], r)
            self.order.append("AB" if first_base else "BA")
            self.rounds_done += 1

    def write(self) -> dict[str, Path]:
        """Writes (or rewrites) the two paired files; returns their paths."""
        paths = {side: self.out_dir / FILE_NAMES[side] for side in SIDES}
        for side, other in (SIDES, SIDES[::-1]):
            context = list(self.contexts.get(side, []))
            pair = [(PAIR_ID, self.pair_id), (PAIR_ROLE, side), (PAIRED_WITH, FILE_NAMES[other])]
            pair += [(PAIR_ORDER, " ".join(self.order)), (PAIR_TIME, self.time_field)]
            pair.append((PAIR_REPS_PER_RUN, self.inner_repetitions))
            for key, value in pair:
                context = _set(context, key, value)
            rows = self.rows[side]
            totals = Counter(str(_get(row, "name")) for row in rows)
            counted = (_set(row, "repetitions", totals[str(_get(row, "name"))]) for row in rows)
            rows_text = ",\n    ".join(_dumps_pairs(row) for row in counted)
            text = f'{{\n  "context": {_dumps_pairs(context)},\n  "benchmarks": [\n    '
            text += rows_text + "\n  ]\n}\n"
            tmp = paths[side].with_suffix(".json.tmp")
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, paths[side])
        return paths


def _command(path: str, what: str) -> list[str]:
    """An executable (or wrapper script) given on the command line, checked before anything runs.
    One path, never split: a path may hold spaces; arguments belong in a wrapper script."""
    if not path:
        raise UnusableInput(f"{what} is empty")
    if os.sep not in path and shutil.which(path) is None:
        raise UnusableInput(f"{what} '{path}' not found on PATH")
    if os.sep in path and not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise UnusableInput(f"{what} '{path}' not found or not executable")
    return [path]


def _data_dirs(base: str | None, contender: str | None) -> dict[str, str] | None:
    """The sides' data folders, checked; both or neither (one side alone would differ in its
    environment from the other)."""
    if base is None and contender is None:
        return None
    if base is None or contender is None:
        raise UnusableInput("--base-data-dir and --contender-data-dir go together")
    for flag, path in (("--base-data-dir", base), ("--contender-data-dir", contender)):
        if not os.path.isdir(path):
            raise UnusableInput(f"{flag} '{path}' is not a folder")
    return {BASE: base, CONTENDER: contender}


# The ranges of the numeric options (their argparse types).
MIN_TIME = Number(0.0, 3600.0, low_open=True, unit="seconds")
PAIRS = Number(1, 100_000, integer=True)
REPS = Number(1, 10_000, integer=True)
TIMEOUT = Number(0.0, 7 * 86_400.0, low_open=True, unit="seconds")


def _parser(prog: str) -> argparse.ArgumentParser:
    rules = stats.DEFAULT_RULES
    about = "Run a base and a contender bench interleaved (a process of each per round, in random "
    about += "order; each process's fastest repetition is its value), write two paired bench JSON "
    about += "files and judge them with the paired rules. Exit 0 pass; 1 a benchmark slower beyond "
    about += "the margin, failing, missing, or the contender crashed; 2 unusable (the base failed, "
    about += "bad usage); 3 not resolved."
    parser = ArgumentParser(prog=prog, description=about)
    add = parser.add_argument
    add("--base-bench", required=True, metavar="CMD", help="the reference bench (or a wrapper)")
    add("--contender-bench", required=True, metavar="CMD", help="the bench to judge")
    add("--benchmark_filter", "--benchmark-filter", dest="filter", metavar="REGEX")
    min_time_help = f"--benchmark_min_time of each inner repetition ({DEFAULT_MIN_TIME_S:g} s)"
    add("--min-time", type=MIN_TIME, default=DEFAULT_MIN_TIME_S, help=min_time_help)
    add("--pairs", type=PAIRS, default=rules.start_pairs, help="rounds to start with")
    max_help = "at most this many rounds of a benchmark that is still AMBIGUOUS"
    add("--max-pairs", type=PAIRS, default=rules.max_pairs, help=max_help)
    inner = DEFAULT_INNER_REPETITIONS
    inner_help = f"repetitions in each process, of which the fastest is its value ({inner})"
    add("--inner-repetitions", type=REPS, default=inner, help=inner_help)
    add("--base-data-dir", metavar="DIR", help="the base's data folder (GPUBENCH_DATA_DIR)")
    add("--contender-data-dir", metavar="DIR", help="the contender's data folder")
    add("--time", choices=("cpu_time", "real_time"), default="cpu_time", help="clock to judge")
    add("--margin", type=stats.MARGIN, help=f"equivalence margin ({rules.margin:g})")
    add("--alpha", type=stats.ALPHA, help=f"1 - confidence of the interval ({rules.alpha:g})")
    add("--out-dir", default="reports/ci/paired", help="where the paired files and logs go")
    add("--markdown", metavar="OUT.md", help="also write the verdict as Markdown")
    add("--json", metavar="OUT.json", help="also write the verdict as JSON")
    add("--timeout", type=TIMEOUT, default=DEFAULT_INVOCATION_TIMEOUT_S, help="seconds per run")
    add("--quiet", action="store_true", help="print only the failures and the gate line")
    add_debug_flag(parser)
    return parser


def _judge(run: PairedRun, rules: stats.PairedRules) -> Judgement:
    """Runs the rounds and judges them; then more rounds, in steps of half the start, of the
    benchmarks AMBIGUOUS and possibly slower, or whose interval still reaches the slowdown the
    gate cannot pass (an interval narrows as pairs accumulate), or short of pairs because some
    were left out as disturbed (more rounds replace them), up to max_pairs rounds; and of a
    SLOWER verdict on fewer than confirm_pairs pairs, which is confirmed on more rounds first
    (paired.needs_confirmation). Any other failure ends the run."""
    run.run_rounds(rules.start_pairs)
    step = max(1, math.ceil(rules.start_pairs / 2))
    while True:
        paths = run.write()
        reports = (load_report(str(paths[side])) for side in SIDES)
        judgement = paired.judge_reports(*reports, rules)
        confirming = [b.name for b in judgement.to_confirm]
        unsettled = judgement.maybe_slower + judgement.wide_open + judgement.disturbed_few
        short = dict.fromkeys(b.name for b in unsettled if b.pairs + b.left_out < rules.max_pairs)
        pending = list(short) + confirming
        if not pending or any(b.fails and b.name not in confirming for b in judgement.benchmarks):
            return judgement
        run.run_rounds(step, exact_filter(pending))


def _run(prog: str, argv: Sequence[str] | None) -> int:
    args = _parser(prog).parse_args(argv)
    rules = stats.rules_from(args.margin, args.alpha, args.pairs, args.max_pairs)
    base, contender = _command(args.base_bench, "--base-bench"), args.contender_bench
    run = PairedRun(base, _command(contender, "--contender-bench"), Path(args.out_dir))
    run.benchmark_filter, run.min_time, run.time_field = args.filter, args.min_time, args.time
    run.inner_repetitions, run.timeout_s = args.inner_repetitions, args.timeout
    run.data_dirs = _data_dirs(args.base_data_dir, args.contender_data_dir)
    start = time.monotonic()
    try:
        judgement = _judge(run, rules)
    except BenchRunError as exc:
        if run.rounds_done:
            run.write()  # what was measured before the failure stays on disk
        line = f"{exc} ({run.rounds_done} complete rounds kept in {run.out_dir})"
        emit_error(prog, line, exc.exit_code, args, paired=True)
        output.warn(f"{prog}: {'error' if exc.exit_code == EXIT_UNUSABLE else 'FAIL'}: {line}")
        return exc.exit_code
    judgement.wall_seconds, judgement.bench_seconds = time.monotonic() - start, run.bench_seconds
    return emit(prog, judgement, args)


def _worded(prog: str, argv: Sequence[str] | None) -> int:
    """_run, with the line of an UnusableInput the draws raised as data (a Said) worded."""
    try:
        return _run(prog, argv)
    except UnusableInput as exc:
        raise UnusableInput(error_line(exc)) from None


def main(argv: Sequence[str] | None = None) -> int:
    prog = program_name(MODULE)
    return run_main(prog, lambda a: _worded(prog, a), argv)


if __name__ == "__main__":
    sys.exit(main())
