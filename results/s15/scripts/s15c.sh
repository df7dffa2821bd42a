#!/usr/bin/env bash
# Session 15, call 3: main with the radix sort's batched tile loads (6f57bea's code): the GPU
# suites that build trees (bh, nbody, sph, combined), then the reproductions: the whole collision,
# the gravity frontier and the neighbour search at 2^22.
set -u
: "${OUT:?}"
bash scripts/unstage || exit 1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; cat .gpu/COMMIT; } >"$OUT/commit.txt" 2>&1
export WARPKIT_COMMIT=$(cat .gpu/COMMIT)
start=$SECONDS; BUDGET=${BUDGET:-570}
run_for() { local want=$1; shift; local left=$((BUDGET-(SECONDS-start)-3)); ((left<want)) && want=$left
  ((want<5)) && { echo "(skipped: budget spent) $*"; return 0; }
  echo "\$ (limit ${want}s) $*"; local t0=$SECONDS; timeout -k 5 "$want" "$@"; local rc=$?
  ((rc==124||rc==137)) && echo "(stopped at its limit)"; echo "(exit $rc after $((SECONDS-t0))s)"; }
W=.gpu/bin/warpkit
{
  for s in bh nbody sph combined; do
    run_for 70 $(ls .gpu/tests/gpu_$s-*) --include-ignored --test-threads 1
  done
} >"$OUT/tests.log" 2>&1
{
  run_for 170 $W repro collision --backend gpu --out /tmp/repro
  run_for 150 $W repro gravity --backend gpu --out /tmp/repro
  run_for 80 $W repro neighbours --backend gpu --n 4194304 --out /tmp/repro
} >"$OUT/repro.log" 2>&1
tar -C /tmp/repro -czf "$OUT/collision.tgz" --exclude='*.gadget' --exclude='*.hdf5' collision 2>/dev/null
tar -C /tmp/repro -czf "$OUT/gravity.tgz" gravity 2>/dev/null
tar -C /tmp/repro -czf "$OUT/neighbours.tgz" neighbours 2>/dev/null
grep -E "^==|^\\\$|exit|test result|FAILED|panicked|steps/s|ΔE|\| (build|centre|sort|forces|total)" "$OUT/tests.log" "$OUT/repro.log" >"$OUT/summary.txt"
