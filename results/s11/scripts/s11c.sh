#!/usr/bin/env bash
# Session 11, call 3: the level-by-level summary (bh_summarize_level) — the GPU Barnes–Hut and
# N-body suites, memcheck of the sorted build; stage times at uniform 2^22 and on the collision;
# the collision's force frontier over α and θ_max (tree-sorted traversal).
set -u
: "${OUT:?}"
bash scripts/unstage || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/gpu.txt" 2>&1
cp .gpu/COMMIT "$OUT/commit.txt"; export WARPKIT_COMMIT=$(cat .gpu/COMMIT)
start=$SECONDS; BUDGET=${BUDGET:-540}
run_for() { local want=$1; shift; local left=$((BUDGET-(SECONDS-start)-3)); ((left<want)) && want=$left
  ((want<5)) && { echo "(skipped: budget spent) $*"; return 0; }
  echo "\$ (limit ${want}s) $*"; local t0=$SECONDS; timeout -k 5 "$want" "$@"; local rc=$?
  ((rc==124||rc==137)) && echo "(stopped at its limit)"; echo "(exit $rc after $((SECONDS-t0))s)"; }
W=.gpu/bin/warpkit
B=$(ls .gpu/tests/gpu_bh-*); NB=$(ls .gpu/tests/gpu_nbody-*)
{
  run_for 150 $B --include-ignored --test-threads 1
  run_for 60 compute-sanitizer --tool memcheck --print-limit 20 $B gpu_sorted_build_makes_the_insertion_tree --exact --include-ignored --test-threads 1
  run_for 60 compute-sanitizer --tool memcheck --print-limit 20 $B relative_criterion_matches_its_cpu_twin --exact --include-ignored --test-threads 1
  run_for 150 $NB --include-ignored --test-threads 1
} >"$OUT/tests.log" 2>&1
{
  echo "== uniform 2^22"
  run_for 40 $W gravity --backend gpu --scene uniform --n 4194304 --traversal group2 --quadrupole --mode sorted --check 0 --repeats 5
  echo "== plummer 2^20"
  run_for 40 $W gravity --backend gpu --scene plummer --n 1048576 --eps 0.05 --traversal group2 --quadrupole --mode sorted --alpha 0.002 --check 0 --repeats 5
  echo "== collision, 10 steps"
  run_for 60 $W nbody --n 5000000 --t-end 0.2 --dt 0.02 --out /tmp/c10 --write-ic --snapshot-every 1000 --diag-every 1000
  cat /tmp/c10/timing.md
} >"$OUT/stages.log" 2>&1
IC=/tmp/c10/ic.gadget
{
  for a in 0.006 0.008 0.01; do for tm in 1.0 1.3 1.6; do
    echo "== alpha $a theta_max $tm"
    run_for 30 $W gravity --backend gpu --input "$IC" --eps 0.05 --traversal group2 --quadrupole --mode sorted --alpha $a --theta-max $tm --theta 0.7 --check 3000 --repeats 3
  done; done
} >"$OUT/frontier.log" 2>&1
grep -E "^==|^\\\$|exit|test result|FAILED|panicked|ERROR SUMMARY|median|\| (build|centre|sort|forces|total)|stage|gravity " "$OUT/tests.log" "$OUT/stages.log" "$OUT/frontier.log" >"$OUT/summary.txt"
