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

GEMM_MEASURED = ("t_wall", "t_h2d", "t_compute", "t_d2h", "t_overhead")
_SECONDS = {"seconds": "time_s", "seconds_per_step": "t_step"}  # JSON key -> the rows' column
Pairs = list[tuple[str, float, float]]  # (part, predicted, measured) seconds


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
    return fmt_time(seconds) + (" *" if extrapolated else "")  # the mark of an extrapolation


def _signed_pct(fraction: float) -> str:
    return f"{fraction:+.0%}"


def _vs(predicted: float, measured: float) -> str:
    """A prediction's error against a measurement."""
    return _signed_pct((predicted - measured) / measured)


@cache
def _templates() -> jinja2.Environment:
    env = environment(__package__, keep_trailing_newline=True, extensions=["jinja2.ext.do"])
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
    fastest = min(((v, k) for k, v in cpu_measured.items()), default=None)
    seconds, threads = fastest or (adv.cpu_best.seconds, adv.cpu_best.threads)
    source = "predicted" if fastest is None else "measured"
    cpu = dict(seconds=seconds, threads=threads, source=source)
    cpu["predicted"] = cpu_predicted.get(threads)  # None: no curve at the measured thread count
    winner, ratio = verdict(gpu["seconds"], cpu["seconds"])
    return {"gpu": gpu, "cpu": cpu, "winner": winner, "ratio": ratio}


def _differs_most(pairs: Pairs) -> dict[str, Any] | None:
    """Of (part, predicted, measured) seconds, the part whose two differ most (common.j2 says
    why)."""
    finite = [(p, a, b) for p, a, b in pairs if math.isfinite(a) and math.isfinite(b)]
    most = max(finite, key=lambda x: abs(x[1] - x[2]), default=None)
    return None if most is None else dict(zip(("part", "predicted", "measured"), most))


def _per_step(row: pd.Series | None, key: str) -> float:
    """A measured training row's phase time per step (table.per_step), NaN without one."""
    return math.nan if row is None else float(per_step(row.to_frame().T, [key])[key].iloc[0])


def _answer(
    advisor: Advisor, adv: Advice, parts: dict[str, float], pairs: Pairs, **values: Any
) -> str:
    """The answer's template (gemm.txt.j2, mlp.txt.j2) with what both are given: the headline,
    the part where prediction and measurement differ most (of `pairs`), the shares of the GPU
    time's `parts`."""
    return _render(
        "gemm.txt.j2" if isinstance(adv.request, GemmShape) else "mlp.txt.j2",
        headline=_headline(adv),
        differs=_differs_most(pairs),
        advisor=advisor,
        a=adv,
        share={k: v / adv.gpu_total for k, v in parts.items()},
        top=max(parts, key=lambda k: parts[k]),
        measured_cpu=_cpu_sides(adv)[0],
        **values,
    )


def answer_text(advisor: Advisor, adv: Advice) -> str:
    """The answer to a GEMM or an MLP step in sentences and a table."""
    if not isinstance(adv.request, GemmShape):
        return _mlp_text(advisor, adv)
    s, g, mg = adv.request, adv.gpu, adv.measured_gpu
    resident, overhead = adv.host == "resident", g["launch"] + g["sync"]
    parts = {"copies": g["h2d"] + g["d2h"], "compute": g["compute"], "overhead": overhead}
    if resident:
        del parts["copies"]
    e2e = mg is not None and mg["kind"] == "gemm_e2e"
    measured = {k: _measured(mg, k) for k in GEMM_MEASURED}
    pairs = [("copies to the GPU", g["h2d"], measured["t_h2d"]),
             ("compute", g["compute"], measured["t_compute"]),
             ("copy back", g["d2h"], measured["t_d2h"]),
             ("launch and sync", overhead, measured["t_overhead"])]  # fmt: skip
    return _answer(
        advisor,
        adv,
        parts,
        pairs if e2e else [],
        resident=resident,
        achieved_flops=s.flop / g["compute"] if g["compute"] > 0 else None,
        h2d_bytes=sum(s.elements()[:2]) * DTYPE_BYTES[adv.dtype],
        e2e=e2e,
        measured=measured,
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
    return _answer(
        advisor,
        adv,
        g,
        pairs,
        measured_step=_measured(mg, "t_step"),
        cpu_vs=[(t, predicted[t], v) for t, v in sorted(mcpu.items()) if t in predicted],
    )


def loo_text(report: LooReport) -> str:
    gpu = [report.classes[k].cases for k in ("gemm_e2e", "mlp_eager") if k in report.classes]
    if not gpu:
        return _render("loo.txt.j2", report=report, worst=None)
    worst = pd.concat(gpu).sort_values("rel_error", key=lambda e: -e.abs(), kind="stable")
    return _render("loo.txt.j2", report=report, worst=worst.head(5))


def _lookup_json(lk: Lookup, shape: GemmShape) -> dict[str, Any]:
    curve = dict(backend=lk.backend, dtype=lk.dtype, family=lk.family, threads=lk.threads)
    curve.update(flop_range=list(lk.flop_range), nearest_measured_shape=list(lk.nearest.mnk))
    doc = dict(shape=list(shape.mnk), flop=shape.flop, seconds=lk.seconds)
    doc.update(flop_per_s=shape.flop / lk.seconds, curve=curve, where=lk.where)
    doc.update(extrapolated=lk.extrapolated, unlike_measured=lk.unlike_measured, floor=lk.floor)
    return doc


def _products_json(lookups: list[tuple[str, GemmShape, Lookup]]) -> list[dict[str, Any]]:
    return [{"what": what, **_lookup_json(lk, shape)} for what, shape, lk in lookups]


def _row_json(row: pd.Series, key: str, threads: bool = True) -> dict[str, Any]:
    """A measured row: `key` "seconds" (a GEMM's median time) or "seconds_per_step"."""
    doc = {"threads": int(row["threads"])} if threads else {}
    return doc | {"run_name": row["name"], key: float(row[_SECONDS[key]])}


def _machine_json(advisor: Advisor | LooReport) -> dict[str, Any]:
    run = advisor.run
    return {"gpu": run.gpu, "cpu": run.cpu, "files": run.files, "gpu_files": run.gpu_files}


def answer_json(advisor: Advisor, adv: Advice) -> dict[str, Any]:
    """A GEMM or an MLP answer: the machine, the request, the verdict, both sides, what the run
    measured and the typical error of such answers."""
    r, mg, best = adv.request, adv.measured_gpu, adv.cpu_best
    gemm = isinstance(r, GemmShape)
    key = "seconds" if gemm else "seconds_per_step"
    measured_cpu = [_row_json(row, key) for _, row in adv.measured_cpu.iterrows()]
    measured_gpu = None if mg is None else _row_json(mg, key, threads=False)
    if gemm:
        request = dict(kind="gemm", **asdict(r), flop=r.flop, dtype=adv.dtype, host=adv.host)
        request.update(cpu_dtype=adv.cpu_dtype)
        gpu = {"compute": _lookup_json(adv.compute, r)}
        if mg is not None:
            finite = [k for k in GEMM_MEASURED if math.isfinite(_measured(mg, k, False))]
            measured_gpu.update({k: float(mg[k]) for k in finite})
        measured = {"gpu": measured_gpu, "cpu": measured_cpu}
    else:
        request = dict(kind="mlp", **asdict(r), widths=r.widths, flop_per_step=r.flop)
        request.update(kernels_per_step=r.kernels_per_step)
        gpu = {"products": _products_json(adv.gpu_lookups)}
        other = [_row_json(row, key, threads=False) for _, row in adv.measured_other.iterrows()]
        measured = {"gpu_eager": measured_gpu, "cpu": measured_cpu, "other": other}
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
        "typical_error": REPORTED_ACCURACY["gemm_e2e" if gemm else "mlp_eager"],
    }


def loo_json(report: LooReport) -> dict[str, Any]:
    classes, titles = {}, _templates().get_template("common.j2").module.loo_titles
    columns = ["name", "predicted", "measured", "rel_error", "predicted_winner", "measured_winner"]
    for key, cls in report.classes.items():
        cases = cls.cases[[*columns, "extrapolated"]].astype(object)
        cases = cases.where(cases.notna(), None).to_dict("records")
        classes[key] = {"title": titles[key], **cls.summary(), "cases": cases}
    return {"machine": _machine_json(report), "classes": classes}
