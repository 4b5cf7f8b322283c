"""The sections in words: each section's record (speedups, gpu_time, resources) as the section
the templates render, its paragraphs, tables and notes (`words`), and the charts it asks for
(`Drawing`, named and drawn by build).

A page names the machines by their labels (build.machine_labels: `pair`, `gpu_where`, ...) and
the sizes, parts and sides of its charts by templates/words.j2's names; it decides nothing its
record has not decided.
"""

from __future__ import annotations

from typing import Any, Callable

import pandas as pd

from ..units import fmt_size
from .analysis import PARTS, PathCurve
from .context import Context, Drawing
from .gpu_time import Breakdown, FixedCosts, Profile
from .resources import Allocation, Energy, Memory, Peers, Problems, Threads
from .one_side import OneSide
from .one_side import anchor as one_side_anchor
from .roofs import MachineRoofline
from .speedups import TopicCurves
from .topics import MODEL_ERROR_SAID, Topic
from .words import WORDS, named, plain, say, section, table_of, threads_text

Labels = dict[int, dict[str, str]]  # per machine index: build.machine_labels
Section = dict[str, Any]

# --- the answer and a section per topic ------------------------------------------------------

_ANSWER = ("wins", "crossover", "ends", "why", "cpu_config", "measured")


def _gap(side: str = "", path: str = "") -> dict[str, str]:
    """An answer line without a speedup: no rows of one side, none of a GPU path, or no size
    measured on both sides."""
    return dict(zip(_ANSWER, say("answer_gap", side=side, path=path)))


def _path_line(topic: Topic, pc: PathCurve) -> dict[str, Any]:
    """One GPU path of a topic against the CPU: its line of the answer; `stated`: it has a CPU
    side (its facts), so the topic's paragraphs state it."""
    line = {"path": pc.path.name, "meaning": pc.path.meaning, "stated": pc.facts is not None}
    if pc.facts is None:
        return line | _gap(path=pc.path.name if pc.gpu is None else "")
    threads = sorted({threads_text(t) for t in pc.facts["threads"]}, key=str.lower)
    return line | dict(zip(_ANSWER, say("answer_line", topic=topic, f=pc.facts, threads=threads)))


def _answer_row(ctx: Context, labels: Labels, title: str, anchor: str, machine: int) -> Section:
    """An answer row of a machine, its machine named where there are several; no lines yet. It
    links to its own section (`section`) unless told another."""
    title += f" ({labels[machine]['pair']})" if ctx.several else ""
    return {"workload": title, "anchor": anchor, "section": anchor, "paths": [], "stated": False}


def _answer_rows(ctx: Context, labels: Labels, found: TopicCurves) -> list[dict[str, Any]]:
    """The topic's rows of the answer table, one per machine, a line per GPU path. The row's own
    fields are its last path's."""
    rows, topic = [], found.topic
    for mt in found.machines:
        row = _answer_row(ctx, labels, topic.title, topic.id, mt.machine)
        if mt.missing_side:
            # It links to the workload's own section where its machine measured it on one side.
            workload = topic.cpu.get("workload") or topic.gpu.get("workload")
            row.update(_gap(side=mt.missing_side), section=one_side_anchor(mt.machine, workload))
        else:
            row["paths"] = [_path_line(topic, pc) for pc in mt.paths]
            row.update({k: v for k, v in row["paths"][-1].items() if k not in ("path", "meaning")})
        rows.append(row)
    return rows


def one_sided_rows(ctx: Context, labels: Labels, found: list[OneSide]) -> list[dict[str, Any]]:
    """The answer's rows of the workloads measured on one side only that no topic answers: each
    says which side is missing and links to the workload's section."""
    return [
        _answer_row(ctx, labels, one.workload, one.anchor, one.machine) | _gap(side=one.missing)
        for one in found
    ]


def topic_page(
    ctx: Context, labels: Labels, found: TopicCurves
) -> tuple[list[dict[str, Any]], Section | None]:
    """The topic's rows of the answer, and its section: its speedup and time charts and table,
    and the answer's lines as sentences (None where no machine has a curve of the topic's last
    GPU path)."""
    topic, curve, others = found.topic, found.curve, found.others
    answer = _answer_rows(ctx, labels, found)
    if curve is None:
        return answer, None
    line = curve["machine"].map(lambda m: labels[int(m)]["pair"])
    series = topic.series
    if series is not None:
        name = named("chart_names", "series")
        width = curve[series].map(lambda v: name.format(key=series, value=fmt_size(v)))
        line = line + named("chart_names", "between") + width if ctx.several else width
    curve = curve.assign(line=line)
    # The paragraphs state the rows and lines that have a CPU side.
    stated = [a | {"paths": [p for p in a["paths"] if p["stated"]]} for a in answer if a["stated"]]
    paragraphs = say("topic_paragraphs", answer=stated)
    lines = ctx.several or series is not None
    given = dict(topic=topic, path=topic.paths[-1], series="line" if lines else None)
    charts = [Drawing("speedup", curve, given), _time_chart(ctx, topic, curve, others)]
    if found.heatmap:
        charts.append(Drawing("heatmap", curve, dict(topic=topic)))
    if found.kernel is not None:
        charts.append(
            Drawing("utilisation", found.kernel, dict(topic=topic, use=topic.utilisation))
        )
    table = table_of("curve_table", topic=topic, curve=curve, others=others, lines=lines)
    return answer, section(topic.id, paragraphs, charts, [table], title=topic.title)


def _time_chart(ctx: Context, topic: Topic, curve: pd.DataFrame, others: list[str]) -> Drawing:
    """Both sides' times against size: what the speedup is a ratio of."""
    names = {k: named("chart_names", k) for k in ("cpu", "gpu", "gpu_path", "between")}
    several_paths = topic.series is None and len(topic.paths) > 1
    gpu = names["gpu_path" if several_paths else "gpu"].format(path=topic.paths[-1].name)
    # A line's machine (and width) go before its side where they tell the lines apart.
    several = topic.series is not None or ctx.several
    before = curve["line"] + names["between"] if several else ""
    # The other paths the answer states (eager), as lines of their own: their medians,
    # without bands. A sweep with series already has a line per width and side; its
    # table carries the other paths instead.
    sides = [("cpu", names["cpu"]), ("gpu", gpu)]
    if topic.series is None:
        sides += [(path, names["gpu_path"].format(path=path)) for path in others]
    lines = []
    for side, name in sides:
        line = curve.assign(side=before + name, hollow=curve[f"{side}_hollow"].eq(True))
        line = line.assign(**{c: curve[f"{side}_{c}"] for c in ("time", "low", "high")})
        lines.append(line.dropna(subset=["time"]))
    return Drawing("time", pd.concat(lines, ignore_index=True), dict(topic=topic))


# --- where the GPU time goes -----------------------------------------------------------------


def breakdown_page(ctx: Context, labels: Labels, found: Breakdown) -> Section:
    """A chart and a table per topic that declares its parts, with sentences where by size."""
    charts, paragraphs, tables = [], [], []
    for shown in found.views:
        view, rows = shown.view, shown.rows
        if shown.ranges is not None:
            ranges, compute = shown.ranges
            paragraphs += say("largest_parts", lead=view.lead, size=view.size, ranges=ranges,
                              compute=compute)  # fmt: skip
        if view.size is not None:
            bar = named("chart_names", "size")
            rows = rows.assign(
                bar=rows[view.size].map(lambda v: bar.format(key=view.size, value=fmt_size(v)))
            )
        rows = rows.assign(pair=rows["machine"].map(lambda m: labels[int(m)]["pair"]))
        parts = [(p, WORDS("part", p=p)) for p in PARTS]
        parts += [("unsplit", WORDS("part", p="compute"))] if shown.unsplit else []
        facet = "pair" if ctx.several else None  # a panel per machine
        given = dict(view=view, title=shown.title, parts=tuple(parts), facet=facet)
        charts.append(Drawing("parts", rows, given))
        tables.append(table_of("parts_table", parts=rows, size=view.size))
    return section("breakdown", paragraphs, charts, tables, notes=say("breakdown_note"))


def profile_page(ctx: Context, labels: Labels, found: Profile) -> Section:
    """Where one training step goes, by kind of operation."""
    profile = found.profile
    given = dict(profile=profile, batch=fmt_size(found.batch), title=profile.chart_title,
                 parts=tuple((k, k) for k in found.kinds))  # fmt: skip
    chart = Drawing("profile", found.parts, given)
    return section(profile.id, charts=[chart], title=profile.title)


def model_page(ctx: Context, labels: Labels, fixed: FixedCosts) -> Section:
    """The fixed GPU costs the probes measured, the copies' bandwidth, and the model's error."""
    model, copies, bias = fixed.model, fixed.copies, fixed.bias
    copy_fits = sorted(model.copies.items())
    tables = [table_of("costs_table", launch=model.launch.items(), copies=copy_fits)]
    charts, paragraphs = [], []
    if fixed.copies_chart:
        copy = named("chart_names", "copy")
        probes = copies[["probe", "host"]].fillna("").values
        names = [copy.format(probe=probe.upper(), host=host) for probe, host in probes]
        charts.append(Drawing("copies", copies.assign(copy=names)))
    if fixed.said is not None:
        before, after = fixed.said
        cost = bias.library_cost_s
        paragraphs = say(
            "bias", said=MODEL_ERROR_SAID, before=before, after=after, library_cost=cost
        )
        tables.append(table_of("bias_table", bands=fixed.bands))
    return section("model", paragraphs, charts, tables, notes=say("model_note"))


# --- what the machines spend beside the speedups ---------------------------------------------


def threads_page(ctx: Context, labels: Labels, found: Threads) -> Section:
    """analysis.thread_scaling as a chart of each workload's largest case and a table."""
    top = found.top
    said = say("threads", worst=top["efficiency"].min(), best=top["efficiency"].max())
    chart = Drawing("threads", found.shown, gpu=False)
    return section("threads", said, [chart], [table_of("threads_table", top=top)])


def peers_page(ctx: Context, labels: Labels, found: Peers) -> Section:
    """The suite's own paths against the same work in PyTorch."""
    tables = [
        table_of("peer_table", peer=peer, keys=keys, curve=curve)
        for peer, keys, curve in found.tables
    ]
    return section("peers", say("peers"), [], tables)


def memory_page(ctx: Context, labels: Labels, found: Memory) -> Section:
    """Measured peak device memory against the model's bytes, and the largest batches."""
    largest = say("largest_batches", rows=found.batches, skipped=found.skipped)
    if found.figures is None:
        return section("memory", largest)
    chart = Drawing("memory", found.agreement)
    table = table_of("memory_table", rows=found.by_distance)
    return section("memory", say("memory", m=found.figures) + largest, [chart], [table])


def _cost(each: pd.Series, call: str, first: Any, last: Any) -> dict[str, Any]:
    """A call's values at its smallest and largest size (None with one size)."""
    return {"call": call, "first": each[first], "last": None if last is None else each[last]}


def allocation_page(ctx: Context, labels: Labels, found: Allocation) -> Section:
    """Each call's cost at the smallest and largest size, what a pool saves, the worst tail."""
    each = pd.Series(plain(found.costs), index=found.costs.index)  # None where missing
    machines = [
        {"where": labels[machine]["gpu_where"], "calls": [_cost(each, *call) for call in calls]}
        for machine, calls in found.machines
    ]
    tail = None if found.tail is None else {**each[found.tail[0]], "ratio": found.tail[1]}
    said = say("allocation", machines=machines, savings=found.savings, tail=tail)
    table = table_of("allocation_table", costs=found.costs)
    return section("allocation", said, [Drawing("allocation", found.costs)], [table])


def energy_page(ctx: Context, labels: Labels, found: Energy) -> Section:
    """Joules per unit of work on each side of the energy pairs; the CPU side's energy where
    recorded, else why not."""
    energy, unit = found.energy, found.energy.unit_name
    said = say("energy", unit=unit, compared=found.compared, sizes=found.sizes,
               reasons=found.reasons, otherwise=energy.cpu_absent, measured=bool(found.pairs),
               too_short=found.too_short, window=found.min_window_s)  # fmt: skip
    rows = [(topic, plain(frame)) for topic, frame in found.pairs]
    tables = [table_of("energy_table", unit=unit, pairs=rows)] if found.pairs else []
    return section(energy.id, said, [], tables, title=energy.title)


def problems_page(ctx: Context, labels: Labels, found: Problems) -> Section:
    """The failed, skipped and invalid benchmarks, a list for each file, status and reason."""
    summaries = say("problem_groups", groups=found.groups)
    details = [{"summary": s, "items": names} for s, names in zip(summaries, found.names)]
    return section("problems", say("problems", count=found.count), details=details)


def roofline_page(ctx: Context, labels: Labels, found: MachineRoofline) -> Section:
    """A machine's rows against its own roofs: the rule, the counts by bound, a chart, a table."""
    machine = labels[found.machine]["pair"]
    given = {"view": found, "machine": machine, "stem": f"roofline_{found.machine}"}
    chart = Drawing("roofline", pd.DataFrame(), given)
    table = table_of("roofline_table", r=found)
    title = "".join(say("roofline_title", machine=machine, several=ctx.several))
    return section(
        f"roofline-{found.machine}", say("roofline", r=found), [chart], [table], title=title
    )


def one_side_page(ctx: Context, labels: Labels, found: OneSide) -> Section:
    """A workload measured on one side: its times against the work per call, a line per path,
    and each row's time at and below its roof."""
    pair = labels[found.machine]["pair"]
    title = "".join(say("one_side_title", f=found, machine=pair, several=ctx.several))
    chart = Drawing("measured", found.rows, dict(f=found), gpu=found.side == "gpu")
    said = say("one_side", f=found)
    table = table_of("one_side_table", rows=found.rows)
    return section(found.anchor, said, [chart], [table], title=title)


# Each section's record, the page that words it.
PAGES: dict[type, Callable[[Context, Labels, Any], Section]] = {
    Breakdown: breakdown_page, Profile: profile_page, FixedCosts: model_page,
    Threads: threads_page, Peers: peers_page, Memory: memory_page,
    Allocation: allocation_page, Energy: energy_page, Problems: problems_page,
    MachineRoofline: roofline_page, OneSide: one_side_page,
}  # fmt: skip


def page(ctx: Context, labels: Labels, record: Any) -> Section:
    """The section of a record of gpu_time's or resources'."""
    return PAGES[type(record)](ctx, labels, record)
