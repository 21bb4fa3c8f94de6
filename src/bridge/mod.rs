//! The tool bridge: host tools for agents whose RPC protocol has none (pi), and the policy
//! gate over an agent's own tools.
//!
//! The library writes a small extension into a private directory (0700) and passes it with
//! `--extension`. The extension registers the host's tools with the agent and, when a tool
//! runs, asks the library over a Unix socket (0600; TCP as an option) — so the host sees the
//! same `host_tool_call` events and answers with the same calls as on omp.
//!
//! Over TCP the library binds one address (loopback unless told otherwise) and the extension
//! dials another, the advertised one (by default the bound address): an agent in another
//! network namespace, a container or on another host reaches the bridge through whatever path
//! the host opened (see `address`). The token guards every TCP bind the same way: a request
//! without it never reaches the host.
//!
//! Frames are JSON lines. Extension → library, each carrying the per-client 256-bit token
//! (compared in constant time) and the client id:
//!   `{"token","client","id","kind":"tool","tool","toolCallId","args"}`
//!   `{"token","client","id","kind":"cancel","target","reason"?}`  (the AbortSignal fired, or the
//!   request's timeout; `reason`: what the agent is told about it, e.g. the gate's block)
//!   `{"token","client","id","kind":"policy_eval","tool","toolCallId","args","parentToolCallId"?}`
//!   (`parentToolCallId`: pi 0.99+, for a call another tool made, e.g. from a codemode script)
//!   `{"token","client","id","kind":"hello","tools":[names],"gate":bool}` (once, when the agent
//!   loads the extension: `start` fails unless it arrives, so an agent that ignores
//!   `--extension` can never pass for one that runs the gate)
//! Library → extension, exactly one final reply per request:
//!   `{"id","update":{content,details?}}` (any number, tool calls only), then
//!   `{"id","result":{content,details?},"isError":bool}` or `{"id","error":"…"}`;
//!   `{"id","verdict":{"block":bool,"reason":"…"}}` for policy_eval;
//!   `{"id","hello":{"ok":true}}` for hello;
//!   `{"id","error":"unauthorized"}` and the connection closes, for a bad token.

pub mod address;
pub mod extension;

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::{self, BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde_json::{json, Map, Value};

use crate::env::{private_dir, random_hex};
use crate::error::{Error, Result, Status};
use crate::protocol::argv::Flavor;
use crate::transport::process::Signal;
use crate::transport::socket::{self, Listener, Stream};
use crate::wait::lock;

/// Connections one bridge serves at once (the extension keeps one; reconnects replace it).
const MAX_CONNECTIONS: usize = 16;
/// A request line longer than this is refused (tool arguments come from the model).
const MAX_REQUEST_BYTES: usize = 64 * 1024 * 1024;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transport {
    Unix,
    Tcp(address::TcpAddresses),
}

/// Library-side policy rules: answered without a round trip to the host.
#[derive(Clone, Debug, Default)]
pub struct Rules {
    pub allow: HashSet<String>,
    pub block: HashMap<String, String>,
    pub default_block: bool,
}

impl Rules {
    pub fn verdict(&self, tool: &str) -> (bool, String) {
        if let Some(reason) = self.block.get(tool) {
            return (true, reason.clone());
        }
        if self.allow.contains(tool) {
            return (false, String::new());
        }
        if self.default_block {
            (true, format!("tool \"{tool}\" is not allowed by the host's policy"))
        } else {
            (false, String::new())
        }
    }
}

/// The native-tool policy gate.
#[derive(Clone, Debug)]
pub struct Gate {
    /// None: every decision is asked of the host (a `policy_eval` event).
    pub rules: Option<Rules>,
    /// Allow when no verdict comes (error, timeout). Off by default: the gate fails closed.
    pub fail_open: bool,
    pub timeout_ms: u64,
}

/// What the bridge serves, decided from the start options.
#[derive(Clone, Debug)]
pub struct Plan {
    pub flavor: Flavor,
    pub transport: Transport,
    /// Host tools the extension registers (`[{name,description,parameters,label?}]`).
    pub tools: Vec<Value>,
    pub gate: Option<Gate>,
    /// How long the extension waits for a tool result (0: no limit).
    pub call_timeout_ms: u64,
}

impl Plan {
    pub fn tool_names(&self) -> Vec<String> {
        self.tools.iter().filter_map(|t| t["name"].as_str().map(str::to_string)).collect()
    }
}

/// What the bridge needs from the client it serves.
pub trait Host: Send + Sync + 'static {
    /// A tool call to deliver to the host (or to reject).
    fn tool_call(&self, conn: &Arc<Conn>, frame: Map<String, Value>);
    /// The extension gave up request `target` (its AbortSignal fired, or its timeout passed);
    /// `reason`: what it tells the agent instead of an answer, when it says.
    fn cancel(&self, conn: &Arc<Conn>, target: &str, reason: Option<&str>);
    /// A native tool wants to run: the host decides (rules were not configured).
    fn policy_eval(&self, conn: &Arc<Conn>, frame: Map<String, Value>);
    /// A policy verdict the rules gave, for the record.
    fn policy_decided(&self, tool_call_id: &str, tool: &str, block: bool, reason: &str);
    /// The extension said hello: the agent loaded it (the frame, authenticated).
    fn hello(&self, conn: &Arc<Conn>, frame: &Map<String, Value>);
    /// The connection closed: its open calls are cancelled.
    fn disconnected(&self, conn: &Arc<Conn>);
    /// A bridge event worth a log record (connections, refusals). Never given a token.
    fn note(&self, _level: crate::observe::Level, _message: &str) {}
    /// A bridge thread panicked (a bug in omprpc): the host closes its client with PANIC.
    fn panicked(&self, _thread: &str, _what: &str) {}
    /// Test hook: panics when the host was told to panic in this thread (`fault_panic`).
    fn fault(&self, _thread: &str) {}
}

/// Runs a bridge thread's body; a panic there is reported to the host (which closes its
/// client with PANIC) instead of leaving the bridge's callers waiting for a thread that is gone.
fn guarded(host: &Arc<dyn Host>, thread: &str, body: impl FnOnce()) {
    if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        host.panicked(thread, &crate::error::panic_message(&*p));
    }
}

/// Reports a panic to the host the moment unwinding reaches it (see its use); `guarded` then
/// reports the panic's message, which the log keeps.
struct ClosesOnPanic<'a> {
    host: &'a dyn Host,
    thread: &'static str,
}

impl Drop for ClosesOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.host.panicked(self.thread, "(unwinding; its message follows in the log)");
        }
    }
}

/// One connection from the extension. Replies may be sent from any thread.
pub struct Conn {
    stream: Mutex<Stream>,
    /// Unique per bridge connection in this process: it prefixes the ids the host sees, so
    /// two extension instances (each counting from 1) can never collide.
    serial: u64,
}

/// How long a reply to the bridge extension may take to write: an extension that stopped
/// reading must not hold the library's caller (or its teardown) forever.
const WRITE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

impl Conn {
    fn new(stream: Stream) -> Conn {
        stream.set_write_timeout(WRITE_TIMEOUT);
        Conn { stream: Mutex::new(stream), serial: NEXT_CONN.fetch_add(1, Ordering::Relaxed) }
    }

    /// The id the host sees for the extension's request id `ext`.
    pub fn host_id(&self, ext: &str) -> String {
        format!("bridge{}:{ext}", self.serial)
    }

    /// The extension's own id inside a host-facing id of this connection.
    pub fn ext_id<'a>(&self, host_id: &'a str) -> &'a str {
        host_id.split_once(':').map_or(host_id, |(_, ext)| ext)
    }

    /// Sends one reply frame (a newline is added).
    pub fn send(&self, frame: &[u8]) -> io::Result<()> {
        let mut s = lock(&self.stream);
        let mut line = Vec::with_capacity(frame.len() + 1);
        line.extend_from_slice(frame);
        line.push(b'\n');
        s.write_all(&line)
    }

    fn close(&self) {
        lock(&self.stream).shutdown();
    }
}

/// A bridge, prepared before the agent is spawned and served once the client exists.
pub struct Bridge {
    dir: PathBuf,
    extension: PathBuf,
    token: String,
    client_id: String,
    listener: Option<Listener>,
    /// Where it listens and what the extension dials (`info`'s `bridgeEndpoint`).
    endpoint: Value,
    /// Shared with the accept thread, which waits on it.
    stop: Arc<Signal>,
    gate: Option<Gate>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    conns: Arc<Mutex<Vec<Arc<Conn>>>>,
}

/// Equal without an early exit, so the time taken says nothing about where they differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Bridge {
    /// Creates the directory, the listening socket, the token and the extension file.
    pub fn prepare(plan: &Plan) -> Result<Bridge> {
        let io_err = |what: &str| {
            let what = what.to_string();
            move |e: io::Error| Error::new(Status::Io, format!("tool bridge: {what}: {e}"))
        };
        let dir = private_dir(DIR_PREFIX).map_err(io_err("creating its directory"))?;
        // Until the bridge owns it, a failure below removes it again.
        let unowned = crate::env::RemoveDir(Some(dir.clone()));
        socket::sweep_stale_dirs(&dir, DIR_PREFIX, OWNER_FILE);
        fs::write(dir.join(OWNER_FILE), std::process::id().to_string()).map_err(io_err("marking its owner"))?;
        let token = random_hex(32).map_err(io_err("making a token"))?;
        let client_id = random_hex(8).map_err(io_err("making a client id"))?;
        let (listener, endpoint, shown) = match &plan.transport {
            // Windows' bridge is TCP only (docs/windows.md, the tool bridge): refused by name.
            #[cfg(windows)]
            Transport::Unix => {
                return Err(Error::invalid(
                    "option \"bridge_transport\": the Unix socket is not available on Windows yet; use \"tcp\" (docs/windows.md)",
                ))
            }
            #[cfg(unix)]
            Transport::Unix => {
                use std::os::unix::fs::PermissionsExt;
                let path = dir.join("bridge.sock");
                let l = Listener::bind_unix(&path).map_err(io_err("binding its socket"))?;
                fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).map_err(io_err("securing its socket"))?;
                let shown = json!({"transport": "unix", "socket": path.to_string_lossy()});
                (l, extension::Endpoint::Unix(path), shown)
            }
            Transport::Tcp(addresses) => {
                let l = TcpListener::bind(addresses.listen).map_err(io_err(&format!("binding TCP {}", addresses.listen)))?;
                let bound = l.local_addr().map_err(io_err("reading its bound address"))?;
                let dialled = addresses.dialled(bound);
                let shown = json!({"transport": "tcp", "listen": bound.to_string(), "advertise": dialled.display()});
                (Listener::from(l), extension::Endpoint::Tcp(dialled), shown)
            }
        };
        let config = extension::Config {
            endpoint,
            token: token.clone(),
            client_id: client_id.clone(),
            tools: plan.tools.clone(),
            gate: plan.gate.is_some(),
            fail_open: plan.gate.as_ref().is_some_and(|g| g.fail_open),
            policy_timeout_ms: plan.gate.as_ref().map_or(0, |g| g.timeout_ms),
            call_timeout_ms: plan.call_timeout_ms,
        };
        let (file, text) = extension::render(plan.flavor, &config);
        let extension = dir.join(file);
        let write = || -> io::Result<()> {
            let mut f = crate::env::private_file(&extension, crate::env::Existing::Refuse)?;
            f.write_all(text.as_bytes())
        };
        write().map_err(io_err("writing the extension"))?;
        let stop = Signal::new().map_err(io_err("creating its stop signal"))?;
        unowned.keep();
        Ok(Bridge {
            dir,
            extension,
            token,
            client_id,
            listener: Some(listener),
            endpoint: shown,
            stop: Arc::new(stop),
            gate: plan.gate.clone(),
            threads: Mutex::new(Vec::new()),
            conns: Arc::new(Mutex::new(Vec::new())),
        })
    }

    /// The extension file to pass with `--extension`.
    pub fn extension_path(&self) -> &Path {
        &self.extension
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `{"transport":"unix","socket"}` or `{"transport":"tcp","listen","advertise"}`: the
    /// addresses in use (the ports the OS picked filled in).
    pub fn endpoint(&self) -> &Value {
        &self.endpoint
    }

    /// Starts accepting connections for `host`.
    pub fn serve(&mut self, host: Arc<dyn Host>) -> Result<()> {
        let listener = self.listener.take().ok_or_else(|| Error::invalid("the bridge is already serving"))?;
        let auth = Arc::new(Auth {
            token: self.token.clone(),
            client_id: self.client_id.clone(),
            rules: self.gate.as_ref().and_then(|g| g.rules.clone()),
        });
        let stop = self.stop.clone();
        let conns = self.conns.clone();
        let accept = std::thread::Builder::new()
            .name("omprpc-bridge".into())
            .spawn(move || guarded(&host.clone(), "bridge", || accept_loop(listener, stop, conns, auth, host)))
            .map_err(|e| Error::new(Status::Io, format!("tool bridge: starting its thread: {e}")))?;
        lock(&self.threads).push(accept);
        Ok(())
    }

    /// Stops accepting, closes every connection (after the caller sent its last replies),
    /// waits for the bridge threads and removes the directory.
    pub fn shutdown(&self) {
        self.stop.set();
        for c in lock(&self.conns).drain(..) {
            c.close();
        }
        for t in lock(&self.threads).drain(..) {
            let _ = t.join();
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// What the extension connects to, for messages: the Unix socket's path or the advertised
/// TCP address (`endpoint` as `Bridge::endpoint` gives it).
pub fn dialled(endpoint: &Value) -> String {
    match endpoint["transport"].as_str() {
        Some("tcp") => format!("TCP {}", endpoint["advertise"].as_str().unwrap_or_default()),
        _ => format!("the Unix socket {}", endpoint["socket"].as_str().unwrap_or_default()),
    }
}

/// Bridge directories are `<temp>/omprpc-bridge-<random>`, each with the owning process's id
/// in `owner.pid`.
const DIR_PREFIX: &str = "omprpc-bridge";
const OWNER_FILE: &str = "owner.pid";

impl Drop for Bridge {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// What a request must carry to be served, and the rules that answer policy_eval.
pub struct Auth {
    pub token: String,
    pub client_id: String,
    pub rules: Option<Rules>,
}

fn accept_loop(listener: Listener, stop: Arc<Signal>, conns: Arc<Mutex<Vec<Arc<Conn>>>>, auth: Arc<Auth>, host: Arc<dyn Host>) {
    let mut readers: Vec<JoinHandle<()>> = Vec::new();
    loop {
        // A failure is a log record, never silence: the agent's tool calls then fail at its end
        // ("bridge unreachable"), and the log says why.
        let stream = match listener.accept(&stop) {
            Ok(Some(Ok(stream))) => stream,
            Ok(Some(Err(e))) => {
                host.note(crate::observe::Level::Warn, &format!("bridge connection lost: accepting it failed: {e}"));
                continue;
            }
            Ok(None) => break,
            Err(e) => {
                host.note(crate::observe::Level::Error, &format!("bridge stopped accepting connections: waiting on its socket failed: {e}"));
                break;
            }
        };
        // Declared after `stream`, so dropped before it while unwinding: a panic from here on
        // closes the client (PANIC) before the accepted connection closes — else the agent
        // would see its hello's connection reset, exit, and the client might close first as
        // PROCESS_EXITED, hiding the bug.
        let _closes_first = ClosesOnPanic { host: &*host, thread: "bridge acceptor" };
        host.fault("bridge_accept");
        readers.retain(|t| !t.is_finished());
        if readers.len() >= MAX_CONNECTIONS {
            host.note(crate::observe::Level::Warn, "bridge connection refused: too many connections");
            let conn = Conn::new(stream);
            let _ = conn.send(br#"{"id":null,"error":"too many bridge connections"}"#);
            conn.close();
            continue;
        }
        // Its blocked read ends at close (`Stream::reader`).
        let read_half = match stream.reader(&stop) {
            Ok(r) => r,
            Err(e) => {
                host.note(crate::observe::Level::Warn, &format!("bridge connection closed: making its reader failed: {e}"));
                continue;
            }
        };
        let conn = Arc::new(Conn::new(stream));
        host.note(crate::observe::Level::Debug, "bridge connection accepted");
        lock(&conns).push(conn.clone());
        let (serving, auth, serving_host) = (conn.clone(), auth.clone(), host.clone());
        let spawned = std::thread::Builder::new()
            .name("omprpc-bridge-conn".into())
            .spawn(move || guarded(&serving_host.clone(), "bridge connection", || serve_conn(read_half, serving, auth, serving_host)));
        match spawned {
            Ok(t) => readers.push(t),
            Err(e) => {
                // Nobody would read it: close it, so the extension sees the end and reconnects.
                host.note(crate::observe::Level::Warn, &format!("bridge connection closed: starting its reader failed: {e}"));
                lock(&conns).retain(|c| !Arc::ptr_eq(c, &conn));
                conn.close();
            }
        }
    }
    for t in readers {
        let _ = t.join();
    }
}

/// `{"id":<id>,"error":<text>}`, the id written as the raw JSON text the request carried.
fn error_frame(raw_id: &str, text: &str) -> Vec<u8> {
    format!("{{\"id\":{raw_id},\"error\":{}}}", Value::from(text)).into_bytes()
}

/// The request's `id` member exactly as its bytes were (`null` when it has none), so a reply
/// echoes it unchanged: a number re-serialised through f64 (a 40-digit id, say) would not
/// be the id the extension sent. The last of duplicate keys wins, as in the parsed frame.
fn raw_id(line: &[u8]) -> String {
    match serde_json::from_slice::<std::collections::BTreeMap<String, &serde_json::value::RawValue>>(line) {
        Ok(mut members) => members.remove("id").map_or_else(|| "null".to_string(), |raw| raw.get().to_string()),
        Err(_) => "null".to_string(),
    }
}

static NEXT_CONN: AtomicU64 = AtomicU64::new(0);

/// What the bridge does with one request line from the extension (see `decide`).
#[derive(Debug)]
pub enum Decision {
    /// Answer with this error frame and read on.
    Refuse(Vec<u8>),
    /// Bad token or client id: answer with this frame and close the connection.
    Unauthorized(Vec<u8>),
    /// A host tool call, for the host.
    Tool(Map<String, Value>),
    /// The extension gave up a request (target None: the frame names none; ignored), with
    /// what it tells the agent instead, if it says.
    Cancel { target: Option<String>, reason: Option<String> },
    /// The rules decided a policy_eval; `reply` is the verdict frame.
    Verdict { tool_call_id: String, tool: String, block: bool, reason: String, reply: Vec<u8> },
    /// A policy_eval for the host to decide (no rules configured).
    PolicyEval(Map<String, Value>),
    /// The extension loaded; `reply` acknowledges it.
    Hello { frame: Map<String, Value>, reply: Vec<u8> },
}

/// Parses and authenticates one request line (without its size check, which the reader
/// makes) and decides what it is. Pure, so the fuzzer runs it on arbitrary lines.
pub fn decide(line: &[u8], auth: &Auth) -> Decision {
    let frame: Map<String, Value> = match serde_json::from_slice(line) {
        Ok(Value::Object(m)) => m,
        _ => return Decision::Refuse(error_frame("null", "bridge request is not a JSON object")),
    };
    let id = raw_id(line);
    let token_ok = frame.get("token").and_then(Value::as_str).is_some_and(|t| constant_time_eq(t.as_bytes(), auth.token.as_bytes()));
    let client_ok = frame.get("client").and_then(Value::as_str) == Some(auth.client_id.as_str());
    if !token_ok || !client_ok {
        return Decision::Unauthorized(error_frame(&id, "unauthorized"));
    }
    if !frame.get("id").is_some_and(Value::is_string) {
        return Decision::Refuse(error_frame(&id, "bridge request needs a string id"));
    }
    match frame.get("kind").and_then(Value::as_str) {
        Some("tool") => Decision::Tool(frame),
        Some("hello") => Decision::Hello { reply: format!("{{\"id\":{id},\"hello\":{{\"ok\":true}}}}").into_bytes(), frame },
        Some("cancel") => Decision::Cancel {
            target: frame.get("target").and_then(Value::as_str).map(str::to_string),
            reason: frame.get("reason").and_then(Value::as_str).map(str::to_string),
        },
        Some("policy_eval") => match &auth.rules {
            Some(rules) => {
                let tool = frame.get("tool").and_then(Value::as_str).unwrap_or("").to_string();
                let tool_call_id = frame.get("toolCallId").and_then(Value::as_str).unwrap_or("").to_string();
                let (block, reason) = rules.verdict(&tool);
                let reply = format!("{{\"id\":{id},\"verdict\":{}}}", json!({"block": block, "reason": reason})).into_bytes();
                Decision::Verdict { tool_call_id, tool, block, reason, reply }
            }
            None => Decision::PolicyEval(frame),
        },
        other => Decision::Refuse(error_frame(&id, &format!("unknown bridge request kind {other:?}"))),
    }
}

fn serve_conn(read_half: impl io::Read, conn: Arc<Conn>, auth: Arc<Auth>, host: Arc<dyn Host>) {
    let mut reader = BufReader::with_capacity(64 * 1024, read_half);
    let mut line = Vec::new();
    loop {
        line.clear();
        // Bytes up to the newline; a frame is decoded as UTF-8 only once it is whole.
        match io::Read::take(&mut reader, MAX_REQUEST_BYTES as u64 + 1).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        host.fault("bridge_conn");
        if line.len() > MAX_REQUEST_BYTES {
            host.note(crate::observe::Level::Warn, "bridge request too large: connection closed");
            let _ = conn.send(&error_frame("null", "bridge request too large"));
            break;
        }
        match decide(&line, &auth) {
            Decision::Refuse(reply) => {
                let _ = conn.send(&reply);
            }
            Decision::Unauthorized(reply) => {
                // Never reaches the host; the connection is not trusted any further.
                host.note(crate::observe::Level::Warn, "bridge request unauthorized (bad token or client id): connection closed");
                let _ = conn.send(&reply);
                break;
            }
            Decision::Tool(frame) => host.tool_call(&conn, frame),
            Decision::Cancel { target: Some(target), reason } => host.cancel(&conn, &target, reason.as_deref()),
            Decision::Cancel { target: None, .. } => {}
            Decision::Verdict { tool_call_id, tool, block, reason, reply } => {
                host.policy_decided(&tool_call_id, &tool, block, &reason);
                let _ = conn.send(&reply);
            }
            Decision::PolicyEval(frame) => host.policy_eval(&conn, frame),
            Decision::Hello { frame, reply } => {
                host.hello(&conn, &frame);
                let _ = conn.send(&reply);
            }
        }
    }
    conn.close();
    host.note(crate::observe::Level::Debug, "bridge connection closed");
    host.disconnected(&conn);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_256_bit_and_differ() {
        let a = random_hex(32).unwrap();
        let b = random_hex(32).unwrap();
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
        assert!(constant_time_eq(a.as_bytes(), a.as_bytes()));
        assert!(!constant_time_eq(a.as_bytes(), b.as_bytes()));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }

    #[test]
    fn rules_decide() {
        let r = Rules {
            allow: ["read".to_string()].into_iter().collect(),
            block: [("bash".to_string(), "no shell".to_string())].into_iter().collect(),
            default_block: true,
        };
        assert_eq!(r.verdict("read"), (false, String::new()));
        assert_eq!(r.verdict("bash"), (true, "no shell".to_string()));
        assert!(r.verdict("write").0);
        assert!(!Rules::default().verdict("write").0);
    }

    #[test]
    fn replies_echo_the_request_id_bytes_exactly() {
        // A fuzz-smoke finding: a 40-digit numeric id went through f64 and came back as
        // another number. Refusals, unauthorized replies and verdicts echo the raw bytes.
        let auth = Auth { token: "tok".into(), client_id: "cli".into(), rules: Some(Rules::default()) };
        let reply = |line: &str| match decide(line.as_bytes(), &auth) {
            Decision::Refuse(r) | Decision::Unauthorized(r) | Decision::Verdict { reply: r, .. } | Decision::Hello { reply: r, .. } => {
                String::from_utf8(r).unwrap()
            }
            d => panic!("no reply for {line}: {d:?}"),
        };
        let big = "5255555555555555555555555555555555555222";
        assert_eq!(reply(&format!(r#"{{"id":{big},"token":"bad"}}"#)), format!(r#"{{"id":{big},"error":"unauthorized"}}"#));
        assert_eq!(
            reply(&format!(r#"{{"id":{big}e-3,"token":"tok","client":"cli","kind":"tool"}}"#)),
            format!(r#"{{"id":{big}e-3,"error":"bridge request needs a string id"}}"#)
        );
        assert_eq!(
            reply(r#"{"id":"aé","id":"last","token":"tok","client":"cli","kind":"policy_eval","tool":"x"}"#),
            r#"{"id":"last","verdict":{"block":false,"reason":""}}"#
        );
        assert_eq!(reply(r#"{"id":"é","token":"tok","client":"cli","kind":"nope"}"#), r#"{"id":"é","error":"unknown bridge request kind Some(\"nope\")"}"#);
        assert_eq!(reply("[1]"), r#"{"id":null,"error":"bridge request is not a JSON object"}"#);
        // The hello's acknowledgement (the id was once encoded twice, and the extension waited
        // 10 s for an answer it could not match).
        assert_eq!(reply(r#"{"id":"c-1","token":"tok","client":"cli","kind":"hello"}"#), r#"{"id":"c-1","hello":{"ok":true}}"#);
    }

    #[test]
    #[cfg(unix)] // the Unix socket and private directories: not on Windows (docs/windows.md)
    fn private_dir_and_socket_modes() {
        use std::os::unix::fs::PermissionsExt;
        let plan = Plan { flavor: Flavor::Pi, transport: Transport::Unix, tools: vec![], gate: None, call_timeout_ms: 0 };
        let b = Bridge::prepare(&plan).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(b.dir()), 0o700);
        assert_eq!(mode(&b.dir().join("bridge.sock")), 0o600);
        assert_eq!(mode(b.extension_path()), 0o600);
        let dir = b.dir().to_path_buf();
        drop(b);
        assert!(!dir.exists(), "the private directory is removed");
    }
}
