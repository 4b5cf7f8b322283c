#!/usr/bin/env bash
# Every test: builds (incrementally), runs the C++ tests through CTest (GPU tests, label `gpu`,
# report "Skipped" on a machine without a GPU), then through pytest the Python tools' tests, the
# layering check (tests/layout: each source folder includes only from the folders below it), the
# output contract (tests/contract) and the README's examples (tests/docs), in JOBS processes
# (default: one per core).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

configure_and_build
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS"
cd "$ROOT"
GPUBENCH_BENCH="$BUILD_DIR/benchmarks/bench" run_pytest "$PYTHON" -q \
  tests/tools tests/layout tests/contract tests/docs
