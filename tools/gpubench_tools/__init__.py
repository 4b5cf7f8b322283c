"""gpubench tools: read the JSON that `bench` writes and turn it into reports and comparisons.

The modules are layers (tools/pyproject.toml, [tool.importlinter], checks them): a module imports
only its own layer and the ones below.

- Readers and the typed table: `status` (exit statuses, unusable input, numeric ranges),
  `benchjson` (the one reader of the file format), `row_rules` (the declared JSON Schema of a
  sound row, and the rule that tells a skipped row from a failed one), `conditions` (quiet,
  disturbed or conditions unknown), `policy` (what each tool does with what the reader found),
  `json_values` (values as the file wrote them), `schema` (every counter's unit and direction, the
  label keys), `table` (every file into one pandas table, a row per repetition, classified by its
  label), `timing`, `stats` (the statistics of compare and history), `units`, `escape` (text
  made safe for a terminal, Markdown or HTML).
- Computations: `overhead_model`, `export`, and the tools' engines.
- Rendering: `wording` (what the tools say of what the reader read, and the notes the reader and
  the loader leave as data, worded by templates/words.j2) and `templating` (the Jinja2
  environment and `Words`, the one way to words).
- Command lines: `cli` (usage names, the one-line error contract), `output` (the one writer) and
  `__main__` (`python -m gpubench_tools --errors FILE`, `--gpu-rows FILE...`). The tools:
  `report` (gpubench-report), `compare` (gpubench-compare), `history`, `export`, `advise` and
  `instructions`.
Importing the package checks the dependency floors first (`dependency_problems`): an interpreter
without numpy, or with a distribution's older matplotlib, gets one line naming the package and the
fix, instead of an ImportError or a failure deep inside a chart.
"""

from __future__ import annotations

import re
import sys
from importlib import metadata
from pathlib import Path

__version__ = "0.1.0"

_REQUIREMENTS = Path(__file__).resolve().parent.parent / "requirements.txt"
_FLOOR = re.compile(r"^\s*([A-Za-z0-9_.\-]+)\s*>=\s*([0-9][0-9A-Za-z.]*)")


def dependency_floors() -> dict[str, str]:
    """Package name -> lowest version, from tools/requirements.txt in a checkout (or an editable
    install), else from the installed distribution's metadata (which setuptools read from that
    same file)."""
    if _REQUIREMENTS.is_file():
        lines = _REQUIREMENTS.read_text(encoding="utf-8").splitlines()
    else:
        try:
            lines = metadata.requires("gpubench-tools") or []
        except metadata.PackageNotFoundError:
            lines = []
    return {m.group(1).lower(): m.group(2) for m in map(_FLOOR.match, lines) if m}


def _version_tuple(version: str) -> tuple[int, ...]:
    # Release segment only ("3.7.0rc1" -> (3, 7, 0)): enough to order the floors against releases.
    return tuple(int(part) for part in re.findall(r"\d+", version.split("+")[0])[:3])


def dependency_problems() -> list[str]:
    problems = []
    for package, floor in dependency_floors().items():
        try:
            installed = metadata.version(package)
        except metadata.PackageNotFoundError:
            problems.append(f"{package} is not installed (the tools need {package}>={floor})")
            continue
        if _version_tuple(installed) < _version_tuple(floor):
            problems.append(
                f"{package} {installed} is older than the {floor} the tools need "
                f"({package}>={floor})"
            )
    return problems


_problems = dependency_problems()
if _problems:
    print(
        f"gpubench tools: {'; '.join(_problems)}, in {sys.executable}. Install them with "
        "./scripts/install-deps.sh (into .venv) or `pip install ./tools`.",
        file=sys.stderr,
    )
    raise SystemExit(2)
