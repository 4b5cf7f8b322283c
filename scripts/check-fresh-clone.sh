#!/usr/bin/env bash
# The README's first command, the way a new user meets it: ./scripts/quickstart.sh in a fresh
# clone of the commit under test (HEAD, or the commit given as the only argument; uncommitted
# changes are not in it), with no .venv, PYTHON
# unset, and a python3 first on PATH that has none of the tools' packages (a bare virtual
# environment). It must exit 0 with a report on disk, every console script the README names must
# exist, and the clone must hold no new untracked files. The clone builds from scratch: the build
# takes a few minutes on 2 cores, and reusing another folder's build would hide a step that only a
# fresh machine runs. The sweep is one small GEMM so the check stays quick; the report then takes
# its GPU side from the committed reference run, as the default run does on a machine without a
# GPU.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git clone -q --no-local "$ROOT" "$work/clone"
git -C "$work/clone" checkout -q --detach "$(git -C "$ROOT" rev-parse "${1:-HEAD}")"
python3 -m venv --without-pip "$work/bare-python"
if "$work/bare-python/bin/python3" -c 'import numpy' 2>/dev/null; then
  echo "check-fresh-clone: the bare python3 can import numpy; the check would prove nothing" >&2
  exit 1
fi

cd "$work/clone"
echo "gpubench: fresh-clone check: ./scripts/quickstart.sh in $work/clone"
env -u PYTHON -u VIRTUAL_ENV -u PYTHONPATH -u BUILD_DIR -u GPUBENCH_CALLER_PYTHON \
  PATH="$work/bare-python/bin:$PATH" \
  ./scripts/quickstart.sh '--benchmark_filter=^matmul/cpu/openblas/dtype:fp32/m:64/n:64/k:64/threads:1$'

shopt -s nullglob
reports=(reports/*/report.html)
if ((${#reports[@]} != 1)); then
  echo "check-fresh-clone: expected one report.html under reports/, found ${#reports[@]}" >&2
  exit 1
fi
for script in gpubench-report gpubench-compare gpubench-advise gpubench-history gpubench-export; do
  .venv/bin/$script --help >/dev/null || {
    echo "check-fresh-clone: .venv/bin/$script --help failed after the quick start" >&2
    exit 1
  }
done
untracked=$(git status --porcelain --untracked-files=all)
if [[ -n $untracked ]]; then
  printf 'check-fresh-clone: the quick start left files git does not ignore:\n%s\n' "$untracked" >&2
  exit 1
fi
echo "gpubench: fresh-clone check passed: ${reports[0]}"
