//! The Tillotson equation of state (Tillotson 1962; parameters of Melosh 1989, *Impact Cratering*,
//! Table AII.3, as SWIFT's planetary examples use them), in SI units: pressure and sound speed
//! from density ρ [kg m⁻³] and specific internal energy u [J kg⁻¹].
//!
//! With η = ρ/ρ₀, μ = η − 1, ν = 1/η − 1 and ω = u/(u₀ η²) + 1:
//! - compressed or cold (η ≥ 1 or u ≤ u_iv): P_c = (a + b/ω) ρ u + A μ + B μ²;
//! - expanded and hot (η < 1 and u ≥ u_cv): P_e = a ρ u + (b ρ u/ω + A μ e^{−β ν}) e^{−α ν²};
//! - in between: P interpolated linearly in u between the two;
//! - in the cold expanded state of water and ice P_c is scaled to zero between η_min and η_zero
//!   (cavitation, as SWIFT does), and P never falls below P_min.
//!
//! The sound speed is the thermodynamic one, c² = ∂P/∂ρ|_s = ∂P/∂ρ|_u + (P/ρ²) ∂P/∂u|_ρ, from the
//! analytic partial derivatives of the branch in force (the interpolated state's derivatives
//! include the u-derivative of its weights), so that c² equals a finite difference of P along an
//! adiabat. It is floored at A/ρ₀, the reference state's bulk sound speed squared, as SWIFT does:
//! the expanded cold state otherwise has c² → 0 or below, and the time step no bound.

use super::Float;

/// One Tillotson material. Fields are SI; [`Tillotson::IRON`] … [`Tillotson::ICE`] are the
/// published sets.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tillotson<R> {
    pub rho_0: R,
    pub a: R,
    pub b: R,
    pub big_a: R,
    pub big_b: R,
    pub u_0: R,
    pub u_iv: R,
    pub u_cv: R,
    pub alpha: R,
    pub beta: R,
    pub eta_min: R,
    pub eta_zero: R,
    pub p_min: R,
}

impl Tillotson<f64> {
    /// Iron (Melosh 1989).
    pub const IRON: Self = Self::published(
        7800.0, 0.5, 1.5, 1.28e11, 1.05e11, 9.5e6, 2.4e6, 8.67e6, 5.0, 5.0, 0.0, 0.0, 0.01,
    );
    /// Granite (Melosh 1989).
    pub const GRANITE: Self = Self::published(
        2680.0, 0.5, 1.3, 1.8e10, 1.8e10, 1.6e7, 3.5e6, 1.8e7, 5.0, 5.0, 0.0, 0.0, 0.01,
    );
    /// Basalt (Melosh 1989).
    pub const BASALT: Self = Self::published(
        2700.0, 0.5, 1.5, 2.67e10, 2.67e10, 4.87e8, 4.72e6, 1.82e7, 5.0, 5.0, 0.0, 0.0, 0.01,
    );
    /// Water (Melosh 1989), with cavitation below η_min = 0.925.
    pub const WATER: Self = Self::published(
        998.0, 0.7, 0.15, 2.18e9, 1.325e10, 7.0e6, 4.19e5, 2.69e6, 10.0, 5.0, 0.925, 0.875, 0.01,
    );
    /// Ice (Melosh 1989's high-pressure set), with cavitation below η_min = 0.925.
    pub const ICE: Self = Self::published(
        1293.0, 0.3, 0.1, 1.07e10, 6.5e10, 1.0e7, 7.73e5, 3.04e6, 10.0, 5.0, 0.925, 0.875, 0.0,
    );

    #[allow(clippy::too_many_arguments)]
    const fn published(
        rho_0: f64,
        a: f64,
        b: f64,
        big_a: f64,
        big_b: f64,
        u_0: f64,
        u_iv: f64,
        u_cv: f64,
        alpha: f64,
        beta: f64,
        eta_min: f64,
        eta_zero: f64,
        p_min: f64,
    ) -> Self {
        Tillotson {
            rho_0,
            a,
            b,
            big_a,
            big_b,
            u_0,
            u_iv,
            u_cv,
            alpha,
            beta,
            eta_min,
            eta_zero,
            p_min,
        }
    }

    /// The same material in another precision (the kernels' float32).
    pub fn cast<R: Float>(&self) -> Tillotson<R> {
        let c = R::from_f64;
        Tillotson {
            rho_0: c(self.rho_0),
            a: c(self.a),
            b: c(self.b),
            big_a: c(self.big_a),
            big_b: c(self.big_b),
            u_0: c(self.u_0),
            u_iv: c(self.u_iv),
            u_cv: c(self.u_cv),
            alpha: c(self.alpha),
            beta: c(self.beta),
            eta_min: c(self.eta_min),
            eta_zero: c(self.eta_zero),
            p_min: c(self.p_min),
        }
    }
}

/// A pressure and its partial derivatives ∂P/∂ρ at fixed u and ∂P/∂u at fixed ρ.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PressureState<R> {
    pub p: R,
    pub dp_drho: R,
    pub dp_du: R,
}

impl<R: Float> PressureState<R> {
    /// c² = ∂P/∂ρ|_u + (P/ρ²) ∂P/∂u|_ρ (first law: du = P/ρ² dρ along an adiabat).
    #[inline(always)]
    pub fn sound_speed_sq(&self, rho: R) -> R {
        self.dp_drho + self.p / (rho * rho) * self.dp_du
    }
}

impl<R: Float> Tillotson<R> {
    /// The compressed/cold branch with its derivatives (cavitation scaling included).
    #[inline(always)]
    fn condensed(&self, rho: R, u: R) -> PressureState<R> {
        let (one, two) = (R::ONE, R::ONE + R::ONE);
        let eta = rho / self.rho_0;
        let mu = eta - one;
        let w = u / (self.u_0 * eta * eta) + one;
        let k = self.a + self.b / w;
        let p = k * rho * u + self.big_a * mu + self.big_b * mu * mu;
        // ∂ω/∂u = (ω − 1)/u, ∂ω/∂ρ = −2 (ω − 1)/ρ.
        let dp_du = rho * (k - self.b * (w - one) / (w * w));
        let dp_drho = k * u
            + two * self.b * u * (w - one) / (w * w)
            + (self.big_a + two * self.big_b * mu) / self.rho_0;
        let s = PressureState { p, dp_drho, dp_du };
        if eta >= self.eta_min {
            s
        } else if eta <= self.eta_zero {
            PressureState {
                p: R::ZERO,
                dp_drho: R::ZERO,
                dp_du: R::ZERO,
            }
        } else {
            // P_c · f(η), f = (η − η_zero)/(η_min − η_zero).
            let span = self.eta_min - self.eta_zero;
            let f = (eta - self.eta_zero) / span;
            PressureState {
                p: p * f,
                dp_drho: dp_drho * f + p / (span * self.rho_0),
                dp_du: dp_du * f,
            }
        }
    }

    /// The expanded/hot branch with its derivatives.
    #[inline(always)]
    fn expanded(&self, rho: R, u: R) -> PressureState<R> {
        let (one, two) = (R::ONE, R::ONE + R::ONE);
        let eta = rho / self.rho_0;
        let mu = eta - one;
        let nu = one / eta - one;
        let w = u / (self.u_0 * eta * eta) + one;
        let e_beta = (-self.beta * nu).fexp();
        let e_alpha = (-self.alpha * nu * nu).fexp();
        let x = self.b * rho * u / w;
        let y = self.big_a * mu * e_beta;
        let p = self.a * rho * u + (x + y) * e_alpha;
        // dν/dρ = −ρ₀/ρ² = −(ν + 1)/ρ.
        let dnu = -(nu + one) / rho;
        let dx_du = self.b * rho * (one / w - (w - one) / (w * w));
        let dx_drho = self.b * u / w + two * self.b * u * (w - one) / (w * w);
        let dy_drho = self.big_a * e_beta * (one / self.rho_0 - self.beta * mu * dnu);
        let de_drho = e_alpha * (-two * self.alpha * nu * dnu);
        PressureState {
            p,
            dp_drho: self.a * u + (dx_drho + dy_drho) * e_alpha + (x + y) * de_drho,
            dp_du: self.a * rho + dx_du * e_alpha,
        }
    }

    /// P, ∂P/∂ρ|_u and ∂P/∂u|_ρ of the state (ρ, u) — the branch in force, the hybrid state's
    /// interpolation and the pressure floor included.
    #[inline(always)]
    pub fn state(&self, rho: R, u: R) -> PressureState<R> {
        let eta = rho / self.rho_0;
        let s = if eta >= R::ONE || u <= self.u_iv {
            self.condensed(rho, u)
        } else if u >= self.u_cv {
            self.expanded(rho, u)
        } else {
            let (c, e) = (self.condensed(rho, u), self.expanded(rho, u));
            let span = self.u_cv - self.u_iv;
            let (we, wc) = ((u - self.u_iv) / span, (self.u_cv - u) / span);
            PressureState {
                p: we * e.p + wc * c.p,
                dp_drho: we * e.dp_drho + wc * c.dp_drho,
                dp_du: we * e.dp_du + wc * c.dp_du + (e.p - c.p) / span,
            }
        };
        if s.p < self.p_min {
            PressureState {
                p: self.p_min,
                dp_drho: R::ZERO,
                dp_du: R::ZERO,
            }
        } else {
            s
        }
    }

    /// The pressure at (ρ, u).
    #[inline(always)]
    pub fn pressure(&self, rho: R, u: R) -> R {
        self.state(rho, u).p
    }

    /// The sound speed at (ρ, u), floored at √(A/ρ₀).
    #[inline(always)]
    pub fn sound_speed(&self, rho: R, u: R) -> R {
        let c2 = self.state(rho, u).sound_speed_sq(rho);
        c2.fmax(self.big_a / self.rho_0).fsqrt()
    }
}
