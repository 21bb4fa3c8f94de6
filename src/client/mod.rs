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
pub mod lifecycle;
pub mod operations;
pub mod options;
pub mod pending;
pub(crate) mod reader;
pub mod ui;

use std::collections::VecDeque;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;
use serde_json::{json, Map, Value};

use crate::bridge::{self, Bridge, Conn};
use crate::error::{Error, Result, Status};
use crate::observe::{Counters, Level, Logger};
use crate::protocol::argv::{self, Flavor};
use crate::protocol::chunks::{ChunkDecoder, ChunkLimits};
use crate::transport::process::{self, Exit, Process, Signal};
use crate::transport::record::{self, Recorder};
use crate::transport::StderrRing;
use crate::turn;
use crate::wait::lock;
use events::{EventBytes, EventQueue};
use host::{HostRegistry, Incoming, Outgoing, Route};
use lifecycle::Lifecycle;
use options::{Handshake, Options, UiPolicy};
use pending::{Pending, Reply, Slot as ReplySlot};
use ui::UiQueue;

/// Protocol errors kept for `protocol_errors` (oldest dropped).
const PROTOCOL_ERROR_MEMORY: usize = 128;

/// How long a call may wait: a deadline, or none.
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
    /// The bridge extension's hello (its authenticated frame): the agent loaded it.
    bridge_hello: Option<Map<String, Value>>,
    /// The activity probe in flight: it outlives the wait that sent it (a waiter whose
    /// deadline passes leaves the answer to the next), so no answer is ever cut off.
    probe: Option<InflightProbe>,
    /// Operation ends not yet claimed by the call that waits on them (client::operations).
    ops: operations::Operations,
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
/// most are never nested): `state` → `pending` (a waiter abandons its probe's request while it
/// holds the state). The others — `stdin` (held across a write to the agent, which has a
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
    pending: Mutex<Pending>,
    state: Mutex<State>,
    cond: Condvar,
    events: EventQueue,
    ui: UiQueue,
    stderr: Mutex<StderrRing>,
    decoder: Mutex<ChunkDecoder>,
    next_id: AtomicU64,
    internal: Sender<Vec<u8>>,
    bridge: Mutex<Option<Bridge>>,
    /// A private directory of the client's own files (system prompts), removed at close.
    scratch: Option<std::path::PathBuf>,
    /// The session recording (`record_path`); None: one branch per frame, nothing else.
    recorder: Option<Recorder>,
    /// The log channel (off unless `log_level` or `OMPRPC_LOG`) and the counters.
    log: Logger,
    counters: Counters,
}

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

    fn close_reason(&self) -> Option<Error> {
        self.state().close_reason.clone()
    }

    fn closed_error(&self) -> Error {
        match self.close_reason() {
            Some(r) => Error::closed_because(&r),
            None => Error::new(Status::Closed, "the client is closed"),
        }
    }

    /// Marks the client closed (the first reason wins) and wakes every waiter at once.
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

    fn shut(&self, reason: Error) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        self.log.log(Level::Info, "lifecycle", "the client is closing", json!({"status": reason.status.name(), "reason": reason.message}));
        let (policy_questions, bridge_replies) = {
            let mut st = self.state();
            st.close_reason = Some(reason.clone());
            // The reason, the request table and the turn close together, under the state lock
            // (state → pending): a caller woken by any of them finds the reason in `info`, and a
            // call it makes next finds the table closed (CLOSED, naming the reason) — it cannot
            // slip in before the table closes and get the reason itself.
            lock(&self.pending).close(&reason);
            st.life.close(&reason);
            let questions: Vec<(String, Arc<Conn>)> = st.policy.drain().map(|(id, (conn, _, _))| (id, conn)).collect();
            (questions, st.host.close())
        };
        // Written after the state lock is released (no I/O under it): every open policy
        // question and every bridged call still open gets its one reply, an error saying why.
        for (id, conn) in policy_questions {
            let _ = conn.send(json!({"id": conn.ext_id(&id), "error": "the host closed the session"}).to_string().as_bytes());
        }
        for r in bridge_replies {
            if let Outgoing::Bridge(conn, frame) = r {
                let _ = conn.send(&frame);
            }
        }
        self.cond.notify_all();
        self.ui.close(&reason);
        self.events.close(reason);
        self.closing.set();
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
        match process::write_all(stdin.as_raw_fd(), line, deadline, self.closing.raw()) {
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
                    std::io::ErrorKind::BrokenPipe => Err(Error::new(
                        Status::ProcessExited,
                        format!("Failed to write RPC command: the agent closed its stdin{}", self.stderr_suffix()),
                    )),
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

    /// A session event from outside the reader (the bridge): retained for the active
    /// collector, then queued.
    fn bridge_session_event(&self, v: Value) {
        let bytes = v.to_string().into_bytes();
        self.state().life.event(&bytes, lifecycle::Mark::Other);
        self.events.push(events::event_bytes(&bytes));
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

    /// Sends a request and waits for its response. `track` marks a prompt-like command
    /// (with whether it is queued into a live run).
    fn call(&self, id: &str, ty: &str, line: &[u8], deadline: Deadline, track: Option<bool>) -> Reply {
        let slot = ReplySlot::new();
        lock(&self.pending).insert(id.to_string(), ty, slot.clone())?;
        if let Some(streaming) = track {
            self.state().life.track(id, streaming);
        } else if ty == "steer" || ty == "follow_up" {
            // Before the write: the agent may run it by itself once the current run ends.
            self.state().life.asked_to_queue();
        }
        let sent = Instant::now();
        if track.is_some() {
            // Before the write: the reader may see the prompt's first event before it returns.
            self.counters.prompt_sent();
        }
        if let Err(e) = self.write(line, deadline) {
            lock(&self.pending).remove(id);
            if track.is_some() {
                self.state().life.rejected(id, &e);
            }
            self.log.log(Level::Warn, "request", "sending a request failed", json!({"type": ty, "id": id, "status": e.status.name()}));
            return Err(e);
        }
        self.counters.requests_sent.fetch_add(1, Ordering::Relaxed);
        // Type, id, size and latency only: params (prompts, tool arguments) are never logged.
        // Checked first so that, with logs off, a request builds no record at all.
        if self.log.enabled(Level::Debug) {
            self.log.log(Level::Debug, "request", "request sent", json!({"type": ty, "id": id, "bytes": line.len()}));
        }
        let reply = self.wait_reply(id, ty, &slot, deadline);
        if self.log.enabled(Level::Debug) {
            let ms = sent.elapsed().as_secs_f64() * 1000.0;
            let fields = match &reply {
                Ok(data) => json!({"type": ty, "id": id, "ok": true, "latency_ms": ms, "data_bytes": data.as_ref().map_or(0, Vec::len)}),
                Err(e) => json!({"type": ty, "id": id, "ok": false, "latency_ms": ms, "status": e.status.name()}),
            };
            self.log.log(Level::Debug, "request", "response received", fields);
        }
        reply
    }

    fn wait_reply(&self, id: &str, ty: &str, slot: &ReplySlot, deadline: Deadline) -> Reply {
        if let Some(reply) = slot.wait(deadline) {
            return reply;
        }
        lock(&self.pending).abandon(id);
        // The answer may have raced the timeout: prefer it.
        if let Some(reply) = slot.wait(Some(Instant::now())) {
            return reply;
        }
        Err(Error::new(Status::Timeout, format!("Timed out waiting for response to {ty}{}", self.stderr_suffix())))
    }

    fn request(&self, ty: &str, params: Option<&Map<String, Value>>, deadline: Deadline) -> Reply {
        if ty.is_empty() {
            return Err(Error::invalid("the command type must not be empty"));
        }
        let id = self.next_request_id();
        let line = request_line(&id, ty, params)?;
        let track = is_prompt_command(ty).then(|| params.is_some_and(|p| p.get("streamingBehavior").is_some_and(|v| !v.is_null())));
        self.call(&id, ty, &line, deadline, track)
    }

    /// Waits on the state condition until `done` holds, the client closes, the deadline or
    /// the idle timeout passes — asking the agent whether it is idle where its stream leaves
    /// that open (`how.probe`).
    fn wait_state_since<T>(
        &self,
        deadline: Deadline,
        timeout_message: &str,
        how: Wait,
        done: &mut dyn FnMut(&mut State) -> Option<T>,
    ) -> Result<T> {
        let mut st = self.state();
        let mut first = !how.began_before;
        loop {
            if let Some(v) = done(&mut st) {
                return Ok(v);
            }
            if let Some(e) = &st.close_reason {
                // A wait the close interrupted learns why; one begun after it, that it is closed.
                return Err(if first { Error::closed_because(e) } else { e.clone() });
            }
            first = false;
            // The idle clock stands still while the agent waits on the host.
            let idle_deadline = how.idle.filter(|_| !self.awaiting_host(&st)).map(|i| st.life.last_event + i);
            let probe_at = if how.probe { self.opts.activity_probe.and_then(|q| st.life.probe_due(q)) } else { None };
            let now = Instant::now();
            // Before any timeout: an answer that came is used, and a probe that is due goes out
            // (a wait whose deadline has passed leaves its answer to the next).
            if how.probe {
                if let Some(p) = &st.probe {
                    if let Some(reply) = p.slot.wait(Some(now)) {
                        let (starts, id) = (p.starts, p.id.clone());
                        st.probe = None;
                        let answer = self.probe_answer(&reply);
                        self.log.log(Level::Debug, "activity", "the agent said whether it is idle", json!({"id": id, "answer": format!("{answer:?}")}));
                        st.life.probed(answer, starts);
                        continue;
                    }
                    if now >= p.sent + self.probe_patience() {
                        // No answer for a request's whole timeout: count it as busy, ask again later.
                        let (starts, id) = (p.starts, p.id.clone());
                        st.probe = None;
                        lock(&self.pending).abandon(&id);
                        st.life.probed(lifecycle::Probe::Running, starts);
                        continue;
                    }
                } else if probe_at.is_some_and(|p| now >= p) {
                    st = self.send_probe(st);
                    continue;
                }
            }
            if let (Some(d), Some(i)) = (idle_deadline, how.idle) {
                if now >= d {
                    drop(st);
                    return Err(Error::new(
                        Status::Timeout,
                        format!("no event from the agent for {} ms (turn_idle_timeout_ms){}", i.as_millis(), self.stderr_suffix()),
                    ));
                }
            }
            if let Some(d) = deadline {
                if now >= d {
                    drop(st);
                    return Err(Error::new(Status::Timeout, format!("{timeout_message}{}", self.stderr_suffix())));
                }
            }
            // A probe in flight: its answer wakes this wait (the reader notifies), else its patience ends.
            let probe_wake = st.probe.as_ref().map(|p| p.sent + self.probe_patience());
            let probe_at = if st.probe.is_some() { probe_wake } else { probe_at };
            st = match [deadline, idle_deadline, probe_at].into_iter().flatten().min() {
                None => self.cond.wait(st).unwrap_or_else(std::sync::PoisonError::into_inner),
                Some(d) => self.cond.wait_timeout(st, d.saturating_duration_since(now)).unwrap_or_else(std::sync::PoisonError::into_inner).0,
            };
        }
    }

    /// A wait for the agent's runs: the idle timeout, and probes where the stream is ambiguous.
    fn turn_wait(&self) -> Wait {
        Wait { began_before: false, idle: self.opts.turn_idle_timeout, probe: true }
    }

    /// How long a probe may wait for its answer before it counts as "busy".
    fn probe_patience(&self) -> Duration {
        self.opts.request_timeout.unwrap_or(Duration::from_secs(30))
    }

    /// Sends a `get_state` to ask whether the agent runs or holds queued messages, without
    /// waiting for it (the lock is released for the write, as for every write).
    fn send_probe<'a>(&'a self, mut st: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        let starts = st.life.starts_seen();
        let id = self.next_request_id();
        let slot = ReplySlot::new();
        // The slot is in place before the request can be answered.
        st.probe = Some(InflightProbe { id: id.clone(), slot: slot.clone(), starts, sent: Instant::now() });
        drop(st);
        let sent = request_line(&id, "get_state", None).and_then(|line| {
            lock(&self.pending).insert(id.clone(), "get_state", slot)?;
            self.write(&line, deadline_after(Some(self.probe_patience()))).map_err(|e| {
                lock(&self.pending).remove(&id);
                e
            })
        });
        self.counters.activity_probes.fetch_add(1, Ordering::Relaxed);
        self.log.log(Level::Debug, "activity", "asked the agent whether it is idle", json!({"id": id, "ok": sent.is_ok()}));
        let mut st = self.state();
        if sent.is_err() {
            // Not sent (closing, or the pipe is stuck): busy for now; a close ends the wait.
            st.probe = None;
            st.life.probed(lifecycle::Probe::Running, starts);
        }
        st
    }

    /// What a probe's reply says; a failure counts as "running" (asked again later).
    fn probe_answer(&self, reply: &Reply) -> lifecycle::Probe {
        match reply {
            Ok(Some(data)) => serde_json::from_slice::<Value>(data).map(|v| lifecycle::Probe::from_state(&v)).unwrap_or(lifecycle::Probe::Running),
            _ => lifecycle::Probe::Running,
        }
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

/// Releases the lifecycle slot when a collector call returns, however it returns.
struct Slot<'a> {
    shared: &'a Shared,
    op: &'static str,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.shared.state().life.release(self.op);
    }
}

impl Client {
    /// Spawns the agent and completes the handshake; on any failure the agent is torn down.
    pub fn start(options_json: &str) -> Result<Client> {
        // Before the options are read there is no client logger: OMPRPC_LOG still sees why.
        let early = |e: Error| {
            if crate::observe::stderr_level().is_some() {
                Logger::stderr_only().log(Level::Error, "start", "start failed: bad options", json!({"status": e.status.name(), "error": e.message}));
            }
            e
        };
        let map = options::parse_object(options_json).map_err(early)?;
        let mut opts = Options::from_map(&map).map_err(early)?;
        let log = Logger::new(opts.log_level, opts.log_queue_capacity, options::log_secrets(&map, &opts.spawn));
        let failed = |e: Error, step: &str| {
            log.log(Level::Error, "start", &format!("start failed: {step}"), json!({"status": e.status.name(), "error": e.message}));
            e
        };
        // The version, once per executable: the argv is built for it, and an unsupported one
        // fails here, before the agent runs.
        if let Some(probe) = opts.version_probe.take() {
            let timeout = opts.startup_timeout.unwrap_or(Duration::from_secs(30));
            match crate::protocol::version::probe(&probe, timeout) {
                // Logged with the spawn record below.
                Ok(Some(probed)) => opts = Options::from_map_at(&map, Some(probed)).map_err(|e| failed(e, "agent version"))?,
                Ok(None) => log.log(Level::Warn, "start", "the agent's --version named no version; argv for the newest", json!({"argv": argv::redact(&probe.argv)})),
                Err(e) => log.log(Level::Warn, "start", "the agent's --version failed; argv for the newest", json!({"argv": argv::redact(&probe.argv), "error": e})),
            }
        }
        if let Some(v) = opts.agent_version {
            let (_, newest) = crate::protocol::version::supported(opts.flavor);
            if v > newest {
                log.log(Level::Warn, "start", "agent newer than the newest tested", json!({"version": v.to_string(), "newest_tested": newest.to_string()}));
            }
        }
        let mut bridge = match &opts.bridge {
            Some(plan) => Some(Bridge::prepare(plan).map_err(|e| failed(e, "preparing the tool bridge"))?),
            None => None,
        };
        if let Some(b) = &bridge {
            let path = b.extension_path().to_string_lossy().into_owned();
            for a in opts.spawn.argv.iter_mut().filter(|a| a.as_str() == argv::EXTENSION_PLACEHOLDER) {
                *a = path.clone();
            }
        }
        // System prompts as files: written into a private directory removed at close — and,
        // through the guard, on every way out of a start that fails before the client exists.
        let scratch = if opts.system_prompt_via_file {
            let dir = crate::env::private_dir("omprpc-agent").map_err(|e| Error::new(Status::Io, format!("creating a private directory: {e}")))?;
            let guard = crate::env::RemoveDir(Some(dir.clone()));
            let mut n = 0;
            let written = argv::system_prompts_to_files(&mut opts.spawn.argv, |flag, text| {
                use std::io::Write;
                use std::os::unix::fs::OpenOptionsExt;
                n += 1;
                let path = dir.join(format!("{}-{n}.md", flag.trim_start_matches('-')));
                std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path)?.write_all(text.as_bytes())?;
                Ok(path.to_string_lossy().into_owned())
            });
            if let Err(e) = written {
                return Err(failed(Error::new(Status::Io, format!("writing the system prompt file: {e}")), "system prompt files"));
            }
            guard
        } else {
            crate::env::RemoveDir(None)
        };
        let argv_shown = argv::redact(&opts.spawn.argv);
        // Opened before the agent exists, so a bad path fails start with nothing to tear down.
        let recorder = match &opts.record_path {
            None => None,
            Some(p) => match Recorder::create(p, opts.flavor.name(), &argv_shown) {
                Ok(r) => Some(r),
                Err(e) => return Err(failed(Error::new(Status::Io, format!("cannot open record_path {}: {e}", p.display())), "record_path")),
            },
        };
        // Everything that can fail without the agent is made before it runs.
        let io = |e: std::io::Error| Error::new(Status::Io, e.to_string());
        let closing = Signal::new().map_err(io)?;
        let reader_stop = Signal::new().map_err(io)?;
        let events = EventQueue::new(opts.event_queue_capacity, opts.event_queue_max_bytes).map_err(io)?;
        let spawned = process::spawn(&opts.spawn).map_err(|e| Error::new(Status::Io, e.to_string()));
        if let Err(e) = &spawned {
            log.log(Level::Error, "spawn", "spawning the agent failed", json!({"argv": argv_shown, "error": e.message}));
        }
        let (process, pipes) = spawned?;
        // Env names and argv as shown (system prompts redacted): never env values.
        log.log(Level::Info, "spawn", "agent spawned", json!({"pid": process.pid(), "argv": argv_shown, "flavor": opts.flavor.name(),
            "agent_version": opts.agent_version.map(|v| v.to_string()),
            "env_names": opts.spawn.env.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), "inherit_env": opts.spawn.inherit_env}));
        let (internal_tx, internal_rx) = crossbeam_channel::unbounded::<Vec<u8>>();
        let shared = Arc::new(Shared {
            flavor: opts.flavor,
            argv_shown,
            process,
            stdin: Mutex::new(Some(pipes.stdin)),
            closing,
            reader_stop,
            closed: AtomicBool::new(false),
            pending: Mutex::new(Pending::default()),
            state: Mutex::new(State {
                life: Lifecycle::new(opts.max_event_history, opts.max_turn_bytes, opts.turn_events),
                host: HostRegistry::default(),
                ready: None,
                protocol_version: 1,
                protocol_errors: VecDeque::new(),
                close_reason: None,
                policy: Default::default(),
                bridge_hello: None,
                probe: None,
                ops: operations::Operations::default(),
            }),
            cond: Condvar::new(),
            events,
            ui: UiQueue::new(opts.ui_policy.clone()),
            stderr: Mutex::new(StderrRing::new(opts.max_stderr_lines)),
            decoder: Mutex::new(ChunkDecoder::default()),
            next_id: AtomicU64::new(0),
            internal: internal_tx,
            bridge: Mutex::new(None),
            // From here the client's teardown removes it.
            scratch: scratch.keep(),
            recorder,
            opts,
            log,
            counters: Counters::new(),
        });
        // From here a failure tears the client down (agent, bridge, threads, scratch) by close.
        let client = Client { shared: shared.clone(), threads: Mutex::new(Vec::new()), teardown: Mutex::new(None) };
        if let Some(b) = bridge.as_mut() {
            if let Some(plan) = &shared.opts.bridge {
                shared.state().host.set_tools(plan.tool_names());
            }
            if let Err(e) = b.serve(shared.clone()) {
                *lock(&shared.bridge) = bridge;
                let _ = client.close();
                return Err(e);
            }
        }
        *lock(&shared.bridge) = bridge;
        let s = shared.clone();
        let reader = std::thread::Builder::new()
            .name("omprpc-reader".into())
            .spawn(move || s.clone().guarded("reader", || reader::run(s, pipes.stdout, pipes.stderr)));
        let s = shared.clone();
        let writer = std::thread::Builder::new().name("omprpc-writer".into()).spawn(move || {
            s.guarded("writer", || {
                while let Ok(line) = internal_rx.recv() {
                    if line.is_empty() {
                        break; // close() asks the writer to stop
                    }
                    s.fault("writer");
                    let _ = s.write(&line, None);
                }
            })
        });
        let mut threads = Vec::new();
        let spawned: Result<()> = [reader, writer].into_iter().try_for_each(|t| t.map(|t| threads.push(t)).map_err(io));
        *lock(&client.threads) = threads;
        if let Err(e) = spawned {
            client.shared.log.log(Level::Error, "start", "start failed: starting the client's threads", json!({"error": e.message}));
            let _ = client.close();
            return Err(e);
        }
        drop(shared);
        let began = Instant::now();
        if let Err(e) = client.handshake() {
            // A step that started after the agent died says "closed"; the cause is more useful.
            let e = match client.shared.close_reason() {
                Some(reason) if e.status == Status::Closed => reason,
                _ => e,
            };
            client.shared.log.log(Level::Error, "start", "start failed: handshake", json!({"status": e.status.name(), "error": e.message}));
            let _ = client.close();
            return Err(e);
        }
        let s = &client.shared;
        s.log.log(Level::Info, "start", "handshake done", json!({"handshake": format!("{:?}", s.opts.handshake).to_lowercase(),
            "protocolVersion": s.state().protocol_version, "ms": began.elapsed().as_secs_f64() * 1000.0}));
        Ok(client)
    }

    fn handshake(&self) -> Result<()> {
        let s = &self.shared;
        let deadline = deadline_after(s.opts.startup_timeout);
        match s.opts.handshake {
            Handshake::Ready => {
                s.wait_state_since(deadline, "Timed out waiting for RPC ready signal", Wait { began_before: true, ..Wait::default() }, &mut |st| {
                    st.ready.as_ref().map(|_| ())
                })?;
            }
            Handshake::Probe => {
                s.request("get_state", None, deadline).map_err(|e| e.context("the agent did not answer its start-up probe (get_state): "))?;
            }
            Handshake::None => {}
        }
        if s.opts.bridge.is_some() {
            self.wait_bridge_hello(deadline)?;
        }
        if s.opts.negotiate_v2 {
            self.negotiate(deadline)?;
        }
        if let Some(tools) = &s.opts.host_tools {
            self.set_host_tools(tools.clone(), deadline)?;
        }
        if let Some(schemes) = &s.opts.host_uri_schemes {
            self.set_host_uri_schemes(schemes.clone(), deadline)?;
        }
        Ok(())
    }

    /// A requested bridge or gate must prove it loaded: the generated extension says hello when
    /// the agent loads it (before pi answers its first command; the factory awaits the
    /// acknowledgement). An agent that drops `--extension` silently (pi before 0.35) would run
    /// with no host tools and no policy gate: start fails instead of failing open.
    fn wait_bridge_hello(&self, deadline: Deadline) -> Result<()> {
        let s = &self.shared;
        let waited = s.wait_state_since(deadline, "", Wait { began_before: true, ..Wait::default() }, &mut |st| st.bridge_hello.as_ref().map(|_| ()));
        match waited {
            Err(e) if e.status == Status::Timeout => {
                let gate = s.opts.bridge.as_ref().is_some_and(|p| p.gate.is_some());
                let what = if gate { "the tool policy gate and any bridged host tools" } else { "the bridged host tools" };
                Err(Error::new(
                    Status::Protocol,
                    format!(
                        "the agent did not load the omprpc bridge extension: no hello over the tool bridge within the \
                         start-up timeout ({} ms), so {what} would not be active. An agent that ignores --extension \
                         (pi before 0.35) cannot be used with host tools or tool_policy{}{}",
                        s.opts.startup_timeout.map_or(0, |d| d.as_millis()),
                        s.opts.agent_version.as_ref().map_or(String::new(), |v| format!(" (agent: {} {v})", s.flavor.name())),
                        s.stderr_suffix()
                    ),
                ))
            }
            other => other,
        }
    }

    /// Protocol v2 when the ready frame offers it; v1 (recorded) when negotiation fails.
    fn negotiate(&self, deadline: Deadline) -> Result<()> {
        let s = &self.shared;
        let Some(ready) = s.state().ready.clone() else { return Ok(()) };
        let ready: Value = serde_json::from_slice(&ready).unwrap_or(Value::Null);
        let offers_v2 = ready["supportedProtocolVersions"].as_array().is_some_and(|a| a.iter().any(|v| v.as_u64() == Some(2)));
        if !offers_v2 {
            return Ok(());
        }
        let defaults = ChunkLimits::default();
        let limits = ChunkLimits {
            min_frame: ready["maxFrameBytes"].as_u64().map_or(defaults.min_frame, |v| v as usize),
            max_frame: ready["maxReassembledFrameBytes"].as_u64().map_or(defaults.max_frame, |v| v as usize),
        };
        if limits.min_frame < 1024 || limits.max_frame < limits.min_frame || limits.max_frame > 1 << 30 {
            let mut r = Map::new();
            r.insert("message".into(), json!(format!("ignoring protocol v2: implausible limits {ready}")));
            s.protocol_error(r);
            return Ok(());
        }
        // The server switches right after its success response: decode chunks from now on.
        lock(&s.decoder).enable(limits);
        let mut p = Map::new();
        p.insert("protocolVersion".into(), json!(2));
        let outcome = s.request("negotiate_protocol", Some(&p), deadline);
        let accepted = matches!(&outcome, Ok(Some(d)) if serde_json::from_slice::<Value>(d).ok().and_then(|v| v["protocolVersion"].as_u64()) == Some(2));
        if accepted {
            s.state().protocol_version = 2;
            s.log.log(Level::Info, "protocol", "protocol v2 negotiated", json!({"maxFrameBytes": limits.min_frame, "maxReassembledFrameBytes": limits.max_frame}));
            return Ok(());
        }
        lock(&s.decoder).disable();
        match outcome {
            Err(e) if matches!(e.status, Status::Closed | Status::ProcessExited | Status::Protocol | Status::Io) => Err(e),
            other => {
                let why = match other {
                    Err(e) => e.message,
                    Ok(d) => format!("unexpected answer {}", String::from_utf8_lossy(d.as_deref().unwrap_or(b"null"))),
                };
                let mut r = Map::new();
                r.insert("message".into(), json!(format!("protocol v2 negotiation failed ({why}); continuing with protocol v1")));
                s.protocol_error(r);
                Ok(())
            }
        }
    }

    pub fn default_request_deadline(&self) -> Deadline {
        deadline_after(self.shared.opts.request_timeout)
    }

    pub fn default_turn_deadline(&self) -> Deadline {
        deadline_after(self.shared.opts.turn_timeout)
    }

    /// Any command: returns the response's `data` JSON verbatim (`null` when absent). When the
    /// agent acknowledges it as an operation (omp protocol 1.1, client::operations), waits for
    /// the operation's end within the same deadline and returns the end's `data` instead.
    pub fn request(&self, ty: &str, params: Option<&Map<String, Value>>, deadline: Deadline) -> Result<String> {
        let data = self.shared.request(ty, params, deadline)?;
        if operations::waits_for_operation(ty) {
            if let Some(op) = data.as_deref().and_then(operations::acknowledged_operation) {
                let how = Wait { began_before: true, idle: None, probe: false };
                let waiting = format!("Timed out waiting for operation {op} ({ty}) to end");
                let ended = self.shared.wait_state_since(deadline, &waiting, how, &mut |st| st.ops.take(&op))?;
                return ended.map(data_text);
            }
        }
        Ok(data_text(data))
    }

    /// Writes a frame as is: no id, no response awaited (e.g. `widget_layout`).
    pub fn send_frame(&self, frame: &Map<String, Value>) -> Result<()> {
        if !frame.get("type").is_some_and(Value::is_string) {
            return Err(Error::invalid("a frame needs a string \"type\""));
        }
        let mut line = serde_json::to_vec(frame).expect("serialising a map");
        line.push(b'\n');
        self.shared.write(&line, self.default_request_deadline())
    }

    pub(crate) fn prompt_params(message: &str, options: Option<Map<String, Value>>) -> Result<(Map<String, Value>, bool)> {
        let mut p = options.unwrap_or_default();
        // The message may come in the options instead (a JSON string can hold a NUL, a C
        // string cannot) — but not both ways at once.
        let mut message = match p.remove("message") {
            None => message.to_string(),
            Some(Value::String(m)) if message.is_empty() => m,
            Some(Value::String(_)) => return Err(Error::invalid("the message is given twice: as the argument and in the options")),
            Some(_) => return Err(Error::invalid("prompt option \"message\" must be a string")),
        };
        // `content` blocks (text, images, files) become message text and images.
        if let Some(blocks) = p.remove("content") {
            let built = crate::prompt::build(&blocks)?;
            let text = built["message"].as_str().unwrap_or_default();
            if !text.is_empty() {
                if !message.is_empty() {
                    message.push_str("\n\n");
                }
                message.push_str(text);
            }
            if let Some(new) = built["images"].as_array().filter(|a| !a.is_empty()) {
                match p.entry("images").or_insert_with(|| Value::Array(Vec::new())) {
                    Value::Array(images) => images.extend(new.iter().cloned()),
                    _ => return Err(Error::invalid("prompt option \"images\" must be an array of image blocks")),
                }
            }
        }
        let message = message.as_str();
        if let Some(images) = p.get("images") {
            if !images.is_array() && !images.is_null() {
                return Err(Error::invalid("prompt option \"images\" must be an array of image blocks"));
            }
        }
        let streaming = match p.get("streamingBehavior") {
            None | Some(Value::Null) => false,
            Some(Value::String(s)) if s == "steer" || s == "followUp" => true,
            Some(_) => return Err(Error::invalid("prompt option \"streamingBehavior\" must be \"steer\" or \"followUp\"")),
        };
        p.insert("message".into(), Value::String(message.to_string()));
        Ok((p, streaming))
    }

    /// `steer` / `follow_up`: the message and its options (`images`, `content` blocks) as for
    /// a prompt.
    pub fn message_command(&self, command: &str, message: &str, options: Option<Map<String, Value>>, deadline: Deadline) -> Result<()> {
        let (params, _) = Self::prompt_params(message, options)?;
        self.request(command, Some(&params), deadline).map(drop)
    }

    /// `prompt` / `abort_and_prompt`: returns the request id once the agent acknowledged.
    pub fn prompt(&self, command: &str, message: &str, options: Option<Map<String, Value>>, deadline: Deadline) -> Result<String> {
        let (params, streaming) = Self::prompt_params(message, options)?;
        let id = self.shared.next_request_id();
        let line = request_line(&id, command, Some(&params))?;
        self.shared.call(&id, command, &line, deadline, Some(streaming))?;
        Ok(id)
    }

    /// Prompts and waits for that prompt's completion; returns the turn JSON.
    pub fn prompt_and_wait(&self, message: &str, options: Option<Map<String, Value>>, deadline: Deadline) -> Result<String> {
        self.prompt_and_wait_json(message, options, deadline).map(json_text)
    }

    /// The same, as bytes (UTF-8 JSON without NUL; not checked again — it can be 64 MiB).
    pub fn prompt_and_wait_json(&self, message: &str, options: Option<Map<String, Value>>, deadline: Deadline) -> Result<Vec<u8>> {
        let s = &self.shared;
        let (params, streaming) = Self::prompt_params(message, options)?;
        let id = s.next_request_id();
        let line = request_line(&id, "prompt", Some(&params))?;
        {
            let mut st = s.state();
            st.life.acquire("prompt_and_wait")?;
            st.life.collect(Some(id.clone()), turn::TURN_PREFIX);
        }
        let _slot = Slot { shared: s, op: "prompt_and_wait" };
        s.call(&id, "prompt", &line, deadline, Some(streaming))?;
        let collector = s.wait_state_since(deadline, "Timed out waiting for agent_end", s.turn_wait(), &mut |st| {
            if st.life.collector_done() {
                st.life.take_collector()
            } else {
                None
            }
        })?;
        turn::build(&id, collector, s.opts.turn_summary.then(|| s.opts.model.clone()))
    }

    /// Events from now through the next terminal `agent_end`, as a JSON array.
    pub fn collect_events(&self, deadline: Deadline) -> Result<String> {
        self.collect_events_json(deadline).map(json_text)
    }

    pub fn collect_events_json(&self, deadline: Deadline) -> Result<Vec<u8>> {
        let s = &self.shared;
        {
            let mut st = s.state();
            st.life.acquire("collect_events")?;
            st.life.collect(None, b"[");
        }
        let _slot = Slot { shared: s, op: "collect_events" };
        let collector = s.wait_state_since(deadline, "Timed out waiting for agent_end", s.turn_wait(), &mut |st| {
            if st.life.collector_done() {
                st.life.take_collector()
            } else {
                None
            }
        })?;
        turn::events_array(collector)
    }

    /// Waits until the agent is idle by its own account: no run open (whoever started it), no
    /// queued messages, every accepted prompt completed — at once when it already is.
    pub fn wait_for_idle(&self, deadline: Deadline) -> Result<()> {
        let s = &self.shared;
        s.state().life.acquire("wait_for_idle")?;
        let _slot = Slot { shared: s, op: "wait_for_idle" };
        let sticky = s.wait_state_since(deadline, "Timed out waiting for the agent to become idle", s.turn_wait(), &mut |st| {
            st.life.is_idle().then(|| st.life.sticky_error().cloned())
        })?;
        match sticky {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The name of the running lifecycle operation, if any (for bindings and tests).
    pub fn active_operation(&self) -> Option<&'static str> {
        self.shared.state().life.active_operation()
    }

    pub fn next_events(&self, max: usize, deadline: Deadline) -> Result<Vec<EventBytes>> {
        self.shared.events.pop(max.max(1), deadline)
    }

    pub fn event_fd(&self) -> i32 {
        self.shared.events.fd()
    }

    pub fn next_ui_request(&self, deadline: Deadline) -> Result<Vec<u8>> {
        self.shared.ui.next(deadline)
    }

    fn send_ui(&self, id: &str, frame: Vec<u8>) -> Result<()> {
        self.shared.ui.answer(id)?;
        self.shared.state().life.touch();
        let mut line = frame;
        line.push(b'\n');
        self.shared.write(&line, self.default_request_deadline())
    }

    pub fn ui_send_value(&self, id: &str, value: &str) -> Result<()> {
        self.send_ui(id, ui::value_frame(id, value))
    }

    pub fn ui_send_confirmation(&self, id: &str, confirmed: bool) -> Result<()> {
        self.send_ui(id, ui::confirm_frame(id, confirmed))
    }

    pub fn ui_cancel(&self, id: &str, timed_out: bool) -> Result<()> {
        self.send_ui(id, ui::cancel_frame(id, timed_out))
    }

    pub fn set_ui_policy(&self, policy: Option<UiPolicy>) {
        for frame in self.shared.ui.set_policy(policy) {
            self.shared.send_internal(frame);
        }
    }

    /// Sends a registration command; the registry is updated (`set(true)`) before the request
    /// goes out, so a call that follows the response at once is already known, and emptied
    /// (`set(false)`) when the agent refuses it.
    fn register(&self, command: &str, key: &str, list: Value, deadline: Deadline, set: impl Fn(&mut HostRegistry, bool)) -> Result<String> {
        set(&mut self.shared.state().host, true);
        self.update_registry(command, key, list, deadline, |h| set(h, false))
    }

    pub fn set_host_tools(&self, tools: Value, deadline: Deadline) -> Result<String> {
        if self.shared.flavor == Flavor::Pi {
            // pi has no set_host_tools; its host tools come from the bridge extension, which
            // pi loads once, at start. Refuse before anything changes.
            return Err(Error::invalid(
                "pi takes host tools only at start (the start option host_tools, served through the tool bridge)",
            ));
        }
        let names = HostRegistry::check_tools(&tools)?;
        self.register("set_host_tools", "tools", tools, deadline, |h, ok| h.set_tools(if ok { names.clone() } else { Vec::new() }))
    }

    /// `add_host_tools`: registers more host tools, keeping those registered (omp protocol
    /// 1.1). The names are known before the request goes out; a refusal takes back the ones
    /// that were new.
    pub fn add_host_tools(&self, tools: Value, deadline: Deadline) -> Result<String> {
        self.refuse_on_pi("add_host_tools")?;
        let names = HostRegistry::check_tools(&tools)?;
        let added = self.shared.state().host.add_tools(&names);
        self.update_registry("add_host_tools", "tools", tools, deadline, |h| h.remove_tools(&added))
    }

    /// `remove_host_tools {toolNames}`: the names leave the registry once the agent agreed
    /// (until then it may still call them).
    pub fn remove_host_tools(&self, names: Value, deadline: Deadline) -> Result<String> {
        self.refuse_on_pi("remove_host_tools")?;
        let list = HostRegistry::check_names(&names, "host tool names")?;
        let r = self.update_registry("remove_host_tools", "toolNames", names, deadline, |_| {})?;
        self.shared.state().host.remove_tools(&list);
        Ok(r)
    }

    /// `add_host_uri_schemes`: more schemes, keeping those registered; a refusal restores
    /// what was there.
    pub fn add_host_uri_schemes(&self, schemes: Value, deadline: Deadline) -> Result<String> {
        let parsed = HostRegistry::check_schemes(&schemes)?;
        let before = self.shared.state().host.add_schemes(&parsed);
        self.update_registry("add_host_uri_schemes", "schemes", schemes, deadline, |h| h.restore_schemes(&before))
    }

    /// `remove_host_uri_schemes {schemes:[names]}`: removed once the agent agreed.
    pub fn remove_host_uri_schemes(&self, schemes: Value, deadline: Deadline) -> Result<String> {
        let list = HostRegistry::check_names(&schemes, "host URI schemes")?;
        let r = self.update_registry("remove_host_uri_schemes", "schemes", schemes, deadline, |_| {})?;
        self.shared.state().host.remove_schemes(&list);
        Ok(r)
    }

    fn refuse_on_pi(&self, command: &str) -> Result<()> {
        if self.shared.flavor == Flavor::Pi {
            return Err(Error::invalid(format!(
                "pi has no {command}: its host tools come from the tool bridge, fixed at start (the start option host_tools)"
            )));
        }
        Ok(())
    }

    /// Sends an incremental registration command; `undo` runs on the registry when it fails.
    fn update_registry(&self, command: &str, key: &str, list: Value, deadline: Deadline, undo: impl FnOnce(&mut HostRegistry)) -> Result<String> {
        let mut p = Map::new();
        p.insert(key.into(), list);
        let r = self.shared.request(command, Some(&p), deadline);
        if r.is_err() {
            undo(&mut self.shared.state().host);
        }
        Ok(data_text(r?))
    }

    pub fn set_host_uri_schemes(&self, schemes: Value, deadline: Deadline) -> Result<String> {
        let parsed = HostRegistry::check_schemes(&schemes)?;
        self.register("set_host_uri_schemes", "schemes", schemes, deadline, |h, ok| {
            h.set_schemes(if ok { parsed.clone() } else { Vec::new() })
        })
    }

    pub fn host_tool_update(&self, call_id: &str, partial: Value) -> Result<()> {
        let out = self.shared.host_answer(|h| h.tool_update(call_id, partial))?;
        self.shared.send_outgoing(out, self.default_request_deadline())
    }

    pub fn host_tool_result(&self, call_id: &str, result: Value, is_error: bool) -> Result<()> {
        let out = self.shared.host_answer(|h| h.tool_result(call_id, result, is_error))?;
        self.shared.send_outgoing(out, self.default_request_deadline())
    }

    pub fn host_uri_result(&self, request_id: &str, result: Value) -> Result<()> {
        let frame = self.shared.host_answer(|h| h.uri_result_frame(request_id, result))?;
        self.shared.send_outgoing(Outgoing::Stdin(frame), self.default_request_deadline())
    }

    /// The host's verdict on a `policy_eval` event (the policy gate over the agent's own tools).
    pub fn policy_verdict(&self, request_id: &str, allow: bool, reason: &str) -> Result<()> {
        let s = &self.shared;
        let (conn, call, tool) = {
            let mut st = s.state();
            let open = st.policy.remove(request_id);
            st.life.touch();
            open.ok_or_else(|| Error::new(Status::NotFound, format!("no open policy_eval request with id {request_id:?}")))?
        };
        let reason = if !allow && reason.is_empty() { "blocked by the host's policy" } else { reason };
        if !allow {
            s.bridge_session_event(json!({"type": "tool_blocked", "omprpc": true, "toolCallId": call, "toolName": tool, "reason": reason}));
        }
        conn.send(json!({"id": conn.ext_id(request_id), "verdict": {"block": !allow, "reason": reason}}).to_string().as_bytes())
            .map_err(|e| Error::new(Status::Io, format!("the tool bridge connection is gone: {e}")))
    }

    pub fn stderr(&self) -> String {
        lock(&self.shared.stderr).text()
    }

    pub fn protocol_errors(&self) -> String {
        Value::Array(self.shared.state().protocol_errors.iter().cloned().collect()).to_string()
    }

    pub fn info(&self) -> String {
        let s = &self.shared;
        let pending = lock(&s.pending).len();
        let st = s.state();
        let ready = st.ready.as_ref().and_then(|r| serde_json::from_slice::<Value>(r).ok()).unwrap_or(Value::Null);
        json!({
            "pid": s.process.pid(),
            "argv": s.argv_shown,
            "flavor": s.flavor.name(),
            "agentVersion": s.opts.agent_version.as_ref().map(|v| v.to_string()),
            "bridgeLoaded": st.bridge_hello.is_some(),
            "protocolVersion": st.protocol_version,
            "ready": ready,
            "closed": st.close_reason.is_some(),
            "closeReason": st.close_reason.as_ref().map(Error::to_value),
            "activeOperation": st.life.active_operation(),
            "pendingRequests": pending,
        })
        .to_string()
    }

    /// The counters as a JSON object (docs/c-api.md lists the keys).
    pub fn counters(&self) -> String {
        let s = &self.shared;
        let q = s.events.stats();
        let mut m = s.counters.to_map(q.first_push);
        m.insert("events_queued".into(), json!(q.queued));
        m.insert("events_delivered".into(), json!(q.delivered));
        m.insert("events_dropped".into(), json!(q.dropped));
        m.insert("events_held".into(), json!(q.held));
        m.insert("events_held_bytes".into(), json!(q.held_bytes));
        m.insert("requests_pending".into(), json!(lock(&s.pending).len()));
        m.insert("closed".into(), json!(s.closed.load(Ordering::SeqCst)));
        Value::Object(m).to_string()
    }

    /// Up to `max` log records (JSON objects, one per element), waiting until `deadline` for
    /// the first; INVALID_ARGUMENT when the client was started without `log_level`.
    pub fn next_logs(&self, max: usize, deadline: Deadline) -> Result<Vec<String>> {
        self.shared.log.pop(max, deadline)
    }

    /// Idempotent; wakes every blocked call at once, then stops the agent (stdin EOF → grace
    /// → SIGTERM → SIGKILL to its process group) and returns when it is gone.
    pub fn close(&self) -> Result<()> {
        let mut teardown = lock(&self.teardown);
        let s = &self.shared;
        // The same words every binding uses for a call after close (Go ErrClosed, Node ClosedError).
        s.shut(Error::new(Status::Closed, "the client is closed"));
        if teardown.is_some() {
            return Ok(());
        }
        // EOF on stdin starts the agent's own graceful shutdown (drain, dispose, exit).
        let began = Instant::now();
        lock(&s.stdin).take();
        let _ = s.internal.send(Vec::new());
        s.log.log(Level::Debug, "teardown", "stdin closed; waiting for the agent to exit", json!({"stop_grace_ms": s.opts.stop_grace.as_millis() as u64}));
        let exit = s.process.terminate(s.opts.stop_grace, s.opts.kill_grace);
        s.log.log(Level::Info, "teardown", "agent stopped", json!({"pid": s.process.pid(), "exit": exit.to_string(), "ms": began.elapsed().as_secs_f64() * 1000.0}));
        s.reader_stop.set();
        if let Some(b) = lock(&s.bridge).take() {
            b.shutdown();
            s.log.log(Level::Debug, "teardown", "tool bridge shut down", Value::Null);
        }
        if let Some(d) = &s.scratch {
            let _ = std::fs::remove_dir_all(d);
        }
        for t in lock(&self.threads).drain(..) {
            let _ = t.join();
        }
        // Every frame is in: the reader and the writer have stopped.
        if let Some(Err(m)) = s.recorder.as_ref().map(Recorder::flush) {
            s.recording_failed(m);
        }
        s.log.log(Level::Debug, "teardown", "teardown complete", json!({"ms": began.elapsed().as_secs_f64() * 1000.0}));
        // Pollers drain what is left, then get CLOSED.
        s.log.close();
        *teardown = Some(exit);
        Ok(())
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.close();
    }
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

    fn cancel(&self, conn: &Arc<Conn>, target: &str) {
        let target = &conn.host_id(target);
        if self.state().host.on_cancel(target) {
            let ev = json!({"type": "host_tool_cancel", "id": format!("{target}-cancel"), "targetId": target, "bridged": true});
            self.events.push(events::event_bytes(ev.to_string().as_bytes()));
        }
    }

    fn policy_eval(&self, conn: &Arc<Conn>, frame: Map<String, Value>) {
        let ext = frame.get("id").and_then(Value::as_str).unwrap_or_default();
        let id = conn.host_id(ext);
        let tool = frame.get("tool").and_then(Value::as_str).unwrap_or_default().to_string();
        let call = frame.get("toolCallId").and_then(Value::as_str).unwrap_or_default().to_string();
        let ev = json!({"type": "policy_eval", "id": id, "toolName": tool, "toolCallId": call,
                        "arguments": frame.get("args").cloned().unwrap_or(Value::Null)});
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
            self.bridge_session_event(json!({"type": "tool_blocked", "omprpc": true, "toolCallId": tool_call_id, "toolName": tool, "reason": reason}));
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

/// Text of JSON the library assembled from validated frames (always UTF-8).
fn json_text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

fn data_text(data: Option<Vec<u8>>) -> String {
    match data {
        Some(d) => String::from_utf8(d).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
        None => "null".to_string(),
    }
}

#[cfg(test)]
mod tests {
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
