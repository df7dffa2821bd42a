//! Hex8 assembly kernels (see the parent module); filled in below.
