"""python -m gpubench_tools.advise: see cli.py."""

import sys

from .cli import main

sys.exit(main())
