#!/usr/bin/env bash
# CPU smoke regression gate.
#
# Two ways to gate (docs/regression-gate.md explains every choice):
# - paired (--base-bench/--contender-bench, --against): two lanes. Timing: the base and the
#   contender bench run on this machine in one job, a process of each per round in random order,
#   each process's fastest of 9 short repetitions judged pair by pair; in real gates on a shared
#   2-core machine it caught one benchmark 3.5 % slower 20 times in 20, beside a bursty
#   neighbour too, and never failed unchanged code (docs/regression-gate.md). Instructions: both
#   run once under valgrind's callgrind and the instructions per iteration of single-threaded CPU
#   rows are compared; sees a 1 % change of the code's work on any machine. Either lane's
#   regression fails the gate;
# - against the committed baseline reports/baselines/ci-cpu.json (measured on another machine on
#   another day, so it allows 1.5x): a coarse check, and the only one for a first commit.
# Both run a short single-threaded OpenBLAS fp32 GEMM sweep.
#
# Usage:
#   scripts/ci_gate.sh                      run the sweep, gate it; exit 0 pass, 1 regression, 2 unusable
#                                           (1 also when a benchmark now fails or is missing from the
#                                           run; 2 also when too few repetitions to judge anything;
#                                           3 not resolved: every repetition measured while the
#                                           machine was busy)
#   scripts/ci_gate.sh --update-baseline    run the sweep and write it as the new baseline
#   scripts/ci_gate.sh --contender F.json   gate an existing result instead of running bench
#   scripts/ci_gate.sh --base-bench A --contender-bench B [--benchmark_filter=REGEX]
#                                           paired gate of two bench executables (or wrapper
#                                           scripts): exit 0 pass, 1 a benchmark slower beyond the
#                                           margin, failing or missing, or the contender crashed,
#                                           or 1 % more instructions per iteration in the
#                                           instruction lane; 2 the base crashed, bad usage,
#                                           repetitions without their partner; 3 not resolved
#                                           (the timing lane: nothing resolved, or an
#                                           interval still reaching +10 %):
#                                           neither a pass nor a regression
#   scripts/ci_gate.sh --against REF [--benchmark_filter=REGEX]
#                                           build REF (a git ref) in a temporary git worktree (its
#                                           build kept in build-gate/<commit>, reused next time)
#                                           and gate BENCH, the working tree's build, against it;
#                                           exit 2 when REF is unknown or fails to build
#   scripts/ci_gate.sh --against-parent [--benchmark_filter=REGEX]
#                                           --against HEAD~1 (.ci/run's paired gate); where this
#                                           checkout has no parent of HEAD (a first commit, a
#                                           shallow clone, no git) one line says the paired gate
#                                           did not run and why, and the exit is 0
#
# Environment:
#   BENCH       bench binary                  (default build/benchmarks/bench)
#   BASELINE    baseline JSON                 (default reports/baselines/ci-cpu.json)
#   GATE_CONFIG thresholds                    (default reports/baselines/ci-cpu.thresholds.json)
#   OUT_DIR     where results and reports go  (default reports/ci)
#   REPS        repetitions per benchmark     (default 9; not the paired gate's)
#   MIN_TIME    seconds per repetition        (default 0.1; not the paired gate's)
#   PAIRS, MAX_PAIRS  paired gate: rounds to start with, at most for an AMBIGUOUS benchmark
#                                           (defaults of gpubench_tools/compare/paired.py)
#   INNER_REPS, INNER_MIN_TIME  paired gate: repetitions per process (its fastest is its value)
#                     and seconds each (defaults of gpubench_tools/compare/interleave.py)
#   INSTRUCTIONS      paired gate: 'off' skips its instruction lane (default on: both sides
#                     under valgrind's callgrind, instructions per iteration compared)
#   INSTRUCTIONS_FILTER     the instruction lane's benchmarks (default: --benchmark_filter when
#                     given, else gpubench_tools/instructions/lane.py's DEFAULT_FILTER)
#   INSTRUCTIONS_MAX_CHANGE the instruction lane's threshold, a fraction (default 0.01)
#   GATE_BUILD_DIR    where --against keeps its builds (default build-gate)
#   GATE_CMAKE_ARGS   extra CMake arguments for the --against build (default CMAKE_ARGS, which
#                     scripts/common.sh gives the working tree's build)
#   JOBS        parallel build jobs for --against (default nproc)
#   PYTHON      interpreter for the compare tool (default .venv/bin/python, else python3)
#   OPENBLAS_CORETYPE is set to the kernels the baseline was measured with (see below).
set -euo pipefail

cd "$(dirname "$(readlink -f "$0")")/.."

BENCH=${BENCH:-build/benchmarks/bench}
BASELINE=${BASELINE:-reports/baselines/ci-cpu.json}
GATE_CONFIG=${GATE_CONFIG:-reports/baselines/ci-cpu.thresholds.json}
OUT_DIR=${OUT_DIR:-reports/ci}
# require_number, and PYTHON: the caller's, else the project's .venv, else python3.
source scripts/common.sh
require_number REPS 1 1000 integer
require_number MIN_TIME 0.001 3600
require_number PAIRS 1 10000 integer
require_number MAX_PAIRS 1 10000 integer
require_number INSTRUCTIONS_MAX_CHANGE 0.000001 0.99
require_number INNER_REPS 1 10000 integer
require_number INNER_MIN_TIME 0.0001 3600
REPS=${REPS:-9}
MIN_TIME=${MIN_TIME:-0.1}

# Square fp32 GEMMs, one thread: sizes from launch-bound (64) to compute-bound (512) so that both a
# per-call overhead and a kernel regression show. One thread because cpu_time, which this gate
# compares, counts only the main thread, and because a second thread would fight the other jobs
# of a 2-core machine. These benchmarks are also the normalisation reference of the thresholds
# ("normalize" in $GATE_CONFIG): each time is divided by the geometric mean of the median times of
# the other single-threaded fp32 benchmarks of the same run (itself left out).
SIZES=(64 192 256 384 512)
shapes=()
for s in "${SIZES[@]}"; do shapes+=("m:$s/n:$s/k:$s"); done
FILTER="^matmul/cpu/openblas/dtype:fp32/($(
  IFS='|'
  echo "${shapes[*]}"
))/threads:1\$"

die() {
  echo "ci_gate: error: $*" >&2
  exit 2
}

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'
}

# Fails, printing why, where this checkout has no parent of HEAD to gate against (--against-parent).
missing_parent() {
  if ! git rev-parse --git-dir >/dev/null 2>&1; then
    echo "not a git checkout, so there is no parent commit to build (only the committed-baseline gate ran)"
    return 1
  fi
  git rev-parse --verify -q "HEAD~1^{commit}" >/dev/null && return 0
  if [[ $(git rev-parse --is-shallow-repository 2>/dev/null) == true ]]; then
    echo "HEAD's parent is not in this shallow clone; fetch it (git fetch --deepen=1, or actions/checkout with fetch-depth: 2) to gate against it"
  else
    echo "HEAD is the first commit: it has no parent to gate against (only the committed-baseline gate ran)"
  fi
  return 1
}

mode=gate
contender=""
base_bench=""
contender_bench=""
against=""
against_parent=""
filter_arg=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --update-baseline) mode=update ;;
    --contender)
      [[ $# -ge 2 ]] || die "--contender needs a file"
      contender=$2
      shift
      ;;
    --against-parent) against_parent=1 ;;
    --base-bench | --contender-bench | --against)
      [[ $# -ge 2 && -n $2 ]] || die "$1 needs a value"
      case $1 in
        --base-bench) base_bench=$2 ;;
        --contender-bench) contender_bench=$2 ;;
        --against) against=$2 ;;
      esac
      shift
      ;;
    --benchmark_filter=* | --benchmark-filter=*) filter_arg=${1#*=} ;;
    -h | --help)
      usage
      exit 0
      ;;
    *) die "unknown argument '$1' (try --help)" ;;
  esac
  shift
done
if [[ -n $against_parent ]]; then
  [[ -z $against$base_bench$contender_bench$contender && $mode == gate ]] ||
    die "--against-parent goes with no other mode (--against, --base-bench, --contender, --update-baseline)"
  if ! parent_missing=$(missing_parent); then
    echo "ci_gate: paired gate not run: $parent_missing"
    exit 0
  fi
  against=HEAD~1
fi
if [[ -n $base_bench || -n $contender_bench || -n $against ]]; then
  [[ $mode == update || -n $contender ]] && die "--update-baseline and --contender do not go with the paired gate"
  if [[ -n $against ]]; then
    [[ -z $base_bench && -z $contender_bench ]] || die "--against REF takes no --base-bench/--contender-bench (the contender is BENCH, the working tree's build)"
    mode=against
  else
    [[ -n $base_bench && -n $contender_bench ]] || die "the paired gate needs both --base-bench and --contender-bench"
    mode=paired
  fi
elif [[ -n $filter_arg ]]; then
  die "--benchmark_filter goes with --base-bench/--contender-bench or --against"
fi
[[ $mode == update && -n $contender ]] && die "--update-baseline measures a new run; it takes no --contender"

run_sweep() { # $1 = output JSON
  [[ -x $BENCH ]] || die "bench binary '$BENCH' not found or not executable (build it, or set BENCH)"
  mkdir -p "$(dirname "$1")"
  local start=$SECONDS
  # Random interleaving spreads each benchmark's repetitions over the whole run, so a burst of
  # load from a neighbour hits one repetition of several benchmarks (which the median ignores)
  # instead of every repetition of one benchmark (which would move its median).
  if ! "$BENCH" --benchmark_filter="$FILTER" \
    --benchmark_repetitions="$REPS" \
    --benchmark_min_time="$MIN_TIME" \
    --benchmark_enable_random_interleaving=true \
    --benchmark_out="$1" --benchmark_out_format=json >"$1.log" 2>&1; then
    tail -n 20 "$1.log" >&2
    die "bench failed (full output in $1.log)"
  fi
  echo "ci_gate: smoke sweep took $((SECONDS - start)) s ($REPS repetitions, min_time $MIN_TIME s) -> $1"
}

compare() { # $1 baseline, $2 contender, then extra compare arguments
  local base=$1 cont=$2
  shift 2
  PYTHONPATH="tools${PYTHONPATH:+:$PYTHONPATH}" "$PYTHON" -m gpubench_tools.compare \
    "$base" "$cont" --config "$GATE_CONFIG" "$@"
}

# The paired gate is the tools' installed command (gpubench_tools/gate.py, `gpubench-gate`): both
# lanes and their combined verdict. $1 base command, $2 contender command; for --against, $3 and $4
# the timing lane's base binary and its data folder (the timing lane runs both sides the same way,
# not the base through $1's wrapper: interleave.py's "Both sides start alike").
paired_gate() {
  mkdir -p "$OUT_DIR"
  local extra=() lane_filter=${INSTRUCTIONS_FILTER:-$filter_arg}
  [[ -n ${PAIRS:-} ]] && extra+=(--pairs "$PAIRS")
  [[ -n ${MAX_PAIRS:-} ]] && extra+=(--max-pairs "$MAX_PAIRS")
  [[ -n ${INNER_REPS:-} ]] && extra+=(--inner-repetitions "$INNER_REPS")
  [[ -n ${INNER_MIN_TIME:-} ]] && extra+=(--min-time "$INNER_MIN_TIME")
  [[ -n ${3:-} ]] && extra+=(--timing-base-bench "$3")
  [[ -n ${4:-} && -d ${4:-} && -d data ]] && extra+=(--base-data-dir "$4" --contender-data-dir data)
  [[ -n ${INSTRUCTIONS_MAX_CHANGE:-} ]] && extra+=(--instructions-max-change "$INSTRUCTIONS_MAX_CHANGE")
  if [[ ${INSTRUCTIONS:-on} == off ]]; then
    extra+=(--instructions off) # the gate says the lane did not run
  elif [[ -z $lane_filter ]]; then
    # The suite's own default rows of the instruction lane (instructions/lane.py, DEFAULT_FILTER).
    lane_filter=$(PYTHONPATH="tools${PYTHONPATH:+:$PYTHONPATH}" "$PYTHON" -c \
      'from gpubench_tools.instructions.lane import DEFAULT_FILTER; print(DEFAULT_FILTER)')
  fi
  # One word with its value: a negative filter ('-regex') is not read as an option.
  [[ -n $lane_filter ]] && extra+=("--instructions-filter=$lane_filter")
  local status=0
  PYTHONPATH="tools${PYTHONPATH:+:$PYTHONPATH}" "$PYTHON" -m gpubench_tools.gate \
    --base-bench "$1" --contender-bench "$2" --benchmark_filter="${filter_arg:-$FILTER}" \
    --out-dir "$OUT_DIR" "${extra[@]}" || status=$?
  exit $status
}

# --against REF: the base is REF built from a temporary git worktree. A commit never changes, so
# its bench is kept in $GATE_BUILD_DIR/<commit> and reused: a second gate against the same parent
# (a CI rerun, the next push) builds nothing.
# The worktree is built in its own build/ folder, laid out as the working tree's build, so that
# ccache (scripts/common.sh) finds the compiles the two commits share. The worktree goes, so
# $GATE_BUILD_DIR/<commit> keeps bench (linked to nothing of the build folder), a copy of REF's
# data/ (the training rows read their data files, iris.csv and digits.csv, from the source tree)
# and a wrapper, bench-gate, that points bench at it.
build_ref() { # $1 ref; prints the path of the wrapper that runs its bench
  local ref=$1 commit src build log
  commit=$(git rev-parse --verify -q "$ref^{commit}") || die "--against: '$ref' is not a commit of this repository"
  build="$GATE_BUILD_DIR/$commit"
  if [[ -x $build/bench-gate && -x $build/benchmarks/bench ]]; then
    echo "ci_gate: reusing the build of $ref ($commit) in $build" >&2
    echo "$build/bench-gate"
    return
  fi
  src="$GATE_BUILD_DIR/src-$commit"
  log="$GATE_BUILD_DIR/$commit.build.log"
  mkdir -p "$GATE_BUILD_DIR"
  git worktree remove --force "$src" >/dev/null 2>&1 || rm -rf "$src"
  git worktree prune
  git worktree add --detach "$src" "$commit" >"$log" 2>&1 || die "--against: cannot check out $ref ($commit): $(tail -n 1 "$log")"
  echo "ci_gate: building $ref ($commit) in $build (log $log)" >&2
  local start=$SECONDS ok=1
  # Configured as scripts/common.sh configures the working tree's build (the same CMake arguments,
  # nvcc found the same way: common.sh, sourced above, exports CUDACXX), so the two binaries differ
  # only in their code.
  # shellcheck disable=SC2086 # GATE_CMAKE_ARGS is a list of arguments
  { cmake -S "$src" -B "$src/build" -DCMAKE_BUILD_TYPE=Release ${GATE_CMAKE_ARGS-${CMAKE_ARGS:-}} &&
    cmake --build "$src/build" --target bench -j "${JOBS:-$(nproc)}" &&
    mkdir -p "$build/benchmarks" && cp "$src/build/benchmarks/bench" "$build/benchmarks/bench"; } \
    >>"$log" 2>&1 || ok=0
  if [[ $ok == 1 && -x $build/benchmarks/bench ]]; then
    local abs
    abs=$(cd "$build" && pwd)
    rm -rf "$build/data"
    [[ -d $src/data ]] && cp -r "$src/data" "$build/data"
    # shellcheck disable=SC2016 # "$@" is for the wrapper to expand
    printf '#!/bin/sh\n# The bench of %s, with its own data files (written by scripts/ci_gate.sh --against).\nGPUBENCH_DATA_DIR=${GPUBENCH_DATA_DIR:-%q} exec %q "$@"\n' \
      "$commit" "$abs/data" "$abs/benchmarks/bench" >"$build/bench-gate"
    chmod +x "$build/bench-gate"
  fi
  git worktree remove --force "$src" >/dev/null 2>&1 || rm -rf "$src"
  git worktree prune
  if [[ $ok == 0 || ! -x $build/benchmarks/bench ]]; then
    local why
    # The first error and the two lines after it (CMake puts its message on the next line), as one.
    why=$(grep -m 1 -A 2 -E 'error|Error' "$log" | tr '\n' ' ' || true)
    [[ -n $why ]] || why=$(tail -n 1 "$log")
    rm -rf "$build" # a half-built tree is never reused
    die "--against: the base $ref ($commit) failed to build, nothing to compare with: $(echo "$why" | tr -s ' \t' ' ' | cut -c1-300) (log $log)"
  fi
  echo "ci_gate: built $ref in $((SECONDS - start)) s" >&2
  echo "$build/bench-gate"
}

if [[ $mode == paired ]]; then
  paired_gate "$base_bench" "$contender_bench"
fi
if [[ $mode == against ]]; then
  [[ -x $BENCH ]] || die "the contender '$BENCH' (the working tree's build) is not built (build it, or set BENCH)"
  GATE_BUILD_DIR=${GATE_BUILD_DIR:-build-gate}
  base_bench=$(build_ref "$against")
  base_dir=$(dirname "$base_bench")
  paired_gate "$base_bench" "$BENCH" "$base_dir/benchmarks/bench" "$base_dir/data"
fi

if [[ $mode == update ]]; then
  tmp="$OUT_DIR/ci-cpu-new-baseline.json"
  run_sweep "$tmp"
  # A baseline that cannot be read, or that misses the reference benchmark, would turn every
  # later CI run into exit 2: check it against itself before it replaces the old one.
  compare "$tmp" "$tmp" --quiet >/dev/null || die "the new run does not compare cleanly; baseline not updated"
  mkdir -p "$(dirname "$BASELINE")"
  cp "$tmp" "$BASELINE"
  echo "ci_gate: baseline written to $BASELINE: commit it"
  exit 0
fi

[[ -f $BASELINE ]] || die "no baseline at $BASELINE (create one with scripts/ci_gate.sh --update-baseline)"
if [[ -z $contender ]]; then
  # Measure with the baseline's OpenBLAS kernels. OpenBLAS picks them per CPU (or from
  # OPENBLAS_CORETYPE), and on one machine two kernel sets differ by 2x or more: a contender on
  # other kernels would hide a real slowdown or fake one.
  baseline_core=$(PYTHONPATH="tools${PYTHONPATH:+:$PYTHONPATH}" "$PYTHON" -c '
import sys
from gpubench_tools.benchjson import load_report
from gpubench_tools.compare import openblas_core
print(openblas_core(load_report(sys.argv[1]).context) or "")' "$BASELINE" 2>/dev/null) || baseline_core=""
  # A forced core type is not checked against the CPU: kernels it cannot run die with SIGILL.
  case $baseline_core in
    Haswell | Zen) needed_flag=avx2 ;;
    SkylakeX) needed_flag=avx512f ;;
    Cooperlake) needed_flag=avx512_bf16 ;;
    SapphireRapids) needed_flag=amx_tile ;;
    *) needed_flag="" ;;
  esac
  if [[ -n $baseline_core && ${OPENBLAS_CORETYPE:-} != "$baseline_core" ]]; then
    if [[ -n $needed_flag ]] && ! grep -qw "$needed_flag" /proc/cpuinfo; then
      echo "ci_gate: warning: this CPU lacks $needed_flag, so it cannot run the baseline's $baseline_core kernels; measuring with OpenBLAS's own choice (the comparison says which kernels differ)" >&2
    else
      echo "ci_gate: OPENBLAS_CORETYPE=$baseline_core (the baseline's kernels; was '${OPENBLAS_CORETYPE:-unset}')"
      export OPENBLAS_CORETYPE=$baseline_core
    fi
  fi
  contender="$OUT_DIR/ci-cpu.json"
  run_sweep "$contender"
fi
mkdir -p "$OUT_DIR"
set +e
compare "$BASELINE" "$contender" --markdown "$OUT_DIR/ci-cpu-compare.md" --json "$OUT_DIR/ci-cpu-compare.json"
status=$?
set -e
echo "ci_gate: exit $status (0 pass, 1 regression, 2 unusable input or cannot judge, 3 not resolved: the machine was busy); report in $OUT_DIR/ci-cpu-compare.md"
exit $status
