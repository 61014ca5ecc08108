//! The `ior` front-end's share: IOR's options and its text, JSON and CSV summaries.

pub mod parse;
pub mod render;
