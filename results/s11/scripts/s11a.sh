#!/usr/bin/env bash
# Session 11, call 1: FEM rows-pre (merged from fem-rows-pre): correctness against the CPU,
# memcheck and racecheck, every strategy at 128³, ncu of the two rows-pre kernels.
set -u
: "${OUT:?}"
bash scripts/unstage || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/gpu.txt" 2>&1
cp .gpu/COMMIT "$OUT/commit.txt"; export WARPKIT_COMMIT=$(cat .gpu/COMMIT)
start=$SECONDS; BUDGET=${BUDGET:-420}
run_for() { local want=$1; shift; local left=$((BUDGET-(SECONDS-start)-3)); ((left<want)) && want=$left
  ((want<5)) && { echo "(skipped: budget spent) $*"; return 0; }
  echo "\$ (limit ${want}s) $*"; local t0=$SECONDS; timeout -k 5 "$want" "$@"; local rc=$?
  ((rc==124||rc==137)) && echo "(stopped at its limit)"; echo "(exit $rc after $((SECONDS-t0))s)"; }
F=$(ls .gpu/tests/gpu_fem-*)
A=(--exact --include-ignored --test-threads 1 --nocapture)
{
  for t in every_strategy_matches_cpu_in_f32 every_strategy_matches_cpu_in_f64 two_materials_match_cpu high_valence_nodes_match_cpu; do
    WARPKIT_FEM_STRATEGY=rows-pre run_for 60 $F $t "${A[@]}"
  done
  for tool in memcheck racecheck; do
    for t in every_strategy_matches_cpu_in_f64 high_valence_nodes_match_cpu; do
      WARPKIT_FEM_STRATEGY=rows-pre run_for 90 compute-sanitizer --tool $tool --print-limit 20 $F $t --exact --include-ignored --test-threads 1
    done
  done
} >"$OUT/rows-pre.log" 2>&1
{
  echo "== 128^3 all strategies"
  run_for 150 $F target_mesh_128_cubed "${A[@]}"
} >"$OUT/t128.log" 2>&1
{
  for k in fem_inverses_f32 fem_rows_pre_f32; do
    run_for 45 ncu -k regex:$k --launch-count 1 --section SpeedOfLight --section Occupancy --section WarpStateStats --section InstructionStats --section LaunchStats $F strategies_run_on_a_large_mesh --exact --include-ignored --test-threads 1
  done
} >"$OUT/ncu.log" 2>&1
grep -E "^\\\$|test result|FAILED|panicked|exit |ERROR SUMMARY|RACECHECK SUMMARY|median|failed|rows" "$OUT/rows-pre.log" "$OUT/t128.log" >"$OUT/summary.txt"
