//! The `--scenario` servers and the grandchild helper process.

use std::io::{self, BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::agent::{Agent, Flavor};
use crate::command::{self, Parsed};
use crate::json::{arr, obj};

/// Every scenario name accepted by `--scenario`.
pub const SCENARIOS: &[&str] = &[
    "default",
    "idless-error",
    "late-failure",
    "stderr",
    "invalid-json",
    "broken-startup",
    "exit-early",
    "hanging",
    "grandchild",
    "ignore-term",
    "stdout-close",
    "stdin-close",
    "silent",
    "half-line",
    "invalid-utf8",
    "stderr-flood",
    "chunk-violation",
    "slow-start",
];

/// How long a grandchild keeps beating if nobody kills it (a safety net so
/// a client bug cannot leak processes forever).
const GRANDCHILD_TTL: Duration = Duration::from_secs(120);

pub struct Options {
    pub flavor: Flavor,
    pub scenario: String,
    pub v2: bool,
    pub v2_fail: bool,
    /// `--protocol 1.1`: the "omp-rpc" 1.1.0 server (agent/rpc11.rs).
    pub protocol11: bool,
}

/// Runs the scenario; returns the process exit code. Every path flushes
/// stdout itself (the caller exits with `std::process::exit`).
pub fn run(opts: &Options) -> i32 {
    let mut agent = Agent::new(opts.flavor, opts.v2, opts.v2_fail);
    if opts.protocol11 {
        agent.protocol11 = true;
        agent.out.metadata = Some(0);
    }
    match opts.scenario.as_str() {
        "default" => {
            agent.ready();
            agent.serve();
        }
        "idless-error" => {
            agent.ready();
            for_each_line(|line| match command::parse(line) {
                Parsed::Blank => {}
                Parsed::ParseError(e) => agent.respond(&None, "parse", Err(e)),
                Parsed::BadType { id, error } => agent.respond(&id, "parse", Err(error)),
                Parsed::Cmd(cmd) if cmd.ty == "set_host_tools" => {
                    agent.respond(&cmd.id, "set_host_tools", Ok(Some(obj! {"toolNames": arr![]})))
                }
                Parsed::Cmd(cmd) => {
                    let error = format!("unsupported: {}", cmd.ty);
                    agent.respond(&None, &cmd.ty, Err(error));
                }
            });
            agent.out.flush();
        }
        "late-failure" => {
            agent.ready();
            for_each_line(|line| match command::parse(line) {
                Parsed::Blank => {}
                Parsed::ParseError(e) => agent.respond(&None, "parse", Err(e)),
                Parsed::BadType { id, error } => agent.respond(&id, "parse", Err(error)),
                Parsed::Cmd(cmd) => match cmd.ty.as_str() {
                    "set_host_tools" => agent.respond(
                        &cmd.id,
                        "set_host_tools",
                        Ok(Some(obj! {"toolNames": arr![]})),
                    ),
                    "prompt" => {
                        agent.respond(&cmd.id, "prompt", Ok(None));
                        agent.respond(&cmd.id, "prompt", Err("late failure".to_owned()));
                    }
                    other => agent.respond(&cmd.id, other, Ok(None)),
                },
            });
            agent.out.flush();
        }
        "stderr" => {
            stderr_write(b"first\n");
            stderr_write(b"second\n");
            agent.ready();
            for_each_line(|line| {
                if let Parsed::Cmd(cmd) = command::parse(line) {
                    if cmd.ty == "set_host_tools" {
                        agent.respond(
                            &cmd.id,
                            "set_host_tools",
                            Ok(Some(obj! {"toolNames": arr![]})),
                        );
                    }
                }
            });
            agent.out.flush();
        }
        "invalid-json" => {
            agent.ready();
            agent.out.raw(b"{\"type\":\"broken\"\n");
            agent.out.flush();
            drain_stdin();
        }
        "broken-startup" => {
            agent.out.raw(b"not-json\n");
            agent.out.flush();
        }
        "exit-early" => {
            stderr_write(b"boom: no model configured\n");
            return 1;
        }
        "hanging" => {
            agent.ready();
            let mut acknowledged = false;
            for_each_line(|line| {
                if acknowledged {
                    return;
                }
                if let Parsed::Cmd(cmd) = command::parse(line) {
                    if cmd.ty == "prompt" {
                        agent.respond(&cmd.id, "prompt", Ok(None));
                        acknowledged = true;
                    }
                }
            });
            agent.out.flush();
        }
        "grandchild" => {
            let path = match std::env::var_os("OMPRPC_FAKE_GRANDCHILD") {
                Some(p) if !p.is_empty() => PathBuf::from(p),
                _ => {
                    stderr_write(b"omprpc-fake-agent: scenario grandchild needs OMPRPC_FAKE_GRANDCHILD\n");
                    return 2;
                }
            };
            if let Err(e) = spawn_grandchild(&path.to_string_lossy()) {
                stderr_write(format!("omprpc-fake-agent: cannot spawn grandchild: {e}\n").as_bytes());
                return 2;
            }
            agent.ready();
            agent.serve();
            thread::sleep(Duration::from_secs(30));
        }
        "ignore-term" => {
            ignore_sigterm();
            agent.ready();
            agent.serve();
            loop {
                thread::sleep(Duration::from_secs(3600));
            }
        }
        "stdout-close" => {
            agent.ready();
            agent.out.flush();
            close_stdout();
            drain_stdin();
        }
        "stdin-close" => {
            // Stops reading commands while staying alive with stdout open: the client's
            // next write meets a pipe with no reader (EPIPE, and SIGPIPE unless blocked).
            agent.ready();
            agent.out.flush();
            close_stdin();
            std::thread::sleep(std::time::Duration::from_secs(30));
        }
        "silent" => drain_stdin(),
        "half-line" => {
            agent.ready();
            agent.out.raw(b"{\"type\":\"agent_st");
            agent.out.flush();
        }
        "invalid-utf8" => {
            agent.ready();
            agent.out.raw(b"{\"type\":\"x\",\"v\":\"\xff\xfe\"}\n");
            agent.out.flush();
            agent.serve();
        }
        "stderr-flood" => {
            agent.ready();
            let flood = thread::spawn(stderr_flood);
            agent.serve();
            // The full 50 MB is always written before a normal exit.
            let _ = flood.join();
        }
        "chunk-violation" => {
            agent.flavor = Flavor::Omp;
            agent.v2_advertised = true;
            agent.v2_fail = false;
            agent.chunk_violation = true;
            agent.ready();
            agent.serve();
        }
        "slow-start" => {
            thread::sleep(Duration::from_millis(crate::env_ms("OMPRPC_FAKE_SLOW_START_MS", 500)));
            agent.ready();
            agent.serve();
        }
        other => {
            stderr_write(
                format!(
                    "omprpc-fake-agent: unknown scenario {other:?} (known: {})\n",
                    SCENARIOS.join(", ")
                )
                .as_bytes(),
            );
            return 2;
        }
    }
    0
}

fn stderr_write(bytes: &[u8]) {
    let mut err = io::stderr().lock();
    let _ = err.write_all(bytes);
    let _ = err.flush();
}

/// Calls `f` with each stdin line (newline included) until EOF.
fn for_each_line(mut f: impl FnMut(&[u8])) {
    let stdin = io::stdin();
    let mut input = stdin.lock();
    let mut line = Vec::with_capacity(4096);
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => f(&line),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
}

/// Reads and discards stdin until EOF.
fn drain_stdin() {
    let mut sink = io::sink();
    let _ = io::copy(&mut io::stdin().lock(), &mut sink);
}

/// 50,000,000 bytes of stderr: 50,000 lines of 999 characters + "\n".
fn stderr_flood() {
    let mut err = io::BufWriter::with_capacity(1 << 16, io::stderr().lock());
    let mut line = vec![b'#'; 1000];
    line[999] = b'\n';
    for i in 0..50_000u32 {
        let label = format!("stderr flood line {i:08} ");
        line[..label.len()].copy_from_slice(label.as_bytes());
        if err.write_all(&line).is_err() {
            return;
        }
    }
    let _ = err.flush();
}

#[allow(unsafe_code)]
fn ignore_sigterm() {
    // SAFETY: installing SIG_IGN for SIGTERM has no memory-safety
    // preconditions; it only changes the process's signal disposition.
    unsafe {
        libc::signal(libc::SIGTERM, libc::SIG_IGN);
    }
}

#[allow(unsafe_code)]
#[cfg(unix)]
fn close_stdin() {
    // SAFETY: fd 0 is not read again by this process after this point.
    unsafe {
        libc::close(0);
    }
}

#[allow(unsafe_code)]
#[cfg(unix)]
fn close_stdout() {
    // SAFETY: fd 1 is not used again by this process after this point (the
    // caller flushed the only stdout writer and only reads stdin afterwards),
    // so closing it cannot invalidate a descriptor still in use.
    unsafe {
        libc::close(1);
    }
}

/// Windows: the CRT's close(0)/close(1) leave the process's standard handle,
/// which is what std reads and writes (and what keeps the pipe open), so the
/// handle itself is closed.
#[cfg(windows)]
fn close_stdin() {
    close_std_handle(STD_INPUT_HANDLE);
}

#[cfg(windows)]
fn close_stdout() {
    close_std_handle(STD_OUTPUT_HANDLE);
}

#[cfg(windows)]
const STD_INPUT_HANDLE: u32 = -10i32 as u32;
#[cfg(windows)]
const STD_OUTPUT_HANDLE: u32 = -11i32 as u32;

#[allow(unsafe_code)]
#[cfg(windows)]
fn close_std_handle(which: u32) {
    use std::ffi::c_void;
    #[link(name = "kernel32")]
    extern "system" {
        fn GetStdHandle(which: u32) -> *mut c_void;
        fn SetStdHandle(which: u32, handle: *mut c_void) -> i32;
        fn CloseHandle(handle: *mut c_void) -> i32;
    }
    // SAFETY: the handle is not used again by this process after this point
    // (as on Unix), and is unset first so that nothing else can reach it.
    unsafe {
        let h = GetStdHandle(which);
        SetStdHandle(which, std::ptr::null_mut());
        CloseHandle(h);
    }
}

/// Starts the long-lived grandchild (this binary with `--grandchild-loop`),
/// which stays in our process group. Its stdio is /dev/null so it never
/// holds the client's pipes open. Returns once the grandchild wrote its pid and its first
/// heartbeat (at most 10 s), so a test that has seen this agent ready finds both files.
pub fn spawn_grandchild(path: &str) -> io::Result<()> {
    let exe = std::env::current_exe()?;
    let mut child = Command::new(exe)
        .arg("--grandchild-loop")
        .arg(path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let beat_file = suffixed(path, ".beat"); // written after the pid
    let until = Instant::now() + Duration::from_secs(10);
    while !beat_file.exists() && Instant::now() < until {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(io::Error::other(format!("the grandchild ended before its first heartbeat: {status}")));
        }
        thread::sleep(Duration::from_millis(5));
    }
    // Reap it if it dies while we live (no zombie).
    thread::spawn(move || {
        let _ = child.wait();
    });
    Ok(())
}

fn write_atomic(path: &Path, contents: &[u8]) -> io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    std::fs::write(&tmp, contents)?;
    std::fs::rename(&tmp, path)
}

fn suffixed(base: &str, suffix: &str) -> PathBuf {
    PathBuf::from(format!("{base}{suffix}"))
}

/// The grandchild: writes its pid to `<path>.pid`, then the current time in
/// nanoseconds to `<path>.beat` every 20 ms (both atomically via rename),
/// until killed, until the files can no longer be written, or for at most
/// [`GRANDCHILD_TTL`].
pub fn grandchild_loop(path: &str) -> i32 {
    let pid_file = suffixed(path, ".pid");
    let beat_file = suffixed(path, ".beat");
    if write_atomic(&pid_file, std::process::id().to_string().as_bytes()).is_err() {
        return 1;
    }
    let started = Instant::now();
    while started.elapsed() < GRANDCHILD_TTL {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        if write_atomic(&beat_file, nanos.to_string().as_bytes()).is_err() {
            return 1;
        }
        thread::sleep(Duration::from_millis(20));
    }
    0
}
