//! The integration tests of lathe-testkit: the scripted server as real clients see it, `alone!`,
//! and the layout of the repository (every crate's integration tests, every crate in the code
//! map of ARCHITECTURE.md).
//!
//! One binary for the crate (Cargo.toml: `autotests = false`), since each test binary links the
//! whole dependency graph. Each file in `tests/` is a module declared here (the `layout` test
//! checks that none is left out, in every crate); run one with
//! `cargo test -p lathe-testkit --test integration real_client::`.

mod alone;
mod architecture;
mod layout;
mod real_client;
