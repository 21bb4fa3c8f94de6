//! The agent process: what to run, how it ended, its pipes; spawning, waiting, teardown and
//! the wake-up signals are per platform (`process/unix.rs`: Linux and macOS;
//! `process/windows.rs`: the port of issue 25 — docs/windows.md — over the system calls
//! declared in `win32`).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

// This target's half (src/lib.rs refuses targets that are neither).
#[cfg_attr(unix, path = "process/unix.rs")]
#[cfg_attr(windows, path = "process/windows.rs")]
mod platform;
pub use platform::*;

#[cfg(windows)]
pub mod win32;
#[cfg(windows)]
pub mod windows_path;

/// What to run and how.
#[derive(Clone, Debug, Default)]
pub struct SpawnSpec {
    pub argv: Vec<String>,
    pub cwd: Option<PathBuf>,
    pub env: Vec<(String, String)>,
    pub inherit_env: bool,
}

impl SpawnSpec {
    /// A command running `exe` (no arguments yet: each platform adds its own) with this
    /// spec's environment and working directory, and three pipes.
    fn piped_command(&self, exe: &Path) -> Command {
        let mut cmd = Command::new(exe);
        if !self.inherit_env {
            cmd.env_clear();
        }
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        if let Some(cwd) = &self.cwd {
            cmd.current_dir(cwd);
        }
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        cmd
    }
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
            // Windows' exit codes are 32-bit, and the large ones are NTSTATUS values (a crash,
            // a terminated job), read as hex: 0xC0000005, not -1073741819.
            Exit::Code(c) if *c < 0 => write!(f, "exited with code 0x{:08X}", *c as u32),
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

#[cfg(test)]
mod tests {
    use super::Exit;

    #[test]
    fn exits_read_as_their_platform_writes_them() {
        assert_eq!(Exit::Code(3).to_string(), "exited with code 3");
        assert_eq!(Exit::Signal(9).to_string(), "was killed by signal 9");
        assert_eq!(Exit::Code(0xC000_013Au32 as i32).to_string(), "exited with code 0xC000013A");
    }

    #[test]
    fn a_process_has_ended_once_it_exited_and_not_while_it_runs() {
        assert!(!super::has_ended(std::process::id()), "this process");
        // The test binary itself, run to list its tests: it exits at once. Its handle (held by
        // `child` on Windows) keeps its id from being given to another process meanwhile.
        let exe = std::env::current_exe().unwrap();
        let mut child = std::process::Command::new(exe).arg("--list").stdout(std::process::Stdio::null()).spawn().unwrap();
        child.wait().unwrap();
        assert!(super::has_ended(child.id()), "a process that exited");
        // Ids that name no single process (0; on Unix the negative ones, process groups) are
        // never taken for an ended process.
        assert!(!super::has_ended(0));
        #[cfg(unix)]
        assert!(!super::has_ended(u32::MAX), "a negative pid_t names a process group");
    }
}
