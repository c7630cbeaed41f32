//! The integration tests of lathe-store: real processes writing to one database at once.
//!
//! One binary for the crate (Cargo.toml: `autotests = false`), since each test binary links the
//! whole dependency graph. Each file in `tests/` is a module declared here (lathe-testkit's
//! `layout` test checks that none is left out); run one with
//! `cargo test -p lathe-store --test integration concurrent::`.
#![allow(
    clippy::disallowed_methods,
    reason = "tests drive the blocking entry points from synchronous code"
)]

mod concurrent;
