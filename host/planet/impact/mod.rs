//! Planetary giant impacts: two settled planets set on their two-body orbit ([`orbit`]), run
//! with the SPH solver and self-gravity, and the outcome measured as the run goes ([`outcome`]):
//! the largest remnant, the disk orbiting it and the escaping mass, per material. [`cli`] is
//! `warpkit impact`'s case and run. SI units throughout.

mod assemble;
pub mod cli;
pub mod orbit;
pub mod outcome;
pub mod run;

#[cfg(test)]
mod cli_tests;
#[cfg(test)]
mod orbit_tests;
#[cfg(test)]
mod outcome_tests;
#[cfg(test)]
mod run_tests;
