#!/usr/bin/env bash
# Session 11, call 2: where the tree stages' time goes (ncu of every tree kernel: uniform 2^22 and
# the 5·10^6 collision's initial conditions), and the collision's force frontier over α and θ_max.
set -u
: "${OUT:?}"
bash scripts/unstage || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/gpu.txt" 2>&1
cp .gpu/COMMIT "$OUT/commit.txt"; export WARPKIT_COMMIT=$(cat .gpu/COMMIT)
start=$SECONDS; BUDGET=${BUDGET:-480}
run_for() { local want=$1; shift; local left=$((BUDGET-(SECONDS-start)-3)); ((left<want)) && want=$left
  ((want<5)) && { echo "(skipped: budget spent) $*"; return 0; }
  echo "\$ (limit ${want}s) $*"; local t0=$SECONDS; timeout -k 5 "$want" "$@"; local rc=$?
  ((rc==124||rc==137)) && echo "(stopped at its limit)"; echo "(exit $rc after $((SECONDS-t0))s)"; }
W=.gpu/bin/warpkit
run_for 60 $W nbody --n 5000000 --t-end 0.02 --dt 0.02 --out /tmp/ic --write-ic --snapshot-every 1000 >"$OUT/ic.log" 2>&1
IC=/tmp/ic/ic.gadget; echo "ic file: $IC" >>"$OUT/ic.log"; ls -la /tmp/ic >>"$OUT/ic.log"
TREE='regex:bh_(reset|bounding|keys|morton|build_list|summarize|sort)|radix|sph_scan'
S=(--section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats --section MemoryWorkloadAnalysis)
{
  echo "== uniform 2^22 stage times"
  run_for 60 $W gravity --backend gpu --scene uniform --n 4194304 --traversal group2 --quadrupole --mode sorted --check 0 --repeats 5
  echo "== ncu uniform 2^22, tree kernels of one evaluation"
  run_for 120 ncu -k "$TREE" --launch-count 40 "${S[@]}" $W gravity --backend gpu --scene uniform --n 4194304 --traversal group2 --quadrupole --mode sorted --check 0 --repeats 1
} >"$OUT/ncu-uniform.log" 2>&1
{
  echo "== collision ic, ncu tree kernels of one evaluation"
  run_for 120 ncu -k "$TREE" --launch-count 40 "${S[@]}" $W gravity --backend gpu --input "$IC" --eps 0.05 --traversal group2 --quadrupole --mode regular --check 0 --repeats 1
} >"$OUT/ncu-collision.log" 2>&1
{
  for a in 0.006 0.008 0.01; do for tm in 1.0 1.3 1.6; do
    echo "== alpha $a theta_max $tm"
    run_for 40 $W gravity --backend gpu --input "$IC" --eps 0.05 --traversal group2 --quadrupole --mode regular --alpha $a --theta-max $tm --theta 0.7 --check 2000 --repeats 3
  done; done
} >"$OUT/frontier.log" 2>&1
grep -E "^==|^\\\$|exit|median|gravity|build|summar|sort|step" "$OUT/frontier.log" >"$OUT/summary.txt"
