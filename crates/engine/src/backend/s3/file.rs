//! An open object: an upload (the writes, in order, sent as one PUT at
//! close, or as the parts of a multipart upload completed at close) or a
//! download (a ranged GET per read, the first one without knowing the
//! size). It holds one pooled connection for its life.

use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

use objstore::{Upload, MAX_PARTS};

use super::{err, to_io, Lease, Shared, MIN_PART};
use crate::backend::{Create, DataFile, OpenHow};

/// An open object.
#[derive(Debug)]
pub struct S3File {
    key: String,
    how: OpenHow,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    conn: Lease,
    pos: u64,
    /// The object's size, once asked (a download).
    size: Option<u64>,
    /// The writes not sent yet: the next part, held until a further
    /// write shows it is not the last (or close sends it).
    pending: Vec<u8>,
    /// Where the next write must start (an upload is written in order).
    next: u64,
    upload: Option<Upload>,
    /// The upload was completed (or failed): nothing to abort.
    done: bool,
}

impl S3File {
    /// Opens `key` as `how` says: a write is an upload (an exclusive one
    /// refused where the key is taken, a `Create::No` one where it is
    /// missing); a read asks nothing until it reads.
    pub(crate) fn open(shared: &Arc<Shared>, key: String, how: OpenHow) -> io::Result<S3File> {
        if how.direct || how.append {
            return Err(err(libc::EOPNOTSUPP));
        }
        let mut conn = shared.lease();
        let mut size = None;
        if how.write && how.create != Create::IfMissing {
            let exists = conn.head(&key).map_err(to_io)?.value;
            match (how.create, exists) {
                (Create::Exclusive, Some(_)) => return Err(err(libc::EEXIST)),
                (Create::No, None) => return Err(err(libc::ENOENT)),
                (_, e) => size = e.map(|i| i.size),
            }
        }
        Ok(S3File {
            key,
            how,
            state: Mutex::new(State {
                conn,
                pos: 0,
                size: if how.write { Some(0) } else { size },
                pending: Vec::new(),
                next: 0,
                upload: None,
                done: false,
            }),
        })
    }

    fn state(&self) -> io::Result<MutexGuard<'_, State>> {
        self.state
            .lock()
            .map_err(|_| io::Error::other("a poisoned object handle"))
    }

    /// Sends the held write as the next part (starting the upload).
    fn send_part(&self, st: &mut State) -> io::Result<()> {
        if (st.pending.len() as u64) < MIN_PART {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{}: a multipart part of {} bytes: S3 takes parts of at least 5 MiB but \
                     the last (use --xfer 5m or more)",
                    self.key,
                    st.pending.len()
                ),
            ));
        }
        if st.upload.is_none() {
            st.upload = Some(st.conn.create_upload(&self.key).map_err(to_io)?.value);
        }
        let State {
            conn,
            upload,
            pending,
            ..
        } = st;
        let up = upload.as_mut().expect("an upload");
        if up.etags.len() >= MAX_PARTS {
            return Err(err(libc::EFBIG));
        }
        conn.put_part(up, pending).map_err(to_io)?;
        pending.clear();
        Ok(())
    }

    /// Completes the upload: the held write as its last part, or the
    /// whole object as one PUT.
    fn finish(&self, st: &mut State) -> io::Result<()> {
        st.done = true;
        let State {
            conn,
            upload,
            pending,
            ..
        } = st;
        match upload.as_mut() {
            None => conn.put(&self.key, pending).map_err(to_io).map(drop),
            Some(up) => {
                let r = conn
                    .put_part(up, pending)
                    .and_then(|_| conn.complete_upload(up));
                if r.is_err() {
                    let _ = conn.abort_upload(up);
                }
                r.map_err(to_io).map(drop)
            }
        }
    }
}

impl DataFile for S3File {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let pos = self.state()?.pos;
        let n = self.read_at(buf, pos)?;
        self.state()?.pos += n as u64;
        Ok(n)
    }
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let pos = self.state()?.pos;
        let n = self.write_at(buf, pos)?;
        self.state()?.pos += n as u64;
        Ok(n)
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        if !self.how.read || self.how.write {
            return Err(err(libc::EBADF));
        }
        let mut st = self.state()?;
        if buf.is_empty() {
            return Ok(0);
        }
        let Some(size) = st.size else {
            // The first read asks for its range without a HEAD first:
            // the answer says how large the object is.
            let got = st
                .conn
                .get_upto(&self.key, offset, buf)
                .map_err(to_io)?
                .value;
            st.size = got.size;
            return Ok(got.len);
        };
        let len = (buf.len() as u64).min(size.saturating_sub(offset));
        if len == 0 {
            return Ok(0);
        }
        let got = st
            .conn
            .get(&self.key, Some((offset, len)), &mut buf[..len as usize]);
        Ok(got.map_err(to_io)?.value)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        if !self.how.write {
            return Err(err(libc::EBADF));
        }
        let mut st = self.state()?;
        if offset != st.next || st.done {
            // An object is uploaded whole and in order.
            return Err(err(libc::ESPIPE));
        }
        // Each write of a data phase (--xfer bytes, at least 5 MiB when
        // there are several: the capabilities see to it) is a part;
        // smaller writes (a metadata phase's records) gather into one.
        if st.pending.len() as u64 >= MIN_PART {
            self.send_part(&mut st)?;
        }
        st.pending.extend_from_slice(buf);
        st.next += buf.len() as u64;
        st.size = Some(st.next);
        Ok(buf.len())
    }
    fn sync(&self) -> io::Result<()> {
        // An object is stable once its upload completes (at close).
        Ok(())
    }
    fn allocate(&self, _len: u64) -> io::Result<()> {
        Err(err(libc::EOPNOTSUPP))
    }
    fn size(&self) -> io::Result<u64> {
        let mut st = self.state()?;
        if let Some(s) = st.size {
            return Ok(s);
        }
        let info = st.conn.head(&self.key).map_err(to_io)?.value;
        let s = info.ok_or_else(|| err(libc::ENOENT))?.size;
        st.size = Some(s);
        Ok(s)
    }
    fn links(&self) -> io::Result<u64> {
        Ok(1)
    }
    fn close(self) -> io::Result<()> {
        if !self.how.write {
            return Ok(());
        }
        let mut st = self.state()?;
        self.finish(&mut st)
    }
}

impl Drop for S3File {
    fn drop(&mut self) {
        // An upload cut short (an error, a stop) leaves no parts behind.
        if let Ok(st) = self.state.get_mut() {
            if let (Some(up), false) = (st.upload.as_ref(), st.done) {
                let _ = st.conn.abort_upload(up);
            }
        }
    }
}
