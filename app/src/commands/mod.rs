//! The subcommands' arguments and handlers (the parser and dispatch stay in `main.rs`).

pub(crate) mod fem;
pub(crate) mod gravity;
pub(crate) mod nbody;
pub(crate) mod sbh;

use super::*;
