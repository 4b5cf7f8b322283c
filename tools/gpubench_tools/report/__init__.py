"""gpubench-report: bench JSON files in, charts, report.html and report.md out.

`cli` is the command line and `build_report`. Everything reads one table (`..table`): `topics`
declares the workloads compared, `analysis` computes speedups, crossovers, the four-part
breakdown of the GPU time, the model's error and thread scaling, `charts` draws a few generic
chart kinds. `build` runs the pipeline, each section's data first and its words after:
`speedups` (the answer and a section per topic), `gpu_time` (the breakdown, the step profile,
the model), `resources` (threads, peers, memory, allocation, energy, what did not run); every
sentence and table is a macro of `templates/words.j2` (`words.say`, `words.table_of`), every chart
a `topics.CHARTS` entry drawn by `Context.chart` in the words of its `chart_<name>` macro there;
`render` fills the page templates. Run it as `python -m gpubench_tools.report` or
`gpubench-report`.
"""

from .cli import PROG, build_report, main

__all__ = ["PROG", "build_report", "main"]
