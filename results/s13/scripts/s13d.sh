#!/usr/bin/env bash
# Session 13, call 4: the few-lane filter's variants in one run: prev-warpkit (main 92528d3, no
# filter), bin/warpkit (ade2622, FEW_LANES 8), few4-warpkit (FEW_LANES 4), wide-warpkit
# (FEW_LANES 8, and only walks whose box is wider than 1.5 hmin): `neighbours` h iterations.
set -u
: "${OUT:?}"
tar -C .gpu -xJf .gpu/bins.tar.xz || exit 1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "branch $(cat .gpu/COMMIT)"; } >"$OUT/commit.txt" 2>&1
start=$SECONDS; BUDGET=${BUDGET:-300}
run_for() { local want=$1; shift; local left=$((BUDGET-(SECONDS-start)-3)); ((left<want)) && want=$left
  ((want<5)) && { echo "(skipped: budget spent) $*"; return 0; }
  echo "\$ (limit ${want}s) $*"; local t0=$SECONDS; timeout -k 5 "$want" "$@"; local rc=$?
  ((rc==124||rc==137)) && echo "(stopped at its limit)"; echo "(exit $rc after $((SECONDS-t0))s)"; }
{
  for sc in "plummer 65536" "plummer 262144" "plummer 1048576" "uniform 1048576" "condensed 1048576" "uniform 4194304"; do for r in 1 2; do for b in .gpu/prev-warpkit .gpu/bin/warpkit .gpu/few4-warpkit .gpu/wide-warpkit; do
    echo "== $b $sc"; run_for 20 $b neighbours --backend gpu --scene ${sc% *} --n ${sc#* } --neighbours 64
  done; done; done
} >"$OUT/sph.log" 2>&1
