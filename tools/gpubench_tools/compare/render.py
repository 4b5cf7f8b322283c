"""Terminal and Markdown output of the regression compare tool.

Both say a repeated reason once: benchmarks that share a reason (one skip message, "not enough
samples", "only in the contender", one error message) are one line with a count; their names are
listed once, in the terminal only with --verbose and in the Markdown inside a folded <details>
block. Failures are always named. --quiet prints the failures and one summary line.

In the Markdown every piece of data (benchmark names, labels, error messages, context values,
paths) goes through escape.md_text or escape.md_code: a file cannot inject a line, a heading, a
fake gate verdict or HTML into a pull-request comment. In the terminal, control characters in
data are folded into spaces, so a message cannot forge a line of the log either.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Iterator, Sequence

import jinja2

from .. import schema
from ..benchjson import BenchReport
from ..wording import group_reasons
from ..escape import md_text, one_line
from ..templating import environment
from .engine import ERROR, NOT_JUDGED_DISTURBED, SKIPPED, BenchComparison, CompareResult
from ..units import plural
from .stats import CHANGED, FASTER, FEW, INFO, INVALID, NOISY, SAME, SLOWER, MetricResult
from .stats import repetition_rule

MARKER = "<!-- gpubench-compare -->"  # lets CI find and update its own PR comment

_VERDICT_TEXT = {
    **{v: v for v in (FASTER, SAME, INFO, SKIPPED)},
    **{SLOWER: "SLOWER", NOISY: "too noisy to judge", FEW: "not enough samples"},
    **{CHANGED: "CHANGED WORK", INVALID: "INVALID VALUES", ERROR: "NOW FAILS"},
    NOT_JUDGED_DISTURBED: "not judged: measured while disturbed",
}
# The words of the group of benchmarks not judged for disturbance: listed with their figures
# always (not only with --verbose), since their numbers are all the run says of them.
DISTURBED_WORDS = "not judged: measured while disturbed"
_ANSI = {
    **dict.fromkeys((SLOWER, CHANGED, ERROR, INVALID), "31;1"),
    **dict.fromkeys((NOISY, FEW), "33"),
    FASTER: "32",
}
# Units of format_value, largest first; a value below the last still takes the last.
_SECONDS = ((1.0, " s"), (1e-3, " ms"), (1e-6, " us"), (1e-9, " ns"))
_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))
_HEADER = ("benchmark / metric", "baseline", "contender", "ratio", "cv base/new", "p", "verdict")


def format_value(metric: str, value: float) -> str:
    """A median for humans: times with a unit, rates with an SI prefix."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    if metric == "time/ref":
        return f"{value:.4g}"
    units = _SECONDS if metric == "time" or schema.is_seconds(metric) else _SI
    factor, unit = next(((f, u) for f, u in units if abs(value) >= f), units[-1])
    return f"{value / factor:.4g}{unit}"


def _metric_name(m: MetricResult) -> str:
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
    return (_metric_name(m), *medians, ratio, cv, p, verdict)


def _rows(
    benches: Sequence[BenchComparison],
) -> Iterator[tuple[str | None, MetricResult, tuple[str, ...]]]:
    """(benchmark name on its first row else None, metric, cells) for every table row: an exact
    counter only when it differs (else it is clutter)."""
    for bench in benches:
        shown = [m for i, m in enumerate(bench.metrics) if i == 0 or m.better != "exact" or m.fails]
        for i, m in enumerate(shown):
            yield (bench.name if i == 0 else None), m, _cells(m)


def failure_reason(bench: BenchComparison) -> str:
    """One line saying why a benchmark fails the gate, with the numbers that decided it."""
    if bench.verdict in (ERROR, INVALID) and not bench.metrics:
        return ("now fails: " if bench.verdict == ERROR else "") + (bench.error or "")
    parts = []
    for m in (m for m in bench.metrics if m.fails):
        if m.verdict == INVALID:
            parts.append(f"{_metric_name(m)}: {'; '.join(m.notes[:1])}")
        elif m.better == "exact":
            parts.append(
                f"{m.metric} changed {m.base.median:.6g} -> {m.cont.median:.6g} "
                "(the benchmark's work changed: re-record the baseline if intended)"
            )
        else:
            parts.append(
                f"{_metric_name(m)} {m.slowdown:.2f}x worse (limit {m.thresholds.max_ratio:g}x, "
                f"p={m.p_value:.2g} < {m.thresholds.alpha:g})"
            )
    return "; ".join(parts)


# Why a benchmark of the baseline was not compared (CompareResult.not_compared's kinds).
_NOT_COMPARED_WORDS = {
    "failed_in_baseline": "failed in the baseline",
    "skipped_in_baseline": "skipped in the baseline",
    "invalid_in_baseline": "without a valid time in the baseline",
}


def _headline(result: CompareResult) -> str:
    s = result.summary()
    parts = [f"{s['compared']} compared"]
    for key, text in (
        ("slower", "slower"),
        ("changed", "with changed work"),
        ("invalid", "with invalid values"),
        (ERROR, "now failing"),
        (SKIPPED, "skipped"),
        ("faster", "faster"),
        ("noisy", "too noisy to judge"),
        ("not_enough_samples", "not enough samples"),
        ("not_judged_disturbed", "not judged: measured while disturbed"),
        ("same", "same"),
        ("only_in_baseline", "missing from contender"),
        ("only_in_contender", "new"),
    ):
        if s[key]:
            parts.append(f"{s[key]} {text}")
    # Said by why the baseline has no time (a row skipped on both sides is "skipped in the
    # baseline", not "not measured"), in the words of the lines below the table.
    for kind, text in _NOT_COMPARED_WORDS.items():
        count = sum(len(g["names"]) for g in result.not_compared if g["kind"] == kind)
        if count:
            parts.append(f"{count} {text}")
    return ", ".join(parts)


def _by_error(result: CompareResult, verdict: str) -> list[tuple[str, list[str]]]:
    """Names of the benchmarks with this verdict (ERROR, SKIPPED), one group per message."""
    benches = [bench for bench in result.benchmarks if bench.verdict == verdict]
    groups = group_reasons(benches, lambda bench: bench.error or "")
    return [(message, [bench.name for bench in group]) for message, group in groups]


def _gate(result: CompareResult) -> tuple[str, str]:
    """(PASS | FAIL | CANNOT JUDGE | NOT RESOLVED, the reason)."""
    code = result.exit_code
    if code == 0:
        text = f"{plural(len(result.judged), 'benchmark')} judged, no significant regression beyond threshold"
        if result.unjudged:
            text += f"; {len(result.unjudged)} not judged (not enough samples)"
        if result.disturbed:
            text += f"; {len(result.disturbed)} {DISTURBED_WORDS} (listed above)"
        return "PASS", text
    if code == 2:
        return "CANNOT JUDGE", (result.cannot_judge or "").removeprefix("cannot judge: ")
    if code == 3:
        return "NOT RESOLVED", (result.cannot_judge or "").removeprefix("cannot judge: ")
    reasons = []
    errors = _by_error(result, ERROR)
    if result.all_failed:
        what = errors[0][0] if len(errors) == 1 else f"{len(errors)} different errors"
        reasons.append(f"every benchmark now fails ({len(result.benchmarks)}): {what}")
    else:
        regressed = [b for b in result.failing if b.verdict != ERROR]
        if regressed:
            reasons.append(f"{plural(len(regressed), 'benchmark')} regressed")
        if errors:
            reasons.append(f"{sum(len(names) for _, names in errors)} now failing")
    if result.missing_fails:
        reasons.append(
            f"{len(result.only_in_baseline)} missing from the contender "
            "(--allow-missing for a filtered run)"
        )
    if result.cut_off:
        reasons.append(f"the contender is cut off ({result.contender.cut_off})")
    return "FAIL", "; ".join(reasons)


def info_groups(result: CompareResult) -> list[tuple[str, list[str], list[BenchComparison]]]:
    """(one line, its names, the benchmarks when they were compared but not judged) for every
    group that is information, not a failure."""
    out = [
        (
            f"{plural(len(names), 'benchmark')} skipped in the contender, not failed: {why}",
            names,
            [],
        )
        for why, names in _by_error(result, SKIPPED)
    ]
    for group in result.not_compared:
        why = _NOT_COMPARED_WORDS[group["kind"]]
        line = f"{plural(len(group['names']), 'benchmark')} {why}, not compared: {group['reason']}"
        out.append((line, group["names"], []))
    by_needed = group_reasons(result.unjudged, lambda bench: bench.needed or 0)
    for needed, benches in sorted(by_needed, key=lambda group: group[0]):
        fewest = min(min(b.metrics[0].base.n, b.metrics[0].cont.n) for b in benches)
        line = (
            f"{plural(len(benches), 'benchmark')} not judged: not enough samples (as few as n={fewest} a side; "
            f"the U test needs {needed} repetitions a side to reach alpha): rerun with "
            f"--benchmark_repetitions={needed}"
        )
        out.append((line, [b.name for b in benches], benches))
    if result.disturbed:
        line = (
            f"{plural(len(result.disturbed), 'benchmark')} {DISTURBED_WORDS}: too few undisturbed repetitions "
            "on a side after leaving out those the harness's rule calls disturbed (stop what else "
            "runs and measure again); their figures with every repetition:"
        )
        out.append((line, [disturbed_figures(b) for b in result.disturbed], []))
    missing, new = result.only_in_baseline, result.only_in_contender
    if missing and not result.missing_fails:
        line = f"{plural(len(missing), 'benchmark')} missing from the contender, not failed (--allow-missing)"
        out.append((line, missing, []))
    if new:
        out.append(
            (f"{plural(len(new), 'benchmark')} only in the contender (new, not compared)", new, [])
        )
    return out


def disturbed_figures(bench: BenchComparison) -> str:
    """One benchmark not judged for disturbance, with its figures: "name: baseline 1.2 ms (0 of
    5 disturbed), contender 2.4 ms (5 of 5 disturbed), 2.00x with the disturbed ones; why"."""
    d = bench.disturbance
    if d is None:
        return bench.name
    ratio = "-" if not math.isfinite(d.ratio_all) else f"{d.ratio_all:.2f}x"
    return (
        f"{bench.name}: baseline {format_value('time', d.base_median_all)} ({d.base_disturbed} "
        f"of {d.base_measured} disturbed), contender {format_value('time', d.cont_median_all)} "
        f"({d.cont_disturbed} of {d.cont_measured} disturbed), {ratio} with the disturbed ones; "
        f"{d.why}"
    )


def _conditions_line(result: CompareResult) -> str | None:
    """One line on the repetitions left out for disturbance, None where none was."""
    base, cont = result.disturbed_repetitions
    if not base and not cont:
        return None
    return (
        f"conditions: {base} repetition(s) of the baseline and {cont} of the contender were "
        "measured while disturbed and are left out of every verdict"
        + (f"; {len(result.disturbed)} benchmark(s) not judged" if result.disturbed else "")
    )


def _describe(report: BenchReport) -> list[str]:
    ctx = report.context
    return [
        f"commit {ctx.get('gpubench_git_commit') or '?'}",
        str(ctx.get("date") or "no date"),
        f"cpu {ctx.get('cpu_model') or '?'}",
        f"gpu {ctx.get('gpu') or '?'}",
    ]


def _thresholds_line(result: CompareResult) -> str:
    t = result.config.thresholds
    text = (
        f"{result.config.time} compared; "
        f"slower/faster when the median ratio is beyond {t.max_ratio:g}x and the U test gives "
        f"p < {t.alpha:g}; too noisy above cv {t.max_cv:.0%}; {repetition_rule(t.alpha)}"
    )
    if result.config.overrides:
        text += f"; {len(result.config.overrides)} per-name override(s)"
    if result.config.normalize is not None and result.reference:
        n = result.config.normalize.thresholds
        refs = result.reference
        what = (
            f"the median time of '{refs[0]}'"
            if len(refs) == 1
            else f"the geometric mean of the median times of {len(refs)} benchmarks"
        )
        text += (
            f"; time / reference = time divided by {what} of the same run "
            f"(beyond {n.max_ratio:g}x, p < {n.alpha:g}, cv {n.max_cv:.0%})"
        )
    return text + f" [config: {result.config.source}]"


def _failure_lines(result: CompareResult) -> list[tuple[str, list[str]]]:
    """(line, names listed under it) for every failure, in the order a reader needs them."""
    lines: list[tuple[str, list[str]]] = [
        (f"REGRESSION {bench.name}: {failure_reason(bench)}", [])
        for bench in result.failing
        if bench.verdict != ERROR
    ]
    errors = _by_error(result, ERROR)
    for message, names in errors:
        n = len(names)
        head = (
            f"every benchmark now fails ({n})"
            if result.all_failed and len(errors) == 1
            else f"{plural(n, 'benchmark')} now fail{'s' if n == 1 else ''}"
        )
        lines.append((f"REGRESSION: {head}: {message}", names))
    if result.cut_off:
        lines.append((f"FAIL: {result.cut_off}", []))
    if result.missing_fails:
        missing = plural(len(result.only_in_baseline), "benchmark")
        line = f"REGRESSION: {missing} of the baseline missing from the contender (pass "
        line += "--allow-missing for a run filtered on purpose):"
        lines.append((line, result.only_in_baseline))
    return lines


def render_terminal(
    result: CompareResult, color: bool = False, quiet: bool = False, verbose: bool = False
) -> str:
    def paint(text: str, verdict: str) -> str:
        code = _ANSI.get(verdict)
        return f"\x1b[{code}m{text}\x1b[0m" if color and code else text

    word, reason = _gate(result)
    gate_verdict = {"PASS": FASTER, "FAIL": SLOWER}.get(word, FEW)
    failures = [
        [paint(one_line(line), SLOWER)] + [f"  {one_line(name)}" for name in names]
        for line, names in _failure_lines(result)
    ]
    hardware = result.hardware_differences
    if quiet:
        out = [line for block in failures for line in block]
        tail = " (DIFFERENT HARDWARE)" if hardware else ""
        out.append(
            paint(one_line(f"gate: {word}: {reason} ({_headline(result)}){tail}"), gate_verdict)
        )
        return "\n".join(out) + "\n"

    out: list[str] = []
    if hardware:
        banner = [
            "DIFFERENT HARDWARE: these ratios compare two machines, not two versions of the code."
        ]
        banner += [one_line(f"  {k}: {b}  ->  {c}") for k, b, c in hardware]
        width = max(len(line) for line in banner) + 6
        out += ["!" * width, *(f"!! {line.ljust(width - 6)} !!" for line in banner), "!" * width]
    for which, report in (("baseline", result.baseline), ("contender", result.contender)):
        out.append(one_line(f"{which:<9}: {report.path} ({', '.join(_describe(report))})"))
    out += [
        one_line(f"note: {key} differs: {b} -> {c}") for key, b, c in result.environment_differences
    ]
    out += [one_line(f"warning: {warning}") for warning in result.warnings]
    conditions = _conditions_line(result)
    if conditions:
        out.append(one_line(f"warning: {conditions}"))
    out += [one_line(_thresholds_line(result)), ""]

    table = [
        (
            (one_line(name) if name is not None else "    " + one_line(cells[0]), *cells[1:]),
            m.verdict,
        )
        for name, m, cells in _rows([b for b in result.benchmarks if b.metrics])
    ]
    if table:
        widths = [max(len(r[i]) for r in [_HEADER] + [t[0] for t in table]) for i in range(7)]

        def fmt(cells: tuple[str, ...]) -> str:
            numbers = [c.rjust(width) for c, width in zip(cells[1:-1], widths[1:])]
            return "  ".join([cells[0].ljust(widths[0]), *numbers, cells[-1]])

        out += [fmt(_HEADER), "-" * (sum(widths) + 2 * 6)]
        out += [paint(fmt(row), verdict) for row, verdict in table] + [""]

    for line, names, _ in info_groups(result):
        out.append(one_line(line))
        if verbose or DISTURBED_WORDS in line:
            out.extend(f"  {one_line(name)}" for name in names)
    out += [line for block in failures for line in block]
    out.append(one_line(f"summary: {_headline(result)}"))
    out.append(paint(one_line(f"gate: {word}: {reason}"), gate_verdict))
    if hardware:
        out.append("(reminder: the two files come from DIFFERENT HARDWARE, see the top)")
    return "\n".join(out) + "\n"


@functools.lru_cache(maxsize=1)
def _markdown_template() -> jinja2.Template:
    # No autoescape: the output is Markdown, not HTML; every piece of data goes through the
    # md/code filters (escape.md_text, escape.md_code) in the template.
    return environment(__package__).get_template("compare.md.j2")


def render_markdown(result: CompareResult) -> str:
    """A PR comment: verdict first, then what needs attention, the unchanged rest folded away."""

    def rows_of(benches: Sequence[BenchComparison]) -> list[tuple[str | None, Any, bool]]:
        return [(name, cells, m.fails) for name, m, cells in _rows(benches)]

    word, reason = _gate(result)
    with_numbers = [b for b in result.benchmarks if b.metrics]
    attention = [b for b in with_numbers if b.verdict not in (SAME, FEW)]
    sides = (("baseline", result.baseline), ("contender", result.contender))
    text = _markdown_template().render(
        status={
            "PASS": "✅ no regression",
            "FAIL": "❌ regression",
            "NOT RESOLVED": "⚠️ not resolved: the machine was busy",
        }.get(word, "⚠️ cannot judge"),
        hardware=result.hardware_differences,
        word=word,
        reason=reason,
        headline=_headline(result),
        sides=[(which, report.path, _describe(report)) for which, report in sides],
        rule=_thresholds_line(result),
        environment=result.environment_differences,
        warnings=result.warnings + [c for c in [_conditions_line(result)] if c],
        failures=_failure_lines(result),
        info=info_groups(result),
        rows_of=rows_of,
        attention=attention,
        unchanged=[b for b in with_numbers if b.verdict == SAME],
        notes=[
            (b.name, m.metric, "; ".join(m.notes)) for b in attention for m in b.metrics if m.notes
        ],
    )
    return text.rstrip() + "\n"


def render_markdown_error(line: str) -> str:
    """What the PR comment says when the comparison could not run at all (exit 2)."""
    return (
        f"{MARKER}\n### gpubench regression check: ⚠️ could not compare\n\n"
        f"**gate: CANNOT COMPARE**: {md_text(line)}\n"
    )
