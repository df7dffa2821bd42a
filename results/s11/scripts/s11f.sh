#!/usr/bin/env bash
# Session 11, call 6: the suites call 5 left out, at the final tree code (sorted build with the
# level summary, per-block depth atomic, coalesced group counter): SPH, combined, stochastic BH,
# multi-GPU (one GPU), trap and intrinsics.
set -u
: "${OUT:?}"
bash scripts/unstage || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/gpu.txt" 2>&1
cp .gpu/COMMIT "$OUT/commit.txt"
start=$SECONDS; BUDGET=${BUDGET:-200}
run_for() { local want=$1; shift; local left=$((BUDGET-(SECONDS-start)-3)); ((left<want)) && want=$left
  ((want<5)) && { echo "(skipped: budget spent) $*"; return 0; }
  echo "\$ (limit ${want}s) $*"; local t0=$SECONDS; timeout -k 5 "$want" "$@"; local rc=$?
  ((rc==124||rc==137)) && echo "(stopped at its limit)"; echo "(exit $rc after $((SECONDS-t0))s)"; }
{
  for t in gpu_sph gpu_combined gpu_sbh gpu_multi gpu_trap gpu_intrinsics; do
    run_for 60 $(ls .gpu/tests/$t-*) --include-ignored --test-threads 1
  done
  run_for 40 compute-sanitizer --tool memcheck --print-limit 20 $(ls .gpu/tests/gpu_sph-*) --include-ignored --test-threads 1 --skip large
} >"$OUT/tests.log" 2>&1
grep -E "^\\\$|exit|test result|FAILED|panicked|ERROR SUMMARY|NOT RUN" "$OUT/tests.log" >"$OUT/summary.txt"
