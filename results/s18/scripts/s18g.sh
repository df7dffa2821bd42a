#!/usr/bin/env bash
# Session 18, call 6: the warp groups in tree order (bh_sort marks their first bodies,
# bh_group_tiles + sph_scan + bh_group_scatter compact them) with the relaxed bh_sort (bo),
# against 1656845 (b): gpu_bh, gpu_sph, gpu_combined (without its 2^18 timing), gpu_nbody;
# memcheck on the tree tests; gravity and neighbours alternating.
set -u
: "${OUT:?}"
mkdir -p /tmp/v && tar -C /tmp/v -xJf .gpu/var.tar.xz || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/commit.txt" 2>&1
cat .gpu/COMMIT >>"$OUT/commit.txt"
{
  timeout 80 /tmp/v/gpu_bh --include-ignored --test-threads 1; echo "(exit $?)"
  timeout 80 /tmp/v/gpu_sph --include-ignored --test-threads 1; echo "(exit $?)"
  timeout 60 /tmp/v/gpu_combined --include-ignored --test-threads 1 --skip gpu_combined_at_2_18; echo "(exit $?)"
  timeout 80 /tmp/v/gpu_nbody --include-ignored --test-threads 1; echo "(exit $?)"
  timeout 60 compute-sanitizer --tool memcheck /tmp/v/gpu_bh --include-ignored --test-threads 1 gpu_sorted_build_makes_the_insertion_tree gpu_tree_invariants_and_cpu_parity; echo "(exit $?)"
} >"$OUT/tests.log" 2>&1
run() { timeout 40 "$@" | grep -E "^\| (sort|gravity|total)|^h iter|^density|^tree"; }
{
  for rep in 1 2; do
    for b in b bo; do
      echo "== $b uniform 2^22 rep $rep"; run /tmp/v/$b gravity --backend gpu --scene uniform --n 4194304 --traversal group2 --theta 0.7 --eps 0.00167 --check 0 --repeats 5
      echo "== $b uniform 2^20 rep $rep"; run /tmp/v/$b gravity --backend gpu --scene uniform --n 1048576 --traversal group --theta 0.375 --eps 0.00167 --check 0 --repeats 5
      echo "== $b plummer 2^20 rep $rep"; run /tmp/v/$b gravity --backend gpu --scene plummer --n 1048576 --traversal group2 --theta 0.5 --quadrupole --check 0 --repeats 5
      echo "== $b neighbours uniform 2^22 rep $rep"; run /tmp/v/$b neighbours --backend gpu --scene uniform --n 4194304 --neighbours 64 --kernel cubic-spline
      echo "== $b neighbours plummer 2^20 rep $rep"; run /tmp/v/$b neighbours --backend gpu --scene plummer --n 1048576 --neighbours 64 --kernel cubic-spline
    done
  done
} >"$OUT/ab.log" 2>&1
grep -E "exit|test result|FAILED|panicked|ERROR SUMMARY" "$OUT/tests.log" >"$OUT/summary.txt"
