//! The disk galaxy (DICE-like): halo, exponential disk, bulge; Jeans velocities.

use super::*;

/// The dark-matter halo of a [`DiskGalaxy`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Halo {
    /// Hernquist profile of total mass `mass`, sampled out to `max_mass_fraction` of it.
    Hernquist {
        mass: f64,
        scale: f64,
        max_mass_fraction: f64,
    },
    /// NFW profile truncated at r₂₀₀: mass `m200` inside `r200`, scale radius `r200 / c`.
    Nfw {
        m200: f64,
        r200: f64,
        concentration: f64,
    },
}

/// The bulge of a [`DiskGalaxy`]: a Hernquist sphere of profile mass `mass`, sampled inside 0.99
/// of it (as the halo's `max_mass_fraction`: the particles carry 0.99 `mass`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bulge {
    pub n: usize,
    pub mass: f64,
    pub scale: f64,
}

/// A disk galaxy in the spirit of DICE (see the module docs for the velocity model).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DiskGalaxy {
    pub halo: Halo,
    pub n_halo: usize,
    pub disk_mass: f64,
    /// Exponential scale length h: `Σ ∝ e^{−R/h}`.
    pub disk_scale_length: f64,
    /// Vertical scale z₀: `ρ ∝ sech²(z/z₀)`.
    pub disk_scale_height: f64,
    /// The disk is sampled inside this many scale lengths.
    pub disk_cutoff: f64,
    pub n_disk: usize,
    pub bulge: Option<Bulge>,
    /// Toomre's Q, the same at every radius.
    pub toomre_q: f64,
    pub seed: u64,
}

impl Default for DiskGalaxy {
    /// A Milky-Way-like galaxy in units of the disk: M_disk = 1, h = 1 (≈ 5·10^10 M☉ and 3.5 kpc,
    /// so the unit of velocity is ≈ 250 km/s and of time ≈ 14 Myr), a Hernquist halo of 20 disk
    /// masses and scale 10 (the Hernquist match `a = r_s·sqrt(2[ln(1+c) − c/(1+c)])` of Springel,
    /// Di Matteo & Hernquist 2005 to an NFW halo of r_s ≈ 20 kpc, c = 10), no bulge, Q = 1.5.
    fn default() -> Self {
        DiskGalaxy {
            halo: Halo::Hernquist {
                mass: 20.0,
                scale: 10.0,
                max_mass_fraction: 0.98,
            },
            n_halo: 16384,
            disk_mass: 1.0,
            disk_scale_length: 1.0,
            disk_scale_height: 0.1,
            disk_cutoff: 10.0,
            n_disk: 8192,
            bulge: None,
            toomre_q: 1.5,
            seed: 1,
        }
    }
}

/// A spherical mass profile (the halo and bulge of [`DiskGalaxy`]).
#[derive(Clone, Copy, Debug)]
pub(super) enum Sphere {
    Hernquist { mass: f64, a: f64 },
    Nfw { rho0: f64, rs: f64, rmax: f64 },
}

pub(super) fn nfw_m(x: f64) -> f64 {
    (1.0 + x).ln() - x / (1.0 + x)
}

impl Sphere {
    fn enclosed(&self, r: f64) -> f64 {
        match *self {
            Sphere::Hernquist { mass, a } => mass * r * r / ((r + a) * (r + a)),
            Sphere::Nfw { rho0, rs, rmax } => {
                4.0 * PI * rho0 * rs.powi(3) * nfw_m(r.min(rmax) / rs)
            }
        }
    }

    fn density(&self, r: f64) -> f64 {
        match *self {
            Sphere::Hernquist { mass, a } => mass * a / (2.0 * PI * r * (r + a).powi(3)),
            Sphere::Nfw { rho0, rs, rmax } => {
                let x = r / rs;
                if r > rmax {
                    0.0
                } else {
                    rho0 / (x * (1.0 + x) * (1.0 + x))
                }
            }
        }
    }

    /// The radius enclosing mass fraction `f` of [`Sphere::enclosed`]`(rmax)`.
    pub(super) fn radius(&self, f: f64, rmax: f64) -> f64 {
        match *self {
            Sphere::Hernquist { a, .. } => {
                let g = (f * rmax * rmax / ((rmax + a) * (rmax + a))).sqrt();
                a * g / (1.0 - g)
            }
            Sphere::Nfw { rs, .. } => {
                // Bisection on the monotone m(x): 60 halvings reach rounding.
                let target = f * nfw_m(rmax / rs);
                let (mut lo, mut hi) = (0.0, rmax / rs);
                for _ in 0..60 {
                    let mid = 0.5 * (lo + hi);
                    if nfw_m(mid) < target {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                rs * 0.5 * (lo + hi)
            }
        }
    }
}

/// Modified Bessel functions scaled to stay finite: `e^{−x} I₀`, `e^{−x} I₁`, `e^{x} K₀`,
/// `e^{x} K₁` (Abramowitz & Stegun 9.8.1–9.8.8, relative error ≲ 2·10⁻⁷).
pub(super) fn bessel_scaled(x: f64) -> [f64; 4] {
    let poly = |t: f64, c: &[f64]| c.iter().rev().fold(0.0, |acc, &k| acc * t + k);
    let (i0, i1) = if x <= 3.75 {
        let t = (x / 3.75).powi(2);
        let i0 = poly(
            t,
            &[
                1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.0360768, 0.0045813,
            ],
        );
        let i1 = x * poly(
            t,
            &[
                0.5, 0.87890594, 0.51498869, 0.15084934, 0.02658733, 0.00301532, 0.00032411,
            ],
        );
        (i0 * (-x).exp(), i1 * (-x).exp())
    } else {
        let t = 3.75 / x;
        let s = x.sqrt();
        let i0 = poly(
            t,
            &[
                0.39894228,
                0.01328592,
                0.00225319,
                -0.00157565,
                0.00916281,
                -0.02057706,
                0.02635537,
                -0.01647633,
                0.00392377,
            ],
        );
        let i1 = poly(
            t,
            &[
                0.39894228,
                -0.03988024,
                -0.00362018,
                0.00163801,
                -0.01031555,
                0.02282967,
                -0.02895312,
                0.01787654,
                -0.00420059,
            ],
        );
        (i0 / s, i1 / s)
    };
    let (k0, k1) = if x <= 2.0 {
        let t = (x / 2.0).powi(2);
        let l = (x / 2.0).ln();
        let (ui0, ui1) = (i0 * x.exp(), i1 * x.exp());
        let k0 = -l * ui0
            + poly(
                t,
                &[
                    -0.57721566,
                    0.42278420,
                    0.23069756,
                    0.03488590,
                    0.00262698,
                    0.00010750,
                    0.0000074,
                ],
            );
        let k1 = l * ui1
            + poly(
                t,
                &[
                    1.0,
                    0.15443144,
                    -0.67278579,
                    -0.18156897,
                    -0.01919402,
                    -0.00110404,
                    -0.00004686,
                ],
            ) / x;
        (k0 * x.exp(), k1 * x.exp())
    } else {
        let t = 2.0 / x;
        let s = x.sqrt();
        let k0 = poly(
            t,
            &[
                1.25331414,
                -0.07832358,
                0.02189568,
                -0.01062446,
                0.00587872,
                -0.00251540,
                0.00053208,
            ],
        );
        let k1 = poly(
            t,
            &[
                1.25331414,
                0.23498619,
                -0.03655620,
                0.01504268,
                -0.00780353,
                0.00325614,
                -0.00068245,
            ],
        );
        (k0 / s, k1 / s)
    };
    [i0, i1, k0, k1]
}

/// Tabulated isotropic Jeans dispersion and potential of a spherical component, on a grid
/// uniform in ln r.
pub(super) struct JeansTable {
    ln_r0: f64,
    d_ln_r: f64,
    sigma2: Vec<f64>,
    phi: Vec<f64>,
}

impl JeansTable {
    const POINTS: usize = 2048;

    /// `σ_r²(r) = (1/ρ) ∫_r^{r_top} ρ G M(r')/r'² dr'`, `Φ(r) = −∫_r^{r_top} G M/r'² dr' − G M(r_top)/r_top`.
    fn new(
        density: impl Fn(f64) -> f64,
        enclosed: impl Fn(f64) -> f64,
        r_lo: f64,
        r_top: f64,
    ) -> Self {
        let n = Self::POINTS;
        let (ln_r0, ln_top) = (r_lo.ln(), r_top.ln());
        let d = (ln_top - ln_r0) / (n - 1) as f64;
        let r: Vec<f64> = (0..n).map(|k| (ln_r0 + d * k as f64).exp()).collect();
        // Integrands in d ln r.
        let g_p: Vec<f64> = r.iter().map(|&x| density(x) * enclosed(x) / x).collect();
        let g_phi: Vec<f64> = r.iter().map(|&x| enclosed(x) / x).collect();
        let mut pressure = vec![0.0; n];
        let mut phi = vec![-enclosed(r_top) / r_top; n];
        for k in (0..n - 1).rev() {
            pressure[k] = pressure[k + 1] + 0.5 * d * (g_p[k] + g_p[k + 1]);
            phi[k] = phi[k + 1] - 0.5 * d * (g_phi[k] + g_phi[k + 1]);
        }
        let sigma2 = (0..n)
            .map(|k| {
                let rho = density(r[k]);
                if rho > 0.0 { pressure[k] / rho } else { 0.0 }
            })
            .collect();
        JeansTable {
            ln_r0,
            d_ln_r: d,
            sigma2,
            phi,
        }
    }

    fn at(&self, v: &[f64], r: f64) -> f64 {
        let t = ((r.ln() - self.ln_r0) / self.d_ln_r).clamp(0.0, (v.len() - 1) as f64);
        let k = (t as usize).min(v.len() - 2);
        let f = t - k as f64;
        v[k] * (1.0 - f) + v[k + 1] * f
    }

    fn sigma2(&self, r: f64) -> f64 {
        self.at(&self.sigma2, r)
    }

    fn phi(&self, r: f64) -> f64 {
        self.at(&self.phi, r)
    }
}

/// The galaxy's mass model: what its velocity fields are computed from.
pub(super) struct Model {
    halo: Sphere,
    halo_rmax: f64,
    bulge: Option<(Sphere, f64)>,
    md: f64,
    h: f64,
}

impl Model {
    fn new(g: &DiskGalaxy) -> Self {
        let (halo, halo_rmax) = match g.halo {
            Halo::Hernquist {
                mass,
                scale,
                max_mass_fraction: f,
            } => (
                Sphere::Hernquist { mass, a: scale },
                scale * f.sqrt() / (1.0 - f.sqrt()),
            ),
            Halo::Nfw {
                m200,
                r200,
                concentration: c,
            } => {
                let rs = r200 / c;
                let rho0 = m200 / (4.0 * PI * rs.powi(3) * nfw_m(c));
                (
                    Sphere::Nfw {
                        rho0,
                        rs,
                        rmax: r200,
                    },
                    r200,
                )
            }
        };
        let bulge = g.bulge.map(|b| {
            let a = b.scale;
            // The bulge is sampled inside 0.99 of its mass.
            let f: f64 = 0.99;
            (
                Sphere::Hernquist { mass: b.mass, a },
                a * f.sqrt() / (1.0 - f.sqrt()),
            )
        });
        Model {
            halo,
            halo_rmax,
            bulge,
            md: g.disk_mass,
            h: g.disk_scale_length,
        }
    }

    fn spheroid_enclosed(&self, r: f64) -> f64 {
        self.halo.enclosed(r) + self.bulge.map_or(0.0, |(b, _)| b.enclosed(r))
    }

    /// The total mass within r, the disk's counted as its mass within cylindrical radius r.
    fn enclosed(&self, r: f64) -> f64 {
        let x = r / self.h;
        self.spheroid_enclosed(r) + self.md * (1.0 - (1.0 + x) * (-x).exp())
    }

    fn surface_density(&self, r: f64) -> f64 {
        self.md / (2.0 * PI * self.h * self.h) * (-r / self.h).exp()
    }

    /// Circular speed² in the midplane: spheroids plus the razor-thin exponential disk,
    /// `4πGΣ₀h y² [I₀K₀ − I₁K₁](y)`, y = R/2h.
    fn vc2(&self, r: f64) -> f64 {
        let y = r / (2.0 * self.h);
        let [i0, i1, k0, k1] = bessel_scaled(y);
        let disk = 4.0 * PI * self.surface_density(0.0) * self.h * y * y * (i0 * k0 - i1 * k1);
        self.spheroid_enclosed(r) / r + disk
    }

    /// Ω² and κ² = R dΩ²/dR + 4Ω² (central difference in ln R).
    fn omega2_kappa2(&self, r: f64) -> (f64, f64) {
        let e = 1e-4;
        let om2 = |x: f64| self.vc2(x) / (x * x);
        let (lo, hi) = (r * (1.0 - e), r * (1.0 + e));
        let dom2 = (om2(hi) - om2(lo)) / (hi - lo);
        let o = om2(r);
        (o, r * dom2 + 4.0 * o)
    }

    fn sigma_r(&self, r: f64, q: f64) -> f64 {
        let (_, k2) = self.omega2_kappa2(r);
        3.36 * q * self.surface_density(r) / k2.sqrt()
    }
}

impl DiskGalaxy {
    fn validate(&self) -> Result<(), IcError> {
        match self.halo {
            Halo::Hernquist {
                mass,
                scale,
                max_mass_fraction: f,
            } => {
                positive("halo mass", mass)?;
                positive("halo scale", scale)?;
                check(f > 0.0 && f < 1.0, || {
                    format!("halo max_mass_fraction = {f} must lie in (0, 1)")
                })?;
            }
            Halo::Nfw {
                m200,
                r200,
                concentration,
            } => {
                positive("halo m200", m200)?;
                positive("halo r200", r200)?;
                positive("halo concentration", concentration)?;
            }
        }
        positive("disk mass", self.disk_mass)?;
        positive("disk scale length", self.disk_scale_length)?;
        positive("disk scale height", self.disk_scale_height)?;
        positive("disk cutoff", self.disk_cutoff)?;
        positive("Toomre Q", self.toomre_q)?;
        check(self.n_disk > 0, || "the disk needs particles".into())?;
        if let Some(b) = self.bulge {
            positive("bulge mass", b.mass)?;
            positive("bulge scale", b.scale)?;
            check(b.n > 0, || "the bulge needs particles".into())?;
        }
        Ok(())
    }

    /// The mass of the particles: halo and bulge within their truncation, the whole disk.
    pub fn total_mass(&self) -> f64 {
        let m = Model::new(self);
        m.halo.enclosed(m.halo_rmax)
            + self.disk_mass
            + m.bulge.map_or(0.0, |(b, rmax)| b.enclosed(rmax))
    }

    /// Circular speed in the midplane at radius `r` of the model.
    pub fn circular_speed(&self, r: f64) -> f64 {
        Model::new(self).vc2(r).sqrt()
    }

    /// Epicyclic frequency κ at radius `r` of the model.
    pub fn kappa(&self, r: f64) -> f64 {
        Model::new(self).omega2_kappa2(r).1.sqrt()
    }

    pub fn generate(&self) -> Particles {
        self.try_generate().expect("valid disk galaxy parameters")
    }

    /// Halo, then disk, then bulge (Gadget's type order), ids from 1, in the centre-of-mass
    /// frame with the disk's spin along +z.
    pub fn try_generate(&self) -> Result<Particles, IcError> {
        self.validate()?;
        let model = Model::new(self);
        let r_lo = 1e-4 * self.disk_scale_length.min(self.disk_scale_height);
        let enclosed = |r: f64| model.enclosed(r);
        let mut out = Particles::default();

        // Spheroids: Jeans dispersion in the total spherical mass, capped below escape.
        let mut spheroids = vec![(model.halo, model.halo_rmax, self.n_halo, HALO)];
        if let (Some((b, rmax)), Some(bp)) = (model.bulge, self.bulge) {
            spheroids.push((b, rmax, bp.n, BULGE));
        }
        for (c, (sphere, rmax, n, ptype)) in spheroids.into_iter().enumerate() {
            if n == 0 {
                continue;
            }
            // An untruncated Hernquist tail still exerts pressure; the NFW ends at r₂₀₀.
            let top = match sphere {
                Sphere::Hernquist { a, .. } => 1e3 * a.max(rmax),
                Sphere::Nfw { rmax, .. } => rmax,
            };
            let table = JeansTable::new(|r| sphere.density(r), enclosed, r_lo, top);
            let mass = sphere.enclosed(rmax);
            let part = sample(n, mass, ptype, sub_seed(self.seed, c as u64), |s| {
                let r = sphere.radius(s.open(), rmax);
                let sigma = table.sigma2(r).sqrt();
                let v_max = 0.95 * (-2.0 * table.phi(r)).sqrt();
                let v = loop {
                    let v = [s.normal(), s.normal(), s.normal()].map(|x| x * sigma);
                    if v.iter().map(|x| x * x).sum::<f64>() < v_max * v_max {
                        break v;
                    }
                };
                (scale3(s.direction(), r), v)
            });
            // Each component centred on its own: the sampling noise of a wide halo's centre of
            // mass would otherwise displace the disk from the potential's centre.
            let mut part = part;
            part.to_centre_of_mass_frame();
            out.append(&part);
        }

        // The disk.
        let (h, z0, q) = (
            self.disk_scale_length,
            self.disk_scale_height,
            self.toomre_q,
        );
        let rcut = self.disk_cutoff * h;
        let mcut = 1.0 - (1.0 + self.disk_cutoff) * (-self.disk_cutoff).exp();
        let disk = sample(
            self.n_disk,
            self.disk_mass,
            DISK,
            sub_seed(self.seed, 7),
            |s| {
                // Invert M(<R)/M = 1 − (1 + x)e^{−x} by bisection.
                let target = s.open() * mcut;
                let (mut lo, mut hi) = (0.0, self.disk_cutoff);
                for _ in 0..60 {
                    let mid = 0.5 * (lo + hi);
                    if 1.0 - (1.0 + mid) * (-mid).exp() < target {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                let r = (0.5 * (lo + hi) * h).min(rcut);
                // sech²: the cumulative is (1 + tanh(z/z₀))/2.
                let z = z0 * (2.0 * s.open() - 1.0).atanh();
                let phi = 2.0 * PI * s.uniform();
                let sigma_z = (PI * model.surface_density(r) * z0).sqrt();
                let sigma_r = model.sigma_r(r, q);
                let (om2, k2) = model.omega2_kappa2(r);
                let sigma_phi = sigma_r * (k2 / (4.0 * om2)).sqrt();
                // d ln(Σσ_R²)/d ln R, numerically (σ_R depends on κ).
                let e = 1e-4;
                let ln_p = |x: f64| (model.surface_density(x) * model.sigma_r(x, q).powi(2)).ln();
                let dlnp = (ln_p(r * (1.0 + e)) - ln_p(r * (1.0 - e))) / (2.0 * e);
                let mean2 = model.vc2(r) + sigma_r * sigma_r * (1.0 - k2 / (4.0 * om2) + dlnp);
                let v_phi = mean2.max(0.0).sqrt() + sigma_phi * s.normal();
                let v_r = sigma_r * s.normal();
                let v_z = sigma_z * s.normal();
                let (c, sn) = (phi.cos(), phi.sin());
                (
                    [r * c, r * sn, z],
                    [v_r * c - v_phi * sn, v_r * sn + v_phi * c, v_z],
                )
            },
        );
        let mut disk = disk;
        disk.to_centre_of_mass_frame();
        out.append(&disk);
        out.sort_by_type();
        for (k, id) in out.id.iter_mut().enumerate() {
            *id = k as u64 + 1;
        }
        Ok(out)
    }

    /// The same galaxy scaled to `q` times the mass: masses and particle counts × q, lengths
    /// × q^{1/3} (equal mean density, as r₂₀₀ ∝ M^{1/3}), another seed.
    pub fn scaled(&self, q: f64, seed: u64) -> DiskGalaxy {
        let l = q.cbrt();
        let n = |k: usize| ((k as f64 * q).round() as usize).max(1);
        let halo = match self.halo {
            Halo::Hernquist {
                mass,
                scale,
                max_mass_fraction,
            } => Halo::Hernquist {
                mass: mass * q,
                scale: scale * l,
                max_mass_fraction,
            },
            Halo::Nfw {
                m200,
                r200,
                concentration,
            } => Halo::Nfw {
                m200: m200 * q,
                r200: r200 * l,
                concentration,
            },
        };
        DiskGalaxy {
            halo,
            n_halo: if self.n_halo == 0 { 0 } else { n(self.n_halo) },
            disk_mass: self.disk_mass * q,
            disk_scale_length: self.disk_scale_length * l,
            disk_scale_height: self.disk_scale_height * l,
            n_disk: n(self.n_disk),
            bulge: self.bulge.map(|b| Bulge {
                n: n(b.n),
                mass: b.mass * q,
                scale: b.scale * l,
            }),
            seed,
            ..*self
        }
    }
}
