#!/usr/bin/env bash
# Session 12, call 1: branch nbody-refit (tree refit between builds, per-cell extents in the
# opening test) on the GPU: the N-body, tree and combined suites, memcheck of the refit test;
# 200 steps of the collision with main's binary and the branch's at --rebuild-every 1/2/4/8
# (the A/B of the extra kernel parameter is main vs k=1); then the whole collision at k=4.
set -u
: "${OUT:?}"
bash scripts/unstage || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/gpu.txt" 2>&1
cp .gpu/COMMIT "$OUT/commit.txt"; export WARPKIT_COMMIT=$(cat .gpu/COMMIT)
start=$SECONDS; BUDGET=${BUDGET:-555}
run_for() { local want=$1; shift; local left=$((BUDGET-(SECONDS-start)-3)); ((left<want)) && want=$left
  ((want<5)) && { echo "(skipped: budget spent) $*"; return 0; }
  echo "\$ (limit ${want}s) $*"; local t0=$SECONDS; timeout -k 5 "$want" "$@"; local rc=$?
  ((rc==124||rc==137)) && echo "(stopped at its limit)"; echo "(exit $rc after $((SECONDS-t0))s)"; }
W=.gpu/bin/warpkit; M=.gpu/main-warpkit
NB=$(ls .gpu/tests/gpu_nbody-*); B=$(ls .gpu/tests/gpu_bh-*); C=$(ls .gpu/tests/gpu_combined-*)
{
  run_for 60 $NB --include-ignored --test-threads 1
  run_for 60 compute-sanitizer --tool memcheck --print-limit 20 $NB refits_between_builds_keep_the_forces_accurate --exact --include-ignored --test-threads 1
  run_for 70 $B --include-ignored --test-threads 1
  run_for 40 $C --include-ignored --test-threads 1
} >"$OUT/tests.log" 2>&1
short() { # label binary extra-args
  local label=$1 bin=$2; shift 2
  run_for 50 $bin nbody --backend gpu --t-end 4 --out /tmp/$label --snapshot-every 100000 --diag-every 50 "$@" >"$OUT/c200-$label.log" 2>&1
  cp /tmp/$label/timing.md "$OUT/c200-$label-timing.md" 2>/dev/null
  cp /tmp/$label/diagnostics.csv "$OUT/c200-$label-diag.csv" 2>/dev/null
}
short main $M
short k1 $W --rebuild-every 1
short k2 $W --rebuild-every 2
short k4 $W --rebuild-every 4
short k8 $W --rebuild-every 8
short main-b $M
run_for 170 $W nbody --backend gpu --rebuild-every 4 --out /tmp/whole4 >"$OUT/whole-k4.log" 2>&1
tar -C /tmp -czf "$OUT/whole-k4.tgz" --exclude='*.gadget' whole4 2>/dev/null
grep -E "^==|^\\\$|exit|test result|FAILED|panicked|ERROR SUMMARY|force error|steps/s|ΔE" "$OUT"/*.log >"$OUT/summary.txt"
grep -H "" "$OUT"/*timing.md >>"$OUT/summary.txt" 2>/dev/null
