#!/usr/bin/env bash
# Proves the dependency floors of the tools: installs exactly the lowest versions that
# tools/requirements.txt allows (each 'pkg>=X' as the constraint 'pkg==X') into a throw-away
# virtual environment and runs the tools' tests there. A floor that is no longer true (the code
# started to use something newer) fails here instead of on a user's older distribution.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sed -n 's/^\([A-Za-z0-9_.-]*\)>=\(.*\)$/\1==\2/p' "$ROOT/tools/requirements.txt" >"$work/floors.txt"
echo "gpubench: testing the tools at their floors: $(tr '\n' ' ' <"$work/floors.txt")"
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q --disable-pip-version-check \
  -c "$work/floors.txt" -r "$ROOT/tools/requirements-dev.txt"
"$work/venv/bin/python" - "$work/floors.txt" <<'PY'
# The resolver must have installed the floors themselves, not something newer.
import sys
from importlib import metadata
for line in open(sys.argv[1]):
    name, version = line.strip().split("==")
    installed = metadata.version(name)
    assert installed == version, f"{name}: installed {installed}, floor {version}"
PY
cd "$ROOT"
GPUBENCH_BENCH="$BUILD_DIR/benchmarks/bench" run_pytest "$work/venv/bin/python" -q -p no:cacheprovider \
  tests/tools
