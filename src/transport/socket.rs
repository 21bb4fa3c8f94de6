//! The tool bridge's sockets (the bridge layer serves them): a listener whose accept also waits
//! on the bridge's stop signal, and the connections it accepts — replies written to them from
//! any thread, each read by a reader that the bridge's close ends. TCP everywhere, and a Unix
//! socket on Unix (Windows' bridge is TCP only: docs/windows.md, the tool bridge). Also here:
//! the sweep of bridge directories whose process died without removing them. Per platform:
//! `socket/unix.rs` (poll(2)) and `socket/windows.rs` (events and overlapped reads, over
//! `process::win32`).

use std::fs;
use std::io;
use std::path::Path;

use super::process::{self, Signal};
use crate::env;

// This target's half (src/lib.rs refuses targets that are neither).
#[cfg_attr(unix, path = "socket/unix.rs")]
#[cfg_attr(windows, path = "socket/windows.rs")]
mod platform;
pub use platform::*;

/// Removes the bridge directories a process of this user left behind when it died without
/// closing its clients: `<prefix>-…` beside `ours`, whose `owner_file` names a process that
/// has ended. `ours`: a directory just made, owned by this user. Directories of other users,
/// without an owner file, or whose owner may still run are left alone (a reused process id
/// keeps a directory until that process ends too).
pub fn sweep_stale_dirs(ours: &Path, prefix: &str, owner_file: &str) {
    let (Some(base), Ok(me)) = (ours.parent(), env::owner_of(ours)) else { return };
    let Ok(entries) = fs::read_dir(base) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let stale = path != ours
            && entry.file_name().to_string_lossy().starts_with(&format!("{prefix}-"))
            && fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir())
            && env::owner_of(&path).is_ok_and(|owner| owner == me)
            && fs::read_to_string(path.join(owner_file))
                .ok()
                .and_then(|t| t.trim().parse::<u32>().ok())
                .is_some_and(process::has_ended);
        if stale {
            let _ = fs::remove_dir_all(&path);
        }
    }
}

impl Listener {
    /// Waits for a connection or the stop signal: `Some` with the connection accepted (or the
    /// error that lost that one connection, not the listener), `None` once `stop` is set. An
    /// error when the wait itself failed: no more connections can be waited for.
    pub fn accept(&self, stop: &Signal) -> io::Result<Option<io::Result<Stream>>> {
        Ok(self.wait_for_connection(stop)?.then(|| self.accept_waiting()))
    }
}
