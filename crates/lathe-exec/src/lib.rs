//! lathe-exec
#![deny(missing_docs)]
pub mod sandbox;
