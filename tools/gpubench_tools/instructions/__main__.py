"""python -m gpubench_tools.instructions: see lane.py."""

import sys

from .lane import main

sys.exit(main())
