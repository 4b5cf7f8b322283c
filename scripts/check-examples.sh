#!/usr/bin/env bash
# The public API as a user meets it (docs/your-own-workload.md): every example built against the
# installed suite from a clean folder (scripts/build-examples.sh), each run (its CPU rows, and its
# GPU rows where a GPU is visible) to a JSON file, every row measured without an error, and the
# JSON read by the tools: the strict reader, a report, history add, export, and compare of the file
# against itself. No tool is told which example it reads. Uses the build in BUILD_DIR (built by scripts/test.sh).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

"$ROOT/scripts/build-examples.sh"
[[ -d $BUILD_DIR/examples ]] || exit 0  # no CUDA compiler: said by build-examples
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for program in "$BUILD_DIR"/examples/*/; do
  example=$(basename "$program")
  # Its own --help: usage under its own name, none of bench's sweep flags; --full is refused.
  help=$("$program/$example" --help)
  if [[ $help != "$example "* || $help == *--full* ]]; then
    echo "check-examples: $example --help is not the program's own: $(head -1 <<<"$help")" >&2
    exit 1
  fi
  if "$program/$example" --full >/dev/null 2>&1; then
    echo "check-examples: $example accepted --full, a flag only bench has" >&2
    exit 1
  fi
  # Quickly: this proves the path, not the numbers. Its console and progress lines are shown only
  # if it fails.
  # Four repetitions: what compare's U test needs to judge a benchmark at all.
  if ! "$program/$example" --benchmark_min_time=0.01s --benchmark_repetitions=4 \
    --benchmark_out="$work/$example.json" >"$work/$example.log" 2>&1; then
    cat "$work/$example.log" >&2
    echo "check-examples: $example failed" >&2
    exit 1
  fi
  # Every row measured: a row's error (a GPU result that differs from the CPU's, a CUDA error)
  # would otherwise pass unseen, since the program exits 0 when some rows failed.
  rows=$(PYTHONPATH=$ROOT/tools "$PYTHON" -m gpubench_tools --errors "$work/$example.json")
  [[ $rows == "0 rows failed"* ]] || {
    cat "$work/$example.log" >&2
    echo "check-examples: $example: $rows" >&2
    exit 1
  }
  "$PYTHON" -m gpubench_tools.report "$work/$example.json" --out "$work/$example-report" --quiet
  [[ -s $work/$example-report/report.html ]] || {
    echo "check-examples: $example: no report.html" >&2
    exit 1
  }
  # Without GPU rows the report shows the example on its own: a section with its times against
  # its work and each row under the CPU's roofs, which the answer's line links to.
  md=$work/$example-report/report.md
  if grep -q "no GPU rows to compare" "$md" &&
    ! grep -q "^## $example: measured on the CPU only" "$md"; then
    echo "check-examples: $example: CPU rows only, but the report has no section of them" >&2
    exit 1
  fi
  # Stored in a history database and exported for a dashboard, as any bench file.
  "$PYTHON" -m gpubench_tools.history add "$work/history.db" "$work/$example.json" --quiet
  "$PYTHON" -m gpubench_tools.export --format bencher "$work/$example.json" \
    --out "$work/$example-bmf.json" --quiet
  # The file against itself: no regression (0), or not resolved (3) where a busy machine marked
  # its rows disturbed; anything else (2: it could not read or judge the file) fails.
  status=0
  "$PYTHON" -m gpubench_tools.compare "$work/$example.json" "$work/$example.json" --quiet ||
    status=$?
  if ((status != 0 && status != 3)); then
    echo "check-examples: $example: compare of the file against itself exited $status" >&2
    exit 1
  fi
  echo "check-examples: $example: $rows; report, history, export and compare read it"
done
echo "check-examples: every example built against the installed package, ran and was read"
