#!/usr/bin/env bash
# Session 15, call 8: branch sum1 (summarize_cell in one pass about the first child's position,
# then moved to the centre of mass) — s1 (40 registers) and s2 (launch bounds 256 × 8: 32
# registers, spills) — against main (prev, 8f95cde's device code): gpu_bh and gpu_nbody of s1,
# memcheck of the sorted build, tree stage times, force errors, 200 collision steps.
set -u
: "${OUT:?}"
mkdir -p /tmp/v && tar -C /tmp/v -xJf .gpu/var.tar.xz || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/commit.txt" 2>&1
start=$SECONDS; BUDGET=${BUDGET:-185}
run_for() { local want=$1; shift; local left=$((BUDGET-(SECONDS-start)-3)); ((left<want)) && want=$left
  ((want<5)) && { echo "(skipped: budget spent) $*"; return 0; }
  echo "\$ (limit ${want}s) $*"; local t0=$SECONDS; timeout -k 5 "$want" "$@"; local rc=$?
  ((rc==124||rc==137)) && echo "(stopped at its limit)"; echo "(exit $rc after $((SECONDS-t0))s)"; }
{
  run_for 40 /tmp/v/gpu_bh_s1 --include-ignored --test-threads 1
  run_for 15 /tmp/v/gpu_nbody_s1 --include-ignored --test-threads 1
  run_for 15 compute-sanitizer --tool memcheck --print-limit 20 /tmp/v/gpu_bh_s1 gpu_sorted_build_makes_the_insertion_tree --exact --include-ignored --test-threads 1
} >"$OUT/tests.log" 2>&1
stage() { echo "== $1 $2"; shift 2; run_for 12 "$@"; }
{
  for b in prev s1 s2; do
    stage $b "uniform 2^22" /tmp/v/$b gravity --backend gpu --scene uniform --n 4194304 --traversal group2 --quadrupole --mode sorted --check 0 --repeats 5
    stage $b "plummer 2^20" /tmp/v/$b gravity --backend gpu --scene plummer --n 1048576 --eps 0.05 --traversal group2 --quadrupole --mode sorted --alpha 0.002 --check 0 --repeats 5
  done
  for b in prev s1; do
    stage $b "plummer 2^20 errors" /tmp/v/$b gravity --backend gpu --scene plummer --n 1048576 --eps 0.05 --traversal group2 --quadrupole --mode sorted --theta 0.5 --check 4096 --repeats 1
  done
} >"$OUT/stages.log" 2>&1
for b in prev s1; do
  run_for 25 /tmp/v/$b nbody --backend gpu --t-end 4 --out /tmp/c-$b --snapshot-every 100000 --diag-every 50 >/tmp/c.log 2>&1
  { echo "== $b"; cat /tmp/c.log; cat /tmp/c-$b/timing.md; } >>"$OUT/collision200.log" 2>&1
done
{
  for b in prev s1; do
    stage $b "uniform 2^22 (round 2)" /tmp/v/$b gravity --backend gpu --scene uniform --n 4194304 --traversal group2 --quadrupole --mode sorted --check 0 --repeats 5
  done
} >>"$OUT/stages.log" 2>&1
grep -E "^==|^\\\$|exit|test result|FAILED|panicked|ERROR SUMMARY|ΔE|median|\| (build|centre|total|forces)" "$OUT/tests.log" "$OUT/stages.log" "$OUT/collision200.log" >"$OUT/summary.txt"
