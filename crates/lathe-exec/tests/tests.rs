//! The integration tests of lathe-exec: real process trees killed whole, output kept lossless and
//! bounded, and the Landlock sandbox with real processes.
//!
//! One binary for the crate (Cargo.toml: `autotests = false`), since each test binary links the
//! whole dependency graph. Each file in `tests/` is a module declared here (lathe-testkit's
//! `layout` test checks that none is left out); run one with
//! `cargo test -p lathe-exec --test integration drain::`.

mod common;

mod drain;
mod escapees;
mod kill_tree;
mod memory;
mod orphans;
mod output;
mod piped;
mod run;
mod sandbox;
mod sandbox_hardening;
