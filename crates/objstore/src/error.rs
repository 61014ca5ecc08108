//! What a failed request says: the operation, the object's URL, the HTTP
//! status and the store's own error code, and how many attempts were made
//! — one line a user can act on, and predicates the driver maps to exit
//! codes without reading the text.

use std::fmt;

use crate::retry::Retries;

/// The operations of the client, as they are named in messages and in
/// per-operation figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// PutObject.
    Put,
    /// CreateMultipartUpload.
    CreateUpload,
    /// UploadPart.
    PutPart,
    /// CompleteMultipartUpload.
    CompleteUpload,
    /// AbortMultipartUpload.
    AbortUpload,
    /// GetObject, whole or ranged.
    Get,
    /// HeadObject.
    Head,
    /// HeadBucket.
    HeadBucket,
    /// ListObjectsV2, one page.
    List,
    /// DeleteObject.
    Delete,
    /// CopyObject.
    Copy,
}

impl Op {
    /// The operation's name in messages (`PUT`, `GET`, `LIST` …).
    pub fn name(self) -> &'static str {
        match self {
            Op::Put => "PUT",
            Op::CreateUpload => "CREATE-UPLOAD",
            Op::PutPart => "PUT-PART",
            Op::CompleteUpload => "COMPLETE-UPLOAD",
            Op::AbortUpload => "ABORT-UPLOAD",
            Op::Get => "GET",
            Op::Head => "HEAD",
            Op::HeadBucket => "HEAD-BUCKET",
            Op::List => "LIST",
            Op::Delete => "DELETE",
            Op::Copy => "COPY",
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a request failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorKind {
    /// The store answered with an error status.
    Status {
        /// The HTTP status.
        status: u16,
        /// The store's error code (`NoSuchBucket`, `SignatureDoesNotMatch`,
        /// `SlowDown` …), from the XML body or, for a bodiless answer
        /// (HEAD), named after the status.
        code: Option<String>,
        /// The store's message, if it sent one.
        message: Option<String>,
    },
    /// No answer: the connection was refused, reset or closed, timed out,
    /// or TLS failed.
    Transport(String),
    /// An answer the client cannot use: unparseable XML, a body of the
    /// wrong length, a ranged read the server answered whole.
    Protocol(String),
}

/// A failed request: the operation, the object, what went wrong and after
/// how many attempts. (Boxed, so a `Result` of a request stays small: its
/// fields are [`Failure`]'s.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(Box<Failure>);

impl std::ops::Deref for Error {
    type Target = Failure;
    fn deref(&self) -> &Failure {
        &self.0
    }
}

impl std::ops::DerefMut for Error {
    fn deref_mut(&mut self) -> &mut Failure {
        &mut self.0
    }
}

impl From<Failure> for Error {
    fn from(f: Failure) -> Error {
        Error(Box::new(f))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Error {}

/// What an [`Error`] holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The operation.
    pub op: Op,
    /// `s3://BUCKET/KEY` (the bucket alone for a bucket operation).
    pub url: String,
    /// What went wrong on the last attempt.
    pub kind: ErrorKind,
    /// How many attempts were made (1: no retry).
    pub attempts: u32,
    /// The failed attempts that were retried or ended it, by kind (the
    /// throttles before a final failure count too).
    pub retries: Retries,
    /// What to check, when the failure says it (the credentials' source
    /// for a refused signature, the endpoint for a missing bucket).
    pub hint: Option<String>,
}

impl Failure {
    /// The HTTP status, if the store answered.
    pub fn status(&self) -> Option<u16> {
        match &self.kind {
            ErrorKind::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The store's error code, if it gave one.
    pub fn code(&self) -> Option<&str> {
        match &self.kind {
            ErrorKind::Status { code, .. } => code.as_deref(),
            _ => None,
        }
    }

    /// The credentials were refused: a wrong secret, an unknown key, an
    /// expired token or no permission (403, or 400 with an auth code).
    pub fn is_auth(&self) -> bool {
        const AUTH: [&str; 6] = [
            "SignatureDoesNotMatch",
            "InvalidAccessKeyId",
            "AccessDenied",
            "ExpiredToken",
            "InvalidToken",
            "AuthorizationQueryParametersError",
        ];
        self.status() == Some(403) || self.code().is_some_and(|c| AUTH.contains(&c))
    }

    /// The bucket does not exist.
    pub fn is_missing_bucket(&self) -> bool {
        self.code() == Some("NoSuchBucket")
            || (self.op == Op::HeadBucket && self.status() == Some(404))
    }

    /// The object does not exist (and the bucket does).
    pub fn is_not_found(&self) -> bool {
        self.status() == Some(404) && !self.is_missing_bucket()
    }

    /// A condition of the request (`If-None-Match: *`) did not hold.
    pub fn is_precondition_failed(&self) -> bool {
        self.status() == Some(412)
    }

    /// No answer came (refused, reset, timed out).
    pub fn is_transport(&self) -> bool {
        matches!(self.kind, ErrorKind::Transport(_))
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: ", self.op, self.url)?;
        match &self.kind {
            ErrorKind::Status {
                status,
                code,
                message,
            } => {
                write!(f, "HTTP {status}")?;
                if let Some(c) = code {
                    write!(f, " {c}")?;
                }
                if let Some(m) = message.as_deref().filter(|m| !m.is_empty()) {
                    write!(f, ": {m}")?;
                }
            }
            ErrorKind::Transport(m) => write!(f, "no answer: {m}")?,
            ErrorKind::Protocol(m) => write!(f, "{m}")?,
        }
        if self.attempts > 1 {
            write!(f, " (after {} attempts)", self.attempts)?;
        }
        if let Some(h) = &self.hint {
            write!(f, "; {h}")?;
        }
        Ok(())
    }
}

/// The store's `<Code>` and `<Message>` from an S3 error body, if it has
/// them. S3 error bodies are flat, so a search for the two elements is
/// enough and survives namespaces and extra fields.
pub(crate) fn parse_error_body(body: &[u8]) -> (Option<String>, Option<String>) {
    let text = String::from_utf8_lossy(body);
    (element(&text, "Code"), element(&text, "Message"))
}

/// The text of the first `<NAME>…</NAME>` in `xml`, with the five XML
/// entities decoded.
pub(crate) fn element(xml: &str, name: &str) -> Option<String> {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let start = xml.find(&open)? + open.len();
    let len = xml[start..].find(&close)?;
    Some(unescape(xml[start..start + len].trim()))
}

fn unescape(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// The code a bodiless error answer (HEAD) stands for.
pub(crate) fn code_of_status(status: u16) -> Option<&'static str> {
    Some(match status {
        400 => "BadRequest",
        403 => "Forbidden",
        404 => "NotFound",
        412 => "PreconditionFailed",
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(op: Op, status: u16, code: &str) -> Failure {
        Failure {
            op,
            url: "s3://b/k".into(),
            kind: ErrorKind::Status {
                status,
                code: Some(code.into()),
                message: Some("msg".into()),
            },
            attempts: 1,
            retries: Retries::default(),
            hint: None,
        }
    }

    #[test]
    fn says_op_url_status_code_and_attempts() {
        let mut e = status(Op::Get, 503, "SlowDown");
        e.attempts = 4;
        assert_eq!(
            e.to_string(),
            "GET s3://b/k: HTTP 503 SlowDown: msg (after 4 attempts)"
        );
        let e = status(Op::Put, 403, "SignatureDoesNotMatch");
        assert!(e.is_auth() && !e.is_missing_bucket());
        let e = status(Op::Put, 404, "NoSuchBucket");
        assert!(e.is_missing_bucket() && !e.is_not_found());
        let e = status(Op::Head, 404, "NotFound");
        assert!(e.is_not_found());
        let e = status(Op::HeadBucket, 404, "NotFound");
        assert!(e.is_missing_bucket());
    }

    #[test]
    fn reads_error_bodies() {
        let body = b"<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code>\
            <Message>a &lt;b&gt; &amp; c</Message><Key>k</Key></Error>";
        let (c, m) = parse_error_body(body);
        assert_eq!(c.as_deref(), Some("NoSuchKey"));
        assert_eq!(m.as_deref(), Some("a <b> & c"));
        assert_eq!(parse_error_body(b"garbage"), (None, None));
    }
}
