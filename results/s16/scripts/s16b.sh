#!/usr/bin/env bash
# Session 16, call 2: sph-flush b (call 1's build, debc756) against b2 (e48c11a: the density sink's
# kernel a constant), bk8 / bk32 (b2 with SPH_BUCKET 8 / 32) and bwalk (b2 with the flush
# evaluating nothing: the walk alone, at a fixed h); gpu_sph and memcheck of b2's density.
set -u
: "${OUT:?}"
mkdir -p /tmp/v && tar -C /tmp/v -xJf .gpu/var.tar.xz || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/commit.txt" 2>&1
start=$SECONDS; BUDGET=${BUDGET:-300}
run_for() { local want=$1; shift; local left=$((BUDGET-(SECONDS-start)-3)); ((left<want)) && want=$left
  ((want<5)) && { echo "(skipped: budget spent) $*"; return 0; }
  echo "\$ (limit ${want}s) $*"; local t0=$SECONDS; timeout -k 5 "$want" "$@"; local rc=$?
  ((rc==124||rc==137)) && echo "(stopped at its limit)"; echo "(exit $rc after $((SECONDS-t0))s)"; }
{
  run_for 60 /tmp/v/gpu_sph --include-ignored --test-threads 1
  run_for 40 compute-sanitizer --tool memcheck --print-limit 20 /tmp/v/gpu_sph gpu_density_matches_the_cpu_and_the_lattice --exact --include-ignored --test-threads 1
} >"$OUT/tests.log" 2>&1
{
  for sc in "uniform 1048576" "plummer 1048576" "uniform 4194304" "uniform 262144" "condensed 1048576"; do for b in b b2 bk8 bk32 b b2 bk8 bk32; do
    echo "== $b $sc"; run_for 20 /tmp/v/$b neighbours --backend gpu --scene ${sc% *} --n ${sc#* } --neighbours 64 --kernel cubic-spline
  done; done
  for b in b2 bwalk b2 bwalk; do
    echo "== $b fixed h uniform 1048576"; run_for 20 /tmp/v/$b neighbours --backend gpu --scene uniform --n 1048576 --h 0.0246 --kernel cubic-spline
    echo "== $b fixed h uniform 4194304"; run_for 20 /tmp/v/$b neighbours --backend gpu --scene uniform --n 4194304 --h 0.01543 --kernel cubic-spline
  done
} >"$OUT/sph.log" 2>&1
grep -E "^==|^\\\$|exit|test result|FAILED|panicked|ERROR SUMMARY|h iteration|count pass|density" "$OUT/tests.log" "$OUT/sph.log" >"$OUT/summary.txt"
