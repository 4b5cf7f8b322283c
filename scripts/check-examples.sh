#!/usr/bin/env bash
# The public API as a user meets it (docs/your-own-workload.md): the suite installed to a prefix,
# every folder of examples/ configured and built against that prefix from a clean folder, each
# example's CPU rows run to a JSON file (its GPU rows too where a GPU is visible), and the JSON
# read by the tools: the strict reader, a report, and compare of the file against itself. No tool
# is told which example it reads. Uses the build in BUILD_DIR (built by scripts/test.sh); the
# examples need nvcc (their kernels are CUDA), and are skipped with one line where there is none.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

if [[ -z ${CUDACXX:-} ]] && ! command -v nvcc >/dev/null 2>&1; then
  echo "check-examples: no CUDA compiler: the examples are not built" >&2
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$BUILD_DIR" --prefix "$work/prefix" >/dev/null
# Only one architecture: compiling both of the default (80 and 90) doubles the time and the -Werror
# check is the same. The visible GPU's own where there is one, so its rows run; else sm_90.
if nvidia-smi -L >/dev/null 2>&1; then
  architectures=${EXAMPLES_CUDA_ARCHITECTURES:-native}
else
  architectures=${EXAMPLES_CUDA_ARCHITECTURES:-90}
fi
for source in "$ROOT"/examples/*/CMakeLists.txt; do
  example=$(basename "$(dirname "$source")")
  echo "check-examples: $example"
  cmake -S "$(dirname "$source")" -B "$work/$example" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_CUDA_ARCHITECTURES="$architectures" >/dev/null
  cmake --build "$work/$example" -j "$JOBS" >/dev/null
  # The CPU rows, quickly: this proves the path, not the numbers. Its console and progress lines
  # are shown only if it fails.
  if ! "$work/$example/$example" --benchmark_min_time=0.01s \
    --benchmark_out="$work/$example.json" >"$work/$example.log" 2>&1; then
    cat "$work/$example.log" >&2
    echo "check-examples: $example failed" >&2
    exit 1
  fi
  # Every row measured: a row's error (a GPU result that differs from the CPU's, a CUDA error)
  # would otherwise pass unseen, since bench exits 0 when some rows failed.
  "$PYTHON" - "$work/$example.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["benchmarks"]
failed = [f"{row['name']}: {row.get('error_message', '')}" for row in rows if row.get("error_occurred")]
if not rows or failed:
    sys.exit("check-examples: rows with errors (or none at all):\n" + "\n".join(failed))
PY
  "$PYTHON" -m gpubench_tools.report "$work/$example.json" --out "$work/$example-report" --quiet
  [[ -s $work/$example-report/report.html ]] || {
    echo "check-examples: $example: no report.html" >&2
    exit 1
  }
  # The file against itself: no regression (0), or not resolved (3) where a busy machine marked
  # its rows disturbed; anything else means compare could not read it.
  status=0
  "$PYTHON" -m gpubench_tools.compare "$work/$example.json" "$work/$example.json" --quiet ||
    status=$?
  if ((status != 0 && status != 3)); then
    echo "check-examples: $example: compare of the file against itself exited $status" >&2
    exit 1
  fi
done
echo "check-examples: every example built against the installed package, ran and was read"
