"""gpubench-compare: two bench JSON files in, a verdict per benchmark and an exit status out.

The steps live in `engine` (grouping, normalisation, one comparison per benchmark), the verdict
of one metric in `stats` (on the U test and sample summary of `gpubench_tools.stats`, shared with
gpubench-history), the thresholds in `config` (defaults: the package data file
default-thresholds.json), the result's data model in `model`, its terminal and Markdown text in
`render`, and the command line in `cli`. Run it as `gpubench-compare` or
`python -m gpubench_tools.compare`: the same program with the same defaults.
"""

from .cli import main
from .config import DEFAULT_CONFIG_RESOURCE, CompareConfig, ConfigError, default_config
from .config import default_config_text, load_config, parse_config
from .engine import BenchComparison, CompareResult, UsageError, compare_reports, openblas_core

__all__ = """DEFAULT_CONFIG_RESOURCE BenchComparison CompareConfig CompareResult ConfigError
UsageError compare_reports default_config default_config_text load_config main openblas_core
parse_config""".split()
