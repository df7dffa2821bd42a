#!/usr/bin/env bash
# Session 15, call 5: branch sum4 (bh_summarize_level tests four cells a thread, their levels
# loaded together) against 8f95cde (prev-warpkit, call 4's binary): gpu_bh, gpu_nbody (the gather
# test fixed in 8095f29), memcheck of the sorted build test; tree stages (uniform 2^22, Plummer
# 2^20) and 200 collision steps, the binaries taking turns.
set -u
: "${OUT:?}"
bash scripts/unstage || exit 1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "branch $(cat .gpu/COMMIT)"; echo "prev-warpkit $(cat .gpu/PREV_COMMIT)"; } >"$OUT/commit.txt" 2>&1
export WARPKIT_COMMIT=$(cat .gpu/COMMIT)
start=$SECONDS; BUDGET=${BUDGET:-330}
run_for() { local want=$1; shift; local left=$((BUDGET-(SECONDS-start)-3)); ((left<want)) && want=$left
  ((want<5)) && { echo "(skipped: budget spent) $*"; return 0; }
  echo "\$ (limit ${want}s) $*"; local t0=$SECONDS; timeout -k 5 "$want" "$@"; local rc=$?
  ((rc==124||rc==137)) && echo "(stopped at its limit)"; echo "(exit $rc after $((SECONDS-t0))s)"; }
W=.gpu/bin/warpkit; P=.gpu/prev-warpkit; B=$(ls .gpu/tests/gpu_bh-*); NB=$(ls .gpu/tests/gpu_nbody-*)
{
  run_for 45 $B --include-ignored --test-threads 1
  run_for 30 $NB --include-ignored --test-threads 1
  run_for 40 compute-sanitizer --tool memcheck --print-limit 20 $B gpu_sorted_build_makes_the_insertion_tree --exact --include-ignored --test-threads 1
} >"$OUT/tests.log" 2>&1
{
  for r in 1 2; do for b in $P $W; do
    echo "== $b uniform 2^22 (round $r)"
    run_for 20 $b gravity --backend gpu --scene uniform --n 4194304 --traversal group2 --quadrupole --mode sorted --check 0 --repeats 5
    echo "== $b plummer 2^20 (round $r)"
    run_for 15 $b gravity --backend gpu --scene plummer --n 1048576 --eps 0.05 --traversal group2 --quadrupole --mode sorted --alpha 0.002 --check 0 --repeats 5
  done; done
} >"$OUT/stages.log" 2>&1
for r in 1 2; do for b in prev new; do
  bin=$W; [ $b = prev ] && bin=$P
  run_for 30 $bin nbody --backend gpu --t-end 4 --out /tmp/c-$b-$r --snapshot-every 100000 --diag-every 50 >/tmp/c.log 2>&1
  { echo "== $b round $r"; cat /tmp/c.log; cat /tmp/c-$b-$r/timing.md; } >>"$OUT/collision200.log" 2>&1
done; done
grep -E "^==|^\\\$|exit|test result|FAILED|panicked|ERROR SUMMARY|ΔE|\| (bounding|build|centre|sort|total)" "$OUT/tests.log" "$OUT/stages.log" "$OUT/collision200.log" >"$OUT/summary.txt"
