#!/usr/bin/env bash
# Session 16, call 3: b3 (merged h-iteration walks, ACTIVE_MERGE 4; SPH_BUCKET 32) against
# bk32 (call 2's), b3m1 (b3 with ACTIVE_MERGE 1) and bk64 (b3 with SPH_BUCKET 64); prev = main
# fd4091e. gpu_sph, gpu_combined, memcheck of the h iteration and the active groups (b3);
# `repro neighbours` to 2^22 with b3.
set -u
: "${OUT:?}"
mkdir -p /tmp/v && tar -C /tmp/v -xJf .gpu/var.tar.xz || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/commit.txt" 2>&1
start=$SECONDS; BUDGET=${BUDGET:-420}
run_for() { local want=$1; shift; local left=$((BUDGET-(SECONDS-start)-3)); ((left<want)) && want=$left
  ((want<5)) && { echo "(skipped: budget spent) $*"; return 0; }
  echo "\$ (limit ${want}s) $*"; local t0=$SECONDS; timeout -k 5 "$want" "$@"; local rc=$?
  ((rc==124||rc==137)) && echo "(stopped at its limit)"; echo "(exit $rc after $((SECONDS-t0))s)"; }
{
  run_for 70 /tmp/v/gpu_sph --include-ignored --test-threads 1
  run_for 80 /tmp/v/gpu_combined --include-ignored --test-threads 1
  run_for 40 compute-sanitizer --tool memcheck --print-limit 20 /tmp/v/gpu_sph gpu_h_iteration_converges_and_agrees_with_its_counts --exact --include-ignored --test-threads 1
  run_for 40 compute-sanitizer --tool memcheck --print-limit 20 /tmp/v/gpu_sph gpu_active_groups_equal_the_cpu --exact --include-ignored --test-threads 1
} >"$OUT/tests.log" 2>&1
{
  for sc in "uniform 1048576" "plummer 1048576" "uniform 4194304" "condensed 1048576" "plummer 262144"; do for b in bk32 b3 b3m1 bk64 bk32 b3 b3m1 bk64; do
    echo "== $b $sc"; run_for 20 /tmp/v/$b neighbours --backend gpu --scene ${sc% *} --n ${sc#* } --neighbours 64 --kernel cubic-spline
  done; done
} >"$OUT/sph.log" 2>&1
run_for 110 /tmp/v/b3 repro neighbours --backend gpu --n 4194304 --out /tmp/repro >"$OUT/repro-neighbours.log" 2>&1
tar -C /tmp/repro -czf "$OUT/neighbours.tgz" neighbours 2>/dev/null
grep -E "^==|^\\\$|exit|test result|FAILED|panicked|ERROR SUMMARY|h iteration|count pass|density" "$OUT/tests.log" "$OUT/sph.log" >"$OUT/summary.txt"
