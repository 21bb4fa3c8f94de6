//! What the fake agent does with `--version` and `--extension`, like the real agents.
//!
//! * `--version` (anywhere in argv): prints the version and exits 0 before anything else
//!   (no argv or env report is written). omp flavour: `omp/<v>`; pi: `<v>`. `<v>` is env
//!   `OMPRPC_FAKE_VERSION`, else omp's newest supported version, and for pi [`FAKE_PI_VERSION`];
//!   with `--replay FILE`, the recorded agent's flavour and version (its header's `agentVersion`).
//! * `--extension PATH` / `-e PATH`: the fake agent cannot run JavaScript, so it "loads" an
//!   omprpc bridge extension by reading the `const CONFIG = {…};` line the library embeds
//!   (socket path or TCP host and port, token, client id, tool names, gate) and sending the hello the
//!   real extension sends when its factory runs, waiting for the acknowledgement as pi 0.51+
//!   awaits the factory; the connection stays open for the agent's lifetime. Any other file is
//!   ignored; a missing one is pi's load error (stderr, exit 1, nothing on stdout).
//! * The gate (`gate:true` in CONFIG): [`tool_call_hook`] is the extension's `pi.on("tool_call")`
//!   handler — before a tool runs it sends the extension's `policy_eval` frame over that same
//!   connection and waits for the verdict as the generated JavaScript does (CONFIG's
//!   `policyTimeoutMs`, 0 = no limit; `failOpen`; the same block reasons), so a prompt's tool
//!   call (scenario "gated", agent/gate.rs) goes through the library's gate like pi's does.
//!   Tools the extension bridges are not asked about (the library runs those itself).
//! * `OMPRPC_FAKE_DROP_EXTENSION=1`: `--extension` is dropped silently, as pi before 0.35 does.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;
#[cfg(unix)]
use std::os::unix::net::UnixStream;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use omprpc::protocol::version::OMP_NEWEST;

/// The pi whose frames the fake pi reproduces unless `OMPRPC_FAKE_VERSION` names another (from
/// 0.80.4 it also announces settling, from 0.99 answers prompts with a disposition: `pi_settles`).
pub const FAKE_PI_VERSION: &str = "0.73.1";
use serde_json::{json, Value};

/// The loaded extensions, each with its bridge connection: open until the process exits.
static LOADED: Mutex<Vec<Loaded>> = Mutex::new(Vec::new());

/// One bridge connection, Unix socket or loopback TCP.
enum Conn {
    #[cfg(unix)]
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Conn {
    fn try_clone(&self) -> io::Result<Conn> {
        Ok(match self {
            #[cfg(unix)]
            Conn::Unix(s) => Conn::Unix(s.try_clone()?),
            Conn::Tcp(s) => Conn::Tcp(s.try_clone()?),
        })
    }

    fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            #[cfg(unix)]
            Conn::Unix(s) => s.set_read_timeout(t),
            Conn::Tcp(s) => s.set_read_timeout(t),
        }
    }
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            #[cfg(unix)]
            Conn::Unix(s) => s.read(buf),
            Conn::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            #[cfg(unix)]
            Conn::Unix(s) => s.write(buf),
            Conn::Tcp(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            #[cfg(unix)]
            Conn::Unix(s) => s.flush(),
            Conn::Tcp(s) => s.flush(),
        }
    }
}

/// A loaded extension: its CONFIG and its connection to the library's bridge.
struct Loaded {
    config: Value,
    conn: Conn,
    reader: BufReader<Conn>,
    /// The part of a reply line read before a timeout (completed by the next read).
    partial: Vec<u8>,
    /// The extension numbers its requests `<client>-<n>`; the hello was 1.
    seq: u64,
}

impl Loaded {
    fn connect(config: Value) -> io::Result<Loaded> {
        // As the extension does: its errors name the address it dials.
        let address = config["address"].as_str().unwrap_or_default().to_owned();
        let named = |e: io::Error| io::Error::new(e.kind(), format!("omprpc bridge connection to {address} failed: {e}"));
        let conn = match config["socket"].as_str() {
            #[cfg(unix)]
            Some(socket) => Conn::Unix(UnixStream::connect(socket).map_err(named)?),
            // The library offers only TCP there (docs/windows.md), as pi's extension would dial.
            #[cfg(windows)]
            Some(socket) => {
                return Err(named(io::Error::new(io::ErrorKind::Unsupported, format!("a Unix socket ({socket}) is not available on Windows"))))
            }
            None => {
                let host = config["host"].as_str().unwrap_or_default();
                Conn::Tcp(TcpStream::connect((host, config["port"].as_u64().unwrap_or(0) as u16)).map_err(named)?)
            }
        };
        let reader = BufReader::new(conn.try_clone()?);
        Ok(Loaded { config, conn, reader, partial: Vec::new(), seq: 0 })
    }

    /// Sends `frame` with a fresh id, the token and the client id (as the extension's
    /// `request`), and waits up to `timeout_ms` (0: no limit) for the reply with that id.
    /// Err: the text the extension settles the request with when no reply comes.
    /// `outcome(error)`: what the caller will tell the agent on a timeout; the cancel carries it.
    fn request(&mut self, frame: Value, timeout_ms: u64, outcome: Option<&dyn Fn(&str) -> String>) -> Result<Value, String> {
        let client = self.config["client"].as_str().unwrap_or_default().to_owned();
        self.seq += 1;
        let id = format!("{client}-{}", self.seq);
        let mut frame = frame;
        frame["id"] = json!(id);
        frame["token"] = self.config["token"].clone();
        frame["client"] = json!(client);
        self.conn
            .write_all(format!("{frame}\n").as_bytes())
            .map_err(|e| format!("omprpc bridge unavailable: {e}"))?;
        let deadline = (timeout_ms > 0).then(|| Instant::now() + Duration::from_millis(timeout_ms));
        // As the extension does: a request given up is cancelled, so the library voids it.
        let give_up = |conn: &mut Conn| {
            let error = format!("omprpc bridge: no answer within {timeout_ms} ms");
            let reason = outcome.map_or_else(|| error.clone(), |f| f(&error));
            let cancel = json!({"kind": "cancel", "target": id, "id": format!("{id}-cancel"), "reason": reason,
                                "token": self.config["token"], "client": client});
            let _ = conn.write_all(format!("{cancel}\n").as_bytes());
            Err(error)
        };
        loop {
            let wait = match deadline {
                Some(d) => match d.checked_duration_since(Instant::now()).filter(|w| !w.is_zero()) {
                    Some(w) => Some(w),
                    None => return give_up(&mut self.conn),
                },
                None => None,
            };
            self.conn.set_read_timeout(wait).map_err(|e| format!("omprpc bridge connection failed: {e}"))?;
            match self.reader.read_until(b'\n', &mut self.partial) {
                Ok(0) => return Err("omprpc bridge connection closed".to_owned()),
                Ok(_) if self.partial.ends_with(b"\n") => {
                    let line = std::mem::take(&mut self.partial);
                    // Replies to other requests (a verdict that came after its timeout) are
                    // dropped, as the extension drops frames for ids it no longer waits on.
                    match serde_json::from_slice::<Value>(&line) {
                        Ok(reply) if reply["id"] == id.as_str() => return Ok(reply),
                        _ => continue,
                    }
                }
                Ok(_) => return Err("omprpc bridge connection closed".to_owned()),
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => return give_up(&mut self.conn),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(format!("omprpc bridge connection failed: {e}")),
            }
        }
    }
}

fn flavor_of(args: &[String]) -> String {
    let mut flavor = None;
    for (i, a) in args.iter().enumerate() {
        if let Some(v) = a.strip_prefix("--flavor=") {
            flavor = Some(v.to_owned());
        } else if a == "--flavor" {
            flavor = args.get(i + 1).cloned();
        }
    }
    flavor
        .or_else(|| std::env::var("OMPRPC_FAKE_FLAVOR").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "omp".to_owned())
}

/// `--version`: Some(exit code) when asked.
pub fn answer_version(args: &[String]) -> Option<i32> {
    if !args.iter().any(|a| a == "--version") {
        return None;
    }
    // A replay is the recorded agent: its flavour and version, from the recording's header.
    let recorded = crate::replay::recorded_agent(args);
    let pi = match &recorded {
        Some((flavor, _)) => flavor == "pi",
        None => flavor_of(args) == "pi",
    };
    let version = recorded
        .and_then(|(_, v)| v)
        .or_else(|| std::env::var("OMPRPC_FAKE_VERSION").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| if pi { FAKE_PI_VERSION.to_string() } else { OMP_NEWEST.to_string() });
    println!("{}{version}", if pi { "" } else { "omp/" });
    Some(0)
}

/// Loads every `--extension` in `args` (see the module comment); Err: the message and exit
/// code of a load failure.
pub fn load(args: &[String]) -> Result<(), (String, i32)> {
    if matches!(std::env::var("OMPRPC_FAKE_DROP_EXTENSION").as_deref(), Ok("1") | Ok("true")) {
        return Ok(());
    }
    let mut i = 0;
    while i < args.len() {
        let path = match args[i].as_str() {
            "--extension" | "-e" => {
                i += 1;
                args.get(i).cloned()
            }
            a => a.strip_prefix("--extension=").map(str::to_owned),
        };
        i += 1;
        let Some(path) = path else { continue };
        let text = std::fs::read_to_string(&path).map_err(|e| (format!("Error: Failed to load extension \"{path}\": {e}"), 1))?;
        let Some(line) = text.lines().find_map(|l| l.strip_prefix("const CONFIG = ")) else { continue };
        let config: Value = serde_json::from_str(line.trim_end_matches(';'))
            .map_err(|e| (format!("Error: Failed to load extension \"{path}\": bad CONFIG: {e}"), 1))?;
        hello(&config).map_err(|e| (format!("omprpc-fake-agent: the bridge hello failed: {e}"), 1))?;
    }
    Ok(())
}

fn hello(config: &Value) -> io::Result<()> {
    let tools: Vec<Value> = config["tools"].as_array().into_iter().flatten().map(|t| t["name"].clone()).collect();
    let mut ext = Loaded::connect(config.clone())?;
    let reply = ext.request(json!({"kind": "hello", "tools": tools, "gate": config["gate"]}), 10_000, None).map_err(io::Error::other)?;
    if reply["hello"]["ok"] != true {
        return Err(io::Error::other(format!("unexpected reply {reply}")));
    }
    LOADED.lock().unwrap_or_else(|p| p.into_inner()).push(ext);
    Ok(())
}

/// pi's `tool_call` hook as the loaded extensions run it, before the tool `tool` runs: each
/// extension with the gate on (in load order) asks the library's gate, and the first block
/// wins. Some(reason): the tool is blocked with that result text; None: it runs (no gate
/// loaded, the gate allowed it, or it is a tool the extension bridges).
pub fn tool_call_hook(tool: &str, tool_call_id: &str, args: &Value) -> Option<String> {
    let mut loaded = LOADED.lock().unwrap_or_else(|p| p.into_inner());
    for ext in loaded.iter_mut() {
        let bridged = ext.config["tools"].as_array().into_iter().flatten().any(|t| t["name"] == tool);
        if ext.config["gate"] != true || bridged {
            continue;
        }
        let timeout_ms = ext.config["policyTimeoutMs"].as_u64().unwrap_or(0);
        let frame = json!({"kind": "policy_eval", "tool": tool, "toolCallId": tool_call_id, "args": args});
        // The same outcomes, and texts, as the generated extension's handler.
        let no_verdict = |why: &str| format!("blocked: the host's policy gave no verdict ({why})");
        let fail_open = ext.config["failOpen"] == true;
        let outcome: Option<&dyn Fn(&str) -> String> = if fail_open { None } else { Some(&no_verdict) };
        let reply = ext.request(frame, timeout_ms, outcome).unwrap_or_else(|error| json!({"error": error}));
        match reply["verdict"]["block"].as_bool() {
            Some(true) => {
                let reason = reply["verdict"]["reason"].as_str().filter(|r| !r.is_empty());
                return Some(reason.unwrap_or("blocked by the host's policy").to_owned());
            }
            Some(false) => {}
            None if fail_open => {}
            None => return Some(no_verdict(reply["error"].as_str().unwrap_or("malformed verdict"))),
        }
    }
    None
}
