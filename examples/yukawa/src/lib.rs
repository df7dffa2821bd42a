//! Host side of the Yukawa example: warpkit extended from outside its source tree.
//!
//! - `kernels/` (crate `warpkit-example-yukawa-kernels`) holds the formula, the [`Yukawa`]
//!   interaction of warpkit's generic tree walk and two kernels; `build.rs` compiles it to [`PTX`].
//! - [`cpu`] is the CPU twin: warpkit's CPU octree, the same walk and the same formula, plus the
//!   float64 direct sum that everything is measured against.
//! - [`gpu`] builds warpkit's octree on the GPU with warpkit's own kernels, then launches this
//!   crate's kernels from [`PTX`] with type-checked argument tuples.
//!
//! [`Yukawa`]: kernels::Yukawa

pub mod cpu;
pub mod gpu;

pub use warpkit_example_yukawa_kernels as kernels;

use warpkit::bh::{InputError, validate};
use warpkit::device::bh::Body;

/// The kernels crate compiled to PTX (by `build.rs`), for [`PTX_ARCH`].
pub const PTX: &str = include_str!(env!("YUKAWA_PTX_PATH"));

/// The architecture [`PTX`] targets (`WARPKIT_CUDA_ARCH` at build time, as warpkit's module).
pub const PTX_ARCH: &str = env!("YUKAWA_PTX_ARCH");

/// Parameters of one Yukawa evaluation: `a = G m e^{−s/λ}(1 + s/λ) d / s³`, `s² = |d|² + ε²`.
#[derive(Clone, Copy, Debug)]
pub struct Params {
    /// Opening angle of the tree walk: a cell of width w is used whole when w / r < θ for the
    /// nearest point of the group's box.
    pub theta: f32,
    /// Plummer softening length ε.
    pub eps: f32,
    /// Screening length λ (`f32::INFINITY`: Newtonian gravity).
    pub lambda: f32,
    /// Coupling constant G.
    pub g: f32,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            theta: 0.5,
            eps: 0.01,
            lambda: 0.25,
            g: 1.0,
        }
    }
}

impl Params {
    /// The same θ, ε, G as warpkit's gravity parameters (for its validation and its tree).
    pub fn bh(&self) -> warpkit::bh::Params {
        warpkit::bh::Params {
            theta: self.theta,
            eps: self.eps,
            g: self.g,
        }
    }
    pub fn eps2(&self) -> f32 {
        self.eps * self.eps
    }
    pub fn inv_lambda(&self) -> f32 {
        kernels::inv_lambda(self.lambda)
    }
}

/// Why an evaluation was refused before any work.
#[derive(Debug, PartialEq)]
pub enum ParamError {
    /// warpkit's checks of bodies, θ, ε and G.
    Input(InputError),
    /// λ must be positive (infinity allowed).
    Lambda(f32),
}

impl std::fmt::Display for ParamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParamError::Input(e) => e.fmt(f),
            ParamError::Lambda(l) => write!(f, "λ = {l} is invalid: it must be > 0 (or inf)"),
        }
    }
}

impl std::error::Error for ParamError {}

/// Checks bodies and parameters as warpkit checks a gravity request, and λ.
pub fn check(bodies: &[Body], p: &Params) -> Result<(), ParamError> {
    validate(bodies, &p.bh()).map_err(ParamError::Input)?;
    if p.lambda.is_nan() || p.lambda <= 0.0 {
        return Err(ParamError::Lambda(p.lambda));
    }
    Ok(())
}
