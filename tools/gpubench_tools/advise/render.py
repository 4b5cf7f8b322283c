"""The advisor's answers: plain sentences and a small table from the Jinja2 templates in
templates/ (the numbers computed here and passed in), or JSON built from the same data."""

from __future__ import annotations

import math
from dataclasses import asdict
from functools import cache
from typing import Any

import jinja2
import pandas as pd

from ..table import per_step, short_cpu_name, short_gpu_name
from ..templating import environment
from ..units import fmt_bytes, fmt_flops, fmt_pct, fmt_rate, fmt_ratio, fmt_size, fmt_time
from .curves import GemmShape, Lookup
from .loo import REPORTED_ACCURACY, LooReport
from .model import DTYPE_BYTES, Advice, Advisor, verdict

MARK = " *"  # a predicted time that was extrapolated
GEMM_MEASURED = ("t_wall", "t_h2d", "t_compute", "t_d2h", "t_overhead")


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]], numeric: bool = True) -> str:
    """A Markdown table padded to its widest cells; `numeric`: every column but the first
    right-aligned."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    right = [numeric and i > 0 for i in range(len(header))]

    def line(r: tuple[str, ...]) -> str:
        cells = [v.rjust(w) if ra else v.ljust(w) for v, w, ra in zip(r, widths, right)]
        return "| " + " | ".join(cells) + " |"

    rule = "|".join("-" * (w + 1) + (":" if ra else "-") for w, ra in zip(widths, right))
    return "\n".join([line(header), f"|{rule}|", *map(line, rows)])


def _flop(x: float) -> str:
    for scale, prefix in ((1e15, "P"), (1e12, "T")):
        if x >= scale:
            return f"{x / scale:.3g}{prefix} FLOP"
    return f"{fmt_size(x)} FLOP"


def _cell(seconds: float | None, extrapolated: bool = False) -> str:
    """A time for a table cell: empty where there is none (None, NaN), marked when
    extrapolated."""
    if seconds is None or not math.isfinite(seconds):
        return ""
    return fmt_time(seconds) + (MARK if extrapolated else "")


def _signed_pct(fraction: float) -> str:
    return f"{fraction:+.0%}"


def _vs(predicted: float, measured: float) -> str:
    """A prediction's error against a measurement."""
    return _signed_pct((predicted - measured) / measured)


@cache
def _templates() -> jinja2.Environment:
    env = environment(
        "gpubench_tools.advise", keep_trailing_newline=True, extensions=["jinja2.ext.do"]
    )
    units = dict(time=fmt_time, pct=fmt_pct, ratio=fmt_ratio, flops=fmt_flops, bytes=fmt_bytes)
    env.filters.update(units, rate=fmt_rate, flop=_flop, cell=_cell, signed_pct=_signed_pct)
    env.filters.update(vs=_vs, short_gpu=short_gpu_name, short_cpu=short_cpu_name)
    env.globals.update(table=_table, reported_accuracy=REPORTED_ACCURACY)
    return env


def _render(template: str, **values: Any) -> str:
    return _templates().get_template(template).render(**values)


def _measured(row: pd.Series | None, key: str, fallback: bool = True) -> float:
    """A measured row's value (`fallback`: its median time where it has none), else NaN."""
    v = math.nan if row is None else row.get(key, math.nan)
    v = row["time_s"] if fallback and row is not None and pd.isna(v) else v
    return float(v) if pd.notna(v) else math.nan


def _headline(adv: Advice) -> dict[str, Any]:
    """What the answer leads with: each side measured where the run measured this very request
    (the same quantity: end to end for a GEMM with copies, the eager step for an MLP), else
    predicted; the winner and ratio of those two times. A GEMM's kernel-only row (the resident
    case) lacks the launch and sync, so the prediction leads there."""
    mg, (cpu_measured, cpu_predicted) = adv.measured_gpu, _cpu_sides(adv)
    gemm = isinstance(adv.request, GemmShape)
    gpu_s = _measured(mg, "t_wall" if gemm else "t_step")
    if gemm and (mg is None or mg["kind"] != "gemm_e2e"):
        gpu_s = math.nan
    gpu = {"seconds": gpu_s, "source": "measured", "predicted": adv.gpu_total}
    if not math.isfinite(gpu_s):
        gpu.update(seconds=adv.gpu_total, source="predicted")
    if cpu_measured:
        seconds, threads = min((v, k) for k, v in cpu_measured.items())
        cpu = {"seconds": seconds, "threads": threads, "source": "measured"}
        cpu["predicted"] = cpu_predicted.get(threads)  # None: no curve at that thread count
    else:
        best = adv.cpu_best
        cpu = {"seconds": best.seconds, "threads": best.threads, "source": "predicted"}
        cpu["predicted"] = best.seconds
    winner, ratio = verdict(gpu["seconds"], cpu["seconds"])
    return {"gpu": gpu, "cpu": cpu, "winner": winner, "ratio": ratio}


def _differs_most(pairs: list[tuple[str, float, float]]) -> dict[str, Any] | None:
    """Of (part, predicted, measured) seconds, the part whose two differ most (common.j2 says
    why)."""
    pairs = [(p, a, b) for p, a, b in pairs if math.isfinite(a) and math.isfinite(b)]
    if not pairs:
        return None
    part, predicted, measured = max(pairs, key=lambda x: abs(x[1] - x[2]))
    return {"part": part, "predicted": predicted, "measured": measured}


def _per_step(row: pd.Series | None, key: str) -> float:
    """A measured training row's phase time per step (table.per_step), NaN without one."""
    return math.nan if row is None else float(per_step(row.to_frame().T, [key])[key].iloc[0])


def _marked(adv: Advice) -> bool:
    """Whether the table shows an extrapolated time (any CPU thread count or the GPU)."""
    return adv.gpu_extrapolated or any(e.extrapolated for e in adv.cpu)


def answer_text(advisor: Advisor, adv: Advice) -> str:
    """The answer to a GEMM or an MLP step in sentences and a table."""
    if not isinstance(adv.request, GemmShape):
        return _mlp_text(advisor, adv)
    s, g, mg = adv.request, adv.gpu, adv.measured_gpu
    resident, overhead = adv.host == "resident", g["launch"] + g["sync"]
    parts = {"copies": g["h2d"] + g["d2h"], "compute": g["compute"], "overhead": overhead}
    if resident:
        del parts["copies"]
    mcpu, _ = _cpu_sides(adv)
    e2e = mg is not None and mg["kind"] == "gemm_e2e"
    measured = {k: _measured(mg, k) for k in GEMM_MEASURED}
    pairs = [("copies to the GPU", g["h2d"], measured["t_h2d"]),
             ("compute", g["compute"], measured["t_compute"]),
             ("copy back", g["d2h"], measured["t_d2h"]),
             ("launch and sync", overhead, measured["t_overhead"])]  # fmt: skip
    return _render(
        "gemm.txt.j2",
        headline=_headline(adv),
        differs=_differs_most(pairs) if e2e else None,
        run=advisor.run,
        a=adv,
        resident=resident,
        share={k: v / adv.gpu_total for k, v in parts.items()},
        top=max(parts, key=lambda k: parts[k]),
        achieved_flops=s.flop / g["compute"] if g["compute"] > 0 else None,
        h2d=None if resident else advisor.overhead.copies[("h2d", adv.host)],
        h2d_bytes=sum(s.elements()[:2]) * DTYPE_BYTES[adv.dtype],
        e2e=e2e,
        measured=measured,
        measured_gpu_s=None if mg is None else _measured(mg, "t_wall"),
        measured_cpu=mcpu,
        cpu_fastest=min((v, k) for k, v in mcpu.items()) if mcpu else None,
        marked=_marked(adv),
    )


def _cpu_sides(adv: Advice) -> tuple[dict[int, float], dict[int, float]]:
    """The run's CPU times at this very request by thread count (a GEMM's median call, an MLP's
    step), and the predicted ones."""
    column = "time_s" if isinstance(adv.request, GemmShape) else "t_step"
    measured = dict(zip(adv.measured_cpu["threads"], adv.measured_cpu[column]))
    return measured, {e.threads: e.seconds for e in adv.cpu}


def _mlp_text(advisor: Advisor, adv: Advice) -> str:
    g, mg = adv.gpu, adv.measured_gpu
    mcpu, predicted = _cpu_sides(adv)
    # Without a measured row every measured part is NaN, and no part differs.
    overhead = g["launch"] + g.get("loss readback", 0.0)
    pairs = [("compute", g["layer products"] + g["element-wise"], _per_step(mg, "t_compute")),
             ("launch and sync", overhead, _per_step(mg, "t_overhead"))]  # fmt: skip
    if "input copy" in g:
        pairs.append(("input copy", g["input copy"], _per_step(mg, "t_h2d")))

    def extrapolated(lookups: list[tuple[str, GemmShape, Lookup]]) -> list[str]:
        return [f"{what} ({s})" for what, s, lk in lookups if lk.extrapolated]

    return _render(
        "mlp.txt.j2",
        headline=_headline(adv),
        differs=_differs_most(pairs),
        run=advisor.run,
        a=adv,
        share={k: v / adv.gpu_total for k, v in g.items()},
        top=max(g.items(), key=lambda kv: kv[1])[0],
        gpu_extrapolated=extrapolated(adv.gpu_lookups),
        cpu_extrapolated=extrapolated(adv.cpu_best.lookups),
        t_launch=advisor.t_launch(),
        measured_step=_measured(mg, "t_step"),
        measured_eager_step=None if mg is None else mg["t_step"],
        measured_cpu=mcpu,
        cpu_vs=[(t, predicted[t], v) for t, v in sorted(mcpu.items()) if t in predicted],
        marked=_marked(adv),
    )


def loo_text(report: LooReport) -> str:
    gpu = [report.classes[k].cases for k in ("gemm_e2e", "mlp_eager") if k in report.classes]
    worst = None
    if gpu:
        worst = pd.concat(gpu).sort_values("rel_error", key=lambda e: -e.abs(), kind="stable")
    return _render("loo.txt.j2", report=report, worst=None if worst is None else worst.head(5))


def _lookup_json(lk: Lookup, shape: GemmShape) -> dict[str, Any]:
    curve = dict(backend=lk.backend, dtype=lk.dtype, family=lk.family, threads=lk.threads)
    curve.update(flop_range=list(lk.flop_range), nearest_measured_shape=list(lk.nearest.mnk))
    doc = dict(shape=list(shape.mnk), flop=shape.flop, seconds=lk.seconds)
    doc.update(flop_per_s=shape.flop / lk.seconds, curve=curve, where=lk.where)
    doc.update(extrapolated=lk.extrapolated, unlike_measured=lk.unlike_measured, floor=lk.floor)
    return doc


def _products_json(lookups: list[tuple[str, GemmShape, Lookup]]) -> list[dict[str, Any]]:
    return [{"what": what, **_lookup_json(lk, shape)} for what, shape, lk in lookups]


def _rows_json(rows: pd.DataFrame, key: str, threads: bool = True) -> list[dict[str, Any]]:
    """Measured rows as JSON: `key` "seconds" (a GEMM's median time) or "seconds_per_step"."""
    values = rows["time_s" if key == "seconds" else "t_step"]
    return [
        {**({"threads": int(t)} if threads else {}), "run_name": name, key: float(v)}
        for t, name, v in zip(rows["threads"], rows["name"], values)
    ]


def _machine_json(advisor: Advisor | LooReport) -> dict[str, Any]:
    run = advisor.run
    return {"gpu": run.gpu, "cpu": run.cpu, "files": run.files, "gpu_files": run.gpu_files}


def answer_json(advisor: Advisor, adv: Advice) -> dict[str, Any]:
    """A GEMM or an MLP answer: the machine, the request, the verdict, both sides, what the run
    measured and the typical error of such answers."""
    r, mg, best = adv.request, adv.measured_gpu, adv.cpu_best
    if isinstance(r, GemmShape):
        request = dict(kind="gemm", **asdict(r), flop=r.flop, dtype=adv.dtype, host=adv.host)
        request.update(cpu_dtype=adv.cpu_dtype)
        gpu = {"compute": _lookup_json(adv.compute, r)}
        measured: dict[str, Any] = {"gpu": None, "cpu": _rows_json(adv.measured_cpu, "seconds")}
        if mg is not None:
            measured["gpu"] = {"run_name": mg["name"], "seconds": float(mg["time_s"])}
            finite = [k for k in GEMM_MEASURED if math.isfinite(_measured(mg, k, False))]
            measured["gpu"].update({k: float(mg[k]) for k in finite})
        accuracy = REPORTED_ACCURACY["gemm_e2e"]
    else:
        request = dict(kind="mlp", **asdict(r), widths=r.widths, flop_per_step=r.flop)
        request.update(kernels_per_step=r.kernels_per_step)
        gpu = {"products": _products_json(adv.gpu_lookups)}
        measured = {"gpu_eager": None, "cpu": _rows_json(adv.measured_cpu, "seconds_per_step")}
        if mg is not None:
            measured["gpu_eager"] = {
                "run_name": mg["name"],
                "seconds_per_step": float(mg["t_step"]),
            }
        measured["other"] = _rows_json(adv.measured_other, "seconds_per_step", threads=False)
        accuracy = REPORTED_ACCURACY["mlp_eager"]
    by_threads = [
        dict(threads=e.threads, seconds=e.seconds, elementwise_seconds=e.elementwise)
        | dict(extrapolated=e.extrapolated, products=_products_json(e.lookups))
        for e in adv.cpu
    ]
    return {
        "machine": _machine_json(advisor),
        "request": request,
        "headline": _headline(adv),
        "winner": adv.winner,
        "ratio": adv.ratio,
        "extrapolated": adv.extrapolated,
        "cpu": {"seconds": best.seconds, "threads": best.threads, "by_threads": by_threads},
        "gpu": {"seconds": adv.gpu_total, "parts": adv.gpu, **gpu},
        "measured": measured,
        "typical_error": accuracy,
    }


def loo_json(report: LooReport) -> dict[str, Any]:
    classes = {}
    columns = ["name", "predicted", "measured", "rel_error", "predicted_winner", "measured_winner"]
    for key, cls in report.classes.items():
        cases = cls.cases[[*columns, "extrapolated"]].astype(object)
        cases = cases.where(cases.notna(), None).to_dict("records")
        classes[key] = {"title": cls.title, **cls.summary(), "cases": cases}
    return {"machine": _machine_json(report), "classes": classes}
