"""The one renderer of a verdict.Judgement, whichever way its samples were drawn: the terminal
text (templates/terminal.txt.j2), the Markdown of a pull-request comment (templates/compare.md.j2)
and the --json document. Each renders a frozen record computed here from the judgement (Page for
independent repetitions, PairedPage for pairs, with their Row, Group, PairRow and GateLine), which
decides every verdict word, count, percentage and which line applies; every sentence is a macro
of templates/words.j2, called with plain values.

A repeated reason is said once: benchmarks that share a reason (one skip message, "not enough
samples", "only in the contender", one error message) are one line with a count; their names are
listed once, in the terminal only with --verbose and in the Markdown inside a folded <details>
block. Failures are always named. --quiet prints the failures and one summary line.

Every piece of data goes through an escape: in the Markdown escape.md_text or escape.md_code (a
file cannot inject a line, a heading, a fake gate verdict or HTML into a pull-request comment); in
the terminal escape.one_line, the template's `finalize` (a message cannot forge a line of the log).

The templates, each given the judgement `j` and its record `p` (Page, or PairedPage for pairs):
compare.md.j2 (render_markdown) puts the verdict first, then what needs attention, the unchanged
rest folded away; the numbers and verdicts in its rows are the tool's own formatting. In
terminal.txt.j2 (render_terminal) every {{ }} is folded to one line but what `paint` coloured;
the table and the hardware box come laid out. error.md.j2 (render_error) is what the Markdown
says when the judgement could not be made at all. Block tags sit on lines of their own, which
trim_blocks removes, so every other line is a line of the output.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from .. import schema
from ..escape import one_line
from ..stats import repetitions_needed
from ..templating import Words
from ..wording import cut_off_words
from .stats import AMBIGUOUS, CHANGED, FASTER, FEW, INVALID, NOISY, SAME, SLOWER, MetricResult
from .verdict import FAILED, INCOMPLETE, Judgement, Verdict
from .words import Painted, by_message, templates, worded

# A metric's verdict in the tables, where it is not the verdict's own word.
_VERDICT_TEXT = {SLOWER: "SLOWER", NOISY: "too noisy to judge", FEW: "not enough samples"}
_VERDICT_TEXT |= {CHANGED: "CHANGED WORK", INVALID: "INVALID VALUES"}
_ANSI = dict.fromkeys((SLOWER, CHANGED, INVALID), "31;1") | dict.fromkeys((NOISY, FEW), "33")
_ANSI[FASTER] = "32"
# Units of format_value, largest first; a value below the last still takes the last.
_SECONDS = ((1.0, " s"), (1e-3, " ms"), (1e-6, " us"), (1e-9, " ns"))
_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))
_HEADER = ("benchmark / metric", "baseline", "contender", "ratio", "cv base/new", "p", "verdict")
_GATE_WORDS = {0: "PASS", 1: "FAIL", 2: "CANNOT JUDGE", 3: "NOT RESOLVED"}
_GATE_COLOUR = {"PASS": FASTER, "FAIL": SLOWER}  # any other: FEW's
# The summary's counts, in the order said (words.j2's HEADLINE words them), and the pairs' tally.
_HEADLINE = ("slower", CHANGED, INVALID, FAILED, "skipped", FASTER, NOISY, "not_enough_samples")
_HEADLINE += ("not_judged_disturbed", SAME, "only_in_baseline", "only_in_contender")
_NOT_COMPARED = ("failed_in_baseline", "skipped_in_baseline", "invalid_in_baseline")
_TALLY = (SLOWER, FAILED, "missing", INVALID, "incomplete", AMBIGUOUS, FEW, SAME, FASTER)
_TALLY += ("skipped", "new", "failed in the base")
words = Words(templates, "words.j2")


@dataclass(frozen=True)
class Row:
    """A row of the tables: the benchmark's name on its first row (else None), the metric's
    name, its numbers (baseline, contender, ratio, cv, p), its verdict in words, whether it
    fails, and its verdict (which colours the terminal's line)."""

    name: str | None
    metric: str
    numbers: tuple[str, ...]
    verdict: str
    fails: bool
    code: str


@dataclass(frozen=True)
class Group:
    """A line of the failures or of the information, with the names under it (`listed`: those
    the terminal lists) and, for benchmarks compared but not judged, their rows."""

    line: str
    names: tuple[str, ...] = ()
    listed: tuple[str, ...] = ()
    rows: tuple[Row, ...] = ()


@dataclass(frozen=True)
class Page:
    """What the terminal text and the Markdown of independent repetitions say: the gate's word,
    its reason and colour, the summary, the rule, the warnings (the judgement's, then the
    disturbed repetitions' where there are any), each side's (which, path, context pieces), the terminal's DIFFERENT HARDWARE box (empty on one
    machine), the failures and information, the terminal's laid-out table (line, verdict) and
    the Markdown's rows that need attention, the unchanged ones and the metrics' notes."""

    word: str
    reason: str
    colour: str
    headline: str
    rule: str
    warnings: tuple[str, ...]
    sides: tuple[tuple[str, str, tuple[str, ...]], ...]
    banner: tuple[str, ...]
    failures: tuple[Group, ...]
    info: tuple[Group, ...]
    table: tuple[tuple[str, str], ...]
    attention: tuple[Row, ...]
    unchanged: tuple[Row, ...]
    n_unchanged: int
    notes: tuple[tuple[str, str, str], ...]


@dataclass(frozen=True)
class GateLine:
    """The paired gate's line: which outcome it states (`kind`: fail, unusable, busy, wide,
    unresolved, ambiguous, pass_ambiguous, pass), the margin, the slowdown no passed interval may
    reach and half the margin (under which AMBIGUOUS estimates pass), in percent, and (count,
    verdict) of each verdict present. Each figure the line states is a field computed in
    gate_record: `allowed_pct` is the largest slowdown the AMBIGUOUS rows' intervals still allow
    (the highest upper end, in percent), what a PASS did not rule out; None unless the line
    is a PASS with AMBIGUOUS rows whose intervals reach above zero."""

    kind: str
    margin_pct: float
    unresolved_pct: float
    half_margin_pct: float
    tally: tuple[tuple[int, str], ...]
    allowed_pct: float | None = None


@dataclass(frozen=True)
class PairedPage:
    """What the pairs' terminal text and Markdown say beside the judgement's own figures: the
    gate line, the benchmarks the terminal shows (--quiet: what fails or is unresolved) and the
    width of their names."""

    gate: GateLine
    shown: tuple[Verdict, ...]
    width: int


def format_value(metric: str, value: float) -> str:
    """A median for humans: times with a unit, rates with an SI prefix."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    if metric == "time/ref":
        return f"{value:.4g}"
    units = _SECONDS if metric == "time" or schema.is_seconds(metric) else _SI
    factor, unit = next(((f, u) for f, u in units if abs(value) >= f), units[-1])
    return f"{value / factor:.4g}{unit}"


def metric_name(m: MetricResult) -> str:
    names = {"time": "time", "time/ref": "time / reference"}
    arrow = {"higher": " (higher better)", "lower": " (lower better)", "exact": " (exact)"}
    return names.get(m.metric, m.metric + arrow.get(m.better, ""))


def _row(name: str | None, m: MetricResult) -> Row:
    """The metric's name, numbers and verdict: the same cells in both tables."""
    if m.better == "exact":
        ratio = {SAME: "=", CHANGED: "differs"}.get(m.verdict, "-")
    else:
        ratio = "-" if math.isnan(m.ratio) or math.isinf(m.ratio) else f"{m.ratio:.3f}x"
    cv = " / ".join("-" if math.isnan(cv) else f"{cv:.1%}" for cv in (m.base.cv, m.cont.cv))
    verdict = _VERDICT_TEXT.get(m.verdict, m.verdict)
    if m.verdict == FEW:
        verdict += f" (n={m.base.n} vs {m.cont.n})"  # what it needs: the grouped line says it
    if not m.gating and m.verdict in (SLOWER, FASTER, NOISY, INVALID):
        verdict = verdict.lower() + " (not gated)"
    medians = (format_value(m.metric, m.base.median), format_value(m.metric, m.cont.median))
    p = "-" if m.p_value is None else f"{m.p_value:.3g}"
    return Row(name, metric_name(m), (*medians, ratio, cv, p), verdict, m.fails, m.verdict)


def _rows(benches: Sequence[Verdict]) -> tuple[Row, ...]:
    """Every table row: the benchmark's name on its first; an exact counter only when it
    differs (else it is clutter)."""
    rows: list[Row] = []
    for bench in benches:
        shown = [m for i, m in enumerate(bench.metrics) if i == 0 or m.better != "exact" or m.fails]
        rows += [_row(bench.name if i == 0 else None, m) for i, m in enumerate(shown)]
    return tuple(rows)


def _table(benches: Sequence[Verdict]) -> tuple[tuple[str, str], ...]:
    """The terminal table's lines, each with the verdict that colours it; none without rows."""
    rows = [((one_line(r.name) if r.name else "    " + one_line(r.metric), *r.numbers, r.verdict),
             r.code) for r in _rows(benches)]  # fmt: skip
    if not rows:
        return ()
    widths = [max(len(r[i]) for r in [_HEADER] + [cells for cells, _ in rows]) for i in range(7)]

    def fmt(cells: Sequence[str]) -> str:
        numbers = [c.rjust(width) for c, width in zip(cells[1:-1], widths[1:])]
        return "  ".join([cells[0].ljust(widths[0]), *numbers, cells[-1]])

    head = [(fmt(_HEADER), ""), ("-" * (sum(widths) + 2 * 6), "")]
    return tuple(head + [(fmt(cells), verdict) for cells, verdict in rows] + [("", "")])


def _not_judged(j: Judgement) -> str:
    """Why nothing was judged (exit 2 or 3), the words after "cannot judge: "."""
    skipped = j.of("skipped")
    kind, n = ("disturbed", j.disturbed) if j.disturbed else ("few", j.unjudged)
    kind, n = (kind, n) if n else ("none", skipped)
    why = skipped[0].why if skipped else None
    return words("not_judged", kind=kind, n=len(n), needed=j.repetitions_needed, why=why)


def _reason(j: Judgement) -> str:
    """The gate line's reason: what passed, why nothing was judged, or what failed."""
    if j.exit_code == 0:
        n = dict(judged=len(j.judged), unjudged=len(j.unjudged), disturbed=len(j.disturbed))
        return words("passed", **n)
    if j.exit_code in (2, 3):
        return _not_judged(j)
    errors, every = by_message(j, FAILED), j.all_failed
    regressed = 0 if every else len([b for b in j.failing if b.verdict != FAILED])
    failing = 0 if every else sum(len(names) for _, names in errors)
    message = errors[0][0] if len(errors) == 1 else None
    missing = len(j.only_in_baseline) if j.missing_fails else 0
    return words("regressed", every=every, n=len(j.benchmarks), message=message, errors=len(errors),
                 regressed=regressed, failing=failing, missing=missing, cut=bool(j.cut_off),
                 cut_words=cut_off_words(j.contender))  # fmt: skip


def _headline(j: Judgement) -> str:
    s = j.summary()
    counts = [(key, s[key]) for key in _HEADLINE if s[key]]
    for kind in _NOT_COMPARED:
        n = sum(len(group["names"]) for group in j.not_compared if group["kind"] == kind)
        counts += [(kind, n)] if n else []
    return words("headline", compared=s["compared"], counts=counts)


def _rule(j: Judgement) -> str:
    c, t, refs = j.config, j.config.thresholds, j.reference
    norm = c.normalize.thresholds if c.normalize is not None and refs else None
    ref = refs[0] if len(refs) == 1 else None
    return words("thresholds", c=c, t=t, needed=repetitions_needed(t.alpha),
                 overrides=len(c.overrides), norm=norm, ref=ref, refs=len(refs))  # fmt: skip


def _failures(j: Judgement) -> list[Group]:
    """Every failure, in the order a reader needs them; the terminal lists every name."""
    errors, missing = by_message(j, FAILED), tuple(j.only_in_baseline) if j.missing_fails else ()
    regressions = [b for b in j.failing if b.verdict != FAILED]
    groups = [Group(words("regression", b=b, why=b.why or "", metric_name=metric_name))
              for b in regressions]  # fmt: skip
    every = j.all_failed and len(errors) == 1
    for message, names in errors:
        line = words("now_fail", every=every, n=len(names), message=message)
        groups.append(Group(line, tuple(names), tuple(names)))
    groups += [Group(words("fail", why=j.cut_off))] if j.cut_off else []
    return groups + ([Group(words("missing", n=len(missing)), missing, missing)] if missing else [])


def _info(j: Judgement, verbose: bool) -> list[Group]:
    """Every group that is information, not a failure; the terminal lists the names with
    --verbose, and always the figures of the benchmarks measured while disturbed."""
    lines = [("skipped", len(names), why, names, ()) for why, names in by_message(j, "skipped")]
    lines += [(g["kind"], len(g["names"]), g["reason"], g["names"], ()) for g in j.not_compared]
    unjudged = sorted(j.unjudged, key=lambda b: b.needed)
    for needed, group in itertools.groupby(unjudged, key=lambda b: b.needed):
        benches = list(group)
        fewest = min(min(b.metrics[0].base.n, b.metrics[0].cont.n) for b in benches)
        names = [b.name for b in benches]
        lines.append(("few", len(benches), (fewest, needed), names, _rows(benches)))
    lines += [("disturbed", len(j.disturbed), None, [_figures(b) for b in j.disturbed], ())]
    allowed = 0 if j.missing_fails else len(j.only_in_baseline)
    lines += [("allowed", allowed, None, j.only_in_baseline, ())]
    lines += [("new", len(j.only_in_contender), None, j.only_in_contender, ())]
    return [Group(words("group", kind=kind, n=n, why=why), tuple(names),
                  tuple(names) if verbose or kind == "disturbed" else (), rows)
            for kind, n, why, names, rows in lines if n]  # fmt: skip


def _figures(b: Verdict) -> str:
    d = b.disturbance
    base, cont = (format_value("time", x) for x in (d.baseline_median_all, d.contender_median_all))
    ratio = None if math.isnan(d.ratio_all) else d.ratio_all
    return words("disturbed_figures", b=b, base=base, cont=cont, ratio=ratio)


def _banner(j: Judgement) -> tuple[str, ...]:
    """The terminal's box around the hardware that differs; none on one machine."""
    if not j.hardware_differences:
        return ()
    lines = [one_line(f"  {k}: {b}  ->  {c}") for k, b, c in j.hardware_differences]
    lines.insert(0, words("different_hardware"))
    width = max(map(len, lines)) + 6
    return ("!" * width, *(f"!! {line.ljust(width - 6)} !!" for line in lines), "!" * width)


def _side_pieces(which: str, report: Any) -> tuple[str, str, tuple[str, ...]]:
    """A side's line: which, its path and its context's pieces."""
    ctx = report.context
    commit, cpu, gpu = (ctx.get(k) or "?" for k in ("gpubench_git_commit", "cpu_model", "gpu"))
    pieces = (f"commit {commit}", str(ctx.get("date") or "no date"), f"cpu {cpu}", f"gpu {gpu}")
    return which, report.path, pieces


def page(j: Judgement, verbose: bool = False) -> Page:
    """The record of independent repetitions' texts (`verbose`: the terminal lists every name)."""
    measured = [b for b in worded(j).benchmarks if b.metrics]
    attention = [b for b in measured if b.verdict not in (SAME, FEW)]
    unchanged = [b for b in measured if b.verdict == SAME]
    notes = [
        (b.name, m.metric, "; ".join(m.notes)) for b in attention for m in b.metrics if m.notes
    ]
    (base, cont), word = j.disturbed_repetitions, _GATE_WORDS[j.exit_code]
    conditions = words("conditions", base=base, cont=cont, n=len(j.disturbed))
    warnings = (*j.warnings, conditions) if base or cont else tuple(j.warnings)
    sides = (_side_pieces("baseline", j.baseline), _side_pieces("contender", j.contender))
    return Page(word, _reason(j), _GATE_COLOUR.get(word, FEW), _headline(j), _rule(j), warnings, sides,
                _banner(j), tuple(_failures(j)), tuple(_info(j, verbose)), _table(measured),
                _rows(attention), _rows(unchanged), len(unchanged), tuple(notes))  # fmt: skip


def gate_record(j: Judgement) -> GateLine:
    """Which line the paired gate states, with its figures."""
    busy = "busy" if j.disturbed_few else "wide" if j.wide_open else "unresolved"
    passed = "ambiguous" if j.maybe_slower else "pass_ambiguous" if j.of(AMBIGUOUS) else "pass"
    kind = {1: "fail", 2: "unusable", 3: busy}.get(j.exit_code, passed)
    tally = tuple((len(j.of(verdict)), verdict) for verdict in _TALLY if j.of(verdict))
    r = j.rules
    # What a PASS with AMBIGUOUS rows did not rule out: their highest interval end.
    highs = [b.estimate.changes[2] for b in j.of(AMBIGUOUS) if b.estimate]
    allowed = max(highs, default=0.0) if kind in ("ambiguous", "pass_ambiguous") else 0.0
    allowed = allowed if allowed > 0 else None  # intervals all below zero allow no slowdown
    return GateLine(
        kind, r.margin * 100, r.unresolved_at * 100, r.half_margin * 100, tally, allowed
    )


def paired_page(j: Judgement, quiet: bool = False) -> PairedPage:
    worded(j)
    unsettled = (AMBIGUOUS, INCOMPLETE)
    shown = [b for b in j.benchmarks if not quiet or b.fails or b.verdict in unsettled]
    # Never empty: pairs with no benchmark in common are unusable input (paired.judge_reports).
    return PairedPage(gate_record(j), tuple(shown), max(len(b.name) for b in j.benchmarks))


def gate_line(j: Judgement) -> str:
    """The pairs' gate line (the --json's "gate")."""
    return words("gate_line", g=gate_record(j))


def warning(j: Judgement) -> str:
    """The line on stderr of a judgement that is not a verdict (exit 2 or 3)."""
    worded(j)
    kind = "error" if j.exit_code == 2 else "warning" if j.paired else "busy"
    line = gate_line(j) if j.paired else words("cannot_judge", why=_not_judged(j))
    return words("warning", kind=kind, line=line)


def render_terminal(j: Judgement, color: bool, quiet: bool, verbose: bool) -> str:
    def paint(text: str, verdict: str) -> str:
        code = _ANSI.get(verdict)
        return Painted(f"\x1b[{code}m{one_line(text)}\x1b[0m") if color and code else text

    env = templates(terminal=True)
    env.filters["paint"] = paint
    p = paired_page(j, quiet) if j.paired else page(j, verbose)
    return env.get_template("terminal.txt.j2").render(j=j, p=p, quiet=quiet)


def render_markdown(j: Judgement) -> str:
    """A PR comment: verdict first, then what needs attention, the unchanged rest folded away."""
    p = paired_page(j) if j.paired else page(j)
    text = templates().get_template("compare.md.j2").render(j=j, p=p)
    return text.rstrip() + "\n"


def render_error(line: str, code: int, paired: bool) -> tuple[str, dict[str, Any]]:
    """The Markdown and the --json document when the judgement could not be made at all."""
    error = templates().get_template("error.md.j2")
    markdown = error.render(line=line, paired=paired, word=_GATE_WORDS[code])
    return markdown, {"exit_code": code, **({"paired": True} if paired else {}), "error": line}


def _side(report: Any) -> dict[str, Any]:
    ctx, stop = report.context, report.interrupted
    doc = {"path": report.path, "git_commit": ctx.get("gpubench_git_commit")}
    doc |= {key: ctx.get(key) for key in ("date", "host_name", "cpu_model", "gpu")}
    doc |= {"recovered_from_truncation": report.recovered_from_truncation, "interrupted": None}
    if stop is not None:
        doc["interrupted"] = dict(signal=stop.signal, benchmarks_finished=stop.finished,
                                  benchmarks_selected=stop.selected)  # fmt: skip
    return {**doc, "state": report.state}


def as_doc(j: Judgement) -> dict[str, Any]:
    """The --json document."""
    benchmarks = [b.as_dict(j.paired) for b in worded(j).benchmarks]
    if j.paired:
        doc = {"exit_code": j.exit_code, "gate": gate_line(j), "paired": True}
        doc |= {"baseline": j.baseline.path, "contender": j.contender.path, "clock": j.clock}
        doc |= {"rules": j.rules.as_dict(), "summary": j.summary(), "notes": j.warnings}
        doc |= {"wall_seconds": j.wall_seconds, "bench_seconds": j.bench_seconds}
        doc |= {"benchmarks": benchmarks}
    else:
        hardware, environment = (
            [{"key": k, "baseline": b, "contender": c} for k, b, c in rows]
            for rows in (j.hardware_differences, j.environment_differences)
        )
        doc = {"schema": "gpubench-compare/1", "exit_code": j.exit_code}
        doc["cannot_judge"] = words("cannot_judge", why=_not_judged(j)) if j.cannot_judge else None
        doc["repetitions_needed"] = j.repetitions_needed
        doc |= {"baseline": _side(j.baseline), "contender": _side(j.contender)}
        doc |= {"hardware_differs": bool(hardware), "hardware_differences": hardware}
        doc |= {"environment_differences": environment, "time": j.clock}
        doc |= {"normalize_reference": j.reference, "config": j.config.as_dict()}
        # Before --allow-missing, failing on missing benchmarks was opt-in.
        doc |= {"allow_missing": j.allow_missing, "fail_on_missing": not j.allow_missing}
        doc |= {"cut_off": j.cut_off, "summary": j.summary(), "benchmarks": benchmarks}
        doc |= {"only_in_baseline": j.only_in_baseline, "only_in_contender": j.only_in_contender}
        doc |= {"not_compared": j.not_compared, "warnings": j.warnings}
    # NaN and infinity are not JSON: null, so every JSON parser can read the output.
    return json.loads(json.dumps(doc), parse_constant=lambda _: None)
