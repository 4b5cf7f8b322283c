"""gpubench-report: turn bench JSON files into charts, report.html and report.md.

    python -m gpubench_tools.report IN.json [IN2.json ...] [--gpu-reference REF.json ...] --out DIR

Files recorded on the same hardware (same GPU, CPU model and logical CPU count, and host name
where both record one), such as one file per workload of one session, are merged and reported
as one machine. Different machines are overlaid in the same charts and labelled with their
device names. `--gpu-reference` gives a run without GPU rows (a laptop, a CI runner) the GPU rows
of a reference run from another machine: CPU rows come only from IN.json, GPU rows (and the
overhead probes) only from the reference, and the report labels every number with the machine it
was measured on. A run that has GPU rows of its own is reported as it is, with a warning that the
reference was not used. Warnings that share one reason (the bf16 rows a CPU without
cblas_sbgemm skips) are one line with a count; `--verbose` lists their benchmarks, `--quiet`
prints nothing but errors. Exit status: 0 on success, 2 for unusable input or an output folder
that cannot be written.
"""

from __future__ import annotations

import argparse
import base64
from pathlib import Path
from typing import Any, Sequence

from .. import output
from ..benchjson import BenchJsonError
from ..cli import EXIT_OK, ArgumentParser, UnusableInput, add_debug_flag, program_name, run_main
from ..escape import html_line
from ..policy import NOTHING_MEASURED, REFUSE, action
from ..table import load_table
from ..templating import environment
from ..wording import note_lines
from .topics import COMMITTED_GPU_REFERENCE
from .words import named, say

PROG = program_name("gpubench_tools.report")


def build_report(
    inputs: list[str], out_dir: Path, gpu_reference: Sequence[str] = (), verbose: bool = False
) -> tuple[Path, Path, list[str]]:
    """Write every chart plus report.html and report.md into out_dir.

    `gpu_reference`: files of a reference run whose GPU rows stand in for a run without any.
    Returns (html path, markdown path, warnings). Raises BenchJsonError for unusable input.
    `verbose`: the warnings also name every failed, skipped and invalid benchmark.
    """
    table = load_table(inputs, gpu_reference)
    if table.rows.empty and action("report", NOTHING_MEASURED).kind == REFUSE:
        # A run that measured nothing is refused (policy.POLICY["report"]); the line says what
        # its rows were.
        problems, more = table.problems[:2], max(0, len(table.problems) - 2)
        said = "".join(say("nothing_measured", problems=problems, more=more))
        raise BenchJsonError(", ".join(inputs), said)
    # Imported only now so that `--help` and input errors answer without loading matplotlib.
    from .build import build_document, reference_warning
    from .context import distinct_names

    out_dir.mkdir(parents=True, exist_ok=True)
    doc = build_document(table, out_dir)
    html_path, md_path = write_report(doc, out_dir)
    # Files by their shortest distinct tail, as the report's inputs line names them (two runs both
    # called bench.json stay apart).
    names = distinct_names([str(f) for f in table.problems["file"].unique()])
    files = table.problems["file"].astype(str).map(names)
    listed = say("listed", problems=table.problems.assign(file=files))
    # A run that did not finish before anything: every number below is limited by it. Then whose
    # GPU numbers these are, then whether they were measured on a quiet machine.
    cut_off = note_lines(table.cut_off)
    said = cut_off + reference_warning(table) + [c for c in [doc["conditions"]] if c]
    said += [w for w in note_lines(table.said("report")) if w not in cut_off]
    return html_path, md_path, said + (listed if verbose else [])


def write_report(doc: dict[str, Any], out: Path) -> tuple[Path, Path]:
    """Write report.html and report.md into `out` (where the charts already are).

    The document holds plain text only; escaping is the templates' job, by context: HTML
    autoescaping for the page, `md` (escape.md_text) for Markdown prose and table cells, `code`
    (escape.md_code) for benchmark names. So a name like `<script>` is shown, never run."""
    paths = out / "report.html", out / "report.md"
    for path, html in zip(paths, (True, False)):
        env = environment("gpubench_tools.report", autoescape=html)
        env.filters["html_line"] = html_line
        # Inline each PNG so the one HTML file opens offline and can be mailed around.
        env.filters["inline_png"] = lambda name: base64.b64encode(
            (out / name).read_bytes()
        ).decode()
        path.write_text(env.get_template(f"{path.name}.j2").render(doc=doc), encoding="utf-8")
    return paths


def main(argv: Sequence[str] | None = None) -> int:
    prog = program_name("gpubench_tools.report")  # at the call: the name the user typed
    return run_main(prog, lambda a: _main(prog, a), argv)


def _parser(prog: str = "gpubench-report") -> argparse.ArgumentParser:
    """The command line, as data (tests walk it), in the words of templates/words.j2's
    `cli_help`."""
    keys = ("description", "inputs", "out", "gpu_reference", "verbose", "quiet")
    helps = {key: named("cli_help", key) for key in keys}
    parser = ArgumentParser(prog=prog, description=helps["description"])
    parser.add_argument("inputs", nargs="+", metavar="IN.json", help=helps["inputs"])
    parser.add_argument("--out", default="reports/latest", metavar="DIR", help=helps["out"])
    reference = helps["gpu_reference"].format(reference=" and ".join(COMMITTED_GPU_REFERENCE))
    parser.add_argument(
        "--gpu-reference", nargs="+", default=[], metavar="REF.json", help=reference
    )
    talk = parser.add_mutually_exclusive_group()
    talk.add_argument("--verbose", action="store_true", help=helps["verbose"])
    talk.add_argument("--quiet", action="store_true", help=helps["quiet"])
    add_debug_flag(parser)
    return parser


def _main(prog: str, argv: Sequence[str] | None) -> int:
    args = _parser(prog).parse_args(argv)
    try:
        report = build_report(args.inputs, Path(args.out), args.gpu_reference, args.verbose)
    except OSError as exc:
        message = f"cannot write the report to {args.out}: {exc.strerror or exc}"
        raise UnusableInput(message) from None
    html_path, md_path, warnings = report
    if args.quiet:
        return EXIT_OK
    for w in warnings:
        output.warn(f"{prog}: warning: {w}")
    output.write_lines(f"markdown: {md_path}", str(html_path))
    return EXIT_OK
