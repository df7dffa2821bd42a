//! The Sedov–Taylor point explosion (Sedov 1959; Taylor 1950): energy `E` released at a point of
//! a uniform, cold medium of density `ρ₀` drives a spherical shock at
//! `R(t) = ξ₀ (E t² / ρ₀)^(1/5)`.
//!
//! `ξ₀` follows from the energy integral of the similarity solution, `E = α(γ) ρ₀ R⁵ / t²`, so
//! `ξ₀ = α^(-1/5)`; the values are those of Kamm & Timmes (2007, "On efficient generation of
//! numerically robust Sedov solutions", LA-UR-07-2849, table of α for the spherical case):
//! `ξ₀ = 1.15167` for γ = 5/3 and `1.03275` for γ = 7/5.

/// `(γ, ξ₀)` of the spherical standard case (Kamm & Timmes 2007).
const XI0: [(f64, f64); 2] = [(5.0 / 3.0, 1.15167), (1.4, 1.03275)];

/// `ξ₀(γ)` for the tabulated adiabatic indices (γ = 5/3, 7/5).
pub fn xi0(gamma: f64) -> Option<f64> {
    XI0.iter()
        .find(|(g, _)| (g - gamma).abs() < 1e-9)
        .map(|&(_, x)| x)
}

/// The shock radius at time `t`.
pub fn shock_radius(gamma: f64, e: f64, rho0: f64, t: f64) -> Option<f64> {
    xi0(gamma).map(|x| x * (e * t * t / rho0).powf(0.2))
}

/// The time at which the shock reaches radius `r`.
pub fn time_at_radius(gamma: f64, e: f64, rho0: f64, r: f64) -> Option<f64> {
    xi0(gamma).map(|x| ((r / x).powi(5) * rho0 / e).sqrt())
}

/// The density just behind a strong shock, `ρ₀ (γ + 1) / (γ − 1)`.
pub fn post_shock_density(gamma: f64, rho0: f64) -> f64 {
    rho0 * (gamma + 1.0) / (gamma - 1.0)
}
