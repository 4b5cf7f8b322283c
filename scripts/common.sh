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
JOBS=${JOBS:-$(nproc)}

configure_and_build() {
  cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release ${CMAKE_ARGS:-}
  cmake --build "$BUILD_DIR" -j "$JOBS"
}
