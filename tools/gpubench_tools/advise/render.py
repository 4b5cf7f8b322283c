"""The advisor's answers: each a frozen record computed here (`Answer`, `LooAnswer`), worded by
the macros of templates/ (templating.Words), or JSON built from the same data."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import jinja2
import pandas as pd

from ..report.topics import GEMM_ROW_NAMES
from ..table import short_cpu_name, short_gpu_name
from ..templating import Words, environment
from ..units import fmt_bytes, fmt_flops, fmt_pct, fmt_rate, fmt_ratio, fmt_size, fmt_time, plural
from .curves import GemmShape, Lookup
from .loo import REPORTED_ACCURACY, LooReport
from .model import DTYPE_BYTES, Advice, AdviseError, Advisor, Run, verdict

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


def _error(predicted: float, measured: float) -> float:
    """A prediction's error against a measurement: > 0 predicts too slow."""
    return (predicted - measured) / measured


def _environment() -> jinja2.Environment:
    env = environment(__package__, keep_trailing_newline=True)
    units = dict(time=fmt_time, pct=fmt_pct, ratio=fmt_ratio, flops=fmt_flops, bytes=fmt_bytes)
    env.filters.update(units, flop=_flop, signed_pct=_signed_pct, short_gpu=short_gpu_name)
    env.filters.update(short_cpu=short_cpu_name)
    env.globals.update(plural=plural, reported_accuracy=REPORTED_ACCURACY, row_names=GEMM_ROW_NAMES)
    return env


WORDS = {name: Words(_environment, f"{name}.j2") for name in ("gemm.txt", "mlp.txt", "loo.txt")}
COMMON = Words(_environment, "common.j2")
ERRORS = Words(_environment, "errors.j2")  # a macro per error


def error_text(error: AdviseError) -> str:
    """The one line of an AdviseError: its macro of templates/errors.j2, given its facts."""
    return ERRORS(error.sentence, **error.facts)


@dataclass(frozen=True)
class Measured:
    """A side at the very request (`side` gpu or cpu; `threads` 0 on the GPU), and the error of
    the prediction against the measurement (None: not measured)."""

    side: str
    seconds: float
    threads: int
    error: float | None


@dataclass(frozen=True)
class Predicted:
    """The prediction beside a headline that holds a measurement: the GPU's error where its side
    was measured, the CPU's predicted time at the thread count shown (its error where measured),
    whether the predicted winner is the headline's, and the part in which prediction and
    measurement differ most (_differs_most)."""

    gpu_error: float | None
    cpu: Measured
    same_winner: bool
    differs: dict[str, Any] | None


@dataclass(frozen=True)
class Answer:
    """The answer to a GEMM or an MLP step in words (the `answer` macro of gemm.txt.j2 or
    mlp.txt.j2): the advice, its headline (_headline, as the JSON has it), the prediction beside
    it, the GPU time's parts as fractions (`share`, the largest `top`), the table laid out, the
    rows measured at this request (None: say nothing of them), whether the margin is within the
    typical median error (`tie`), and for a GEMM whether its operands are resident, its achieved
    FLOP/s and whether the GPU row measured is kernel-only, for an MLP its count of layer products.
    """

    run: Run
    a: Advice
    headline: dict[str, Any]
    predicted: Predicted | None
    share: dict[str, float]
    top: str
    table: str
    measured: list[Measured] | None
    tie: bool
    resident: bool = False
    achieved_flops: float | None = None
    kernel_row: bool = False
    products: int = 0  # an MLP step's layer products


@dataclass(frozen=True)
class LooAnswer:
    """Leave-one-out in words (loo.txt.j2): the table laid out and the largest errors of the GPU
    classes (.name, .predicted, .measured, .rel_error; None without a GPU class)."""

    run: Run
    table: str
    worst: list[Any] | None


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


def _cpu_sides(adv: Advice) -> tuple[dict[int, float], dict[int, float]]:
    """The run's CPU times at this very request by thread count (a GEMM's median call, an MLP's
    step), and the predicted ones."""
    column = "time_s" if isinstance(adv.request, GemmShape) else "t_step"
    measured = dict(zip(adv.measured_cpu["threads"], adv.measured_cpu[column]))
    return measured, {e.threads: e.seconds for e in adv.cpu}


def _cpu_rows(adv: Advice, label: str) -> list[tuple[str, ...]]:
    """The table's CPU rows: each thread count's time, predicted and measured."""
    measured = _cpu_sides(adv)[0]
    cells = [(e, _cell(e.seconds, e.extrapolated), _cell(measured.get(e.threads))) for e in adv.cpu]
    return [(f"CPU {label}, {plural(e.threads, 'thread')}", *rest) for e, *rest in cells]


def _predicted(adv: Advice, h: dict[str, Any], pairs: Pairs) -> Predicted | None:
    """Where the headline holds a measurement: the prediction beside it."""
    gpu, cpu = h["gpu"], h["cpu"]
    if gpu["source"] != "measured" and cpu["source"] != "measured":
        return None
    gpu_error = _error(adv.gpu_total, gpu["seconds"]) if gpu["source"] == "measured" else None
    if cpu["source"] == "measured" and cpu["predicted"] is not None:
        side = cpu["predicted"], cpu["threads"], _error(cpu["predicted"], cpu["seconds"])
    else:
        side = adv.cpu_best.seconds, adv.cpu_best.threads, None
    same = adv.winner == h["winner"]
    return Predicted(gpu_error, Measured("cpu", *side), same, _differs_most(pairs))


def _answer(
    run: Run, adv: Advice, parts: dict[str, float], pairs: Pairs, *values: Any, **gemm: Any
) -> Answer:
    """An answer with what both kinds compute alike: the headline, the prediction beside it (the
    part where the two differ most, of `pairs`), the shares of the GPU time's `parts`, the tie.
    `values`: the table and the rows measured; `gemm`: a GEMM's own."""
    h, kind = _headline(adv), "gemm_e2e" if isinstance(adv.request, GemmShape) else "mlp_eager"
    share = {k: v / adv.gpu_total for k, v in parts.items()}
    top = max(parts, key=lambda k: parts[k])
    tie = adv.ratio - 1.0 < REPORTED_ACCURACY[kind]["median"]
    return Answer(run, adv, h, _predicted(adv, h, pairs), share, top, *values, tie, **gemm)


def gemm_answer(advisor: Advisor, adv: Advice) -> Answer:
    s, g, mg = adv.request, adv.gpu, adv.measured_gpu
    resident, overhead = adv.host == "resident", g["launch"] + g["sync"]
    parts = {"copies": g["h2d"] + g["d2h"], "compute": g["compute"], "overhead": overhead}
    if resident:
        del parts["copies"]
    e2e = mg is not None and mg["kind"] == "gemm_e2e"
    m = {k: _measured(mg, k) if e2e or k == "t_compute" else math.nan for k in GEMM_MEASURED}
    pairs = [("copies to the GPU", g["h2d"], m["t_h2d"]),
             ("compute", g["compute"], m["t_compute"]),
             ("copy back", g["d2h"], m["t_d2h"]),
             ("launch and sync", overhead, m["t_overhead"])]  # fmt: skip
    x, rows = adv.compute.extrapolated, _cpu_rows(adv, adv.cpu_dtype)
    where = "with the operands resident" if resident else "end to end"
    rows.append((f"GPU {adv.dtype}, {where}", _cell(adv.gpu_total, x), _cell(m["t_wall"])))
    if not resident:
        h2d, nbytes = advisor.overhead.copies[("h2d", adv.host)], sum(s.elements()[:2])
        fit = f"{fmt_time(h2d.alpha_s)} + {fmt_bytes(nbytes * DTYPE_BYTES[adv.dtype])}"
        fit += f" / {fmt_rate(h2d.beta_bytes_per_s)}"
        rows.append((f"  H2D copies (2 x {fit})", fmt_time(g["h2d"]), _cell(m["t_h2d"])))
    rows.append(("  compute", _cell(g["compute"], x), _cell(m["t_compute"])))
    if not resident:
        rows.append(("  D2H copy", fmt_time(g["d2h"]), _cell(m["t_d2h"])))
    rows += [("  launch (1 kernel)", fmt_time(g["launch"]), ""), ("  sync", fmt_time(g["sync"]), ""),
             ("  launch + sync", fmt_time(overhead), _cell(m["t_overhead"]))]  # fmt: skip
    # The rows measured here that the headline does not lead with: a kernel-only GPU row, the
    # CPU's where no end-to-end row leads.
    kernel_row, h, measured = mg is not None and not e2e, _headline(adv), []
    if kernel_row:
        wall = _measured(mg, "t_wall")
        measured.append(Measured("gpu", wall, 0, _error(adv.gpu_total, wall)))
    if h["cpu"]["source"] == "measured" and not e2e:
        cpu, threads = h["cpu"]["seconds"], h["cpu"]["threads"]
        measured.append(Measured("cpu", cpu, threads, _error(adv.cpu_best.seconds, cpu)))
    flops = s.flop / g["compute"] if g["compute"] > 0 else None
    table = _table(("", "predicted", "measured"), rows)
    gemm = dict(resident=resident, achieved_flops=flops, kernel_row=kernel_row)
    return _answer(advisor.run, adv, parts, pairs if e2e else [], table, measured or None, **gemm)


def mlp_answer(advisor: Advisor, adv: Advice) -> Answer:
    g, mg, c = adv.gpu, adv.measured_gpu, adv.request
    mcpu, predicted = _cpu_sides(adv)
    # Without a measured row every measured part is NaN, and no part differs. The row's phases
    # are per step (model._derive).
    m = {k: _measured(mg, k, False) for k in ("t_compute", "t_overhead", "t_h2d")}
    overhead = g["launch"] + g.get("loss readback", 0.0)
    pairs = [("compute", g["layer products"] + g["element-wise"], m["t_compute"]),
             ("launch and sync", overhead, m["t_overhead"])]  # fmt: skip
    if "input copy" in g:
        pairs.append(("input copy", g["input copy"], m["t_h2d"]))
    x, rows = adv.gpu_extrapolated, _cpu_rows(adv, "OpenBLAS")
    launches = f"  launches ({c.kernels_per_step} x {fmt_time(advisor.t_launch())})"
    rows += [("GPU eager", _cell(adv.gpu_total, x), _cell(_measured(mg, "t_step"))),
             (f"  layer products ({len(adv.gpu_lookups)})", _cell(g["layer products"], x), ""),
             ("  element-wise", fmt_time(g["element-wise"]), ""),
             (launches, fmt_time(g["launch"]), "")]  # fmt: skip
    if "loss readback" in g:
        rows.append(("  loss readback", fmt_time(g["loss readback"]), ""))
    if "input copy" in g:
        rows.append((f"  input copy ({c.input})", fmt_time(g["input copy"]), ""))
    for p in adv.measured_other.itertuples():
        cpu = f"CPU {p.variant}, {plural(p.threads, 'thread')} (measured only)"
        gpu = f"GPU {p.variant} (measured only, readback {p.readback})"
        rows.append((gpu if p.backend == "gpu" else cpu, "", fmt_time(p.t_step)))
    cpu_measured = [(t, v) for t, v in sorted(mcpu.items()) if t in predicted]
    measured = [Measured("cpu", v, t, _error(predicted[t], v)) for t, v in cpu_measured]
    if mg is not None:
        measured.insert(0, Measured("gpu", mg["t_step"], 0, _error(adv.gpu_total, mg["t_step"])))
    shown = measured if mg is not None or mcpu else None
    table = _table(("per step", "predicted", "measured"), rows)
    return _answer(advisor.run, adv, g, pairs, table, shown, products=len(adv.gpu_lookups))


def answer_text(advisor: Advisor, adv: Advice) -> str:
    """The answer to a GEMM or an MLP step in sentences and a table."""
    if isinstance(adv.request, GemmShape):
        return WORDS["gemm.txt"]("answer", x=gemm_answer(advisor, adv))
    return WORDS["mlp.txt"]("answer", x=mlp_answer(advisor, adv))


def loo_answer(report: LooReport) -> LooAnswer:
    rows = []
    for key, cls in report.classes.items():
        right = f"{fmt_pct(cls.winner_agreement)} of {cls.winner_rows}" if cls.winner_rows else ""
        numbers = fmt_pct(cls.median), fmt_pct(cls.p90), _signed_pct(cls.bias), right
        rows.append((COMMON("loo_title", key=key), str(len(cls.cases)), *numbers))
    header = ("rows", "n", "median |error|", "90th pct |error|", "median error", "winner right")
    table = _table(header, rows, numeric=False)
    gpu = [report.classes[k].cases for k in ("gemm_e2e", "mlp_eager") if k in report.classes]
    if not gpu:
        return LooAnswer(report.run, table, None)
    worst = pd.concat(gpu).sort_values("rel_error", key=lambda e: -e.abs(), kind="stable")
    return LooAnswer(report.run, table, list(worst.head(5).itertuples()))


def loo_text(report: LooReport) -> str:
    return WORDS["loo.txt"]("answer", x=loo_answer(report))


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
    classes = {}
    columns = ["name", "predicted", "measured", "rel_error", "predicted_winner", "measured_winner"]
    for key, cls in report.classes.items():
        cases = cls.cases[[*columns, "extrapolated"]].astype(object)
        cases = cases.where(cases.notna(), None).to_dict("records")
        classes[key] = {"title": COMMON("loo_title", key=key), **cls.summary(), "cases": cases}
    return {"machine": _machine_json(report), "classes": classes}
