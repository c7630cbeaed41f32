//! The integration tests of lathe-policy: the approval tables, the command corpora and the
//! never-panics properties.
//!
//! One binary for the crate (Cargo.toml: `autotests = false`), since each test binary links the
//! whole dependency graph. Each file in `tests/` is a module declared here (lathe-testkit's
//! `layout` test checks that none is left out); run one with
//! `cargo test -p lathe-policy --test integration corpus::`.

mod corpus;
mod decision_table;
mod decision_table_resolved;
mod never_panics;
