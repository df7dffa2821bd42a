#!/usr/bin/env bash
# Session 16, call 4: main's final SPH code (98a78c0: the shared-window flush, branch-free
# gather sinks, the density's kernel a constant, SPH_BUCKET 32) against session 15's main
# (prev, fd4091e) in one run: gpu_sph, gpu_combined, memcheck and racecheck, `neighbours` and
# `combined` A/B, `repro neighbours` to 2^22.
set -u
: "${OUT:?}"
mkdir -p /tmp/v && tar -C /tmp/v -xJf .gpu/var.tar.xz || exit 1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "final $(git rev-parse HEAD 2>/dev/null || echo 98a78c0)"; echo "prev fd4091e"; } >"$OUT/commit.txt" 2>&1
export WARPKIT_COMMIT=98a78c0
start=$SECONDS; BUDGET=${BUDGET:-430}
run_for() { local want=$1; shift; local left=$((BUDGET-(SECONDS-start)-3)); ((left<want)) && want=$left
  ((want<5)) && { echo "(skipped: budget spent) $*"; return 0; }
  echo "\$ (limit ${want}s) $*"; local t0=$SECONDS; timeout -k 5 "$want" "$@"; local rc=$?
  ((rc==124||rc==137)) && echo "(stopped at its limit)"; echo "(exit $rc after $((SECONDS-t0))s)"; }
{
  run_for 70 /tmp/v/gpu_sph --include-ignored --test-threads 1
  run_for 80 /tmp/v/gpu_combined --include-ignored --test-threads 1
  run_for 30 compute-sanitizer --tool memcheck --print-limit 20 /tmp/v/gpu_sph gpu_density_matches_the_cpu_and_the_lattice --exact --include-ignored --test-threads 1
  run_for 30 compute-sanitizer --tool memcheck --print-limit 20 /tmp/v/gpu_sph gpu_neighbour_sets_equal_the_cpu_exactly --exact --include-ignored --test-threads 1
  run_for 30 compute-sanitizer --tool memcheck --print-limit 20 /tmp/v/gpu_sph gpu_h_iteration_converges_and_agrees_with_its_counts --exact --include-ignored --test-threads 1
  run_for 50 compute-sanitizer --tool racecheck --print-limit 20 /tmp/v/gpu_sph gpu_density_matches_the_cpu_and_the_lattice --exact --include-ignored --test-threads 1
} >"$OUT/tests.log" 2>&1
{
  for sc in "uniform 1048576" "plummer 1048576" "uniform 4194304" "condensed 1048576"; do for b in prev final prev final; do
    echo "== $b $sc"; run_for 20 /tmp/v/$b neighbours --backend gpu --scene ${sc% *} --n ${sc#* } --neighbours 64 --kernel cubic-spline
  done; done
  for b in prev final; do
    echo "== $b wendland uniform 1048576"; run_for 20 /tmp/v/$b neighbours --backend gpu --scene uniform --n 1048576 --neighbours 64 --kernel wendland-c2
    echo "== $b combined uniform 1048576"; run_for 30 /tmp/v/$b combined --backend gpu --scene uniform --n 1048576
  done
} >"$OUT/sph.log" 2>&1
run_for 110 /tmp/v/final repro neighbours --backend gpu --n 4194304 --out /tmp/repro >"$OUT/repro-neighbours.log" 2>&1
tar -C /tmp/repro -czf "$OUT/neighbours.tgz" neighbours 2>/dev/null
grep -E "^==|^\\\$|exit|test result|FAILED|panicked|ERROR SUMMARY|h iteration|count pass|density|speed-up" "$OUT/tests.log" "$OUT/sph.log" >"$OUT/summary.txt"
