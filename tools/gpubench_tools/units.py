"""Human-readable numbers with units, shared by chart axes and report sentences."""

from __future__ import annotations

import math


def plural(n: int, word: str, many: str | None = None) -> str:
    """'1 run', '2 runs', '0 runs' ('1 repetition of', with `many` for an irregular plural)."""
    return f"{n} {word}" if n == 1 else f"{n} {many or word + 's'}"


def agree(n: int, one: str, many: str) -> str:
    """The word that agrees with a count: agree(1, "was", "were") is "was", agree(2, ...) "were"."""
    return one if n == 1 else many


def _sig(x: float, digits: int = 3) -> str:
    """`digits` significant digits without scientific notation for everyday magnitudes."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    decimals = max(0, digits - 1 - int(math.floor(math.log10(abs(x)))))
    return f"{x:.{decimals}f}"


def fmt_time(seconds: float, digits: int = 3) -> str:
    if not math.isfinite(seconds):
        return "n/a"
    units = ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"))
    scale, unit = next(((s, u) for s, u in units if abs(seconds) >= s), (1e-9, "ns"))
    return f"{_sig(seconds / scale, digits)} {unit}"


def fmt_bytes(nbytes: float) -> str:
    if not math.isfinite(nbytes):
        return "n/a"
    for scale, unit in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if abs(nbytes) >= scale:
            v = nbytes / scale
            return f"{v:.0f} {unit}" if v == int(v) else f"{_sig(v)} {unit}"
    return f"{nbytes:.0f} B"


def fmt_flops(flops: float) -> str:
    """A FLOP/s rate with an SI prefix."""
    if not math.isfinite(flops):
        return "n/a"
    for scale, unit in ((1e15, "PFLOP/s"), (1e12, "TFLOP/s"), (1e9, "GFLOP/s"), (1e6, "MFLOP/s")):
        if abs(flops) >= scale:
            return f"{_sig(flops / scale)} {unit}"
    return f"{flops:.3g} FLOP/s"


def fmt_rate(bytes_per_s: float) -> str:
    return f"{_sig(bytes_per_s / 1e9)} GB/s" if math.isfinite(bytes_per_s) else "n/a"


def fmt_ratio(r: float) -> str:
    """Speedups: two significant digits read best in sentences (4.1x, 12x, 0.35x)."""
    if not math.isfinite(r):
        return "n/a"
    return f"{r:.2g}x" if r < 10 else f"{r:.0f}x"


def fmt_size(x: float) -> str:
    """A problem size or count: integers as integers, large ones with SI prefixes."""
    if not math.isfinite(x):
        return "n/a"
    # a prefix from its least magnitude on; thousands only from 10k (below it, the whole number)
    for least, scale, prefix in ((1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e4, 1e3, "k")):
        if abs(x) >= least:
            return f"{_sig(x / scale)}{prefix}"
    return f"{x:.0f}" if abs(x - round(x)) < 1e-9 or abs(x) >= 100 else f"{x:.3g}"


def fmt_pct(fraction: float) -> str:
    """A share (0..1) as a percentage, with more digits only where it would read as 0%."""
    p = fraction * 100
    if not math.isfinite(p):
        return "n/a"
    if p >= 9.5 or p == 0:
        return f"{p:.0f}%"
    if p >= 0.95:
        return f"{p:.1f}%"
    return f"{p:.2g}%"


def approx(x: float) -> str:
    """An interpolated size to two significant digits: it is an estimate, not a measurement."""
    if not math.isfinite(x) or x <= 0:
        return "n/a"
    digits = int(math.floor(math.log10(x)))
    return fmt_size(round(x, 1 - digits) if digits >= 1 else round(x))
