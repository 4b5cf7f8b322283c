"""`python -m gpubench_tools --errors FILE`: the failed, skipped and invalid rows of one bench
file, counted in one line (tools/gpu-check and scripts/check-examples.sh read it);
`python -m gpubench_tools --gpu-rows FILE...`: the number of GPU benchmarks of a run
(table.gpu_benchmark_count; scripts/quickstart.sh decides with it whether to add the reference)."""

from __future__ import annotations

from typing import Sequence

from .benchjson import error_counts, load_report
from .cli import EXIT_OK, ArgumentParser, UnusableInput, add_debug_flag, program_name, run_main
from .output import write_lines
from .table import gpu_benchmark_count
from .wording import cut_off_words, words


def main(argv: Sequence[str] | None = None) -> int:
    """--errors: the failed/skipped count of one file, one line on stdout (exit 0), or the reason
    the file is unusable on stderr (exit 2): not bench JSON, or truncated (its last rows may be
    half-written). A run a signal stopped wrote its finished benchmarks whole: they are counted,
    and the line says how far the run got (the rows never written are not in the counts).
    --gpu-rows: the GPU benchmarks of the files, one number (a file that is not bench JSON is
    unusable input: exit 2, one line)."""
    prog = program_name("gpubench_tools")

    def body(args_list: Sequence[str] | None) -> int:
        parser = ArgumentParser(
            prog=prog,
            description="Count the failed, skipped and invalid rows of a bench JSON file, or the "
            "GPU benchmarks of a run.",
        )
        command = parser.add_mutually_exclusive_group(required=True)
        command.add_argument("--errors", metavar="FILE", help="bench JSON file")
        command.add_argument("--gpu-rows", nargs="+", metavar="FILE", help="bench JSON files")
        add_debug_flag(parser)
        args = parser.parse_args(args_list)
        if args.gpu_rows:
            write_lines(str(gpu_benchmark_count(args.gpu_rows)))
            return EXIT_OK
        report = load_report(args.errors)  # not bench JSON: BenchJsonError, unusable input
        if report.recovered_from_truncation and report.interrupted is None:
            raise UnusableInput(
                f"{args.errors}: the run did not finish ({cut_off_words(report)}); rows not counted"
            )
        # '0 rows failed, 1 skipped (does not fit on chip: 1)', then ', 2 invalid' where rows
        # hold values that cannot be a measurement, and '; cut off: interrupted by SIGTERM after
        # 2 of 5 benchmarks' where a signal stopped the run
        write_lines(words("errors", counts=error_counts(report)))
        return EXIT_OK

    return run_main(prog, body, argv)


if __name__ == "__main__":
    raise SystemExit(main())
