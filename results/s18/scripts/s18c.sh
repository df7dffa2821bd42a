#!/usr/bin/env bash
# Session 18, call 3: bh_sort with relaxed flag accesses (no acquire load per cell, no release
# store per child) against 1656845 (b): gpu_bh and gpu_sph tests, memcheck on the build tests,
# tree stages at uniform 2^22 and Plummer 2^20 alternating.
set -u
: "${OUT:?}"
mkdir -p /tmp/v && tar -C /tmp/v -xJf .gpu/var.tar.xz || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/commit.txt" 2>&1
cat .gpu/COMMIT >>"$OUT/commit.txt"
{
  timeout 150 /tmp/v/gpu_bh --include-ignored --test-threads 1; echo "(exit $?)"
  timeout 100 compute-sanitizer --tool memcheck /tmp/v/gpu_bh --include-ignored --test-threads 1 gpu_sorted_build_makes_the_insertion_tree gpu_tree_invariants_and_cpu_parity; echo "(exit $?)"
} >"$OUT/tests.log" 2>&1
{
  for rep in 1 2 3; do
    for b in b bn; do
      echo "== $b uniform 2^22 rep $rep"
      timeout 60 /tmp/v/$b gravity --backend gpu --scene uniform --n 4194304 --traversal group2 --theta 0.7 --eps 0.00167 --check 0 --repeats 5 | grep -E "^\| (bounding|build|centre|sort|gravity|total)"
      echo "== $b plummer 2^20 rep $rep"
      timeout 60 /tmp/v/$b gravity --backend gpu --scene plummer --n 1048576 --traversal group2 --theta 0.5 --check 0 --repeats 5 | grep -E "^\| (bounding|build|centre|sort|gravity|total)"
    done
  done
} >"$OUT/ab.log" 2>&1
{
  timeout 200 /tmp/v/gpu_sph --include-ignored --test-threads 1; echo "(exit $?)"
} >"$OUT/sph.log" 2>&1
grep -E "exit|test result|FAILED|panicked|ERROR SUMMARY" "$OUT/tests.log" "$OUT/sph.log" >"$OUT/summary.txt"
