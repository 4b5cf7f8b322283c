"""The one renderer of a verdict.Judgement, whichever way its samples were drawn: the terminal
text (templates/terminal.txt.j2), the Markdown of a pull-request comment (templates/compare.md.j2)
and the --json document; every sentence they share is a macro of templates/words.j2, and so are
the lists of failures and of information lines that both texts lay out.

A repeated reason is said once: benchmarks that share a reason (one skip message, "not enough
samples", "only in the contender", one error message) are one line with a count; their names are
listed once, in the terminal only with --verbose and in the Markdown inside a folded <details>
block. Failures are always named. --quiet prints the failures and one summary line.

Every piece of data goes through an escape: in the Markdown escape.md_text or escape.md_code (a
file cannot inject a line, a heading, a fake gate verdict or HTML into a pull-request comment); in
the terminal escape.one_line, the template's `finalize` (a message cannot forge a line of the log).
"""

from __future__ import annotations

import json
import math
from typing import Any, Iterator, Sequence

from .. import schema
from ..escape import one_line
from .stats import CHANGED, FASTER, FEW, INVALID, NOISY, SAME, SLOWER, MetricResult
from .verdict import Judgement, Verdict
from .words import Painted, say, templates

# A metric's verdict in the tables, where it is not the verdict's own word.
_VERDICT_TEXT = {SLOWER: "SLOWER", NOISY: "too noisy to judge", FEW: "not enough samples"}
_VERDICT_TEXT |= {CHANGED: "CHANGED WORK", INVALID: "INVALID VALUES"}
_ANSI = {
    **dict.fromkeys((SLOWER, CHANGED, INVALID), "31;1"),
    **dict.fromkeys((NOISY, FEW), "33"),
    FASTER: "32",
}
# Units of format_value, largest first; a value below the last still takes the last.
_SECONDS = ((1.0, " s"), (1e-3, " ms"), (1e-6, " us"), (1e-9, " ns"))
_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))
_HEADER = ("benchmark / metric", "baseline", "contender", "ratio", "cv base/new", "p", "verdict")
_GATE_WORDS = {0: "PASS", 1: "FAIL", 2: "CANNOT JUDGE", 3: "NOT RESOLVED"}


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


def _cells(m: MetricResult) -> tuple[str, ...]:
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
    return (metric_name(m), *medians, ratio, cv, p, verdict)


def _rows(benches: Sequence[Verdict]) -> Iterator[tuple[str | None, MetricResult, tuple]]:
    """(benchmark name on its first row else None, metric, cells) for every table row: an exact
    counter only when it differs (else it is clutter)."""
    for bench in benches:
        shown = [m for i, m in enumerate(bench.metrics) if i == 0 or m.better != "exact" or m.fails]
        for i, m in enumerate(shown):
            yield (bench.name if i == 0 else None), m, _cells(m)


def _table(benches: Sequence[Verdict]) -> list[tuple[str, str]]:
    """The terminal table's lines, each with the verdict that colours it; none without rows."""
    rows = [
        ((one_line(name) if name else "    " + one_line(cells[0]), *cells[1:]), m.verdict)
        for name, m, cells in _rows(benches)
    ]
    if not rows:
        return []
    widths = [max(len(r[i]) for r in [_HEADER] + [cells for cells, _ in rows]) for i in range(7)]

    def fmt(cells: Sequence[str]) -> str:
        numbers = [c.rjust(width) for c, width in zip(cells[1:-1], widths[1:])]
        return "  ".join([cells[0].ljust(widths[0]), *numbers, cells[-1]])

    head = [(fmt(_HEADER), ""), ("-" * (sum(widths) + 2 * 6), "")]
    return head + [(fmt(cells), verdict) for cells, verdict in rows] + [("", "")]


def words(sentence: str, j: Judgement) -> str:
    """One sentence of words.j2 about `j`: "warning" (the line on stderr of a judgement that is
    not a verdict), "cannot_judge" (why nothing was judged), "gate_line" (the pairs' summary)."""
    return str(getattr(say("words.j2"), sentence)(j)).strip()


def _context(j: Judgement, **options: Any) -> dict[str, Any]:
    word, reason = (None, None) if j.paired else (_GATE_WORDS[j.exit_code], words("reason", j))
    names = dict(metric_name=metric_name, format_value=format_value)
    return dict(j=j, word=word, reason=reason, **names, **options)


def render_terminal(
    j: Judgement, color: bool = False, quiet: bool = False, verbose: bool = False
) -> str:
    def paint(text: str, verdict: str) -> str:
        code = _ANSI.get(verdict)
        return Painted(f"\x1b[{code}m{one_line(text)}\x1b[0m") if color and code else text

    hardware = [one_line(f"  {k}: {b}  ->  {c}") for k, b, c in j.hardware_differences]
    env = templates(terminal=True)
    env.filters["paint"] = paint
    table = [] if j.paired else _table([b for b in j.benchmarks if b.metrics])
    context = _context(j, quiet=quiet, verbose=verbose, table=table, hardware=hardware)
    return env.get_template("terminal.txt.j2").render(context)


def render_markdown(j: Judgement) -> str:
    """A PR comment: verdict first, then what needs attention, the unchanged rest folded away."""
    text = templates().get_template("compare.md.j2").render(_context(j, rows=_rows))
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
    benchmarks = [b.as_dict(j.paired) for b in j.benchmarks]
    if j.paired:
        doc = {"exit_code": j.exit_code, "gate": words("gate_line", j), "paired": True}
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
        doc["cannot_judge"] = words("cannot_judge", j) if j.cannot_judge else None
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
