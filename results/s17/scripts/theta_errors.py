"""Session 17: the seed's θ table against ours (issue 16, "what makes ours 3x worse").

Writes the seed's 100^3 lattice (cell-centred in [-0.5, 0.5]^3, x fastest, masses 1/N, as
`warpkit`'s `scene::lattice`) to lattice.npy; then, for each accelerations file acc-<θ>-<ε>.npy
that `warpkit gravity --input lattice.npy --traversal vote --output ...` wrote, prints the errors
against float64 direct summation (PyTorch on the GPU) on an evenly spaced sample, by several
definitions: |Δa|/|a| (ours), ||a|-|a_ref||/|a_ref| (magnitude only), and Σ|Δa|/Σ|a_ref|.

usage: theta_errors.py lattice OUTDIR | theta_errors.py errors OUTDIR EPS [EPS ...]
"""
import glob
import os
import sys

import numpy as np

K = 100
N = K**3


def lattice():
    h = np.float32(1.0) / np.float32(K)
    i = np.arange(N)
    c = lambda j: np.float32(-0.5) + h * (j.astype(np.float32) + np.float32(0.5))
    b = np.empty((N, 4), np.float32)
    b[:, 0], b[:, 1], b[:, 2] = c(i % K), c(i // K % K), c(i // (K * K))
    b[:, 3] = np.float32(1.0) / np.float32(N)
    return b


def reference(b, idx, eps):
    import torch

    dev = torch.device("cuda")
    p = torch.tensor(b[:, :3], dtype=torch.float64, device=dev)
    m = torch.tensor(b[:, 3], dtype=torch.float64, device=dev)
    out = []
    for s in range(0, len(idx), 64):
        t = torch.tensor(idx[s : s + 64], device=dev)
        d = p[None, :, :] - p[t][:, None, :]
        r2 = (d * d).sum(-1) + eps * eps
        r2[torch.arange(len(t), device=dev), t] = float("inf")  # no self term
        w = m[None, :] * r2.pow(-1.5)
        out.append((d * w[..., None]).sum(1).cpu().numpy())
    return np.concatenate(out)


def main():
    mode, outdir = sys.argv[1], sys.argv[2]
    if mode == "lattice":
        np.save(os.path.join(outdir, "lattice.npy"), lattice())
        return
    b = lattice()
    idx = np.arange(0, N, 61)
    for eps in sys.argv[3:]:
        ref = reference(b, idx, float(eps))
        rn = np.linalg.norm(ref, axis=1)
        for f in sorted(glob.glob(os.path.join(outdir, f"acc-*-{eps}.npy"))):
            a = np.load(f)[idx].astype(np.float64)
            vec = np.linalg.norm(a - ref, axis=1) / rn
            mag = np.abs(np.linalg.norm(a, axis=1) - rn) / rn
            tot = np.linalg.norm(a - ref, axis=1).sum() / rn.sum()
            theta = os.path.basename(f).split("-")[1]
            print(
                f"eps {eps} theta {theta}: |da|/|a| mean {vec.mean():.3e} median {np.median(vec):.3e} "
                f"max {vec.max():.3e}; magnitude mean {mag.mean():.3e} max {mag.max():.3e}; "
                f"sum|da|/sum|a| {tot:.3e}  ({len(idx)} bodies)",
                flush=True,
            )


main()
