//! The Sedov–Taylor point explosion (Sedov 1959; Taylor 1950): energy `E` released at a point of
//! a uniform, cold medium of density `ρ₀` drives a spherical shock at
//! `R(t) = ξ₀ (E t² / ρ₀)^(1/5)`.
//!
//! `ξ₀` follows from the energy integral of the similarity solution: with `v = (2r/5t) V`,
//! `c² = (4r²/25t²) Z`, `ρ = ρ₀ G` as functions of `ξ = r/R`,
//! `ξ₀ = [(16π/25) ∫₀¹ G (V²/2 + Z/(γ(γ − 1))) ξ⁴ dξ]^(−1/5)`, integrated here over the closed
//! form of the spherical solution parametrised by `V` (Landau & Lifshitz, *Fluid Mechanics*,
//! §106; Sedov 1959). It reproduces the tabulated `ξ₀ = 1.15167` (γ = 5/3) and `1.03275`
//! (γ = 7/5) of Kamm & Timmes (2007, LA-UR-07-2849).

/// One point of the similarity solution at the velocity variable `V` (between `1/γ` at the
/// centre and `2/(γ + 1)` behind the shock): `(ξ, G, Z)`, ξ = r/R, G = ρ/ρ₀, or `None` at the
/// centre itself.
fn point(g: f64, v: f64) -> Option<(f64, f64, f64)> {
    // Exponents of the closed form (Landau & Lifshitz eq. 106.10).
    let n1 = -(13.0 * g * g - 7.0 * g + 12.0) / ((3.0 * g - 1.0) * (2.0 * g + 1.0));
    let n2 = 5.0 * (g - 1.0) / (2.0 * g + 1.0);
    let n3 = 3.0 / (2.0 * g + 1.0);
    let n4 = -n1 / (2.0 - g);
    let n5 = -2.0 / (2.0 - g);
    let a = 0.5 * (g + 1.0) * v;
    let b = (g + 1.0) / (7.0 - g) * (5.0 - (3.0 * g - 1.0) * v);
    let c = (g + 1.0) / (g - 1.0) * (g * v - 1.0);
    if c <= 0.0 {
        return None;
    }
    let xi = (a.powi(-2) * b.powf(n1) * c.powf(n2)).powf(0.2);
    let rho = (g + 1.0) / (g - 1.0)
        * c.powf(n3)
        * b.powf(n4)
        * ((g + 1.0) / (g - 1.0) * (1.0 - v)).powf(n5);
    let z = g * (g - 1.0) * (1.0 - v) * v * v / (2.0 * (g * v - 1.0));
    Some((xi, rho, z))
}

/// `n` points `(ξ, V, G, Z)` of the solution from the centre to the shock, denser towards the
/// centre where ξ varies fastest in V.
fn points(g: f64, n: usize) -> impl Iterator<Item = (f64, f64, f64, f64)> {
    let (v0, vs) = (1.0 / g, 2.0 / (g + 1.0));
    (1..=n).filter_map(move |i| {
        let s = i as f64 / n as f64;
        let v = v0 + (vs - v0) * s.powi(4);
        point(g, v).map(|(xi, rho, z)| (xi, v, rho, z))
    })
}

/// `ξ₀(γ)` by the energy integral, for `1 < γ < 2` (at γ = 2 the closed form's exponents are
/// singular; beyond it the interior profile changes character and is not covered here).
pub fn xi0(gamma: f64) -> Option<f64> {
    let g = gamma;
    if !(g > 1.0 && g < 2.0) {
        return None;
    }
    // The trapezoidal rule in ξ over the points.
    let (mut prev_xi, mut prev_f, mut sum) = (0.0, 0.0, 0.0);
    for (xi, v, rho, z) in points(g, 20_000) {
        let f = rho * xi.powi(4) * (0.5 * v * v + z / (g * (g - 1.0)));
        sum += 0.5 * (xi - prev_xi) * (f + prev_f);
        (prev_xi, prev_f) = (xi, f);
    }
    Some((16.0 * core::f64::consts::PI / 25.0 * sum).powf(-0.2))
}

/// The density profile `ρ(r)/ρ₀` against `ξ = r/R` from the centre to the shock (ξ rising), for
/// `1 < γ < 2`: the table that [`density`] interpolates.
pub fn density_profile(gamma: f64) -> Option<Vec<(f64, f64)>> {
    if !(gamma > 1.0 && gamma < 2.0) {
        return None;
    }
    Some(
        points(gamma, 4000)
            .map(|(xi, _, rho, _)| (xi, rho))
            .collect(),
    )
}

/// The density at radius `r` for a shock at radius `rs` in gas of density `rho0`, linear in the
/// table `profile` ([`density_profile`]); `rho0` outside the shock.
pub fn density(profile: &[(f64, f64)], rho0: f64, rs: f64, r: f64) -> f64 {
    let xi = r / rs;
    if xi >= 1.0 {
        return rho0;
    }
    let k = profile.partition_point(|p| p.0 < xi);
    let g = match (k, profile.get(k)) {
        (_, None) => profile.last().map_or(1.0, |p| p.1),
        (0, Some(p)) => p.1 * xi / p.0,
        (k, Some(&(x1, g1))) => {
            let (x0, g0) = profile[k - 1];
            g0 + (g1 - g0) * (xi - x0) / (x1 - x0)
        }
    };
    rho0 * g
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
