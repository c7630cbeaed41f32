//! lathe-policy
#![deny(missing_docs)]
