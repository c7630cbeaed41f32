//! The checkpoints' integration tests: one binary, a module per file.

mod coverage;
mod fallback;
mod objects;
mod restore;
mod sessions;
mod snapshot;
mod support;
mod turns;
