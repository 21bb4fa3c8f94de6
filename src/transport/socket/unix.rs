//! The bridge's sockets on Unix: a Unix socket or TCP, the listener polled together with the
//! stop signal; a connection's blocked read is ended by shutting the socket down.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::transport::process::{poll_any_readable, poll_readable, Signal};

pub enum Listener {
    Unix(UnixListener),
    Tcp(TcpListener),
}

impl From<TcpListener> for Listener {
    fn from(l: TcpListener) -> Listener {
        Listener::Tcp(l)
    }
}

impl Listener {
    /// A Unix socket bound at `path` (whose mode the caller narrows).
    pub fn bind_unix(path: &Path) -> io::Result<Listener> {
        UnixListener::bind(path).map(Listener::Unix)
    }

    /// Waits for a connection (true) or the stop signal (false); an error when poll failed.
    pub(super) fn wait_for_connection(&self, stop: &Signal) -> io::Result<bool> {
        let fd = match self {
            Listener::Unix(l) => l.as_raw_fd(),
            Listener::Tcp(l) => l.as_raw_fd(),
        };
        let stop = stop.raw();
        let ready = poll_any_readable(&[fd, stop], None)?;
        Ok(!(ready[1] || poll_readable(stop, Some(Duration::ZERO))))
    }

    /// The connection `wait_for_connection` saw.
    pub(super) fn accept_waiting(&self) -> io::Result<Stream> {
        match self {
            Listener::Unix(l) => l.accept().map(|(s, _)| Stream::Unix(s)),
            Listener::Tcp(l) => l.accept().map(|(s, _)| Stream::Tcp(s)),
        }
    }
}

pub enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    pub fn set_write_timeout(&self, t: Duration) {
        // A stream that cannot take a timeout (it never fails for sockets) writes without one.
        let _ = match self {
            Stream::Unix(s) => s.set_write_timeout(Some(t)),
            Stream::Tcp(s) => s.set_write_timeout(Some(t)),
        };
    }

    pub fn shutdown(&self) {
        let _ = match self {
            Stream::Unix(s) => s.shutdown(Shutdown::Both),
            Stream::Tcp(s) => s.shutdown(Shutdown::Both),
        };
    }

    /// The connection's reading side: a clone of the socket. `shutdown`, from any thread, ends
    /// a read blocked in it, so `_stop` is not needed here.
    pub fn reader(&self, _stop: &Arc<Signal>) -> io::Result<impl Read + Send> {
        Ok(match self {
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
        })
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
