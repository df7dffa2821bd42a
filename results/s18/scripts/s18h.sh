#!/usr/bin/env bash
# Session 18, call 7: racecheck on the tree tests at acde0ac (bh_group_tiles and bh_group_scatter
# use block_scan's shared memory).
set -u
: "${OUT:?}"
mkdir -p /tmp/v && tar -C /tmp/v -xJf .gpu/var.tar.xz || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/commit.txt" 2>&1
cat .gpu/COMMIT >>"$OUT/commit.txt"
timeout 100 compute-sanitizer --tool racecheck /tmp/v/gpu_bh --include-ignored --test-threads 1 gpu_tree_invariants_and_cpu_parity >"$OUT/racecheck.log" 2>&1; echo "(exit $?)" >>"$OUT/racecheck.log"
tail -5 "$OUT/racecheck.log" >"$OUT/summary.txt"
