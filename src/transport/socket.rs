//! The tool bridge's sockets (the bridge layer serves them): a listener whose accept also waits
//! on the bridge's stop signal, and the connections it accepts — replies written to them from
//! any thread, each read by a reader that the bridge's close ends. TCP everywhere, and a Unix
//! socket on Unix (Windows' bridge is TCP only: docs/windows.md, the tool bridge). Also here:
//! the sweep of bridge directories whose process died without removing them. Per platform:
//! `socket/unix.rs` (poll(2)) and `socket/windows.rs` (events and overlapped reads, over
//! `process::win32`).

use std::io;

use super::process::Signal;

// This target's half (src/lib.rs refuses targets that are neither).
#[cfg_attr(unix, path = "socket/unix.rs")]
#[cfg_attr(windows, path = "socket/windows.rs")]
mod platform;
pub use platform::*;

impl Listener {
    /// Waits for a connection or the stop signal: the connection accepted (an error loses that
    /// one connection, not the listener), or None once `stop` is set or the wait itself failed.
    pub fn accept(&self, stop: &Signal) -> Option<io::Result<Stream>> {
        self.wait_for_connection(stop).then(|| self.accept_waiting())
    }
}
