#!/usr/bin/env bash
# Session 12, call 2: (1) branch nbody-refit with its test's bookkeeping fixed: gpu_nbody,
# memcheck of the refit test, the whole collision at --rebuild-every 2; (2) branch sph-split
# (a warp group also splits while its h spread exceeds 1.5; the group walk reads cells of ≤ 16
# particles as ranges of the tree order): gpu_sph and gpu_combined, memcheck
# of the active-group test, `neighbours` h iterations with main's binary and the branch's.
set -u
: "${OUT:?}"
bash scripts/unstage || exit 1
mkdir -p .gpu/sph && tar -C .gpu/sph -xJf .gpu/sph.tar.xz
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "refit $(cat .gpu/COMMIT)"; echo "sph $(cat .gpu/SPH_COMMIT)"; } >"$OUT/commit.txt" 2>&1
export WARPKIT_COMMIT=$(cat .gpu/COMMIT)
start=$SECONDS; BUDGET=${BUDGET:-540}
run_for() { local want=$1; shift; local left=$((BUDGET-(SECONDS-start)-3)); ((left<want)) && want=$left
  ((want<5)) && { echo "(skipped: budget spent) $*"; return 0; }
  echo "\$ (limit ${want}s) $*"; local t0=$SECONDS; timeout -k 5 "$want" "$@"; local rc=$?
  ((rc==124||rc==137)) && echo "(stopped at its limit)"; echo "(exit $rc after $((SECONDS-t0))s)"; }
W=.gpu/bin/warpkit; M=.gpu/main-warpkit; S=.gpu/sph/warpkit
NB=$(ls .gpu/tests/gpu_nbody-*)
{
  run_for 50 $NB --include-ignored --test-threads 1 --nocapture
  run_for 40 compute-sanitizer --tool memcheck --print-limit 20 $NB refits_between_builds_keep_the_forces_accurate --exact --include-ignored --test-threads 1
  run_for 90 .gpu/sph/gpu_sph --include-ignored --test-threads 1
  run_for 40 .gpu/sph/gpu_combined --include-ignored --test-threads 1
  run_for 60 compute-sanitizer --tool memcheck --print-limit 20 .gpu/sph/gpu_sph gpu_active_groups_equal_the_cpu --exact --include-ignored --test-threads 1
} >"$OUT/tests.log" 2>&1
{
  for n in 65536 262144 1048576; do for b in $M $S; do
    echo "== $b plummer $n"; run_for 30 $b neighbours --backend gpu --scene plummer --n $n --neighbours 64
  done; done
  for b in $M $S; do echo "== $b uniform 1048576"; run_for 30 $b neighbours --backend gpu --scene uniform --n 1048576 --neighbours 64; done
} >"$OUT/sph.log" 2>&1
run_for 170 $W nbody --backend gpu --rebuild-every 2 --out /tmp/whole2 >"$OUT/whole-k2.log" 2>&1
cat /tmp/whole2/timing.md >>"$OUT/whole-k2.log" 2>/dev/null
tar -C /tmp -czf "$OUT/whole-k2.tgz" --exclude='*.gadget' --exclude='images' --exclude='movie.gif' whole2 2>/dev/null
grep -E "^==|^\\\$|exit|test result|FAILED|panicked|ERROR SUMMARY|force error|steps/s|ΔE|h iteration|count pass|median relative" "$OUT"/*.log >"$OUT/summary.txt"
