"""The report's mixed-precision section: sentences, the speedup chart and the tables."""

from __future__ import annotations

import math
from pathlib import Path

from . import charts_precision as cp
from ..dataset import Source
from ..units import fmt_ratio, fmt_time
from .precision_analysis import (
    PrecisionPair,
    case_name,
    path_name,
    precision_pairs,
    skipped_mixed,
    torch_comparisons,
    unpaired_mixed,
)
from .precision_sentences import fmt_flop, machine_of, precision_gaps, precision_sentences
from .section_parts import keep_charts, mixed_note
from .writer import Section, Table

__all__ = ["precision_section"]


def _kernels(p: PrecisionPair) -> str:
    a, b = p.fp32.kernels, p.mixed.kernels
    return f"{a:.0f} -> {b:.0f}" if a is not None and b is not None else ""


def _loss(p: PrecisionPair) -> str:
    a, b = p.fp32.point.c("final_loss"), p.mixed.point.c("final_loss")
    return f"{a:.4g} -> {b:.4g}" if math.isfinite(a) and math.isfinite(b) else ""


def _scaling(p: PrecisionPair) -> str:
    skipped, scale = p.mixed.point.c("skipped_steps"), p.mixed.point.c("loss_scale")
    if not (math.isfinite(skipped) and math.isfinite(scale)):
        return ""
    return f"{skipped:.0f} of {p.steps:.0f} skipped, scale {scale:g}"


def _pairs_table(sources: list[Source]) -> Table | None:
    rows = []
    for src in sources:
        for p in precision_pairs(src):
            rows.append(
                [machine_of(src, p), p.case, p.path, p.precision, fmt_flop(p.step_flop)]
                + [fmt_time(p.fp32.t_epoch), fmt_time(p.mixed.t_epoch), fmt_ratio(p.speedup)]
                + [_kernels(p), _loss(p), _scaling(p)]
            )
    if not rows:
        return None
    return Table(
        headers=[
            "machine",
            "case",
            "path",
            "precision",
            "work per step",
            "fp32 t_epoch",
            "mixed t_epoch",
            "speedup over fp32",
            "kernels per step (fp32 -> mixed)",
            "final loss (fp32 -> mixed)",
            "loss scaling (fp16)",
        ],
        rows=rows,
        caption="Each mixed-precision run against the fp32 run of the same path and case "
        "(speedup = fp32 time per epoch / mixed time per epoch; above 1x mixed is faster)",
    )


def _torch_table(sources: list[Source]) -> Table | None:
    rows = []
    for src in sources:
        for c in torch_comparisons(src):
            rows.append(
                [src.gpu_label, case_name(c.ours), c.precision, path_name(c.ours)]
                + [fmt_time(c.ours.t_epoch), fmt_time(c.torch.t_epoch), fmt_ratio(c.ratio)]
            )
    if not rows:
        return None
    return Table(
        headers=["GPU", "case", "precision", "our path", "ours", "PyTorch eager", "PyTorch / ours"],
        rows=rows,
        caption="Time per epoch of the suite's GPU step against PyTorch's (fp32, bf16 autocast, "
        "fp16 autocast with GradScaler; tools/reference/torch_amp.py); above 1x ours is faster",
    )


def _missing(sources: list[Source]) -> list[str]:
    """Why the section has nothing to compare: no mixed-precision row anywhere, or none with
    an fp32 row of the same case (the details follow in precision_gaps' sentences)."""
    skipped = sum(len(skipped_mixed(s)) for s in sources)
    unpaired = sum(len(unpaired_mixed(s)) for s in sources)
    if skipped or unpaired:
        return [
            f"No mixed-precision row can be compared with fp32: {unpaired} have no fp32 row of "
            f"the same case and {skipped} were skipped."
        ]
    return [
        "No mixed-precision rows in the input files: bench writes them as "
        "mlp/gpu/<eager|graph>/.../precision:<bf16|fp16> on the GPU and "
        "mlp/cpu/openblas/.../precision:bf16 on the CPU."
    ]


def precision_section(sources: list[Source], out: Path, title: str) -> Section:
    sec = Section(title)
    if not any(precision_pairs(s) for s in sources):
        sec.paragraphs = _missing(sources)
        if any(skipped_mixed(s) or unpaired_mixed(s) for s in sources):
            sec.paragraphs += [t for s in sources for t in precision_gaps(s)]
        return sec
    for src in sources:
        sec.paragraphs += precision_sentences(src)
        sec.paragraphs += precision_gaps(src)
    sec.charts = keep_charts(cp.chart_precision_speedup(sources, out))
    sec.tables += [t for t in (_pairs_table(sources), _torch_table(sources)) if t]
    sec.notes.append(
        "A mixed-precision row is the fp32 row of the same name with a /precision:<bf16|fp16> "
        "segment: the same path, data, batch, net and loss readback, so each speedup compares a "
        "run with itself in two precisions. On the GPU the layer products run on tensor cores "
        "from bf16 or fp16 operands with fp32 accumulation, and pct_peak is against that "
        "precision's tensor peak; bf16 trains without loss scaling (as PyTorch does), fp16 with "
        "dynamic loss scaling, whose skipped steps (an overflowed gradient) and final scale the "
        "rows count. Work per step counts the layer products only (2 flop per multiply-add). The "
        "crossover is interpolated in log(work) and log(speedup) at the last upward crossing. "
        "The explanation of a slower mixed run comes from its counters: the compute phase "
        "(t_compute, CUDA events) against fp32's, the time outside it (t_overhead) and the "
        "kernels per step."
    )
    sec.notes += mixed_note(
        sources,
        "GPU rows are the reference run's ({gpu}), measured {elsewhere}; CPU bf16 rows are this "
        "run's ({cpu}). Each speedup divides two rows of the same machine.",
    )
    return sec
