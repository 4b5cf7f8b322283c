"""The mixed-precision section's sentences, computed from the pairs of precision_analysis: where
bf16 and fp16 beat fp32, where they do not and why the numbers say so, loss scaling, and the
suite's step against PyTorch autocast."""

from __future__ import annotations

import math
import statistics

from ..dataset import Source
from ..units import approx, fmt_pct, fmt_ratio, fmt_size, fmt_time
from .precision_analysis import (
    MIXED_PRECISIONS,
    PrecisionLine,
    PrecisionPair,
    TorchComparison,
    case_name,
    precision_lines,
    precision_pairs,
    skipped_mixed,
    torch_comparisons,
    unpaired_mixed,
)
from .sentences import faster_or_slower

__all__ = ["precision_sentences", "precision_gaps", "torch_sentences", "fmt_flop", "machine_of"]

# Cases named one by one after the first, before the rest are only counted.
_LISTED_CASES = 5
# A final loss within this share of fp32's is reported as the same training outcome.
SAME_LOSS_SHARE = 0.05


def fmt_flop(flop: float) -> str:
    """A count of floating-point operations: "40.8k flop", "412G flop"."""
    return f"{fmt_size(flop)} flop"


def machine_of(src: Source, pair: PrecisionPair) -> str:
    """Whose numbers a pair's are: the GPU's or the CPU's label (they differ for a reference run)."""
    return src.gpu_label if pair.mixed.backend == "gpu" else src.cpu_label


def _crossover_clause(line: PrecisionLine) -> str:
    c = line.crossover
    if c.kind == "cross" and c.x is not None:
        return (
            f"faster than fp32 from about {approx(c.x)} flop per step on (interpolated between "
            f"{fmt_flop(c.x_lo or math.nan)} and {fmt_flop(c.x_hi or math.nan)})"
        )
    if c.kind == "always_faster":
        return "faster than fp32 at every size measured"
    if c.kind == "slower_at_largest":
        if all(p.speedup < 1 for p in line.pairs):
            return "slower than fp32 at every size measured"
        return "slower than fp32 again at the largest step measured"
    return ""


def _line_sentence(src: Source, line: PrecisionLine) -> str:
    who = f"{machine_of(src, line.pairs[0])}: {line.path}, {line.precision} against fp32"
    if len(line.pairs) == 1:
        p = line.pairs[0]
        return (
            f"{who} at {p.case}: {fmt_ratio(p.speedup)} fp32's speed ({fmt_time(p.mixed.t_epoch)} "
            f"against {fmt_time(p.fp32.t_epoch)} per epoch)."
        )
    lo = min(line.pairs, key=lambda p: p.speedup)
    hi = max(line.pairs, key=lambda p: p.speedup)
    text = (
        f"{who}: from {fmt_ratio(lo.speedup)} fp32's speed at {lo.case} "
        f"({fmt_flop(lo.step_flop)} per step) to {fmt_ratio(hi.speedup)} at {hi.case} "
        f"({fmt_flop(hi.step_flop)} per step)"
    )
    clause = _crossover_clause(line)
    return f"{text}; {clause}." if clause else f"{text}."


def _reasons(p: PrecisionPair) -> list[str]:
    """What the counters say about a mixed run that is slower than fp32."""
    reasons = []
    cs = p.compute_speedup
    products = "tensor cores" if p.mixed.backend == "gpu" else "the bf16 products"
    if math.isfinite(cs) and cs < 1:
        reasons.append(
            f"even its compute phase is slower ({fmt_ratio(cs)} fp32's speed): at "
            f"{fmt_flop(p.step_flop)} per step the products are too small for {products} to "
            f"make up for the conversions"
        )
    elif math.isfinite(cs):
        o32, om = p.overhead_per_epoch
        rest = (
            f"the time outside it (launches, synchronisation) grows from {fmt_time(o32)} to "
            f"{fmt_time(om)} per epoch"
            if math.isfinite(o32) and math.isfinite(om) and om > o32
            else "the rest of the epoch"
        )
        reasons.append(f"its compute phase is {fmt_ratio(cs)} faster, but {rest} and eats the gain")
    extra = p.extra_kernels
    if extra is not None and extra > 0 and p.fp32.kernels is not None:
        # fp16 steps also unscale and check the gradients for the loss scaling.
        what = "its conversions" + (" and loss scaling" if p.precision == "fp16" else "")
        reasons.append(
            f"{what} add {extra:.0f} kernel launches per step "
            f"({p.mixed.kernels:.0f} against {p.fp32.kernels:.0f})"
        )
    return reasons


def _no_help_sentences(src: Source, lines: list[PrecisionLine]) -> list[str]:
    """Per path and precision, the cases where the mixed run is slower than fp32: the smallest
    one explained from its counters, the others listed."""
    out = []
    for line in lines:
        slower = [p for p in line.pairs if p.speedup < 1]
        if not slower:
            continue
        first, rest = slower[0], slower[1:]
        text = (
            f"{machine_of(src, first)}: mixed precision does not help {line.path} at "
            f"{first.case}: {line.precision} runs at {fmt_ratio(first.speedup)} fp32's speed "
            f"({fmt_time(first.mixed.t_epoch)} against {fmt_time(first.fp32.t_epoch)} per epoch, "
            f"{fmt_flop(first.step_flop)} per step)"
        )
        reasons = _reasons(first)
        if reasons:
            text += ": " + "; ".join(reasons)
        if rest:
            listed = ", ".join(f"{p.case} ({fmt_ratio(p.speedup)})" for p in rest[:_LISTED_CASES])
            more = len(rest) - _LISTED_CASES
            text += f". It is slower than fp32 at {listed}" + (
                f" and {more} more cases" if more > 0 else ""
            )
        out.append(text + ".")
    return out


def _payoff_sentence(src: Source, pairs: list[PrecisionPair]) -> list[str]:
    """The suite's GPU case where a mixed precision gains most over fp32."""
    gains = [
        p
        for p in pairs
        if p.mixed.backend == "gpu" and not p.path.startswith("PyTorch") and p.speedup > 1
    ]
    if not gains:
        return []
    best = max(gains, key=lambda p: p.speedup)
    text = (
        f"{src.gpu_label}: tensor cores pay off most at {best.case} "
        f"({fmt_flop(best.step_flop)} per step), where {best.path} {best.precision} runs at "
        f"{fmt_ratio(best.speedup)} fp32's speed"
    )
    pm, p32 = best.mixed.point.c("pct_peak"), best.fp32.point.c("pct_peak")
    if math.isfinite(pm) and math.isfinite(p32):
        text += (
            f" ({fmt_pct(pm / 100)} of the {best.precision} tensor peak, against "
            f"{fmt_pct(p32 / 100)} of the fp32 peak for fp32)"
        )
    return [text + "."]


def _loss_scaling_sentences(src: Source, pairs: list[PrecisionPair]) -> list[str]:
    fp16 = [p for p in pairs if p.precision == "fp16"]
    if not fp16:
        return []
    counted = [p for p in fp16 if p.mixed.point.has("skipped_steps", "loss_scale")]
    if not counted:
        return [
            f"{src.gpu_label}: the fp16 rows carry no skipped_steps or loss_scale counters, so "
            "their loss scaling cannot be checked here."
        ]
    scales = [p.mixed.point.c("loss_scale") for p in counted]
    span = (
        f"{min(scales):g}" if min(scales) == max(scales) else f"{min(scales):g} to {max(scales):g}"
    )
    skipping = [p for p in counted if p.mixed.point.c("skipped_steps") > 0]
    if not skipping:
        return [
            f"fp16 with dynamic loss scaling: none of the {len(counted)} fp16 runs skipped a step; "
            f"the final loss scale is {span}."
        ]
    listed = ", ".join(
        f"{p.path} at {p.case}: {p.mixed.point.c('skipped_steps'):.0f} of {p.steps:.0f} steps"
        for p in skipping[:_LISTED_CASES]
    )
    more = len(skipping) - _LISTED_CASES
    return [
        f"fp16 with dynamic loss scaling: {len(skipping)} of {len(counted)} fp16 runs skipped "
        f"steps whose scaled gradients overflowed ({listed}"
        + (f", and {more} more runs" if more > 0 else "")
        + f"); the final loss scale is {span}."
    ]


def _final_loss_sentence(pairs: list[PrecisionPair]) -> list[str]:
    """How far the mixed-precision runs end from fp32's final loss (the same steps from the same
    initial weights, so a large gap means the precision changed the training, not the timing)."""
    compared = [p for p in pairs if math.isfinite(p.final_loss_change)]
    if not compared:
        return []
    worst = max(compared, key=lambda p: abs(p.final_loss_change))
    change = abs(worst.final_loss_change)
    where = (
        f"{worst.path} {worst.precision} at {worst.case}, "
        f"{worst.mixed.point.c('final_loss'):.4g} against {worst.fp32.point.c('final_loss'):.4g}"
    )
    if change < SAME_LOSS_SHARE:
        return [
            f"The mixed-precision runs end within {fmt_pct(change)} of fp32's final loss "
            f"(largest difference: {where})."
        ]
    return [
        f"The final loss moves with the precision: up to {fmt_pct(change)} away from fp32's ({where})."
    ]


def torch_sentences(src: Source, comparisons: list[TorchComparison] | None = None) -> list[str]:
    """Per precision, the suite's eager step against PyTorch's (PyTorch time / ours)."""
    comparisons = torch_comparisons(src) if comparisons is None else comparisons
    out = []
    for precision in ("fp32", *MIXED_PRECISIONS):
        eager = [c for c in comparisons if c.precision == precision and c.ours.variant == "eager"]
        if not eager:
            continue
        what = "fp32" if precision == "fp32" else f"{precision} autocast"
        if len(eager) == 1:
            c = eager[0]
            out.append(
                f"{src.gpu_label}, against PyTorch {what}: our {precision} eager step is "
                f"{faster_or_slower(c.ratio, 'PyTorch')} at {case_name(c.ours)} "
                f"({fmt_time(c.ours.t_epoch)} against {fmt_time(c.torch.t_epoch)} per epoch)."
            )
            continue
        lo = min(eager, key=lambda c: c.ratio)
        hi = max(eager, key=lambda c: c.ratio)
        faster = sum(1 for c in eager if c.ratio > 1)
        out.append(
            f"{src.gpu_label}, against PyTorch {what}: our {precision} eager step is faster in "
            f"{faster} of {len(eager)} cases (median PyTorch/ours "
            f"{fmt_ratio(statistics.median(c.ratio for c in eager))}); "
            f"{faster_or_slower(lo.ratio, 'PyTorch')} at {case_name(lo.ours)}, "
            f"{faster_or_slower(hi.ratio, 'PyTorch')} at {case_name(hi.ours)}."
        )
    return out


def precision_sentences(src: Source) -> list[str]:
    """Every sentence of the section for one machine, the summary's first."""
    pairs = precision_pairs(src)
    lines = precision_lines(pairs)
    out = [_line_sentence(src, line) for line in lines]
    out += _no_help_sentences(src, lines)
    out += _payoff_sentence(src, pairs)
    out += _loss_scaling_sentences(src, pairs)
    out += _final_loss_sentence(pairs)
    out += torch_sentences(src)
    return out


def precision_gaps(src: Source) -> list[str]:
    """What the input lacks for this section, said plainly (empty when nothing is missing)."""
    out = []
    pairs = precision_pairs(src)
    gpu_fp32 = [p for p in src.mlp() if p.is_gpu]
    if gpu_fp32 and not any(p.mixed.backend == "gpu" for p in pairs):
        out.append(
            f"{src.gpu_label}: no GPU mixed-precision rows to set against the GPU's fp32 rows "
            f"(bench names them mlp/gpu/<eager|graph>/.../precision:<bf16|fp16>)."
        )
    unpaired = unpaired_mixed(src)
    if unpaired:
        out.append(
            f"{len(unpaired)} mixed-precision rows have no fp32 row of the same case in the input, "
            f"so they are not compared (for example {unpaired[0].point.run_name})."
        )
    skipped = skipped_mixed(src)
    if skipped:
        out.append(
            f"{len(skipped)} mixed-precision rows were skipped (for example "
            f"{skipped[0].run_name}: {skipped[0].error})."
        )
    if any(p.mixed.backend == "gpu" for p in pairs) and not torch_comparisons(src):
        out.append(
            "No PyTorch autocast rows to compare with: tools/reference/torch_amp.py writes them; "
            "give its JSON to the report with the sweep's."
        )
    return out
