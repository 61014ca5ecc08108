//! The `mdtest` front-end's share: mdtest's options and its rate table.

pub mod parse;
pub mod render;
