//! The agent process on Windows (issue 25; docs/windows.md): the agent and everything it starts
//! run in a Job object that kills them all when it closes; our pipe ends are read and written
//! with overlapped I/O, waited on together with the client's signals, as poll(2) does on Unix.
//!
//! What differs from Unix, on purpose:
//! - **The tree.** A process group has no counterpart; the Job object (kill on close) is both
//!   the group and the orphan watchdog: when this process dies, the system closes the job's
//!   handle and ends every process in it. The agent is created suspended and joins the job
//!   before its first instruction, so nothing it starts can escape.
//! - **Stopping.** There is no SIGTERM for a program that has no console of ours (the agent
//!   runs without a console window, so that a desktop host does not flash one), and Node does
//!   not turn a Ctrl+Break into one either. Stopping is stdin EOF, the grace period (pi and omp
//!   end at end of input), then the job is terminated; `kill_grace` has nothing to wait for.
//!   A terminated agent reports `TERMINATED_EXIT_CODE`.
//! - **No reaping.** The process handle keeps the process object (and its id) alive.

use std::fs::File;
use std::io;
use std::os::windows::io::{AsRawHandle, OwnedHandle, RawHandle};
use std::os::windows::process::CommandExt;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::win32::{self, Event, Job, PipeReader};
use super::{windows_path, Exit, Output, Pipes, SpawnSpec};
use crate::wait::lock;

/// The exit code of an agent the job was terminated under: STATUS_CONTROL_C_EXIT, what Windows
/// reports for a console program ended by Ctrl+C or Ctrl+Break — the nearest thing to "killed
/// by a signal", and not a code an agent exits with by itself.
pub const TERMINATED_EXIT_CODE: u32 = 0xC000_013A;

const CREATE_SUSPENDED: u32 = 0x4;
const CREATE_NEW_PROCESS_GROUP: u32 = 0x200;
const CREATE_NO_WINDOW: u32 = 0x0800_0000;
/// CreateProcess's "Internal error." (os error 1359).
const ERROR_INTERNAL_ERROR: i32 = 1359;

pub use win32::process_has_ended as has_ended;

/// Bytes asked of one read of the agent's output by `run_to_end`.
const SHORT_READ: usize = 8 * 1024;

pub struct Process {
    pid: u32,
    handle: OwnedHandle,
    /// Closing it (dropping the Process, or this process dying) ends every process in it.
    job: Job,
    exit: Mutex<Option<Exit>>,
}

/// The file `spec` would run (for an npm shim the shim itself, so the version probe's cache
/// sees a reinstall): argv[0] found as Windows finds commands (`windows_path`).
pub fn program_path(spec: &SpawnSpec) -> io::Result<PathBuf> {
    windows_path::resolve(spec).map(|r| r.found)
}

pub fn spawn(spec: &SpawnSpec) -> io::Result<(Process, Pipes)> {
    let resolved = windows_path::resolve(spec)?;
    let exe = resolved.exe;
    let mut cmd = spec.piped_command(&exe);
    cmd.args(&resolved.prefix_args).args(&spec.argv[1..]);
    cmd.creation_flags(CREATE_SUSPENDED | CREATE_NEW_PROCESS_GROUP | console_flags());
    // Made first: an agent that cannot be put in a job is never started.
    let job = Job::new().map_err(|e| io::Error::new(e.kind(), format!("creating the agent's job object: {e}")))?;
    let mut child = match cmd.spawn() {
        // CreateProcess failing with ERROR_INTERNAL_ERROR is transient: Wine 8.0 answers so now
        // and then under load (docs/windows.md, a few times in some hundreds of runs, and once
        // in a CI run). The call failed, so there is no process to clean up: one more try.
        Err(e) if e.raw_os_error() == Some(ERROR_INTERNAL_ERROR) => cmd.spawn(),
        first => first,
    }
    .map_err(|e| io::Error::new(e.kind(), format!("failed to spawn {}: {e}", exe.display())))?;
    let pid = child.id();
    let joined = job.assign(child.as_raw_handle()).and_then(|()| win32::resume_threads(pid));
    if let Err(e) = joined {
        // Suspended, or in the job: either way nothing of it has run that could outlive this.
        let _ = child.kill();
        let _ = child.wait();
        return Err(io::Error::new(e.kind(), format!("starting {} in its job object: {e}", exe.display())));
    }
    let pipe = |p: Option<OwnedHandle>| File::from(p.expect("piped"));
    let stdin = pipe(child.stdin.take().map(OwnedHandle::from));
    let stdout = pipe(child.stdout.take().map(OwnedHandle::from));
    let stderr = pipe(child.stderr.take().map(OwnedHandle::from));
    let process = Process { pid, handle: OwnedHandle::from(child), job, exit: Mutex::new(None) };
    Ok((process, Pipes { stdin, stdout, stderr }))
}

/// A console program's agent shares its console (nothing new appears). A desktop program has
/// no console to share, and a console program started from it would get a new console window
/// (and so would each console program the agent runs): CREATE_NO_WINDOW gives it a console
/// without one. (Only then, and not always: under Wine the hidden console's host process
/// inherits the agent's pipe ends, so stdout's end is not seen until the agent exits.)
fn console_flags() -> u32 {
    if win32::has_console_window() {
        0
    } else {
        CREATE_NO_WINDOW
    }
}

/// Runs `spec` to its end with stdin at EOF, keeping up to `max` bytes of each output stream,
/// for at most `timeout`; past it the job is terminated and TimedOut returned. Used for
/// `--version`, which must never hang a start.
pub fn run_to_end(spec: &SpawnSpec, timeout: Duration, max: usize) -> io::Result<Output> {
    let deadline = Instant::now() + timeout;
    let (process, pipes) = spawn(spec)?;
    drop(pipes.stdin);
    let mut streams = [(PipeReader::new(pipes.stdout, SHORT_READ)?, Vec::new(), true), (PipeReader::new(pipes.stderr, SHORT_READ)?, Vec::new(), true)];
    while streams.iter().any(|s| s.2) {
        for (reader, _, open) in streams.iter_mut().filter(|s| s.2) {
            if reader.start().is_err() {
                *open = false;
            }
        }
        let events: Vec<RawHandle> = streams.iter().filter(|s| s.2).map(|s| s.0.event()).collect();
        if events.is_empty() {
            break;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match win32::wait_any(&events, Some(left)) {
            Ok(Some(_)) => {}
            Ok(None) => {
                process.terminate(Duration::ZERO, Duration::ZERO);
                return Err(io::Error::new(io::ErrorKind::TimedOut, format!("no end within {} ms", timeout.as_millis())));
            }
            Err(e) => {
                process.terminate(Duration::ZERO, Duration::ZERO);
                return Err(e);
            }
        }
        for (reader, kept, open) in streams.iter_mut().filter(|s| s.2 && s.0.ready()) {
            match reader.finish() {
                Ok([]) | Err(_) => *open = false,
                Ok(data) => kept.extend_from_slice(&data[..data.len().min(max.saturating_sub(kept.len()))]),
            }
        }
    }
    let exit = process.terminate(deadline.saturating_duration_since(Instant::now()), Duration::ZERO);
    let [(_, stdout, _), (_, stderr, _)] = streams;
    Ok(Output { exit, stdout, stderr })
}

impl Process {
    pub fn pid(&self) -> i32 {
        self.pid as i32
    }

    /// The exit, if the agent has exited.
    pub fn try_exit(&self) -> Option<Exit> {
        let mut exit = lock(&self.exit);
        if exit.is_none() {
            *exit = win32::exit_code(self.handle.as_raw_handle()).map(|c| Exit::Code(c as i32));
        }
        *exit
    }

    /// Waits for the agent to exit, up to `timeout` (None: forever).
    pub fn wait_exit(&self, timeout: Option<Duration>) -> Option<Exit> {
        win32::wait_one(self.handle.as_raw_handle(), timeout);
        self.try_exit()
    }

    /// Stops the agent whose stdin the caller has already closed: waits `grace` for it to exit
    /// on its own, then terminates the job. Whatever is left in the job after the agent exits
    /// (a tool's child, a dev server) is ended too. `_kill_grace`: see the module's comment.
    pub fn terminate(&self, grace: Duration, _kill_grace: Duration) -> Exit {
        let mut exit = self.wait_exit(Some(grace));
        if exit.is_none() {
            self.job.terminate(TERMINATED_EXIT_CODE);
            exit = self.wait_exit(None);
        }
        self.job.terminate(TERMINATED_EXIT_CODE);
        exit.expect("waited without deadline")
    }
}

/// Writes all of `data` to the agent's stdin, waiting for room up to `deadline`, and giving up
/// early when `wake` is set (the client is closing).
pub fn write_all(stdin: &File, data: &[u8], deadline: Option<Instant>, wake: &Signal) -> io::Result<()> {
    win32::write_overlapped(stdin, data, deadline, wake.raw())
}

/// A level-triggered "something is ready": a manual-reset event, waited on together with pipe
/// reads and sockets (and the handle behind `omprpc_client_event_handle`).
pub struct Signal(Event);

impl Signal {
    pub fn new() -> io::Result<Self> {
        Event::new().map(Signal)
    }

    pub fn raw(&self) -> RawHandle {
        self.0.raw()
    }

    /// Sets the event (idempotent).
    pub fn set(&self) {
        self.0.set()
    }

    /// Resets the event.
    pub fn clear(&self) {
        self.0.reset()
    }

    pub fn is_set(&self) -> bool {
        self.0.is_set()
    }
}
