//! A real S3 server for tests: s3s-fs (installed with `cargo install
//! s3s-fs --version 0.14.1 --features binary --locked`, as `scripts/test`
//! does) started on a free loopback port over a fresh temporary
//! directory, with signature checks on; its buckets are that directory's
//! top-level directories, so a test can check what was stored byte for
//! byte.
//!
//! What s3s-fs 0.14.1 does as S3 does (each checked in tests/s3s.rs):
//! ranged GETs (416 past the end), multipart uploads (`EntityTooSmall`
//! for a part under 5 MiB but the last), LIST v2 with continuation
//! tokens and delimiters, CopyObject, `If-None-Match: *`, a wrong secret
//! or key refused with 403 `SignatureDoesNotMatch` / `InvalidAccessKeyId`
//! (presigned URLs included), a LIST of a missing bucket answered 404
//! `NoSuchBucket`, virtual-host requests for `--domain HOST:PORT`.
//! Where it differs: a PUT into a missing bucket makes its directory (S3:
//! `NoSuchBucket`), so the bucket check is a LIST; an upload whose
//! completion failed is dropped with its parts' files left behind, and
//! its abort is refused `AccessDenied` (S3: `NoSuchUpload`); it echoes
//! `encoding-type=url` on a LIST without encoding the keys (so the client
//! does not ask for it).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::config::{Addressing, Credentials, Settings};

/// The access key the test server accepts.
pub const ACCESS_KEY: &str = "ioscale-test-key";
/// The secret key the test server accepts.
pub const SECRET_KEY: &str = "ioscale-test-secret";
/// The version of s3s-fs the tests are written against.
pub const S3S_FS_VERSION: &str = "0.14.1";

/// A running s3s-fs, stopped (and its directory removed) on drop.
#[derive(Debug)]
pub struct Server {
    child: Child,
    root: tempfile::TempDir,
    addr: String,
}

/// Where the s3s-fs binary is: `IOSCALE_S3S_FS`, then `PATH`, then
/// `~/.cargo/bin` (where `cargo install` puts it).
pub fn find_binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("IOSCALE_S3S_FS") {
        return Some(PathBuf::from(p));
    }
    let in_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("s3s-fs"))
            .find(|p| p.is_file())
    });
    in_path.or_else(|| {
        let home = std::env::var_os("HOME")?;
        let p = Path::new(&home).join(".cargo/bin/s3s-fs");
        p.is_file().then_some(p)
    })
}

/// Whether a test should skip for want of s3s-fs: it is missing and
/// `IOSCALE_REQUIRE_S3` is not set (`scripts/test` sets it, having
/// installed the server, so there a missing server fails the test).
pub fn skip_without_server() -> bool {
    if find_binary().is_some() {
        return false;
    }
    if std::env::var_os("IOSCALE_REQUIRE_S3").is_some() {
        panic!(
            "s3s-fs is not installed: cargo install s3s-fs --version {S3S_FS_VERSION} \
             --features binary --locked"
        );
    }
    eprintln!("note: skipping: needs s3s-fs (scripts/test installs it)");
    true
}

impl Server {
    /// Starts s3s-fs on 127.0.0.1 over a new temporary directory holding
    /// the `buckets` (made as directories before it starts).
    pub fn start(buckets: &[&str]) -> std::io::Result<Server> {
        Server::start_with(buckets, &[])
    }

    /// As [`Server::start`], with `domains` for virtual-host requests
    /// (`BUCKET.DOMAIN`).
    pub fn start_with(buckets: &[&str], domains: &[&str]) -> std::io::Result<Server> {
        let bin = find_binary().ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::NotFound, "s3s-fs is not installed")
        })?;
        let root = tempfile::Builder::new().prefix("ioscale-s3s-").tempdir()?;
        for b in buckets {
            std::fs::create_dir(root.path().join(b))?;
        }
        let mut cmd = Command::new(bin);
        cmd.args(["--host", "127.0.0.1", "--port", "0"]).args([
            "--access-key",
            ACCESS_KEY,
            "--secret-key",
            SECRET_KEY,
        ]);
        for d in domains {
            cmd.args(["--domain", d]);
        }
        let mut child = cmd
            .arg(root.path())
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let stdout = child.stdout.take().expect("piped");
        let (tx, rx) = mpsc::channel();
        // The server says where it listens in its log; the rest of the
        // log is drained so it never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(at) = line.find("server is running at http://") {
                    let addr = line[at + "server is running at http://".len()..]
                        .trim()
                        .to_string();
                    if let Some(tx) = tx.take() {
                        let _ = tx.send(addr);
                    }
                }
            }
        });
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(addr) => Ok(Server { child, root, addr }),
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                Err(std::io::Error::other(
                    "s3s-fs did not say where it listens within 60 s",
                ))
            }
        }
    }

    /// `127.0.0.1:PORT`.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The directory the server serves (a bucket is a directory in it).
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// The file that holds `key` of `bucket`.
    pub fn object_path(&self, bucket: &str, key: &str) -> PathBuf {
        self.root.path().join(bucket).join(key)
    }

    /// Settings that reach this server with its keys, path-style.
    pub fn settings(&self) -> Settings {
        Settings {
            endpoint: self.endpoint(),
            region: crate::DEFAULT_REGION.to_string(),
            credentials: Credentials {
                key: ACCESS_KEY.to_string(),
                secret: SECRET_KEY.to_string(),
                token: None,
                source: "the test server's keys".to_string(),
            },
            addressing: Addressing::Path,
            ca_bundle: None,
            proxy: None,
            timeout: crate::DEFAULT_TIMEOUT,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
