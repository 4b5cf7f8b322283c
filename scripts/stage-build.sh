#!/usr/bin/env bash
# Copies what running the tests, bench and the public API's examples needs on a GPU machine that has the CUDA driver and
# toolkit but not this project's build dependencies (Google Benchmark, OpenBLAS, GoogleTest):
# the executables (stripped), CTest's files, and in lib/ the shared libraries they load from
# outside the C runtime and the CUDA toolkit.
#
# Usage: scripts/stage-build.sh [--gpu-tests] [DIR]   (DIR defaults to build-staged/, ignored by git)
#   --gpu-tests  only the tests CTest labels `gpu` (about 6 MB of the tests' 15): what
#                `tools/gpu-check --quick` runs, for a machine that takes a limited size of files
#                (the CPU tests are then listed by CTest but absent: run gpu-check's full `tests`
#                step from a whole staged build)
# Then, on the GPU machine, from a checkout of the same commit:
#   LD_LIBRARY_PATH=$PWD/DIR/lib BUILD_DIR=$PWD/DIR tools/gpu-check --quick
# The executables and CTest's files name this build's absolute paths (the tests find bench and
# data/ through them, docs/gpu-check.md): on the GPU machine, put the checkout at the same path
# (or link that path to it) and DIR at the build folder's path.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

gpu_tests_only=0
[[ ${1:-} == --gpu-tests ]] && { gpu_tests_only=1; shift; }
stage=${1:-$ROOT/build-staged}
[[ -x $BUILD_DIR/benchmarks/bench ]] ||
  { echo "stage-build: no bench in $BUILD_DIR/benchmarks (build first: scripts/test.sh)" >&2; exit 2; }
rm -rf "$stage"
mkdir -p "$stage/benchmarks" "$stage/tests" "$stage/lib"
cp "$BUILD_DIR/CTestTestfile.cmake" "$stage/"
cp "$BUILD_DIR/tests/CTestTestfile.cmake" "$stage/tests/"
if ((gpu_tests_only)); then
  mapfile -t tests < <(labelled_tests gpu)
  ((${#tests[@]})) || { echo "stage-build: the build's CTest files label no test gpu" >&2; exit 2; }
  tests=("${tests[@]/#/$BUILD_DIR/tests/}")
else
  tests=("$BUILD_DIR"/tests/test_*)
fi
executables=("$BUILD_DIR/benchmarks/bench" "${tests[@]}")
cp "$BUILD_DIR/benchmarks/bench" "$stage/benchmarks/"
cp "${tests[@]}" "$stage/tests/"
strip "$stage/benchmarks/bench" "$stage"/tests/test_*
# The public API's examples where scripts/build-examples.sh built them (it installs the suite and
# compiles each example: run it before staging for a GPU machine), for gpu-check's examples step;
# libgpubench goes to lib/ with the other libraries.
[[ -d $BUILD_DIR/examples ]] ||
  echo "stage-build: no examples in $BUILD_DIR/examples (scripts/build-examples.sh builds them)"
for program in "$BUILD_DIR"/examples/*/; do
  example=$(basename "$program")
  [[ -x $program/$example ]] || continue
  mkdir -p "$stage/examples/$example"
  cp "$program/$example" "$stage/examples/$example/"
  strip "$stage/examples/$example/$example"
  executables+=("$program/$example")
done
# The libraries to carry: everything the loader resolves except the C runtime (libc, libm, libstdc++,
# libgcc_s, ...: the GPU machine's own, which are as new or newer) and CUDA's (the driver's and the
# toolkit's there must match each other, not this machine).
ldd "${executables[@]}" 2>/dev/null | awk '/=> \// {print $1, $3}' | sort -u |
  grep -vE '^(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libnvidia)[.-]' |
  while read -r name path; do cp -L "$path" "$stage/lib/$name"; done
echo "stage-build: $(du -sh "$stage" | cut -f1) in $stage (built in $BUILD_DIR, source $ROOT)"
ls "$stage/lib"
