#!/usr/bin/env bash
# Session 12, call 3: main at the merge of sph-split (group-walk ranges, h-spread split, the
# ladder h iteration; block_scan on the new warp scan): gpu_sph, gpu_combined, gpu_bh (the
# radix sort's scan), memcheck/racecheck; `neighbours` h iterations against b0b45a3's binary
# (old-warpkit) in the same run; tree stages at uniform 2^22; `repro neighbours` to 2^22.
set -u
: "${OUT:?}"
bash scripts/unstage || exit 1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "main $(cat .gpu/COMMIT)"; echo "old-warpkit b0b45a3"; } >"$OUT/commit.txt" 2>&1
export WARPKIT_COMMIT=$(cat .gpu/COMMIT)
start=$SECONDS; BUDGET=${BUDGET:-560}
run_for() { local want=$1; shift; local left=$((BUDGET-(SECONDS-start)-3)); ((left<want)) && want=$left
  ((want<5)) && { echo "(skipped: budget spent) $*"; return 0; }
  echo "\$ (limit ${want}s) $*"; local t0=$SECONDS; timeout -k 5 "$want" "$@"; local rc=$?
  ((rc==124||rc==137)) && echo "(stopped at its limit)"; echo "(exit $rc after $((SECONDS-t0))s)"; }
W=.gpu/bin/warpkit; O=.gpu/old-warpkit
S=$(ls .gpu/tests/gpu_sph-*); C=$(ls .gpu/tests/gpu_combined-*); B=$(ls .gpu/tests/gpu_bh-*)
{
  run_for 90 $S --include-ignored --test-threads 1 --nocapture
  run_for 60 compute-sanitizer --tool memcheck --print-limit 20 $S gpu_h_iteration_converges_and_agrees_with_its_counts --exact --include-ignored --test-threads 1
  run_for 60 compute-sanitizer --tool racecheck --print-limit 20 $S gpu_counts_at_2_16_equal_the_cpu --exact --include-ignored --test-threads 1
  run_for 40 compute-sanitizer --tool memcheck --print-limit 20 $S gpu_bad_input_is_refused_and_all_pairs_are_bounded --exact --include-ignored --test-threads 1
  run_for 60 $B --include-ignored --test-threads 1
  run_for 40 compute-sanitizer --tool memcheck --print-limit 20 $B gpu_sorted_build_makes_the_insertion_tree --exact --include-ignored --test-threads 1
  run_for 120 $C --include-ignored --test-threads 1
} >"$OUT/tests.log" 2>&1
{
  for n in 65536 1048576; do for b in $O $W; do
    echo "== $b plummer $n"; run_for 30 $b neighbours --backend gpu --scene plummer --n $n --neighbours 64
  done; done
  for n in 1048576 4194304; do for b in $O $W; do
    echo "== $b uniform $n"; run_for 30 $b neighbours --backend gpu --scene uniform --n $n --neighbours 64
  done; done
  echo "== tree stages uniform 2^22"
  run_for 30 $W gravity --backend gpu --scene uniform --n 4194304 --traversal group2 --quadrupole --mode sorted --check 0 --repeats 5
} >"$OUT/sph.log" 2>&1
run_for 200 $W repro neighbours --backend gpu --n 4194304 --out /tmp/repro >"$OUT/repro-neighbours.log" 2>&1
tar -C /tmp/repro -czf "$OUT/neighbours.tgz" neighbours 2>/dev/null
grep -E "^==|^\\\$|exit|test result|FAILED|panicked|ERROR SUMMARY|RACECHECK SUMMARY|h iteration|count pass|stages|tree" "$OUT"/*.log >"$OUT/summary.txt"
