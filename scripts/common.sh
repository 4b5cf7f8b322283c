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
# The project's virtual environment unless PYTHON names another interpreter (one with PyTorch for
# the references, or a test's stand-in).
if [[ -z ${PYTHON:-} ]]; then
  if [[ -x $VENV/bin/python ]]; then PYTHON=$VENV/bin/python; else PYTHON=python3; fi
fi
JOBS=${JOBS:-$(nproc)}

configure_and_build() {
  cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release ${CMAKE_ARGS:-}
  cmake --build "$BUILD_DIR" -j "$JOBS"
}
