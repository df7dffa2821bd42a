#!/usr/bin/env bash
# The Python package's tests on the GPU machine (no Rust, no network there). Run from the repo
# root, with the wheel built here (`maturin build --release` in python/: one cp39-abi3 wheel for
# every CPython >= 3.9) staged under .gpu/wheels/, and python3 holding numpy, scipy and pytest.
# Installs the wheel into /tmp/site (no index, no dependencies), prints the backend that "auto"
# resolves to, and runs python/tests with WARPKIT_EXPECT_GPU=1: every accuracy test then runs on
# the "gpu" backend too (against the same float64/CPU references as on "cpu"), and a missing or
# unusable GPU is a failure, not a skip. Writes everything to $OUT/python.log; exits with pytest's
# status (or 1 when the install or import fails).
set -uo pipefail
: "${OUT:?set OUT to the directory for the log}"
log="$OUT/python.log"
exec > >(tee "$log") 2>&1
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

commit=$(git rev-parse HEAD 2>/dev/null || cat .gpu/COMMIT 2>/dev/null || echo "unknown commit")
echo "=== $(date -u +%FT%TZ) $commit"
echo "=== python: $(command -v "$PY") $("$PY" -c 'import sys; print(sys.version.split()[0])')"
"$PY" -c 'import numpy, scipy, pytest; print("numpy", numpy.__version__, "scipy", scipy.__version__, "pytest", pytest.__version__)'
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "(no nvidia-smi)"

shopt -s nullglob
wheels=(.gpu/wheels/*.whl)
if ((${#wheels[@]} == 0)); then
  echo "error: no wheel under .gpu/wheels/ ($(pwd))"
  exit 1
fi
echo "=== install ${wheels[*]}"
ls -l "${wheels[@]}"
rm -rf /tmp/site
if ! "$PY" -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "${wheels[@]}"; then
  echo "error: pip could not install the wheel (its tags: see the file name above)"
  exit 1
fi
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}

echo "=== backend"
if ! "$PY" -c 'import warpkit; print(warpkit.backend_name())'; then
  echo "error: import warpkit failed"
  exit 1
fi
# Where warpkit was imported from, and why "auto" might not be the GPU (the GPU backend's error).
"$PY" -c 'import warpkit
print("warpkit from", warpkit.__file__)
try:
    print("backend_name(\"gpu\") =", warpkit.backend_name("gpu"))
except RuntimeError as e:
    print("the GPU backend is not usable:", e)'

echo "=== pytest (WARPKIT_EXPECT_GPU=1)"
# The tests import the installed package (importlib mode: python/ is not put on sys.path ahead of
# /tmp/site); WARPKIT_TEST_SEED, when set, repeats a seed.
WARPKIT_EXPECT_GPU=1 "$PY" -m pytest -q -rs --import-mode=importlib -p no:cacheprovider python/tests
rc=$?
echo "=== pytest exit status $rc"
exit $rc
