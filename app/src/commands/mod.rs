//! One module per subcommand: its arguments (clap) and its handler, `run`. `main.rs` lists the
//! subcommands (their one-line help) and dispatches.

pub(crate) mod combined;
pub(crate) mod fem;
pub(crate) mod gravity;
pub(crate) mod impact;
pub(crate) mod info;
pub(crate) mod nbody;
pub(crate) mod neighbours;
pub(crate) mod planet;
pub(crate) mod ptx;
pub(crate) mod repro;
pub(crate) mod sbh;
pub(crate) mod selftest;
pub(crate) mod sph;

use super::*;
