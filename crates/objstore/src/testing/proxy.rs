//! A fault-injecting HTTP/1.1 proxy on loopback, in front of a test
//! server: by rule it answers 503 `SlowDown` or 500 `InternalError`
//! itself, delays a request, drops the connection without an answer, or
//! cuts an answer's body short. It counts the connections it accepted
//! and the requests and faults it saw, so a test can check what the
//! client counted against what happened.
//!
//! It takes requests in origin form (as a reverse proxy: point the
//! endpoint at it), in absolute form or through a CONNECT tunnel (as a
//! forward proxy: point `Settings::proxy` at it, which lets virtual-host
//! requests for `BUCKET.DOMAIN` reach the server without DNS).

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// What a rule does to a request it picks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Answers with this status and an S3 error body (503: `SlowDown`,
    /// 500: `InternalError`, other: `InjectedFault`), without asking the
    /// server.
    Status(u16),
    /// Waits this long, then forwards the request.
    Delay(Duration),
    /// Reads the request and closes the connection without an answer.
    Drop,
    /// Forwards the request, sends the answer's head and half its body,
    /// then closes the connection.
    CutBody,
}

/// Which requests a rule picks and what it does to them: among the
/// requests that match `method` and `path_contains`, after skipping
/// `skip`, every `every`-th one, at most `limit` times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// `GET`, `PUT` … (any method when `None`).
    pub method: Option<String>,
    /// A text the request's target must hold (any target when `None`).
    pub path_contains: Option<String>,
    /// Matching requests let through before the rule starts.
    pub skip: u64,
    /// Pick every n-th matching request after the skipped ones (1: all).
    pub every: u64,
    /// At most this many picks (`u64::MAX`: no limit).
    pub limit: u64,
    /// What to do.
    pub action: Action,
}

impl Rule {
    /// A rule picking every request, without limit.
    pub fn new(action: Action) -> Rule {
        Rule {
            method: None,
            path_contains: None,
            skip: 0,
            every: 1,
            limit: u64::MAX,
            action,
        }
    }

    /// Only requests of `method`.
    pub fn method(mut self, method: &str) -> Rule {
        self.method = Some(method.to_string());
        self
    }

    /// Only requests whose target holds `text`.
    pub fn path_contains(mut self, text: &str) -> Rule {
        self.path_contains = Some(text.to_string());
        self
    }

    /// Lets the first `n` matching requests through.
    pub fn skip(mut self, n: u64) -> Rule {
        self.skip = n;
        self
    }

    /// Picks every `n`-th matching request.
    pub fn every(mut self, n: u64) -> Rule {
        self.every = n.max(1);
        self
    }

    /// Picks at most `n` requests.
    pub fn limit(mut self, n: u64) -> Rule {
        self.limit = n;
        self
    }
}

/// A rule with its counters.
#[derive(Debug)]
struct Armed {
    rule: Rule,
    matched: u64,
    picked: u64,
}

#[derive(Debug, Default)]
struct Counters {
    connections: AtomicU64,
    requests: AtomicU64,
}

/// What the proxy saw: connections accepted, requests read, and for each
/// rule (in order) how many requests it picked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stats {
    /// Client connections accepted.
    pub connections: u64,
    /// Requests read (picked or forwarded).
    pub requests: u64,
    /// Requests each rule picked.
    pub picked: Vec<u64>,
}

/// The proxy: listening on 127.0.0.1, forwarding to one upstream.
/// Stopped on drop.
#[derive(Debug)]
pub struct FaultProxy {
    addr: SocketAddr,
    tls: bool,
    rules: Arc<Mutex<Vec<Armed>>>,
    counters: Arc<Counters>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl FaultProxy {
    /// Starts a proxy to `upstream` (`HOST:PORT`) with `rules`, checked in
    /// order (the first that picks a request acts on it).
    pub fn start(upstream: &str, rules: Vec<Rule>) -> io::Result<FaultProxy> {
        FaultProxy::start_with(upstream, rules, None)
    }

    /// As [`FaultProxy::start`], speaking HTTPS to the client with the
    /// certificate chain and key of `tls` (PEM, from [`super::TestCert`]).
    pub fn start_tls(
        upstream: &str,
        rules: Vec<Rule>,
        cert_pem: &[u8],
        key_pem: &[u8],
    ) -> io::Result<FaultProxy> {
        FaultProxy::start_with(upstream, rules, Some(server_config(cert_pem, key_pem)?))
    }

    fn start_with(
        upstream: &str,
        rules: Vec<Rule>,
        tls: Option<Arc<rustls::ServerConfig>>,
    ) -> io::Result<FaultProxy> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let upstream: SocketAddr = upstream
            .parse()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{upstream}: {e}")))?;
        let mut proxy = FaultProxy {
            addr,
            tls: tls.is_some(),
            rules: Arc::new(Mutex::new(Vec::new())),
            counters: Arc::default(),
            stop: Arc::default(),
            accept: None,
        };
        proxy.set_rules(rules);
        let (rules, counters, stop) = (
            proxy.rules.clone(),
            proxy.counters.clone(),
            proxy.stop.clone(),
        );
        let accept = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                counters.connections.fetch_add(1, Ordering::Relaxed);
                let (rules, counters, tls) = (rules.clone(), counters.clone(), tls.clone());
                std::thread::spawn(move || {
                    let _ = conn.set_nodelay(true);
                    let _ = match tls.map(rustls::ServerConnection::new) {
                        None => serve(conn, upstream, &rules, &counters),
                        Some(Ok(tls)) => serve(
                            rustls::StreamOwned::new(tls, conn),
                            upstream,
                            &rules,
                            &counters,
                        ),
                        Some(Err(e)) => Err(io::Error::other(e)),
                    };
                });
            }
        });
        proxy.accept = Some(accept);
        Ok(proxy)
    }

    /// `http://127.0.0.1:PORT` (`https://` with TLS).
    pub fn endpoint(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// Replaces the rules (their counters start again).
    pub fn set_rules(&self, rules: Vec<Rule>) {
        let armed = rules
            .into_iter()
            .map(|rule| Armed {
                rule,
                matched: 0,
                picked: 0,
            })
            .collect();
        *self.rules.lock().unwrap_or_else(|p| p.into_inner()) = armed;
    }

    /// What the proxy saw so far.
    pub fn stats(&self) -> Stats {
        let rules = self.rules.lock().unwrap_or_else(|p| p.into_inner());
        Stats {
            connections: self.counters.connections.load(Ordering::Relaxed),
            requests: self.counters.requests.load(Ordering::Relaxed),
            picked: rules.iter().map(|a| a.picked).collect(),
        }
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

/// The action of the first rule that picks this request, if any.
fn pick(rules: &Mutex<Vec<Armed>>, method: &str, target: &str) -> Option<Action> {
    let mut rules = rules.lock().unwrap_or_else(|p| p.into_inner());
    for a in rules.iter_mut() {
        let r = &a.rule;
        if r.method.as_deref().is_some_and(|m| m != method)
            || r.path_contains
                .as_deref()
                .is_some_and(|p| !target.contains(p))
        {
            continue;
        }
        a.matched += 1;
        if a.matched <= r.skip || a.picked >= r.limit || (a.matched - r.skip - 1) % r.every != 0 {
            continue;
        }
        a.picked += 1;
        return Some(r.action.clone());
    }
    None
}

/// An HTTP message's head: the first line and the headers, as read.
struct Head {
    first: String,
    headers: Vec<(String, String)>,
}

impl Head {
    /// Reads a head; `None` at a clean end of the stream.
    fn read(r: &mut impl BufRead) -> io::Result<Option<Head>> {
        let mut first = String::new();
        if r.read_line(&mut first)? == 0 {
            return Ok(None);
        }
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            if r.read_line(&mut line)? == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                headers.push((k.trim().to_string(), v.trim().to_string()));
            }
        }
        Ok(Some(Head {
            first: first.trim_end().to_string(),
            headers,
        }))
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn content_length(&self) -> io::Result<Option<usize>> {
        self.get("content-length")
            .map(|v| {
                v.parse()
                    .map_err(|_| io::Error::other("a bad Content-Length"))
            })
            .transpose()
    }

    fn chunked(&self) -> bool {
        self.get("transfer-encoding")
            .is_some_and(|v| v.eq_ignore_ascii_case("chunked"))
    }

    fn write(&self, first: &str, w: &mut impl Write) -> io::Result<()> {
        let mut out = format!("{first}\r\n");
        for (k, v) in &self.headers {
            out.push_str(&format!("{k}: {v}\r\n"));
        }
        out.push_str("\r\n");
        w.write_all(out.as_bytes())
    }
}

/// Reads a body of `len` bytes, or a chunked body (kept in its chunked
/// encoding, to be passed on as it came).
fn read_body(r: &mut impl BufRead, head: &Head, len: Option<usize>) -> io::Result<Vec<u8>> {
    if head.chunked() {
        let mut raw = Vec::new();
        loop {
            let mut line = String::new();
            r.read_line(&mut line)?;
            raw.extend_from_slice(line.as_bytes());
            let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                .map_err(|_| io::Error::other("a bad chunk size"))?;
            if size == 0 {
                // Trailers, up to the empty line.
                loop {
                    let mut t = String::new();
                    r.read_line(&mut t)?;
                    raw.extend_from_slice(t.as_bytes());
                    if t.trim().is_empty() {
                        return Ok(raw);
                    }
                }
            }
            let start = raw.len();
            raw.resize(start + size + 2, 0);
            r.read_exact(&mut raw[start..])?;
        }
    }
    let mut body = vec![0; len.unwrap_or(0)];
    r.read_exact(&mut body)?;
    Ok(body)
}

/// Serves one client connection: request after request, each picked by
/// a rule or forwarded over this connection's own upstream connection.
/// Returning drops (closes) the connection.
fn serve(
    client: impl Read + Write,
    upstream: SocketAddr,
    rules: &Mutex<Vec<Armed>>,
    counters: &Counters,
) -> io::Result<()> {
    let mut client = BufReader::new(client);
    let mut up: Option<BufReader<TcpStream>> = None;
    while let Some(req) = Head::read(&mut client)? {
        if req.first.starts_with("CONNECT ") {
            // A forward proxy's tunnel: whatever host it names, the
            // requests that follow go to the upstream.
            client
                .get_mut()
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")?;
            client.get_mut().flush()?;
            continue;
        }
        counters.requests.fetch_add(1, Ordering::Relaxed);
        let body = read_body(&mut client, &req, req.content_length()?)?;
        let mut parts = req.first.splitn(3, ' ');
        let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        // Absolute form (a forward proxy's request) becomes origin form.
        let origin = match target.strip_prefix("http://") {
            Some(rest) => rest.find('/').map_or("/", |i| &rest[i..]),
            None => target,
        };
        let first = format!("{method} {origin} HTTP/1.1");
        let action = pick(rules, method, target);
        let out = client.get_mut();
        match action {
            Some(Action::Status(code)) => {
                answer_status(out, code)?;
                out.flush()?;
                continue;
            }
            Some(Action::Drop) => return Ok(()),
            Some(Action::Delay(d)) => std::thread::sleep(d),
            _ => {}
        }
        if up.is_none() {
            let s = TcpStream::connect(upstream)?;
            s.set_nodelay(true)?;
            up = Some(BufReader::new(s));
        }
        let up_r = up.as_mut().expect("connected above");
        req.write(&first, up_r.get_mut())?;
        up_r.get_mut().write_all(&body)?;
        let resp = Head::read(up_r)?.ok_or(io::ErrorKind::UnexpectedEof)?;
        let len =
            if method == "HEAD" || resp.first.contains(" 204 ") || resp.first.contains(" 304 ") {
                Some(0)
            } else {
                resp.content_length()?
            };
        let resp_body = read_body(up_r, &resp, len)?;
        resp.write(&resp.first, out)?;
        if action == Some(Action::CutBody) {
            out.write_all(&resp_body[..resp_body.len() / 2])?;
            out.flush()?;
            return Ok(());
        }
        out.write_all(&resp_body)?;
        out.flush()?;
        if resp
            .get("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"))
        {
            return Ok(());
        }
    }
    Ok(())
}

/// The TLS side of an HTTPS proxy: the chain and key from PEM, ring as
/// the provider (the one ureq uses).
fn server_config(cert_pem: &[u8], key_pem: &[u8]) -> io::Result<Arc<rustls::ServerConfig>> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(io::Error::other)?;
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(io::Error::other)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(io::Error::other)?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(io::Error::other)?;
    Ok(Arc::new(config))
}

/// Answers a request with `code` and an S3 error body.
fn answer_status(w: &mut impl Write, code: u16) -> io::Result<()> {
    let (reason, s3code) = match code {
        503 => ("Service Unavailable", "SlowDown"),
        500 => ("Internal Server Error", "InternalError"),
        _ => ("Injected", "InjectedFault"),
    };
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{s3code}</Code>\
         <Message>injected by the test proxy</Message></Error>"
    );
    let head = format!(
        "HTTP/1.1 {code} {reason}\r\ncontent-type: application/xml\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    w.write_all(head.as_bytes())?;
    w.write_all(body.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_pick_by_method_path_skip_every_and_limit() {
        let rules = Mutex::new(Vec::new());
        let arm = |r: Rule| Armed {
            rule: r,
            matched: 0,
            picked: 0,
        };
        *rules.lock().unwrap() = vec![arm(Rule::new(Action::Status(503))
            .method("GET")
            .path_contains("/b/")
            .skip(1)
            .every(2)
            .limit(2))];
        let picks: Vec<bool> = (0..8)
            .map(|_| pick(&rules, "GET", "/b/k").is_some())
            .collect();
        // Skip 1, then every 2nd (the 1st after the skip, the 3rd …), at most 2.
        assert_eq!(
            picks,
            [false, true, false, true, false, false, false, false]
        );
        assert!(pick(&rules, "PUT", "/b/k").is_none());
        assert!(pick(&rules, "GET", "/c/k").is_none());
    }
}
