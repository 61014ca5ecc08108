//! Test support (the `testing` feature): a real S3 server on loopback and
//! a proxy that injects the faults a real store shows under load, for the
//! tests of this crate and of the ioscale binary — never for the product.

mod cert;
mod proxy;
mod server;

pub use cert::TestCert;

pub use proxy::{Action, FaultProxy, Rule, Stats};
pub use server::{
    find_binary, skip_without_server, Server, ACCESS_KEY, S3S_FS_VERSION, SECRET_KEY,
};
