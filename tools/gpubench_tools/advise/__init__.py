"""gpubench-advise: will this GEMM or tiny-MLP training step run faster on the CPU or the GPU?

`model` predicts both sides from one run (the fitted overhead model and the utilisation curves
of `curves`), `loo` measures its accuracy by leave-one-out, `render` writes the answers (the
templates' sentences and table, or JSON) and `cli` is the command line (docs/advisor.md).
"""

from .cli import PROG, main

__all__ = ["PROG", "main"]
