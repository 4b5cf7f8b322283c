#!/usr/bin/env bash
# Installs the suite from BUILD_DIR (default build/) to BUILD_DIR/package and builds every folder of
# examples/ against that prefix, each from a clean folder, into BUILD_DIR/examples/<name>/<name>:
# a program of the user's own, as docs/your-own-workload.md builds it (the package's CMake config,
# not the source tree). scripts/check-examples.sh runs them in CI; scripts/stage-build.sh carries
# them to a GPU machine, where tools/gpu-check's examples step runs them.
#
# CUDA architectures: EXAMPLES_CUDA_ARCHITECTURES, else the visible GPU's own (native), else 90.
# One architecture is enough for the -Werror check; the examples' own CMakeLists.txt default to
# 80 and 90, as the suite does. Exits 0 with one line where there is no CUDA compiler.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# Cleared first, so a machine without a CUDA compiler leaves no earlier build's examples behind.
rm -rf "$BUILD_DIR/package" "$BUILD_DIR/examples"
if [[ -z ${CUDACXX:-} ]] && ! command -v nvcc >/dev/null 2>&1; then
  echo "build-examples: no CUDA compiler: the examples are not built" >&2
  exit 0
fi
[[ -x $BUILD_DIR/benchmarks/bench ]] ||
  { echo "build-examples: no build in $BUILD_DIR (build first: scripts/test.sh)" >&2; exit 2; }
if [[ -z ${EXAMPLES_CUDA_ARCHITECTURES:-} ]]; then
  EXAMPLES_CUDA_ARCHITECTURES=90
  nvidia-smi -L >/dev/null 2>&1 && EXAMPLES_CUDA_ARCHITECTURES=native
fi
cmake --install "$BUILD_DIR" --prefix "$BUILD_DIR/package" >/dev/null
for source in "$ROOT"/examples/*/CMakeLists.txt; do
  example=$(basename "$(dirname "$source")")
  echo "build-examples: $example"
  cmake -S "$(dirname "$source")" -B "$BUILD_DIR/examples/$example" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$BUILD_DIR/package" \
    -DCMAKE_CUDA_ARCHITECTURES="$EXAMPLES_CUDA_ARCHITECTURES" >/dev/null
  cmake --build "$BUILD_DIR/examples/$example" -j "$JOBS" >/dev/null
done
