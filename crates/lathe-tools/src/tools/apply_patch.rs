//! `apply_patch` (work in progress).
mod hunks;
mod parse;
