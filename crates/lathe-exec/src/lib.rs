//! lathe-exec
#![deny(missing_docs)]
