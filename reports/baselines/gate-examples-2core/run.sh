#!/usr/bin/env bash
# Real gates of the example programs through the installed command (gpubench-gate), on this idle
# 2-core VM: A/A and against a copy whose CPU function does about 5 % more work. Each gate's files
# under /tmp/g51/gates/<name>/, one summary line each in /tmp/g51/summary.txt.
set -u
G=/work/main/.venv/bin/gpubench-gate
declare -A FILTER=(
  [saxpy]='^saxpy/cpu/loop/n:(1024|16384|262144|4194304)$'
  [softmax]='^softmax/cpu/loop/rows:(8|64|512|4096)/cols:1024$'
  [polynomial]='^polynomial/cpu/loop/n:(1024|16384)$'
)
gate() { # name example contender-kind(base|slow)
  local name=$1 ex=$2 kind=$3 out=/tmp/g51/gates/$1 start status
  local base=/tmp/g51/build-$ex/$ex cont=/tmp/g51/build-$ex/$ex
  [[ $kind == slow ]] && cont=/tmp/g51/build-$ex-slow/$ex
  rm -rf "$out"; mkdir -p "$out"
  start=$(date +%s.%N)
  "$G" --base-bench "$base" --contender-bench "$cont" --benchmark_filter="${FILTER[$ex]}" \
    --out-dir "$out" >"$out/gate.out" 2>"$out/gate.err"
  status=$?
  printf '%s %s %s exit=%d seconds=%.0f load=%s line=%s\n' "$name" "$ex" "$kind" "$status" \
    "$(echo "$(date +%s.%N) - $start" | bc)" "$(cut -d' ' -f1 /proc/loadavg)" \
    "$(grep '^gate: ' "$out/gate.out" | tail -1)" | tee -a /tmp/g51/summary.txt
}
i=0
for round in 1 2 3 4 5 6 7 8 9 10; do
  ex=(saxpy softmax polynomial); ex=${ex[$(( (round - 1) % 3 ))]}
  gate "aa-$round" "$ex" base
  gate "slow-$round" "$ex" slow
done
echo done >> /tmp/g51/summary.txt
