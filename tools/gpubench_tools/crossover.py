"""Where a speedup curve crosses 1: the size at which the GPU overtakes the CPU."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, Sequence

__all__ = ["Crossover", "find_crossover"]

Kind = Literal["cross", "always_faster", "slower_at_largest", "no_data"]


@dataclass
class Crossover:
    """kind "cross": `x` is the interpolated size beyond which the GPU stays ahead.

    "always_faster": ahead at every measured size (the crossover lies below the smallest);
    "slower_at_largest": still behind at the largest measured size; "no_data": nothing usable.
    `x_lo`/`x_hi` are the measured sizes that bracket the crossing.
    """

    kind: Kind
    x: float | None = None
    x_lo: float | None = None
    x_hi: float | None = None


def find_crossover(xs: Sequence[float], speedups: Sequence[float]) -> Crossover:
    """Interpolate the last upward crossing of speedup = 1.

    Interpolation is linear in (log size, log speedup): GEMM times follow power laws in the
    size, so a straight line in log-log space is the natural curve between two measurements.
    The *last* upward crossing is used so that noise around 1 at small sizes does not report
    a crossover after which the GPU falls behind again.
    """
    pts = sorted(
        (float(x), float(s))
        for x, s in zip(xs, speedups)
        if x > 0 and s > 0 and math.isfinite(x) and math.isfinite(s)
    )
    if not pts:
        return Crossover("no_data")
    if all(s >= 1.0 for _, s in pts):
        return Crossover("always_faster", x_hi=pts[0][0])
    if pts[-1][1] < 1.0:
        return Crossover("slower_at_largest", x_lo=pts[-1][0])
    i = max(j for j, (_, s) in enumerate(pts) if s < 1.0)
    (x0, s0), (x1, s1) = pts[i], pts[i + 1]
    t = (0.0 - math.log(s0)) / (math.log(s1) - math.log(s0))
    x = math.exp(math.log(x0) + t * (math.log(x1) - math.log(x0)))
    return Crossover("cross", x=x, x_lo=x0, x_hi=x1)
