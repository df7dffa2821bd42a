#!/usr/bin/env bash
# Session 17, call 1 (89ab09c): the combined walk in the seed's form (`combined_vote`) — gpu_combined
# (all three tests), memcheck and racecheck of the vote-form test, and `warpkit combined` in both
# forms on the cases of results/combined/.
set -u
: "${OUT:?}"
mkdir -p /tmp/v && tar -C /tmp/v -xJf .gpu/var.tar.xz || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/commit.txt" 2>&1
cat .gpu/COMMIT >>"$OUT/commit.txt"
start=$SECONDS; BUDGET=${BUDGET:-540}
run_for() { local want=$1; shift; local left=$((BUDGET-(SECONDS-start)-3)); ((left<want)) && want=$left
  ((want<5)) && { echo "(skipped: budget spent) $*"; return 0; }
  echo "\$ (limit ${want}s) $*"; local t0=$SECONDS; timeout -k 5 "$want" "$@"; local rc=$?
  ((rc==124||rc==137)) && echo "(stopped at its limit)"; echo "(exit $rc after $((SECONDS-t0))s)"; }
{
  run_for 120 /tmp/v/gpu_combined --include-ignored --test-threads 1 --nocapture
  run_for 120 compute-sanitizer --tool memcheck --print-limit 20 /tmp/v/gpu_combined gpu_combined_vote_equals_its_cpu_twin_and_the_seed_walks --exact --include-ignored --test-threads 1
  run_for 120 compute-sanitizer --tool racecheck --print-limit 20 /tmp/v/gpu_combined gpu_combined_vote_equals_its_cpu_twin_and_the_seed_walks --exact --include-ignored --test-threads 1
} >"$OUT/tests.log" 2>&1
{
  for form in vote group; do
    for args in "--scene uniform --n 1048576" "--scene lattice --n 1048576" "--scene plummer --n 1048576 --adapt" "--scene uniform --n 4194304"; do
      echo "=== combined --form $form $args"; run_for 40 /tmp/v/b combined --backend gpu --form $form $args
    done
  done
  echo "=== combined --form vote --scene uniform --n 1048576 --theta 0.3"; run_for 40 /tmp/v/b combined --backend gpu --form vote --scene uniform --n 1048576 --theta 0.3
  echo "=== combined --form vote --scene uniform --n 1048576 --neighbours 128"; run_for 40 /tmp/v/b combined --backend gpu --form vote --scene uniform --n 1048576 --neighbours 128
} >"$OUT/combined.log" 2>&1
grep -E "^===|^\\\$|exit|test result|FAILED|panicked|ERROR SUMMARY|RACECHECK SUMMARY|speed-up|combined \(|walk|2\^18" "$OUT/tests.log" "$OUT/combined.log" >"$OUT/summary.txt"
