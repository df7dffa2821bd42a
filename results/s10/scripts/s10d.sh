#!/usr/bin/env bash
# Session 10, call 4: node-row FEM v3 (rows, rows-rounds): tests, sanitizers, 128³ timings, ncu.
set -u
: "${OUT:?}"
mkdir -p /tmp/g && tar -C /tmp/g -xJf .gpu/s.tar.xz
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/gpu.txt" 2>&1
cp .gpu/COMMIT "$OUT/commit.txt"
start=$SECONDS; BUDGET=400
run_for() { local want=$1; shift; local left=$((BUDGET-(SECONDS-start)-3)); ((left<want)) && want=$left
  ((want<5)) && { echo "(skipped: budget spent) $*"; return 0; }
  echo "\$ (limit ${want}s) $*"; local t0=$SECONDS; timeout -k 5 "$want" "$@"; local rc=$?
  ((rc==124||rc==137)) && echo "(stopped at its limit)"; echo "(exit $rc after $((SECONDS-t0))s)"; }
F=$(ls /tmp/g/tests/gpu_fem-*)
A=(--exact --include-ignored --test-threads 1 --nocapture)
{
  for st in rows rows-rounds; do
    for t in every_strategy_matches_cpu_in_f32 every_strategy_matches_cpu_in_f64 two_materials_match_cpu high_valence_nodes_match_cpu; do
      WARPKIT_FEM_STRATEGY=$st run_for 60 $F $t "${A[@]}"
    done
    for tool in memcheck racecheck; do
      for t in every_strategy_matches_cpu_in_f64 high_valence_nodes_match_cpu; do
        WARPKIT_FEM_STRATEGY=$st run_for 90 compute-sanitizer --tool $tool --print-limit 20 $F $t --exact --include-ignored --test-threads 1
      done
    done
  done
  WARPKIT_FEM_STRATEGY=ppni8-blocks run_for 60 $F every_strategy_matches_cpu_in_f64 "${A[@]}"
} >"$OUT/rows.log" 2>&1
{
  echo "== 128^3 all strategies"
  run_for 150 $F target_mesh_128_cubed "${A[@]}"
} >"$OUT/t128.log" 2>&1
{
  for k in fem_rows_rounds_f32 fem_rows_f32; do
    run_for 60 ncu -k regex:$k --launch-count 1 --section SpeedOfLight --section Occupancy --section MemoryWorkloadAnalysis --section WarpStateStats --section ComputeWorkloadAnalysis --section InstructionStats $F strategies_run_on_a_large_mesh --exact --include-ignored --test-threads 1
  done
} >"$OUT/ncu.log" 2>&1
grep -E "^\\\$|test result|FAILED|panicked|exit |ERROR SUMMARY|RACECHECK SUMMARY|median|failed" "$OUT/rows.log" "$OUT/t128.log" >"$OUT/summary.txt"
