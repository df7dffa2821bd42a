#!/usr/bin/env bash
# Session 10, call 5: every gpu_fem test (node rows v5, the factored Jacobian), sanitizers of the
# changed kernels, and `warpkit repro fem --backend gpu` (with the bandwidth tables).
set -u
: "${OUT:?}"
mkdir -p /tmp/g && tar -C /tmp/g -xJf .gpu/s.tar.xz
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/gpu.txt" 2>&1
cp .gpu/COMMIT "$OUT/commit.txt"; export WARPKIT_COMMIT=$(cat .gpu/COMMIT)
start=$SECONDS; BUDGET=470
run_for() { local want=$1; shift; local left=$((BUDGET-(SECONDS-start)-3)); ((left<want)) && want=$left
  ((want<5)) && { echo "(skipped: budget spent) $*"; return 0; }
  echo "\$ (limit ${want}s) $*"; local t0=$SECONDS; timeout -k 5 "$want" "$@"; local rc=$?
  ((rc==124||rc==137)) && echo "(stopped at its limit)"; echo "(exit $rc after $((SECONDS-t0))s)"; }
F=$(ls /tmp/g/tests/gpu_fem-*)
run_for 200 $F --include-ignored --test-threads 1 --nocapture >"$OUT/tests.log" 2>&1
{
  for st in rows-rounds ppni8-blocks; do
    for tool in memcheck racecheck; do
      WARPKIT_FEM_STRATEGY=$st run_for 60 compute-sanitizer --tool $tool --print-limit 20 $F every_strategy_matches_cpu_in_f64 --exact --include-ignored --test-threads 1
    done
  done
} >"$OUT/sanitizers.log" 2>&1
run_for 200 /tmp/g/bin/warpkit repro fem --backend gpu --out /tmp/repro >"$OUT/repro.log" 2>&1 || true
tar -C /tmp -czf "$OUT/repro-fem.tgz" repro 2>/dev/null
grep -E "^\\\$|test result|FAILED|panicked|exit |ERROR SUMMARY|RACECHECK SUMMARY|median|failed" "$OUT/tests.log" "$OUT/sanitizers.log" "$OUT/repro.log" >"$OUT/summary.txt"
