"""gpubench-report: bench JSON files in, charts, report.html and report.md out.

`cli` is the command line and `build_report`; `sections` assembles the document from the analyses
(`matmul_analysis`, `mlp_analysis`, and the shared `..overhead_model`), the sentences
(`sentences`) and the charts (`charts_*`, which load matplotlib); `writer` renders HTML and
Markdown. Everything reads the loaded points of `..dataset`, over the shared JSON reader
`..benchjson`. Run it as `python -m gpubench_tools.report` or `gpubench-report`.
"""

from .cli import PROG, build_report, main

__all__ = ["PROG", "build_report", "main"]
