#!/usr/bin/env bash
# Session 18, call 5: the candidate cache with staged row writes and warp-per-particle reads (bn3, gpu_sph) against 1656845 (b):
# gpu_sph (with the new cache test), memcheck and racecheck on the cache test, neighbours at 2^20 and 2^22
# alternating.

set -u
: "${OUT:?}"
mkdir -p /tmp/v && tar -C /tmp/v -xJf .gpu/var.tar.xz || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/commit.txt" 2>&1
cat .gpu/COMMIT >>"$OUT/commit.txt"
{
  timeout 200 /tmp/v/gpu_sph --include-ignored --test-threads 1 --nocapture; echo "(exit $?)"
  for t in memcheck racecheck; do timeout 120 compute-sanitizer --tool $t /tmp/v/gpu_sph --include-ignored --test-threads 1 gpu_candidate_cache_serves_the_later_passes_and_the_density; echo "(exit $?)"; done
} >"$OUT/tests.log" 2>&1
{
  for rep in 1 2; do
    for s in plummer uniform; do
      for b in b bn3; do
        echo "== $b $s 2^20 rep $rep"
        timeout 60 /tmp/v/$b neighbours --backend gpu --scene $s --n 1048576 --neighbours 64 --kernel cubic-spline | grep -E "^h iter|^\| [0-9]|^density"
      done
    done
  done
  for b in b bn3; do
    echo "== $b plummer 2^22"
    timeout 60 /tmp/v/$b neighbours --backend gpu --scene plummer --n 4194304 --neighbours 64 --kernel cubic-spline | grep -E "^h iter|^\| [0-9]|^density"
  done
} >"$OUT/ab.log" 2>&1
grep -E "exit|test result|FAILED|panicked|ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/tests.log" >"$OUT/summary.txt"
