//! The client and its connections: one `Client` per bucket, shared by the
//! workers; one `Conn` per worker with its own connection pool, so a
//! worker's requests reuse its connection and never wait for another's.
//! Every request goes through one exchange that signs it, times it (to
//! the answer's headers and to its last byte), retries what is worth
//! retrying with the policy's backoff, and counts each retry by kind.

use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ureq::http::{self, Response};
use ureq::{Agent, Body, SendBody};

use crate::config::{Addressing, ConfigError, Settings};
use crate::error::{code_of_status, parse_error_body, Error, ErrorKind, Failure, Op};
use crate::retry::{classify_status, Jitter, Retries, RetryPolicy, RetryTally, Tally, Transient};

/// How long a signed URL is valid: long enough for one attempt of any
/// request, as each attempt is signed again.
pub(crate) const EXPIRES: Duration = Duration::from_secs(900);

/// The most of an error answer's body read for its code and message.
const ERROR_BODY_LIMIT: u64 = 64 * 1024;

/// The timing of the attempt that succeeded, from before it was signed:
/// to the answer's status line and headers, and to the answer's last
/// byte. For a PUT the first is the wait for the answer after the body
/// was sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timing {
    /// Time to the answer's headers (time to first byte).
    pub ttfb: Duration,
    /// Time to the answer's last byte.
    pub total: Duration,
}

/// A request's result with its timing and its retries (kept apart: the
/// timing is the successful attempt's alone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Done<T> {
    /// What the request returned.
    pub value: T,
    /// The timing of the attempt that succeeded.
    pub timing: Timing,
    /// The attempts that failed before it.
    pub retries: Retries,
}

/// What a bucket's requests share: where the store is, who we are, how
/// to retry, how to connect.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) bucket: rusty_s3::Bucket,
    pub(crate) creds: rusty_s3::Credentials,
    cred_source: String,
    endpoint: String,
    region: String,
    addressing: Addressing,
    policy: RetryPolicy,
    agent: ureq::config::Config,
    connect_timeout: Duration,
    /// Every request's retries, added up as they end.
    tally: Tally,
}

/// The client of one bucket. Cheap to clone; make one `Conn` per worker.
#[derive(Debug, Clone)]
pub struct Client {
    shared: Arc<Shared>,
}

impl Client {
    /// A client of `bucket` with `settings`, retrying with `policy`.
    pub fn new(
        settings: &Settings,
        bucket: &str,
        policy: RetryPolicy,
    ) -> Result<Client, ConfigError> {
        let addressing = settings.addressing_for(bucket);
        let style = match addressing {
            Addressing::VirtualHost => rusty_s3::UrlStyle::VirtualHost,
            _ => rusty_s3::UrlStyle::Path,
        };
        let url = settings
            .endpoint
            .parse()
            .map_err(|e| ConfigError(format!("endpoint {}: {e}", settings.endpoint)))?;
        let bucket_v =
            rusty_s3::Bucket::new(url, style, bucket.to_string(), settings.region.clone())
                .map_err(|e| {
                    ConfigError(format!("bucket {bucket} at {}: {e}", settings.endpoint))
                })?;
        let c = &settings.credentials;
        let creds = match &c.token {
            Some(t) => {
                rusty_s3::Credentials::new_with_token(c.key.clone(), c.secret.clone(), t.clone())
            }
            None => rusty_s3::Credentials::new(c.key.clone(), c.secret.clone()),
        };
        Ok(Client {
            shared: Arc::new(Shared {
                bucket: bucket_v,
                creds,
                cred_source: c.source.clone(),
                endpoint: settings.endpoint.clone(),
                region: settings.region.clone(),
                addressing,
                policy,
                agent: agent_config(settings)?,
                connect_timeout: connect_timeout(settings),
                tally: Tally::default(),
            }),
        })
    }

    /// A connection for one worker; `seed` seeds its backoff jitter.
    pub fn connect(&self, seed: u64) -> Conn {
        Conn {
            shared: self.shared.clone(),
            io: Io {
                agent: Agent::with_parts(
                    self.shared.agent.clone(),
                    crate::tcp::connector(self.shared.connect_timeout),
                    ureq::unversioned::resolver::DefaultResolver::default(),
                ),
                jitter: Jitter::new(seed),
                stop: None,
            },
        }
    }

    /// The bucket's name.
    pub fn bucket(&self) -> &str {
        self.shared.bucket.name()
    }

    /// The retry policy.
    pub fn policy(&self) -> RetryPolicy {
        self.shared.policy
    }

    /// The retries of every request this client's connections made so
    /// far, added up.
    pub fn tally(&self) -> RetryTally {
        self.shared.tally.read()
    }

    /// One line for a run's header: endpoint, addressing, region, and
    /// where the credentials came from (never the secret).
    pub fn describe(&self) -> String {
        let s = &self.shared;
        let style = match s.addressing {
            Addressing::VirtualHost => "virtual-host",
            _ => "path-style",
        };
        format!(
            "{} ({style}), region {}, credentials from {}",
            s.endpoint, s.region, s.cred_source
        )
    }
}

/// How long a connection may take to open.
fn connect_timeout(settings: &Settings) -> Duration {
    settings.timeout.min(Duration::from_secs(10))
}

/// The HTTP settings every connection of a client shares.
fn agent_config(settings: &Settings) -> Result<ureq::config::Config, ConfigError> {
    let mut b = Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .user_agent(concat!("ioscale/", env!("CARGO_PKG_VERSION")))
        .max_idle_connections(1)
        .max_idle_connections_per_host(1)
        .no_delay(true)
        .timeout_connect(Some(connect_timeout(settings)))
        .timeout_per_read(Some(settings.timeout))
        .timeout_per_write(Some(settings.timeout));
    if let Some(p) = &settings.proxy {
        let proxy = ureq::Proxy::new(p).map_err(|e| ConfigError(format!("proxy {p}: {e}")))?;
        b = b.proxy(Some(proxy));
    }
    if let Some(path) = &settings.ca_bundle {
        let pem = std::fs::read(path)
            .map_err(|e| ConfigError(format!("CA bundle {}: {e}", path.display())))?;
        let certs: Vec<_> = ureq::tls::parse_pem(&pem)
            .filter_map(|item| match item {
                Ok(ureq::tls::PemItem::Certificate(c)) => Some(c),
                _ => None,
            })
            .collect();
        if certs.is_empty() {
            return Err(ConfigError(format!(
                "CA bundle {}: no PEM certificate in it",
                path.display()
            )));
        }
        let tls = ureq::tls::TlsConfig::builder()
            .root_certs(ureq::tls::RootCerts::new_with_certs(&certs))
            .build();
        b = b.tls_config(tls);
    }
    Ok(b.build())
}

/// One worker's connection to the store. Its requests are the methods in
/// `ops.rs`; each returns a `Done` with its timing and retries, or an
/// `Error` naming the operation, the object and the status.
#[derive(Debug)]
pub struct Conn {
    pub(crate) shared: Arc<Shared>,
    pub(crate) io: Io,
}

impl Conn {
    /// Stops retrying (and waiting to retry) once `flag` is set: an
    /// interrupted run's last request fails instead of backing off.
    pub fn set_stop(&mut self, flag: Arc<AtomicBool>) {
        self.io.stop = Some(flag);
    }

    /// The client this connection belongs to.
    pub fn client(&self) -> Client {
        Client {
            shared: self.shared.clone(),
        }
    }
}

/// A request to make: what the exchange sends besides the signed URL.
pub(crate) struct Call<'a> {
    pub(crate) op: Op,
    /// The object's key, for messages (empty for the bucket).
    pub(crate) key: &'a str,
    pub(crate) method: http::Method,
    pub(crate) headers: &'a [(&'a str, &'a str)],
    pub(crate) body: Option<&'a [u8]>,
    /// Statuses handed to the reader rather than failed (2xx always).
    pub(crate) also_ok: &'a [u16],
}

/// How an attempt failed.
pub(crate) enum Fail {
    /// The store answered with an error status (or a 200 with an error
    /// body, as a copy can).
    Status {
        status: u16,
        code: Option<String>,
        message: Option<String>,
    },
    /// No (whole) answer: worth another attempt.
    Dropped(String),
    /// Not worth another attempt.
    Fatal(ErrorKind),
}

impl Fail {
    fn transient(&self) -> Option<Transient> {
        match self {
            Fail::Status { status, code, .. } => classify_status(*status, code.as_deref()),
            Fail::Dropped(_) => Some(Transient::Dropped),
            Fail::Fatal(_) => None,
        }
    }

    fn into_kind(self) -> ErrorKind {
        match self {
            Fail::Status {
                status,
                code,
                message,
            } => ErrorKind::Status {
                status,
                code,
                message,
            },
            Fail::Dropped(m) => ErrorKind::Transport(m),
            Fail::Fatal(k) => k,
        }
    }

    /// A ureq failure: a broken or refused connection is worth another
    /// attempt, a bad URL, a TLS failure or an unknown host is not.
    fn of_ureq(e: ureq::Error) -> Fail {
        use std::io::ErrorKind::{InvalidData, InvalidInput};
        match e {
            // rustls reports a refused certificate or a failed handshake
            // as invalid data: another attempt would fail the same way.
            ureq::Error::Io(ref io) if matches!(io.kind(), InvalidData | InvalidInput) => {
                Fail::Fatal(ErrorKind::Transport(e.to_string()))
            }
            ureq::Error::Io(_)
            | ureq::Error::Timeout(_)
            | ureq::Error::ConnectionFailed
            | ureq::Error::Protocol(_) => Fail::Dropped(e.to_string()),
            other => Fail::Fatal(ErrorKind::Transport(other.to_string())),
        }
    }

    /// A failure while reading an answer's body: the connection broke.
    pub(crate) fn of_io(e: std::io::Error) -> Fail {
        Fail::Dropped(format!("reading the answer: {e}"))
    }

    /// An answer the client cannot use.
    pub(crate) fn protocol(m: impl Into<String>) -> Fail {
        Fail::Fatal(ErrorKind::Protocol(m.into()))
    }
}

/// The I/O half of a connection: the agent (its pool), the jitter, the
/// stop flag.
#[derive(Debug)]
pub(crate) struct Io {
    agent: Agent,
    jitter: Jitter,
    stop: Option<Arc<AtomicBool>>,
}

impl Io {
    fn stopped(&self) -> bool {
        self.stop
            .as_ref()
            .is_some_and(|s| s.load(Ordering::Relaxed))
    }

    /// Makes the request `call`, signed afresh for each attempt by
    /// `sign`, and hands a successful answer to `read`; retries what the
    /// policy allows, counting each failed attempt.
    pub(crate) fn exchange<T>(
        &mut self,
        shared: &Shared,
        call: &Call<'_>,
        sign: impl Fn() -> url::Url,
        mut read: impl FnMut(&mut Response<Body>) -> Result<T, Fail>,
    ) -> Result<Done<T>, Error> {
        let mut retries = Retries::default();
        let mut attempt = 0u32;
        loop {
            let start = Instant::now();
            match self.attempt(call, &sign(), start, &mut read) {
                Ok((value, timing)) => {
                    shared.tally.add(&retries);
                    return Ok(Done {
                        value,
                        timing,
                        retries,
                    });
                }
                Err(fail) => {
                    let took = start.elapsed();
                    let transient = fail.transient();
                    if let Some(t) = transient {
                        retries.note(t, took);
                    }
                    if transient.is_none() || attempt >= shared.policy.retries || self.stopped() {
                        shared.tally.add(&retries);
                        return Err(shared.error(call, fail.into_kind(), attempt + 1, retries));
                    }
                    let wait = shared.policy.wait(attempt, self.jitter.unit());
                    retries.backoff += self.sleep(wait);
                    attempt += 1;
                }
            }
        }
    }

    /// Waits up to `d`, in slices, ending early once stopped; returns the
    /// time waited.
    fn sleep(&self, d: Duration) -> Duration {
        let start = Instant::now();
        while !self.stopped() {
            let left = d.saturating_sub(start.elapsed());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
        start.elapsed()
    }

    fn attempt<T>(
        &mut self,
        call: &Call<'_>,
        url: &url::Url,
        start: Instant,
        read: &mut impl FnMut(&mut Response<Body>) -> Result<T, Fail>,
    ) -> Result<(T, Timing), Fail> {
        let mut b = http::Request::builder()
            .method(call.method.clone())
            .uri(url.as_str());
        for (k, v) in call.headers {
            b = b.header(*k, *v);
        }
        let sent = match call.body {
            Some(body) => b.body(body).map(|r| self.agent.run(r)),
            None => b.body(SendBody::none()).map(|r| self.agent.run(r)),
        };
        let mut resp = sent
            .map_err(|e| Fail::protocol(format!("request: {e}")))?
            .map_err(Fail::of_ureq)?;
        let ttfb = start.elapsed();
        let status = resp.status().as_u16();
        if !(200..300).contains(&status) && !call.also_ok.contains(&status) {
            return Err(error_answer(&mut resp, status));
        }
        let value = read(&mut resp)?;
        // What the reader left (an empty or small body) is read, so the
        // connection goes back to the pool.
        std::io::copy(&mut resp.body_mut().as_reader(), &mut std::io::sink())
            .map_err(Fail::of_io)?;
        Ok((
            value,
            Timing {
                ttfb,
                total: start.elapsed(),
            },
        ))
    }
}

/// The failure an error answer stands for, with the store's code and
/// message from its body (or the status's name when it has none).
fn error_answer(resp: &mut Response<Body>, status: u16) -> Fail {
    let mut body = Vec::new();
    let _ = resp
        .body_mut()
        .with_config()
        .limit(ERROR_BODY_LIMIT)
        .reader()
        .take(ERROR_BODY_LIMIT)
        .read_to_end(&mut body);
    let (code, message) = parse_error_body(&body);
    Fail::Status {
        status,
        code: code.or_else(|| code_of_status(status).map(str::to_string)),
        message,
    }
}

impl Shared {
    /// The error of a failed request, with a hint where the failure
    /// points at a setting.
    fn error(&self, call: &Call<'_>, kind: ErrorKind, attempts: u32, retries: Retries) -> Error {
        let url = if call.key.is_empty() {
            format!("s3://{}", self.bucket.name())
        } else {
            format!("s3://{}/{}", self.bucket.name(), call.key)
        };
        let mut e = Failure {
            op: call.op,
            url,
            kind,
            attempts,
            retries,
            hint: None,
        };
        e.hint = if e.is_auth() {
            Some(format!(
                "the store refused the credentials from {} (region {})",
                self.cred_source, self.region
            ))
        } else if e.is_missing_bucket() {
            Some(format!(
                "no bucket {:?} at {}",
                self.bucket.name(),
                self.endpoint
            ))
        } else if e.is_transport() && e.to_string().contains("certificate") {
            Some("name the CA that signed the server's certificate in AWS_CA_BUNDLE".into())
        } else if e.is_transport() {
            Some(format!("is the endpoint {} right?", self.endpoint))
        } else {
            None
        };
        e.into()
    }
}
