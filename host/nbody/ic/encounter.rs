//! Two galaxies on a Kepler orbit.

use super::*;

/// Relative position and velocity of two point masses of total mass `m` on a Kepler orbit of
/// pericentre `rp` and eccentricity `e`, at separation `r` before pericentre, in the xy plane
/// (pericentre on +x, motion anticlockwise about +z).
pub fn kepler_orbit(m: f64, rp: f64, e: f64, r: f64) -> Result<([f64; 3], [f64; 3]), IcError> {
    positive("total mass", m)?;
    positive("pericentre", rp)?;
    check(e.is_finite() && e >= 0.0, || {
        format!("eccentricity {e} must be ≥ 0")
    })?;
    let p = rp * (1.0 + e);
    let theta = if e == 0.0 {
        check((r - rp).abs() <= 1e-12 * rp, || {
            format!("a circular orbit has separation {rp}, not {r}")
        })?;
        0.0
    } else {
        let c = (p / r - 1.0) / e;
        check(r >= rp && c >= -1.0, || {
            format!("separation {r} is not on the orbit (pericentre {rp}, eccentricity {e})")
        })?;
        -c.clamp(-1.0, 1.0).acos()
    };
    let (c, s) = (theta.cos(), theta.sin());
    let k = (m / p).sqrt();
    let (vr, vt) = (k * e * s, k * (1.0 + e * c));
    Ok(([r * c, r * s, 0.0], [vr * c - vt * s, vr * s + vt * c, 0.0]))
}

/// Rotation about x by `i`, then about z by `w` (radians): a disk with spin +z ends with spin
/// inclined by i to the orbital plane's normal, its line of nodes turned by w.
pub fn rotation(i: f64, w: f64) -> [[f64; 3]; 3] {
    let (ci, si, cw, sw) = (i.cos(), i.sin(), w.cos(), w.sin());
    // Rz(w)·Rx(i).
    [
        [cw, -sw * ci, sw * si],
        [sw, cw * ci, -cw * si],
        [0.0, si, ci],
    ]
}

/// Two disk galaxies on a Kepler orbit in the xy plane (parabolic by default), the primary and
/// its copy scaled by `mass_ratio`, each disk turned by its inclination and argument. The pair's
/// centre of mass is at rest at the origin. Ids: the primary's first (1..=N₁), then the
/// secondary's (N₁+1..), the set ordered by type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Encounter {
    pub primary: DiskGalaxy,
    /// Secondary mass / primary mass.
    pub mass_ratio: f64,
    pub pericentre: f64,
    /// 1: parabolic; < 1 bound; > 1 hyperbolic.
    pub eccentricity: f64,
    /// Initial centre-to-centre distance (≥ the pericentre).
    pub separation: f64,
    /// Disk inclinations to the orbital plane, degrees (0: prograde in the plane).
    pub inclination_deg: [f64; 2],
    /// Arguments of the disks' lines of nodes, degrees.
    pub argument_deg: [f64; 2],
    pub seed: u64,
}

impl Default for Encounter {
    /// Two equal default galaxies on a parabolic orbit, pericentre 8 disk scale lengths, starting
    /// 40 apart, one disk prograde, the other inclined by 60°.
    fn default() -> Self {
        Encounter {
            primary: DiskGalaxy::default(),
            mass_ratio: 1.0,
            pericentre: 8.0,
            eccentricity: 1.0,
            separation: 40.0,
            inclination_deg: [0.0, 60.0],
            argument_deg: [0.0, 30.0],
            seed: 1,
        }
    }
}

impl Encounter {
    pub fn secondary(&self) -> DiskGalaxy {
        self.primary
            .scaled(self.mass_ratio, sub_seed(self.seed, 11))
    }

    pub fn generate(&self) -> Particles {
        self.try_generate().expect("valid encounter parameters")
    }

    pub fn try_generate(&self) -> Result<Particles, IcError> {
        positive("mass ratio", self.mass_ratio)?;
        let first = DiskGalaxy {
            seed: sub_seed(self.seed, 10),
            ..self.primary
        };
        let second = self.secondary();
        let mut g = [first.try_generate()?, second.try_generate()?];
        let m = [g[0].total_mass(), g[1].total_mass()];
        let (x, v) = kepler_orbit(
            m[0] + m[1],
            self.pericentre,
            self.eccentricity,
            self.separation,
        )?;
        let offset = g[0].len() as u64;
        for (k, gal) in g.iter_mut().enumerate() {
            let deg = PI / 180.0;
            gal.rotate(rotation(
                self.inclination_deg[k] * deg,
                self.argument_deg[k] * deg,
            ));
            // Galaxy 1 at −m₂/M of the relative vector, galaxy 2 at +m₁/M.
            let f = if k == 0 { -m[1] } else { m[0] } / (m[0] + m[1]);
            gal.shift(scale3(x, f), scale3(v, f));
            if k == 1 {
                gal.id.iter_mut().for_each(|id| *id += offset);
            }
        }
        let [mut a, b] = g;
        a.append(&b);
        a.sort_by_type();
        Ok(a)
    }
}
