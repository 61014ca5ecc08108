//! The `smallfile` front-end's share: smallfile's options (`smallfile_cli.py`) and its per-thread and total report.

pub mod parse;
pub mod render;
