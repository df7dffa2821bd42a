#!/usr/bin/env bash
# Session 15, call 1: branch radix-rank (radix_scatter ranks each warp's own run of keys; 8 block
# barriers a tile instead of 40) against main f3c34e2 (.gpu/prev-warpkit, session 13's verified
# PTX): tree and N-body suites, memcheck and racecheck of the radix sort test, tree stage times
# (uniform 2^22, Plummer 2^20) and 200 collision steps, the two binaries taking turns.
set -u
: "${OUT:?}"
bash scripts/unstage || exit 1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "branch $(cat .gpu/COMMIT)"; echo "prev-warpkit $(cat .gpu/PREV_COMMIT)"; } >"$OUT/commit.txt" 2>&1
export WARPKIT_COMMIT=$(cat .gpu/COMMIT)
start=$SECONDS; BUDGET=${BUDGET:-540}
run_for() { local want=$1; shift; local left=$((BUDGET-(SECONDS-start)-3)); ((left<want)) && want=$left
  ((want<5)) && { echo "(skipped: budget spent) $*"; return 0; }
  echo "\$ (limit ${want}s) $*"; local t0=$SECONDS; timeout -k 5 "$want" "$@"; local rc=$?
  ((rc==124||rc==137)) && echo "(stopped at its limit)"; echo "(exit $rc after $((SECONDS-t0))s)"; }
W=.gpu/bin/warpkit; P=.gpu/prev-warpkit
B=$(ls .gpu/tests/gpu_bh-*); NB=$(ls .gpu/tests/gpu_nbody-*)
{
  run_for 40 $B gpu_radix_sort_is_a_stable_sort --exact --include-ignored --test-threads 1
  run_for 60 compute-sanitizer --tool memcheck --print-limit 20 $B gpu_radix_sort_is_a_stable_sort --exact --include-ignored --test-threads 1
  run_for 90 compute-sanitizer --tool racecheck --print-limit 20 $B gpu_radix_sort_is_a_stable_sort --exact --include-ignored --test-threads 1
  run_for 70 $B --include-ignored --test-threads 1
  run_for 60 $NB --include-ignored --test-threads 1
} >"$OUT/tests.log" 2>&1
{
  for r in 1 2; do for b in $P $W; do
    echo "== $b uniform 2^22 (round $r)"
    run_for 25 $b gravity --backend gpu --scene uniform --n 4194304 --traversal group2 --quadrupole --mode sorted --check 0 --repeats 5
    echo "== $b plummer 2^20 (round $r)"
    run_for 20 $b gravity --backend gpu --scene plummer --n 1048576 --eps 0.05 --traversal group2 --quadrupole --mode sorted --alpha 0.002 --check 0 --repeats 5
  done; done
} >"$OUT/stages.log" 2>&1
short() { # label binary
  run_for 40 $2 nbody --backend gpu --t-end 4 --out /tmp/$1 --snapshot-every 100000 --diag-every 50 >"/tmp/c200-$1.log" 2>&1
  { echo "== $1 ($2)"; cat /tmp/c200-$1.log; cat /tmp/$1/timing.md; } >>"$OUT/collision200.log" 2>&1
}
short prev $P; short new $W; short prev-b $P; short new-b $W
grep -E "^==|^\\\$|exit|test result|FAILED|panicked|ERROR SUMMARY|RACECHECK SUMMARY|median|\| [a-z]|steps/s|ΔE|ms" "$OUT/tests.log" "$OUT/stages.log" "$OUT/collision200.log" >"$OUT/summary.txt"
