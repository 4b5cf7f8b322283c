"""python -m gpubench_tools.compare: see cli.py."""

import sys

from .cli import main

sys.exit(main())
