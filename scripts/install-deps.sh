#!/usr/bin/env bash
# Installs what gpubench needs and is missing: the C++ libraries from the distribution's packages
# (apt, as root or through sudo), and into .venv the Python tools with their packages.
# The CUDA toolkit is not installed here: with nvcc present the GPU path is built, without it the
# project builds CPU-only.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# valgrind: the regression gate's instruction lane runs bench under its callgrind, and bench's
# timers use its client-request headers (valgrind/callgrind.h, in the same package).
# ccache: a second build of the same sources (another clone, the paired gate's parent) reuses the
# compiles (scripts/common.sh).
packages=(cmake g++ make git pkg-config libopenblas-dev nlohmann-json3-dev libbenchmark-dev
          libgtest-dev python3-venv valgrind ccache)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
if ((${#missing[@]})); then
  echo "gpubench: installing ${missing[*]}"
  sudo_prefix=()
  [[ $(id -u) -ne 0 ]] && sudo_prefix=(sudo)
  "${sudo_prefix[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_prefix[@]}" apt-get install -y -qq "${missing[@]}"
fi

if [[ ! -x $VENV/bin/python ]]; then
  python3 -m venv "$VENV"
fi
# The tools package itself, editable: every console script (gpubench-report, gpubench-compare,
# ...) lands in .venv/bin, a checkout's edits take effect without reinstalling, and no build/
# folder is left in tools/ (an editable install builds in a temporary folder). Its dependencies
# come from tools/requirements.txt, each with its floor; the test tools from requirements-dev.txt.
"$VENV/bin/python" -m pip install -q --disable-pip-version-check \
  -r "$ROOT/tools/requirements-dev.txt" -e "$ROOT/tools"
echo "gpubench: dependencies ready (Python tools in $VENV; console scripts in $VENV/bin)"
