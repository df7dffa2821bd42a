#!/usr/bin/env bash
# Session 13, call 5: branch sph-few-reach at a468537 (the few-lane entry only in passes of at most FEW_PASS_WALKS = 3072 walks; FEW_LANES = 8
# served particles, sph_group_ladder_few, testing each cell and
# candidate against every target's own sphere) against main 92528d3 (prev-warpkit) in one run:
# gpu_sph, memcheck of the h-iteration tests, `neighbours` A/B.
set -u
: "${OUT:?}"
bash scripts/unstage || exit 1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "branch $(cat .gpu/COMMIT)"; echo "prev-warpkit 92528d3"; } >"$OUT/commit.txt" 2>&1
start=$SECONDS; BUDGET=${BUDGET:-400}
run_for() { local want=$1; shift; local left=$((BUDGET-(SECONDS-start)-3)); ((left<want)) && want=$left
  ((want<5)) && { echo "(skipped: budget spent) $*"; return 0; }
  echo "\$ (limit ${want}s) $*"; local t0=$SECONDS; timeout -k 5 "$want" "$@"; local rc=$?
  ((rc==124||rc==137)) && echo "(stopped at its limit)"; echo "(exit $rc after $((SECONDS-t0))s)"; }
W=.gpu/bin/warpkit; P=.gpu/prev-warpkit
S=$(ls .gpu/tests/gpu_sph-*)
{
  for sc in "plummer 65536" "plummer 262144" "plummer 1048576" "uniform 1048576" "condensed 1048576" "uniform 4194304"; do for b in $P $W $P $W; do
    echo "== $b $sc"; run_for 20 $b neighbours --backend gpu --scene ${sc% *} --n ${sc#* } --neighbours 64 --kernel cubic-spline
  done; done
} >"$OUT/sph.log" 2>&1
{
  run_for 90 $S --include-ignored --test-threads 1 --nocapture
  run_for 40 compute-sanitizer --tool memcheck --print-limit 20 $S gpu_h_iteration_converges_and_agrees_with_its_counts --exact --include-ignored --test-threads 1
  run_for 60 compute-sanitizer --tool memcheck --print-limit 20 $S gpu_guess_and_active_passes_equal_the_cpu --exact --include-ignored --test-threads 1
  run_for 100 $(ls .gpu/tests/gpu_combined-*) --include-ignored --test-threads 1 --nocapture
} >"$OUT/tests.log" 2>&1
grep -E "^==|^\\\$|exit|test result|FAILED|panicked|ERROR SUMMARY|h iteration|count pass|density" "$OUT"/tests.log "$OUT"/sph.log >"$OUT/summary.txt"
