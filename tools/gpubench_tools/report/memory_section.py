"""The report's memory section: measured against modelled device bytes, the largest batch that
fits, and allocation cost against size; sentences, charts and tables."""

from __future__ import annotations

import math
from pathlib import Path

from . import charts_memory as cmem
from ..dataset import Source
from ..units import fmt_bytes, fmt_pct, fmt_ratio, fmt_size, fmt_time
from .memory_analysis import (
    ALLOC_KINDS,
    alloc_costs,
    family_summaries,
    largest_batches,
    memory_rows,
    pool_savings,
    worst_disagreements,
)
from .memory_sentences import alloc_sentences, largest_batch_sentences, memory_gaps, model_sentences
from .section_parts import keep_charts, mixed_note
from .writer import Section, Table

__all__ = ["memory_section"]


def _model_tables(sources: list[Source]) -> list[Table]:
    families, worst = [], []
    for src in sources:
        rows = memory_rows(src)
        for f in family_summaries(rows):
            families.append(
                [src.gpu_label, f.family, str(f.rows), fmt_ratio(f.median_ratio)]
                + [f"{fmt_ratio(f.min_ratio)} to {fmt_ratio(f.max_ratio)}"]
                + [fmt_bytes(f.median_excess_bytes)]
            )
        for r in worst_disagreements(rows):
            worst.append(
                [src.gpu_label, r.point.run_name, fmt_bytes(r.modelled_bytes)]
                + [fmt_bytes(r.measured_bytes), fmt_ratio(r.ratio)]
            )
    if not families:
        return []
    return [
        Table(
            headers=[
                "GPU",
                "family",
                "rows",
                "measured / modelled (median)",
                "range",
                "measured - modelled (median)",
            ],
            rows=families,
            caption="Measured peak device bytes against the model's count, per family of GPU rows",
        ),
        Table(
            headers=["GPU", "benchmark", "modelled", "measured peak", "measured / modelled"],
            rows=worst,
            caption="The largest disagreements between measurement and model (by factor)",
        ),
    ]


def _largest_batch_table(sources: list[Source]) -> Table | None:
    rows = []
    for src in sources:
        for r in largest_batches(src):
            free, peak = r.c("device_bytes_free"), r.c("device_bytes_peak")
            share = fmt_pct(peak / free) if math.isfinite(free) and free > 0 else ""
            rows.append(
                [src.gpu_label, r.case, fmt_size(r.c("batch_largest")), fmt_size(r.c("batch"))]
                + [fmt_bytes(free), fmt_bytes(r.c("device_bytes_model")), fmt_bytes(peak), share]
                + [fmt_time(r.c("t_step"))]
            )
    if not rows:
        return None
    return Table(
        headers=[
            "GPU",
            "case",
            "largest batch (model)",
            "batch run",
            "free before",
            "modelled",
            "measured peak",
            "peak / free",
            "t_step",
        ],
        rows=rows,
        caption="The largest batch that fits: the model's answer from the free memory, and the "
        "run at that batch",
    )


def _alloc_table(sources: list[Source]) -> Table | None:
    per_src = [(src, alloc_costs(src)) for src in sources]
    kinds = [k for k in ALLOC_KINDS.values() if any(k in costs for _, costs in per_src)]
    rows = []
    for src, costs in per_src:
        saving = dict(pool_savings(costs))
        by_size = {kind: {a.nbytes: a for a in costs.get(kind, [])} for kind in kinds}
        for nbytes in sorted({n for table in by_size.values() for n in table}):
            cells = []
            for kind in kinds:
                a = by_size[kind].get(nbytes)
                spread = (
                    f" ({fmt_time(a.p90_s)})" if a is not None and math.isfinite(a.p90_s) else ""
                )
                cells.append("" if a is None else fmt_time(a.median_s) + spread)
            rows.append(
                [src.gpu_label, fmt_bytes(nbytes), *cells]
                + [fmt_ratio(saving[nbytes]) if nbytes in saving else ""]
            )
    if not rows:
        return None
    return Table(
        headers=["GPU", "bytes", *kinds, "pool saving"],
        rows=rows,
        caption="Host time per call: median over the repetitions (slowest decile in brackets); "
        "pool saving = (cudaMalloc + cudaFree) / pool allocate-and-free, medians",
    )


def memory_section(sources: list[Source], out: Path, title: str) -> Section:
    sec = Section(title)
    gpu = [s for s in sources if s.has_gpu]
    if not gpu:
        sec.paragraphs.append(
            "No GPU rows in the input files: device memory and allocation cost are GPU "
            "measurements."
        )
        return sec
    for src in gpu:
        sec.paragraphs += model_sentences(src)
        sec.paragraphs += largest_batch_sentences(src)
        sec.paragraphs += alloc_sentences(src)
    gaps = [text for src in gpu for text in memory_gaps(src)]
    if not sec.paragraphs:
        sec.paragraphs = gaps
        return sec
    sec.paragraphs += gaps
    sec.charts = keep_charts(cmem.chart_memory_model(gpu, out), cmem.chart_alloc_cost(gpu, out))
    sec.tables += _model_tables(gpu)
    sec.tables += [t for t in (_largest_batch_table(gpu), _alloc_table(gpu)) if t]
    sec.notes.append(
        "device_bytes_peak is measured with cudaMemGetInfo: the largest drop in free device "
        "memory while the row ran, so it includes what the model does not count (allocation "
        "granularity, library workspaces and handles created for the row). device_bytes_model is "
        "the workload's own count of parameters, gradients, activations and workspace. The "
        "largest-batch rows ask the model for the largest batch the free memory holds and train "
        "at about that batch. Allocation probes time one call on the host clock per iteration; "
        "each probe repeats a fixed number of times, and the median and slowest decile (the "
        "smallest time at or above 90% of the repetitions) are over those repetitions. The pool "
        "is the device's stream-ordered memory pool, warm (it keeps what is freed)."
    )
    sec.notes += mixed_note(sources, "Every number in this section is the reference run's ({gpu}).")
    return sec
