#!/usr/bin/env bash
# AddressSanitizer and UndefinedBehaviorSanitizer on the host code: builds the `sanitize` preset
# (CMakePresets.json: CPU-only, so the build is quick and every benchmark runs on host code, in
# build-sanitize/), runs its CTest (which runs the sanitized bench too), a short sweep of every CPU
# benchmark and `bench --list-all --full`, and fails when a sanitizer reports anything.
# OpenBLAS and Google Benchmark are not instrumented: ASan still checks every access our code makes
# to the buffers it hands them, but not their own accesses.
# Extra arguments go to the sweep's bench, e.g. --benchmark_filter=matmul/cpu.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

SANITIZE_DIR=$ROOT/build-sanitize
REPORTS=$SANITIZE_DIR/sanitizer-reports
rm -rf "$REPORTS"
mkdir -p "$REPORTS"
# ASan's and LeakSanitizer's reports go to files of their own (<tool>.<pid>), also from the bench
# processes the tests start, whose stderr the tests keep to themselves; a report in any of them
# fails the script. GCC's UBSan, linked with ASan, writes to stderr whatever log_path says, so its
# reports are found by their exit code instead: 86, which no test expects of a process it starts
# and which fails the script's own bench runs. halt_on_error stops at the first report (for UBSan
# -fno-sanitize-recover=undefined already does).
UBSAN_EXIT_CODE=86
export ASAN_OPTIONS="log_path=$REPORTS/asan:halt_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=$UBSAN_EXIT_CODE"

cd "$ROOT"
# The preset builds at -O1 with debug information (the level AddressSanitizer's documentation
# recommends): a fifth faster to compile than -O2 here, and the checked tests and sweep no slower.
cmake --preset sanitize
cmake --build --preset sanitize -j "$JOBS"

status=0
# Timing bounds say nothing about memory or undefined behaviour and do not hold in an instrumented
# build on a busy machine: OpenBLAS against the peak measured with the instrumented clock loop.
GTEST_FILTER=-CpuInfo.OpenBlasOnOneCoreReachesMostOfThePeakAndNoMore \
  ctest --preset sanitize -j "$JOBS" || status=1
bench=$SANITIZE_DIR/benchmarks/bench
run_bench() {
  local code=0
  "$bench" "$@" >/dev/null || code=$?
  if ((code == UBSAN_EXIT_CODE)); then
    echo "sanitize.sh: UndefinedBehaviorSanitizer stopped bench $* (its report is above)" >&2
  fi
  ((code == 0)) || status=1
}
# Every CPU benchmark of the default sweep once, briefly: one iteration of most rows.
run_bench --benchmark_filter=cpu --benchmark_min_time=0.01 \
  --benchmark_out="$SANITIZE_DIR/sanitize-sweep.json" "$@"
run_bench --list-all --full

reports=$(find "$REPORTS" -type f | sort)
if [[ -n $reports ]]; then
  count=$(wc -l <<<"$reports")
  first=$(head -n 1 <<<"$reports")
  echo "sanitize.sh: $count sanitizer report(s) in $REPORTS; the first, $first:" >&2
  cat "$first" >&2
  for report in $reports; do
    echo "$report: $(grep -m 1 -E 'ERROR|SUMMARY' "$report")" >&2
  done
  status=1
fi
if [[ $status -ne 0 ]]; then
  echo "sanitize.sh: FAILED (see above)" >&2
else
  echo "sanitize.sh: no sanitizer reports; tests and sweep passed"
fi
exit "$status"
