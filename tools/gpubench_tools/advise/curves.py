"""Measured utilisation curves: what the run's GEMM rows of one backend, dtype and thread count
(the GPU's kernel-only rows, the CPU's OpenBLAS rows) say about a shape nobody measured.

A shape is read off the curve of one shape family, interpolated linearly in log FLOP and log time
between the measured sizes on either side; along a curve time never decreases with work. Outside
the measured range the curve is extrapolated, and the answer says so: above the largest size the
rate is held (a big GEMM runs at the saturated rate), below the smallest the line through the two
smallest sizes continues, its slope kept between holding the time (all fixed cost) and holding the
rate (all arithmetic).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

Where = Literal["measured", "interpolated", "below", "above"]
# log2 distance beyond which a requested shape is called unlike the measured ones of its curve
# (8x in one dimension, or about 4.4x in each of two).
FAR_SHAPE = 3.0


@dataclass(frozen=True)
class GemmShape:
    """C (m x n) = A (m x k) B (k x n), row-major as bench lays them out."""

    m: int
    n: int
    k: int

    @property
    def flop(self) -> float:
        return 2.0 * self.m * self.n * self.k

    @property
    def mnk(self) -> tuple[int, int, int]:
        return self.m, self.n, self.k

    def elements(self) -> tuple[int, int, int]:
        """Elements of A, B and C."""
        return self.m * self.k, self.k * self.n, self.m * self.n

    def __str__(self) -> str:
        return f"{self.m}x{self.n}x{self.k}"


@dataclass(frozen=True)
class Lookup:
    """One GEMM time read off a curve, with where it came from."""

    seconds: float
    backend: str
    dtype: str
    family: str
    threads: int | None  # None on the GPU
    where: Where  # measured (this exact shape), interpolated, or extrapolated below/above
    flop_range: tuple[float, float]  # the curve's measured FLOP, smallest and largest
    nearest: GemmShape  # the measured shape that chose the family
    # True when `nearest` is far from the shape asked for (the Euclidean distance of log2 m, n, k
    # above FAR_SHAPE), so that the curve is only a rough guide to it.
    unlike_measured: bool
    floor: str | None = None  # set when a bandwidth floor, not the curve, gave the time

    @property
    def extrapolated(self) -> bool:
        return self.where in ("below", "above")


def _read(
    mnk: np.ndarray, flop: np.ndarray, seconds: np.ndarray, shape: GemmShape
) -> tuple[float, Where]:
    """Seconds of `shape` on one family's rows."""
    exact = (mnk == shape.mnk).all(axis=1)
    if exact.any():
        return float(np.median(seconds[exact])), "measured"
    # Several shapes of a family can share a FLOP count (1024x128x128 and 16x1024x1024):
    # their log times are averaged so that the interpolation sees one value per size.
    xs, inverse = np.unique(np.log(flop), return_inverse=True)
    ys = np.bincount(inverse, weights=np.log(seconds)) / np.bincount(inverse)
    # Within a family more work does not take less time: a size measured slower than a
    # bigger one (cuBLAS's fp32 16x128x128 takes 54 us on the H100, 1024x128x128 10 us) is
    # a quirk of that one shape's kernel choice, which the exact shape keeps (above) but
    # its neighbours should not inherit. The curve is the running minimum from the top.
    ys = np.minimum.accumulate(ys[::-1])[::-1]
    x = math.log(shape.flop)
    if x > xs[-1]:
        return math.exp(ys[-1] + x - xs[-1]), "above"
    if x >= xs[0]:
        return math.exp(float(np.interp(x, xs, ys))), "interpolated"
    # Below the range: continue the line through the two smallest sizes in (log FLOP,
    # log time), its slope kept in [0, 1]: 0 holds the time (the smallest size was all
    # fixed cost, as on a GPU), 1 holds the rate (it was all arithmetic), in between the
    # mix the measurements show. One size alone gives no slope: the time is held.
    slope = float(np.clip((ys[1] - ys[0]) / (xs[1] - xs[0]), 0, 1)) if len(xs) >= 2 else 0.0
    return math.exp(ys[0] + slope * (x - xs[0])), "below"


def lookup(rows: pd.DataFrame | None, shape: GemmShape) -> Lookup | None:
    """The time of `shape` from the GEMM rows of one backend, dtype and thread count (columns
    backend, dtype, threads (0 on the GPU), family, m, n, k, flop, seconds), None without rows.
    The curve is the family whose measured shape lies nearest (distance of log2 m, n, k: a
    64x64x4096 product is nearer a long-reduction family than the squares) among the families
    whose sizes span its FLOP count when any do: a neighbouring family's interpolation is better
    evidence than this family's extrapolation. (numpy inside: leave-one-out makes thousands.)"""
    if rows is None or rows.empty:
        return None
    families, family = np.unique(rows["family"].to_numpy(str), return_inverse=True)
    mnk = rows[["m", "n", "k"]].to_numpy(float)
    flop, seconds = rows["flop"].to_numpy(float), rows["seconds"].to_numpy(float)
    lo, hi = np.full(len(families), np.inf), np.full(len(families), -np.inf)
    np.minimum.at(lo, family, flop)
    np.maximum.at(hi, family, flop)
    spans = (lo[family] <= shape.flop) & (shape.flop <= hi[family])
    dist = np.linalg.norm(np.log2(mnk) - np.log2(shape.mnk), axis=1)
    # Spanning families first, then the nearest shape, ties to the family named first
    # alphabetically, then to the earlier row (lexsort is stable; its last key sorts first).
    best = np.lexsort((family, dist, ~spans))[0]
    curve = family == family[best]
    seconds_at, where = _read(mnk[curve], flop[curve], seconds[curve], shape)
    return Lookup(
        seconds=seconds_at,
        backend=str(rows["backend"].iat[0]),
        dtype=str(rows["dtype"].iat[0]),
        family=str(families[family[best]]),
        threads=int(rows["threads"].iat[0]) or None,
        where=where,
        flop_range=(float(flop[curve].min()), float(flop[curve].max())),
        nearest=GemmShape(*(int(x) for x in mnk[best])),
        unlike_measured=bool(np.linalg.norm(np.log2(mnk[best]) - np.log2(shape.mnk)) > FAR_SHAPE),
    )
