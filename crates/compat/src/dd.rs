//! The `dd` front-end's share: dd's operands (`if=`, `bs=`, `status=`) and its transfer summary.

pub mod parse;
pub mod render;
