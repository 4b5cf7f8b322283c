#!/usr/bin/env bash
# One command from a fresh checkout to a report: installs what is missing, builds, runs the default
# sweep (about 25 s on a 2-core machine without a GPU, 3 minutes on an H100) and writes the JSON and
# the report under reports/<date-time>/. Extra arguments go to `bench` (e.g. --full, or
# --benchmark_filter=matmul).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

"$ROOT/scripts/install-deps.sh"
source "$ROOT/scripts/common.sh"  # PYTHON now points into .venv
configure_and_build

run_dir=$ROOT/reports/$(date +%Y%m%d-%H%M%S)
mkdir -p "$run_dir"
"$BUILD_DIR/benchmarks/bench" --benchmark_out="$run_dir/bench.json" --benchmark_out_format=json "$@" |
  tee "$run_dir/bench.txt"
echo "gpubench: benchmark JSON written to $run_dir/bench.json"
PYTHONPATH=$ROOT/tools "$PYTHON" -m gpubench_tools.report "$run_dir/bench.json" --out "$run_dir"
