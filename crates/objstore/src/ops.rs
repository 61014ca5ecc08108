//! The requests ioscale makes, one method each on a worker's `Conn`:
//! PUT (plain, conditional, multipart), GET (whole or ranged, into the
//! caller's buffer), HEAD, LIST (one page), DELETE and COPY. Each builds
//! its signed URL with rusty-s3 and goes through the one exchange.

use std::io::Read;

use rusty_s3::S3Action;
use ureq::http::{Method, Response};
use ureq::Body;

use crate::client::{Call, Conn, Done, Fail, EXPIRES};
use crate::error::{element, Op};

/// An object's size and entity tag, from a HEAD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectInfo {
    /// The size in bytes.
    pub size: u64,
    /// The entity tag, as the store gave it (with its quotes).
    pub etag: Option<String>,
    /// The last modification, in seconds since the epoch, from the
    /// answer's `Last-Modified` (`None`: the store sent none, or one
    /// that is no HTTP date).
    pub modified: Option<i64>,
}

/// What a [`Conn::get_upto`] read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ranged {
    /// The bytes read into the buffer (0: the offset is at or past the
    /// end of the object).
    pub len: usize,
    /// The object's size, where the answer said it (`Content-Range`).
    pub size: Option<u64>,
}

/// An object of a LIST page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// The key.
    pub key: String,
    /// The size in bytes.
    pub size: u64,
    /// The entity tag.
    pub etag: Option<String>,
}

/// One page of a LIST.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListPage {
    /// The objects of the page, in key order.
    pub objects: Vec<Listed>,
    /// The common prefixes (with a delimiter), each ending with it.
    pub prefixes: Vec<String>,
    /// The token of the next page, if the listing goes on.
    pub next: Option<String>,
}

/// A multipart upload in progress: its key, its id and the entity tags
/// of the parts sent so far, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upload {
    /// The key the upload makes.
    pub key: String,
    /// The store's id of the upload.
    pub id: String,
    /// The parts' entity tags; part n is `etags[n - 1]`.
    pub etags: Vec<String>,
}

/// The most parts a multipart upload can have.
pub const MAX_PARTS: usize = 10_000;

/// The largest LIST answer read (a page of 1000 keys of 1 KiB is about
/// 1.3 MB of XML).
const LIST_BODY_LIMIT: u64 = 64 * 1024 * 1024;

const NONE_OK: &[u16] = &[];

impl Conn {
    /// PUTs `body` as `key`.
    pub fn put(&mut self, key: &str, body: &[u8]) -> Result<Done<()>, crate::Error> {
        let action = self.shared.bucket.put_object(Some(&self.shared.creds), key);
        let call = Call {
            op: Op::Put,
            key,
            method: Method::PUT,
            headers: &[],
            body: Some(body),
            also_ok: NONE_OK,
        };
        self.io
            .exchange(&self.shared, &call, || action.sign(EXPIRES), |_| Ok(()))
    }

    /// PUTs `body` as `key` only if no object has that key
    /// (`If-None-Match: *`). Returns false when one had it (412). A store
    /// that ignores the condition overwrites: check with
    /// [`Conn::head`] where that matters.
    pub fn put_if_absent(&mut self, key: &str, body: &[u8]) -> Result<Done<bool>, crate::Error> {
        let action = self.shared.bucket.put_object(Some(&self.shared.creds), key);
        let call = Call {
            op: Op::Put,
            key,
            method: Method::PUT,
            headers: &[("if-none-match", "*")],
            body: Some(body),
            also_ok: &[412],
        };
        let made = |r: &mut Response<Body>| Ok(r.status().as_u16() != 412);
        self.io
            .exchange(&self.shared, &call, || action.sign(EXPIRES), made)
    }

    /// GETs `key` whole, or `range` = (offset, length) of it, into the
    /// start of `buf`; returns the bytes read. An object (or range) longer
    /// than `buf` is an error, and so is a ranged GET the store answered
    /// whole.
    pub fn get(
        &mut self,
        key: &str,
        range: Option<(u64, u64)>,
        buf: &mut [u8],
    ) -> Result<Done<usize>, crate::Error> {
        let action = self.shared.bucket.get_object(Some(&self.shared.creds), key);
        let range_value = match range {
            Some((off, len)) => Some(self.range_header(key, off, len)?),
            None => None,
        };
        let range_header;
        let headers: &[(&str, &str)] = match &range_value {
            Some(v) => {
                range_header = [("range", v.as_str())];
                &range_header
            }
            None => &[],
        };
        let call = Call {
            op: Op::Get,
            key,
            method: Method::GET,
            headers,
            body: None,
            also_ok: NONE_OK,
        };
        let fill = |r: &mut Response<Body>| {
            if range.is_some() && r.status().as_u16() != 206 {
                return Err(Fail::protocol(
                    "the store answered a ranged GET with the whole object",
                ));
            }
            read_into(r, buf)
        };
        self.io
            .exchange(&self.shared, &call, || action.sign(EXPIRES), fill)
    }

    /// GETs up to `buf.len()` bytes of `key` from `offset` without
    /// knowing its size first (no HEAD): a range that runs past the end
    /// reads what there is, one that starts at or past it reads nothing
    /// (416). The answer's `Content-Range` gives the object's size.
    pub fn get_upto(
        &mut self,
        key: &str,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<Done<Ranged>, crate::Error> {
        let action = self.shared.bucket.get_object(Some(&self.shared.creds), key);
        let range = self.range_header(key, offset, buf.len() as u64)?;
        let call = Call {
            op: Op::Get,
            key,
            method: Method::GET,
            headers: &[("range", range.as_str())],
            body: None,
            also_ok: &[416],
        };
        let fill = |r: &mut Response<Body>| {
            let size = header(r, "content-range").and_then(range_total);
            match r.status().as_u16() {
                416 => Ok(Ranged { len: 0, size }),
                206 => Ok(Ranged {
                    len: read_into(r, buf)?,
                    size,
                }),
                // The range ignored: the whole object, which must fit.
                _ if offset == 0 => {
                    let len = read_into(r, buf)?;
                    Ok(Ranged {
                        len,
                        size: Some(len as u64),
                    })
                }
                _ => Err(Fail::protocol(
                    "the store answered a ranged GET with the whole object",
                )),
            }
        };
        self.io
            .exchange(&self.shared, &call, || action.sign(EXPIRES), fill)
    }

    /// The `Range` header of `len` bytes at `off`.
    fn range_header(&self, key: &str, off: u64, len: u64) -> Result<String, crate::Error> {
        let last = len
            .checked_sub(1)
            .and_then(|l| off.checked_add(l))
            .ok_or_else(|| self.bad_range(key, off, len))?;
        Ok(format!("bytes={off}-{last}"))
    }

    fn bad_range(&self, key: &str, off: u64, len: u64) -> crate::Error {
        crate::error::Failure {
            op: Op::Get,
            url: format!("s3://{}/{key}", self.shared.bucket.name()),
            kind: crate::ErrorKind::Protocol(format!("no range of {len} bytes at offset {off}")),
            attempts: 0,
            retries: Default::default(),
            hint: None,
        }
        .into()
    }

    /// HEADs `key`: its size and entity tag, or `None` if there is no such
    /// object. (A HEAD answer has no body, so a missing bucket is a
    /// missing object here too: check the bucket with a LIST first.)
    pub fn head(&mut self, key: &str) -> Result<Done<Option<ObjectInfo>>, crate::Error> {
        let action = self
            .shared
            .bucket
            .head_object(Some(&self.shared.creds), key);
        let call = Call {
            op: Op::Head,
            key,
            method: Method::HEAD,
            headers: &[],
            body: None,
            also_ok: &[404],
        };
        let info = |r: &mut Response<Body>| {
            if r.status().as_u16() == 404 {
                return Ok(None);
            }
            let size = header(r, "content-length")
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| Fail::protocol("a HEAD answer without a Content-Length"))?;
            Ok(Some(ObjectInfo {
                size,
                etag: header(r, "etag").map(str::to_string),
                modified: header(r, "last-modified").and_then(crate::httpdate::parse),
            }))
        };
        self.io
            .exchange(&self.shared, &call, || action.sign(EXPIRES), info)
    }

    /// DELETEs `key` (S3 answers 204 whether or not it existed).
    pub fn delete(&mut self, key: &str) -> Result<Done<()>, crate::Error> {
        let action = self
            .shared
            .bucket
            .delete_object(Some(&self.shared.creds), key);
        let call = Call {
            op: Op::Delete,
            key,
            method: Method::DELETE,
            headers: &[],
            body: None,
            also_ok: NONE_OK,
        };
        self.io
            .exchange(&self.shared, &call, || action.sign(EXPIRES), |_| Ok(()))
    }

    /// Copies `src` to `dst` in the bucket, on the store's side (a PUT with
    /// `x-amz-copy-source`). A copy that fails after its 200 was sent
    /// (an error in the body) fails here too.
    pub fn copy(&mut self, src: &str, dst: &str) -> Result<Done<()>, crate::Error> {
        let source = format!("/{}/{}", self.shared.bucket.name(), encode_key(src));
        let mut action = self.shared.bucket.put_object(Some(&self.shared.creds), dst);
        action
            .headers_mut()
            .insert("x-amz-copy-source", source.as_str());
        let call = Call {
            op: Op::Copy,
            key: dst,
            method: Method::PUT,
            headers: &[("x-amz-copy-source", source.as_str())],
            body: None,
            also_ok: NONE_OK,
        };
        self.io.exchange(
            &self.shared,
            &call,
            || action.sign(EXPIRES),
            body_without_error,
        )
    }

    /// One page of the keys under `prefix` (after `token`, from the last
    /// page's `next`), at most `max_keys` (the store's default, 1000, when
    /// `None`); with a `delimiter`, keys beyond it are rolled up into
    /// `prefixes`.
    pub fn list(
        &mut self,
        prefix: &str,
        delimiter: Option<&str>,
        token: Option<&str>,
        max_keys: Option<usize>,
    ) -> Result<Done<ListPage>, crate::Error> {
        let mut action = self.shared.bucket.list_objects_v2(Some(&self.shared.creds));
        // Keys come back XML-escaped, not URL-encoded: s3s-fs echoes
        // `encoding-type=url` without encoding, and a `+` in a key then
        // came back as a space. ioscale's keys hold no character XML 1.0
        // cannot carry (a prefix with a control character is refused).
        action.query_mut().remove("encoding-type");
        if !prefix.is_empty() {
            action.with_prefix(prefix);
        }
        if let Some(d) = delimiter {
            action.with_delimiter(d);
        }
        if let Some(t) = token {
            action.with_continuation_token(t);
        }
        if let Some(n) = max_keys {
            action.with_max_keys(n);
        }
        let call = Call {
            op: Op::List,
            key: prefix,
            method: Method::GET,
            headers: &[],
            body: None,
            also_ok: NONE_OK,
        };
        self.io
            .exchange(&self.shared, &call, || action.sign(EXPIRES), parse_list)
    }

    /// Starts a multipart upload of `key`.
    pub fn create_upload(&mut self, key: &str) -> Result<Done<Upload>, crate::Error> {
        let action = self
            .shared
            .bucket
            .create_multipart_upload(Some(&self.shared.creds), key);
        let call = Call {
            op: Op::CreateUpload,
            key,
            method: Method::POST,
            headers: &[],
            body: Some(&[]),
            also_ok: NONE_OK,
        };
        let parse = |r: &mut Response<Body>| {
            let text = read_text(r, 1 << 20)?;
            let parsed = rusty_s3::actions::CreateMultipartUpload::parse_response(&text)
                .map_err(|e| Fail::protocol(format!("CreateMultipartUpload answer: {e}")))?;
            Ok(Upload {
                key: key.to_string(),
                id: parsed.upload_id().to_string(),
                etags: Vec::new(),
            })
        };
        self.io
            .exchange(&self.shared, &call, || action.sign(EXPIRES), parse)
    }

    /// Sends the next part of `upload`.
    pub fn put_part(&mut self, upload: &mut Upload, body: &[u8]) -> Result<Done<()>, crate::Error> {
        let n = upload.etags.len() + 1;
        let number = u16::try_from(n)
            .ok()
            .filter(|&n| usize::from(n) <= MAX_PARTS);
        let Some(number) = number else {
            return Err(crate::error::Failure {
                op: Op::PutPart,
                url: format!("s3://{}/{}", self.shared.bucket.name(), upload.key),
                kind: crate::ErrorKind::Protocol(format!(
                    "part {n}: S3 takes at most {MAX_PARTS} parts"
                )),
                attempts: 0,
                retries: Default::default(),
                hint: Some("use a larger --xfer".into()),
            }
            .into());
        };
        let action = self.shared.bucket.upload_part(
            Some(&self.shared.creds),
            &upload.key,
            number,
            &upload.id,
        );
        let call = Call {
            op: Op::PutPart,
            key: &upload.key,
            method: Method::PUT,
            headers: &[],
            body: Some(body),
            also_ok: NONE_OK,
        };
        let etag = |r: &mut Response<Body>| {
            header(r, "etag")
                .map(str::to_string)
                .ok_or_else(|| Fail::protocol("an UploadPart answer without an ETag"))
        };
        let done = self
            .io
            .exchange(&self.shared, &call, || action.sign(EXPIRES), etag)?;
        upload.etags.push(done.value);
        Ok(Done {
            value: (),
            timing: done.timing,
            retries: done.retries,
        })
    }

    /// Completes `upload`: the object appears with its parts in order.
    pub fn complete_upload(&mut self, upload: &Upload) -> Result<Done<()>, crate::Error> {
        let action = self.shared.bucket.complete_multipart_upload(
            Some(&self.shared.creds),
            &upload.key,
            &upload.id,
            upload.etags.iter().map(String::as_str),
        );
        let xml = action.clone().body();
        let call = Call {
            op: Op::CompleteUpload,
            key: &upload.key,
            method: Method::POST,
            headers: &[],
            body: Some(xml.as_bytes()),
            also_ok: NONE_OK,
        };
        self.io.exchange(
            &self.shared,
            &call,
            || action.sign(EXPIRES),
            body_without_error,
        )
    }

    /// Aborts `upload`: its parts are dropped.
    pub fn abort_upload(&mut self, upload: &Upload) -> Result<Done<()>, crate::Error> {
        let action = self.shared.bucket.abort_multipart_upload(
            Some(&self.shared.creds),
            &upload.key,
            &upload.id,
        );
        let call = Call {
            op: Op::AbortUpload,
            key: &upload.key,
            method: Method::DELETE,
            headers: &[],
            body: None,
            also_ok: NONE_OK,
        };
        self.io
            .exchange(&self.shared, &call, || action.sign(EXPIRES), |_| Ok(()))
    }

    /// PUTs `body` as `key` in a multipart upload of `part` bytes a part
    /// (the last one shorter), aborting the upload if a part fails.
    /// Returns the timing of every request, in order: the start, the
    /// parts, the completion.
    pub fn put_multipart(
        &mut self,
        key: &str,
        body: &[u8],
        part: usize,
    ) -> Result<Vec<Done<()>>, crate::Error> {
        let part = part.max(1);
        let started = self.create_upload(key)?;
        let mut upload = started.value;
        let mut done = vec![Done {
            value: (),
            timing: started.timing,
            retries: started.retries,
        }];
        for chunk in body.chunks(part) {
            match self.put_part(&mut upload, chunk) {
                Ok(d) => done.push(d),
                Err(e) => {
                    let _ = self.abort_upload(&upload);
                    return Err(e);
                }
            }
        }
        match self.complete_upload(&upload) {
            Ok(d) => done.push(d),
            Err(e) => {
                let _ = self.abort_upload(&upload);
                return Err(e);
            }
        }
        Ok(done)
    }
}

/// A header's value, if it is there and is text.
fn header<'r>(r: &'r Response<Body>, name: &str) -> Option<&'r str> {
    r.headers().get(name).and_then(|v| v.to_str().ok())
}

/// Reads an answer's body into the start of `buf`; a body longer than
/// `buf`, or a Content-Length that says so, is an error.
fn read_into(r: &mut Response<Body>, buf: &mut [u8]) -> Result<usize, Fail> {
    if let Some(len) = r.body().content_length() {
        if len > buf.len() as u64 {
            return Err(Fail::protocol(format!(
                "the answer is {len} bytes, more than the {} expected",
                buf.len()
            )));
        }
    }
    let mut reader = r.body_mut().as_reader();
    let mut n = 0;
    while n < buf.len() {
        match reader.read(&mut buf[n..]) {
            Ok(0) => return Ok(n),
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Fail::of_io(e)),
        }
    }
    let mut probe = [0u8; 1];
    match reader.read(&mut probe) {
        Ok(0) => Ok(n),
        Ok(_) => Err(Fail::protocol(format!(
            "the answer is longer than the {} bytes expected",
            buf.len()
        ))),
        Err(e) => Err(Fail::of_io(e)),
    }
}

/// The object's size from a `Content-Range` (`bytes 0-9/42`, or
/// `bytes */42` in a 416); `None` where it is `*` or unreadable.
fn range_total(v: &str) -> Option<u64> {
    v.strip_prefix("bytes ")?
        .rsplit_once('/')?
        .1
        .trim()
        .parse()
        .ok()
}

/// An answer's body as text, at most `limit` bytes.
fn read_text(r: &mut Response<Body>, limit: u64) -> Result<String, Fail> {
    let mut text = String::new();
    r.body_mut()
        .with_config()
        .limit(limit)
        .reader()
        .read_to_string(&mut text)
        .map_err(Fail::of_io)?;
    Ok(text)
}

/// Reads a 200 answer that may still carry an `<Error>` (a copy or a
/// completion that failed after the status was sent).
fn body_without_error(r: &mut Response<Body>) -> Result<(), Fail> {
    let text = read_text(r, 1 << 20)?;
    if text.contains("<Error>") {
        return Err(Fail::Status {
            status: r.status().as_u16(),
            code: element(&text, "Code"),
            message: element(&text, "Message"),
        });
    }
    Ok(())
}

fn parse_list(r: &mut Response<Body>) -> Result<ListPage, Fail> {
    let text = read_text(r, LIST_BODY_LIMIT)?;
    let parsed = rusty_s3::actions::ListObjectsV2::parse_response(&text)
        .map_err(|e| Fail::protocol(format!("ListObjectsV2 answer: {e}")))?;
    Ok(ListPage {
        objects: parsed
            .contents
            .into_iter()
            .map(|c| Listed {
                key: c.key,
                size: c.size.unwrap_or(0),
                etag: c.etag,
            })
            .collect(),
        prefixes: parsed
            .common_prefixes
            .into_iter()
            .map(|p| p.prefix)
            .collect(),
        next: parsed.next_continuation_token,
    })
}

/// A key percent-encoded for `x-amz-copy-source`: everything but the
/// unreserved characters and `/`.
fn encode_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for b in key.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{encode_key, range_total};

    #[test]
    fn content_range_totals() {
        assert_eq!(range_total("bytes 0-9/42"), Some(42));
        assert_eq!(range_total("bytes */42"), Some(42));
        assert_eq!(range_total("bytes 0-9/*"), None);
        assert_eq!(range_total("items 0-9/42"), None);
        assert_eq!(
            range_total("bytes 0-9/18446744073709551615"),
            Some(u64::MAX)
        );
    }

    #[test]
    fn copy_source_keys_are_encoded() {
        assert_eq!(encode_key("a/b c+d%é"), "a/b%20c%2Bd%25%C3%A9");
    }
}
