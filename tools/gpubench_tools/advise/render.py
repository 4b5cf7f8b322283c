"""The advisor's answers as plain sentences plus a small table, or as JSON."""

from __future__ import annotations

import math
from typing import Any

from ..dataset import Point, Source, short_cpu_name, short_gpu_name
from ..units import fmt_bytes, fmt_flops, fmt_pct, fmt_rate, fmt_ratio, fmt_size, fmt_time
from .curves import GemmShape, Lookup, cpu_threads
from .loo import REPORTED_ACCURACY, LooReport, step_seconds
from .model import DTYPE_BYTES, Advisor, CpuEstimate, GemmAdvice, MlpAdvice

__all__ = [
    "machine_line",
    "gemm_text",
    "gemm_json",
    "mlp_text",
    "mlp_json",
    "loo_text",
    "loo_json",
]

Row = tuple[str, str, str]


def _table(header: Row, rows: list[Row]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(3)]

    def line(r: Row) -> str:
        return f"| {r[0]:<{widths[0]}} | {r[1]:>{widths[1]}} | {r[2]:>{widths[2]}} |"

    rule = f"|{'-' * (widths[0] + 2)}|{'-' * (widths[1] - 1 + 2)}:|{'-' * (widths[2] - 1 + 2)}:|"
    return [line(header), rule, *[line(r) for r in rows]]


def machine_line(source: Source) -> str:
    gpu = short_gpu_name(source.gpu_name) if source.gpu_name else "no GPU"
    cpus = source.report.context.get("cpu_logical_cpus")
    cpu = short_cpu_name(source.cpu_name) + (f" ({cpus} logical CPUs)" if cpus else "")
    return f"{gpu} with {cpu}, from {source.file_names}"


def _threads(t: int) -> str:
    return f"{t} thread{'s' if t != 1 else ''}"


def _flop(x: float) -> str:
    for scale, prefix in ((1e15, "P"), (1e12, "T")):
        if x >= scale:
            return f"{x / scale:.3g}{prefix} FLOP"
    return f"{fmt_size(x)} FLOP"


def _where(lk: Lookup, shape: GemmShape) -> str:
    """How a curve gave this time, in words."""
    curve = f"the {lk.backend.upper()} {lk.dtype} {lk.family.replace('_', ' ')} curve"
    if lk.threads is not None:
        curve += f" at {_threads(lk.threads)}"
    lo, hi = lk.flop_range
    span = f"measured {_flop(lo)} to {_flop(hi)}"
    if lk.where == "measured":
        text = f"measured at this shape ({curve})"
    elif lk.where == "interpolated":
        text = f"interpolated on {curve} ({span})"
    elif lk.where == "above":
        text = (
            f"EXTRAPOLATED above {curve} ({span}): {shape} is {_flop(shape.flop)}, run at the "
            f"largest measured size's rate"
        )
    else:
        text = (
            f"EXTRAPOLATED below {curve} ({span}): {shape} is {_flop(shape.flop)}, continuing "
            f"the trend of the smallest measured sizes"
        )
    if lk.floor:
        text += f"; raised to the {lk.floor} floor"
    if lk.unlike_measured and lk.where != "measured":
        text += (
            f"; the nearest shape measured on it, {lk.nearest}, is unlike {shape}, so take this "
            f"as a rough guide"
        )
    return text


ACCURACY_CLASSES = {"gemm_e2e": "end-to-end GEMM rows", "mlp_eager": "eager MLP rows"}


def _accuracy_sentence(kind: str, ratio: float) -> str:
    acc = REPORTED_ACCURACY[kind]
    text = (
        f"Typical error (leave-one-out on the committed H100 run's {ACCURACY_CLASSES[kind]}): "
        f"median {fmt_pct(acc['median'])}, 90th percentile {fmt_pct(acc['p90'])}; the winner "
        f"was right for {fmt_pct(acc['winner'])} of those rows."
    )
    if ratio - 1.0 < acc["median"]:
        text += " The margin here is smaller than the median error: call it a tie and measure."
    return text


def _measured(p: Point | None, key: str = "") -> str:
    if p is None:
        return ""
    v = p.c(key, p.time) if key else p.time
    return fmt_time(v) if math.isfinite(v) else ""


def _vs(predicted: float, measured: float) -> str:
    return f"{(predicted - measured) / measured:+.0%}"


EXTRAPOLATED_MARK = " *"
EXTRAPOLATED_NOTE = "* extrapolated beyond the measured sizes"


def _predicted(seconds: float, extrapolated: bool) -> str:
    return fmt_time(seconds) + (EXTRAPOLATED_MARK if extrapolated else "")


def _cpu_rows(cpu: list[CpuEstimate], measured: dict[int, float], label: str) -> list[Row]:
    out = []
    for est in cpu:
        m = measured.get(est.threads)
        out.append(
            (
                f"{label}, {_threads(est.threads)}",
                _predicted(est.seconds, est.extrapolated),
                fmt_time(m) if m is not None else "",
            )
        )
    return out


# --- GEMM --------------------------------------------------------------------------------------


def gemm_text(advisor: Advisor, adv: GemmAdvice) -> str:
    s, g, best = adv.shape, adv.gpu, adv.cpu_best
    where = (
        "operands already on the device"
        if adv.host == "resident"
        else f"operands in {adv.host} host memory"
    )
    gpu_name = "end to end" if adv.host != "resident" else "with the operands resident"
    out = [
        f"Machine: {machine_line(advisor.full)}",
        f"GEMM {s} (m x n x k, {_flop(s.flop)}), {adv.dtype} on the GPU ({where}), "
        f"{adv.cpu_dtype} on the CPU.",
        "",
    ]
    if adv.winner == "gpu":
        out.append(
            f"The GPU wins: {fmt_time(g.total)} {gpu_name} against {fmt_time(best.seconds)} on "
            f"the CPU ({_threads(best.threads)}), {fmt_ratio(adv.ratio)} faster."
        )
    else:
        out.append(
            f"The CPU wins: {fmt_time(best.seconds)} ({_threads(best.threads)}) against "
            f"{fmt_time(g.total)} on the GPU {gpu_name}, {fmt_ratio(adv.ratio)} faster."
        )
    copies, overhead = g.h2d + g.d2h, g.launch + g.sync
    shares = [("the compute", g.compute), ("launch and sync", overhead)]
    if adv.host != "resident":
        shares.insert(0, ("the copies", copies))
    top = max(shares, key=lambda kv: kv[1])
    copy_share = f"copies {fmt_pct(copies / g.total)}, " if adv.host != "resident" else ""
    out.append(
        f"Of the GPU's time, {copy_share}compute {fmt_pct(g.compute / g.total)} "
        f"({_achieved(s, g.compute)}), launch and sync {fmt_pct(overhead / g.total)}: "
        f"{top[0]} dominate{'s' if top[0] == 'the compute' else ''}."
    )
    out.append(f"GPU compute: {_where(adv.compute, s)}.")
    out.append(f"CPU ({_threads(best.threads)}): {_where(best.lookups[0][2], s)}.")
    out.append(_accuracy_sentence("gemm_e2e", adv.ratio))

    mg = adv.measured_gpu
    mcpu = {cpu_threads(p): p.time for p in adv.measured_cpu}
    e2e = mg is not None and mg.is_e2e
    copy_note = ""
    if adv.host != "resident":
        h2d = advisor.overhead.copies[("h2d", adv.host)]
        a, b, c = s.elements()
        nbytes = (a + b) * DTYPE_BYTES[adv.dtype]
        copy_note = (
            f" (2 x {fmt_time(h2d.alpha_s)} + {fmt_bytes(nbytes)} / "
            f"{fmt_rate(h2d.beta_bytes_per_s)})"
        )
    rows: list[Row] = _cpu_rows(adv.cpu, mcpu, f"CPU {adv.cpu_dtype}")
    rows.append(
        (
            f"GPU {adv.dtype}, {gpu_name}",
            _predicted(g.total, adv.compute.extrapolated),
            _measured(mg, "t_wall") if e2e else "",
        )
    )
    if adv.host != "resident":
        rows.append(
            (f"  H2D copies{copy_note}", fmt_time(g.h2d), _measured(mg, "t_h2d") if e2e else "")
        )
    rows.append(
        ("  compute", _predicted(g.compute, adv.compute.extrapolated), _measured(mg, "t_compute"))
    )
    if adv.host != "resident":
        rows.append(("  D2H copy", fmt_time(g.d2h), _measured(mg, "t_d2h") if e2e else ""))
    rows += [
        ("  launch (1 kernel)", fmt_time(g.launch), ""),
        ("  sync", fmt_time(g.sync), ""),
        ("  launch + sync", fmt_time(overhead), _measured(mg, "t_overhead") if e2e else ""),
    ]
    out += ["", *_table(("", "predicted", "measured"), rows)]
    if any(r[1].endswith(EXTRAPOLATED_MARK) for r in rows):
        out.append(EXTRAPOLATED_NOTE)
    if mg is not None or mcpu:
        out.append("")
        out.append(_measured_sentence(adv, mg, mcpu))
    return "\n".join(out) + "\n"


def _achieved(shape: GemmShape, seconds: float) -> str:
    return fmt_flops(shape.flop / seconds) if seconds > 0 else "n/a"


def _measured_sentence(adv: GemmAdvice, mg: Point | None, mcpu: dict[int, float]) -> str:
    parts = []
    if mg is not None:
        t = mg.c("t_wall", mg.time)
        what = "end to end" if mg.is_e2e else "kernel-only (compute row)"
        parts.append(f"GPU {fmt_time(t)} {what} (prediction {_vs(adv.gpu.total, t)})")
    if mcpu:
        t, best = min((v, k) for k, v in mcpu.items())
        parts.append(
            f"CPU {fmt_time(t)} at {_threads(best)} (prediction {_vs(adv.cpu_best.seconds, t)})"
        )
    text = "The run measured this shape: " + "; ".join(parts) + "."
    if mg is not None and not mg.is_e2e:
        text += " Resident operands: the measured row is the kernel alone, without launch and sync."
    return text


def _lookup_json(lk: Lookup, shape: GemmShape) -> dict[str, Any]:
    return {
        "shape": list(shape.mnk),
        "flop": shape.flop,
        "seconds": lk.seconds,
        "flop_per_s": shape.flop / lk.seconds,
        "curve": {
            "backend": lk.backend,
            "dtype": lk.dtype,
            "family": lk.family,
            "threads": lk.threads,
            "flop_range": list(lk.flop_range),
            "nearest_measured_shape": list(lk.nearest.mnk),
        },
        "where": lk.where,
        "extrapolated": lk.extrapolated,
        "unlike_measured": lk.unlike_measured,
        "floor": lk.floor,
    }


def _cpu_json(est: CpuEstimate) -> dict[str, Any]:
    return {
        "threads": est.threads,
        "seconds": est.seconds,
        "elementwise_seconds": est.elementwise,
        "extrapolated": est.extrapolated,
        "products": [{"what": what, **_lookup_json(lk, shape)} for what, shape, lk in est.lookups],
    }


def _point_json(p: Point | None, keys: tuple[str, ...]) -> dict[str, Any] | None:
    if p is None:
        return None
    out: dict[str, Any] = {"run_name": p.run_name, "seconds": p.time}
    for k in keys:
        if p.has(k) and math.isfinite(p.c(k)):
            out[k] = p.c(k)
    return out


def _machine_json(source: Source) -> dict[str, Any]:
    return {"gpu": source.gpu_name, "cpu": source.cpu_name, "files": source.paths}


def gemm_json(advisor: Advisor, adv: GemmAdvice) -> dict[str, Any]:
    acc = REPORTED_ACCURACY["gemm_e2e"]
    return {
        "machine": _machine_json(advisor.full),
        "request": {
            "kind": "gemm",
            "m": adv.shape.m,
            "n": adv.shape.n,
            "k": adv.shape.k,
            "flop": adv.shape.flop,
            "dtype": adv.dtype,
            "host": adv.host,
            "cpu_dtype": adv.cpu_dtype,
        },
        "winner": adv.winner,
        "ratio": adv.ratio,
        "extrapolated": adv.extrapolated,
        "cpu": {
            "seconds": adv.cpu_best.seconds,
            "threads": adv.cpu_best.threads,
            "by_threads": [_cpu_json(e) for e in adv.cpu],
        },
        "gpu": {
            "seconds": adv.gpu.total,
            "parts": dict(adv.gpu.items()),
            "compute": _lookup_json(adv.compute, adv.shape),
        },
        "measured": {
            "gpu": _point_json(
                adv.measured_gpu, ("t_wall", "t_h2d", "t_compute", "t_d2h", "t_overhead")
            ),
            "cpu": [
                {"threads": cpu_threads(p), "run_name": p.run_name, "seconds": p.time}
                for p in adv.measured_cpu
            ],
        },
        "typical_error": acc,
    }


# --- MLP ---------------------------------------------------------------------------------------


def _variant_name(p: Point) -> str:
    v = p.labels.get("variant", "?")
    if p.is_gpu:
        readback = p.c("readback", 0.0)
        return (
            f"GPU {v} (measured only, readback {int(readback) if math.isfinite(readback) else 0})"
        )
    return f"CPU {v}, {_threads(cpu_threads(p))} (measured only)"


def mlp_text(advisor: Advisor, adv: MlpAdvice) -> str:
    c, g, best = adv.config, adv.gpu, adv.cpu_best
    readback = (
        "the loss never read back"
        if c.readback == 0
        else (
            "the loss read back every step"
            if c.readback == 1
            else f"the loss read back every {c.readback} steps"
        )
    )
    data = "resident on the device" if c.input == "resident" else f"copied from {c.input} memory"
    out = [
        f"Machine: {machine_line(advisor.full)}",
        f"MLP training step: {c.describe()} ({c.layers} hidden layer{'s' if c.layers > 1 else ''}, "
        f"{_flop(c.flop)} in {len(c.products())} layer products), fp32, batch {data}, {readback}.",
        "",
    ]
    if adv.winner == "gpu":
        out.append(
            f"The GPU wins: {fmt_time(g.total)} per step (eager, {c.kernels_per_step} launches) "
            f"against {fmt_time(best.seconds)} on the CPU (OpenBLAS, {_threads(best.threads)}), "
            f"{fmt_ratio(adv.ratio)} faster."
        )
    else:
        out.append(
            f"The CPU wins: {fmt_time(best.seconds)} per step (OpenBLAS, "
            f"{_threads(best.threads)}) against {fmt_time(g.total)} on the GPU (eager, "
            f"{c.kernels_per_step} launches), {fmt_ratio(adv.ratio)} faster."
        )
    items = g.items()
    top = max(items, key=lambda kv: kv[1])
    out.append(
        "Of the GPU's step, "
        + ", ".join(f"{name} {fmt_pct(v / g.total)}" for name, v in items)
        + f": {top[0]} dominate{'s' if top[0] != 'layer products' else ''}."
    )
    extrapolated = [(what, s, lk) for what, s, lk in g.lookups if lk.extrapolated]
    if extrapolated:
        names = ", ".join(f"{what} ({s})" for what, s, _ in extrapolated)
        out.append(
            f"EXTRAPOLATED: the GPU times of {names} lie outside the measured kernel-only "
            f"curves (see --json for each product's curve)."
        )
    cpu_extra = [(what, s) for what, s, lk in best.lookups if lk.extrapolated]
    if cpu_extra:
        names = ", ".join(f"{what} ({s})" for what, s in cpu_extra)
        out.append(f"EXTRAPOLATED: the CPU times of {names} lie outside the measured CPU curves.")
    out.append(_accuracy_sentence("mlp_eager", adv.ratio))

    mcpu = {cpu_threads(p): step_seconds(p) for p in adv.measured_cpu}
    mg = adv.measured_gpu
    rows: list[Row] = _cpu_rows(adv.cpu, mcpu, "CPU OpenBLAS")
    rows.append(
        (
            "GPU eager",
            _predicted(g.total, g.extrapolated),
            fmt_time(step_seconds(mg)) if mg is not None else "",
        )
    )
    rows.append(
        (
            f"  layer products ({len(g.lookups)})",
            _predicted(g.products, g.extrapolated),
            "",
        )
    )
    rows.append(("  element-wise", fmt_time(g.elementwise), ""))
    rows.append(
        (
            f"  launches ({c.kernels_per_step} x {fmt_time(advisor.t_launch())})",
            fmt_time(g.launch),
            "",
        )
    )
    if g.readback:
        rows.append(("  loss readback", fmt_time(g.readback), ""))
    if g.input:
        rows.append((f"  input copy ({c.input})", fmt_time(g.input), ""))
    for p in adv.measured_other:
        rows.append((_variant_name(p), "", fmt_time(step_seconds(p))))
    out += ["", *_table(("per step", "predicted", "measured"), rows)]
    if any(r[1].endswith(EXTRAPOLATED_MARK) for r in rows):
        out.append(EXTRAPOLATED_NOTE)
    if mg is not None or mcpu:
        parts = []
        if mg is not None:
            parts.append(f"GPU eager {_vs(g.total, step_seconds(mg))}")
        for t, v in sorted(mcpu.items()):
            est = next((e for e in adv.cpu if e.threads == t), None)
            if est is not None:
                parts.append(f"CPU {_threads(t)} {_vs(est.seconds, v)}")
        out += [
            "",
            "The run measured this configuration; prediction against it: " + ", ".join(parts) + ".",
        ]
    return "\n".join(out) + "\n"


def mlp_json(advisor: Advisor, adv: MlpAdvice) -> dict[str, Any]:
    c, g = adv.config, adv.gpu
    return {
        "machine": _machine_json(advisor.full),
        "request": {
            "kind": "mlp",
            "batch": c.batch,
            "hidden": c.hidden,
            "layers": c.layers,
            "data": c.data,
            "readback": c.readback,
            "input": c.input,
            "widths": c.widths,
            "flop_per_step": c.flop,
            "kernels_per_step": c.kernels_per_step,
        },
        "winner": adv.winner,
        "ratio": adv.ratio,
        "extrapolated": adv.extrapolated,
        "cpu": {
            "seconds": adv.cpu_best.seconds,
            "threads": adv.cpu_best.threads,
            "by_threads": [_cpu_json(e) for e in adv.cpu],
        },
        "gpu": {
            "seconds": g.total,
            "parts": dict(g.items()),
            "products": [
                {"what": what, **_lookup_json(lk, shape)} for what, shape, lk in g.lookups
            ],
        },
        "measured": {
            "gpu_eager": (
                None
                if adv.measured_gpu is None
                else {
                    "run_name": adv.measured_gpu.run_name,
                    "seconds_per_step": step_seconds(adv.measured_gpu),
                }
            ),
            "cpu": [
                {
                    "threads": cpu_threads(p),
                    "run_name": p.run_name,
                    "seconds_per_step": step_seconds(p),
                }
                for p in adv.measured_cpu
            ],
            "other": [
                {"run_name": p.run_name, "seconds_per_step": step_seconds(p)}
                for p in adv.measured_other
            ],
        },
        "typical_error": REPORTED_ACCURACY["mlp_eager"],
    }


# --- leave-one-out -----------------------------------------------------------------------------


def loo_text(report: LooReport) -> str:
    out = [f"Leave-one-out accuracy on {machine_line(report.source)}", ""]
    rows: list[tuple[str, str, str, str, str, str]] = []
    for cls in report.classes.values():
        w = cls.winners()
        rows.append(
            (
                cls.title,
                str(len(cls.cases)),
                fmt_pct(cls.median),
                fmt_pct(cls.p90),
                f"{cls.bias:+.0%}",
                f"{fmt_pct(cls.winner_agreement)} of {len(w)}" if w else "",
            )
        )
    header = ("rows", "n", "median |error|", "90th pct |error|", "median error", "winner right")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(6)]
    out.append("| " + " | ".join(h.ljust(widths[i]) for i, h in enumerate(header)) + " |")
    out.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        out.append("| " + " | ".join(v.ljust(widths[i]) for i, v in enumerate(r)) + " |")
    out += [
        "",
        "Each row was predicted without itself and every row of its shape (GEMM) or network "
        "(MLP); error = (predicted - measured) / measured; the winner compares the faster CPU "
        "thread count with the GPU, where the run measured both.",
    ]
    worst = [
        c
        for cls in report.classes.values()
        if cls.title.startswith(("end-to-end", "eager"))
        for c in cls.cases
    ]
    worst.sort(key=lambda c: -abs(c.rel_error))
    if worst:
        out += ["", "Largest errors:"]
        for c in worst[:5]:
            out.append(
                f"  {c.rel_error:+.0%}  {c.name}: predicted {fmt_time(c.predicted)}, "
                f"measured {fmt_time(c.measured)}"
            )
    return "\n".join(out) + "\n"


def loo_json(report: LooReport) -> dict[str, Any]:
    return {
        "machine": _machine_json(report.source),
        "classes": {
            key: {
                "title": cls.title,
                **cls.summary(),
                "cases": [
                    {
                        "name": c.name,
                        "predicted": c.predicted,
                        "measured": c.measured,
                        "rel_error": c.rel_error,
                        "predicted_winner": c.predicted_winner,
                        "measured_winner": c.measured_winner,
                        "extrapolated": c.extrapolated,
                    }
                    for c in cls.cases
                ],
            }
            for key, cls in report.classes.items()
        },
    }
