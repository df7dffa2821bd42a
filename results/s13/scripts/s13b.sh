#!/usr/bin/env bash
# Session 13, call 2: branch sph-sorted at 92528d3 (ranges read from a tree-ordered copy, count
# and start loaded beside the box, density with one division per target and sqrt.approx)
# against main 00e22d7 (prev-warpkit) in one run: gpu_sph, gpu_combined, memcheck of the density
# and h-iteration tests, `neighbours --kernel cubic-spline` A/B.
set -u
: "${OUT:?}"
bash scripts/unstage || exit 1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "branch $(cat .gpu/COMMIT)"; echo "prev-warpkit 00e22d7"; } >"$OUT/commit.txt" 2>&1
start=$SECONDS; BUDGET=${BUDGET:-400}
run_for() { local want=$1; shift; local left=$((BUDGET-(SECONDS-start)-3)); ((left<want)) && want=$left
  ((want<5)) && { echo "(skipped: budget spent) $*"; return 0; }
  echo "\$ (limit ${want}s) $*"; local t0=$SECONDS; timeout -k 5 "$want" "$@"; local rc=$?
  ((rc==124||rc==137)) && echo "(stopped at its limit)"; echo "(exit $rc after $((SECONDS-t0))s)"; }
W=.gpu/bin/warpkit; P=.gpu/prev-warpkit
S=$(ls .gpu/tests/gpu_sph-*); C=$(ls .gpu/tests/gpu_combined-*)
{
  for sc in "uniform 1048576" "plummer 1048576" "uniform 4194304" "condensed 1048576" "plummer 65536"; do for b in $P $W $P $W; do
    echo "== $b $sc"; run_for 20 $b neighbours --backend gpu --scene ${sc% *} --n ${sc#* } --neighbours 64 --kernel cubic-spline
  done; done
} >"$OUT/sph.log" 2>&1
{
  run_for 90 $S --include-ignored --test-threads 1 --nocapture
  run_for 40 compute-sanitizer --tool memcheck --print-limit 20 $S gpu_density_matches_the_cpu_and_the_lattice --exact --include-ignored --test-threads 1
  run_for 40 compute-sanitizer --tool memcheck --print-limit 20 $S gpu_h_iteration_converges_and_agrees_with_its_counts --exact --include-ignored --test-threads 1
  run_for 100 $C --include-ignored --test-threads 1 --nocapture
} >"$OUT/tests.log" 2>&1
grep -E "^==|^\\\$|exit|test result|FAILED|panicked|ERROR SUMMARY|h iteration|count pass|density|combined" "$OUT"/tests.log "$OUT"/sph.log >"$OUT/summary.txt"
