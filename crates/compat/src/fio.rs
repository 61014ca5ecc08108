//! The `fio` front-end's share: fio's command line and job files, and its normal, JSON and terse reports.

pub mod parse;
pub mod render;
