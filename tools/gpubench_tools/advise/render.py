"""The advisor's answers as plain sentences plus a small table, or as JSON."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from ..table import short_cpu_name, short_gpu_name
from ..units import fmt_bytes, fmt_flops, fmt_pct, fmt_rate, fmt_ratio, fmt_size, fmt_time
from .curves import GemmShape, Lookup
from .loo import REPORTED_ACCURACY, LooReport
from .model import DTYPE_BYTES, Advice, Advisor, CpuEstimate, MlpConfig, Run

__all__ = ["gemm_text", "gemm_json", "mlp_text", "mlp_json", "loo_text", "loo_json"]

Row = tuple[str, ...]
EXTRAPOLATED_MARK = " *"
EXTRAPOLATED_NOTE = "* extrapolated beyond the measured sizes"
ACCURACY_CLASSES = {"gemm_e2e": "end-to-end GEMM rows", "mlp_eager": "eager MLP rows"}


def _table(header: Row, rows: list[Row], numeric: bool = True) -> list[str]:
    """A Markdown table; `numeric`: every column but the first right-aligned."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(r: Row) -> str:
        cells = [
            v.rjust(w) if numeric and i else v.ljust(w) for i, (v, w) in enumerate(zip(r, widths))
        ]
        return "| " + " | ".join(cells) + " |"

    rule = [
        "-" * (w + 2) if not numeric or i == 0 else "-" * (w + 1) + ":"
        for i, w in enumerate(widths)
    ]
    return [line(header), "|" + "|".join(rule) + "|", *[line(r) for r in rows]]


def _machine_line(run: Run) -> str:
    gpu = short_gpu_name(run.gpu) if run.gpu else "no GPU"
    cpus = run.context.get("cpu_logical_cpus")
    cpu = short_cpu_name(run.cpu) + (f" ({cpus} logical CPUs)" if cpus else "")
    return f"{gpu} with {cpu}, from {run.name}"


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
    span = f"measured {_flop(lk.flop_range[0])} to {_flop(lk.flop_range[1])}"
    text = {
        "measured": f"measured at this shape ({curve})",
        "interpolated": f"interpolated on {curve} ({span})",
        "above": f"EXTRAPOLATED above {curve} ({span}): {shape} is {_flop(shape.flop)}, run at "
        f"the largest measured size's rate",
        "below": f"EXTRAPOLATED below {curve} ({span}): {shape} is {_flop(shape.flop)}, "
        f"continuing the trend of the smallest measured sizes",
    }[lk.where]
    if lk.floor:
        text += f"; raised to the {lk.floor} floor"
    if lk.unlike_measured and lk.where != "measured":
        text += (
            f"; the nearest shape measured on it, {lk.nearest}, is unlike {shape}, so take this "
            f"as a rough guide"
        )
    return text


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


def _measured(row: pd.Series | None, key: str, fallback: bool = True) -> float:
    """A measured row's value (`fallback`: its median time where it has none), else NaN."""
    v = math.nan if row is None else row.get(key, math.nan)
    if pd.isna(v) and fallback and row is not None:
        v = row["time_s"]
    return float(v) if pd.notna(v) else math.nan


def _time(seconds: float, extrapolated: bool = False) -> str:
    """A time for a table cell: empty for NaN, marked when extrapolated."""
    if not math.isfinite(seconds):
        return ""
    return fmt_time(seconds) + (EXTRAPOLATED_MARK if extrapolated else "")


def _vs(predicted: float, measured: float) -> str:
    return f"{(predicted - measured) / measured:+.0%}"


def _cpu_rows(cpu: list[CpuEstimate], measured: dict[int, float], label: str) -> list[Row]:
    return [
        (
            f"{label}, {_threads(e.threads)}",
            _time(e.seconds, e.extrapolated),
            _time(measured.get(e.threads, math.nan)),
        )
        for e in cpu
    ]


def _finish(out: list[str], header: Row, rows: list[Row]) -> list[str]:
    out += ["", *_table(header, rows)]
    if any(r[1].endswith(EXTRAPOLATED_MARK) for r in rows):
        out.append(EXTRAPOLATED_NOTE)
    return out


# --- GEMM --------------------------------------------------------------------------------------


def gemm_text(advisor: Advisor, adv: Advice) -> str:
    s, g, best = adv.request, adv.gpu, adv.cpu_best
    assert isinstance(s, GemmShape)
    resident = adv.host == "resident"
    where = "operands already on the device" if resident else f"operands in {adv.host} host memory"
    gpu_name = "with the operands resident" if resident else "end to end"
    out = [
        f"Machine: {_machine_line(advisor.run)}",
        f"GEMM {s} (m x n x k, {_flop(s.flop)}), {adv.dtype} on the GPU ({where}), "
        f"{adv.cpu_dtype} on the CPU.",
        "",
    ]
    total, cpu_t, faster = fmt_time(adv.gpu_total), fmt_time(best.seconds), fmt_ratio(adv.ratio)
    if adv.winner == "gpu":
        out.append(
            f"The GPU wins: {total} {gpu_name} against {cpu_t} on the CPU "
            f"({_threads(best.threads)}), {faster} faster."
        )
    else:
        out.append(
            f"The CPU wins: {cpu_t} ({_threads(best.threads)}) against {total} on the GPU "
            f"{gpu_name}, {faster} faster."
        )
    copies, overhead = g["h2d"] + g["d2h"], g["launch"] + g["sync"]
    shares = [("the compute", g["compute"]), ("launch and sync", overhead)]
    shares = shares if resident else [("the copies", copies), *shares]
    top = max(shares, key=lambda kv: kv[1])[0]
    copy_share = "" if resident else f"copies {fmt_pct(copies / adv.gpu_total)}, "
    achieved = fmt_flops(s.flop / g["compute"]) if g["compute"] > 0 else "n/a"
    out += [
        f"Of the GPU's time, {copy_share}compute {fmt_pct(g['compute'] / adv.gpu_total)} "
        f"({achieved}), launch and sync {fmt_pct(overhead / adv.gpu_total)}: "
        f"{top} dominate{'s' if top == 'the compute' else ''}.",
        f"GPU compute: {_where(adv.compute, s)}.",
        f"CPU ({_threads(best.threads)}): {_where(best.lookups[0][2], s)}.",
        _accuracy_sentence("gemm_e2e", adv.ratio),
    ]

    mg = adv.measured_gpu
    mcpu = dict(zip(adv.measured_cpu["threads"], adv.measured_cpu["time_s"]))
    e2e = mg is not None and mg["kind"] == "gemm_e2e"
    copy_note = ""
    if not resident:
        h2d = advisor.overhead.copies[("h2d", adv.host)]
        nbytes = sum(s.elements()[:2]) * DTYPE_BYTES[adv.dtype]
        copy_note = (
            f" (2 x {fmt_time(h2d.alpha_s)} + {fmt_bytes(nbytes)} / "
            f"{fmt_rate(h2d.beta_bytes_per_s)})"
        )

    def e2e_value(key: str) -> str:
        return _time(_measured(mg, key)) if e2e else ""

    rows = _cpu_rows(adv.cpu, mcpu, f"CPU {adv.cpu_dtype}")
    rows.append(
        (
            f"GPU {adv.dtype}, {gpu_name}",
            _time(adv.gpu_total, adv.compute.extrapolated),
            e2e_value("t_wall"),
        )
    )
    if not resident:
        rows.append((f"  H2D copies{copy_note}", fmt_time(g["h2d"]), e2e_value("t_h2d")))
    rows.append(
        (
            "  compute",
            _time(g["compute"], adv.compute.extrapolated),
            _time(_measured(mg, "t_compute")),
        )
    )
    if not resident:
        rows.append(("  D2H copy", fmt_time(g["d2h"]), e2e_value("t_d2h")))
    rows += [
        ("  launch (1 kernel)", fmt_time(g["launch"]), ""),
        ("  sync", fmt_time(g["sync"]), ""),
        ("  launch + sync", fmt_time(overhead), e2e_value("t_overhead")),
    ]
    _finish(out, ("", "predicted", "measured"), rows)
    if mg is not None or mcpu:
        parts = []
        if mg is not None:
            t = _measured(mg, "t_wall")
            what = "end to end" if e2e else "kernel-only (compute row)"
            parts.append(f"GPU {fmt_time(t)} {what} (prediction {_vs(adv.gpu_total, t)})")
        if mcpu:
            t, at = min((v, k) for k, v in mcpu.items())
            parts.append(f"CPU {fmt_time(t)} at {_threads(at)} (prediction {_vs(best.seconds, t)})")
        text = "The run measured this shape: " + "; ".join(parts) + "."
        if mg is not None and not e2e:
            text += (
                " Resident operands: the measured row is the kernel alone, without launch and sync."
            )
        out += ["", text]
    return "\n".join(out) + "\n"


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


def _products_json(lookups: list[tuple[str, GemmShape, Lookup]]) -> list[dict[str, Any]]:
    return [{"what": what, **_lookup_json(lk, shape)} for what, shape, lk in lookups]


def _answer_json(advisor: Advisor, adv: Advice, request: dict[str, Any]) -> dict[str, Any]:
    """What a GEMM and an MLP answer share: the machine, the request, the verdict, the CPU."""
    run = advisor.run
    return {
        "machine": {"gpu": run.gpu, "cpu": run.cpu, "files": run.files},
        "request": request,
        "winner": adv.winner,
        "ratio": adv.ratio,
        "extrapolated": adv.extrapolated,
        "cpu": {
            "seconds": adv.cpu_best.seconds,
            "threads": adv.cpu_best.threads,
            "by_threads": [
                {
                    "threads": e.threads,
                    "seconds": e.seconds,
                    "elementwise_seconds": e.elementwise,
                    "extrapolated": e.extrapolated,
                    "products": _products_json(e.lookups),
                }
                for e in adv.cpu
            ],
        },
    }


def _rows_json(rows: pd.DataFrame, key: str, threads: bool = False) -> list[dict[str, Any]]:
    """Measured rows as JSON: `key` "seconds" (a GEMM's median time) or "seconds_per_step"."""
    values = rows["time_s" if key == "seconds" else "t_step"]
    return [
        {**({"threads": int(t)} if threads else {}), "run_name": name, key: float(v)}
        for t, name, v in zip(rows["threads"], rows["name"], values)
    ]


def gemm_json(advisor: Advisor, adv: Advice) -> dict[str, Any]:
    s, mg = adv.request, adv.measured_gpu
    assert isinstance(s, GemmShape)
    request = dict(kind="gemm", m=s.m, n=s.n, k=s.k, flop=s.flop, dtype=adv.dtype, host=adv.host)
    doc = _answer_json(advisor, adv, dict(request, cpu_dtype=adv.cpu_dtype))
    doc["gpu"] = {
        "seconds": adv.gpu_total,
        "parts": adv.gpu,
        "compute": _lookup_json(adv.compute, s),
    }
    gpu = None
    if mg is not None:
        keys = ("t_wall", "t_h2d", "t_compute", "t_d2h", "t_overhead")
        gpu = {"run_name": mg["name"], "seconds": float(mg["time_s"])}
        gpu.update(
            {k: float(mg[k]) for k in keys if math.isfinite(_measured(mg, k, fallback=False))}
        )
    doc["measured"] = {"gpu": gpu, "cpu": _rows_json(adv.measured_cpu, "seconds", threads=True)}
    doc["typical_error"] = REPORTED_ACCURACY["gemm_e2e"]
    return doc


# --- MLP ---------------------------------------------------------------------------------------


def mlp_text(advisor: Advisor, adv: Advice) -> str:
    c, g, best = adv.request, adv.gpu, adv.cpu_best
    assert isinstance(c, MlpConfig)
    every = {0: "never read back", 1: "read back every step"}
    readback = "the loss " + every.get(c.readback, f"read back every {c.readback} steps")
    data = "resident on the device" if c.input == "resident" else f"copied from {c.input} memory"
    out = [
        f"Machine: {_machine_line(advisor.run)}",
        f"MLP training step: {c.describe()} ({c.layers} hidden layer{'s' if c.layers > 1 else ''}, "
        f"{_flop(c.flop)} in {len(c.products())} layer products), fp32, batch {data}, {readback}.",
        "",
    ]
    total, cpu_t, faster = fmt_time(adv.gpu_total), fmt_time(best.seconds), fmt_ratio(adv.ratio)
    eager, blas = f"eager, {c.kernels_per_step} launches", f"OpenBLAS, {_threads(best.threads)}"
    if adv.winner == "gpu":
        out.append(
            f"The GPU wins: {total} per step ({eager}) against {cpu_t} on the CPU ({blas}), "
            f"{faster} faster."
        )
    else:
        out.append(
            f"The CPU wins: {cpu_t} per step ({blas}) against {total} on the GPU ({eager}), "
            f"{faster} faster."
        )
    top = max(g.items(), key=lambda kv: kv[1])[0]
    out.append(
        "Of the GPU's step, "
        + ", ".join(f"{name} {fmt_pct(v / adv.gpu_total)}" for name, v in g.items())
        + f": {top} dominate{'s' if top != 'layer products' else ''}."
    )
    names = ", ".join(f"{what} ({s})" for what, s, lk in adv.gpu_lookups if lk.extrapolated)
    if names:
        out.append(
            f"EXTRAPOLATED: the GPU times of {names} lie outside the measured kernel-only "
            f"curves (see --json for each product's curve)."
        )
    names = ", ".join(f"{what} ({s})" for what, s, lk in best.lookups if lk.extrapolated)
    if names:
        out.append(f"EXTRAPOLATED: the CPU times of {names} lie outside the measured CPU curves.")
    out.append(_accuracy_sentence("mlp_eager", adv.ratio))

    mcpu = dict(zip(adv.measured_cpu["threads"], adv.measured_cpu["t_step"]))
    mg = adv.measured_gpu
    rows = _cpu_rows(adv.cpu, mcpu, "CPU OpenBLAS")
    rows += [
        ("GPU eager", _time(adv.gpu_total, adv.gpu_extrapolated), _time(_measured(mg, "t_step"))),
        (
            f"  layer products ({len(adv.gpu_lookups)})",
            _time(g["layer products"], adv.gpu_extrapolated),
            "",
        ),
        ("  element-wise", fmt_time(g["element-wise"]), ""),
        (
            f"  launches ({c.kernels_per_step} x {fmt_time(advisor.t_launch())})",
            fmt_time(g["launch"]),
            "",
        ),
    ]
    if "loss readback" in g:
        rows.append(("  loss readback", fmt_time(g["loss readback"]), ""))
    if "input copy" in g:
        rows.append((f"  input copy ({c.input})", fmt_time(g["input copy"]), ""))
    for _, p in adv.measured_other.iterrows():
        if p["backend"] == "gpu":
            name = f"GPU {p['variant']} (measured only, readback {p['readback']})"
        else:
            name = f"CPU {p['variant']}, {_threads(p['threads'])} (measured only)"
        rows.append((name, "", fmt_time(p["t_step"])))
    _finish(out, ("per step", "predicted", "measured"), rows)
    if mg is not None or mcpu:
        parts = [f"GPU eager {_vs(adv.gpu_total, mg['t_step'])}"] if mg is not None else []
        by_threads = {e.threads: e for e in adv.cpu}
        parts += [
            f"CPU {_threads(t)} {_vs(by_threads[t].seconds, v)}"
            for t, v in sorted(mcpu.items())
            if t in by_threads
        ]
        out += [
            "",
            "The run measured this configuration; prediction against it: " + ", ".join(parts) + ".",
        ]
    return "\n".join(out) + "\n"


def mlp_json(advisor: Advisor, adv: Advice) -> dict[str, Any]:
    c, mg = adv.request, adv.measured_gpu
    assert isinstance(c, MlpConfig)
    request = dict(kind="mlp", batch=c.batch, hidden=c.hidden, layers=c.layers, data=c.data)
    request.update(readback=c.readback, input=c.input, widths=c.widths, flop_per_step=c.flop)
    doc = _answer_json(advisor, adv, dict(request, kernels_per_step=c.kernels_per_step))
    doc["gpu"] = {
        "seconds": adv.gpu_total,
        "parts": adv.gpu,
        "products": _products_json(adv.gpu_lookups),
    }
    eager = (
        None if mg is None else {"run_name": mg["name"], "seconds_per_step": float(mg["t_step"])}
    )
    doc["measured"] = {
        "gpu_eager": eager,
        "cpu": _rows_json(adv.measured_cpu, "seconds_per_step", threads=True),
        "other": _rows_json(adv.measured_other, "seconds_per_step"),
    }
    doc["typical_error"] = REPORTED_ACCURACY["mlp_eager"]
    return doc


# --- leave-one-out -----------------------------------------------------------------------------


def loo_text(report: LooReport) -> str:
    out = [f"Leave-one-out accuracy on {_machine_line(report.run)}", ""]
    rows = []
    for cls in report.classes.values():
        n = len(cls.winners())
        rows.append(
            (
                cls.title,
                str(len(cls.cases)),
                fmt_pct(cls.median),
                fmt_pct(cls.p90),
                f"{cls.bias:+.0%}",
                f"{fmt_pct(cls.winner_agreement)} of {n}" if n else "",
            )
        )
    header = ("rows", "n", "median |error|", "90th pct |error|", "median error", "winner right")
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
    run = report.run
    classes = {}
    for key, cls in report.classes.items():
        columns = ["name", "predicted", "measured", "rel_error", "predicted_winner"]
        cases = cls.cases[[*columns, "measured_winner", "extrapolated"]].astype(object)
        cases = cases.where(cases.notna(), None)
        classes[key] = {"title": cls.title, **cls.summary(), "cases": cases.to_dict("records")}
    return {"machine": {"gpu": run.gpu, "cpu": run.cpu, "files": run.files}, "classes": classes}
