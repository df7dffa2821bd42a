#!/usr/bin/env bash
# Session 12, call 4: main at 7f2c6c7 (the ladder's window around the false-position estimate,
# the cell grid at the walk radii): gpu_sph (its timings), memcheck, gpu_combined; `neighbours`
# h iterations against b0b45a3's binary (old-warpkit) in the same run; `repro neighbours` to 2^22.
set -u
: "${OUT:?}"
bash scripts/unstage || exit 1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "main $(cat .gpu/COMMIT)"; echo "old-warpkit b0b45a3"; } >"$OUT/commit.txt" 2>&1
export WARPKIT_COMMIT=$(cat .gpu/COMMIT)
start=$SECONDS; BUDGET=${BUDGET:-420}
run_for() { local want=$1; shift; local left=$((BUDGET-(SECONDS-start)-3)); ((left<want)) && want=$left
  ((want<5)) && { echo "(skipped: budget spent) $*"; return 0; }
  echo "\$ (limit ${want}s) $*"; local t0=$SECONDS; timeout -k 5 "$want" "$@"; local rc=$?
  ((rc==124||rc==137)) && echo "(stopped at its limit)"; echo "(exit $rc after $((SECONDS-t0))s)"; }
W=.gpu/bin/warpkit; O=.gpu/old-warpkit
S=$(ls .gpu/tests/gpu_sph-*); C=$(ls .gpu/tests/gpu_combined-*)
{
  run_for 90 $S --include-ignored --test-threads 1 --nocapture
  run_for 40 compute-sanitizer --tool memcheck --print-limit 20 $S gpu_h_iteration_converges_and_agrees_with_its_counts --exact --include-ignored --test-threads 1
} >"$OUT/tests.log" 2>&1
{
  for n in 65536 1048576; do for b in $O $W; do
    echo "== $b plummer $n"; run_for 30 $b neighbours --backend gpu --scene plummer --n $n --neighbours 64
  done; done
  for n in 1048576 4194304; do for b in $O $W; do
    echo "== $b uniform $n"; run_for 30 $b neighbours --backend gpu --scene uniform --n $n --neighbours 64
  done; done
} >"$OUT/sph.log" 2>&1
run_for 100 $W repro neighbours --backend gpu --n 4194304 --out /tmp/repro >"$OUT/repro-neighbours.log" 2>&1
tar -C /tmp/repro -czf "$OUT/neighbours.tgz" neighbours 2>/dev/null
run_for 90 $C --include-ignored --test-threads 1 >>"$OUT/tests.log" 2>&1
grep -E "^==|^\\\$|exit|test result|FAILED|panicked|ERROR SUMMARY|h iteration|count pass|density" "$OUT"/tests.log "$OUT"/sph.log >"$OUT/summary.txt"
