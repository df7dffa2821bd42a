#!/usr/bin/env bash
# Session 10, call 6: node rows (v3 loop + factored Jacobian): rows-rounds tests, then
# `warpkit repro fem --backend gpu` (the committed table).
set -u
: "${OUT:?}"
mkdir -p /tmp/g && tar -C /tmp/g -xJf .gpu/s.tar.xz
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/gpu.txt" 2>&1
cp .gpu/COMMIT "$OUT/commit.txt"; export WARPKIT_COMMIT=$(cat .gpu/COMMIT)
start=$SECONDS; BUDGET=175
run_for() { local want=$1; shift; local left=$((BUDGET-(SECONDS-start)-3)); ((left<want)) && want=$left
  ((want<5)) && { echo "(skipped: budget spent) $*"; return 0; }
  echo "\$ (limit ${want}s) $*"; local t0=$SECONDS; timeout -k 5 "$want" "$@"; local rc=$?
  ((rc==124||rc==137)) && echo "(stopped at its limit)"; echo "(exit $rc after $((SECONDS-t0))s)"; }
F=$(ls /tmp/g/tests/gpu_fem-*)
{
  for t in every_strategy_matches_cpu_in_f32 high_valence_nodes_match_cpu; do
    WARPKIT_FEM_STRATEGY=rows-rounds run_for 30 $F $t --exact --include-ignored --test-threads 1
  done
  WARPKIT_FEM_STRATEGY=rows-rounds run_for 30 compute-sanitizer --tool memcheck $F every_strategy_matches_cpu_in_f64 --exact --include-ignored --test-threads 1
} >"$OUT/tests.log" 2>&1
run_for 150 /tmp/g/bin/warpkit repro fem --backend gpu --sizes 16,32,64,128 --out /tmp/repro >"$OUT/repro.log" 2>&1
tar -C /tmp -czf "$OUT/repro-fem.tgz" repro 2>/dev/null
grep -E "test result|FAILED|panicked|exit |ERROR SUMMARY" "$OUT/tests.log" "$OUT/repro.log" >"$OUT/summary.txt"
