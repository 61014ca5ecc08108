//! A certificate for HTTPS tests: a throwaway CA and a leaf for
//! 127.0.0.1 signed by it, made with the `openssl` command (Debian's
//! openssl package) in a temporary directory, so a client can trust the
//! CA through `AWS_CA_BUNDLE` exactly as it would a private CA.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A CA and a leaf certificate for `127.0.0.1` and `localhost`, valid for
/// two days. The files live as long as this value.
#[derive(Debug)]
pub struct TestCert {
    dir: tempfile::TempDir,
    /// The leaf's certificate chain, PEM (for the server side).
    pub cert_pem: Vec<u8>,
    /// The leaf's private key, PEM.
    pub key_pem: Vec<u8>,
}

impl TestCert {
    /// Makes the CA and the leaf with `openssl`.
    pub fn make() -> std::io::Result<TestCert> {
        let dir = tempfile::Builder::new().prefix("ioscale-tls-").tempdir()?;
        let d = dir.path();
        std::fs::write(
            d.join("leaf.ext"),
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n\
             keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n",
        )?;
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        openssl(
            d,
            &[
                &["req", "-x509"][..],
                &ec,
                &[
                    "-keyout",
                    "ca.key",
                    "-out",
                    "ca.pem",
                    "-days",
                    "2",
                    "-subj",
                    "/CN=ioscale test CA",
                ],
            ]
            .concat(),
        )?;
        openssl(
            d,
            &[
                &["req"][..],
                &ec,
                &[
                    "-keyout",
                    "leaf.key",
                    "-out",
                    "leaf.csr",
                    "-subj",
                    "/CN=127.0.0.1",
                ],
            ]
            .concat(),
        )?;
        openssl(
            d,
            &[
                "x509",
                "-req",
                "-in",
                "leaf.csr",
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                "leaf.pem",
                "-days",
                "2",
                "-extfile",
                "leaf.ext",
            ],
        )?;
        Ok(TestCert {
            cert_pem: std::fs::read(d.join("leaf.pem"))?,
            key_pem: std::fs::read(d.join("leaf.key"))?,
            dir,
        })
    }

    /// The CA's certificate file (PEM): what `AWS_CA_BUNDLE` names.
    pub fn ca_bundle(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }
}

fn openssl(dir: &Path, args: &[&str]) -> std::io::Result<()> {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "openssl {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        )))
    }
}
