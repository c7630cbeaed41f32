//! lathe-agent
#![deny(missing_docs)]
