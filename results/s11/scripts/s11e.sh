#!/usr/bin/env bash
# Session 11, call 5: the level scan summary again, one atomic per block for the build's depth,
# warp-coalesced group counter in bh_sort: GPU suites, sanitizers, stage times, the whole
# collision (`repro collision`), then `repro gravity` while the budget lasts.
set -u
: "${OUT:?}"
bash scripts/unstage || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/gpu.txt" 2>&1
cp .gpu/COMMIT "$OUT/commit.txt"; export WARPKIT_COMMIT=$(cat .gpu/COMMIT)
start=$SECONDS; BUDGET=${BUDGET:-500}
run_for() { local want=$1; shift; local left=$((BUDGET-(SECONDS-start)-3)); ((left<want)) && want=$left
  ((want<5)) && { echo "(skipped: budget spent) $*"; return 0; }
  echo "\$ (limit ${want}s) $*"; local t0=$SECONDS; timeout -k 5 "$want" "$@"; local rc=$?
  ((rc==124||rc==137)) && echo "(stopped at its limit)"; echo "(exit $rc after $((SECONDS-t0))s)"; }
W=.gpu/bin/warpkit
B=$(ls .gpu/tests/gpu_bh-*)
{
  run_for 60 $B --include-ignored --test-threads 1
  run_for 40 compute-sanitizer --tool memcheck --print-limit 20 $B gpu_sorted_build_makes_the_insertion_tree --exact --include-ignored --test-threads 1
  run_for 80 compute-sanitizer --tool racecheck --print-limit 20 $B relative_criterion_matches_its_cpu_twin --exact --include-ignored --test-threads 1
  run_for 40 $(ls .gpu/tests/gpu_nbody-*) --include-ignored --test-threads 1
} >"$OUT/tests.log" 2>&1
{
  echo "== uniform 2^22"
  run_for 30 $W gravity --backend gpu --scene uniform --n 4194304 --traversal group2 --quadrupole --mode sorted --check 0 --repeats 5
  echo "== plummer 2^20"
  run_for 30 $W gravity --backend gpu --scene plummer --n 1048576 --eps 0.05 --traversal group2 --quadrupole --mode sorted --alpha 0.002 --check 0 --repeats 5
} >"$OUT/stages.log" 2>&1
run_for 170 $W repro collision --backend gpu --out /tmp/repro >"$OUT/collision.log" 2>&1
tar -C /tmp/repro -czf "$OUT/collision.tgz" --exclude='*.gadget' collision 2>/dev/null
ls -la /tmp/repro/collision >>"$OUT/collision.log" 2>&1
run_for 200 $W repro gravity --backend gpu --out /tmp/repro >"$OUT/gravity.log" 2>&1
tar -C /tmp/repro -czf "$OUT/gravity.tgz" gravity 2>/dev/null
grep -E "^==|^\\\$|exit|test result|FAILED|panicked|ERROR SUMMARY|RACECHECK SUMMARY|median|\| [a-z]|steps/s|ΔE" "$OUT/tests.log" "$OUT/stages.log" "$OUT/collision.log" >"$OUT/summary.txt"
