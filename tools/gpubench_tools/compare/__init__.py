"""gpubench-compare: two bench JSON files in, a verdict per benchmark and an exit status out.

One judgement (`verdict`: a Verdict per benchmark, a Judgement for the whole and its exit
status) with two ways of drawing its samples: `engine`, the repetitions of two independent runs
grouped by benchmark, each metric judged with the U test (`stats`); `paired`, the two files of one
interleaved run (`interleave` makes them), judged pair by pair with the signed-rank interval.
`config` holds the thresholds (defaults: the package data default-thresholds.json); `render` the
one renderer (the frozen records of the terminal text, the Markdown and the gate line, rendered by
templates/, and the JSON); `words` the templates' one environment and `say`, the templating.Words
of notes.j2, which words the notes and errors of the draws; `cli` the command line and
the writer's calls (gpubench_tools.output). Run it as `gpubench-compare` or
`python -m gpubench_tools.compare`: the same program with the same defaults.
"""

from .cli import main
from .config import DEFAULT_CONFIG_RESOURCE, CompareConfig, ConfigError, default_config
from .config import default_config_text, load_config, parse_config
from .engine import compare_reports, undisturbed
from .verdict import Judgement, Verdict, openblas_core

# fmt: off
__all__ = ["DEFAULT_CONFIG_RESOURCE", "CompareConfig", "ConfigError", "Judgement", "Verdict",
           "compare_reports", "default_config", "default_config_text", "load_config", "main",
           "openblas_core", "parse_config", "undisturbed"]
# fmt: on
