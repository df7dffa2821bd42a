#!/usr/bin/env bash
# Session 15, call 4: branch fuse-kick (the closing kick inside the tree-order gather) against
# main 08ecc08 (prev-warpkit, call 3's binary): the N-body suite, memcheck of the gather test,
# 200 collision steps with the binaries taking turns, then the whole collision.
set -u
: "${OUT:?}"
bash scripts/unstage || exit 1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "branch $(cat .gpu/COMMIT)"; echo "prev-warpkit $(cat .gpu/PREV_COMMIT)"; } >"$OUT/commit.txt" 2>&1
export WARPKIT_COMMIT=$(cat .gpu/COMMIT)
start=$SECONDS; BUDGET=${BUDGET:-400}
run_for() { local want=$1; shift; local left=$((BUDGET-(SECONDS-start)-3)); ((left<want)) && want=$left
  ((want<5)) && { echo "(skipped: budget spent) $*"; return 0; }
  echo "\$ (limit ${want}s) $*"; local t0=$SECONDS; timeout -k 5 "$want" "$@"; local rc=$?
  ((rc==124||rc==137)) && echo "(stopped at its limit)"; echo "(exit $rc after $((SECONDS-t0))s)"; }
W=.gpu/bin/warpkit; P=.gpu/prev-warpkit; NB=$(ls .gpu/tests/gpu_nbody-*)
{
  run_for 40 $NB --include-ignored --test-threads 1
  run_for 30 compute-sanitizer --tool memcheck --print-limit 20 $NB the_gather_kicks_and_flags_by_the_new_index --exact --include-ignored --test-threads 1
  run_for 30 compute-sanitizer --tool memcheck --print-limit 20 $W nbody --backend gpu --ic plummer --n 20000 --t-end 0.2 --out /tmp/mc
} >"$OUT/tests.log" 2>&1
for r in 1 2; do for b in prev new; do
  bin=$W; [ $b = prev ] && bin=$P
  run_for 40 $bin nbody --backend gpu --t-end 4 --out /tmp/c-$b-$r --snapshot-every 100000 --diag-every 50 >/tmp/c.log 2>&1
  { echo "== $b round $r"; cat /tmp/c.log; cat /tmp/c-$b-$r/timing.md; } >>"$OUT/collision200.log" 2>&1
done; done
run_for 170 $W repro collision --backend gpu --out /tmp/repro >"$OUT/repro.log" 2>&1
tar -C /tmp/repro -czf "$OUT/collision.tgz" --exclude='*.gadget' --exclude='*.hdf5' collision 2>/dev/null
grep -E "^==|^\\\$|exit|test result|FAILED|panicked|ERROR SUMMARY|steps/s|ΔE|\| (build|centre|sort|forces|kick|reorder|potential|total)" "$OUT/tests.log" "$OUT/collision200.log" "$OUT/repro.log" >"$OUT/summary.txt"
