//! The pair terms of the SPH momentum and energy equations in the grad-h form (Springel &
//! Hernquist 2002, eqs. 7 and 9 with the energy equation in place of the entropy one),
//! Monaghan's (1997) signal-velocity artificial viscosity with Balsara's (1995) switch and a
//! time-dependent α (Morris & Monaghan 1997), artificial conduction of the thermal energy
//! (Price 2008), and the CFL time step.
//!
//! The acceleration and `du/dt` of particle `i` are `Σ_j m_j` times [`pair_terms`] over the
//! neighbours with `r < max(h_i, h_j)`. The acceleration term is odd under `i ↔ j` to the bit
//! (`dx`, `dv`, `∇W` change sign exactly, sums of two terms commute, no fused operations), so
//! momentum is conserved to rounding of the sums whether pairs are evaluated once or twice.

use super::{Float, dot, grad_w};

/// Artificial-viscosity parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Viscosity<R> {
    /// α's floor (Morris–Monaghan decay target); the constant α when `alpha_min = alpha_max`.
    pub alpha_min: R,
    /// α's ceiling (the source term drives α towards it in compression).
    pub alpha_max: R,
    /// Decay length ℓ: `τ = h / (2 ℓ c_s)` with `h / 2` as Monaghan's smoothing length for the
    /// support radius `h` (Morris & Monaghan 1997 take ℓ ≈ 0.1–0.2).
    pub decay: R,
    /// Apply the Balsara switch (else its factor is 1).
    pub balsara: bool,
}

/// What a pair term reads of one particle.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ForceSide<R> {
    /// Smoothing length (support radius).
    pub h: R,
    pub rho: R,
    /// `f P / ρ²` with `f` the grad-h factor.
    pub pf: R,
    /// Sound speed.
    pub c: R,
    /// Viscosity α.
    pub alpha: R,
    /// Balsara factor in [0, 1].
    pub balsara: R,
    /// Pressure and specific internal energy, for the conduction term.
    pub p: R,
    pub u: R,
    /// Conduction coefficient α_u (0: none).
    pub alpha_u: R,
}

/// One neighbour's contribution per unit of its mass: `acc` to `dv_i/dt`, `du` to `du_i/dt`,
/// and the pair's signal velocity.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PairTerms<R> {
    pub acc: [R; 3],
    pub du: R,
    pub vsig: R,
}

/// The signal velocity `v_sig = c_i + c_j − 3 w_ij` with `w_ij = min(dv · dx / r, 0)`
/// (Monaghan 1997; Springel 2005, eq. 13).
#[inline(always)]
pub fn signal_velocity<R: Float>(ci: R, cj: R, w: R) -> R {
    ci + cj - R::from_f64(3.0) * w.fmin(R::ZERO)
}

/// The pair terms for `i` and neighbour `j` (`dx = r_i − r_j`, `dv = v_i − v_j`):
/// - pressure: `acc = −(f_i P_i/ρ_i² ∇W(h_i) + f_j P_j/ρ_j² ∇W(h_j))`,
///   `du = f_i P_i/ρ_i² dv · ∇W(h_i)`;
/// - viscosity, for approaching pairs (`w = dv · dx / r < 0`):
///   `Π = −½ ᾱ v_sig w / ρ̄ · (F_i + F_j)/2` (`ᾱ`, `ρ̄` the pair means, `F` Balsara factors),
///   `acc −= Π ∇W̄`, `du += ½ Π dv · ∇W̄` with `∇W̄ = (∇W(h_i) + ∇W(h_j)) / 2`;
/// - conduction (Price 2008, eqs. 28–30): `du += ᾱ_u v_u (u_i − u_j) / ρ̄ · r̂ · ∇W̄` with
///   `v_u = √(|P_i − P_j| / ρ̄)`, which smooths `u` where the pressure jumps and not across a
///   contact in pressure equilibrium: it removes the pressure blip and the spurious surface
///   tension that standard SPH leaves at contact discontinuities.
#[inline(always)]
pub fn pair_terms<R: Float>(
    kernel: u32,
    dx: [R; 3],
    dv: [R; 3],
    i: &ForceSide<R>,
    j: &ForceSide<R>,
) -> PairTerms<R> {
    let r = dot(dx, dx).fsqrt();
    let gi = grad_w(kernel, dx, r, i.h);
    let gj = grad_w(kernel, dx, r, j.h);
    let half = R::from_f64(0.5);
    let dvdx = dot(dv, dx);
    let w = if r > R::ZERO { dvdx / r } else { R::ZERO };
    let vsig = signal_velocity(i.c, j.c, w);
    let visc = if w < R::ZERO {
        let alpha = half * (i.alpha + j.alpha);
        let rho = half * (i.rho + j.rho);
        let sw = half * (i.balsara + j.balsara);
        -half * alpha * vsig * w / rho * sw
    } else {
        R::ZERO
    };
    let gm: [R; 3] = core::array::from_fn(|k| half * (gi[k] + gj[k]));
    let acc = core::array::from_fn(|k| -(i.pf * gi[k] + j.pf * gj[k]) - visc * gm[k]);
    let rho = half * (i.rho + j.rho);
    let cond = if r > R::ZERO {
        let vu = ((i.p - j.p).fabs() / rho).fsqrt();
        half * (i.alpha_u + j.alpha_u) * vu * (i.u - j.u) / rho * (dot(dx, gm) / r)
    } else {
        R::ZERO
    };
    let du = i.pf * dot(dv, gi) + half * visc * dot(dv, gm) + cond;
    PairTerms { acc, du, vsig }
}

/// Balsara's (1995) switch `|∇·v| / (|∇·v| + |∇×v| + 10⁻⁴ c_s / h)`: near 1 in compression,
/// near 0 in shear flows, where viscosity would only do harm.
#[inline(always)]
pub fn balsara<R: Float>(div_v: R, curl_v: R, c: R, h: R) -> R {
    let d = div_v.fabs();
    let den = d + curl_v.fabs() + R::from_f64(1e-4) * c / h;
    if den > R::ZERO { d / den } else { R::ONE }
}

/// `dα/dt` of Morris & Monaghan (1997): decay towards `alpha_min` on `τ = h / (2 ℓ c_s)` and the
/// source `max(−∇·v, 0) (α_max − α)` in compression.
#[inline(always)]
pub fn alpha_rate<R: Float>(alpha: R, div_v: R, c: R, h: R, v: &Viscosity<R>) -> R {
    let two = R::from_f64(2.0);
    let decay = (alpha - v.alpha_min) * two * v.decay * c / h;
    let source = (-div_v).fmax(R::ZERO) * (v.alpha_max - alpha);
    source - decay
}

/// The CFL time step `C h / v_sig,max` (Springel 2005, eq. 16, `h` the support radius; Gadget-2
/// uses `C = 2 × 0.15`).
#[inline(always)]
pub fn cfl_dt<R: Float>(courant: R, h: R, vsig_max: R) -> R {
    courant * h / vsig_max
}
