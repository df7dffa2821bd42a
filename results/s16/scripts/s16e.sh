#!/usr/bin/env bash
# Session 16, call 5: `warpkit combined` at 98a78c0 (final) on the four cases of
# results/combined/combined-7788386.txt, for the combined walk's standing after the SPH flush.
set -u
: "${OUT:?}"
mkdir -p /tmp/v && tar -C /tmp/v -xJf .gpu/var.tar.xz || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/commit.txt" 2>&1
for a in "--scene uniform --n 1048576" "--scene lattice --n 1048576" "--scene plummer --n 1048576 --adapt" "--scene plummer --n 1048576 --adapt --quadrupole"; do
  echo "=== combined $a"; timeout 60 /tmp/v/final combined --backend gpu $a 2>&1
done >"$OUT/combined-98a78c0.txt"
