# Shared by the scripts in this folder: paths, the CUDA compiler, the Python environment.
# shellcheck shell=bash
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
VENV=$ROOT/.venv
# nvcc is often installed in /usr/local/cuda/bin without being on PATH; CMake finds it through
# CUDACXX. Without it the project builds CPU-only and says so.
if [[ -z ${CUDACXX:-} ]] && ! command -v nvcc >/dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi
# The interpreter of the tools: PYTHON from the caller's environment when it names one (a Python
# with PyTorch for the references, or a test's stand-in), else the project's virtual environment.
# What the caller chose is remembered on the first source, so sourcing this file again after
# install-deps.sh has created .venv moves an unset PYTHON into .venv instead of keeping the
# python3 fallback of a machine that had no .venv yet.
: "${GPUBENCH_CALLER_PYTHON=${PYTHON:-}}"
if [[ -n $GPUBENCH_CALLER_PYTHON ]]; then
  PYTHON=$GPUBENCH_CALLER_PYTHON
elif [[ -x $VENV/bin/python ]]; then
  PYTHON=$VENV/bin/python
else
  PYTHON=python3
fi
# Exits 2 with one line naming the variable, its value and the range when `name` is set to
# anything but a number from `low` to `high` (`integer`: a whole number); an unset or empty one
# is left to its default. Every number a script reads from the environment passes here first.
require_number() {  # name low high [integer]
  local name=$1 low=$2 high=$3 kind=${4:-number}
  local value=${!name-}
  [[ -z $value ]] && return 0
  local pattern='^[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$' wanted="a number from $low to $high"
  [[ $kind == integer ]] && { pattern='^[0-9]+$'; wanted="a whole number from $low to $high"; }
  if [[ ! $value =~ $pattern ]] ||
    ! awk -v v="$value" -v lo="$low" -v hi="$high" 'BEGIN { exit !(v + 0 >= lo && v + 0 <= hi) }'; then
    echo "gpubench: $name='$value' is not $wanted" >&2
    exit 2
  fi
}
require_number JOBS 1 1024 integer
JOBS=${JOBS:-$(nproc)}

# ccache, where installed (install-deps.sh installs it), keeps every compile: CI builds the same
# sources again in the fresh-clone check and in the paired gate's build of the parent, and a local
# rebuild after a branch switch recompiles only what changed. CMake reads these variables when it
# first configures a build folder. CCACHE_BASEDIR is this checkout, so that a compile is cached with
# paths relative to it and another clone of the same sources hits. GPUBENCH_CCACHE=0 builds
# without it.
require_number GPUBENCH_CCACHE 0 1 integer
if [[ ${GPUBENCH_CCACHE:-1} != 0 ]] && command -v ccache >/dev/null 2>&1; then
  export CMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER:-ccache}
  export CMAKE_CUDA_COMPILER_LAUNCHER=${CMAKE_CUDA_COMPILER_LAUNCHER:-ccache}
  export CCACHE_BASEDIR=$ROOT
fi

# The tests of the build in BUILD_DIR that carry CTest label `$1` (as label:N, in the order N, or
# plain, by name), one per line; nothing when none does (tools/gpu-check, stage-build.sh).
labelled_tests() {
  ctest --test-dir "$BUILD_DIR" --show-only=json-v1 2>/dev/null | "$PYTHON" -c '
import json, re, sys
label = re.compile(re.escape(sys.argv[1]) + r"(?::(\d+))?")
ranked = []
for test in json.load(sys.stdin).get("tests", []):
    for labels in (p["value"] for p in test.get("properties", []) if p["name"] == "LABELS"):
        ranked += [(int(m.group(1) or 0), test["name"]) for m in map(label.fullmatch, labels) if m]
for _, name in sorted(ranked):
    print(name)' "$1" 2>/dev/null
}

# pytest with the given arguments, in JOBS processes (pytest-xdist, from tools/requirements-dev.txt)
# where the interpreter has it. Whole files go to one process (--dist loadfile): a file's module
# fixtures are built once, and the README's examples run in their order, each using the files the
# one before wrote. The tests marked quiet_machine time real runs and skip where the machine was
# busy (beside another test process they would skip every time), so they run after, alone.
run_pytest() { # $1 the interpreter, then pytest's arguments
  local python=$1
  shift
  if ((JOBS > 1)) && "$python" -c 'import xdist' 2>/dev/null; then
    "$python" -m pytest -n "$JOBS" --dist loadfile -m "not quiet_machine" "$@"
    "$python" -m pytest -m quiet_machine "$@"
  else
    "$python" -m pytest "$@"
  fi
}

configure_and_build() {
  cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release ${CMAKE_ARGS:-}
  cmake --build "$BUILD_DIR" -j "$JOBS"
}
