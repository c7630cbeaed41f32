//! The checkpoints' integration tests: one binary, a module per file.
#![allow(
    clippy::disallowed_methods,
    reason = "tests and benches drive the blocking entry points from synchronous code"
)]

mod coverage;
mod fallback;
mod objects;
mod restore;
mod sessions;
mod snapshot;
mod support;
mod turns;
