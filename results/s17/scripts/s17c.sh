#!/usr/bin/env bash
# Session 17, call 3 (binaries of 1001d4e; the test binary with the 2^18 fix): gpu_combined in
# full; ncu instruction counts of the seed's vote kernel (bh_gravity) on the 100³ lattice,
# tree-sorted, θ 0.5 … 0.8 (the seed's profile, 2.21e9 instructions, does not state its θ).
set -u
: "${OUT:?}"
mkdir -p /tmp/v && tar -C /tmp/v -xJf .gpu/var.tar.xz || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/commit.txt" 2>&1
cat .gpu/COMMIT >>"$OUT/commit.txt"
start=$SECONDS; BUDGET=${BUDGET:-400}
run_for() { local want=$1; shift; local left=$((BUDGET-(SECONDS-start)-3)); ((left<want)) && want=$left
  ((want<5)) && { echo "(skipped: budget spent) $*"; return 0; }
  echo "\$ (limit ${want}s) $*"; local t0=$SECONDS; timeout -k 5 "$want" "$@"; local rc=$?
  ((rc==124||rc==137)) && echo "(stopped at its limit)"; echo "(exit $rc after $((SECONDS-t0))s)"; }
run_for 150 /tmp/v/gpu_combined --include-ignored --test-threads 1 --nocapture >"$OUT/tests.log" 2>&1
{
  for t in 0.5 0.6 0.7 0.8; do
    echo "=== vote lattice 1000000 θ $t"
    run_for 40 ncu --metrics smsp__inst_executed.sum,sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum -k "regex:^bh_gravity\$" -c 1 /tmp/v/b gravity --backend gpu --scene lattice --n 1000000 --theta $t --traversal vote --repeats 1 --check 0
    run_for 30 /tmp/v/b gravity --backend gpu --scene lattice --n 1000000 --theta $t --traversal vote --repeats 5 --check 100000
  done
} >"$OUT/vote.log" 2>&1
grep -E "^===|^\\\$|exit|test result|FAILED|panicked|2\^18|inst_executed|duration|relative error|gravity " "$OUT/tests.log" "$OUT/vote.log" >"$OUT/summary.txt"
# The seed's θ table: our vote kernel on the 100³ lattice at ε 0.05 and 0, errors by several
# definitions against float64 direct summation on 16 394 bodies (theta_errors.py, PyTorch).
{
  S=results/s17/scripts/theta_errors.py; D=/tmp/theta; mkdir -p $D
  PYTHONUNBUFFERED=1 python3 $S lattice $D
  for e in 0.05 0; do for t in 0.1 0.2 0.3 0.4 0.5 0.6 0.7 0.8; do
    run_for 20 /tmp/v/b gravity --backend gpu --input $D/lattice.npy --theta $t --eps $e --traversal vote --repeats 1 --check 0 --output $D/acc-$t-$e.npy
  done; done
  PYTHONUNBUFFERED=1 run_for 120 python3 $S errors $D 0.05 0
} >"$OUT/theta.log" 2>&1
grep -E "^eps|Error|error:" "$OUT/theta.log" >>"$OUT/summary.txt"
