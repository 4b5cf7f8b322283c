"""The memory section's sentences, computed from memory_analysis: the model against the
measurement, the largest batch that fits, and what allocation costs."""

from __future__ import annotations

import math

import numpy as np

from ..dataset import Source
from ..units import fmt_bytes, fmt_pct, fmt_ratio, fmt_size, fmt_time
from .memory_analysis import (
    MALLOC,
    POOL,
    AllocCost,
    alloc_costs,
    family_summaries,
    largest_batches,
    memory_rows,
    pool_savings,
    worst_disagreements,
)

__all__ = ["model_sentences", "largest_batch_sentences", "alloc_sentences", "memory_gaps"]

# Within this factor either way the measured peak and the model are said to agree.
AGREEMENT_FACTOR = 1.1


def model_sentences(src: Source) -> list[str]:
    rows = memory_rows(src)
    if not rows:
        return []
    ratios = np.array([r.ratio for r in rows])
    agree = int(np.sum((ratios <= AGREEMENT_FACTOR) & (ratios >= 1 / AGREEMENT_FACTOR)))
    out = [
        f"{src.gpu_label}: over {len(rows)} GPU rows the measured peak (device_bytes_peak) is "
        f"{fmt_ratio(float(np.median(ratios)))} the model's count (device_bytes_model) at the "
        f"median, and within {fmt_pct(AGREEMENT_FACTOR - 1)} of it in {agree} of them."
    ]
    families = [
        f"{f.family} {fmt_ratio(f.median_ratio)}"
        + (
            f" ({fmt_ratio(f.min_ratio)} to {fmt_ratio(f.max_ratio)} over {f.rows} rows)"
            if f.rows > 1
            else ""
        )
        for f in family_summaries(rows)
    ]
    out.append("Measured over modelled, by family: " + "; ".join(families) + ".")
    worst = worst_disagreements(rows, 1)[0]
    side = "more" if worst.ratio > 1 else "less"
    out.append(
        f"The largest disagreement is {worst.point.run_name}: it measured "
        f"{fmt_bytes(worst.measured_bytes)} against a model of {fmt_bytes(worst.modelled_bytes)} "
        f"({fmt_ratio(worst.ratio)}, {fmt_bytes(abs(worst.measured_bytes - worst.modelled_bytes))} "
        f"{side} than the model counts)."
    )
    return out


def largest_batch_sentences(src: Source) -> list[str]:
    out = []
    for r in largest_batches(src):
        free, peak = r.c("device_bytes_free"), r.c("device_bytes_peak")
        text = (
            f"{src.gpu_label}, largest batch ({r.case}): the model puts it at "
            f"{fmt_size(r.c('batch_largest'))}"
        )
        if math.isfinite(free):
            text += f" in {fmt_bytes(free)} of free device memory"
        text += f"; the run trained at batch {fmt_size(r.c('batch'))}"
        if math.isfinite(peak):
            text += f" and its measured peak was {fmt_bytes(peak)}"
            if math.isfinite(free) and free > 0:
                text += f" ({fmt_pct(peak / free)} of the free memory)"
        step = r.c("t_step")
        if math.isfinite(step):
            text += f", {fmt_time(step)} per step"
        out.append(text + ".")
    skipped = [row for _, row in src.skipped if row.run_name.startswith("memory/")]
    for row in skipped:
        out.append(f"{row.run_name} did not run: {row.error}.")
    return out


def _cost_at(costs: list[AllocCost], index: int) -> str:
    a = costs[index]
    spread = f", slowest decile {fmt_time(a.p90_s)}" if math.isfinite(a.p90_s) else ""
    return f"{fmt_time(a.median_s)} at {fmt_bytes(a.nbytes)}{spread}"


def alloc_sentences(src: Source) -> list[str]:
    costs = alloc_costs(src)
    if not costs:
        return []
    parts = [
        f"{kind} {_cost_at(c, 0)}" + (f", {_cost_at(c, -1)}" if len(c) > 1 else "")
        for kind, c in costs.items()
    ]
    out = [
        f"{src.gpu_label}, host time per call (median over the repetitions): "
        + "; ".join(parts)
        + "."
    ]
    savings = pool_savings(costs)
    if savings:
        (n0, r0), (n1, r1) = savings[0], savings[-1]
        lo, hi = min(savings, key=lambda s: s[1]), max(savings, key=lambda s: s[1])
        if lo[1] >= 1:
            verdict = "is cheaper than"
        elif hi[1] < 1:
            verdict = "costs more than"
        else:
            verdict = "is cheaper at some sizes and costs more at others than"
        out.append(
            f"The warm pool's allocate-and-free (cudaMallocAsync + cudaFreeAsync) {verdict} "
            f"cudaMalloc + cudaFree ((cudaMalloc + cudaFree) / pool pair): {fmt_ratio(r0)} at "
            f"{fmt_bytes(n0)}"
            + (f", {fmt_ratio(r1)} at {fmt_bytes(n1)}" if len(savings) > 1 else "")
            + (
                f" (from {fmt_ratio(lo[1])} at {fmt_bytes(lo[0])} to {fmt_ratio(hi[1])} at "
                f"{fmt_bytes(hi[0])})"
                if {lo, hi} != {savings[0], savings[-1]}
                else ""
            )
            + "."
        )
    tails = [
        (a.p90_s / a.median_s, a)
        for c in costs.values()
        for a in c
        if math.isfinite(a.p90_s) and a.median_s > 0
    ]
    if tails:
        worst, a = max(tails, key=lambda t: t[0])
        out.append(
            f"The slowest decile is at most {fmt_ratio(worst)} the median ({a.kind} at "
            f"{fmt_bytes(a.nbytes)}: {fmt_time(a.p90_s)} against {fmt_time(a.median_s)})."
        )
    elif any(a.repetitions < 2 for c in costs.values() for a in c):
        out.append(
            "The file holds one value per probe (no per-repetition rows), so no slowest decile "
            "can be given."
        )
    return out


def memory_gaps(src: Source) -> list[str]:
    """What the input lacks for this section (empty when every part has data)."""
    if not src.has_gpu:
        return []
    out = []
    gpu_training = [p for p in src.points if p.is_gpu and p.workload in ("mlp", "cnn")]
    if gpu_training and not memory_rows(src):
        out.append(
            f"{src.gpu_label}: the GPU rows carry no device_bytes_peak and device_bytes_model "
            "counters (files written before those counters existed lack them)."
        )
    costs = alloc_costs(src)
    if not costs:
        out.append(f"{src.gpu_label}: no allocation probes (overhead/alloc/...) in the input.")
    elif MALLOC in costs and POOL not in costs:
        out.append("No pool probe (overhead/alloc/async/...), so no pool saving is given.")
    return out
