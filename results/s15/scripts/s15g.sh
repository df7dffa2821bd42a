#!/usr/bin/env bash
# Session 15, call 7: where the tree stages' time goes at uniform 2^22 (main 2f7aa82): Nsight
# Compute on the radix sort's kernels and the level summary's launches of one build.
set -u
: "${OUT:?}"
W=.gpu/bin/warpkit
timeout 200 ncu --clock-control none --kernel-name regex:"radix_|bh_summarize_level|bh_keys|bh_morton|bh_link|bh_sort" \
  --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,launch__grid_size,launch__registers_per_thread \
  --csv $W gravity --backend gpu --scene uniform --n 4194304 --traversal group2 --quadrupole --mode sorted --check 0 --repeats 1 >"$OUT/ncu.csv" 2>"$OUT/ncu.err"
echo "exit $?" >>"$OUT/ncu.err"
python3 - "$OUT/ncu.csv" >"$OUT/summary.txt" <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
hdr = rows[0]; rows = rows[1:]
ki, mi, vi = hdr.index("Kernel Name"), hdr.index("Metric Name"), hdr.index("Metric Value")
tot = collections.defaultdict(float); cnt = collections.Counter()
for r in rows:
    if r[mi] == "gpu__time_duration.sum":
        v = float(r[vi].replace(",", "")); tot[r[ki]] += v; cnt[r[ki]] += 1
for k in sorted(tot, key=tot.get, reverse=True):
    print(f"{k:32s} launches {cnt[k]:3d} total {tot[k]/1000:.3f} (unit as ncu: see csv)")
PY
