"""gpubench-advise: will this GEMM or tiny-MLP training step run faster on the CPU or the GPU?

`model` predicts both sides from one run: the GPU end to end from the fitted overhead model
(`..overhead_model`: copy alpha and beta, launch and sync costs) and the kernel-only
utilisation curves, the CPU from its OpenBLAS curves (`curves`: achieved FLOP/s against size,
interpolated in log FLOP, extrapolation flagged). `loo` measures the advisor's accuracy by
leave-one-out on the run's own rows; `render` writes the answers (sentences and a table, or
JSON); `cli` is the command line. Run it as `python -m gpubench_tools.advise` or
`gpubench-advise`.
"""

from .cli import PROG, main

__all__ = ["PROG", "main"]
