#!/usr/bin/env bash
# Session 18, call 4: the h iteration's candidate cache (bn2, gpu_sph) against 1656845 (b):
# gpu_sph (with the new cache test), memcheck on the cache test, neighbours at 2^20 and 2^22
# alternating; and the group-order experiment (bx: warp groups sorted by their first body when
# WARPKIT_EXP_GROUPS is set) on gravity.
set -u
: "${OUT:?}"
mkdir -p /tmp/v && tar -C /tmp/v -xJf .gpu/var.tar.xz || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/commit.txt" 2>&1
cat .gpu/COMMIT >>"$OUT/commit.txt"
{
  timeout 200 /tmp/v/gpu_sph --include-ignored --test-threads 1 --nocapture; echo "(exit $?)"
  timeout 150 compute-sanitizer --tool memcheck /tmp/v/gpu_sph --include-ignored --test-threads 1 gpu_candidate_cache_serves_the_later_passes_and_the_density; echo "(exit $?)"
} >"$OUT/tests.log" 2>&1
{
  for rep in 1 2; do
    for s in plummer uniform; do
      for b in b bn2; do
        echo "== $b $s 2^20 rep $rep"
        timeout 60 /tmp/v/$b neighbours --backend gpu --scene $s --n 1048576 --neighbours 64 --kernel cubic-spline | grep -E "^h iter|^\| [0-9]|^density"
      done
    done
  done
  for b in b bn2; do
    echo "== $b plummer 2^22"
    timeout 60 /tmp/v/$b neighbours --backend gpu --scene plummer --n 4194304 --neighbours 64 --kernel cubic-spline | grep -E "^h iter|^\| [0-9]|^density"
  done
} >"$OUT/ab.log" 2>&1
run() { timeout 60 "$@" | grep -E "^\| (sort|gravity|total)"; }
{
  for rep in 1 2; do
    for mode in none fwd; do
      if [ $mode = none ]; then unset WARPKIT_EXP_GROUPS; else export WARPKIT_EXP_GROUPS=$mode; fi
      echo "== $mode uniform 2^22 rep $rep"; run /tmp/v/bx gravity --backend gpu --scene uniform --n 4194304 --traversal group2 --theta 0.7 --eps 0.00167 --check 0 --repeats 5
      echo "== $mode uniform 2^20 rep $rep"; run /tmp/v/bx gravity --backend gpu --scene uniform --n 1048576 --traversal group --theta 0.375 --eps 0.00167 --check 0 --repeats 5
      echo "== $mode plummer 2^20 q rep $rep"; run /tmp/v/bx gravity --backend gpu --scene plummer --n 1048576 --traversal group2 --theta 0.5 --quadrupole --check 0 --repeats 5
    done
  done
} >"$OUT/groups.log" 2>&1
grep -E "exit|test result|FAILED|panicked|ERROR SUMMARY" "$OUT/tests.log" >"$OUT/summary.txt"
