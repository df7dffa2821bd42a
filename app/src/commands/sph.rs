//! `warpkit sph`: the options of the hydrodynamics solver's case (`warpkit::sph::hydro::cli`).

use crate::choice::choice;
use std::path::PathBuf;
use warpkit::sph::hydro::GravitySolver;
use warpkit::sph::hydro::cli::IcKind;

/// Arguments of `warpkit sph`.
#[derive(clap::Args, Debug)]
pub struct SphArgs {
    /// A TOML file with [ic], [run] and [output] tables (see docs/sph.md).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Initial conditions.
    #[arg(long, value_parser = choice::<IcKind>())]
    pub ic: Option<IcKind>,
    /// Sod: dense particles per unit length; Sedov: particles per box side.
    #[arg(long)]
    pub resolution: Option<usize>,
    /// Evrard, polytrope: about this many particles.
    #[arg(long)]
    pub particles: Option<usize>,
    /// End time.
    #[arg(long, allow_negative_numbers = true)]
    pub t_end: Option<f64>,
    /// Self-gravity's softening length ε.
    #[arg(long, allow_negative_numbers = true)]
    pub softening: Option<f64>,
    /// Self-gravity's tree opening angle θ.
    #[arg(long, allow_negative_numbers = true)]
    pub theta: Option<f64>,
    /// How self-gravity is summed.
    #[arg(long, value_parser = choice::<GravitySolver>())]
    pub gravity_solver: Option<GravitySolver>,
    /// Output directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

impl From<SphArgs> for warpkit::sph::hydro::cli::SphArgs {
    fn from(a: SphArgs) -> Self {
        let SphArgs {
            config,
            ic,
            resolution,
            particles,
            t_end,
            softening,
            theta,
            gravity_solver,
            out,
        } = a;
        Self {
            config,
            ic,
            resolution,
            particles,
            t_end,
            softening,
            theta,
            gravity_solver,
            out,
        }
    }
}

/// Runs the case (the library's solver and its files).
pub(crate) fn run(choice: warpkit::backend::BackendChoice, a: SphArgs) -> anyhow::Result<()> {
    warpkit::sph::hydro::cli::run(choice, a.into())
}
