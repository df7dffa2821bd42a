#!/usr/bin/env bash
# Session 16, call 6: SPH_BUCKET 64 (bk64, HEAD + the constant) against 32 (final, 98a78c0),
# each three times alternating; gpu_sph at 64 and memcheck of its density and neighbour sets.
set -u
: "${OUT:?}"
mkdir -p /tmp/v && tar -C /tmp/v -xJf .gpu/var.tar.xz || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/commit.txt" 2>&1
start=$SECONDS; BUDGET=${BUDGET:-260}
run_for() { local want=$1; shift; local left=$((BUDGET-(SECONDS-start)-3)); ((left<want)) && want=$left
  ((want<5)) && { echo "(skipped: budget spent) $*"; return 0; }
  echo "\$ (limit ${want}s) $*"; local t0=$SECONDS; timeout -k 5 "$want" "$@"; local rc=$?
  ((rc==124||rc==137)) && echo "(stopped at its limit)"; echo "(exit $rc after $((SECONDS-t0))s)"; }
{
  for sc in "uniform 1048576" "uniform 4194304" "plummer 1048576" "plummer 4194304" "condensed 1048576" "condensed 4194304" "uniform 262144"; do for b in final bk64 final bk64 final bk64; do
    echo "== $b $sc"; run_for 20 /tmp/v/$b neighbours --backend gpu --scene ${sc% *} --n ${sc#* } --neighbours 64 --kernel cubic-spline
  done; done
} >"$OUT/sph.log" 2>&1
{
  run_for 60 /tmp/v/gpu_sph64 --include-ignored --test-threads 1
  run_for 30 compute-sanitizer --tool memcheck --print-limit 20 /tmp/v/gpu_sph64 gpu_density_matches_the_cpu_and_the_lattice --exact --include-ignored --test-threads 1
  run_for 30 compute-sanitizer --tool memcheck --print-limit 20 /tmp/v/gpu_sph64 gpu_neighbour_sets_equal_the_cpu_exactly --exact --include-ignored --test-threads 1
} >"$OUT/tests.log" 2>&1
grep -E "^==|^\\\$|exit|test result|FAILED|panicked|ERROR SUMMARY|h iteration|count pass|density" "$OUT/tests.log" "$OUT/sph.log" >"$OUT/summary.txt"
