#!/usr/bin/env bash
# Session 11, call 4: cells grouped by level for the summary (bh_level_count/scan/place +
# bh_summarize_level): every GPU suite that builds trees, memcheck and racecheck of the sorted
# build; stage times; the whole collision (4000 steps, α 0.006, θ_max 1.6).
set -u
: "${OUT:?}"
bash scripts/unstage || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/gpu.txt" 2>&1
cp .gpu/COMMIT "$OUT/commit.txt"; export WARPKIT_COMMIT=$(cat .gpu/COMMIT)
start=$SECONDS; BUDGET=${BUDGET:-560}
run_for() { local want=$1; shift; local left=$((BUDGET-(SECONDS-start)-3)); ((left<want)) && want=$left
  ((want<5)) && { echo "(skipped: budget spent) $*"; return 0; }
  echo "\$ (limit ${want}s) $*"; local t0=$SECONDS; timeout -k 5 "$want" "$@"; local rc=$?
  ((rc==124||rc==137)) && echo "(stopped at its limit)"; echo "(exit $rc after $((SECONDS-t0))s)"; }
W=.gpu/bin/warpkit
B=$(ls .gpu/tests/gpu_bh-*)
{
  run_for 60 $B --include-ignored --test-threads 1
  run_for 50 compute-sanitizer --tool memcheck --print-limit 20 $B gpu_sorted_build_makes_the_insertion_tree --exact --include-ignored --test-threads 1
  run_for 50 compute-sanitizer --tool racecheck --print-limit 20 $B gpu_sorted_build_makes_the_insertion_tree --exact --include-ignored --test-threads 1
  for t in gpu_nbody gpu_sph gpu_combined gpu_sbh; do
    run_for 60 $(ls .gpu/tests/$t-*) --include-ignored --test-threads 1
  done
} >"$OUT/tests.log" 2>&1
{
  echo "== uniform 2^22"
  run_for 30 $W gravity --backend gpu --scene uniform --n 4194304 --traversal group2 --quadrupole --mode sorted --check 0 --repeats 5
  echo "== plummer 2^20"
  run_for 30 $W gravity --backend gpu --scene plummer --n 1048576 --eps 0.05 --traversal group2 --quadrupole --mode sorted --alpha 0.002 --check 0 --repeats 5
} >"$OUT/stages.log" 2>&1
run_for 200 $W repro collision --backend gpu --out /tmp/repro >"$OUT/collision.log" 2>&1
tar -C /tmp/repro -czf "$OUT/collision.tgz" --exclude='*.gadget' collision 2>/dev/null
ls -la /tmp/repro/collision >>"$OUT/collision.log" 2>&1
grep -E "^==|^\\\$|exit|test result|FAILED|panicked|ERROR SUMMARY|RACECHECK SUMMARY|median|\| [a-z]|steps/s|ΔE" "$OUT/tests.log" "$OUT/stages.log" "$OUT/collision.log" >"$OUT/summary.txt"
