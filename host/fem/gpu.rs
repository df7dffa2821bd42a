//! GPU assembly launchers (below).
