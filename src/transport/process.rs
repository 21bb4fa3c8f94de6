//! The agent process: what to run, how it ended, its pipes; spawning, waiting, teardown and
//! the wake-up signals are per platform (`unix`: Linux and macOS; `windows`: the port of
//! issue 25, not done yet — docs/windows.md).

use std::fs::File;
use std::path::PathBuf;

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub mod windows_path;
#[cfg(windows)]
pub use windows::*;

/// What to run and how.
#[derive(Clone, Debug, Default)]
pub struct SpawnSpec {
    pub argv: Vec<String>,
    pub cwd: Option<PathBuf>,
    pub env: Vec<(String, String)>,
    pub inherit_env: bool,
}

/// How the agent ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(c) => write!(f, "exited with code {c}"),
            Exit::Signal(s) => write!(f, "was killed by signal {s}"),
        }
    }
}

/// The three pipe ends the client keeps (all non-blocking, close-on-exec).
pub struct Pipes {
    pub stdin: File,
    pub stdout: File,
    pub stderr: File,
}

/// What a short-lived command wrote and how it ended (`run_to_end`).
pub struct Output {
    pub exit: Exit,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}
