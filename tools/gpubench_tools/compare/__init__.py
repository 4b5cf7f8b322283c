"""gpubench-compare: two bench JSON files in, a verdict per benchmark and an exit status out.

The steps live in `engine` (grouping, normalisation, one comparison per benchmark), the statistics
in `stats`, the thresholds file in `config`, the result's data model in `model`, its terminal and
Markdown text in `render`, and the command line in `cli`. Run it as `python -m
gpubench_tools.compare` or `gpubench-compare`.
"""

from .cli import DEFAULT_CONFIG_PATH, main
from .config import CompareConfig, ConfigError, load_config, parse_config
from .engine import UsageError, compare_reports, openblas_core
from .model import BenchComparison, CompareResult

__all__ = [
    "DEFAULT_CONFIG_PATH",
    "BenchComparison",
    "CompareConfig",
    "CompareResult",
    "ConfigError",
    "UsageError",
    "compare_reports",
    "load_config",
    "main",
    "openblas_core",
    "parse_config",
]
