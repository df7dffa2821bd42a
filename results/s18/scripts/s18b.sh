#!/usr/bin/env bash
# Session 18, call 2: the h iteration's ladder as 32 binned rungs (spans 1.1, 1.15, 1.2 around
# the guess) against the 8-rung ladder of 1656845 (b), Plummer and uniform 2^20, alternating.
set -u
: "${OUT:?}"
mkdir -p /tmp/v && tar -C /tmp/v -xJf .gpu/var.tar.xz || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/commit.txt" 2>&1
cat .gpu/COMMIT >>"$OUT/commit.txt"
{
  for rep in 1 2; do
    for s in plummer uniform; do
      for b in b b1.1 b1.15 b1.2; do
        echo "== $b $s rep $rep"
        timeout 60 /tmp/v/$b neighbours --backend gpu --scene $s --n 1048576 --neighbours 64 --kernel cubic-spline; echo "(exit $?)"
      done
    done
  done
} >"$OUT/cli.log" 2>&1
grep -E "^==|^h iteration|^density|^\| [0-9]" "$OUT/cli.log" >"$OUT/summary.txt"
M=gpu__time_duration.sum,smsp__inst_executed.sum,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,l1tex__t_sector_hit_rate.pct
timeout 120 ncu --clock-control none --metrics $M -k regex:sph_group --csv /tmp/v/b1.2 neighbours --backend gpu --scene plummer --n 1048576 --neighbours 64 --kernel cubic-spline >"$OUT/ncu-b12.csv" 2>&1
timeout 120 ncu --clock-control none --metrics $M -k regex:sph_group --csv /tmp/v/b neighbours --backend gpu --scene plummer --n 1048576 --neighbours 64 --kernel cubic-spline >"$OUT/ncu-b.csv" 2>&1
