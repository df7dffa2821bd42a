//! The `warpkit` application around the library: the command line's value parsing
//! ([`choice`]), the N-body run's pictures and progress ([`movie`], [`image`]) and the
//! reproductions of the papers' tables and figures ([`repro`]). The binary (`src/main.rs` and
//! `src/commands/`, one module per subcommand) parses the command line and calls these.

pub mod choice;
pub mod image;
pub mod movie;
pub mod repro;
