//! The agent process on Unix: spawn in its own process group, non-blocking pipe ends, exit
//! detection without reaping, and teardown of the whole group.
//!
//! The `unsafe` here is confined to direct libc calls (waitid, killpg, poll, pidfd, signal
//! masks, fcntl) that std does not offer; each is a plain system call on descriptors and pids
//! this module owns.

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use crate::wait::lock;

use super::{Exit, Output, Pipes, SpawnSpec};

pub struct Process {
    pid: libc::pid_t,
    /// Readable once the process exits; None on kernels without pidfd_open (then we poll).
    pidfd: Option<OwnedFd>,
    exit: Mutex<Option<Exit>>,
    reaped: Mutex<bool>,
    watchdog: Watchdog,
}

/// Ends the agent's process group if this process dies without tearing it down (SIGKILL, the
/// OOM killer, a crash, a Ray actor killed): then no destructor runs, and while the agent
/// itself usually exits at end of input, what it started (a tool's `bun test`, a dev server)
/// would live on in its group, reparented to init.
///
/// A `/bin/sh` in the agent's own process group blocks reading a pipe whose only write end
/// is ours (close-on-exec, so no child inherits it). The kernel closes it when we die: the
/// shell then sends SIGTERM to the group, waits 2 s, and sends SIGKILL (itself included; it
/// ignores SIGTERM so it outlives the first signal). Normal teardown never gets there: the
/// group's SIGKILL in `terminate` ends it with the rest, and we reap it. Being a member of the
/// group, it also keeps the group id from being reused while it waits.
struct Watchdog {
    pid: libc::pid_t,
    /// Held, never written: its closing is the signal.
    _alive: OwnedFd,
}

const WATCHDOG_SCRIPT: &str = "trap '' HUP INT TERM; read -r _; kill -TERM 0; sleep 2; kill -KILL 0";

impl Watchdog {
    fn start(pgid: libc::pid_t) -> io::Result<Self> {
        let (read, write) = cloexec_pipe()?;
        let child = Command::new("/bin/sh")
            .arg("-c")
            .arg(WATCHDOG_SCRIPT)
            .env_clear()
            .current_dir("/")
            .stdin(Stdio::from(read))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(pgid)
            .spawn()
            .map_err(|e| io::Error::new(e.kind(), format!("failed to start the agent's orphan watchdog (/bin/sh): {e}")))?;
        // Like the agent, reaped by `reap`, never by std.
        Ok(Watchdog { pid: child.id() as libc::pid_t, _alive: write })
    }

    /// After the group's SIGKILL: collects the watchdog's exit.
    fn reap(&self) {
        let mut status = 0;
        // SAFETY: waitpid writes only into `status`.
        unsafe { libc::waitpid(self.pid, &mut status, 0) };
    }
}

/// A pipe whose two ends are close-on-exec: atomically where pipe2 exists (Linux), set just
/// after elsewhere (macOS; a child spawned in between could inherit an end).
fn cloexec_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut ends = [0 as libc::c_int; 2];
    #[cfg(target_os = "linux")]
    // SAFETY: pipe2 writes two new descriptors into `ends`.
    let r = unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) };
    #[cfg(not(target_os = "linux"))]
    // SAFETY: pipe writes two new descriptors into `ends`.
    let r = unsafe { libc::pipe(ends.as_mut_ptr()) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are new and ours alone.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1])) };
    #[cfg(not(target_os = "linux"))]
    for fd in [&read, &write] {
        // SAFETY: fcntl on a descriptor we own.
        if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) } < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok((read, write))
}

/// Finds `name` on `path` the way execvp would, so a missing executable fails with a clear
/// message before anything is spawned.
fn resolve_executable(name: &str, path: Option<OsString>) -> io::Result<PathBuf> {
    if name.contains('/') {
        return Ok(PathBuf::from(name));
    }
    let path = path.unwrap_or_else(|| OsString::from("/usr/local/bin:/usr/bin:/bin"));
    for dir in std::env::split_paths(&path) {
        let candidate = dir.join(name);
        if is_executable(&candidate) {
            return Ok(candidate);
        }
    }
    Err(io::Error::new(io::ErrorKind::NotFound, format!("executable '{name}' was not found on PATH")))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

/// The file `spec` would run: argv[0] looked up on the child's PATH, as execvp in the child
/// would (the PATH given in `env`, else ours).
pub fn program_path(spec: &SpawnSpec) -> io::Result<PathBuf> {
    let program = spec.argv.first().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "argv is empty"))?;
    let child_path = spec
        .env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| OsString::from(v))
        .or_else(|| std::env::var_os("PATH"));
    resolve_executable(program, child_path)
}

pub fn spawn(spec: &SpawnSpec) -> io::Result<(Process, Pipes)> {
    let program = spec.argv.first().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "argv is empty"))?;
    let exe = program_path(spec)?;
    let mut cmd = spec.piped_command(&exe);
    cmd.arg0(program).args(&spec.argv[1..]);
    // Own process group: teardown signals the group, so the agent's children die with it.
    cmd.process_group(0);
    let mut child = cmd.spawn().map_err(|e| io::Error::new(e.kind(), format!("failed to spawn {}: {e}", exe.display())))?;
    let pid = child.id() as libc::pid_t;
    let stdin: File = OwnedFd::from(child.stdin.take().expect("piped")).into();
    let stdout: File = OwnedFd::from(child.stdout.take().expect("piped")).into();
    let stderr: File = OwnedFd::from(child.stderr.take().expect("piped")).into();
    // Dropping `child` neither kills nor reaps it: this module owns the pid from here on.
    drop(child);
    for f in [&stdin, &stdout, &stderr] {
        set_nonblocking(f.as_raw_fd())?;
    }
    // A larger stdout pipe means fewer wakeups during event bursts; failure is harmless.
    // (Linux only: macOS sizes a pipe's buffer itself and has no such fcntl.)
    #[cfg(target_os = "linux")]
    {
        // SAFETY: fcntl on a descriptor we own.
        unsafe { libc::fcntl(stdout.as_raw_fd(), libc::F_SETPIPE_SZ, 1 << 20) };
    }
    let watchdog = match Watchdog::start(pid) {
        Ok(w) => w,
        Err(e) => {
            // SAFETY: killpg and waitpid on the child we just spawned (not yet reaped).
            unsafe {
                libc::killpg(pid, libc::SIGKILL);
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
            return Err(e);
        }
    };
    let process = Process { pid, pidfd: pidfd_open(pid), exit: Mutex::new(None), reaped: Mutex::new(false), watchdog };
    Ok((process, Pipes { stdin, stdout, stderr }))
}

/// Runs `spec` to its end with stdin at EOF, keeping up to `max` bytes of each output stream,
/// for at most `timeout`; past it the whole process group is killed and TimedOut returned.
/// Used for `--version`, which must never hang a start.
pub fn run_to_end(spec: &SpawnSpec, timeout: Duration, max: usize) -> io::Result<Output> {
    let deadline = Instant::now() + timeout;
    let (process, pipes) = spawn(spec)?;
    drop(pipes.stdin);
    let mut streams = [(pipes.stdout, Vec::new(), true), (pipes.stderr, Vec::new(), true)];
    let mut buf = [0u8; 8192];
    while streams.iter().any(|s| s.2) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            process.terminate(Duration::ZERO, Duration::from_millis(200));
            return Err(io::Error::new(io::ErrorKind::TimedOut, format!("no end within {} ms", timeout.as_millis())));
        }
        let mut fds: Vec<libc::pollfd> =
            streams.iter().filter(|s| s.2).map(|s| libc::pollfd { fd: s.0.as_raw_fd(), events: libc::POLLIN, revents: 0 }).collect();
        // SAFETY: a valid array of pollfds of the given length.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, left.as_millis().min(i32::MAX as u128) as i32) };
        if r < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            process.terminate(Duration::ZERO, Duration::from_millis(200));
            return Err(io::Error::last_os_error());
        }
        for (file, kept, open) in streams.iter_mut().filter(|s| s.2) {
            match io::Read::read(file, &mut buf) {
                Ok(0) => *open = false,
                Ok(n) => kept.extend_from_slice(&buf[..n.min(max.saturating_sub(kept.len()))]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => *open = false,
            }
        }
    }
    // Both pipes closed: the leader is exiting (or left children holding nothing of ours).
    let exit = process.terminate(deadline.saturating_duration_since(Instant::now()), Duration::from_millis(200));
    let [(_, stdout, _), (_, stderr, _)] = streams;
    Ok(Output { exit, stdout, stderr })
}

fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor the caller owns.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// A descriptor that becomes readable when `pid` exits, so `wait_exit` sleeps in poll(2)
/// instead of polling waitid. Linux ≥ 5.3; elsewhere (macOS, older kernels) None, and
/// `wait_exit` checks every 5 ms instead.
#[cfg(target_os = "linux")]
fn pidfd_open(pid: libc::pid_t) -> Option<OwnedFd> {
    // SAFETY: pidfd_open has no memory arguments; a non-negative result is a new descriptor
    // (close-on-exec by definition) that we take ownership of.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        None
    } else {
        Some(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
    }
}

#[cfg(not(target_os = "linux"))]
fn pidfd_open(_pid: libc::pid_t) -> Option<OwnedFd> {
    None
}

/// Whether process `pid` (not a child of ours: any process) is known to have ended. False while
/// it runs, as a zombie, when it is another user's, and for ids that name no single process.
/// kill(2) with signal 0 checks without signalling, and works on every Unix (/proc does not:
/// macOS has none).
pub fn has_ended(pid: u32) -> bool {
    // 0 and negative ids (a u32 past i32::MAX) name process groups, not a process.
    let Some(pid) = libc::pid_t::try_from(pid).ok().filter(|&p| p > 0) else { return false };
    // SAFETY: signal 0 delivers nothing; kill only checks that `pid` exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == -1 && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

/// Waits until `fd` is readable or `timeout` passes. Returns true when readable.
pub fn poll_readable(fd: RawFd, timeout: Option<Duration>) -> bool {
    poll_any_readable(&[fd], timeout).is_ok_and(|r| r[0])
}

/// Waits until any of `fds` is readable (or hung up) or `timeout` passes (None: no timeout);
/// which of them are. An interrupted wait is resumed.
pub fn poll_any_readable(fds: &[RawFd], timeout: Option<Duration>) -> io::Result<Vec<bool>> {
    let mut p: Vec<libc::pollfd> = fds.iter().map(|&fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }).collect();
    let ms = timeout.map(|d| d.as_millis().min(i32::MAX as u128) as i32).unwrap_or(-1);
    loop {
        // SAFETY: `p` holds `p.len()` valid pollfds.
        let r = unsafe { libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, ms) };
        if r >= 0 {
            return Ok(p.iter().map(|x| x.revents != 0).collect());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

impl Process {
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// The exit, if the leader has exited; never reaps (so the pid and the process group id
    /// cannot be reused while we may still signal the group).
    pub fn try_exit(&self) -> Option<Exit> {
        let mut exit = lock(&self.exit);
        if exit.is_none() {
            // SAFETY: waitid writes only into `info`.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            let r = unsafe {
                libc::waitid(libc::P_PID, self.pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT)
            };
            // SAFETY: si_pid/si_status read the union the kernel filled for a CLD_* event.
            if r == 0 && unsafe { info.si_pid() } == self.pid {
                let status = unsafe { info.si_status() };
                *exit = Some(if info.si_code == libc::CLD_EXITED { Exit::Code(status) } else { Exit::Signal(status) });
            }
        }
        *exit
    }

    /// Waits for the leader to exit, up to `timeout` (None: forever).
    pub fn wait_exit(&self, timeout: Option<Duration>) -> Option<Exit> {
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            if let Some(e) = self.try_exit() {
                return Some(e);
            }
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if left == Some(Duration::ZERO) {
                return None;
            }
            match &self.pidfd {
                Some(fd) => {
                    poll_readable(fd.as_raw_fd(), left);
                }
                None => std::thread::sleep(left.unwrap_or(Duration::from_millis(5)).min(Duration::from_millis(5))),
            }
        }
    }

    fn signal_group(&self, sig: libc::c_int) {
        if *lock(&self.reaped) {
            return; // the pgid may belong to someone else now
        }
        // SAFETY: killpg has no memory arguments.
        unsafe { libc::killpg(self.pid, sig) };
    }

    /// Stops the agent whose stdin the caller has already closed: wait `grace` for it to exit
    /// on its own, then SIGTERM the group, wait `kill_grace`, then SIGKILL the group. Whatever
    /// is left of the group after the leader exits is killed too, then the leader is reaped.
    pub fn terminate(&self, grace: Duration, kill_grace: Duration) -> Exit {
        let mut exit = self.wait_exit(Some(grace));
        if exit.is_none() {
            self.signal_group(libc::SIGTERM);
            self.signal_group(libc::SIGCONT); // a stopped agent must run to act on SIGTERM
            exit = self.wait_exit(Some(kill_grace));
        }
        if exit.is_none() {
            self.signal_group(libc::SIGKILL);
            exit = self.wait_exit(None);
        }
        // The leader is a zombie, so the group id is still ours: kill any grandchildren.
        self.signal_group(libc::SIGKILL);
        self.reap();
        exit.expect("waited without deadline")
    }

    /// Reaps the leader and the watchdog; the group has had its SIGKILL.
    fn reap(&self) {
        let mut reaped = lock(&self.reaped);
        if !*reaped {
            let mut status = 0;
            // SAFETY: waitpid writes only into `status`.
            unsafe { libc::waitpid(self.pid, &mut status, 0) };
            self.watchdog.reap();
            *reaped = true;
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        // Normal paths reap in `terminate`; this is the safety net for a process that was
        // spawned but never handed to a client (e.g. a start that failed half-way).
        if !*lock(&self.reaped) {
            self.signal_group(libc::SIGKILL);
            self.reap();
        }
    }
}

/// Writes all of `data` to a non-blocking pipe, waiting for room up to `deadline`, and giving
/// up early when `wake` becomes readable (the client is closing). SIGPIPE is blocked for the
/// write so a dead agent gives EPIPE instead of killing a C host that kept the default action.
pub fn write_all(stdin: &File, mut data: &[u8], deadline: Option<Instant>, wake: &Signal) -> io::Result<()> {
    let (fd, wake) = (stdin.as_raw_fd(), wake.raw());
    let _guard = SigpipeGuard::new();
    while !data.is_empty() {
        // SAFETY: writes from a valid slice to a descriptor the caller owns.
        let n = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
        if n >= 0 {
            data = &data[n as usize..];
            continue;
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::Interrupted => continue,
            io::ErrorKind::WouldBlock => {
                let left = match deadline {
                    Some(d) => {
                        let left = d.saturating_duration_since(Instant::now());
                        if left.is_zero() {
                            return Err(io::Error::new(io::ErrorKind::TimedOut, "timed out writing to the agent's stdin"));
                        }
                        left.as_millis().clamp(1, i32::MAX as u128) as i32
                    }
                    None => -1,
                };
                let mut fds = [
                    libc::pollfd { fd, events: libc::POLLOUT, revents: 0 },
                    libc::pollfd { fd: wake, events: libc::POLLIN, revents: 0 },
                ];
                // SAFETY: two valid pollfds.
                unsafe { libc::poll(fds.as_mut_ptr(), 2, left) };
                if fds[1].revents != 0 {
                    return Err(io::Error::new(io::ErrorKind::BrokenPipe, "the client is closing"));
                }
            }
            _ => return Err(e),
        }
    }
    Ok(())
}

/// Blocks SIGPIPE on this thread for its lifetime and discards a SIGPIPE raised meanwhile.
struct SigpipeGuard {
    old: libc::sigset_t,
    was_pending: bool,
}

impl SigpipeGuard {
    fn new() -> Self {
        // SAFETY: sigset manipulation on local values; pthread_sigmask affects this thread.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGPIPE);
            let mut pending: libc::sigset_t = std::mem::zeroed();
            libc::sigpending(&mut pending);
            let was_pending = libc::sigismember(&pending, libc::SIGPIPE) == 1;
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
            SigpipeGuard { old, was_pending }
        }
    }
}

impl Drop for SigpipeGuard {
    fn drop(&mut self) {
        // SAFETY: as above. The signal is known to be pending, so the dequeue cannot block.
        unsafe {
            if !self.was_pending {
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigaddset(&mut set, libc::SIGPIPE);
                let mut pending: libc::sigset_t = std::mem::zeroed();
                libc::sigpending(&mut pending);
                if libc::sigismember(&pending, libc::SIGPIPE) == 1 {
                    dequeue_pending(&set);
                }
            }
            libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut());
        }
    }
}

/// Takes one pending signal of `set` off the queue.
/// SAFETY (caller): a signal of `set` is pending and blocked on this thread.
#[cfg(target_os = "linux")]
unsafe fn dequeue_pending(set: &libc::sigset_t) {
    // A zero timeout: a non-blocking dequeue even if another thread took it meanwhile.
    let zero = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `set` is a valid sigset; no siginfo is asked for.
    unsafe { libc::sigtimedwait(set, std::ptr::null_mut(), &zero) };
}

/// macOS has no sigtimedwait; sigwait returns at once because the signal is pending.
#[cfg(not(target_os = "linux"))]
unsafe fn dequeue_pending(set: &libc::sigset_t) {
    let mut sig = 0;
    // SAFETY: `set` is a valid sigset and `sig` a local the call writes.
    unsafe { libc::sigwait(set, &mut sig) };
}

/// A level-triggered "something is ready" descriptor: an eventfd on Linux; a non-blocking
/// self-pipe elsewhere (macOS has no eventfd).
pub struct Signal {
    /// What callers poll: the eventfd, or the pipe's read end.
    fd: OwnedFd,
    #[cfg(not(target_os = "linux"))]
    write: OwnedFd,
}

impl Signal {
    #[cfg(target_os = "linux")]
    pub fn new() -> io::Result<Self> {
        // SAFETY: eventfd returns a new descriptor we own.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Signal { fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    #[cfg(not(target_os = "linux"))]
    pub fn new() -> io::Result<Self> {
        let (read, write) = cloexec_pipe()?;
        set_nonblocking(read.as_raw_fd())?;
        set_nonblocking(write.as_raw_fd())?;
        Ok(Signal { fd: read, write })
    }

    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Makes the descriptor readable (idempotent).
    #[cfg(target_os = "linux")]
    pub fn set(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a local.
        unsafe { libc::write(self.fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    /// Makes the descriptor readable (idempotent: a full pipe is readable already).
    #[cfg(not(target_os = "linux"))]
    pub fn set(&self) {
        let one = 1u8;
        // SAFETY: writes 1 byte from a local; EAGAIN (pipe full) is fine.
        unsafe { libc::write(self.write.as_raw_fd(), (&one as *const u8).cast(), 1) };
    }

    /// Makes the descriptor unreadable again.
    #[cfg(target_os = "linux")]
    pub fn clear(&self) {
        let mut v: u64 = 0;
        // SAFETY: reads 8 bytes into a local; EAGAIN when already clear is fine.
        unsafe { libc::read(self.fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
    }

    /// Makes the descriptor unreadable again: drains the pipe.
    #[cfg(not(target_os = "linux"))]
    pub fn clear(&self) {
        let mut buf = [0u8; 64];
        // SAFETY: reads into a local buffer of its length; stops at EAGAIN (empty).
        while unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) } > 0 {}
    }
}
