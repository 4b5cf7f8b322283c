"""gpubench-advise: CPU or GPU for a GEMM or a tiny-MLP training step, predicted from a run
(`--help` and docs/advisor.md give the options). The files of one machine (a -matmul.json and a
-mlp.json of one session) are merged; files of different machines get one answer each. Exit
status: 0 with an answer, 2 when the request or the input cannot give one (one line on stderr).
"""

from __future__ import annotations

import argparse
import json
import re
from typing import Any, Sequence

from .. import output
from ..cli import EXIT_OK, ArgumentParser, Number, UnusableInput, add_debug_flag
from ..cli import program_name, run_main
from ..policy import NOTHING_MEASURED, REFUSE, action
from ..status import Said
from ..wording import note_lines
from .curves import GemmShape
from .loo import leave_one_out
from ..report.topics import COMMITTED_GPU_REFERENCE, MLP_DATASETS
from .model import DTYPES, HOSTS, MLP_INPUTS, AdviseError, Advisor, MlpConfig, load_runs
from .render import answer_json, answer_text, error_text, loo_json, loo_text

PROG = program_name("gpubench_tools.advise")

_GEMM = re.compile(r"^\s*(\d+)\s*[xX]\s*(\d+)\s*[xX]\s*(\d+)\s*$")
_MLP_KEYS = ("batch", "hidden", "layers", "data", "readback", "input")


# The range of each number --gemm and --mlp hold: beyond what a GPU or a CPU can hold (the memory
# checks say so), short of what a float holds exactly.
DIMENSION = Number(1, 1_000_000_000_000, integer=True)
LAYERS = Number(1, 10_000, integer=True)
READBACK = Number(0, 1_000_000_000, integer=True, unit="steps; 0 never")


def parse_gemm(text: str) -> GemmShape:
    match = _GEMM.match(text)
    if match is None:
        raise AdviseError("gemm_syntax", text=text)
    return GemmShape(*(_integer("--gemm", text, g, DIMENSION) for g in match.groups()))


def _integer(option: str, text: str, value: str, kind: Number = DIMENSION) -> int:
    """One number of an option's text, in its range, else one line naming the option's text,
    the number and the range."""
    try:
        return int(kind(value))
    except argparse.ArgumentTypeError:
        facts = dict(option=option, text=text, value=value, allowed=kind.range)
        raise AdviseError("out_of_range", **facts) from None


def parse_mlp(text: str) -> MlpConfig:
    """`batch=B,hidden=H[,layers=L][,data=D][,readback=R][,input=I]`; `hidden=HxL` (bench's
    spelling of L hidden layers of width H) is accepted too."""
    pairs: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = (s.strip() for s in part.partition("="))
        if not (sep and key and value):
            raise AdviseError("mlp_syntax", text=text, part=part)
        if key not in _MLP_KEYS:
            raise AdviseError("mlp_key", key=key, keys=_MLP_KEYS)
        if key in pairs:
            raise AdviseError("mlp_twice", key=key)
        pairs[key] = value
    missing = [k for k in ("batch", "hidden") if k not in pairs]
    if missing:
        raise AdviseError("mlp_missing", text=text, missing=missing)

    def number(key: str, kind: Number = DIMENSION, value: str | None = None) -> int:
        given = pairs.get(key, "0")  # only readback may be absent: never read back
        return _integer("--mlp", f"{key}={given}", given if value is None else value, kind)

    deep = re.fullmatch(r"(\d+)[xX](\d+)", pairs["hidden"])
    hidden, layer_text = deep.groups() if deep else (pairs["hidden"], None)
    layers = None if layer_text is None else number("hidden", LAYERS, layer_text)
    width = number("hidden", value=hidden)
    if "layers" in pairs:
        given = number("layers", LAYERS)
        if layers is not None and layers != given:
            raise AdviseError("mlp_layers", hidden=pairs["hidden"], layers=given)
        layers = given
    # Each defaults to its first choice (MlpConfig's default).
    for key, known in (("data", MLP_DATASETS), ("input", MLP_INPUTS)):
        if pairs.setdefault(key, next(iter(known))) not in known:
            raise AdviseError("mlp_choice", key=key, value=pairs[key], known=known)
    batch, readback = number("batch"), number("readback", READBACK)  # checked in this order
    return MlpConfig(batch, width, layers or 1, pairs["data"], readback, pairs["input"])


def _parser() -> argparse.ArgumentParser:
    """The command line, as data (tests walk it)."""
    parser = ArgumentParser(
        prog=PROG,
        description="Predict whether a GEMM or a tiny-MLP training step runs faster on the CPU or "
        "on the GPU, and where the GPU's time goes, from a bench run's fitted overhead model and "
        "measured utilisation curves.",
        epilog="Reference run to try: " + " ".join(COMMITTED_GPU_REFERENCE),
    )
    add = parser.add_argument
    add("inputs", nargs="+", metavar="RUN.json", help="bench JSON file(s)")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--gemm", metavar="MxNxK", help="C (m x n) = A (m x k) B (k x n)")
    what.add_argument(
        "--mlp",
        metavar="batch=B,hidden=H[,layers=L][,data=D]",
        help="one training step of the tiny MLP; also readback=R (loss read back every R steps, "
        "0 never: the default) and input=resident|pinned|pageable; data: "
        + ", ".join(MLP_DATASETS),
    )
    what.add_argument(
        "--leave-one-out",
        action="store_true",
        help="measure the advisor's accuracy on the run: predict each measured end-to-end GEMM "
        "and eager MLP row without the rows of its shape, and compare",
    )
    add("--dtype", default="fp32", help=f"GPU precision for --gemm: {', '.join(DTYPES)} (fp32)")
    hosts = ", ".join(HOSTS)
    add("--host", default="pinned", help=f"where --gemm's operands live: {hosts} (pinned)")
    add("--json", action="store_true", help="machine-readable output on stdout")
    add("--quiet", action="store_true", help="no warnings: the answer and errors")
    add_debug_flag(parser)
    return parser


def _answers(args: argparse.Namespace) -> tuple[list[Any], list[Said]]:
    """The answer for every machine in the input (its text, or with --json its JSON object),
    and the warnings."""
    for option, value, known in (("dtype", args.dtype, DTYPES), ("--host", args.host, HOSTS)):
        if value not in known:
            raise AdviseError("unknown", option=option, value=value, known=known)
    shape = parse_gemm(args.gemm) if args.gemm is not None else None
    config = parse_mlp(args.mlp) if args.mlp is not None else None
    runs, warnings = load_runs(args.inputs)
    answers = []
    for run in runs:
        if run.rows.empty and action("advise", NOTHING_MEASURED).kind == REFUSE:
            raise AdviseError("no_rows", run=run)
        advisor = Advisor(run)
        if args.leave_one_out:
            advisor.require_gpu()
            report = leave_one_out(run, advisor.overhead)
            answers.append(loo_json(report) if args.json else loo_text(report))
        else:
            adv = advisor.gemm(shape, args.dtype, args.host) if shape else advisor.mlp(config)
            answers.append(answer_json(advisor, adv) if args.json else answer_text(advisor, adv))
    return answers, warnings


def main(argv: Sequence[str] | None = None) -> int:
    return run_main(PROG, _main, argv)


def _main(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    try:
        answers, warnings = _answers(args)
    except AdviseError as exc:
        raise UnusableInput(error_text(exc)) from None
    # What the policy has the advisor warn about (load_runs: Table.said): a truncated file, an
    # invalid row, a benchmark in two files; not the failed and skipped rows it leaves out.
    for w in [] if args.quiet else note_lines(warnings):
        output.warn(f"{PROG}: warning: {w}")
    # Done is decided before the answer is printed: a reader that leaves early (`| head`) costs
    # the rest of the answer, never the exit status (the one writer, output.py).
    output.decide(EXIT_OK)
    if args.json:
        text = json.dumps(answers[0] if len(answers) == 1 else answers, indent=1, allow_nan=False)
    else:
        text = "\n".join(answers)
    output.write_lines(*text.splitlines())
    return EXIT_OK
