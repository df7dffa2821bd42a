#!/usr/bin/env bash
# Session 18, call 1 (diagnostics, no code changed since 1656845): where the time of the
# h iteration (Plummer 2^20) and of the tree stages (uniform 2^22) goes — the CLI's pass table and
# stage times, and every kernel's duration under ncu.
set -u
: "${OUT:?}"
mkdir -p /tmp/v && tar -C /tmp/v -xJf .gpu/var.tar.xz || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/commit.txt" 2>&1
cat .gpu/COMMIT >>"$OUT/commit.txt"
B=/tmp/v/b
{
  for s in plummer uniform; do
    timeout 60 $B neighbours --backend gpu --scene $s --n 1048576 --neighbours 64 --kernel cubic-spline; echo "(exit $?)"
  done
  timeout 60 $B gravity --backend gpu --scene uniform --n 4194304 --traversal group2 --theta 0.7 --eps 0.00167 --check 0 --repeats 5; echo "(exit $?)"
} >"$OUT/cli.log" 2>&1
M=gpu__time_duration.sum,smsp__inst_executed.sum
timeout 150 ncu --clock-control none --metrics $M --csv $B neighbours --backend gpu --scene plummer --n 1048576 --neighbours 64 --kernel cubic-spline >"$OUT/ncu-neigh.csv" 2>"$OUT/ncu-neigh.err"
timeout 150 ncu --clock-control none --metrics $M --csv $B gravity --backend gpu --scene uniform --n 4194304 --traversal group2 --theta 0.7 --eps 0.00167 --check 0 --repeats 1 >"$OUT/ncu-grav.csv" 2>"$OUT/ncu-grav.err"
xz -9 "$OUT"/ncu-*.csv
