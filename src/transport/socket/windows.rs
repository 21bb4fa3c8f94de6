//! The bridge's sockets on Windows: TCP only (docs/windows.md, the tool bridge). The listener's
//! "can accept" and each connection's reads are events, waited on together with the stop
//! signal: Windows does not wake a read blocked in another thread when its socket is shut down.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::windows::io::AsRawSocket;
use std::sync::Arc;
use std::time::Duration;

use crate::transport::process::win32::{self, clear_socket_events, signal_on_accept, wait_any, Event};
use crate::transport::process::Signal;

pub struct Listener(TcpListener);

impl From<TcpListener> for Listener {
    fn from(l: TcpListener) -> Listener {
        Listener(l)
    }
}

impl Listener {
    /// Waits for a connection (true) or the stop signal (false); an error when the wait could
    /// not be set up or failed. The listener's "can accept" becomes an event (which also makes
    /// it non-blocking; `accept_waiting` undoes that for each connection).
    pub(super) fn wait_for_connection(&self, stop: &Signal) -> io::Result<bool> {
        let acceptable = Event::new()?;
        signal_on_accept(self.0.as_raw_socket() as usize, &acceptable)?;
        Ok(wait_any(&[acceptable.raw(), stop.raw()], None)? == Some(0) && !stop.is_set())
    }

    /// The connection `wait_for_connection` saw. It inherits the listener's event selection and
    /// non-blocking mode; its reader blocks, so both are undone.
    pub(super) fn accept_waiting(&self) -> io::Result<Stream> {
        let (s, _) = self.0.accept()?;
        clear_socket_events(s.as_raw_socket() as usize)?;
        s.set_nonblocking(false)?;
        Ok(Stream(s))
    }
}

pub struct Stream(TcpStream);

impl Stream {
    pub fn set_write_timeout(&self, t: Duration) {
        // A stream that cannot take a timeout (it never fails for sockets) writes without one.
        let _ = self.0.set_write_timeout(Some(t));
    }

    pub fn shutdown(&self) {
        let _ = self.0.shutdown(Shutdown::Both);
    }

    /// The connection's reading side, which `stop` ends: `shutdown` does not wake a read
    /// blocked in another thread here, as it does on Unix.
    pub fn reader(&self, stop: &Arc<Signal>) -> io::Result<impl Read + Send> {
        StoppableRead::new(self.0.try_clone()?, stop.clone())
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A connection's reading side that a stop signal ends: a blocked read returns end of stream
/// once `stop` is set (the tool bridge's readers, woken at close). Windows does not wake a read
/// blocked in another thread when the socket is shut down, as Unix does, so the read is an
/// overlapped one waited on together with `stop`.
struct StoppableRead {
    reader: win32::OverlappedReader<TcpStream>,
    stop: Arc<Signal>,
    /// What the last read brought beyond what its caller took: `reader`'s buffer from `at`.
    at: usize,
    left: usize,
}

impl StoppableRead {
    fn new(stream: TcpStream, stop: Arc<Signal>) -> io::Result<Self> {
        Ok(StoppableRead { reader: win32::OverlappedReader::socket(stream, 64 * 1024)?, stop, at: 0, left: 0 })
    }
}

impl Read for StoppableRead {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            self.reader.start()?;
            wait_any(&[self.reader.event(), self.stop.raw()], None)?;
            if !self.reader.ready() {
                return Ok(0); // stopped: end of stream (the read in flight is cancelled on drop)
            }
            self.at = 0;
            self.left = self.reader.finish()?.len();
            if self.left == 0 {
                return Ok(0);
            }
        }
        let data = self.reader.filled(self.at, self.left);
        let n = data.len().min(out.len());
        out[..n].copy_from_slice(&data[..n]);
        self.at += n;
        self.left -= n;
        Ok(n)
    }
}
