"""Terminal and Markdown output of the regression compare tool."""

from __future__ import annotations

import math

from .. import schema
from .model import ERROR, SKIPPED, BenchComparison, CompareResult
from .stats import (
    CHANGED,
    FASTER,
    INFO,
    MIN_REPETITIONS,
    NOISY,
    SAME,
    SLOWER,
    MetricResult,
)

__all__ = [
    "failure_reason",
    "format_value",
    "render_markdown",
    "render_markdown_error",
    "render_terminal",
]

MARKER = "<!-- gpubench-compare -->"  # lets CI find and update its own PR comment

_VERDICT_TEXT = {
    SLOWER: "SLOWER",
    FASTER: "faster",
    SAME: "same",
    NOISY: "too noisy to judge",
    CHANGED: "CHANGED WORK",
    INFO: "info",
    ERROR: "NOW FAILS",
    SKIPPED: "skipped",
}
_ANSI = {SLOWER: "31;1", CHANGED: "31;1", ERROR: "31;1", FASTER: "32", NOISY: "33"}


def _si(value: float) -> str:
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.4g}{prefix}"
    return f"{value:.4g}"


def _seconds(value: float) -> str:
    for factor, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us")):
        if abs(value) >= factor:
            return f"{value / factor:.4g} {unit}"
    return f"{value / 1e-9:.4g} ns"


def format_value(metric: str, value: float) -> str:
    """A median for humans: times with a unit, rates with an SI prefix."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if metric == "time" or schema.is_seconds(metric):
        return _seconds(value)
    if metric == "time/ref":
        return f"{value:.4g}"
    return _si(value)


def _metric_name(m: MetricResult) -> str:
    if m.metric == "time":
        return "time"
    if m.metric == "time/ref":
        return "time / reference"
    arrow = {"higher": " (higher better)", "lower": " (lower better)", "exact": " (exact)"}
    return m.metric + arrow.get(m.better, "")


def _ratio(m: MetricResult) -> str:
    if m.better == "exact":
        return "=" if m.verdict == SAME else "differs"
    if math.isnan(m.ratio) or math.isinf(m.ratio):
        return "-"
    return f"{m.ratio:.3f}x"


def _cv(m: MetricResult) -> str:
    def one(cv: float) -> str:
        return "-" if math.isnan(cv) else f"{cv:.1%}"

    return f"{one(m.base.cv)} / {one(m.cont.cv)}"


def _verdict(m: MetricResult) -> str:
    text = _VERDICT_TEXT.get(m.verdict, m.verdict)
    if not m.gating and m.verdict in (SLOWER, FASTER, NOISY):
        text = text.lower() + " (not gated)"
    return text


def _p(m: MetricResult) -> str:
    return "-" if m.p_value is None else f"{m.p_value:.3g}"


def failure_reason(bench: BenchComparison) -> str:
    """One line saying why a benchmark fails the gate, with the numbers that decided it."""
    parts = []
    for m in bench.metrics:
        if not m.fails:
            continue
        if m.better == "exact":
            parts.append(
                f"{m.metric} changed {m.base.median:.6g} -> {m.cont.median:.6g} "
                "(the benchmark's work changed: re-record the baseline if intended)"
            )
        else:
            alpha = m.thresholds.alpha
            if m.p_value is not None and m.p_value < alpha:
                evidence = f"p={m.p_value:.2g} < {alpha:g}"
            elif m.p_value is not None:
                # Significant only because the ranges are apart: the U test could not say so.
                evidence = (
                    f"ranges do not overlap (p={m.p_value:.2g}: too few repetitions for the U test)"
                )
            else:
                evidence = "ranges do not overlap"
            parts.append(
                f"{_metric_name(m)} {m.slowdown:.2f}x worse (limit {m.thresholds.max_ratio:g}x, "
                f"{evidence})"
            )
    return "; ".join(parts)


def _shown(bench: BenchComparison) -> list[MetricResult]:
    """Metrics worth a table row: an exact counter only when it differs (else it is clutter)."""
    return [m for i, m in enumerate(bench.metrics) if i == 0 or m.better != "exact" or m.fails]


def _headline(result: CompareResult) -> str:
    s = result.summary()
    parts = [f"{s['compared']} compared"]
    for key, text in (
        ("slower", "slower"),
        ("changed", "with changed work"),
        (ERROR, "now failing"),
        (SKIPPED, "skipped (do not fit)"),
        ("faster", "faster"),
        ("noisy", "too noisy to judge"),
        ("same", "same"),
    ):
        if s[key]:
            parts.append(f"{s[key]} {text}")
    if s["only_in_baseline"]:
        parts.append(f"{s['only_in_baseline']} missing from contender")
    if s["only_in_contender"]:
        parts.append(f"{s['only_in_contender']} new")
    return ", ".join(parts)


def _describe(report_side: dict[str, str | None]) -> str:
    bits = [
        f"commit {report_side.get('git_commit') or '?'}",
        str(report_side.get("date") or "no date"),
        f"cpu {report_side.get('cpu_model') or '?'}",
        f"gpu {report_side.get('gpu') or '?'}",
    ]
    return ", ".join(bits)


def _side(result: CompareResult, which: str) -> dict[str, str | None]:
    report = result.baseline if which == "baseline" else result.contender
    ctx = report.context
    return {
        "git_commit": ctx.get("gpubench_git_commit"),
        "date": ctx.get("date"),
        "cpu_model": ctx.get("cpu_model"),
        "gpu": ctx.get("gpu"),
    }


def _gate_line(result: CompareResult) -> str:
    if result.exit_code == 0:
        return "PASS: no significant regression beyond threshold"
    reasons = []
    if result.failing:
        reasons.append(f"{len(result.failing)} benchmark(s) regressed")
    if result.fail_on_missing and result.only_in_baseline:
        reasons.append(f"{len(result.only_in_baseline)} missing (--fail-on-missing)")
    return "FAIL: " + "; ".join(reasons)


def _thresholds_line(result: CompareResult) -> str:
    t = result.config.thresholds
    text = (
        f"{result.config.time} compared; "
        f"slower/faster when the median ratio is beyond {t.max_ratio:g}x and the U test gives "
        f"p < {t.alpha:g}; too noisy above cv {t.max_cv:.0%}; never with fewer than "
        f"{MIN_REPETITIONS} repetitions a side"
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


def _hardware_banner(result: CompareResult) -> list[str]:
    lines = ["DIFFERENT HARDWARE: these ratios compare two machines, not two versions of the code."]
    for key, b, c in result.hardware_differences:
        lines.append(f"  {key}: {b}  ->  {c}")
    return lines


def render_terminal(result: CompareResult, color: bool = False, quiet: bool = False) -> str:
    def paint(text: str, verdict: str) -> str:
        code = _ANSI.get(verdict)
        return f"\x1b[{code}m{text}\x1b[0m" if color and code else text

    out: list[str] = []
    if result.hardware_differences:
        banner = _hardware_banner(result)
        width = max(len(line) for line in banner) + 6
        out.append("!" * width)
        out.extend(f"!! {line.ljust(width - 6)} !!" for line in banner)
        out.append("!" * width)
    out.append(f"baseline : {result.baseline.path} ({_describe(_side(result, 'baseline'))})")
    out.append(f"contender: {result.contender.path} ({_describe(_side(result, 'contender'))})")
    for key, b, c in result.environment_differences:
        out.append(f"note: {key} differs: {b} -> {c}")
    for warning in result.warnings:
        out.append(f"warning: {warning}")
    out.append(_thresholds_line(result))
    out.append("")

    header = ("benchmark / metric", "baseline", "contender", "ratio", "cv base/new", "p", "verdict")
    table: list[tuple[tuple[str, ...], str]] = []
    for bench in result.benchmarks:
        if quiet and not bench.fails:
            continue
        if bench.verdict in (ERROR, SKIPPED):
            text = _VERDICT_TEXT[bench.verdict]
            table.append(((bench.name, "-", "-", "-", "-", "-", text), bench.verdict))
            continue
        for i, m in enumerate(_shown(bench)):
            name = bench.name if i == 0 else "    " + _metric_name(m)
            row = (
                name,
                format_value(m.metric, m.base.median),
                format_value(m.metric, m.cont.median),
                _ratio(m),
                _cv(m),
                _p(m),
                _verdict(m),
            )
            table.append((row, m.verdict))
    if table:
        widths = [max(len(r[i]) for r in [header] + [t[0] for t in table]) for i in range(7)]

        def fmt(cells: tuple[str, ...]) -> str:
            first = cells[0].ljust(widths[0])
            rest = [c.rjust(widths[i + 1]) for i, c in enumerate(cells[1:-1])]
            return "  ".join([first] + rest + [cells[-1]])

        out.append(fmt(header))
        out.append("-" * (sum(widths) + 2 * 6))
        for row, verdict in table:
            out.append(paint(fmt(row), verdict))
        out.append("")

    if result.only_in_baseline:
        out.append(
            "missing from the contender (listed, "
            + ("FAILING with --fail-on-missing):" if result.fail_on_missing else "not failed):")
        )
        out.extend(f"  {name}" for name in result.only_in_baseline)
    if result.only_in_contender:
        out.append("only in the contender (new, not compared):")
        out.extend(f"  {name}" for name in result.only_in_contender)
    skipped = [b for b in result.benchmarks if b.verdict == SKIPPED]
    if skipped:
        out.append("skipped in the contender (does not fit on this machine; not failed):")
        out.extend(f"  {b.name}: {b.error}" for b in skipped)
    for bench in result.failing:
        reason = f"now fails: {bench.error}" if bench.error else failure_reason(bench)
        out.append(paint(f"REGRESSION {bench.name}: {reason}", SLOWER))
    out.append(f"summary: {_headline(result)}")
    out.append(paint(f"gate: {_gate_line(result)}", SLOWER if result.exit_code else FASTER))
    if result.hardware_differences:
        out.append("(reminder: the two files come from DIFFERENT HARDWARE, see the top)")
    return "\n".join(out) + "\n"


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def _md_rows(benches: list[BenchComparison]) -> list[str]:
    rows = []
    for bench in benches:
        if bench.verdict == ERROR:
            rows.append(
                f"| `{_md_escape(bench.name)}` | | | | | | | **now fails**: "
                f"{_md_escape(bench.error or '')} |"
            )
            continue
        if bench.verdict == SKIPPED:
            rows.append(
                f"| `{_md_escape(bench.name)}` | | | | | | | skipped: {_md_escape(bench.error or '')} |"
            )
            continue
        for i, m in enumerate(_shown(bench)):
            name = f"`{_md_escape(bench.name)}`" if i == 0 else ""
            verdict = _verdict(m)
            if m.fails:
                verdict = f"**{verdict}**"
            rows.append(
                f"| {name} | {_md_escape(_metric_name(m))} | {format_value(m.metric, m.base.median)}"
                f" | {format_value(m.metric, m.cont.median)} | {_ratio(m)} | {_cv(m)} | {_p(m)}"
                f" | {verdict} |"
            )
    return rows


_MD_HEADER = [
    "| benchmark | metric | baseline | contender | ratio | cv base / new | p | verdict |",
    "|---|---|--:|--:|--:|--:|--:|---|",
]


def render_markdown(result: CompareResult) -> str:
    """A PR comment: verdict first, then what needs attention, the unchanged rest folded away."""
    out = [MARKER]
    status = "❌ regression" if result.exit_code else "✅ no regression"
    out.append(f"### gpubench regression check: {status}")
    out.append("")
    if result.hardware_differences:
        out.append("> [!WARNING]")
        out.append(
            "> **DIFFERENT HARDWARE**: these ratios compare two machines, not two versions of "
            "the code."
        )
        for key, b, c in result.hardware_differences:
            out.append(f"> - `{key}`: {_md_escape(b)} → {_md_escape(c)}")
        out.append("")
    out.append(f"**{_gate_line(result)}**. {_headline(result)}.")
    out.append("")
    out.append(f"- baseline: `{result.baseline.path}` ({_describe(_side(result, 'baseline'))})")
    out.append(f"- contender: `{result.contender.path}` ({_describe(_side(result, 'contender'))})")
    out.append(f"- rule: {_thresholds_line(result)}")
    for key, b, c in result.environment_differences:
        out.append(f"- note: `{key}` differs: {_md_escape(b)} → {_md_escape(c)}")
    for warning in result.warnings:
        out.append(f"- warning: {_md_escape(warning)}")
    out.append("")

    attention = [b for b in result.benchmarks if b.verdict not in (SAME,)]
    rest = [b for b in result.benchmarks if b.verdict == SAME]
    if attention:
        out.extend(_MD_HEADER)
        out.extend(_md_rows(attention))
        out.append("")
    if rest:
        out.append(f"<details><summary>{len(rest)} unchanged benchmark(s)</summary>")
        out.append("")
        out.extend(_MD_HEADER)
        out.extend(_md_rows(rest))
        out.append("")
        out.append("</details>")
        out.append("")
    if result.only_in_baseline:
        tail = " (fails the gate: --fail-on-missing)" if result.fail_on_missing else ""
        out.append(f"**Missing from the contender**{tail}:")
        out.extend(f"- `{_md_escape(n)}`" for n in result.only_in_baseline)
        out.append("")
    if result.only_in_contender:
        out.append("**New in the contender** (not compared):")
        out.extend(f"- `{_md_escape(n)}`" for n in result.only_in_contender)
        out.append("")
    notes = [
        f"- `{_md_escape(b.name)}` {m.metric}: {_md_escape('; '.join(m.notes))}"
        for b in attention
        for m in b.metrics
        if m.notes
    ]
    if notes:
        out.append("<details><summary>notes</summary>")
        out.append("")
        out.extend(notes)
        out.append("")
        out.append("</details>")
    return "\n".join(out).rstrip() + "\n"


def render_markdown_error(line: str) -> str:
    """What the PR comment says when the comparison could not run at all (exit 2)."""
    return (
        f"{MARKER}\n### gpubench regression check: ⚠️ could not compare\n\n"
        f"`{_md_escape(line)}`\n"
    )
