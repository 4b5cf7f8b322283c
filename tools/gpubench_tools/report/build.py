"""The report's content: from the table to the document the templates render. The composer of
the rendering: it runs the sections' computations (speedups, gpu_time, resources: frozen
records), hands each record to its page (`pages`: words and the charts it asks for), draws every
chart in one step and words what the document says around the sections.

The order is the reader's: the answer (one table, a row per workload: who wins where, by how
much, and why), then a section per workload with its charts and numbers, then the GPU's fixed
costs and the model built from them, CPU thread scaling, what did not run, and the hardware.
Every number says whose measurement it is (this run or the reference run) and carries its
noise: the spread of the repetitions where there are several, a mark where there are too few.

A section is made in three steps: its record (`speedups.topic_curves`, `gpu_time.Breakdown`,
`resources.Allocation`, `resources.Energy`, ...), then its words and the charts it asks for
(`pages`), then (here, for every section at once) the charts drawn; the medians of too few
repetitions the report names come from the same data. Nothing here formats
markup: the templates escape every text for HTML or Markdown.
"""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

import pandas as pd

from ..conditions import CONDITION_FIGURES, UNKNOWN
from ..wording import describe_conditions, note_lines
from ..policy import DISTURBED_ROW, HEADLINE_RULE, LIST, UNKNOWN_CONDITIONS, USE, action
from ..table import REFERENCE_RUN, THIS_RUN, Table, short_cpu_name, short_gpu_name
from .charts import Chart, draw
from .context import Context, Drawing, Thin
from .gpu_time import gpu_time
from .pages import Labels, one_sided_rows, page, topic_page
from .resources import resources
from .roofline_chart import draw_roofline
from .one_side import one_sides
from .roofs import rooflines
from .speedups import speedups
from .topics import CHARTS, Topic, committed_gpu_reference
from .words import DISTURBED_MARK, FEW_MARK, NOISY_MARK, cells, context_text, say


def _sections(
    ctx: Context, labels: Labels
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Thin]:
    """The answer's rows, the sections in the reader's order with their charts drawn, and whose
    medians of too few repetitions they state."""
    found = speedups(ctx)
    others, thin = resources(ctx, found.pairs)
    answer, sections = [], []
    for topic in found.topics:
        rows, shown = topic_page(ctx, labels, topic)
        answer += rows
        sections += [shown] if shown is not None else []
    # The workloads one side only measured: a section each; those no topic answers are listed
    # in the answer with that side.
    covered = {t.topic.cpu.get("workload") for t in found.topics}
    one_side = one_sides(ctx.summary)
    answer += one_sided_rows(ctx, labels, [f for f in one_side if f.workload not in covered])
    records = one_side + gpu_time(ctx) + rooflines(ctx.summary) + others
    sections += [page(ctx, labels, record) for record in records]
    # The charts, drawn in one step once every section has said which it shows.
    drawn = [{**s, "charts": [_draw(ctx, labels, d) for d in s["charts"]]} for s in sections]
    return answer, drawn, found.thin | thin


_FIELDS = {f.name for f in fields(Chart)}


def machine_labels(table: Table) -> Labels:
    """Per machine: its CPU and GPU names and whose measurement each side is."""
    keys = ("cpu", "gpu", "gpu_where", "cpu_where", "pair")
    return {
        int(i): dict(zip(keys, say("machine_labels", m=m, cpu=short_cpu_name(m["cpu"]),
                                   gpu=m["gpu"] and short_gpu_name(m["gpu"]), this_run=THIS_RUN,
                                   reference_run=REFERENCE_RUN)))
        for i, m in table.machines.iterrows()
    }  # fmt: skip


def _draw(ctx: Context, labels: Labels, drawing: Drawing) -> dict[str, str]:
    """topics.CHARTS[name] drawn from `data` into `out` in the words of its macro
    (templates/words.j2), as the document names it; without a subtitle of its own, the one that
    says whose numbers it shows: both sides of one machine (its CPU's alone without `gpu`), or
    the machines overlaid."""
    name, given = drawing.name, drawing.given
    named = list(labels.values())
    subtitle = "".join(say("subtitle", labels=named, several=ctx.several, gpu=drawing.gpu))
    if name == "roofline":  # its own kind of chart: ceilings as lines, rows as points
        words = dict(line.split(": ", 1) for line in say("chart_roofline", c=given))
        stem = draw_roofline(given["view"], words["title"], subtitle, ctx.out, given["stem"])
        return {"png": f"{stem}.png", "svg": f"{stem}.svg", "alt": words["title"],
                "caption": words["caption"]}  # fmt: skip
    spec = {**CHARTS[name], **{k: v for k, v in given.items() if k in _FIELDS}}
    spec = {k: v.format(**given) if isinstance(v, str) else v for k, v in spec.items()}
    words = dict(line.split(": ", 1) for line in say(f"chart_{name}", c=given))
    caption = words.pop("caption")
    chart = Chart(**{"subtitle": subtitle, **words, **spec})
    draw(chart, drawing.data, ctx.out)
    return {"png": f"{chart.stem}.png", "svg": f"{chart.stem}.svg", "alt": chart.title,
            "caption": caption}  # fmt: skip


def _appendix(ctx: Context) -> dict[str, Any]:
    """The hardware and software of every run, a column each, and all their context keys."""
    columns: list[tuple[str, dict[str, Any]]] = []  # each column's header and context
    for _, m in ctx.table.machines.iterrows():
        files = [[ctx.file_names[f] for f in m.get(k) or []] for k in ("files", "gpu_files")]
        devices = short_cpu_name(m["cpu"]), short_gpu_name(m["gpu"] or "")
        headers = say("appendix_headers", m=m, cpu=devices[0], gpu=devices[1], files=files[0],
                      gpu_files=files[1], reference_run=REFERENCE_RUN)  # fmt: skip
        columns += zip(headers, (m["context"], m["gpu_context"]))
    rows = []
    for name, key, unit in cells("context_rows"):
        values = [context_text(context.get(key), unit) for _, context in columns]
        if any(values):
            rows.append([name] + [v or "—" for v in values])
    raw = [{"header": h, "text": json.dumps(c, indent=1, sort_keys=True)} for h, c in columns]
    return {"headers": [""] + [h for h, _ in columns], "rows": rows, "raw": raw}


def reference_warning(table: Table) -> list[str]:
    """Said first on the terminal: that every GPU number of the report is another run's, or
    that it has none and how to borrow the committed run's."""
    m = table.machines.iloc[0]
    if not m["gpu_reference"]:
        return no_gpu_suggestion(table)
    return say("reference_warning", m=m, files=", ".join(Path(f).name for f in m["gpu_files"]))


def _made_by_hand(table: Table) -> list[str]:
    """Test data says so in its context (`generated_by`); the report says it first."""
    contexts = [*table.machines["context"], *table.machines["gpu_context"]]
    notes: dict[str, str] = {}  # each note once, whatever its case
    for note in filter(None, (c.get("generated_by") for c in contexts)):
        notes.setdefault(str(note).lower(), note)
    return say("made_by_hand", notes=list(notes.values()))


def _thin_text(ctx: Context, thin: Thin) -> str:
    """Whose medians have too few repetitions (which run, which side, which files), and what
    can be done about it: this run's rows can be rerun; the reference run's cannot, from here."""
    said = []
    for where in (THIS_RUN, REFERENCE_RUN):
        sides = sorted({side.upper() for w, side, _ in thin if w == where})
        files = sorted({ctx.file_names.get(f, Path(f).name) for w, _, f in thin if w == where})
        said += [{"where": where, "sides": sides, "files": files}] if sides else []
    same_host = ctx.table.machines.iloc[0].get("gpu_same_host")
    return "".join(say("thin", thin=said, same_host=same_host))


def conditions_text(table: Table, summary: pd.DataFrame) -> str:
    """The report's first line on the measurement conditions: the run was disturbed (how many
    repetitions, by what, by how much, and what the numbers are made of), or "conditions
    unknown" once for files without condition counters; "" for a quiet run."""
    rows = table.rows
    if rows.empty or "conditions" not in rows:
        return ""
    said_by = [k for k in ("disturbed", "disturbed_by", *CONDITION_FIGURES) if k in rows]
    counters = [r.dropna().to_dict() for _, r in rows[said_by].iterrows()]
    said, line = [], describe_conditions(counters)
    if line is not None and action("report", DISTURBED_ROW).kind == USE:
        cleaned = int((summary["disturbed_left_out"] > 0).sum())
        said += say("disturbed_run", line=line, rule=HEADLINE_RULE, cleaned=cleaned,
                    marked=int(summary["_disturbed"].sum()), mark=DISTURBED_MARK)  # fmt: skip
    unknown = rows.loc[rows["conditions"] == UNKNOWN, "file"].nunique()
    if unknown and action("report", UNKNOWN_CONDITIONS).kind == LIST:
        said += say("unknown_conditions", files=unknown, several=unknown > 1)
    return " ".join(said)


def _speedup_definition(answer: list[dict[str, Any]], topics: tuple[Topic, ...]) -> str:
    """What each side of the answer's speedups is, once per kind of compared time."""
    shown = {a["anchor"] for a in answer}
    sides = dict.fromkeys((t.cpu_time_name, t.gpu_time_name) for t in topics if t.id in shown)
    return "".join(say("speedup_definition", sides=list(sides))) if sides else ""


def no_gpu_suggestion(table: Table) -> list[str]:
    """A report without any GPU row: the one line that gets the committed GPU side."""
    if len(table.rows) and (table.rows["backend"] == "gpu").any():
        return []
    inputs = " ".join(str(f) for m in table.machines.itertuples() for f in m.files)
    return say("no_gpu", inputs=inputs, reference=" ".join(committed_gpu_reference()))


def build_document(table: Table, out: Path) -> dict[str, Any]:
    """Every chart written into `out`, and the document (plain data) for the templates."""
    ctx, labels = Context.of(table, out), machine_labels(table)
    answer, sections, thin = _sections(ctx, labels)
    # An answer row's lines (its paths, else itself) and whether its section is there to link to.
    ids = {s["id"] for s in sections}
    for row in answer:
        lines = row["paths"] or [dict(row)]
        row.update(lines=lines, lines_count=len(lines), linked=row["section"] in ids)
    m = table.machines.iloc[0]
    files = ", ".join(ctx.file_names[f] for f in m["gpu_files"]) if m["gpu_reference"] else ""
    reference = "".join(say("reference", m=m, files=files, gpu=labels[0]["gpu"]))
    names = sorted({ctx.file_names[f] for f in table.rows.get("file", [])})
    measured = table.rows[["machine", "name", "label"]].drop_duplicates()
    statuses = table.problems["status"].value_counts().sort_index().items()
    return {
        "headline": "; ".join(n["pair"] for n in labels.values()),
        "inputs": "".join(say("inputs", names=names, measured=len(measured), statuses=statuses)),
        "reference": reference,
        "suggestion": "; ".join(no_gpu_suggestion(table)),
        # A run that did not finish is said first, before the answer it limits.
        "cut_off": note_lines(table.cut_off),
        "warnings": _made_by_hand(table)
        + [w for w in note_lines(table.said("report")) if w not in note_lines(table.cut_off)],
        "answer": answer,
        "thin": _thin_text(ctx, thin),
        "speedup_definition": _speedup_definition(answer, ctx.topics),
        "marks": {"few": FEW_MARK, "noisy": NOISY_MARK, "disturbed": DISTURBED_MARK},
        "conditions": conditions_text(table, ctx.summary),
        "sections": sections,
        "hardware_number": len(sections) + 1,  # the appendix's number in the contents
        "appendix": _appendix(ctx),
    }
