#!/usr/bin/env bash
# Session 15, call 2: the radix sort's tile loads issued together. v1 (`radix-rank` 9cf46ab: each
# warp ranks its own run, keys and values loaded first, 128 registers, 2 blocks/SM) and v2 (the
# block-round ranking of main with its keys and values loaded first, 80 registers, 3 blocks/SM),
# both with the histogram's keys loaded first, against main f3c34e2 (prev): the radix sort test
# under memcheck and racecheck for each, tree stages (uniform 2^22, Plummer 2^20) and 200
# collision steps, the binaries taking turns.
set -u
: "${OUT:?}"
mkdir -p /tmp/v && tar -C /tmp/v -xJf .gpu/var.tar.xz || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/commit.txt" 2>&1
start=$SECONDS; BUDGET=${BUDGET:-420}
run_for() { local want=$1; shift; local left=$((BUDGET-(SECONDS-start)-3)); ((left<want)) && want=$left
  ((want<5)) && { echo "(skipped: budget spent) $*"; return 0; }
  echo "\$ (limit ${want}s) $*"; local t0=$SECONDS; timeout -k 5 "$want" "$@"; local rc=$?
  ((rc==124||rc==137)) && echo "(stopped at its limit)"; echo "(exit $rc after $((SECONDS-t0))s)"; }
T=gpu_radix_sort_is_a_stable_sort
{
  for v in v1 v2; do
    run_for 30 /tmp/v/gpu_bh_$v $T --exact --include-ignored --test-threads 1
    run_for 30 compute-sanitizer --tool memcheck --print-limit 20 /tmp/v/gpu_bh_$v $T --exact --include-ignored --test-threads 1
    run_for 40 compute-sanitizer --tool racecheck --print-limit 20 /tmp/v/gpu_bh_$v $T --exact --include-ignored --test-threads 1
    run_for 40 compute-sanitizer --tool synccheck --print-limit 20 /tmp/v/gpu_bh_$v $T --exact --include-ignored --test-threads 1
  done
  run_for 60 /tmp/v/gpu_bh_v2 --include-ignored --test-threads 1
} >"$OUT/tests.log" 2>&1
{
  for r in 1 2; do for b in prev v1 v2; do
    echo "== $b uniform 2^22 (round $r)"
    run_for 25 /tmp/v/$b gravity --backend gpu --scene uniform --n 4194304 --traversal group2 --quadrupole --mode sorted --check 0 --repeats 5
    echo "== $b plummer 2^20 (round $r)"
    run_for 20 /tmp/v/$b gravity --backend gpu --scene plummer --n 1048576 --eps 0.05 --traversal group2 --quadrupole --mode sorted --alpha 0.002 --check 0 --repeats 5
  done; done
} >"$OUT/stages.log" 2>&1
for r in 1 2; do for b in prev v1 v2; do
  run_for 40 /tmp/v/$b nbody --backend gpu --t-end 4 --out /tmp/c-$b-$r --snapshot-every 100000 --diag-every 50 >"/tmp/c.log" 2>&1
  { echo "== $b round $r"; cat /tmp/c.log; cat /tmp/c-$b-$r/timing.md; } >>"$OUT/collision200.log" 2>&1
done; done
grep -E "^==|^\\\$|exit|test result|FAILED|panicked|ERROR SUMMARY|RACECHECK SUMMARY|\| (build|sort|total|forces)|ΔE" "$OUT/tests.log" "$OUT/stages.log" "$OUT/collision200.log" >"$OUT/summary.txt"
