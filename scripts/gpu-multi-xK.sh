#!/usr/bin/env bash
# On a machine with 2 or more GPUs (for when one is lent): the NCCL test over every
# visible GPU, the single-GPU pipeline at Plummer 2^24, and `warpkit repro multigpu`: strong
# scaling at 2^24 and weak scaling at 2^23 per GPU, K = 1, 2, 4, 8 GPUs (as many as are visible).
# Files into $OUT: summary.txt, tests.log, scaling.log, repro/multigpu/ (table.md, data.csv,
# meta.json, figures). Same layout and NCCL set-up as gpu-multi.sh (run from the directory holding
# .gpu/bin/warpkit and .gpu/tests/gpu_multi-*). Each gravity run has its own timeout: the local
# trees and LETs are still built on the CPU (only the walks run on the GPUs), so at 2^24 one
# evaluation takes seconds.
set -u
bash "$(dirname "$0")/unstage" || exit 1 # scripts/stage packs the executables
out=${OUT:-/tmp/gpu-multi-xK}
mkdir -p "$out"
sum="$out/summary.txt"
: >"$sum"
w=.gpu/bin/warpkit
t=$(ls .gpu/tests/gpu_multi-* 2>/dev/null | head -1)
say() { echo "$*" | tee -a "$sum"; }
# One budget under the 10-minute limit of a call: each step gets its cap or what is left.
cap() { local c=$1 l=$((570 - SECONDS)); [ "$l" -lt "$c" ] && c=$l; [ "$c" -lt 5 ] && c=5; echo "$c"; }
say "commit $(cat .gpu/COMMIT 2>/dev/null || echo unknown)"
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader 2>&1 | tee -a "$sum"
nvidia-smi topo -m >>"$sum" 2>&1
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | wc -l)
say "visible GPUs: $gpus"

. "$(dirname "$0")/nccl-env.sh"

timeout $(cap 90) "$t" --include-ignored --test-threads 1 --nocapture virtual_ranks >"$out/tests.log" 2>&1
say "tests (virtual ranks): exit $?"
timeout $(cap 90) "$t" --include-ignored --test-threads 1 --nocapture nccl >>"$out/tests.log" 2>&1
say "tests (NCCL): exit $?"
grep -E "^test |NOT RUN|NCCL over|test result|panicked" "$out/tests.log" | tee -a "$sum"

{
  common="--n 16777216 --scene plummer --theta 0.5 --check 200"
  echo "== single-GPU pipeline, group kernel"
  timeout $(cap 60) $w --backend gpu gravity $common --repeats 3 --traversal group
  echo "== repro multigpu"
  # Strong 2^24 and weak 2^23 per GPU, one rank per GPU over NCCL; two repeats after a warm-up.
  # SIGINT at the cap: the repro writes its table and figures from the rows measured.
  timeout -s INT -k 30 $(cap 420) $w --backend gpu repro multigpu --repeats 2 --out "$out/repro"
  echo "== repro multigpu: exit $?"
  echo "== script time ${SECONDS} s"
} >"$out/scaling.log" 2>&1
grep -E "^==|^Barnes|^wall|^\| [0-9]+ \| 2\^" "$out/scaling.log" | tee -a "$sum"
