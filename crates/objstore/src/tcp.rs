//! The client's TCP connections, made here rather than by ureq's default
//! connector so that the client acknowledges what it receives at once.
//!
//! Why: a server that writes an answer's body in pieces without
//! `TCP_NODELAY` (s3s-fs does) holds the body's last, short segment back
//! (Nagle) until its earlier segments are acknowledged, and Linux delays
//! an acknowledgement of a single full segment by up to 40 ms. A ranged
//! GET of 256 KiB then waited 40 ms for its last bytes (strace: the last
//! `recvfrom` of every answer blocked 42–46 ms; docs/s3.md). The client's
//! own `TCP_NODELAY` does not help: it is the server's segment that
//! waits. So before each blocking read the connection sets
//! `TCP_QUICKACK`, which sends an acknowledgement still owed right away
//! (the kernel clears the flag again by itself, hence every read).
//!
//! The chain is ureq's own otherwise: a CONNECT proxy, then this TCP
//! connection, then rustls for HTTPS.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Duration;

use ureq::unversioned::transport::{
    Buffers, ConnectProxyConnector, ConnectionDetails, Connector, Either, LazyBuffers, NextTimeout,
    RustlsConnector, ShutdownHandle, Transport,
};

/// The connector chain of every agent: CONNECT proxy, [`QuickAckTcp`],
/// rustls.
pub(crate) fn connector(connect_timeout: Duration) -> impl Connector {
    ().chain(ConnectProxyConnector::default())
        .chain(QuickAckTcp { connect_timeout })
        .chain(RustlsConnector::default())
}

/// Opens the TCP connection (unless a proxy connector already did).
#[derive(Debug)]
pub(crate) struct QuickAckTcp {
    connect_timeout: Duration,
}

impl<In: Transport> Connector<In> for QuickAckTcp {
    type Out = Either<In, QuickAck>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        if let Some(c) = chained {
            return Ok(Some(Either::A(c)));
        }
        let mut last = None;
        for addr in &details.addrs {
            match TcpStream::connect_timeout(addr, self.connect_timeout) {
                Ok(stream) => return self.wrap(details, stream).map(|t| Some(Either::B(t))),
                Err(e) => last = Some(e),
            }
        }
        Err(match last {
            Some(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                ureq::Error::Timeout(ureq::Timeout::Connect)
            }
            Some(e) => e.into(),
            None => ureq::Error::ConnectionFailed,
        })
    }
}

impl QuickAckTcp {
    fn wrap(
        &self,
        details: &ConnectionDetails,
        stream: TcpStream,
    ) -> Result<QuickAck, ureq::Error> {
        if details.config.no_delay() {
            stream.set_nodelay(true)?;
        }
        let stream = Arc::new(Sock(stream));
        (details.register_shutdown)(Arc::downgrade(&stream) as _)?;
        Ok(QuickAck {
            stream,
            buffers: LazyBuffers::new(
                details.config.input_buffer_size(),
                details.config.output_buffer_size(),
            ),
            timeouts: [None, None],
        })
    }
}

/// The connection's socket, shared (weakly) with the agent so that its
/// shutdown can interrupt a blocked read.
#[derive(Debug)]
struct Sock(TcpStream);

impl ShutdownHandle for Sock {
    fn shutdown(&self) {
        let _ = self.0.shutdown(Shutdown::Both);
    }
}

impl Sock {
    /// Sends an acknowledgement the kernel is holding back, now. A
    /// failure is ignored: the read goes on, only slower.
    fn quick_ack(&self) {
        let one: libc::c_int = 1;
        // SAFETY: the descriptor is open for as long as `self.0` lives,
        // and the option's value is a c_int of the size given.
        unsafe {
            libc::setsockopt(
                self.0.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_QUICKACK,
                (&one as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
    }
}

/// A TCP connection that acknowledges promptly before each read.
#[derive(Debug)]
pub(crate) struct QuickAck {
    stream: Arc<Sock>,
    buffers: LazyBuffers,
    /// The socket's read and write timeouts as last set (a syscall only
    /// when one changes).
    timeouts: [Option<Duration>; 2],
}

impl QuickAck {
    /// Sets the read (`which` 0) or write (1) timeout if it changed.
    fn set_timeout(&mut self, which: usize, t: NextTimeout) -> io::Result<()> {
        let d = limit(t);
        if self.timeouts[which] != d {
            let s = &self.stream.0;
            match which {
                0 => s.set_read_timeout(d)?,
                _ => s.set_write_timeout(d)?,
            }
            self.timeouts[which] = d;
        }
        Ok(())
    }
}

/// A timeout's duration for a socket option (`None`: wait for ever).
fn limit(t: NextTimeout) -> Option<Duration> {
    t.not_zero().map(|d| *d)
}

/// An I/O error as ureq reports it: a socket timeout is the timeout's.
fn io_error(e: io::Error, t: NextTimeout) -> ureq::Error {
    match e.kind() {
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => ureq::Error::Timeout(t.reason),
        _ => e.into(),
    }
}

impl Transport for QuickAck {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        let t = timeout.for_write();
        self.set_timeout(1, t)?;
        let mut s = &self.stream.0;
        s.write_all(&self.buffers.output()[..amount])
            .map_err(|e| io_error(e, t))
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        let t = timeout.for_read();
        self.set_timeout(0, t)?;
        self.stream.quick_ack();
        let mut s = &self.stream.0;
        let n = loop {
            match s.read(self.buffers.input_append_buf()) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => break r.map_err(|e| io_error(e, t))?,
            }
        };
        self.buffers.input_appended(n);
        Ok(n > 0)
    }

    fn is_open(&mut self) -> bool {
        // Open and idle: nothing to read, and reading would block.
        let s = &self.stream.0;
        if s.set_nonblocking(true).is_err() {
            return false;
        }
        let idle = matches!((&mut &*s).read(&mut [0u8]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock);
        s.set_nonblocking(false).is_ok() && idle
    }
}
