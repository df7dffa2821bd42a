#!/usr/bin/env bash
# Session 13, call 8: branch sph-retry c9282c8 (a walk over WALK_BUDGET = 8192 listed candidates
# stops; its group is searched again by the `_few` entries) against main 517d10c (prev-warpkit):
# gpu_sph (a case with every central walk over budget), memcheck of a fixed-h search whose
# central walks are over budget, `neighbours` A/B.
set -u
: "${OUT:?}"
bash scripts/unstage || exit 1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "branch $(cat .gpu/COMMIT)"; echo "prev-warpkit 517d10c"; } >"$OUT/commit.txt" 2>&1
start=$SECONDS; BUDGET=${BUDGET:-100}
run_for() { local want=$1; shift; local left=$((BUDGET-(SECONDS-start)-3)); ((left<want)) && want=$left
  ((want<5)) && { echo "(skipped: budget spent) $*"; return 0; }
  echo "\$ (limit ${want}s) $*"; local t0=$SECONDS; timeout -k 5 "$want" "$@"; local rc=$?
  ((rc==124||rc==137)) && echo "(stopped at its limit)"; echo "(exit $rc after $((SECONDS-t0))s)"; }
W=.gpu/bin/warpkit; P=.gpu/prev-warpkit
S=$(ls .gpu/tests/gpu_sph-*)
{
  for sc in "plummer 262144" "uniform 262144" "plummer 1048576" "uniform 1048576" "plummer 65536" "condensed 262144"; do for b in $P $W; do
    echo "== $b $sc"; run_for 10 $b neighbours --backend gpu --scene ${sc% *} --n ${sc#* } --neighbours 64 --kernel cubic-spline
  done; done
} >"$OUT/sph.log" 2>&1
{
  run_for 45 $S --include-ignored --test-threads 1 --nocapture
  run_for 20 compute-sanitizer --tool memcheck --print-limit 20 $W neighbours --backend gpu --scene uniform --n 10000 --h 0.5 --kernel cubic-spline
} >"$OUT/tests.log" 2>&1
grep -E "^==|^\\\$|exit|test result|FAILED|panicked|ERROR SUMMARY|h iteration|count pass|density" "$OUT"/tests.log "$OUT"/sph.log >"$OUT/summary.txt"
