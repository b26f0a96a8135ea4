//! webFetch (R-WFF).
pub mod markdown;
