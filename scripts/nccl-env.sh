#!/usr/bin/env bash
# Sourced by gpu-multi.sh and gpu-multi-xK.sh (needs their `say`): finds NCCL's libnccl.so.2 in
# the Python environment (or WARPKIT_NCCL_LIB) and puts a libnccl.so link to it on
# LD_LIBRARY_PATH — cudarc 0.19 dlopens libnccl.so / libnccl.so.12 only, and glibc reads
# LD_LIBRARY_PATH at process start (host/multi/nccl.rs) — then turns NVLink multicast off.
find_nccl() {
  local py lib
  for py in ${WARPKIT_PYTHON:-} python3 python /usr/bin/python3; do
    command -v "$py" >/dev/null 2>&1 || continue
    # The nvidia-nccl-cu12/13 wheel (a namespace package: __path__, not __file__).
    lib=$("$py" -c 'import nvidia.nccl as m, os; print(os.path.join(list(m.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
    [ -f "$lib" ] && { echo "$lib"; return; }
    # Any site-packages of that interpreter (torch installs the wheel beside itself).
    lib=$("$py" - 2>/dev/null <<'PY'
import glob, site, sys, os
roots = list(getattr(site, "getsitepackages", lambda: [])()) + [site.getusersitepackages()] + sys.path
for r in roots:
    for pat in ("nvidia/nccl/lib/libnccl.so.2", "torch/lib/libnccl.so.2"):
        hits = glob.glob(os.path.join(r, pat))
        if hits:
            print(hits[0]); sys.exit()
PY
)
    [ -f "$lib" ] && { echo "$lib"; return; }
  done
  lib=$(ldconfig -p 2>/dev/null | awk '/libnccl\.so\.2 /{print $NF; exit}')
  [ -f "$lib" ] && echo "$lib"
}
lib=${WARPKIT_NCCL_LIB:-$(find_nccl)}
if [ -n "$lib" ] && [ -f "$lib" ]; then
  links=$(mktemp -d /tmp/nccl-link.XXXX)
  ln -sf "$(readlink -f "$lib")" "$links/libnccl.so"
  export LD_LIBRARY_PATH="$links${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  say "NCCL: $lib (linked as $links/libnccl.so)"
else
  say "NCCL: libnccl.so.2 not found in the Python environment; the NCCL tests will fail saying so"
fi
export NCCL_NVLS_ENABLE=0 # never NVLink multicast
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
