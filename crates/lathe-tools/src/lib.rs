//! lathe-tools
#![deny(missing_docs)]
