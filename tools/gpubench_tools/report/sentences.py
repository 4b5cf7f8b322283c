"""One or two sentences per chart, generated from the numbers so the report reads on its own."""

from __future__ import annotations

import math
import statistics
from typing import Sequence

from ..crossover import Crossover, find_crossover
from ..dataset import Source, short_gpu_name
from .matmul_analysis import (
    PHASES,
    Breakdown,
    SpeedupSeries,
    breakdowns,
    speedup_series,
    utilisation_series,
)
from .cnn_analysis import (
    TUTORIAL_BATCH,
    CnnCrossover,
    CnnPoint,
    best_cpu_by_batch,
    cnn_crossovers,
    cnn_data_set,
    cnn_lines,
    cnn_points,
    kind_shares,
    profile_batch,
    profiles_at,
)
from .mlp_analysis import MlpPoint, iris_bars, mlp_points, readback_table, speedup_grid
from ..overhead_model import OverheadModel
from ..units import approx, fmt_bytes, fmt_pct, fmt_rate, fmt_ratio, fmt_size, fmt_time

__all__ = [
    "PHASE_WORDS",
    "crossover_clause",
    "speedup_sentences",
    "breakdown_sentences",
    "utilisation_sentences",
    "overhead_sentences",
    "mlp_sentences",
    "cnn_sentences",
    "no_gpu_sentence",
    "faster_or_slower",
    "whose_numbers_sentences",
    "reference_warning",
]

PHASE_WORDS = {
    "t_h2d": "host-to-device copy",
    "t_compute": "compute",
    "t_d2h": "device-to-host copy",
    "t_overhead": "launch and synchronisation overhead",
}
assert set(PHASE_WORDS) == {k for k, _ in PHASES}


def faster_or_slower(speedup: float, than: str = "the CPU") -> str:
    """'4.1x slower than the CPU' / '2.3x faster than the CPU' from a CPU/GPU time ratio."""
    if speedup >= 1:
        return f"{fmt_ratio(speedup)} faster than {than}"
    return f"{fmt_ratio(1 / speedup)} slower than {than}"


PHASE_SHORT = {
    "t_h2d": "H2D copy",
    "t_compute": "compute",
    "t_d2h": "D2H copy",
    "t_overhead": "overhead",
}


_n = approx


def crossover_clause(c: Crossover, var: str = "n") -> str:
    if c.kind == "cross" and c.x is not None:
        return f"{var}~{_n(c.x) if var in ('n', 'batch') else fmt_size(c.x)}"
    if c.kind == "always_faster":
        return "ahead at every measured size"
    if c.kind == "slower_at_largest":
        return f"not within the measured sizes (up to {var}={fmt_size(c.x_lo or math.nan)})"
    return "no data"


def no_gpu_sentence(src: Source) -> str:
    return f"No GPU data in {src.path} (recorded on {src.cpu_label} without a usable GPU)."


def whose_numbers_sentences(src: Source) -> list[str]:
    """For a report whose GPU rows come from a reference run: which numbers are this run's and
    which the reference's, and what a ratio between them means. Empty for a single machine."""
    ref = src.gpu_reference
    if ref is None:
        return []
    gpu = src.gpu_name or "the reference GPU"
    this = "this run" if ref.same_host else "this machine"
    return [
        f"This run has no GPU rows, so the GPU side of this report comes from a reference run. "
        f"CPU numbers are this run's: {src.cpu_name} ({src.file_names}). GPU numbers are not "
        f"from {this}: they are the {gpu} of a reference run {ref.provenance()} "
        f"({ref.file_names}).",
        f"Speedups, crossovers and GPU/CPU ratios below pair this run's CPU with that GPU: "
        f"they estimate what the {short_gpu_name(gpu)} would gain over this CPU, not a "
        f"measurement of one run. The end-to-end breakdown, the GPU utilisation and the "
        f"overhead model are the reference run's alone.",
    ]


def reference_warning(src: Source) -> str | None:
    """The one-line warning at the top of a report that mixes two machines."""
    ref = src.gpu_reference
    if ref is None:
        return None
    return (
        f"GPU numbers come from the reference run {ref.file_names} ({src.gpu_name}, "
        f"{ref.provenance()}), not from {'this run' if ref.same_host else 'this machine'}; CPU "
        f"numbers are this run's ({src.cpu_name})"
    )


def _find(series: list[SpeedupSeries], variant: str, dtype: str) -> SpeedupSeries | None:
    return next((s for s in series if s.variant == variant and s.dtype == dtype), None)


def _phase_at(src: Source, dtype: str, host: str, n: float) -> tuple[str, float] | None:
    for b in breakdowns(src):
        if b.dtype == dtype and b.host == host and n in b.ns:
            return b.dominant(b.ns.index(n))
    return None


def _representative_slow_point(s: SpeedupSeries) -> int | None:
    """A size where the GPU is behind: the one in the middle (log scale) of the losing range,
    which says more than the tiniest size and less noisy than the one next to the crossover."""
    slow = [i for i, v in enumerate(s.speedup) if v < 1]
    if not slow:
        return None
    mid = sum(math.log(s.xs[i]) for i in slow) / len(slow)
    return min(slow, key=lambda i: abs(math.log(s.xs[i]) - mid))


def speedup_sentences(src: Source) -> list[str]:
    if not src.has_gpu:
        return [no_gpu_sentence(src)]
    series = speedup_series(src)
    if not series:
        if not (src.matmul_kernel() or src.matmul_e2e()):
            # The GPU rows of a mixed source are the reference's: name its files, not the run's.
            where = src.gpu_reference.file_names if src.gpu_reference else src.path
            return [f"{src.gpu_label}: no GPU matrix-multiplication rows in {where}."]
        return [
            f"{src.gpu_label}: no CPU matrix-multiplication rows of the same shapes to compare with."
        ]
    out = []
    # Precisions with an end-to-end run tell the whole story; without any, the first kernel.
    with_e2e = [
        d
        for d in ("fp32", "bf16", "fp16", "tf32", "fp64")
        if any(s.dtype == d and s.mode == "e2e" for s in series)
    ]
    for dtype in with_e2e or [series[0].dtype]:
        e2e = _find(series, "e2e pinned", dtype) or _find(series, "e2e pageable", dtype)
        kernel = _find(series, "kernel-only", dtype)
        main = e2e or kernel
        if main is None:
            continue
        what = f"the GPU end-to-end ({dtype}, {e2e.host})" if e2e else f"the GPU kernel ({dtype})"
        head = f"{src.gpu_label} against {src.cpu_label}: "
        compute = (
            f" (compute-only: {crossover_clause(kernel.crossover)})"
            if e2e is not None and kernel
            else ""
        )
        i = _representative_slow_point(main)
        if i is not None:
            n = main.xs[i]
            text = f"{head}at n={fmt_size(n)} {what} is {faster_or_slower(main.speedup[i])}"
            phase = _phase_at(src, dtype, e2e.host, n) if e2e else None
            if phase is not None:
                text += f": {fmt_pct(phase[1])} of its time is {PHASE_WORDS[phase[0]]}"
            c = main.crossover
            if c.kind == "cross" and c.x is not None:
                text += f"; it overtakes the CPU at n~{_n(c.x)}{compute}."
            else:
                text += f"; it does not overtake the CPU up to n={fmt_size(main.xs[-1])}{compute}."
        else:
            text = (
                f"{head}{what} is faster than the CPU at every measured size, "
                f"from {fmt_ratio(main.speedup[0])} at n={fmt_size(main.xs[0])} "
                f"to {fmt_ratio(main.speedup[-1])} at n={fmt_size(main.xs[-1])}{compute}."
            )
        out.append(text)
        # One more sentence for the largest size and for pageable memory, main precision only.
        if dtype == "fp32" and e2e is not None:
            # A reference GPU's ratio is against this run's CPU, named, not "the CPU".
            than = src.cpu_label if src.mixes_machines else "the CPU"
            extra = (
                f"At n={fmt_size(e2e.xs[-1])} the end-to-end GPU run is "
                f"{faster_or_slower(e2e.speedup[-1], than)}"
            )
            if kernel is not None and e2e.xs[-1] in kernel.xs:
                extra += f" (kernel only: {fmt_ratio(kernel.speedup[kernel.xs.index(e2e.xs[-1])])})"
            pageable = _find(series, "e2e pageable", dtype)
            if pageable is not None and e2e.host == "pinned":
                extra += f"; from pageable host memory the crossover moves to {crossover_clause(pageable.crossover)}"
            out.append(extra + ".")
        if len(out) >= 4:
            break
    return out


def _runs(b: Breakdown) -> list[tuple[str, int, int]]:
    """Consecutive sizes with the same dominant phase: (phase, first index, last index)."""
    runs: list[tuple[str, int, int]] = []
    for i in range(len(b.ns)):
        key, _ = b.dominant(i)
        if runs and runs[-1][0] == key:
            runs[-1] = (key, runs[-1][1], i)
        else:
            runs.append((key, i, i))
    return runs


def breakdown_sentences(src: Source) -> list[str]:
    if not src.has_gpu:
        return [no_gpu_sentence(src)]
    items = breakdowns(src)
    if not items:
        return [f"{src.label}: no end-to-end GPU rows with phase times."]
    out = []
    for b in items[:2]:
        runs = _runs(b)
        parts = []
        for j, (key, a, z) in enumerate(runs):
            word = PHASE_WORDS[key]
            if len(runs) == 1:
                parts.append(f"{word} is the largest part at every size")
            elif j == 0:
                parts.append(f"{word} is the largest part up to n={fmt_size(b.ns[z])}")
            elif j == len(runs) - 1:
                parts.append(f"{word} from n={fmt_size(b.ns[a])}")
            else:
                rng = (
                    f"n={fmt_size(b.ns[a])}"
                    if a == z
                    else f"n={fmt_size(b.ns[a])} to n={fmt_size(b.ns[z])}"
                )
                parts.append(f"{word} from {rng}")
        last_key, last_share = b.dominant(len(b.ns) - 1)
        first_key, first_share = b.dominant(0)
        text = ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
        if len(runs) == 1:
            detail = f"from {fmt_pct(first_share)} at n={fmt_size(b.ns[0])} to {fmt_pct(last_share)} at n={fmt_size(b.ns[-1])}"
        else:
            detail = (
                f"{PHASE_SHORT[first_key]} {fmt_pct(first_share)} at n={fmt_size(b.ns[0])}, "
                f"{PHASE_SHORT[last_key]} {fmt_pct(last_share)} at n={fmt_size(b.ns[-1])}"
            )
        text = f"{src.gpu_label}, end to end ({b.dtype}, {b.host}): {text} ({detail})."
        out.append(text)
    return out


def utilisation_sentences(src: Source) -> list[str]:
    series = utilisation_series(src)
    out = []
    cpu = [s for s in series if s.backend == "cpu" and "fp32" in s.name]
    if cpu:
        best = max(cpu, key=lambda s: max(s.pct))
        i = best.pct.index(max(best.pct))
        n0 = min(s.xs[0] for s in cpu)
        small = max((s for s in cpu if s.xs[0] == n0), key=lambda s: s.pct[0])
        out.append(
            f"{src.cpu_label}: the CPU reaches at most {fmt_pct(best.pct[i] / 100)} of its fp32 peak "
            f"({best.name.removeprefix('CPU fp32, ')}, n={fmt_size(best.xs[i])}); at n={fmt_size(n0)} "
            f"the best CPU run reaches {fmt_pct(small.pct[0] / 100)} "
            f"({small.name.removeprefix('CPU fp32, ')})."
        )
    gpu = next((s for s in series if s.name == "GPU kernel fp32"), None) or next(
        (s for s in series if s.backend == "gpu" and "kernel" in s.name), None
    )
    if gpu is not None:
        dtype = gpu.name.split()[-1]
        i = gpu.pct.index(max(gpu.pct))
        sms = src.gpu_context.get("gpu_sm_count")
        fill = (
            f", too little work to fill {sms} SMs" if sms else ", too little work to fill the GPU"
        )
        out.append(
            f"{src.gpu_label}: the {dtype} GEMM kernel reaches {fmt_pct(gpu.pct[i] / 100)} of its {dtype} peak "
            f"at n={fmt_size(gpu.xs[i])} but only {fmt_pct(gpu.pct[0] / 100)} at n={fmt_size(gpu.xs[0])}{fill}."
        )
    elif not src.has_gpu:
        out.append(no_gpu_sentence(src))
    return out


def overhead_sentences(src: Source, model: OverheadModel) -> list[str]:
    if not src.has_gpu:
        return [no_gpu_sentence(src)]
    if model.empty:
        return [
            f"{src.gpu_label}: no overhead probe rows (run the overhead/ benchmarks to fit the model)."
        ]
    out = []
    if model.copies:
        fits = "; ".join(
            f"{d.upper()} {h} alpha = {fmt_time(f.alpha_s)}, beta = {fmt_rate(f.beta_bytes_per_s)}"
            for (d, h), f in sorted(
                model.copies.items(), key=lambda kv: (kv[0][1] != "pinned", kv[0][0] != "h2d")
            )
        )
        out.append(f"{src.gpu_label}, copy cost T = alpha + bytes / beta: {fits}.")
        f = model.copies.get(("h2d", "pinned")) or next(iter(model.copies.values()))
        words = {"h2d": "host-to-device", "d2h": "device-to-host"}
        out.append(
            f"A {f.host} {words[f.direction]} copy reaches half of beta at alpha x beta = "
            f"{fmt_bytes(f.half_bandwidth_bytes)}; below that size the fixed cost alpha dominates."
        )
    items = model.launch
    parts = []
    if items.t_launch is not None:
        parts.append(f"{fmt_time(items.t_launch)} per kernel in a burst")
    if items.t_roundtrip is not None:
        parts.append(f"{fmt_time(items.t_roundtrip)} for one launch plus synchronise")
    if items.t_node is not None:
        parts.append(f"{fmt_time(items.t_node)} per CUDA-graph node")
    if items.t_sync_stream is not None:
        parts.append(f"{fmt_time(items.t_sync_stream)} per stream synchronise")
    if parts:
        out.append("Launch costs: " + ", ".join(parts) + ".")
    errors = model.errors()
    if errors:
        worst_i = max(range(len(errors)), key=lambda i: abs(errors[i]))
        pts = [
            p
            for p in src.matmul_e2e()
            if model.predict(p) is not None and p.c("t_wall", p.time) > 0
        ]
        wp = pts[worst_i]
        # The same median as the model chart's title, so the two never disagree.
        med = statistics.median(abs(e) for e in errors)
        side = "below" if errors[worst_i] < 0 else "above"
        m, n, k = wp.mnk
        where = f"n={fmt_size(n)}" if wp.shape == "square" else f"{m}x{n}x{k} ({wp.shape})"
        out.append(
            f"The model reproduces the measured end-to-end time within {fmt_pct(med)} "
            f"(median |error| over {len(errors)} runs); the largest deviation is "
            f"{fmt_pct(abs(errors[worst_i]))} {side} the measurement at {where} "
            f"({wp.dtype}, {wp.labels.get('host')})."
        )
    return out


def _launch_share(m: MlpPoint, model: OverheadModel | None) -> float | None:
    """Fraction of an epoch spent launching kernels: launches x fitted launch cost, or the
    measured overhead phase when the file has no launch probes."""
    k = m.kernels
    if k is not None and model is not None and model.launch.t_launch is not None and m.t_epoch > 0:
        return min(1.0, k * m.steps_per_epoch * model.launch.t_launch / m.t_epoch)
    tw, to = m.point.c("t_wall"), m.point.c("t_overhead")
    if math.isfinite(tw) and math.isfinite(to) and tw > 0:
        return min(1.0, to / tw)
    return None


def mlp_sentences(src: Source, model: OverheadModel | None) -> list[str]:
    pts = mlp_points(src)
    if not pts:
        return [f"{src.label}: no MLP data."]
    out = []
    bars = iris_bars(pts)
    if bars:
        by_variant = {m.variant: m for m in bars if m.backend == "gpu"}
        cpu = min((m for m in bars if m.backend == "cpu"), key=lambda m: m.t_epoch, default=None)
        eager = by_variant.get("eager")
        best_gpu = by_variant.get("fused") or by_variant.get("graph")
        text = ""
        if eager is not None:
            share = _launch_share(eager, model)
            kern = f"{eager.kernels:.0f} launches" if eager.kernels else "its launches"
            if share is not None:
                text = f"On Iris the eager GPU path spends {fmt_pct(share)} of each epoch on {kern}"
            else:
                text = (
                    f"On Iris the eager GPU path makes {kern} per step, takes "
                    f"{fmt_time(eager.t_epoch)} per epoch"
                )
            if cpu is not None:
                text += f" and is {faster_or_slower(cpu.t_epoch / eager.t_epoch)}"
        if best_gpu is not None and cpu is not None:
            verb = "removes them" if best_gpu.variant == "fused" else "replays them as one graph"
            clause = f"the {best_gpu.variant} path {verb} and runs {faster_or_slower(cpu.t_epoch / best_gpu.t_epoch)}"
            text = f"{text}; {clause}" if text else f"On Iris {clause}"
        if text and cpu is not None:
            text += f" ({cpu.name}: {fmt_time(cpu.t_epoch)} per epoch)"
        if not text and cpu is not None:
            text = f"On Iris the fastest CPU path is {cpu.name}: {fmt_time(cpu.t_epoch)} per epoch"
        if text:
            who = src.label if (eager or best_gpu) else src.cpu_label
            if src.mixes_machines and (eager or best_gpu) and cpu is not None:
                who = f"{src.gpu_label} against {src.cpu_label}"
            out.append(f"{who}: {text[0].lower()}{text[1:]}.")
    # Where the GPU starts to win on the synthetic sweep.
    for variant in ("eager", "graph", "fused"):
        batches, hiddens, grid = speedup_grid(pts, variant)
        cells = [(h, row) for h, row in zip(hiddens, grid) if any(math.isfinite(v) for v in row)]
        if not cells:
            continue
        wins = sum(1 for _, row in cells for v in row if math.isfinite(v) and v >= 1)
        total = sum(1 for _, row in cells for v in row if math.isfinite(v))
        cross, ahead, behind = [], [], []
        for h, row in sorted(cells, key=lambda c: -c[0]):
            xs = [b for b, v in zip(batches, row) if math.isfinite(v)]
            c = find_crossover(xs, [v for v in row if math.isfinite(v)])
            if c.kind == "cross" and c.x is not None:
                cross.append(f"~{approx(c.x)} at hidden={h}")
            elif c.kind == "always_faster":
                ahead.append(str(h))
            elif c.kind == "slower_at_largest":
                behind.append(str(h))
        gpu_side, cpu_side = (
            (f" ({src.gpu_label})", f" ({src.cpu_label})") if src.mixes_machines else ("", "")
        )
        text = (
            f"Synthetic sweep, GPU {variant}{gpu_side} against the best CPU run{cpu_side}: "
            f"faster in {wins} of {total} batch x hidden cells"
        )
        if cross:
            text += "; the crossover batch size is " + ", ".join(cross)
        if ahead:
            text += f"; ahead at every batch size for hidden={', '.join(ahead)}"
        if behind:
            text += f"; behind at every batch size up to {fmt_size(batches[-1])} for hidden={', '.join(behind)}"
        out.append(text + ".")
    data, table = readback_table(pts)
    costs = []
    for name, by_r in table.items():
        if 0 in by_r and 1 in by_r:
            d = by_r[1].t_epoch - by_r[0].t_epoch
            rel = d / by_r[0].t_epoch if by_r[0].t_epoch > 0 else math.nan
            costs.append((name, d, rel))
    if costs:
        gpu_costs = [c for c in costs if c[0].startswith("GPU")]
        cpu_costs = [c for c in costs if not c[0].startswith("GPU")]
        parts = [
            f"{fmt_time(d)} per epoch to {name} ({'+' if d >= 0 else '-'}{fmt_pct(abs(rel))})"
            for name, d, rel in gpu_costs
        ]
        text = (
            f"Reading the loss back every step ({data}) adds " + ", ".join(parts) if parts else ""
        )
        if cpu_costs:
            worst = max(cpu_costs, key=lambda c: abs(c[2]))
            if abs(worst[2]) < 0.01:
                cpu_text = "on the CPU it makes no measurable difference (<1%)"
            else:
                cpu_text = (
                    f"on the CPU it changes the epoch time by at most {fmt_pct(abs(worst[2]))}"
                )
            text = (
                f"{text}; {cpu_text}"
                if text
                else f"Reading the loss back every step ({data}): {cpu_text}"
            )
        if src.mixes_machines:
            text = f"{src.gpu_label} and {src.cpu_label}: {text[0].lower()}{text[1:]}"
        out.append(text + ".")
    return out


# --- CNN ---------------------------------------------------------------------------------------


def _near_tutorial(batches: Sequence[int]) -> int:
    """The tutorial's batch 64 where measured, else the nearest measured batch (log scale)."""
    return min(batches, key=lambda b: (abs(math.log(b / TUTORIAL_BATCH)), b))


def _threads_text(m: CnnPoint) -> str:
    t = m.threads or 1
    return f"{t} thread{'s' if t > 1 else ''}"


def _cnn_crossover_text(c: CnnCrossover) -> str:
    x = c.crossover
    if x.kind == "cross" and x.x is not None:
        return (
            f"faster from batch ~{approx(x.x)} on (interpolated between batch "
            f"{fmt_size(x.x_lo or math.nan)} and {fmt_size(x.x_hi or math.nan)})"
        )
    if x.kind == "always_faster":
        return (
            f"faster at every batch measured ({fmt_ratio(c.speedup[0])} at batch "
            f"{c.batches[0]}, {fmt_ratio(c.speedup[-1])} at batch {c.batches[-1]})"
        )
    return (
        f"never faster within the batches measured (up to batch {c.batches[-1]}, where it is "
        f"{fmt_ratio(1 / c.speedup[-1])} slower)"
    )


def _cnn_crossover_sentence(src: Source, lines: dict[str, list[CnnPoint]], data: str) -> str:
    """Per suite GPU path, the batch from which its step beats the best CPU step."""
    crossings = cnn_crossovers(lines)
    if not crossings:
        return ""
    # The fastest GPU path at the largest batch leads (the graph, where measured).
    lead = max(crossings, key=lambda c: c.speedup[-1])
    both = f"{src.gpu_label} against {src.cpu_label}" if src.mixes_machines else src.label
    text = (
        f"{both}: CNN training (data={data}), the {lead.name} step against the best CPU step is "
        f"{_cnn_crossover_text(lead)}"
    )
    for c in crossings:
        if c is not lead:
            text += f"; {c.name}: {_cnn_crossover_text(c)}"
    return text + "."


def _cnn_batch_sentence(src: Source, lines: dict[str, list[CnnPoint]]) -> str:
    """The fastest suite GPU path against the CPU's best at the tutorial's batch."""
    best = best_cpu_by_batch(lines)
    gpus = [
        m
        for line in lines.values()
        for m in line
        if m.backend == "gpu" and not m.is_torch and m.batch in best
    ]
    if not gpus:
        return ""
    batch = _near_tutorial([m.batch for m in gpus])
    g = min((m for m in gpus if m.batch == batch), key=lambda m: m.t_step)
    c = best[batch]
    return (
        f"At batch {batch} the {g.name} step is "
        f"{faster_or_slower(c.t_step / g.t_step, 'the CPU' + chr(39) + 's best')} "
        f"({fmt_time(g.t_step)} against {fmt_time(c.t_step)}, {c.name})."
    )


def _cnn_profile_sentence(src: Source, pts: list[CnnPoint], data: str) -> str:
    """What dominates a step at the profiled batch: GEMMs and im2col on the CPU, launch gaps on
    the GPU eager path and how much of them the graph removes."""
    batch = profile_batch(pts, data)
    if batch is None:
        return ""
    profiles = profiles_at(pts, data, batch)
    parts = []
    cpu = [m for m in profiles if m.backend == "cpu" and not m.is_torch]
    if cpu:
        best = min(cpu, key=lambda m: m.t_step)
        shares = kind_shares(best)
        parts.append(
            f"GEMMs take {fmt_pct(shares['GEMM'])} of the CPU step ({_threads_text(best)}) and "
            f"im2col {fmt_pct(shares['im2col'])}"
        )
    by_variant = {m.variant: m for m in profiles if m.backend == "gpu" and not m.is_torch}
    eager, graph = by_variant.get("eager"), by_variant.get("graph")
    if eager is not None and "launch_gaps" in eager.ops:
        gaps = eager.ops["launch_gaps"]
        text = (
            f"launch gaps take {fmt_pct(gaps / eager.profiled_step)} of the GPU eager step "
            f"({fmt_time(gaps)} of {fmt_time(eager.profiled_step)} profiled)"
        )
        if graph is not None:
            saved = eager.t_step - graph.t_step
            if saved > 0:
                text += (
                    f", which the graph removes: its step is {fmt_time(saved)} shorter "
                    f"({fmt_pct(saved / gaps)} of the gaps)"
                )
            else:
                text += ", and the graph step is not shorter"
        parts.append(text)
    if not parts:
        return ""
    return f"At batch {batch}, " + "; ".join(parts) + "."


def _cnn_throughput_sentence(src: Source, lines: dict[str, list[CnnPoint]]) -> str:
    """Images per second and one CIFAR-10 epoch at the largest batch both sides measured."""
    best = best_cpu_by_batch(lines)
    gpus = [m for line in lines.values() for m in line if m.backend == "gpu" and not m.is_torch]
    common = sorted(set(best) & {m.batch for m in gpus})
    if not common:
        return ""
    batch = common[-1]
    g = min((m for m in gpus if m.batch == batch), key=lambda m: m.t_step)
    c = best[batch]

    def epoch(m: CnnPoint) -> str:
        t = m.point.c("t_epoch_cifar")
        return f", one CIFAR-10 epoch in {fmt_time(t)}" if math.isfinite(t) else ""

    return (
        f"At batch {batch} the {g.name} path trains {fmt_size(g.images_per_s)} images/s"
        f"{epoch(g)}, against {fmt_size(c.images_per_s)} images/s on the CPU "
        f"({c.name}{epoch(c)})."
    )


def _cnn_torch_sentences(src: Source, lines: dict[str, list[CnnPoint]]) -> list[str]:
    """PyTorch eager beside the suite's paths of the same backend, at the batch both measured
    nearest to 64."""
    out = []
    for name, line in lines.items():
        m0 = line[0]
        if not m0.is_torch:
            continue
        suite = [
            p
            for other in lines.values()
            for p in other
            if p.backend == m0.backend and not p.is_torch
        ]
        ours = {p.batch for p in suite}
        common = [m.batch for m in line if m.batch in ours]
        batch = _near_tutorial(common or [m.batch for m in line])
        m = next(m for m in line if m.batch == batch)
        text = (
            f"{name} (eager, loss read every step): {fmt_time(m.t_step)} per step at batch {batch}"
        )
        same = [p for p in suite if p.batch == batch]
        if same:
            best = min(same, key=lambda p: p.t_step)
            verdict = faster_or_slower(m.t_step / best.t_step, "PyTorch")
            text += f"; the suite's {best.name} is {verdict}"
        out.append(text + ".")
    return out


def _cnn_input_sentences(src: Source, pts: list[CnnPoint], data: str) -> list[str]:
    """The cost of copying each batch from host memory every step, like a data loader."""
    parts: list[tuple[int, str]] = []
    for variant in ("eager", "graph"):
        for m in sorted(
            (
                m
                for m in pts
                if m.backend == "gpu" and m.variant == variant and m.data == data and not m.resident
            ),
            key=lambda m: (m.batch, m.input != "pageable"),
        ):
            base = next(
                (
                    r
                    for r in pts
                    if r.backend == "gpu"
                    and r.variant == variant
                    and r.data == data
                    and r.resident
                    and r.batch == m.batch
                    and r.readback == m.readback
                ),
                None,
            )
            if base is None or not base.t_step > 0:
                continue
            d = m.t_step - base.t_step
            sign = "+" if d >= 0 else "-"
            parts.append(
                (
                    m.batch,
                    f"{fmt_time(d)} per step ({sign}{fmt_pct(abs(d) / base.t_step)}) to GPU "
                    f"{variant} from {m.input} memory",
                )
            )
    return [
        f"Copying each batch from host memory every step, like a data loader, adds at batch "
        f"{batch} " + ", ".join(text for b, text in parts if b == batch) + "."
        for batch in sorted({b for b, _ in parts})
    ]


def cnn_sentences(src: Source) -> list[str]:
    """The CNN story of one machine from its numbers: the crossover batch, the tutorial batch on
    CPU against GPU, where a step goes, throughput per epoch, PyTorch and data-loader copies.
    When the GPU rows are a reference run's, every sentence names whose numbers it uses."""
    pts = cnn_points(src)
    reference = f"the reference run ({short_gpu_name(src.gpu_name or '')})"
    if not pts:
        if src.mixes_machines:
            return [f"{src.cpu_label}: no CNN data; {reference} has none either."]
        return [f"{src.label}: no CNN data."]
    data = cnn_data_set(pts)
    lines = cnn_lines(pts, data)
    suite = [m for line in lines.values() for m in line if not m.is_torch]
    has_cpu = any(m.backend == "cpu" for m in suite)
    has_gpu = any(m.backend == "gpu" for m in suite)
    out: list[str] = []
    if has_cpu and has_gpu:
        out += [_cnn_crossover_sentence(src, lines, data), _cnn_batch_sentence(src, lines)]
    elif has_cpu:
        where = (
            f"{reference} has no CNN rows either"
            if src.mixes_machines
            else "a run on a GPU, or --gpu-reference with one that has cnn/ rows, adds it"
        )
        cpu = [m for m in suite if m.backend == "cpu"]
        batch = _near_tutorial([m.batch for m in cpu])
        steps = ", ".join(
            f"{fmt_time(m.t_step)} ({_threads_text(m)})" for m in cpu if m.batch == batch
        )
        out.append(
            f"{src.cpu_label}: no GPU CNN rows in {src.path}, so the GPU side of the CNN story is "
            f"missing ({where}); one CPU training step at batch {batch} takes {steps}."
        )
    elif has_gpu:
        out.append(
            f"{src.gpu_label}: no CPU CNN rows in {src.path}, so there is no CPU/GPU crossover "
            f"for the CNN."
        )
    # With a reference run's GPU rows, each sentence after the first says whose numbers it uses:
    # both machines where it compares them, else the one it is about.
    gpu_sides = [
        _cnn_profile_sentence(src, pts, data),
        _cnn_throughput_sentence(src, lines),
        *_cnn_torch_sentences(src, lines),
        *_cnn_input_sentences(src, pts, data),
    ]
    if src.mixes_machines:
        out[1:] = [_whose(src, t, cpu=True, gpu=True) for t in out[1:] if t]
        for text in gpu_sides:
            cpu = "CPU" in text
            gpu = "GPU" in text
            out.append(_whose(src, text, cpu=cpu, gpu=gpu or not cpu))
    else:
        out += gpu_sides
    return [text for text in out if text]


def _whose(src: Source, text: str, cpu: bool, gpu: bool) -> str:
    if not text:
        return text
    who = (
        f"{src.gpu_label} against {src.cpu_label}"
        if cpu and gpu
        else (src.cpu_label if cpu else src.gpu_label)
    )
    # "At batch 64 ..." continues as "...: at batch 64"; a name ("PyTorch GPU") keeps its case.
    first = text.split(" ", 1)[0]
    if first[:1].isupper() and first[1:].islower():
        text = text[0].lower() + text[1:]
    return f"{who}: {text}"


def join(sentences: Sequence[str]) -> str:
    return " ".join(s for s in sentences if s)
