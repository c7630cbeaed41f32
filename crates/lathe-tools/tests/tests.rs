//! The integration tests of lathe-tools: workspace containment, the file, search and shell tools
//! and the registry, over real files and processes.
//!
//! One binary for the crate (Cargo.toml: `autotests = false`), since each test binary links the
//! whole dependency graph. Each file in `tests/` is a module declared here (lathe-testkit's
//! `layout` test checks that none is left out); run one with
//! `cargo test -p lathe-tools --test integration containment::`.

mod dispatch_support;
mod file_support;
mod search_support;

mod apply_patch;
mod ast_edit;
mod containment;
mod deferred;
mod dispatch;
mod documents;
mod example_custom_tool;
mod exec_tools;
mod file_containment;
mod file_edit;
mod file_escapes;
mod file_plan;
mod file_props;
mod file_tools;
mod gate;
mod memory;
mod pending;
mod profile;
mod read_image;
mod registry;
mod search_cancel;
mod search_equivalence;
mod search_filters;
mod search_glob;
mod search_grep;
mod search_grep_text;
mod search_race;
mod web_documents;
