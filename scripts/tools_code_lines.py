"""Code lines of the tools: Python lines that are not blank, not comments, not docstrings, plus
non-blank template lines. Usage: python code_lines.py [TOOLS_DIR] (default tools/gpubench_tools)."""
import ast, io, sys, tokenize
from pathlib import Path

def python_lines(path):
    src = path.read_text()
    doc_lines = set()
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) and isinstance(body[0].value.value, str):
                doc_lines.update(range(body[0].lineno, body[0].end_lineno + 1))
    code = set()
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
            continue
        for line in range(tok.start[0], tok.end[0] + 1):
            if line not in doc_lines:
                code.add(line)
    return len(code)

root = Path(sys.argv[1] if len(sys.argv) > 1 else "tools/gpubench_tools")
py = {p: python_lines(p) for p in root.rglob("*.py")}
tpl = {p: sum(1 for l in p.read_text().splitlines() if l.strip()) for p in root.rglob("*.j2")}
by_pkg = {}
for p, n in list(py.items()) + list(tpl.items()):
    rel = p.relative_to(root).parts
    key = rel[0] if len(rel) > 1 and (root / rel[0]).is_dir() and rel[0] != "templates" else "core"
    by_pkg[key] = by_pkg.get(key, 0) + n
print("python", sum(py.values()), "templates", sum(tpl.values()), "total", sum(py.values()) + sum(tpl.values()))
print(by_pkg)
print("longest module", max(sum(1 for _ in p.open()) for p in py))
