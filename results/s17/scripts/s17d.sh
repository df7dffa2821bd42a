#!/usr/bin/env bash
# Session 17, call 4: the comparison's host code for both forms in one function (no kernel
# changed since 1001d4e): gpu_combined's 2^18 comparison and the vote-form test; `combined` in
# both forms on uniform 2^20.
set -u
: "${OUT:?}"
mkdir -p /tmp/v && tar -C /tmp/v -xJf .gpu/var.tar.xz || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/commit.txt" 2>&1
cat .gpu/COMMIT >>"$OUT/commit.txt"
{
  timeout 150 /tmp/v/gpu_combined --include-ignored --test-threads 1 --nocapture gpu_combined_at_2_18_matches_and_reports_times gpu_combined_vote_equals_its_cpu_twin_and_the_seed_walks; echo "(exit $?)"
  for f in vote group; do timeout 40 /tmp/v/b combined --backend gpu --form $f --scene uniform --n 1048576; echo "(exit $?)"; done
} >"$OUT/tests.log" 2>&1
grep -E "exit|test result|FAILED|panicked|2\^18|speed-up|combined \(" "$OUT/tests.log" >"$OUT/summary.txt"
