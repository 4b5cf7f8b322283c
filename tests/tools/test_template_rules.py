"""Templates only render: the rule every template of the tools keeps, checked on Jinja's parse tree.

Allowed: `{{ }}`, `{% for %}` over a record's rows, `{% if %}` on a record's booleans or on an
enumeration (`==`/`!=` against a string), macros, `~`, `map(attribute=...)` and the formatting filters. Not allowed: a
`do` tag, and only a small budget for expressions that compute or compare: arithmetic, unary
minus, `and`/`or`, a comparison that is not an enumeration test, a Jinja test other than
`none`/`defined`, and the filters that count, sort, select or convert (COMPUTING_FILTERS).
Decisions live in the frozen records the Python computes, where tests check them directly.

`python tests/tools/test_template_rules.py` lists every counted expression by template and line.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterator

import jinja2
from jinja2 import nodes

TOOLS = Path(__file__).resolve().parents[2] / "tools" / "gpubench_tools"
# At most this many computing expressions in all templates together (and no `do` tag at all).
BUDGET = 10
COMPUTING_FILTERS = {
    "abs", "batch", "count", "dictsort", "first", "float", "groupby", "int", "last", "length",
    "max", "min", "reject", "rejectattr", "round", "select", "selectattr", "slice",
    "sort", "sum", "unique",
}  # fmt: skip
NEUTRAL_TESTS = {"none", "defined", "undefined"}
ARITHMETIC = (nodes.Add, nodes.Sub, nodes.Mul, nodes.Div, nodes.FloorDiv, nodes.Mod, nodes.Pow)


def templates() -> list[Path]:
    return sorted(TOOLS.rglob("*.j2"))


def _enumeration_test(node: nodes.Compare) -> bool:
    """`kind == "memory"`: one equality against a string constant is an enumeration's test."""
    if len(node.ops) != 1 or node.ops[0].op not in ("eq", "ne"):
        return False
    sides = (node.expr, node.ops[0].expr)
    return any(isinstance(s, nodes.Const) and isinstance(s.value, str) for s in sides)


def findings(path: Path) -> Iterator[tuple[int, str]]:
    """(line, what) for every `do` tag and every computing expression of one template."""
    env = jinja2.Environment(extensions=["jinja2.ext.do"])
    tree = env.parse(path.read_text(encoding="utf-8"))
    for node in tree.find_all(nodes.Node):
        line = getattr(node, "lineno", 0)
        if isinstance(node, nodes.ExprStmt):
            yield line, "do"
        elif isinstance(node, ARITHMETIC):
            yield line, f"arithmetic {type(node).__name__}"
        elif isinstance(node, nodes.Neg):
            yield line, "unary minus"
        elif isinstance(node, (nodes.And, nodes.Or)):
            yield line, f"logic {type(node).__name__.lower()}"
        elif isinstance(node, nodes.Compare) and not _enumeration_test(node):
            yield line, "comparison " + " ".join(op.op for op in node.ops)
        elif isinstance(node, nodes.Test) and node.name not in NEUTRAL_TESTS:
            yield line, f"test {node.name}"
        elif isinstance(node, nodes.Filter) and node.name in COMPUTING_FILTERS:
            yield line, f"filter {node.name}"


def all_findings() -> dict[str, list[tuple[int, str]]]:
    return {str(p.relative_to(TOOLS)): list(findings(p)) for p in templates()}


def test_no_template_has_a_do_tag() -> None:
    dos = {name: [line for line, what in found if what == "do"] for name, found in all_findings().items()}
    assert {name: lines for name, lines in dos.items() if lines} == {}


def test_templates_compute_within_the_budget() -> None:
    found = all_findings()
    computing = sum(len(f) for f in found.values())
    assert computing <= BUDGET, {name: f for name, f in found.items() if f}


def test_the_checker_sees_what_it_forbids(tmp_path: Path) -> None:
    """The walk is not vacuous: each forbidden form is found, each allowed form is not."""
    page = tmp_path / "page.j2"
    page.write_text(
        "{% do rows.append(1) %}{{ a + b }}{{ -a }}{% if n > 3 %}x{% endif %}"
        "{% if x and y %}{% endif %}{{ rows | length }}{% if n is divisibleby 3 %}{% endif %}"
        '{% if kind == "memory" %}m{% endif %}{% for r in rows %}{{ r.name | md }}{% endfor %}'
        "{% if r.bound is none %}{% endif %}{{ a ~ b }}"
    )
    kinds = [what.split()[0] for _, what in findings(page)]
    assert kinds == ["do", "arithmetic", "unary", "comparison", "logic", "filter", "test"]


if __name__ == "__main__":
    total = 0
    for name, found in all_findings().items():
        for line, what in found:
            print(f"{name}:{line}: {what}")
        total += len(found)
    print(f"{total} computing expressions or do tags (budget {BUDGET}, no do)", file=sys.stderr)
