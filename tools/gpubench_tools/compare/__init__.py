"""gpubench-compare: two bench JSON files in, a verdict per benchmark and an exit status out.

`engine` groups each file's repetitions (a DataFrame) by benchmark, normalises, compares each
benchmark and holds the result and the gate; `stats` gives the verdict of one metric (on the U
test and sample summary of `gpubench_tools.stats`, shared with gpubench-history); `config` the
thresholds (defaults: the package data default-thresholds.json); `render` the terminal text and
the Markdown (templates/compare.md.j2); `cli` the command line. Run it as `gpubench-compare` or
`python -m gpubench_tools.compare`: the same program with the same defaults.
"""

from .cli import main
from .config import DEFAULT_CONFIG_RESOURCE, CompareConfig, ConfigError, default_config
from .config import default_config_text, load_config, parse_config
from .engine import BenchComparison, CompareResult, UsageError, compare_reports, openblas_core
from .engine import undisturbed

__all__ = """DEFAULT_CONFIG_RESOURCE BenchComparison CompareConfig CompareResult ConfigError
UsageError compare_reports default_config default_config_text load_config main openblas_core
parse_config undisturbed""".split()
