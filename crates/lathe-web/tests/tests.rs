//! The integration tests of lathe-web: `web_fetch` and `web_search` against real HTTP servers
//! on loopback (lathe-testkit's scripted server), through the real registry, gate and
//! dispatcher.
//!
//! One binary for the crate (Cargo.toml: `autotests = false`); each file in `tests/` is a module
//! declared here. Run one with `cargo test -p lathe-web --test integration fetch::`.

mod support;

mod fetch;
mod fetch_gate;
mod search;
