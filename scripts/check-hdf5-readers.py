#!/usr/bin/env python3
"""Reads a warpkit HDF5 snapshot (`warpkit nbody --format hdf5`) with pynbody (when installed), yt
and swiftsimio, and checks that each gives warpkit's particles: positions, velocities, masses and
ids equal to the file's datasets as h5py reads them (per type, matched by id), and the units that
the file's /Units states (warpkit runs in N-body units, G = 1; /Units gives one physical scaling:
1 kpc, 1e10 Msun, and the time that G = 1 implies, see host/nbody/hdf5.rs).

    python3 scripts/check-hdf5-readers.py SNAPSHOT.hdf5 [--images DIR]

With --images it saves a yt ParticleProjectionPlot and a swiftsimio projection (PNG) into DIR.
Exits non-zero on the first mismatch; prints the versions it checked. Needs h5py, numpy, yt,
swiftsimio (pip install yt swiftsimio h5py numpy; pynbody optional; the images need matplotlib,
and swiftsimio's smoothed projection scipy, which both pull in).

What a reader needs beyond `load(path)` for a warpkit file, which is shown below:
- yt reads it with its Gadget HDF5 frontend, which does not read units from the file: pass
  `unit_base` (here built from /Units). warpkit's runs are isolated (BoxSize = 0), so yt infers a
  bounding box from the particles; its plots then need `bounding_box` at load (done here) or an
  explicit width, centre and depth.
- swiftsimio names the Gadget types by SWIFT's convention: PartType1 is `dark_matter` (warpkit's
  halo), PartType2 `boundary` (warpkit's disk), PartType3 `sinks` (bulge). Its projections want a
  3-vector box size: with BoxSize = 0 (Gadget's scalar, kept for yt and pynbody) set
  `data.metadata.boxsize` to zeros(3) and project with `periodic=False` and a region. Particles
  without smoothing lengths need them generated (here from the 32 nearest neighbours).
"""

import argparse
import os
import sys
import warnings

import h5py
import numpy as np

NAMES_SWIFT = {
    0: "gas",
    1: "dark_matter",
    2: "boundary",
    3: "sinks",
    4: "stars",
    5: "black_holes",
}


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def same(name, got, want, rtol=0.0):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        fail(f"{name}: shape {got.shape}, expected {want.shape}")
    if rtol == 0.0:
        if not np.array_equal(got, want):
            i = np.argwhere(got != want)[0]
            fail(f"{name}: {got[tuple(i)]!r} at {i}, expected {want[tuple(i)]!r}")
    elif not np.allclose(got, want, rtol=rtol, atol=0.0):
        fail(f"{name}: differs from the file by more than {rtol} (max ratio "
             f"{np.nanmax(np.abs(got / want - 1)):.3g})")


def by_id(ids, *arrays):
    order = np.argsort(ids, kind="stable")
    return [np.asarray(a)[order] for a in arrays]


def reference(path):
    """The file as h5py reads it: per type, the datasets; and the stated units."""
    ref = {}
    with h5py.File(path, "r") as f:
        h = f["Header"].attrs
        counts = np.asarray(h["NumPart_ThisFile"])
        for t, n in enumerate(counts):
            if n == 0:
                continue
            g = f[f"PartType{t}"]
            ref[t] = {k: g[k][...] for k in ("Coordinates", "Velocities", "Masses", "ParticleIDs")}
        u = {k: float(np.ravel(v)[0]) for k, v in f["Units"].attrs.items()}
        meta = {
            "time": float(np.ravel(h["Time"])[0]),
            "box": float(np.ravel(h["BoxSize"])[0]),
            "L": u["Unit length in cgs (U_L)"],
            "M": u["Unit mass in cgs (U_M)"],
            "t": u["Unit time in cgs (U_t)"],
            "code": f["Code"].attrs["Code"] if "Code" in f else None,
        }
        if isinstance(meta["code"], bytes):
            meta["code"] = meta["code"].decode()
    if meta["code"] != "warpkit":
        print(f"note: /Code/Code is {meta['code']!r}, not a warpkit file?")
    return ref, meta


def check_pynbody(path, ref):
    try:
        import pynbody
    except ImportError:
        print("pynbody: not installed, skipped")
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = pynbody.load(path)
        if type(s).__name__ != "GadgetHDFSnap":
            fail(f"pynbody read it as {type(s).__name__}, not GadgetHDFSnap")
        ids = np.asarray(s["iord"])
        pos, vel, mass = (np.asarray(s[k]) for k in ("pos", "vel", "mass"))
        a = s.properties["a"]
        if np.ndim(a) != 0:
            fail(f"pynbody: scale factor {a!r} is not a scalar")
    want = {k: np.concatenate([ref[t][k] for t in sorted(ref)]) for k in ref[min(ref)]}
    got = by_id(ids, ids, pos, vel, mass)
    exp = by_id(want["ParticleIDs"], want["ParticleIDs"], want["Coordinates"],
                want["Velocities"], want["Masses"])
    for name, g, w in zip(("ids", "pos", "vel", "mass"), got, exp):
        same(f"pynbody {name}", g, w)
    print(f"pynbody {pynbody.__version__}: {type(s).__name__}, {len(s)} particles: "
          "ids, positions, velocities, masses equal to the file's (in pynbody's default "
          "Gadget units: it looks for Gadget's names in /Units, which holds SWIFT's)")
    return pynbody.__version__


def check_yt(path, ref, meta, images):
    import yt

    yt.set_log_level(40)
    # A plain load works (units: yt's Gadget defaults; box inferred from the particles) ...
    ds0 = yt.load(path)
    if type(ds0).__name__ != "GadgetHDF5Dataset":
        fail(f"yt loaded it as {type(ds0).__name__}, not GadgetHDF5Dataset")
    c0 = ds0.all_data()[("PartType1", "Coordinates")]
    same("yt (plain load) PartType1 Coordinates", c0.d, ref[1]["Coordinates"])
    # ... and with the file's units and a bounding box, everything has its stated units.
    x = np.concatenate([ref[t]["Coordinates"] for t in ref]).astype(np.float64)
    lo, hi = x.min(0), x.max(0)
    pad = 0.01 * (hi - lo).max()
    unit_base = {
        "UnitLength_in_cm": meta["L"],
        "UnitMass_in_g": meta["M"],
        "UnitVelocity_in_cm_per_s": meta["L"] / meta["t"],
    }
    ds = yt.load(path, unit_base=unit_base, bounding_box=[lo - pad, hi + pad])
    ad = ds.all_data()
    for t in ref:
        pt = f"PartType{t}"
        ids = ad[(pt, "ParticleIDs")].d
        fields = [ad[(pt, k)] for k in ("Coordinates", "Velocities", "Masses")]
        got = by_id(ids, ids, *(f.d for f in fields))
        r = ref[t]
        exp = by_id(r["ParticleIDs"], r["ParticleIDs"], r["Coordinates"], r["Velocities"],
                    r["Masses"])
        for name, g, w in zip(("ParticleIDs", "Coordinates", "Velocities"), got, exp):
            same(f"yt {pt} {name}", g, w)
        # yt takes a type's mass from MassTable (float64) when it is non-zero, as Gadget
        # does; the Masses dataset holds the same masses in the file's precision.
        same(f"yt {pt} Masses", got[3], exp[3], rtol=1e-7)
        cgs = [fields[0].to("cm").d, fields[1].to("cm/s").d, fields[2].to("g").d]
        scale = [meta["L"], meta["L"] / meta["t"], meta["M"]]
        for name, g, w, k in zip(("cm", "cm/s", "g"), cgs, exp[1:], scale):
            same(f"yt {pt} in {name}", g, w.astype(np.float64) * k, rtol=1e-6)
    same("yt current_time [s]", float(ds.current_time.to("s")), meta["time"] * meta["t"],
         rtol=1e-6)
    same("yt all particle_mass", ad[("all", "particle_mass")].to("g").sum().d,
         sum(ref[t]["Masses"].astype(np.float64).sum() for t in ref) * meta["M"], rtol=1e-6)
    print(f"yt {yt.__version__}: {type(ds).__name__}; ids, Coordinates, Velocities, Masses "
          f"equal to the file's, in cm, cm/s, g as /Units states; current_time "
          f"{float(ds.current_time.to('Myr')):.4g} Myr; domain {ds.domain_left_edge.d.round(1)} "
          f"to {ds.domain_right_edge.d.round(1)} kpc (bounding box), dims "
          f"{ds.domain_dimensions}")
    if images:
        p = yt.ParticleProjectionPlot(ds, "z", ("all", "particle_mass"), width=(80, "kpc"),
                                      center=[0.0, 0.0, 0.0])
        p.set_unit(("all", "particle_mass"), "Msun")
        p.set_buff_size(400)
        p.set_figure_size(5)
        p.annotate_title(f"warpkit snapshot, yt {yt.__version__} (t = "
                         f"{float(ds.current_time.to('Myr')):.3g} Myr)")
        out = os.path.join(images, "yt-particle-projection.png")
        p.save(out)
        print(f"  saved {out}")
    return yt.__version__


def check_swiftsimio(path, ref, meta, images):
    import swiftsimio as sw
    import unyt

    d = sw.load(path)
    u = d.metadata.units
    # swiftsimio rounds each unit to 5 significant figures of the nearest base unit.
    same("swiftsimio length unit [cm]", float(u.length.to("cm")), meta["L"], rtol=1e-5)
    same("swiftsimio mass unit [g]", float(u.mass.to("g")), meta["M"], rtol=1e-5)
    same("swiftsimio time unit [s]", float(u.time.to("s")), meta["t"], rtol=1e-5)
    same("swiftsimio time [s]", float(d.metadata.time.to("s")), meta["time"] * meta["t"],
         rtol=1e-5)
    for t in ref:
        name = NAMES_SWIFT[t]
        g = getattr(d, name)
        fields = [g.coordinates, g.velocities, g.masses]
        if any(f is None for f in fields):
            fail(f"swiftsimio {name}: a field could not be read")
        ids = np.asarray(g.particle_ids)
        got = by_id(ids, ids, *(f.to_value(f.units) for f in fields))
        r = ref[t]
        exp = by_id(r["ParticleIDs"], r["ParticleIDs"], r["Coordinates"], r["Velocities"],
                    r["Masses"])
        for f, g_, w in zip(("particle_ids", "coordinates", "velocities", "masses"), got, exp):
            same(f"swiftsimio {name}.{f}", g_, w)
        # In float64: a float32 mass of 1e10 Msun overflows float32 in g.
        cgs = [unyt.unyt_array(f.to_physical().to_value(f.units).astype(np.float64),
                               f.units).to_value(c)
               for f, c in zip(fields, ("cm", "cm/s", "g"))]
        scale = [meta["L"], meta["L"] / meta["t"], meta["M"]]
        for f, g_, w, k in zip(("cm", "cm/s", "g"), cgs, exp[1:], scale):
            same(f"swiftsimio {name} in {f}", g_, w.astype(np.float64) * k, rtol=1e-5)
    print(f"swiftsimio {sw.__version__}: "
          + ", ".join(f"PartType{t} as {NAMES_SWIFT[t]}" for t in ref)
          + f"; ids, coordinates, velocities, masses equal to the file's; units {u.length}, "
          f"{u.mass}, {u.time} (rounded by swiftsimio to 5 digits); time "
          f"{d.metadata.time.to('Myr'):.4g}; boxsize {d.metadata.boxsize}")
    if images:
        from scipy.spatial import cKDTree
        from swiftsimio.visualisation.projection import project_pixel_grid
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.colors import LogNorm

        # A 3-vector box for the projection code (the file's BoxSize is Gadget's scalar 0:
        # isolated, not periodic).
        box = d.metadata.boxsize
        if np.ndim(box) == 0:
            d.metadata.boxsize = sw.cosmo_array(np.full(3, float(box.to_value(u.length))),
                                                u.length, comoving=True, scale_factor=1.0,
                                                scale_exponent=1)
        half = 40.0
        region = sw.cosmo_array([-half, half, -half, half], unyt.kpc, comoving=False,
                                scale_factor=d.metadata.scale_factor, scale_exponent=1)
        image = None
        for t in ref:
            g = getattr(d, NAMES_SWIFT[t])
            x = g.coordinates.to_value(g.coordinates.units)
            dist, _ = cKDTree(x).query(x, k=33)
            g.smoothing_lengths = sw.cosmo_array(dist[:, -1] / 2.0, g.coordinates.units,
                                                 comoving=False,
                                                 scale_factor=d.metadata.scale_factor,
                                                 scale_exponent=1)
            im = project_pixel_grid(g, 256, project="masses", region=region, periodic=False)
            image = im if image is None else image + im
        sigma = image.to_value("Msun/kpc**2").T
        fig, ax = plt.subplots(figsize=(5, 4.5))
        m = ax.imshow(sigma, origin="lower", extent=[-half, half, -half, half], cmap="magma",
                      norm=LogNorm(vmin=max(sigma.max() * 1e-4, sigma[sigma > 0].min())))
        fig.colorbar(m, ax=ax, label=r"$\Sigma$ [M$_\odot$ kpc$^{-2}$]")
        ax.set_xlabel("x [kpc]")
        ax.set_ylabel("y [kpc]")
        ax.set_title(f"warpkit snapshot, swiftsimio {sw.__version__}\n"
                     f"project_pixel_grid, all types (t = "
                     f"{float(d.metadata.time.to_value('Myr')):.3g} Myr)", fontsize=10)
        fig.tight_layout()
        out = os.path.join(images, "swiftsimio-projection.png")
        fig.savefig(out, dpi=90)
        print(f"  saved {out}")
    return sw.__version__


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("snapshot")
    ap.add_argument("--images", help="directory for the yt and swiftsimio projection PNGs")
    a = ap.parse_args()
    if a.images:
        os.makedirs(a.images, exist_ok=True)
    ref, meta = reference(a.snapshot)
    print(f"{a.snapshot}: " + ", ".join(f"PartType{t}: {len(r['ParticleIDs'])}"
                                         for t, r in ref.items())
          + f"; Time {meta['time']}; units L = {meta['L']:.6e} cm, M = {meta['M']:.6e} g, "
          f"t = {meta['t']:.6e} s (G = 1)")
    check_pynbody(a.snapshot, ref)
    check_yt(a.snapshot, ref, meta, a.images)
    check_swiftsimio(a.snapshot, ref, meta, a.images)
    print("all readers agree with the file")


if __name__ == "__main__":
    main()
