//! The client: spawn and handshake, request/response correlation, the event queue, the prompt
//! lifecycle, UI requests, host calls, records, and teardown.
//!
//! Threads per client: one reader (the agent's stdout and stderr, see `reader`) that never
//! writes and never runs foreign code, and one writer for the frames the library sends by
//! itself (headless UI answers, error results for malformed host calls), so the reader can
//! never block on a full stdin pipe while the agent blocks on a full stdout pipe. Frames the
//! host sends are written on the caller's own thread.

pub mod events;
pub mod host;
pub mod items;
pub mod lifecycle;
mod messages;
pub mod operations;
pub mod options;
pub mod pending;
pub(crate) mod reader;
pub mod stream;
pub mod ui;

// The client's methods, by the part of its life they serve; the types they share are below.
mod calls;
mod start;
mod teardown;

use std::collections::VecDeque;
use std::fs::File;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;
use serde_json::{json, Map, Value};

use crate::bridge::{self, Bridge, Conn};
use crate::error::{Error, Result, Status};
use crate::observe::{Counters, Level, Logger};
use crate::protocol::argv::Flavor;
use crate::protocol::chunks::ChunkDecoder;
use crate::transport::process::{self, Exit, Process, Signal};
use crate::transport::record::{self, Recorder};
use crate::transport::StderrRing;
use crate::wait::lock;
use events::{EventBytes, EventQueue};
use host::{HostRegistry, Incoming, Outgoing, Route};
use lifecycle::Lifecycle;
use options::Options;
use pending::{Pending, Slot as ReplySlot};
use ui::UiQueue;

/// Protocol errors kept for `protocol_errors` (oldest dropped).
const PROTOCOL_ERROR_MEMORY: usize = 128;

/// How long a call may wait: until this instant, or (None) without limit.
pub type Deadline = Option<Instant>;

pub fn deadline_after(timeout: Option<Duration>) -> Deadline {
    timeout.map(|t| Instant::now() + t)
}

/// State the reader and the callers share, under one lock.
struct State {
    life: Lifecycle,
    host: HostRegistry,
    ready: Option<Vec<u8>>,
    protocol_version: u32,
    protocol_errors: VecDeque<Value>,
    close_reason: Option<Error>,
    /// policy_eval requests waiting for the host's verdict: id → (connection, toolCallId, tool).
    policy: std::collections::HashMap<String, (Arc<Conn>, String, String)>,
    /// `tool_blocked` notes waiting for their call's `tool_execution_end` (by toolCallId): the
    /// gate decides over the bridge socket while the agent's frames of the same call may still
    /// be in the stdout pipe, so a note queued at once could overtake them (BlockedNotes).
    blocked: BlockedNotes,
    /// The bridge extension's hello (its authenticated frame): the agent loaded it.
    bridge_hello: Option<Map<String, Value>>,
    /// The activity probe in flight: it outlives the wait that sent it (a waiter whose
    /// deadline passes leaves the answer to the next), so no answer is ever cut off.
    probe: Option<InflightProbe>,
    /// Operation ends not yet claimed by the call that waits on them (client::operations).
    ops: operations::Operations,
}

/// `tool_blocked` notes, each queued right before its call's `tool_execution_end` — after the
/// call's earlier frames, whichever thread saw what first. pi writes that end only after the
/// gate's verdict reached it, and the library notes a block before it answers, so the note is
/// here when the end arrives; the one exception — the gate's own timeout, which the library
/// hears of on the socket while pi may already be writing the end — is caught by remembering
/// the last calls that ended: a note for one of them is queued at once.
#[derive(Default)]
struct BlockedNotes {
    /// In the order the notes were made (a few at a time: a list, not a map).
    waiting: Vec<(String, Vec<u8>)>,
    ended: VecDeque<String>,
}

/// How many ended calls BlockedNotes remembers (a late note is about the last few).
const ENDED_CALLS_REMEMBERED: usize = 64;

impl BlockedNotes {
    /// Keeps `note` for call `id`; returns it when that call already ended (queue it now).
    fn hold(&mut self, id: &str, note: Vec<u8>) -> Option<Vec<u8>> {
        if self.ended.iter().any(|e| e == id) {
            return Some(note);
        }
        self.waiting.push((id.to_string(), note));
        None
    }

    /// Call `id` ended: its note, if one waits.
    fn ended(&mut self, id: &str) -> Option<Vec<u8>> {
        if self.ended.len() >= ENDED_CALLS_REMEMBERED {
            self.ended.pop_front();
        }
        self.ended.push_back(id.to_string());
        let at = self.waiting.iter().position(|(w, _)| w == id)?;
        Some(self.waiting.remove(at).1)
    }

    /// The notes whose end never came (the client is closing), in the order they were made:
    /// delivered, not lost.
    fn drain(&mut self) -> Vec<Vec<u8>> {
        self.waiting.drain(..).map(|(_, n)| n).collect()
    }
}

/// A `get_state` sent to learn whether the agent is idle (client::lifecycle).
struct InflightProbe {
    id: String,
    slot: Arc<ReplySlot>,
    /// `agent_start` frames seen when it was sent.
    starts: u64,
    sent: Instant,
}

/// What the client's threads share.
///
/// Locks, in the order a thread may nest them (one holding a lock takes only those below it;
/// most are never nested): `announcing` → `state` → `pending` (a waiter abandons its probe's
/// request while it holds the state); `announcing` is held across a change of the prompts'
/// state and the queueing of the `prompt_complete` events it made. The others — `stdin` (held across a write to the agent, which has a
/// deadline), `stderr`, `decoder`, `bridge`, and the event, UI and log queues' own — are
/// taken alone. No pipe or socket I/O happens under `state` or `pending`: frames for the
/// agent or the bridge are built under them and written after. Every lock survives a
/// panicking holder (wait::lock).
pub(crate) struct Shared {
    opts: Options,
    flavor: Flavor,
    argv_shown: Vec<String>,
    process: Process,
    stdin: Mutex<Option<File>>,
    /// Readable once the client is closed: wakes writers blocked on a full pipe.
    closing: Signal,
    /// Readable once the agent is gone: ends the reader.
    reader_stop: Signal,
    closed: AtomicBool,
    /// The raw-frame tap (start option `queue_responses`), switched at run time
    /// (`Client::set_queue_responses`): a binding taps only while someone listens to frames.
    queue_responses: AtomicBool,
    pending: Mutex<Pending>,
    state: Mutex<State>,
    cond: Condvar,
    /// Held (with `prompt_complete_events` on) from a change that may complete prompts until
    /// their `prompt_complete` events are queued; a waiter takes it before it returns, so the
    /// event is queued before the call that waited for the same completion returns.
    announcing: Mutex<()>,
    events: EventQueue,
    ui: UiQueue,
    stderr: Mutex<StderrRing>,
    decoder: Mutex<ChunkDecoder>,
    next_id: AtomicU64,
    internal: Sender<Vec<u8>>,
    bridge: Mutex<Option<Bridge>>,
    /// The bridge's addresses (`Bridge::endpoint`), kept after the bridge is shut down.
    bridge_endpoint: Option<Value>,
    /// A private directory of the client's own files (system prompts), removed at close.
    scratch: Option<std::path::PathBuf>,
    /// The session recording (`record_path`); None: one branch per frame, nothing else.
    recorder: Option<Recorder>,
    /// The log channel (off unless `log_level` or `OMPRPC_LOG`) and the counters.
    log: Logger,
    counters: Counters,
}

/// A client of one omp or pi agent in RPC mode: the agent process, its requests, events,
/// turns, UI requests and host calls. `Send + Sync`: every method may be called from any
/// thread, at once (share it in an `Arc`); one turn or wait on the agent's activity runs at a
/// time (`stream`, `prompt_and_wait`, `collect_events`, `wait_for_idle`: a second one fails
/// with CONCURRENCY). Dropping it closes it.
pub struct Client {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Serialises closers; Some once the agent has been torn down.
    teardown: Mutex<Option<Exit>>,
}

fn is_prompt_command(command: &str) -> bool {
    command == "prompt" || command == "abort_and_prompt"
}

/// `{"id":…,"type":…, <params' members>}` plus the newline.
pub(crate) fn request_line(id: &str, ty: &str, params: Option<&Map<String, Value>>) -> Result<Vec<u8>> {
    let mut line = Vec::with_capacity(64);
    line.extend_from_slice(b"{\"id\":");
    serde_json::to_writer(&mut line, id).expect("writing to a Vec");
    line.extend_from_slice(b",\"type\":");
    serde_json::to_writer(&mut line, ty).expect("writing to a Vec");
    if let Some(p) = params {
        for (k, v) in p {
            if k == "id" || k == "type" {
                return Err(Error::invalid(format!("request params must not set \"{k}\"; omprpc assigns it")));
            }
            line.push(b',');
            serde_json::to_writer(&mut line, k).expect("writing to a Vec");
            line.push(b':');
            serde_json::to_writer(&mut line, v).expect("writing to a Vec");
        }
    }
    line.extend_from_slice(b"}\n");
    Ok(line)
}

/// Parses optional params JSON (NULL or an object).
pub fn parse_params(json: Option<&str>) -> Result<Option<Map<String, Value>>> {
    let Some(json) = json else { return Ok(None) };
    match serde_json::from_str::<Value>(json) {
        Ok(Value::Object(m)) => Ok(Some(m)),
        Ok(Value::Null) => Ok(None),
        Ok(_) => Err(Error::invalid_json("params must be a JSON object")),
        Err(e) => Err(Error::invalid_json(format!("params are not valid JSON: {e}"))),
    }
}

/// Parses a JSON value given by the host.
pub fn parse_value(json: &str, what: &str) -> Result<Value> {
    serde_json::from_str(json).map_err(|e| Error::invalid_json(format!("{what} is not valid JSON: {e}")))
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    fn stderr_suffix(&self) -> String {
        let tail = lock(&self.stderr).tail();
        if tail.is_empty() {
            String::new()
        } else {
            format!(". Stderr: {tail}")
        }
    }

    /// Why the agent went, for a write that found its stdin closed: an agent closes it as it
    /// exits, moments before the reader reports the exit with its code and stderr (an agent
    /// that exits during start says why there; the broken pipe alone does not). None: it has
    /// not exited (it closed stdin and lives on), or the report did not come in time.
    fn exit_report(&self) -> Option<Error> {
        const EXIT_WAIT: Duration = Duration::from_millis(250);
        const REPORT_WAIT: Duration = Duration::from_secs(2);
        self.process.wait_exit(Some(EXIT_WAIT))?;
        let until = Instant::now() + REPORT_WAIT;
        let mut st = self.state();
        loop {
            if let Some(reason) = &st.close_reason {
                return Some(reason.clone());
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            st = self.cond.wait_timeout(st, left).unwrap_or_else(std::sync::PoisonError::into_inner).0;
        }
    }

    fn close_reason(&self) -> Option<Error> {
        self.state().close_reason.clone()
    }

    fn closed_error(&self) -> Error {
        match self.close_reason() {
            Some(r) => Error::closed_because(&r),
            None => Error::new(Status::Closed, "the client is closed"),
        }
    }

    /// Runs a library thread's body. A panic there (a bug in omprpc) closes the client with
    /// PANIC, waking every waiter at once, instead of leaving callers waiting on a thread that
    /// is gone; teardown then stops the agent (locks a panic poisoned are still taken, wait.rs).
    fn guarded(&self, thread: &str, body: impl FnOnce()) {
        if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
            bridge::Host::panicked(self, thread, &crate::error::panic_message(&*p));
        }
    }

    /// Test hook (`fault_panic`, debug builds): panics here when told to for this thread.
    fn fault(&self, thread: &str) {
        if cfg!(debug_assertions) && self.opts.fault_panic.as_deref() == Some(thread) {
            panic!("injected by the fault_panic option ({thread})");
        }
    }

    /// Records a protocol error; returns it as a synthetic event for the caller to queue
    /// (the reader queues it in order with the frames around it).
    fn record_protocol_error(&self, mut record: Map<String, Value>) -> EventBytes {
        self.counters.protocol_errors.fetch_add(1, Ordering::Relaxed);
        if self.log.enabled(Level::Warn) {
            // The message only: the frame it quotes may hold anything the agent sent.
            let message = record.get("message").and_then(Value::as_str).unwrap_or_default();
            self.log.log(Level::Warn, "protocol", message, json!({"command": record.get("command"), "requestId": record.get("requestId")}));
        }
        record.insert("type".into(), json!("protocol_error"));
        record.insert("omprpc".into(), json!(true));
        let v = Value::Object(record);
        let bytes = events::event_bytes(v.to_string().as_bytes());
        let mut st = self.state();
        if st.protocol_errors.len() >= PROTOCOL_ERROR_MEMORY {
            st.protocol_errors.pop_front();
        }
        st.protocol_errors.push_back(v);
        bytes
    }

    /// A write to the recording failed: reported once as a protocol error (recording stops).
    fn recording_failed(&self, message: String) {
        let mut r = Map::new();
        r.insert("message".into(), json!(message));
        self.protocol_error(r);
    }

    fn protocol_error(&self, record: Map<String, Value>) {
        let ev = self.record_protocol_error(record);
        self.events.push(ev);
    }

    /// Writes one frame (with its newline) to the agent's stdin.
    fn write(&self, line: &[u8], deadline: Deadline) -> Result<()> {
        if let Some(max) = self.opts.max_outbound_frame_bytes {
            if line.len() - 1 > max {
                return Err(Error::invalid(format!(
                    "frame of {} bytes exceeds max_outbound_frame_bytes ({max})",
                    line.len() - 1
                )));
            }
        }
        let guard = lock(&self.stdin);
        let Some(stdin) = guard.as_ref() else {
            return Err(self.closed_error());
        };
        if let Some(rec) = &self.recorder {
            // Recorded before it is written (under the stdin lock): the file never shows an
            // answer before its request, and frames from different threads keep their order.
            if let Err(m) = rec.frame(record::Dir::Out, &line[..line.len() - 1], true) {
                self.recording_failed(m);
            }
        }
        match process::write_all(stdin, line, deadline, &self.closing) {
            Ok(()) => {
                self.counters.frame_out(line.len());
                if self.log.enabled(Level::Trace) {
                    self.log.log(Level::Trace, "frame", "frame out", json!({"bytes": line.len()}));
                }
                Ok(())
            }
            Err(e) => {
                drop(guard);
                match e.kind() {
                    std::io::ErrorKind::TimedOut => {
                        Err(Error::new(Status::Timeout, "Timed out writing an RPC command: the agent is not reading stdin"))
                    }
                    std::io::ErrorKind::ConnectionAborted => Err(self.closed_error()),
                    std::io::ErrorKind::BrokenPipe => Err(self.exit_report().unwrap_or_else(|| {
                        Error::new(Status::ProcessExited, format!("Failed to write RPC command: the agent closed its stdin{}", self.stderr_suffix()))
                    })),
                    _ => {
                        // Part of a frame may have gone out: the stream can no longer be trusted.
                        let err = Error::new(Status::Io, format!("Failed to write RPC command: {e}"));
                        self.shut(err.clone());
                        Err(err)
                    }
                }
            }
        }
    }

    /// Sends a host reply where its call came from.
    fn send_outgoing(&self, out: Outgoing, deadline: Deadline) -> Result<()> {
        match out {
            Outgoing::Stdin(mut line) => {
                line.push(b'\n');
                self.write(&line, deadline)
            }
            Outgoing::Bridge(conn, frame) => conn
                .send(&frame)
                .map_err(|e| Error::new(Status::Io, format!("the tool bridge connection is gone: {e}"))),
        }
    }

    /// Taken before a change of the prompts' state that may complete one, and held until the
    /// completions are queued (`push_completions`); `None` when they are not announced.
    pub(crate) fn announcing(&self) -> Option<MutexGuard<'_, ()>> {
        self.opts.prompt_complete_events.then(|| lock(&self.announcing))
    }

    /// A waiter saw its completion: any `prompt_complete` event being queued for it is queued
    /// when this returns.
    pub(crate) fn completions_announced(&self) {
        drop(self.announcing());
    }

    /// A session event from outside the reader (the bridge): retained for the active
    /// collector, then queued.
    /// Queues a `prompt_complete` event for each completion (taken under the state lock,
    /// queued after it is released), when the client was started with `prompt_complete_events`.
    pub(crate) fn push_completions(&self, done: Vec<lifecycle::Completion>) {
        if !self.opts.prompt_complete_events {
            return;
        }
        for c in done {
            self.events.push(events::event_bytes(&c.event()));
        }
    }

    /// A tool the gate blocked: `{"type":"tool_blocked","omprpc":true,"toolCallId","toolName","reason"}`,
    /// queued right before the call's `tool_execution_end` (BlockedNotes).
    fn note_blocked(&self, tool_call_id: &str, tool: &str, reason: &str) {
        let note = json!({"type": "tool_blocked", "omprpc": true, "toolCallId": tool_call_id, "toolName": tool, "reason": reason});
        let bytes = note.to_string().into_bytes();
        let mut st = self.state();
        if let Some(now) = st.blocked.hold(tool_call_id, bytes) {
            st.life.event(&now, lifecycle::Mark::Other);
            drop(st);
            self.events.push(events::event_bytes(&now));
            self.cond.notify_all(); // a streamed turn's waiter takes it (client::stream)
        }
    }

    /// The host answers an open call: the answer restarts the turn's idle clock, which stood
    /// still while the call was open.
    fn host_answer<T>(&self, answer: impl FnOnce(&mut HostRegistry) -> Result<T>) -> Result<T> {
        let mut st = self.state();
        let out = answer(&mut st.host)?;
        st.life.touch();
        Ok(out)
    }

    /// The agent waits on the host (an open host call, policy question or UI request): the
    /// turn's idle timeout does not run meanwhile — a host tool may work silently for long.
    fn awaiting_host(&self, st: &State) -> bool {
        st.host.open_calls() > 0 || !st.policy.is_empty() || self.ui.open_requests() > 0
    }

    /// A frame the library sends by itself, from the writer thread.
    fn send_internal(&self, frame: Vec<u8>) {
        let mut line = frame;
        line.push(b'\n');
        let _ = self.internal.send(line);
    }

    fn next_request_id(&self) -> String {
        format!("req_{}", self.next_id.fetch_add(1, Ordering::Relaxed) + 1)
    }
}

/// How a wait on the client's state behaves (see `wait_state_since`).
#[derive(Clone, Copy, Default)]
struct Wait {
    /// The wait stands for something that began before any close (the handshake), so a close
    /// always reports its reason rather than "closed".
    began_before: bool,
    /// Fail when no session event arrives for this long (the turn idle timeout).
    idle: Option<Duration>,
    /// Probe the agent's activity where the stream is ambiguous (turns, wait_for_idle).
    probe: bool,
}

impl bridge::Host for Shared {
    fn panicked(&self, thread: &str, what: &str) {
        self.log.log(Level::Error, "panic", "a library thread panicked", json!({"thread": thread, "panic": what}));
        self.shut(Error::new(Status::Panic, format!("a bug in omprpc: its {thread} thread panicked: {what}")));
    }

    fn fault(&self, thread: &str) {
        Shared::fault(self, thread);
    }

    fn tool_call(&self, conn: &Arc<Conn>, frame: Map<String, Value>) {
        // The same shape as omp's own host_tool_call, so the host handles both alike.
        let mut call = Map::new();
        call.insert("type".into(), json!("host_tool_call"));
        call.insert("id".into(), json!(conn.host_id(frame.get("id").and_then(Value::as_str).unwrap_or_default())));
        call.insert("toolCallId".into(), frame.get("toolCallId").cloned().unwrap_or(Value::Null));
        call.insert("toolName".into(), frame.get("tool").cloned().unwrap_or(Value::Null));
        call.insert("arguments".into(), frame.get("args").cloned().unwrap_or(Value::Null));
        call.insert("bridged".into(), json!(true));
        let outcome = self.state().host.on_tool_call(&call, Route::Bridge(conn.clone()));
        match outcome {
            Incoming::Deliver => {
                self.events.push(events::event_bytes(Value::Object(call).to_string().as_bytes()));
            }
            Incoming::Reject(out) => {
                let _ = self.send_outgoing(out, None);
                let mut r = Map::new();
                r.insert("message".into(), json!("answered a bridged tool call with an error by itself"));
                r.insert("frame".into(), Value::Object(call));
                self.protocol_error(r);
            }
            Incoming::Unanswerable(why) => {
                let mut r = Map::new();
                r.insert("message".into(), json!(why));
                self.protocol_error(r);
            }
        }
    }

    fn cancel(&self, conn: &Arc<Conn>, target: &str, reason: Option<&str>) {
        let target = &conn.host_id(target);
        let mut st = self.state();
        if st.host.on_cancel(target) {
            drop(st);
            let ev = json!({"type": "host_tool_cancel", "id": format!("{target}-cancel"), "targetId": target, "bridged": true});
            self.events.push(events::event_bytes(ev.to_string().as_bytes()));
        } else if let Some((_, call, tool)) = st.policy.remove(target) {
            drop(st);
            // The gate stopped waiting for the verdict (its timeout, tool_policy.timeout_ms):
            // the question is void — the host hears so, a late verdict gets NOT_FOUND — and,
            // unless the gate fails open, the tool was blocked with the gate's own words, which
            // the cancel carries (the extension is where they are written).
            let ev = json!({"type": "policy_eval_cancel", "omprpc": true, "id": format!("{target}-cancel"), "targetId": target,
                            "toolCallId": call, "toolName": tool});
            self.events.push(events::event_bytes(ev.to_string().as_bytes()));
            let gate = self.opts.bridge.as_ref().and_then(|p| p.gate.as_ref());
            if gate.is_some_and(|g| !g.fail_open) {
                let reason = reason.unwrap_or("blocked: the gate gave up waiting for the host's verdict");
                self.note_blocked(&call, &tool, reason);
            }
        }
    }

    fn policy_eval(&self, conn: &Arc<Conn>, frame: Map<String, Value>) {
        let ext = frame.get("id").and_then(Value::as_str).unwrap_or_default();
        let id = conn.host_id(ext);
        let tool = frame.get("tool").and_then(Value::as_str).unwrap_or_default().to_string();
        let call = frame.get("toolCallId").and_then(Value::as_str).unwrap_or_default().to_string();
        let mut ev = json!({"type": "policy_eval", "id": id, "toolName": tool, "toolCallId": call,
                            "arguments": frame.get("args").cloned().unwrap_or(Value::Null)});
        // Only when the agent says (pi 0.99+: a call a codemode script made): absent otherwise,
        // as before, so hosts that match the event's keys see no change.
        if let Some(parent) = frame.get("parentToolCallId").and_then(Value::as_str) {
            ev["parentToolCallId"] = json!(parent);
        }
        {
            let mut st = self.state();
            if st.close_reason.is_some() {
                drop(st);
                let _ = conn.send(json!({"id": ext, "error": "the host closed the session"}).to_string().as_bytes());
                return;
            }
            st.policy.insert(id, (conn.clone(), call, tool));
        }
        self.events.push(events::event_bytes(ev.to_string().as_bytes()));
    }

    fn policy_decided(&self, tool_call_id: &str, tool: &str, block: bool, reason: &str) {
        if block {
            self.note_blocked(tool_call_id, tool, reason);
        }
    }

    fn note(&self, level: Level, message: &str) {
        self.log.log(level, "bridge", message, Value::Null);
    }

    fn hello(&self, _conn: &Arc<Conn>, frame: &Map<String, Value>) {
        self.log.log(Level::Info, "bridge", "the bridge extension said hello", json!({"tools": frame.get("tools"), "gate": frame.get("gate")}));
        let mut st = self.state();
        if st.bridge_hello.is_none() {
            let mut kept = frame.clone();
            kept.remove("token");
            st.bridge_hello = Some(kept);
        }
        drop(st);
        self.cond.notify_all();
    }

    fn disconnected(&self, conn: &Arc<Conn>) {
        let ids = {
            let mut st = self.state();
            st.policy.retain(|_, (c, _, _)| !Arc::ptr_eq(c, conn));
            st.host.cancel_route(conn)
        };
        for target in ids {
            let ev = json!({"type": "host_tool_cancel", "id": format!("{target}-cancel"), "targetId": target, "bridged": true});
            self.events.push(events::event_bytes(ev.to_string().as_bytes()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::BlockedNotes;

    #[test]
    fn a_blocked_note_waits_for_its_calls_end_unless_the_end_came_first() {
        let mut n = BlockedNotes::default();
        assert_eq!(n.hold("a", b"note a".to_vec()), None, "held until a ends");
        assert_eq!(n.ended("b"), None, "b had no note");
        assert_eq!(n.ended("a"), Some(b"note a".to_vec()));
        // The gate's timeout: pi's end may be read before the note is made.
        assert_eq!(n.hold("b", b"late b".to_vec()), Some(b"late b".to_vec()), "b ended already: now");
        assert_eq!(n.hold("c", b"note c".to_vec()), None);
        assert_eq!(n.hold("d", b"note d".to_vec()), None);
        assert_eq!(n.drain(), [b"note c".to_vec(), b"note d".to_vec()], "at close, what still waits, in order");
        for i in 0..super::ENDED_CALLS_REMEMBERED {
            n.ended(&format!("x{i}"));
        }
        assert_eq!(n.hold("a", b"a again".to_vec()), None, "an end long past is forgotten");
    }

    use super::*;

    #[test]
    fn request_lines_keep_params_and_refuse_reserved_keys() {
        let p = parse_params(Some(r#"{"message":"hi \"x\"","n":1}"#)).unwrap();
        let line = request_line("req_1", "prompt", p.as_ref()).unwrap();
        assert_eq!(line, b"{\"id\":\"req_1\",\"type\":\"prompt\",\"message\":\"hi \\\"x\\\"\",\"n\":1}\n");
        let bad = parse_params(Some(r#"{"id":"x"}"#)).unwrap();
        assert!(request_line("req_1", "x", bad.as_ref()).is_err());
        assert_eq!(parse_params(Some("[1]")).unwrap_err().status, Status::InvalidJson);
        assert_eq!(parse_params(Some("{")).unwrap_err().status, Status::InvalidJson);
        assert!(parse_params(Some("null")).unwrap().is_none());
    }
}
