//! The exact solution of the Riemann problem of the ideal gas (Toro 2009, *Riemann Solvers and
//! Numerical Methods for Fluid Dynamics*, ch. 4): the star pressure by Newton's method on the
//! pressure function, and the self-similar profile sampled at `x / t`.

/// A primitive state: density, velocity, pressure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prim {
    pub rho: f64,
    pub u: f64,
    pub p: f64,
}

/// A solved Riemann problem.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Riemann {
    pub left: Prim,
    pub right: Prim,
    pub gamma: f64,
    /// Pressure and velocity of the star region.
    pub p_star: f64,
    pub u_star: f64,
}

fn sound(s: &Prim, g: f64) -> f64 {
    (g * s.p / s.rho).sqrt()
}

/// Toro's `f_K(p)` and its derivative (eqs. 4.6–4.7, 4.37).
fn pressure_fn(p: f64, s: &Prim, g: f64) -> (f64, f64) {
    let c = sound(s, g);
    if p > s.p {
        let a = 2.0 / ((g + 1.0) * s.rho);
        let b = (g - 1.0) / (g + 1.0) * s.p;
        let q = (a / (p + b)).sqrt();
        ((p - s.p) * q, q * (1.0 - 0.5 * (p - s.p) / (b + p)))
    } else {
        let e = (g - 1.0) / (2.0 * g);
        let r = p / s.p;
        (
            2.0 * c / (g - 1.0) * (r.powf(e) - 1.0),
            r.powf(-(g + 1.0) / (2.0 * g)) / (s.rho * c),
        )
    }
}

impl Riemann {
    /// Solves the problem; an error for invalid states or where the waves open a vacuum.
    pub fn solve(left: Prim, right: Prim, gamma: f64) -> Result<Self, String> {
        for s in [&left, &right] {
            if !(s.rho > 0.0 && s.p > 0.0 && s.u.is_finite() && s.rho.is_finite()) {
                return Err(format!("invalid Riemann state {s:?}"));
            }
        }
        if gamma.is_nan() || gamma <= 1.0 {
            return Err(format!("γ = {gamma} must be > 1"));
        }
        let (cl, cr) = (sound(&left, gamma), sound(&right, gamma));
        let du = right.u - left.u;
        if 2.0 * (cl + cr) / (gamma - 1.0) <= du {
            return Err("the initial states generate a vacuum".into());
        }
        // The primitive-variable guess (Toro eq. 4.47), then Newton (eq. 4.44).
        let pv = 0.5 * (left.p + right.p) - 0.125 * du * (left.rho + right.rho) * (cl + cr);
        let mut p = pv.max(1e-8 * left.p.min(right.p));
        for _ in 0..100 {
            let (fl, dl) = pressure_fn(p, &left, gamma);
            let (fr, dr) = pressure_fn(p, &right, gamma);
            let next = (p - (fl + fr + du) / (dl + dr)).max(1e-8 * p);
            let change = 2.0 * (next - p).abs() / (next + p);
            p = next;
            if change < 1e-14 {
                break;
            }
        }
        let (fl, _) = pressure_fn(p, &left, gamma);
        let (fr, _) = pressure_fn(p, &right, gamma);
        let u = 0.5 * (left.u + right.u) + 0.5 * (fr - fl);
        Ok(Riemann {
            left,
            right,
            gamma,
            p_star: p,
            u_star: u,
        })
    }

    /// The star-region density on side `s` (behind its shock or rarefaction).
    fn rho_star(&self, s: &Prim) -> f64 {
        let g = self.gamma;
        let r = self.p_star / s.p;
        if r > 1.0 {
            let k = (g - 1.0) / (g + 1.0);
            s.rho * (r + k) / (k * r + 1.0)
        } else {
            s.rho * r.powf(1.0 / g)
        }
    }

    /// Density left and right of the contact.
    pub fn rho_star_left(&self) -> f64 {
        self.rho_star(&self.left)
    }
    pub fn rho_star_right(&self) -> f64 {
        self.rho_star(&self.right)
    }

    /// The speed of the right-moving shock, if the right wave is one.
    pub fn right_shock_speed(&self) -> Option<f64> {
        let (g, s) = (self.gamma, &self.right);
        (self.p_star > s.p).then(|| {
            s.u + sound(s, g)
                * ((g + 1.0) / (2.0 * g) * self.p_star / s.p + (g - 1.0) / (2.0 * g)).sqrt()
        })
    }

    /// The solution at `ξ = (x − x₀) / t` (Toro §4.5).
    pub fn sample(&self, xi: f64) -> Prim {
        let g = self.gamma;
        // Mirror the right side onto the left so that one branch samples both.
        let (s, xi, sign) = if xi <= self.u_star {
            (self.left, xi, 1.0)
        } else {
            let r = self.right;
            (Prim { u: -r.u, ..r }, -xi, -1.0)
        };
        let ustar = sign * self.u_star;
        let c = sound(&s, g);
        let ps = self.p_star;
        let out = if ps > s.p {
            let shock = s.u - c * ((g + 1.0) / (2.0 * g) * ps / s.p + (g - 1.0) / (2.0 * g)).sqrt();
            if xi <= shock {
                s
            } else {
                Prim {
                    rho: self.rho_star(&s),
                    u: ustar,
                    p: ps,
                }
            }
        } else {
            let head = s.u - c;
            let cstar = c * (ps / s.p).powf((g - 1.0) / (2.0 * g));
            let tail = ustar - cstar;
            if xi <= head {
                s
            } else if xi >= tail {
                Prim {
                    rho: self.rho_star(&s),
                    u: ustar,
                    p: ps,
                }
            } else {
                // Inside the fan (Toro eq. 4.56).
                let k = 2.0 / (g + 1.0) + (g - 1.0) / ((g + 1.0) * c) * (s.u - xi);
                Prim {
                    rho: s.rho * k.powf(2.0 / (g - 1.0)),
                    u: 2.0 / (g + 1.0) * (c + 0.5 * (g - 1.0) * s.u + xi),
                    p: s.p * k.powf(2.0 * g / (g - 1.0)),
                }
            }
        };
        Prim {
            u: sign * out.u,
            ..out
        }
    }
}
