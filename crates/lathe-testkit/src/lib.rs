//! lathe-testkit
#![deny(missing_docs)]
