//! The two-body orbit of an impact: target and impactor as point masses on the Kepler orbit
//! that brings them into contact (centres `R_t + R_i` apart) at a given speed and impact
//! parameter, traced back analytically to the start of the run.
//!
//! The relative state at contact (impactor minus target) is put in the xy plane with the
//! velocity along −x, as WoMa does (Kegerreis et al. 2020, appendix A): position
//! `r_c (cos B, sin B, 0)`, velocity `(−v_c, 0, 0)`, `sin B = b`; the orbital angular momentum
//! is along +z. Going back in time uses the universal variable χ of Kepler's problem
//! (Battin 1987; Curtis, *Orbital Mechanics*, ch. 3), one formula for elliptic, parabolic and
//! hyperbolic orbits: at the mutual escape speed the orbit is parabolic, where the conic-specific
//! anomalies lose all precision.

use glam::DVec3;

/// The point-mass relative state: impactor minus target.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct State {
    pub pos: [f64; 3],
    pub vel: [f64; 3],
}

/// Why an impact cannot be set up.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum OrbitError {
    #[error("the impact parameter b = {0} must be in [0, 1) (b = sin of the impact angle)")]
    ImpactParameter(f64),
    #[error("the speed at contact {0} must be positive and finite")]
    Speed(f64),
    #[error("{what} = {value} must be positive and finite")]
    Body { what: &'static str, value: f64 },
    #[error("the time before contact {0} s must be ≥ 0 and finite")]
    Time(f64),
    #[error(
        "the bodies would overlap at the start: separation {separation:e} m is less than \
         R_t + R_i = {contact:e} m"
    )]
    Overlap { separation: f64, contact: f64 },
    #[error(
        "the orbit is bound (speed at contact below the mutual escape speed) and its apoapsis \
         {apoapsis:e} m is closer than the separation {separation:e} m asked for"
    )]
    BeyondApoapsis { apoapsis: f64, separation: f64 },
    #[error(
        "the orbit is bound and {t} s before contact lies before its apoapsis: the bodies were \
         receding then (start at most {max:.1} s before contact)"
    )]
    BeforeApoapsis { t: f64, max: f64 },
    #[error("the orbit cannot be traced back {0} s (the universal Kepler equation diverged)")]
    Diverged(f64),
}

/// The mutual escape speed `√(2 G (M_t + M_i) / (R_t + R_i))`.
pub fn mutual_escape_speed(g: f64, m_t: f64, m_i: f64, r_t: f64, r_i: f64) -> f64 {
    (2.0 * g * (m_t + m_i) / (r_t + r_i)).sqrt()
}

/// The orbit at contact.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Contact {
    /// `G (M_t + M_i)`.
    pub mu: f64,
    /// `R_t + R_i`.
    pub r_c: f64,
    /// Impact parameter `sin B`.
    pub b: f64,
    /// Relative speed at contact.
    pub v_c: f64,
}

impl Contact {
    /// The contact of bodies of masses `m_t`, `m_i` and radii `r_t`, `r_i` at impact parameter
    /// `b` and speed `v_c` (absolute, m/s in SI), with gravitational constant `g`.
    pub fn new(
        g: f64,
        (m_t, m_i): (f64, f64),
        (r_t, r_i): (f64, f64),
        b: f64,
        v_c: f64,
    ) -> Result<Contact, OrbitError> {
        for (what, value) in [
            ("G", g),
            ("the target's mass", m_t),
            ("the impactor's mass", m_i),
            ("the target's radius", r_t),
            ("the impactor's radius", r_i),
        ] {
            if !(value.is_finite() && value > 0.0) {
                return Err(OrbitError::Body { what, value });
            }
        }
        if !(0.0..1.0).contains(&b) {
            return Err(OrbitError::ImpactParameter(b));
        }
        if !(v_c.is_finite() && v_c > 0.0) {
            return Err(OrbitError::Speed(v_c));
        }
        Ok(Contact {
            mu: g * (m_t + m_i),
            r_c: r_t + r_i,
            b,
            v_c,
        })
    }

    /// The relative state at contact.
    pub fn state(&self) -> State {
        let cos_b = (1.0 - self.b * self.b).sqrt();
        State {
            pos: [self.r_c * cos_b, self.r_c * self.b, 0.0],
            vel: [-self.v_c, 0.0, 0.0],
        }
    }

    /// `1/a = 2/r − v²/μ`: positive for a bound orbit, 0 parabolic, negative hyperbolic.
    fn alpha(&self) -> f64 {
        2.0 / self.r_c - self.v_c * self.v_c / self.mu
    }

    /// The relative state `t` seconds before contact.
    pub fn before(&self, t: f64) -> Result<State, OrbitError> {
        if !(t.is_finite() && t >= 0.0) {
            return Err(OrbitError::Time(t));
        }
        // A bound orbit traced back past its apoapsis would start receding (or, periods back,
        // from an earlier contact).
        if let Some(max) = self.apoapsis_time()
            && t > max
        {
            return Err(OrbitError::BeforeApoapsis { t, max });
        }
        let c = self.state();
        propagate(self.mu, c.pos, c.vel, -t).ok_or(OrbitError::Diverged(t))
    }

    /// For a bound orbit, the time from the apoapsis to contact.
    fn apoapsis_time(&self) -> Option<f64> {
        let alpha = self.alpha();
        if alpha <= 0.0 {
            return None;
        }
        // The apoapsis lies less than half a period before contact (contact precedes periapsis).
        let half = std::f64::consts::PI * (alpha.powi(-3) / self.mu).sqrt();
        let receding = |t: f64| {
            let c = self.state();
            propagate(self.mu, c.pos, c.vel, -t)
                .is_none_or(|s| DVec3::from(s.pos).dot(DVec3::from(s.vel)) >= 0.0)
        };
        Some(bisect(0.0, half, receding))
    }

    /// The start at separation `d` (before contact, approaching): the time before contact and
    /// the relative state there.
    pub fn at_separation(&self, d: f64) -> Result<(f64, State), OrbitError> {
        if !(d.is_finite() && d >= self.r_c) {
            return Err(OrbitError::Overlap {
                separation: d,
                contact: self.r_c,
            });
        }
        let alpha = self.alpha();
        let c = self.state();
        let sep =
            |t: f64| propagate(self.mu, c.pos, c.vel, -t).map(|s| DVec3::from(s.pos).length());
        let t_hi = if alpha > 0.0 {
            let h = self.r_c * self.v_c * self.b;
            let e = (1.0 - h * h * alpha / self.mu).max(0.0).sqrt();
            let apoapsis = (1.0 + e) / alpha;
            if d > apoapsis {
                return Err(OrbitError::BeyondApoapsis {
                    apoapsis,
                    separation: d,
                });
            }
            self.apoapsis_time().unwrap_or(0.0)
        } else {
            // Unbound: the separation grows without limit going back; double until past d.
            let mut t = d / self.v_c;
            while sep(t).ok_or(OrbitError::Diverged(t))? < d {
                t *= 2.0;
            }
            t
        };
        // Monotone on [0, t_hi]: the separation grows going back from contact to the start.
        let t = bisect(0.0, t_hi, |t| sep(t).is_none_or(|r| r >= d));
        Ok((t, self.before(t)?))
    }
}

/// The smallest `t` in `[lo, hi]` where the monotone predicate turns true (to rounding).
fn bisect(mut lo: f64, mut hi: f64, above: impl Fn(f64) -> bool) -> f64 {
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if above(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// Stumpff functions `C(z)`, `S(z)` (series near 0, where the closed forms cancel).
fn stumpff(z: f64) -> (f64, f64) {
    if z.abs() < 1e-3 {
        let c = 0.5 - z / 24.0 + z * z / 720.0 - z * z * z / 40_320.0;
        let s = 1.0 / 6.0 - z / 120.0 + z * z / 5040.0 - z * z * z / 362_880.0;
        (c, s)
    } else if z > 0.0 {
        let q = z.sqrt();
        ((1.0 - q.cos()) / z, (q - q.sin()) / (q * q * q))
    } else {
        let q = (-z).sqrt();
        ((q.cosh() - 1.0) / -z, (q.sinh() - q) / (q * q * q))
    }
}

/// The Kepler orbit of gravitational parameter `mu` from relative state `(r0, v0)` moved by
/// `dt` (either sign), by the universal variable; `None` where the equation cannot be solved in
/// floating point (a hyperbola traced absurdly far).
pub fn propagate(mu: f64, r0: [f64; 3], v0: [f64; 3], dt: f64) -> Option<State> {
    let (r0, v0) = (DVec3::from(r0), DVec3::from(v0));
    let rn = r0.length();
    let sq = mu.sqrt();
    let sigma = r0.dot(v0) / sq;
    let alpha = 2.0 / rn - v0.length_squared() / mu;
    // √μ t(χ) and its derivative r(χ): t is increasing in χ.
    let time = |x: f64| {
        let z = alpha * x * x;
        let (c, s) = stumpff(z);
        let t = sigma * x * x * c + (1.0 - alpha * rn) * x * x * x * s + rn * x;
        let r = sigma * x * (1.0 - z * s) + (1.0 - alpha * rn) * x * x * c + rn;
        (t, r)
    };
    let target = sq * dt;
    // A bracket [lo, hi] of the root, from the first-order guess outward.
    let (mut lo, mut hi) = (0.0f64, 0.0f64);
    let mut step = (target / rn).abs().max(f64::MIN_POSITIVE);
    for _ in 0..2100 {
        let probe = if target >= 0.0 { hi + step } else { lo - step };
        let (t, _) = time(probe);
        if !t.is_finite() {
            return None;
        }
        if target >= 0.0 {
            if t >= target {
                hi = probe;
                break;
            }
            lo = probe;
        } else {
            if t <= target {
                lo = probe;
                break;
            }
            hi = probe;
        }
        step *= 2.0;
    }
    // Newton inside the bracket, bisecting when a step would leave it.
    let mut x = 0.5 * (lo + hi);
    for _ in 0..200 {
        let (t, r) = time(x);
        if t < target {
            lo = x;
        } else {
            hi = x;
        }
        let mut next = x - (t - target) / r;
        if !(next > lo && next < hi) {
            next = 0.5 * (lo + hi);
        }
        if (next - x).abs() <= 1e-15 * x.abs().max(1e-300)
            || hi - lo <= 4.0 * f64::EPSILON * hi.abs()
        {
            x = next;
            break;
        }
        x = next;
    }
    let z = alpha * x * x;
    let (c, s) = stumpff(z);
    let f = 1.0 - x * x * c / rn;
    let g = dt - x * x * x * s / sq;
    let r = f * r0 + g * v0;
    let r_len = r.length();
    let fdot = sq / (r_len * rn) * (z * s - 1.0) * x;
    let gdot = 1.0 - x * x * c / r_len;
    let v = fdot * r0 + gdot * v0;
    (r.is_finite() && v.is_finite()).then(|| State {
        pos: r.to_array(),
        vel: v.to_array(),
    })
}

/// The target's and the impactor's states in the centre-of-mass frame from their relative
/// state `rel` (impactor minus target).
pub fn centre_of_mass_frame(m_t: f64, m_i: f64, rel: &State) -> (State, State) {
    let m = m_t + m_i;
    let scale = |v: [f64; 3], k: f64| v.map(|c| c * k);
    (
        State {
            pos: scale(rel.pos, -m_i / m),
            vel: scale(rel.vel, -m_i / m),
        },
        State {
            pos: scale(rel.pos, m_t / m),
            vel: scale(rel.vel, m_t / m),
        },
    )
}
