//! The subcommands' arguments and handlers (the parser and dispatch stay in `main.rs`).

pub(crate) mod combined;
pub(crate) mod fem;
pub(crate) mod gravity;
pub(crate) mod nbody;
pub(crate) mod neighbours;
pub(crate) mod sbh;
pub(crate) mod sph;

use super::*;
