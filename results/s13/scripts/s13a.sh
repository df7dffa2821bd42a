#!/usr/bin/env bash
# Session 13, call 1: branch sph-ladder-entry at 00e22d7 (the ladder as its own entry,
# sph_group_ladder) against main ba35c4c (prev-warpkit) in one run: gpu_sph, gpu_combined, memcheck
# of the ladder and of the bad-input test, `neighbours` A/B, and an ncu profile of the SPH kernels
# at uniform 2^20 (where the density target is).
set -u
: "${OUT:?}"
bash scripts/unstage || exit 1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "branch $(cat .gpu/COMMIT)"; echo "prev-warpkit ba35c4c"; } >"$OUT/commit.txt" 2>&1
start=$SECONDS; BUDGET=${BUDGET:-400}
run_for() { local want=$1; shift; local left=$((BUDGET-(SECONDS-start)-3)); ((left<want)) && want=$left
  ((want<5)) && { echo "(skipped: budget spent) $*"; return 0; }
  echo "\$ (limit ${want}s) $*"; local t0=$SECONDS; timeout -k 5 "$want" "$@"; local rc=$?
  ((rc==124||rc==137)) && echo "(stopped at its limit)"; echo "(exit $rc after $((SECONDS-t0))s)"; }
W=.gpu/bin/warpkit; P=.gpu/prev-warpkit
S=$(ls .gpu/tests/gpu_sph-*); C=$(ls .gpu/tests/gpu_combined-*)
{
  run_for 90 $S --include-ignored --test-threads 1 --nocapture
  run_for 40 $C --include-ignored --test-threads 1
  run_for 40 compute-sanitizer --tool memcheck --print-limit 20 $S gpu_h_iteration_converges_and_agrees_with_its_counts --exact --include-ignored --test-threads 1
} >"$OUT/tests.log" 2>&1
{
  for sc in "plummer 65536" "plummer 1048576" "uniform 1048576" "uniform 4194304" "condensed 1048576"; do for b in $P $W $P $W; do
    echo "== $b $sc"; run_for 20 $b neighbours --backend gpu --scene ${sc% *} --n ${sc#* } --neighbours 64
  done; done
} >"$OUT/sph.log" 2>&1
run_for 120 ncu -k regex:sph_ --launch-count 40 --section SpeedOfLight --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis --section WarpStateStats \
  $W neighbours --backend gpu --scene uniform --n 1048576 --neighbours 64 >"$OUT/ncu.log" 2>&1
grep -E "^==|^\\\$|exit|test result|FAILED|panicked|ERROR SUMMARY|h iteration|count pass|density" "$OUT"/tests.log "$OUT"/sph.log >"$OUT/summary.txt"
