//! The pump on Windows (docs/windows.md): the same loop as Unix's, over overlapped reads of the
//! two pipes, whose events are waited on together with the stop signal. stdout's reads go
//! through a buffer of the reader's own and are copied into the framer (the framer's buffer
//! moves as it grows, and the system may write an overlapped read's buffer until it finishes).

use std::fs::File;
use std::sync::Mutex;

use crate::transport::process::win32::{wait_any, PipeReader};
use crate::transport::process::Signal;
use crate::transport::{Framed, Framer, LineSink, PumpEnd, StderrRing, READ_SIZE};
use crate::wait::lock;

impl Framer {
    /// `data`, read elsewhere (Windows' overlapped reads land in a buffer of their own):
    /// appended without zeroing first, then handed over as `commit` does.
    pub fn commit_bytes(&mut self, data: &[u8], sink: &mut dyn LineSink) -> Framed {
        self.begin_read();
        self.buf.extend_from_slice(data);
        self.commit(data.len(), sink)
    }
}

/// Reads stdout and stderr until stdout closes, feeding frame lines to `sink` and stderr to
/// `ring` (the module's comment).
pub fn pump(
    stdout: File,
    stderr: File,
    sink: &mut dyn LineSink,
    ring: &Mutex<StderrRing>,
    max_frame: Option<usize>,
    stop: &Signal,
) -> PumpEnd {
    let (mut out, mut err) = match (PipeReader::new(stdout, READ_SIZE), PipeReader::new(stderr, 64 * 1024)) {
        (Ok(out), Ok(err)) => (out, err),
        (Err(e), _) | (_, Err(e)) => return PumpEnd::Io(e),
    };
    let mut framer = Framer::new(max_frame);
    let mut stderr_open = true;
    let end = loop {
        if let Err(e) = out.start() {
            break PumpEnd::Io(e);
        }
        if stderr_open && err.start().is_err() {
            stderr_open = false;
        }
        let waited = if stderr_open {
            wait_any(&[out.event(), err.event(), stop.raw()], None)
        } else {
            wait_any(&[out.event(), stop.raw()], None)
        };
        if let Err(e) = waited {
            break PumpEnd::Io(e);
        }
        if stderr_open {
            stderr_open = read_stderr(&mut err, ring);
        }
        if !out.ready() {
            if stop.is_set() {
                // The client tore the agent down and everything it wrote has been read.
                break PumpEnd::Stopped;
            }
            continue;
        }
        let data = match out.finish() {
            Ok(data) => data,
            Err(e) => break PumpEnd::Io(e),
        };
        if data.is_empty() {
            break PumpEnd::Eof { partial: framer.partial() };
        }
        match framer.commit_bytes(data, sink) {
            Framed::More => {}
            Framed::Stopped => break PumpEnd::Stopped,
            Framed::TooLong { limit } => break PumpEnd::FrameTooLong { limit },
        }
    };
    if stderr_open {
        read_stderr(&mut err, ring);
    }
    end
}

/// Feeds `ring` what stderr has now: every read that has finished, putting the next one in
/// flight each time. Returns false once stderr is closed.
fn read_stderr(err: &mut PipeReader, ring: &Mutex<StderrRing>) -> bool {
    while err.ready() {
        match err.finish() {
            Ok(data) if !data.is_empty() => lock(ring).feed(data),
            _ => {
                lock(ring).finish();
                return false;
            }
        }
        if err.start().is_err() {
            lock(ring).finish();
            return false;
        }
    }
    true
}

/// std's pipe, for the pump's tests: its read end is opened for overlapped I/O, as a child's is.
#[cfg(test)]
pub(in crate::transport) fn pipe() -> (File, File) {
    use std::os::windows::io::OwnedHandle;
    let (r, w) = std::io::pipe().unwrap();
    (File::from(OwnedHandle::from(r)), File::from(OwnedHandle::from(w)))
}
