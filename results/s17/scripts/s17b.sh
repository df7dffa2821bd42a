#!/usr/bin/env bash
# Session 17, call 2 (1001d4e): combined_vote with the may_reach pre-test (b) against call 1's
# kernel (a, 89ab09c) — gpu_combined, memcheck and racecheck of the vote-form test, `combined
# --form vote` A/B three times alternating — and `repro gravity` (θ in steps of 0.025, 8 α).
set -u
: "${OUT:?}"
mkdir -p /tmp/v && tar -C /tmp/v -xJf .gpu/var.tar.xz || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/commit.txt" 2>&1
cat .gpu/COMMIT >>"$OUT/commit.txt"
export WARPKIT_COMMIT=$(cat .gpu/COMMIT)
start=$SECONDS; BUDGET=${BUDGET:-560}
run_for() { local want=$1; shift; local left=$((BUDGET-(SECONDS-start)-3)); ((left<want)) && want=$left
  ((want<5)) && { echo "(skipped: budget spent) $*"; return 0; }
  echo "\$ (limit ${want}s) $*"; local t0=$SECONDS; timeout -k 5 "$want" "$@"; local rc=$?
  ((rc==124||rc==137)) && echo "(stopped at its limit)"; echo "(exit $rc after $((SECONDS-t0))s)"; }
{
  run_for 60 /tmp/v/gpu_combined --include-ignored --test-threads 1 --nocapture
  run_for 60 compute-sanitizer --tool memcheck --print-limit 20 /tmp/v/gpu_combined gpu_combined_vote_equals_its_cpu_twin_and_the_seed_walks --exact --include-ignored --test-threads 1
  run_for 100 compute-sanitizer --tool racecheck --print-limit 20 /tmp/v/gpu_combined gpu_combined_vote_equals_its_cpu_twin_and_the_seed_walks --exact --include-ignored --test-threads 1
} >"$OUT/tests.log" 2>&1
{
  for args in "--scene uniform --n 1048576" "--scene lattice --n 1048576" "--scene plummer --n 1048576 --adapt" "--scene uniform --n 4194304"; do
    for b in a b a b a b; do
      echo "=== $b combined --form vote $args"; run_for 30 /tmp/v/$b combined --backend gpu --form vote $args
    done
  done
} >"$OUT/combined.log" 2>&1
run_for 260 /tmp/v/b repro gravity --backend gpu --out /tmp/repro >"$OUT/repro.log" 2>&1
tar -C /tmp/repro -czf "$OUT/gravity.tgz" gravity 2>/dev/null
grep -E "^===|^\\\$|exit|test result|FAILED|panicked|ERROR SUMMARY|RACECHECK SUMMARY|speed-up|combined \(|walk \(|walk,|2\^18" "$OUT/tests.log" "$OUT/combined.log" >"$OUT/summary.txt"
tail -3 "$OUT/repro.log" >>"$OUT/summary.txt"
