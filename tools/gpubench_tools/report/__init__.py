"""gpubench-report: bench JSON files in, charts, report.html and report.md out.

The way through, from the files to the page (no import circle; `analysis` and `context` import
no words and no charts; the section steps word their own records through `words`):

- `..table` reads every file once into one typed table (counters and peaks as floats at load);
  `topics` declares the workloads compared, as data.
- `analysis` computes what several sections share from the report's summary (`summary_of`:
  every counter a column, each median's flags): speedup curves, crossovers, a topic's path facts
  (`PathCurve`), the four-part breakdown of the GPU time, thread scaling. `context.Context` holds
  the summary, the breakdown, the machines' and files' names, and selects rows.
- A step per module computes its sections: `speedups` (the answer and a section per topic),
  `gpu_time` (the breakdown, the step profile, the model), `resources` (threads, peers, memory,
  allocation, energy, what did not run). A section is its numbers (frozen records, frames), then
  its words (`words.say` / `words.table_of`: a macro of `templates/words.j2` each, through
  `templating.Words`, keyword arguments only), then the charts it asks for (`context.Drawing`).
- `build` names the machines (`context_of`), runs the steps in the reader's order and draws every
  chart the sections asked for in one step; `render` fills the page templates; `cli` is the
  command line and `build_report`.

Adding a section (a roofline, say): one function in the step module it belongs to (or a new
module, run from `build._sections`) that computes a small frozen record from `ctx.select(...)`
rows and returns `words.section(id, say("<macro>", view=record), [Drawing(...)], tables)`; one
macro in `templates/words.j2` that renders the record's fields (every decision, threshold and
unit already made in the record: templates only render, tests/tools/test_template_rules.py);
a `topics.CHARTS` entry and a `chart_<name>` macro for a chart; a test of the record itself.

Run it as `python -m gpubench_tools.report` or `gpubench-report`.
"""

from .cli import PROG, build_report, main

__all__ = ["PROG", "build_report", "main"]
