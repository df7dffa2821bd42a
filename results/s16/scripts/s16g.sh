#!/usr/bin/env bash
# Session 16, call 7: the SPH search's GROUP_BLOCK 96 (gb96) and 64 (gb64) against 128 (final,
# 98a78c0): at 68 registers 128-thread blocks fit 7 per SM (28 warps), 96 or 64 fit 30 warps.
# Three runs each alternating; gpu_sph of both variants.
set -u
: "${OUT:?}"
mkdir -p /tmp/v && tar -C /tmp/v -xJf .gpu/var.tar.xz || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/commit.txt" 2>&1
start=$SECONDS; BUDGET=${BUDGET:-230}
run_for() { local want=$1; shift; local left=$((BUDGET-(SECONDS-start)-3)); ((left<want)) && want=$left
  ((want<5)) && { echo "(skipped: budget spent) $*"; return 0; }
  echo "\$ (limit ${want}s) $*"; local t0=$SECONDS; timeout -k 5 "$want" "$@"; local rc=$?
  ((rc==124||rc==137)) && echo "(stopped at its limit)"; echo "(exit $rc after $((SECONDS-t0))s)"; }
{
  for sc in "uniform 1048576" "uniform 4194304" "plummer 1048576" "condensed 1048576" "uniform 262144"; do for b in final gb96 gb64 final gb96 gb64 final gb96 gb64; do
    echo "== $b $sc"; run_for 20 /tmp/v/$b neighbours --backend gpu --scene ${sc% *} --n ${sc#* } --neighbours 64 --kernel cubic-spline
  done; done
} >"$OUT/sph.log" 2>&1
{
  run_for 55 /tmp/v/gpu_sph_gb96 --include-ignored --test-threads 1
  run_for 55 /tmp/v/gpu_sph_gb64 --include-ignored --test-threads 1
} >"$OUT/tests.log" 2>&1
grep -E "^==|^\\\$|exit|test result|FAILED|panicked|ERROR SUMMARY|h iteration|count pass|density" "$OUT/tests.log" "$OUT/sph.log" >"$OUT/summary.txt"
