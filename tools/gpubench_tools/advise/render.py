"""The advisor's answers as plain sentences plus a small table, or as JSON."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from ..table import short_cpu_name, short_gpu_name
from ..units import fmt_bytes, fmt_flops, fmt_pct, fmt_rate, fmt_ratio, fmt_size, fmt_time
from .curves import GemmShape, Lookup
from .loo import REPORTED_ACCURACY, LooReport
from .model import DTYPE_BYTES, Advice, Advisor, MlpConfig, Run

Row = tuple[str, ...]
MARK = " *"  # a predicted time that was extrapolated
ACCURACY_CLASSES = {"gemm_e2e": "end-to-end GEMM rows", "mlp_eager": "eager MLP rows"}


def _table(header: Row, rows: list[Row], numeric: bool = True) -> list[str]:
    """A Markdown table; `numeric`: every column but the first right-aligned."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(r: Row) -> str:
        cells = [
            v.rjust(w) if numeric and i else v.ljust(w) for i, (v, w) in enumerate(zip(r, widths))
        ]
        return "| " + " | ".join(cells) + " |"

    rule = ["-" * (w + 1) + (":" if numeric and i else "-") for i, w in enumerate(widths)]
    return [line(header), "|" + "|".join(rule) + "|", *map(line, rows)]


def _machine_line(run: Run) -> str:
    cpus = run.context.get("cpu_logical_cpus")
    cpu = short_cpu_name(run.cpu) + (f" ({cpus} logical CPUs)" if cpus else "")
    return f"{short_gpu_name(run.gpu) if run.gpu else 'no GPU'} with {cpu}, from {run.name}"


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
    curve += f" at {_threads(lk.threads)}" if lk.threads is not None else ""
    on = f"{curve} (measured {_flop(lk.flop_range[0])} to {_flop(lk.flop_range[1])})"
    beyond = f"EXTRAPOLATED {lk.where} {on}: {shape} is {_flop(shape.flop)}, "
    text = {
        "measured": f"measured at this shape ({curve})",
        "interpolated": f"interpolated on {on}",
        "above": beyond + "run at the largest measured size's rate",
        "below": beyond + "continuing the trend of the smallest measured sizes",
    }[lk.where]
    if lk.floor:
        text += f"; raised to the {lk.floor} floor"
    if lk.unlike_measured and lk.where != "measured":
        text += f"; the nearest shape measured on it, {lk.nearest}, is unlike {shape}, so take "
        text += "this as a rough guide"
    return text


def _accuracy(kind: str, ratio: float) -> str:
    acc = REPORTED_ACCURACY[kind]
    text = (
        f"Typical error (leave-one-out on the committed H100 run's {ACCURACY_CLASSES[kind]}): "
        f"median {fmt_pct(acc['median'])}, 90th percentile {fmt_pct(acc['p90'])}; the winner "
        f"was right for {fmt_pct(acc['winner'])} of those rows."
    )
    if ratio - 1.0 < acc["median"]:
        text += " The margin here is smaller than the median error: call it a tie and measure."
    return text


def _measured(row: pd.Series | None, key: str, fallback: bool = True) -> float:
    """A measured row's value (`fallback`: its median time where it has none), else NaN."""
    v = math.nan if row is None else row.get(key, math.nan)
    if pd.isna(v) and fallback and row is not None:
        v = row["time_s"]
    return float(v) if pd.notna(v) else math.nan


def _time(seconds: float, extrapolated: bool = False) -> str:
    """A time for a table cell: empty for NaN, marked when extrapolated."""
    return fmt_time(seconds) + (MARK if extrapolated else "") if math.isfinite(seconds) else ""


def _vs(predicted: float, measured: float) -> str:
    return f"{(predicted - measured) / measured:+.0%}"


def _verdict(adv: Advice, gpu: str, cpu: str, per: str = "") -> str:
    """Which side wins: its time `per` (GEMM: nothing, MLP: "per step ") what ran (`gpu`,
    `cpu`) against the other side's, and by how much."""
    sides = {"gpu": (adv.gpu_total, gpu), "cpu": (adv.cpu_best.seconds, cpu)}
    win, lose = ("gpu", "cpu") if adv.winner == "gpu" else ("cpu", "gpu")
    (t_win, what_win), (t_lose, what_lose) = sides[win], sides[lose]
    return (
        f"The {win.upper()} wins: {fmt_time(t_win)} {per}{what_win} against {fmt_time(t_lose)} "
        f"on the {lose.upper()} {what_lose}, {fmt_ratio(adv.ratio)} faster."
    )


def _with_table(out: list[str], header: Row, adv: Advice, measured: Any, rows: list[Row]) -> None:
    """The answer's table: the CPU per thread count (`measured`: its measured time by thread
    count), then `rows` (the GPU and its parts)."""
    label = f"CPU {adv.cpu_dtype}" if isinstance(adv.request, GemmShape) else "CPU OpenBLAS"
    cpu = [
        (f"{label}, {_threads(e.threads)}", _time(e.seconds, e.extrapolated), _time(m))
        for e in adv.cpu
        for m in [measured.get(e.threads, math.nan)]
    ]
    out += ["", *_table(header, cpu + rows)]
    if any(r[1].endswith(MARK) for r in cpu + rows):
        out.append("* extrapolated beyond the measured sizes")


# --- GEMM --------------------------------------------------------------------------------------


def gemm_text(advisor: Advisor, adv: Advice) -> str:
    s, g, best, mg = adv.request, adv.gpu, adv.cpu_best, adv.measured_gpu
    assert isinstance(s, GemmShape)
    resident = adv.host == "resident"
    where = "operands already on the device" if resident else f"operands in {adv.host} host memory"
    gpu_name = "with the operands resident" if resident else "end to end"
    copies, overhead, total = g["h2d"] + g["d2h"], g["launch"] + g["sync"], adv.gpu_total
    shares = {"the copies": copies, "the compute": g["compute"], "launch and sync": overhead}
    shares = {k: v for k, v in shares.items() if not (resident and k == "the copies")}
    top = max(shares, key=lambda k: shares[k])
    achieved = fmt_flops(s.flop / g["compute"]) if g["compute"] > 0 else "n/a"
    out = [
        f"Machine: {_machine_line(advisor.run)}",
        f"GEMM {s} (m x n x k, {_flop(s.flop)}), {adv.dtype} on the GPU ({where}), "
        f"{adv.cpu_dtype} on the CPU.",
        "",
        _verdict(adv, gpu_name, f"({_threads(best.threads)})"),
        f"Of the GPU's time, {'' if resident else f'copies {fmt_pct(copies / total)}, '}compute "
        f"{fmt_pct(g['compute'] / total)} ({achieved}), launch and sync "
        f"{fmt_pct(overhead / total)}: {top} dominate{'s' if top == 'the compute' else ''}.",
        f"GPU compute: {_where(adv.compute, s)}.",
        f"CPU ({_threads(best.threads)}): {_where(best.lookups[0][2], s)}.",
        _accuracy("gemm_e2e", adv.ratio),
    ]
    e2e = mg is not None and mg["kind"] == "gemm_e2e"

    def e2e_cell(key: str) -> str:
        return _time(_measured(mg, key)) if e2e else ""

    x = adv.compute.extrapolated
    rows = [(f"GPU {adv.dtype}, {gpu_name}", _time(total, x), e2e_cell("t_wall"))]
    if not resident:
        h2d = advisor.overhead.copies[("h2d", adv.host)]
        nbytes = sum(s.elements()[:2]) * DTYPE_BYTES[adv.dtype]
        fit = (
            f"2 x {fmt_time(h2d.alpha_s)} + {fmt_bytes(nbytes)} / {fmt_rate(h2d.beta_bytes_per_s)}"
        )
        rows.append((f"  H2D copies ({fit})", fmt_time(g["h2d"]), e2e_cell("t_h2d")))
    rows.append(("  compute", _time(g["compute"], x), _time(_measured(mg, "t_compute"))))
    if not resident:
        rows.append(("  D2H copy", fmt_time(g["d2h"]), e2e_cell("t_d2h")))
    rows += [
        ("  launch (1 kernel)", fmt_time(g["launch"]), ""),
        ("  sync", fmt_time(g["sync"]), ""),
        ("  launch + sync", fmt_time(overhead), e2e_cell("t_overhead")),
    ]
    mcpu = dict(zip(adv.measured_cpu["threads"], adv.measured_cpu["time_s"]))
    _with_table(out, ("", "predicted", "measured"), adv, mcpu, rows)
    parts = []
    if mg is not None:
        t, what = _measured(mg, "t_wall"), "end to end" if e2e else "kernel-only (compute row)"
        parts.append(f"GPU {fmt_time(t)} {what} (prediction {_vs(total, t)})")
    if mcpu:
        t, at = min((v, k) for k, v in mcpu.items())
        parts.append(f"CPU {fmt_time(t)} at {_threads(at)} (prediction {_vs(best.seconds, t)})")
    if parts:
        out += ["", "The run measured this shape: " + "; ".join(parts) + "."]
        if mg is not None and not e2e:
            out[
                -1
            ] += (
                " Resident operands: the measured row is the kernel alone, without launch and sync."
            )
    return "\n".join(out) + "\n"


def _lookup_json(lk: Lookup, shape: GemmShape) -> dict[str, Any]:
    curve = dict(backend=lk.backend, dtype=lk.dtype, family=lk.family, threads=lk.threads)
    curve.update(flop_range=list(lk.flop_range), nearest_measured_shape=list(lk.nearest.mnk))
    doc = dict(shape=list(shape.mnk), flop=shape.flop, seconds=lk.seconds)
    doc.update(flop_per_s=shape.flop / lk.seconds, curve=curve, where=lk.where)
    return dict(
        doc, extrapolated=lk.extrapolated, unlike_measured=lk.unlike_measured, floor=lk.floor
    )


def _products_json(lookups: list[tuple[str, GemmShape, Lookup]]) -> list[dict[str, Any]]:
    return [{"what": what, **_lookup_json(lk, shape)} for what, shape, lk in lookups]


def _rows_json(rows: pd.DataFrame, key: str, threads: bool = True) -> list[dict[str, Any]]:
    """Measured rows as JSON: `key` "seconds" (a GEMM's median time) or "seconds_per_step"."""
    values = rows["time_s" if key == "seconds" else "t_step"]
    return [
        {**({"threads": int(t)} if threads else {}), "run_name": name, key: float(v)}
        for t, name, v in zip(rows["threads"], rows["name"], values)
    ]


def _json(advisor: Advisor, adv: Advice, request: Any, gpu: Any, measured: Any) -> dict[str, Any]:
    """A GEMM or an MLP answer: the machine, the request, the verdict, both sides, what the run
    measured and the typical error of such answers."""
    run, best = advisor.run, adv.cpu_best
    by_threads = [
        dict(threads=e.threads, seconds=e.seconds, elementwise_seconds=e.elementwise)
        | dict(extrapolated=e.extrapolated, products=_products_json(e.lookups))
        for e in adv.cpu
    ]
    kind = "gemm_e2e" if isinstance(adv.request, GemmShape) else "mlp_eager"
    return {
        "machine": {"gpu": run.gpu, "cpu": run.cpu, "files": run.files},
        "request": request,
        "winner": adv.winner,
        "ratio": adv.ratio,
        "extrapolated": adv.extrapolated,
        "cpu": {"seconds": best.seconds, "threads": best.threads, "by_threads": by_threads},
        "gpu": {"seconds": adv.gpu_total, "parts": adv.gpu, **gpu},
        "measured": measured,
        "typical_error": REPORTED_ACCURACY[kind],
    }


def gemm_json(advisor: Advisor, adv: Advice) -> dict[str, Any]:
    s, mg = adv.request, adv.measured_gpu
    assert isinstance(s, GemmShape)
    request = dict(kind="gemm", m=s.m, n=s.n, k=s.k, flop=s.flop, dtype=adv.dtype, host=adv.host)
    gpu = None
    if mg is not None:
        keys = ("t_wall", "t_h2d", "t_compute", "t_d2h", "t_overhead")
        gpu = {"run_name": mg["name"], "seconds": float(mg["time_s"])}
        gpu.update({k: float(mg[k]) for k in keys if math.isfinite(_measured(mg, k, False))})
    measured = {"gpu": gpu, "cpu": _rows_json(adv.measured_cpu, "seconds")}
    compute = {"compute": _lookup_json(adv.compute, s)}
    return _json(advisor, adv, dict(request, cpu_dtype=adv.cpu_dtype), compute, measured)


# --- MLP ---------------------------------------------------------------------------------------


def mlp_text(advisor: Advisor, adv: Advice) -> str:
    c, g, best, mg = adv.request, adv.gpu, adv.cpu_best, adv.measured_gpu
    assert isinstance(c, MlpConfig)
    every = {0: "never read back", 1: "read back every step"}
    readback = "the loss " + every.get(c.readback, f"read back every {c.readback} steps")
    data = "resident on the device" if c.input == "resident" else f"copied from {c.input} memory"
    top = max(g.items(), key=lambda kv: kv[1])[0]
    shares = ", ".join(f"{name} {fmt_pct(v / adv.gpu_total)}" for name, v in g.items())
    eager, blas = f"(eager, {c.kernels_per_step} launches)", f"(OpenBLAS, {_threads(best.threads)})"
    out = [
        f"Machine: {_machine_line(advisor.run)}",
        f"MLP training step: {c.describe()} ({c.layers} hidden layer{'s' if c.layers > 1 else ''}, "
        f"{_flop(c.flop)} in {len(c.products())} layer products), fp32, batch {data}, {readback}.",
        "",
        _verdict(adv, eager, blas, per="per step "),
        f"Of the GPU's step, {shares}: {top} dominate{'s' if top != 'layer products' else ''}.",
    ]
    names = ", ".join(f"{what} ({s})" for what, s, lk in adv.gpu_lookups if lk.extrapolated)
    if names:
        out.append(
            f"EXTRAPOLATED: the GPU times of {names} lie outside the measured kernel-only "
            f"curves (see --json for each product's curve)."
        )
    names = ", ".join(f"{what} ({s})" for what, s, lk in best.lookups if lk.extrapolated)
    if names:
        out.append(f"EXTRAPOLATED: the CPU times of {names} lie outside the measured CPU curves.")
    out.append(_accuracy("mlp_eager", adv.ratio))

    x, launch = adv.gpu_extrapolated, f"{c.kernels_per_step} x {fmt_time(advisor.t_launch())}"
    rows = [
        ("GPU eager", _time(adv.gpu_total, x), _time(_measured(mg, "t_step"))),
        (f"  layer products ({len(adv.gpu_lookups)})", _time(g["layer products"], x), ""),
        ("  element-wise", fmt_time(g["element-wise"]), ""),
        (f"  launches ({launch})", fmt_time(g["launch"]), ""),
    ]
    if "loss readback" in g:
        rows.append(("  loss readback", fmt_time(g["loss readback"]), ""))
    if "input copy" in g:
        rows.append((f"  input copy ({c.input})", fmt_time(g["input copy"]), ""))
    for p in adv.measured_other.itertuples():
        if p.backend == "gpu":
            name = f"GPU {p.variant} (measured only, readback {p.readback})"
        else:
            name = f"CPU {p.variant}, {_threads(p.threads)} (measured only)"
        rows.append((name, "", fmt_time(p.t_step)))
    mcpu = dict(zip(adv.measured_cpu["threads"], adv.measured_cpu["t_step"]))
    _with_table(out, ("per step", "predicted", "measured"), adv, mcpu, rows)
    if mg is not None or mcpu:
        parts = [f"GPU eager {_vs(adv.gpu_total, mg['t_step'])}"] if mg is not None else []
        by_threads = {e.threads: e.seconds for e in adv.cpu}
        parts += [
            f"CPU {_threads(t)} {_vs(by_threads[t], v)}"
            for t, v in sorted(mcpu.items())
            if t in by_threads
        ]
        out += [
            "",
            f"The run measured this configuration; prediction against it: {', '.join(parts)}.",
        ]
    return "\n".join(out) + "\n"


def mlp_json(advisor: Advisor, adv: Advice) -> dict[str, Any]:
    c, mg = adv.request, adv.measured_gpu
    assert isinstance(c, MlpConfig)
    request = dict(kind="mlp", batch=c.batch, hidden=c.hidden, layers=c.layers, data=c.data)
    request.update(readback=c.readback, input=c.input, widths=c.widths, flop_per_step=c.flop)
    eager = (
        None if mg is None else {"run_name": mg["name"], "seconds_per_step": float(mg["t_step"])}
    )
    measured = {
        "gpu_eager": eager,
        "cpu": _rows_json(adv.measured_cpu, "seconds_per_step"),
        "other": _rows_json(adv.measured_other, "seconds_per_step", threads=False),
    }
    request = dict(request, kernels_per_step=c.kernels_per_step)
    products = {"products": _products_json(adv.gpu_lookups)}
    return _json(advisor, adv, request, products, measured)


# --- leave-one-out -----------------------------------------------------------------------------


def loo_text(report: LooReport) -> str:
    rows = []
    for cls in report.classes.values():
        n = len(cls.winners())
        right = f"{fmt_pct(cls.winner_agreement)} of {n}" if n else ""
        stats = fmt_pct(cls.median), fmt_pct(cls.p90), f"{cls.bias:+.0%}"
        rows.append((cls.title, str(len(cls.cases)), *stats, right))
    header = ("rows", "n", "median |error|", "90th pct |error|", "median error", "winner right")
    out = [f"Leave-one-out accuracy on {_machine_line(report.run)}", ""]
    out += _table(header, rows, numeric=False)
    out += [
        "",
        "Each row was predicted without itself and every row of its shape (GEMM) or network "
        "(MLP); error = (predicted - measured) / measured; the winner compares the faster CPU "
        "thread count with the GPU, where the run measured both.",
    ]
    gpu = [report.classes[k].cases for k in ("gemm_e2e", "mlp_eager") if k in report.classes]
    if gpu:
        worst = pd.concat(gpu).sort_values("rel_error", key=lambda e: -e.abs(), kind="stable")
        out += ["", "Largest errors:"]
        out += [
            f"  {c.rel_error:+.0%}  {c.name}: predicted {fmt_time(c.predicted)}, "
            f"measured {fmt_time(c.measured)}"
            for c in worst.head(5).itertuples()
        ]
    return "\n".join(out) + "\n"


def loo_json(report: LooReport) -> dict[str, Any]:
    run, classes = report.run, {}
    columns = ["name", "predicted", "measured", "rel_error", "predicted_winner", "measured_winner"]
    for key, cls in report.classes.items():
        cases = cls.cases[[*columns, "extrapolated"]].astype(object)
        cases = cases.where(cases.notna(), None).to_dict("records")
        classes[key] = {"title": cls.title, **cls.summary(), "cases": cases}
    return {"machine": {"gpu": run.gpu, "cpu": run.cpu, "files": run.files}, "classes": classes}
