#!/usr/bin/env bash
# Session 15, call 6: the Python package on the GPU (wheel built from 2f7aa82 with maturin):
# scripts/gpu-python.sh — every accuracy test on the "gpu" backend too, the N-body run on its
# worker thread (session 14) among them.
set -u
: "${OUT:?}"
PY=python3
for p in /opt/torch/.venv/bin/python3 /usr/bin/python3; do
  [ -x $p ] && $p -c 'import numpy, scipy, pytest' 2>/dev/null && { PY=$p; break; }
done
PYTHON=$PY timeout 400 bash scripts/gpu-python.sh
grep -E "passed|failed|error|backend" "$OUT/python.log" | tail -20 >"$OUT/summary.txt"
