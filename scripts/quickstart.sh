#!/usr/bin/env bash
# One command from a fresh checkout to a report: installs what is missing, builds, runs the default
# sweep, five repetitions of each benchmark (81 s on an idle 2-core machine without a GPU, after a
# build of about 1.5 minutes: README.md has the measured times), and writes the JSON and the report
# under reports/<date-time>/. Extra arguments go to `bench` (e.g. --full, or
# --benchmark_filter=matmul). A run without GPU rows is reported against the committed H100
# reference run for its GPU side (see below).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

"$ROOT/scripts/install-deps.sh"
source "$ROOT/scripts/common.sh"  # again: PYTHON now names .venv/bin/python, unless the caller set it
configure_and_build

run_dir=$ROOT/reports/$(date +%Y%m%d-%H%M%S)
mkdir -p "$run_dir"
# Five repetitions of every benchmark, each timed for at least 0.01 s: the report's medians, bands and
# noise marks need several samples (one repetition would state one draw from a noisy machine as
# fact), and five a side is what the compare gate's U test needs to judge at alpha 0.05 (four is
# its minimum). Five short repetitions cost less than one long one would in trust: the CPU-only
# default sweep takes 81 s on an idle 2-core machine. Arguments given to this script come
# after these and override them (Google Benchmark keeps a flag's last value). The terminal shows
# each benchmark's mean, median, stddev and cv; the JSON keeps every repetition for the report.
"$BUILD_DIR/benchmarks/bench" --benchmark_repetitions=5 --benchmark_min_time=0.01s \
  --benchmark_display_aggregates_only=true \
  --benchmark_out="$run_dir/bench.json" --benchmark_out_format=json "$@" |
  tee "$run_dir/bench.txt"
echo "gpubench: benchmark JSON written to $run_dir/bench.json"

# Without a GPU (a laptop, a VM) the run has no GPU rows, and a report of the CPU alone cannot show
# where the GPU would overtake it. The committed H100 run then supplies the GPU side, labelled in
# the report as another machine's measurement: every committed bench file of the H100 machine,
# reports/baselines/h100-80gb-hbm3-<part>.json, not its PyTorch reference runs (-torch-<part>.json).
# The decision reads the JSON, not the hardware: a filtered run on a GPU machine
# (--benchmark_filter=cpu) has no GPU rows either. If the count fails (an unusable file), the
# report below says why.
reference=()
for file in "$ROOT"/reports/baselines/h100-80gb-hbm3-*.json; do
  [[ $file == */h100-80gb-hbm3-torch-* ]] || reference+=("$file")
done
report_args=()
gpu_rows=$(PYTHONPATH=$ROOT/tools "$PYTHON" -m gpubench_tools --gpu-rows "$run_dir/bench.json") ||
  gpu_rows=unknown
if [[ "$gpu_rows" == 0 ]]; then
  echo "gpubench: no GPU rows in this run; the report takes its GPU side from the reference run" \
    "${reference[*]#"$ROOT/"} (an H100 on another machine)"
  report_args=(--gpu-reference "${reference[@]}")
fi
PYTHONPATH=$ROOT/tools "$PYTHON" -m gpubench_tools.report "$run_dir/bench.json" ${report_args[@]+"${report_args[@]}"} \
  --out "$run_dir"
