//! lathe-store
#![deny(missing_docs)]
