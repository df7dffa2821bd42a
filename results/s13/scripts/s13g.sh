#!/usr/bin/env bash
# Session 13, call 7: branch sph-few-all (every group search of at most FEW_PASS_WALKS = 16384
# walks tests each served target's sphere: count, fill, density and the h iteration) against
# main 860971a (prev-warpkit) in one run: gpu_sph, gpu_combined, memcheck, `neighbours` A/B,
# `repro neighbours` to 2^22.
set -u
: "${OUT:?}"
bash scripts/unstage || exit 1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "branch $(cat .gpu/COMMIT)"; echo "prev-warpkit 860971a"; } >"$OUT/commit.txt" 2>&1
export WARPKIT_COMMIT=$(cat .gpu/COMMIT)
start=$SECONDS; BUDGET=${BUDGET:-330}
run_for() { local want=$1; shift; local left=$((BUDGET-(SECONDS-start)-3)); ((left<want)) && want=$left
  ((want<5)) && { echo "(skipped: budget spent) $*"; return 0; }
  echo "\$ (limit ${want}s) $*"; local t0=$SECONDS; timeout -k 5 "$want" "$@"; local rc=$?
  ((rc==124||rc==137)) && echo "(stopped at its limit)"; echo "(exit $rc after $((SECONDS-t0))s)"; }
W=.gpu/bin/warpkit; P=.gpu/prev-warpkit
S=$(ls .gpu/tests/gpu_sph-*); C=$(ls .gpu/tests/gpu_combined-*)
{
  for sc in "plummer 65536" "plummer 262144" "plummer 1048576" "uniform 262144" "uniform 1048576" "condensed 262144" "condensed 1048576"; do for b in $P $W $P $W; do
    echo "== $b $sc"; run_for 20 $b neighbours --backend gpu --scene ${sc% *} --n ${sc#* } --neighbours 64 --kernel cubic-spline
  done; done
} >"$OUT/sph.log" 2>&1
{
  run_for 60 $S --include-ignored --test-threads 1 --nocapture
  run_for 30 compute-sanitizer --tool memcheck --print-limit 20 $S gpu_density_matches_the_cpu_and_the_lattice --exact --include-ignored --test-threads 1
  run_for 40 compute-sanitizer --tool memcheck --print-limit 20 $S gpu_neighbour_sets_equal_the_cpu_exactly --exact --include-ignored --test-threads 1
  run_for 30 compute-sanitizer --tool memcheck --print-limit 20 $S gpu_h_iteration_converges_and_agrees_with_its_counts --exact --include-ignored --test-threads 1
  run_for 70 $C --include-ignored --test-threads 1 --nocapture
} >"$OUT/tests.log" 2>&1
run_for 100 $W repro neighbours --backend gpu --n 4194304 --out /tmp/repro >"$OUT/repro-neighbours.log" 2>&1
tar -C /tmp/repro -czf "$OUT/neighbours.tgz" neighbours 2>/dev/null
grep -E "^==|^\\\$|exit|test result|FAILED|panicked|ERROR SUMMARY|h iteration|count pass|density" "$OUT"/tests.log "$OUT"/sph.log >"$OUT/summary.txt"
