//! `warpkit planet`: the options of the planet builder (`warpkit::planet::cli`).

use std::path::PathBuf;

/// Arguments of `warpkit planet`.
#[derive(clap::Args, Debug)]
pub struct PlanetArgs {
    /// A TOML file with [planet], [particles], [settle] and [output] tables (every key:
    /// docs/keys.md or `warpkit info --keys planet`).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Mass in Earth masses [default: 1].
    #[arg(long, allow_negative_numbers = true, conflicts_with = "mass_kg")]
    pub mass: Option<f64>,
    /// Mass in kg.
    #[arg(long, allow_negative_numbers = true)]
    pub mass_kg: Option<f64>,
    /// Layers from the centre out as material:mass_fraction (materials: iron, granite, basalt,
    /// water, ice) [default: iron:0.3,granite:0.7].
    #[arg(long)]
    pub layers: Option<String>,
    /// Number of particles [default: 10000].
    #[arg(long)]
    pub particles: Option<usize>,
    /// Seed of the shells' random rotations [default: 1].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Damped settling time in dynamical times √(R³/GM) [default: 10; 0: none].
    #[arg(long, allow_negative_numbers = true)]
    pub settle: Option<f64>,
    /// Replace the files of a previous planet in the output directory.
    #[arg(long)]
    pub overwrite: bool,
    /// Output directory [default: planet_out].
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Builds the planet, the settling's SPH passes on the backend of `choice`.
pub(crate) fn run(choice: warpkit::backend::BackendChoice, a: PlanetArgs) -> anyhow::Result<()> {
    let PlanetArgs {
        config,
        mass,
        mass_kg,
        layers,
        particles,
        seed,
        settle,
        overwrite,
        out,
    } = a;
    warpkit::planet::cli::run(
        warpkit::planet::cli::PlanetArgs {
            config,
            text: None,
            mass,
            mass_kg,
            layers,
            particles,
            seed,
            settle,
            overwrite,
            out,
        },
        choice,
    )?;
    Ok(())
}
