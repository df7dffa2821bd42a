#!/usr/bin/env bash
# Session 18, call 4 (experiment, not kept as is): does the order of the warp groups in their array
# (bh_sort emits them in atomic order) change the gravity walk's time? bx sorts them by their
# first body (tree order) on the host when WARPKIT_EXP_GROUPS is set ("rev": descending).
set -u
: "${OUT:?}"
mkdir -p /tmp/v && tar -C /tmp/v -xJf .gpu/var.tar.xz || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/commit.txt" 2>&1
cat .gpu/COMMIT >>"$OUT/commit.txt"
run() { timeout 60 "$@" | grep -E "^\| (sort|gravity|total)|^h iteration|^density"; }
{
  for rep in 1 2; do
    for mode in none fwd rev; do
      if [ $mode = none ]; then unset WARPKIT_EXP_GROUPS; else export WARPKIT_EXP_GROUPS=$mode; fi
      echo "== $mode uniform 2^22 rep $rep"; run /tmp/v/bx gravity --backend gpu --scene uniform --n 4194304 --traversal group2 --theta 0.7 --eps 0.00167 --check 0 --repeats 5
      echo "== $mode uniform 2^20 q rep $rep"; run /tmp/v/bx gravity --backend gpu --scene uniform --n 1048576 --traversal group --theta 0.375 --eps 0.00167 --check 0 --repeats 5
      echo "== $mode plummer 2^20 rep $rep"; run /tmp/v/bx gravity --backend gpu --scene plummer --n 1048576 --traversal group2 --theta 0.5 --quadrupole --check 0 --repeats 5
      echo "== $mode lattice vote rep $rep"; run /tmp/v/bx gravity --backend gpu --scene lattice --n 1000000 --traversal vote --theta 0.5 --check 0 --repeats 3
      echo "== $mode neighbours plummer rep $rep"; run /tmp/v/bx neighbours --backend gpu --scene plummer --n 1048576 --neighbours 64 --kernel cubic-spline
    done
  done
} >"$OUT/ab.log" 2>&1
