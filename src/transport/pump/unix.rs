//! The pump on Unix: poll(2) on stdout, stderr and the stop signal; stdout read(2) straight
//! into the framer's spare capacity.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Mutex;

use crate::transport::process::Signal;
use crate::transport::{Framed, Framer, LineSink, PumpEnd, StderrRing};
use crate::wait::lock;

impl Framer {
    /// One read(2) of `fd` into the buffer's spare capacity, not zeroed first: pages of the
    /// buffer the agent's output never reached are never touched, so an idle client holds
    /// none of them (issue 24: ~125 KiB of each client's memory was a zeroed read buffer).
    /// Follow with `commit` when it returned n > 0.
    pub fn read_from(&mut self, fd: RawFd) -> io::Result<usize> {
        let room = self.begin_read();
        self.buf.reserve(room);
        let spare = self.buf.spare_capacity_mut();
        // SAFETY: read(2) writes at most `room` bytes to the spare capacity, which `reserve`
        // made at least that long; the buffer stays valid and unaliased for the call.
        let n = unsafe { libc::read(fd, spare.as_mut_ptr().cast(), room) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let n = n as usize;
        // SAFETY: the kernel initialised exactly the n bytes after the old length.
        unsafe { self.buf.set_len(self.filled + n) };
        Ok(n)
    }
}

/// Reads stdout and stderr until stdout closes, feeding frame lines to `sink` and stderr to
/// `ring` (the module's comment).
pub fn pump(
    stdout: File,
    mut stderr: File,
    sink: &mut dyn LineSink,
    ring: &Mutex<StderrRing>,
    max_frame: Option<usize>,
    stop: &Signal,
) -> PumpEnd {
    let stop = stop.raw();
    let mut framer = Framer::new(max_frame);
    let mut stderr_open = true;
    let mut errbuf = vec![0u8; 64 * 1024];
    let end = loop {
        let mut fds = [
            libc::pollfd { fd: stdout.as_raw_fd(), events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: if stderr_open { stderr.as_raw_fd() } else { -1 }, events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: stop, events: libc::POLLIN, revents: 0 },
        ];
        // SAFETY: three valid pollfds (fd -1 is ignored by poll).
        let r = unsafe { libc::poll(fds.as_mut_ptr(), 3, -1) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            break PumpEnd::Io(e);
        }
        if stderr_open && fds[1].revents != 0 {
            stderr_open = drain_stderr(&mut stderr, &mut errbuf, ring);
        }
        if fds[2].revents != 0 && fds[0].revents == 0 {
            // The client tore the agent down and everything it wrote has been read.
            break PumpEnd::Stopped;
        }
        if fds[0].revents == 0 {
            continue;
        }
        let n = match framer.read_from(stdout.as_raw_fd()) {
            Ok(n) => n,
            Err(e) => match e.kind() {
                io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock => continue,
                _ => break PumpEnd::Io(e),
            },
        };
        if n == 0 {
            break PumpEnd::Eof { partial: framer.partial() };
        }
        match framer.commit(n, sink) {
            Framed::More => {}
            Framed::Stopped => break PumpEnd::Stopped,
            Framed::TooLong { limit } => break PumpEnd::FrameTooLong { limit },
        }
    };
    finish(end, &mut stderr, &mut errbuf, ring, stderr_open)
}

fn finish(end: PumpEnd, stderr: &mut File, errbuf: &mut [u8], ring: &Mutex<StderrRing>, open: bool) -> PumpEnd {
    if open {
        drain_stderr(stderr, errbuf, ring);
    }
    end
}

/// Reads what stderr has now. Returns false once it is closed.
fn drain_stderr(stderr: &mut File, buf: &mut [u8], ring: &Mutex<StderrRing>) -> bool {
    loop {
        match stderr.read(buf) {
            Ok(0) => {
                lock(ring).finish();
                return false;
            }
            Ok(n) => lock(ring).feed(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
            Err(_) => return false,
        }
    }
}

/// A pipe for the pump's tests: (read end, write end). (libc's: std's is newer than the
/// crate's minimum Rust.)
#[cfg(test)]
pub(in crate::transport) fn pipe() -> (File, File) {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: pipe(2) writes two descriptors into the array it is given, which holds two.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: two new descriptors nothing else owns; each File closes its own.
    unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::os::fd::AsRawFd;

    use crate::transport::tests::Lines;
    use crate::transport::{Framed, Framer};

    #[test]
    fn read_from_appends_what_the_pipe_holds_to_a_frame_still_arriving() {
        // The pump's read(2) into spare capacity: what the pipe held, and nothing more, after
        // the start of a frame an earlier read left behind.
        let mut framer = Framer::new(None);
        let mut sink = Lines(Vec::new());
        let start = b"{\"pad\":\"";
        let buf = framer.read_buf();
        buf[..start.len()].copy_from_slice(start);
        assert_eq!(framer.commit(start.len(), &mut sink), Framed::More);
        let (r, mut w) = super::pipe();
        let rest = [[b'x'; 1000].as_slice(), b"\"}\n{\"next\":"].concat();
        w.write_all(&rest).unwrap();
        let n = framer.read_from(r.as_raw_fd()).unwrap();
        assert_eq!(n, rest.len());
        assert_eq!(framer.commit(n, &mut sink), Framed::More);
        assert_eq!(sink.0, vec![[start.as_slice(), &[b'x'; 1000], b"\"}"].concat()]);
        assert_eq!(framer.partial(), b"{\"next\":".len());
    }
}
