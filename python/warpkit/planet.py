"""Planets for giant impacts and the impacts themselves: ``warpkit planet`` and ``warpkit impact``
from Python (docs/planet.md, docs/impact.md). SI units throughout.

>>> import warpkit.planet
>>> p = warpkit.planet.build(mass=0.133, layers={"iron": 0.3, "granite": 0.7},
...                          particles=2000, out="impactor")
>>> p["radius_m"], p["settled"], p["snapshot"]
>>> r = warpkit.planet.impact(particles=2000, t_end=36000, out="impact")
>>> r["remnant_kg"], r["disk_kg"], r["escaping_kg"], r["outcome_csv"]

The TOML keys of both are in docs/keys.md (``warpkit info --keys planet``, ``… impact``); the
images beside the snapshots are the command line's.
"""

from . import _warpkit

__all__ = ["build", "impact"]


def _layers(layers):
    """Layers from the centre out as ``"iron:0.3,granite:0.7"``: a str of that form, a dict
    ``{material: fraction}`` (in order) or a sequence of ``(material, fraction)`` pairs."""
    from . import _scalar

    if layers is None or isinstance(layers, str):
        return layers
    pairs = layers.items() if isinstance(layers, dict) else layers
    try:
        pairs = [(m, f) for m, f in pairs]
    except (TypeError, ValueError):
        raise TypeError("layers must be \"material:fraction,…\", a dict {material: fraction} or "
                        f"(material, fraction) pairs, got {layers!r}") from None
    out = []
    for m, f in pairs:
        if not isinstance(m, str):
            raise TypeError(f"layers: the material must be a name (str), got {m!r}")
        out.append(f"{m}:{_scalar(f, f'layers[{m!r}]')!r}")
    return ",".join(out)


def build(config=None, *, mass=None, mass_kg=None, layers=None, particles=None, settle=None,
          seed=None, out=None, backend="auto", overwrite=False):
    """Builds a planet as ``warpkit planet`` does: its profile in hydrostatic equilibrium,
    particles on shells, damped settling; writes ``planet.gadget``, ``profile.csv`` and
    ``planet.toml`` into ``out`` (default: the configuration's ``[output] dir``, ``planet_out``).

    ``config``: a TOML file's path, a string naming an existing file, the TOML text, or None.
    The keywords override it: ``mass`` in Earth masses or ``mass_kg``; ``layers`` from the centre
    out (``"iron:0.3,granite:0.7"``, ``{"iron": 0.3, "granite": 0.7}`` or pairs); ``particles``;
    ``settle`` in dynamical times (0: none); ``seed`` of the shells' rotations. A directory
    holding a previous planet is refused unless ``overwrite`` is True.

    The dict: ``dir``, ``snapshot``, ``profile`` (paths), ``radius_m``, ``particles``,
    ``median_density_deviation`` (interior particles against the profile), ``within_1pc``,
    ``v_rms_over_v_esc`` and ``settled`` (the Kegerreis et al. 2019 criteria hold). Bad input
    raises ``ValueError`` (``TypeError`` for a wrong type) before any work.
    """
    from . import _flag, _integer, _out_dir, _scalar, _toml_text

    args = dict(
        config=_toml_text(config),
        mass=None if mass is None else _scalar(mass, "mass"),
        mass_kg=None if mass_kg is None else float(_scalar(mass_kg, "mass_kg")),
        layers=_layers(layers),
        particles=None if particles is None else _integer(particles, "particles", 63),
        settle=None if settle is None else _scalar(settle, "settle"),
        seed=None if seed is None else _integer(seed, "seed", 64),
        out=None if out is None else _out_dir(out),
        backend_choice=str(backend),
        overwrite=_flag(overwrite, "overwrite"),
    )
    return _warpkit.planet_build(**args)


def impact(config=None, *, particles=None, t_end=None, out=None, backend="auto",
           overwrite=False):
    """Runs a giant impact as ``warpkit impact`` does (default: SWIFT's demo set-up, 2000
    particles, 10 h) into ``out`` (default: the case's ``[output] dir``, ``impact_out``):
    snapshots, ``diagnostics.csv`` (energies and angular momentum) and ``outcome.csv`` (the
    largest remnant, disk and escaping mass, per material).

    ``config``: a TOML file's path, a string naming an existing file, the TOML text, or None;
    ``particles`` (the built bodies together) and ``t_end`` (s) override it. A directory holding a
    previous run is refused unless ``overwrite`` is True.

    The dict: ``dir``, ``diagnostics``, ``outcome_csv``, ``snapshot`` (paths), ``particles``,
    ``target_particles``, ``materials``, ``time``, ``t_contact``, ``steps``, ``wall_s``,
    ``setup_s``, ``energy_error`` (and ``_max``), ``angular_momentum_error`` (and ``_max``),
    ``interrupted``, and the last outcome's ``remnant_kg``, ``disk_kg``, ``escaping_kg``. Bad
    input raises ``ValueError`` before any work. Ctrl-C stops the run after the current step
    (its final snapshot and tables written) and raises KeyboardInterrupt.
    """
    from . import _flag, _integer, _out_dir, _scalar, _toml_text

    return _warpkit.impact_run(
        _toml_text(config),
        None if particles is None else _integer(particles, "particles", 63),
        None if t_end is None else _scalar(t_end, "t_end"),
        None if out is None else _out_dir(out),
        str(backend),
        _flag(overwrite, "overwrite"),
    )
