#!/usr/bin/env bash
# On ONE GPU: the multi-rank tests (virtual ranks on one GPU, NCCL with one rank), one
# compute-sanitizer memcheck of the virtual-ranks test, and `gravity` at 2^20 Plummer through the
# single-GPU pipeline, one NCCL rank (--gpus 1) and 2 and 4 virtual ranks (--ranks), and a short
# `nbody --ranks 2` on the GPU. Under four
# minutes; four files into $OUT: summary.txt, tests.log, memcheck.log, timing.log.
#
# Run from a directory holding the stripped executables:
#   .gpu/bin/warpkit   .gpu/tests/gpu_multi-*
# NCCL: cudarc 0.19 dlopens libnccl.so / libnccl.so.12, while NCCL's wheel (nvidia-nccl-cu12, the
# one PyTorch installs) ships libnccl.so.2. This script finds that file in the Python environment
# and puts a libnccl.so link to it on LD_LIBRARY_PATH before anything starts (glibc reads
# LD_LIBRARY_PATH at process start only; host/multi/nccl.rs explains).
set -u
bash "$(dirname "$0")/unstage" || exit 1 # scripts/stage packs the executables
out=${OUT:-/tmp/gpu-multi}
mkdir -p "$out"
sum="$out/summary.txt"
: >"$sum"
w=.gpu/bin/warpkit
t=$(ls .gpu/tests/gpu_multi-* 2>/dev/null | head -1)
say() { echo "$*" | tee -a "$sum"; }
# One budget for the whole script (under four minutes): each step gets its cap or what is left.
cap() { local c=$1 l=$((${BUDGET:-225} - SECONDS)); [ "$l" -lt "$c" ] && c=$l; [ "$c" -lt 5 ] && c=5; echo "$c"; }
say "commit $(cat .gpu/COMMIT 2>/dev/null || echo unknown)"
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader 2>&1 | tee -a "$sum"
[ -x "$w" ] && [ -n "$t" ] || { say "missing .gpu/bin/warpkit or .gpu/tests/gpu_multi-*"; exit 1; }

# --- NCCL: find libnccl.so.2, link it as libnccl.so (scripts/nccl-env.sh) -------------------
. "$(dirname "$0")/nccl-env.sh"

# --- 1. the tests (about a minute) ---------------------------------------------------------------
# Virtual ranks first, NCCL apart: a failing NCCL rank ends its process (host/multi/nccl.rs).
timeout $(cap 60) "$t" --include-ignored --test-threads 1 --nocapture virtual_ranks >"$out/tests.log" 2>&1
say "tests (virtual ranks): exit $? (timeout 124)"
# The all-GPUs test fails on purpose with one GPU: skipped there, and said.
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | wc -l)
skip=()
if [ "$gpus" -lt 2 ]; then
  skip=(--skip when_two_gpus_present)
  say "NOT RUN: nccl_ranks_on_all_gpus_when_two_gpus_present ($gpus GPU visible)"
fi
timeout $(cap 40) "$t" --include-ignored --test-threads 1 --nocapture nccl "${skip[@]}" >>"$out/tests.log" 2>&1
say "tests (NCCL): exit $? (timeout 124)"
grep -E "^test |NOT RUN|test result|panicked" "$out/tests.log" | head -20 | tee -a "$sum"

# --- 2. memcheck of the virtual ranks on one GPU (the essential-tree upload and group kernel) ----
if command -v compute-sanitizer >/dev/null 2>&1; then
  GPU_MULTI_QUICK=1 timeout $(cap 60) compute-sanitizer --tool memcheck "$t" --include-ignored --exact \
    virtual_ranks_on_one_gpu_give_the_single_gpu_forces --test-threads 1 >"$out/memcheck.log" 2>&1
  say "memcheck: exit $? (timeout 124)"
  tail -3 "$out/memcheck.log" | tee -a "$sum"
else
  echo "memcheck: compute-sanitizer not on PATH" | tee "$out/memcheck.log" >>"$sum"
fi

# --- 3. timing at 2^20 Plummer (about a minute) --------------------------------------------------
{
  common="--n 1048576 --scene plummer --theta 0.5 --check 1000"
  echo "== single-GPU pipeline, group kernel"
  timeout $(cap 20) $w --backend gpu gravity $common --repeats 3 --traversal group
  echo "== --gpus 1 (one NCCL rank: the multi-rank pipeline)"
  timeout $(cap 40) $w gravity $common --repeats 2 --gpus 1
  for k in 2 4; do
    echo "== --ranks $k (virtual ranks on one GPU)"
    timeout $(cap 40) $w --backend gpu gravity $common --repeats 2 --ranks $k
  done
  echo "== nbody --ranks 2 (collision, 20000 particles, 10 steps, walks on the GPU)"
  timeout $(cap 20) $w --backend gpu nbody --ranks 2 --ic collision --n 20000 --t-end 0.2 \
    --dt 0.02 --theta 0.7 --no-quadrupole
  echo "== script time ${SECONDS} s"
} >"$out/timing.log" 2>&1
say "timing: see timing.log"
grep -E "^==|^wall|^Barnes|^\| total|relative error" "$out/timing.log" | tee -a "$sum"
