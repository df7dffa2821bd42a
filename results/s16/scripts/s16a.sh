#!/usr/bin/env bash
# Session 16, call 1: branch sph-flush (the group search's flush by shared-window address, a
# branch-free gather sink, the kernels' shape without branches) against main fd4091e (prev) in
# one run: gpu_sph, gpu_combined, memcheck of the density and neighbour-set tests, `neighbours`
# A/B twice, ncu of sph_group's density launch (uniform 2^20).
set -u
: "${OUT:?}"
mkdir -p /tmp/v && tar -C /tmp/v -xJf .gpu/var.tar.xz || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/commit.txt" 2>&1
start=$SECONDS; BUDGET=${BUDGET:-480}
run_for() { local want=$1; shift; local left=$((BUDGET-(SECONDS-start)-3)); ((left<want)) && want=$left
  ((want<5)) && { echo "(skipped: budget spent) $*"; return 0; }
  echo "\$ (limit ${want}s) $*"; local t0=$SECONDS; timeout -k 5 "$want" "$@"; local rc=$?
  ((rc==124||rc==137)) && echo "(stopped at its limit)"; echo "(exit $rc after $((SECONDS-t0))s)"; }
{
  for sc in "uniform 1048576" "plummer 1048576" "uniform 4194304" "condensed 1048576" "uniform 262144"; do for b in prev b prev b; do
    echo "== $b $sc"; run_for 25 /tmp/v/$b neighbours --backend gpu --scene ${sc% *} --n ${sc#* } --neighbours 64 --kernel cubic-spline
  done; done
  for b in prev b; do
    echo "== $b wendland uniform 1048576"; run_for 20 /tmp/v/$b neighbours --backend gpu --scene uniform --n 1048576 --neighbours 64 --kernel wendland-c2
  done
} >"$OUT/sph.log" 2>&1
{
  run_for 70 /tmp/v/gpu_sph --include-ignored --test-threads 1
  run_for 70 /tmp/v/gpu_combined --include-ignored --test-threads 1
  run_for 40 compute-sanitizer --tool memcheck --print-limit 20 /tmp/v/gpu_sph gpu_density_matches_the_cpu_and_the_lattice --exact --include-ignored --test-threads 1
  run_for 50 compute-sanitizer --tool memcheck --print-limit 20 /tmp/v/gpu_sph gpu_neighbour_sets_equal_the_cpu_exactly --exact --include-ignored --test-threads 1
  run_for 40 compute-sanitizer --tool memcheck --print-limit 20 /tmp/v/gpu_sph gpu_h_iteration_converges_and_agrees_with_its_counts --exact --include-ignored --test-threads 1
} >"$OUT/tests.log" 2>&1
sec="--section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats --section LaunchStats --section InstructionStats"
for b in prev b; do
  run_for 60 ncu -k "regex:^sph_group\$" -s 1 -c 1 $sec /tmp/v/$b neighbours --backend gpu --scene uniform --n 1048576 --neighbours 64 --kernel cubic-spline >"$OUT/ncu-$b.txt" 2>&1
done
grep -E "^==|^\\\$|exit|test result|FAILED|panicked|ERROR SUMMARY|h iteration|count pass|density" "$OUT/tests.log" "$OUT/sph.log" >"$OUT/summary.txt"
