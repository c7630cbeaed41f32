//! The integration tests of lathe-testkit: one binary, a module per file.

mod alone;
mod real_client;
