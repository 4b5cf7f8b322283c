"""gpubench-report: bench JSON files in, charts, report.html and report.md out.

The way through, from the files to the page (no import circle; the computations, `analysis`,
`context` and the section steps, import no words and no charts: they return frozen records that
the rendering words):

- `..table` reads every file once into one typed table (counters and peaks as floats at load);
  `topics` declares the workloads compared, as data.
- `analysis` computes what several sections share from the report's summary (`summary_of`:
  every counter a column, each median's flags): speedup curves, crossovers, a topic's path facts
  (`PathCurve`), the four-part breakdown of the GPU time, thread scaling. `context.Context` holds
  the summary, the breakdown and the files' names, and selects rows; machines are its indices.
- A step per module computes its sections' records: `speedups` (each topic's pairs and curves:
  the answer and a section per topic), `gpu_time` (the breakdown, the step profile, the model),
  `resources` (threads, peers, memory, allocation, energy, what did not run). A record holds
  numbers, enumerations, booleans, rows and the names of things; never a sentence.
- `pages` words each record into its section (`words.say` / `words.table_of`: a macro of
  `templates/words.j2` each, through `templating.Words`, keyword arguments only) and the charts
  it asks for (`context.Drawing`), naming the machines by their labels.
- `build`, the composer, names the machines (`machine_labels`), runs the steps in the reader's
  order, hands each record to its page and draws every chart the sections asked for in one
  step; `cli` is the command line, `build_report` and `write_report`, which fills the page
  templates.

Adding a section (a roofline, say): one function in the step module it belongs to (or a new
module, run from `build._sections`) that computes a small frozen record from `ctx.select(...)`
rows; one page in `pages` (registered in `pages.PAGES` by the record's type) that returns
`words.section(id, say("<macro>", view=record), [Drawing(...)], tables)`; one macro in
`templates/words.j2` that renders the record's fields (every decision, threshold and unit
already made in the record: templates only render, tests/tools/test_template_rules.py); a
`topics.CHARTS` entry and a `chart_<name>` macro for a chart; a test of the record itself.

Run it as `python -m gpubench_tools.report` or `gpubench-report`.
"""

from .cli import PROG, build_report, main

__all__ = ["PROG", "build_report", "main"]
