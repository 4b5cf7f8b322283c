"""python -m gpubench_tools.report: see cli.py."""

import sys

from .cli import main

sys.exit(main())
