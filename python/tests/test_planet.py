"""warpkit.planet: planets and giant impacts from Python, on the CPU backend at tiny sizes."""

import os

import pytest

import warpkit.planet as planet

EARTH_MASS = 5.9722e24


def test_build_writes_a_planet_and_reports_its_criteria(tmp_path):
    out = tmp_path / "p"
    p = planet.build(mass=0.2, layers={"iron": 0.3, "basalt": 0.7}, particles=300, settle=0,
                     out=out, backend="cpu")
    for key in ("snapshot", "profile"):
        assert os.path.isfile(p[key]), key
    assert 280 <= p["particles"] <= 320
    # A 0.2 Earth-mass rocky planet: between the Moon's and Mars's radii.
    assert 2.0e6 < p["radius_m"] < 4.5e6
    assert 0 <= p["within_1pc"] <= 1 and p["v_rms_over_v_esc"] >= 0
    assert isinstance(p["settled"], bool)
    # A second build into the same directory is refused unless overwrite is True.
    with pytest.raises(ValueError, match="overwrite"):
        planet.build(mass=0.2, particles=300, settle=0, out=out, backend="cpu")
    planet.build(mass=0.2, particles=300, settle=0, out=out, backend="cpu", overwrite=True)


def test_build_refuses_bad_input_by_name(tmp_path):
    out = tmp_path / "bad"
    with pytest.raises(ValueError, match="unobtainium"):
        planet.build(layers="unobtainium:1", particles=300, settle=0, out=out, backend="cpu")
    with pytest.raises(TypeError, match="particles"):
        planet.build(particles=300.5, out=out)
    with pytest.raises(TypeError, match="layers"):
        planet.build(layers=5, out=out)
    with pytest.raises(TypeError, match="mass"):
        planet.build(mass=True, out=out)
    assert not out.exists()


def test_a_tiny_impact_runs_and_conserves_mass(tmp_path):
    case = """
[settle]
time = 0
[run]
gravity_solver = "direct"
t_end = 600
analysis_every = 300
snapshot_every = 0
[output]
images = false
progress_every = 0
"""
    r = planet.impact(case, particles=1000, out=tmp_path / "i", backend="cpu")
    assert r["time"] == pytest.approx(600)
    assert r["steps"] > 0 and not r["interrupted"]
    assert r["particles"] == 1000 and r["target_particles"] > r["particles"] // 2
    assert r["materials"] == ["iron", "granite"]
    total = r["remnant_kg"] + r["disk_kg"] + r["escaping_kg"]
    assert total == pytest.approx((0.887 + 0.133) * EARTH_MASS, rel=1e-3)
    assert abs(r["energy_error_max"]) < 1e-2
    for key in ("diagnostics", "outcome_csv", "snapshot"):
        assert os.path.isfile(r[key]), key
    with pytest.raises(ValueError, match="overwrite"):
        planet.impact(case, particles=1000, out=tmp_path / "i", backend="cpu")
