//! The reader thread: classifies every frame from the agent and routes it. It never writes to
//! the agent (replies the library makes itself go through the writer thread) and never runs
//! foreign code.

use std::borrow::Cow;
use std::fs::File;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::observe::Level;

use super::events::{event_bytes, EventBytes};
use super::host::{Incoming, Outgoing, Route};
use super::lifecycle::{Disposition, Mark, RecoveryMark, Stop};
use super::pending::{Pending, Settled};
use super::{is_prompt_command, Shared};
use crate::error::{CommandFailure, Error, Status};
use crate::protocol::scan::{Fields, Kind};
use crate::transport::record::Dir;
use crate::transport::bytes::FrameBytes;
use crate::transport::{self, LineSink, PumpEnd};
use crate::wait::lock;

/// How long to wait, after stdout closes, for the agent to exit so its code can be reported.
const EXIT_WAIT: Duration = Duration::from_secs(1);
/// Frame text quoted in decode errors is cut to this many characters (as omp_rpc does).
const SNIPPET_CHARS: usize = 240;

pub(super) fn run(shared: Arc<Shared>, stdout: File, stderr: File) {
    let mut router = Router { shared: &shared, fields: Fields::new(), inner: Fields::new(), line_no: 0, discarding: false, batch: Vec::new(), read: None };
    let end = transport::pump(
        stdout,
        stderr,
        &mut router,
        &shared.stderr,
        shared.opts.max_frame_bytes,
        &shared.reader_stop,
    );
    let reason = match end {
        PumpEnd::Stopped => return,
        PumpEnd::Eof { partial } => {
            let exit = shared.process.wait_exit(Some(EXIT_WAIT));
            // The exit may have been seen before the last stderr bytes were read.
            let mut what = match exit {
                Some(e) => format!("RPC process {e}"),
                None => "RPC process stdout closed before the process exited".to_string(),
            };
            if partial > 0 {
                what.push_str(&format!(" (stdout ended inside a frame: {partial} bytes without a newline)"));
            }
            Error::new(Status::ProcessExited, format!("{what}{}", shared.stderr_suffix()))
        }
        PumpEnd::FrameTooLong { limit } => Error::new(
            Status::Protocol,
            format!("RPC frame exceeded max_frame_bytes ({limit} bytes){}", shared.stderr_suffix()),
        ),
        PumpEnd::Io(e) => Error::new(Status::Io, format!("Failed to read RPC output: {e}")),
    };
    shared.log.log(Level::Info, "reader", "the agent's stdout ended", json!({"status": reason.status.name(), "lines": router.line_no}));
    shared.shut(reason);
    // Let the agent see EOF too, so it exits instead of waiting for commands.
    lock(&shared.stdin).take();
}

struct Router<'a> {
    shared: &'a Shared,
    fields: Fields,
    /// For a field of a frame (a `message_end`'s message).
    inner: Fields,
    line_no: u64,
    /// After a fatal fault the rest of stdout is read and dropped, so the agent never blocks
    /// on a full pipe while it shuts down.
    discarding: bool,
    /// Events of the current read, queued together at its end (one lock, one wakeup).
    batch: Vec<EventBytes>,
    /// The line being handled, when it is a range of a read kept whole: the queue and the turn
    /// keep that range (`frame_of`) instead of copies.
    read: Option<(Arc<Vec<u8>>, std::ops::Range<usize>)>,
}

fn snippet(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    if text.chars().count() > SNIPPET_CHARS {
        format!("{}...", text.chars().take(SNIPPET_CHARS - 3).collect::<String>())
    } else {
        text.into_owned()
    }
}

impl LineSink for Router<'_> {
    fn end_of_read(&mut self) {
        self.flush();
    }

    fn shared_line(&mut self, read: &Arc<Vec<u8>>, range: std::ops::Range<usize>) -> bool {
        self.read = Some((Arc::clone(read), range.clone()));
        let go_on = self.line(&read[range]);
        self.read = None;
        go_on
    }

    fn line(&mut self, line: &[u8]) -> bool {
        self.line_no += 1;
        self.shared.counters.frame_in(line.len() + 1);
        if self.discarding || line.iter().all(u8::is_ascii_whitespace) {
            return true;
        }
        let checked = check_frame(&mut self.fields, line);
        if let Some(rec) = &self.shared.recorder {
            // As received: before chunk reassembly, invalid lines included (quoted).
            if let Err(m) = rec.frame(Dir::In, line, checked.is_ok()) {
                let mut r = Map::new();
                r.insert("message".into(), json!(m));
                self.protocol_error(r);
            }
        }
        if let Err(reason) = checked {
            return self.invalid(line, &reason);
        }
        if self.fields.str_bytes(line, "type").as_deref() == Some(b"rpc_chunk") {
            let fed = lock(&self.shared.decoder).feed(line, &self.fields);
            return match fed {
                Err(m) => self.fatal(Error::new(Status::Protocol, m)),
                Ok(None) => true,
                Ok(Some(frame)) => {
                    if let Err(reason) = check_frame(&mut self.fields, &frame) {
                        return self.fatal(Error::new(
                            Status::Protocol,
                            format!("Reassembled RPC chunk frame is invalid: {reason}. Frame: '{}'", snippet(&frame)),
                        ));
                    }
                    self.dispatch(&frame);
                    true
                }
            };
        }
        if let Err(m) = lock(&self.shared.decoder).check_not_interrupted() {
            return self.fatal(Error::new(Status::Protocol, m));
        }
        self.dispatch(line);
        true
    }
}

impl Router<'_> {
    fn invalid(&mut self, line: &[u8], reason: &str) -> bool {
        let message = format!("Failed to decode RPC output on line {}: {reason}. Frame: '{}'", self.line_no, snippet(line));
        if self.shared.opts.skip_invalid_frames {
            let mut r = Map::new();
            r.insert("message".into(), json!(format!("Skipped an invalid frame: {message}")));
            self.protocol_error(r);
            return true;
        }
        self.fatal(Error::new(Status::Protocol, message))
    }

    fn emit(&mut self, ev: EventBytes) {
        self.batch.push(ev);
    }

    fn emit_line(&mut self, line: &[u8]) {
        let ev = self.frame_of(line);
        self.emit(ev);
    }

    /// The bytes of `line` to keep: a range of its read when it is the line being handled and
    /// that read is kept whole, else a copy (a reassembled or rewritten frame, a sparse read).
    fn frame_of(&self, line: &[u8]) -> EventBytes {
        match &self.read {
            Some((read, range)) if std::ptr::eq(line, &read[range.clone()]) => FrameBytes::shared(read, range.clone()),
            _ => event_bytes(line),
        }
    }

    /// Queues a `prompt_complete` event for each prompt the last frame completed, after that
    /// frame (lifecycle::Completion).
    /// Queues the `prompt_complete` events of the completions made so far (under the
    /// `announcing` gate its caller holds).
    fn announce(&mut self) {
        if !self.shared.opts.prompt_complete_events {
            return; // none are kept: no lock to take
        }
        let done = self.shared.state().life.take_completions();
        if !done.is_empty() {
            for c in done {
                self.emit(event_bytes(&c.event()));
            }
            self.flush();
        }
    }

    fn flush(&mut self) {
        if !self.batch.is_empty() && self.shared.events.push_all(self.batch.drain(..)) {
            self.shared.log.log(
                Level::Warn,
                "events",
                "the event queue is full: the oldest events are being dropped (an event_overflow event reports how many)",
                json!({"event_queue_capacity": self.shared.opts.event_queue_capacity, "event_queue_max_bytes": self.shared.opts.event_queue_max_bytes}),
            );
        }
    }

    fn protocol_error(&mut self, record: Map<String, Value>) {
        let ev = self.shared.record_protocol_error(record);
        self.emit(ev);
    }

    fn fatal(&mut self, err: Error) -> bool {
        // What arrived before the fault is delivered before CLOSED.
        self.flush();
        self.shared.shut(err);
        lock(&self.shared.stdin).take();
        self.discarding = true;
        true
    }

    fn dispatch(&mut self, line: &[u8]) {
        let f = &self.fields;
        let ty_bytes = f.str_bytes(line, "type").unwrap_or(Cow::Borrowed(b""));
        let ty: &[u8] = &ty_bytes;
        if self.shared.log.enabled(Level::Trace) {
            // The frame's type and size only, never its body.
            let fields = json!({"type": String::from_utf8_lossy(ty), "bytes": line.len()});
            self.shared.log.log(Level::Trace, "frame", "frame in", fields);
        }
        match ty {
            b"response" => self.response(line),
            b"ready" => {
                // Queued before start returns: a host may poll right after it.
                self.emit_line(line);
                self.flush();
                self.shared.state().ready = Some(line.to_vec());
                self.shared.cond.notify_all();
            }
            b"extension_ui_request" => {
                self.shared.counters.ui_requests.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let id = f.str(line, "id").unwrap_or_default();
                let method = f.str(line, "method").unwrap_or_default();
                let target = f.str(line, "targetId");
                let handled = self.shared.ui.on_request(&id, &method, line, target.as_deref());
                for reply in handled.replies {
                    self.shared.send_internal(reply);
                }
                self.emit_line(line);
                if let Some(old) = handled.evicted {
                    let mut r = Map::new();
                    r.insert("message".into(), json!(format!("UI request {old} was cancelled: too many unanswered UI requests")));
                    self.protocol_error(r);
                }
            }
            b"host_tool_call" | b"host_uri_request" => {
                let map: Map<String, Value> = serde_json::from_slice(line).unwrap_or_default();
                let outcome = {
                    let mut st = self.shared.state();
                    if ty == b"host_tool_call" {
                        st.host.on_tool_call(&map, Route::Stdin)
                    } else {
                        st.host.on_uri_request(&map)
                    }
                };
                match outcome {
                    Incoming::Deliver => self.emit_line(line),
                    Incoming::Reject(Outgoing::Bridge(..)) => unreachable!("stdin calls are answered on stdin"),
                    Incoming::Reject(Outgoing::Stdin(reply)) => {
                        let text = String::from_utf8_lossy(&reply).into_owned();
                        self.shared.send_internal(reply);
                        let mut r = Map::new();
                        r.insert("message".into(), json!(format!("answered a {} with an error by itself: {text}", String::from_utf8_lossy(ty))));
                        r.insert("frame".into(), Value::Object(map));
                        self.protocol_error(r);
                    }
                    Incoming::Unanswerable(why) => {
                        let mut r = Map::new();
                        r.insert("message".into(), json!(why));
                        r.insert("frame".into(), Value::Object(map));
                        self.protocol_error(r);
                    }
                }
            }
            b"host_tool_cancel" | b"host_uri_cancel" => {
                if let Some(target) = f.str(line, "targetId") {
                    self.shared.state().host.on_cancel(&target);
                }
                self.emit_line(line);
            }
            b"extension_error" => self.emit_line(line),
            b"protocol_error" => {
                // The agent reports a fault of its own (omp protocol 1.1: a frame it could not
                // take, with no id to answer): queued as it came, and recorded as a protocol
                // error quoting it, with its text and typed error info.
                let mut r = Map::new();
                let text = f.str(line, "error").map(Cow::into_owned).unwrap_or_else(|| "(no error text)".into());
                r.insert("message".into(), json!(format!("the agent reported a protocol error: {text}")));
                if let Some(id) = f.str(line, "requestId") {
                    r.insert("requestId".into(), json!(id));
                }
                r.insert("frame".into(), serde_json::from_slice(line).unwrap_or(Value::Null));
                self.emit_line(line);
                self.protocol_error(r);
            }
            b"tool_execution_update" | b"tool_execution_end" => {
                let (renamed, note) = match (f.str(line, "toolCallId"), f.str(line, "toolName")) {
                    (Some(call), Some(name)) => {
                        let mut st = self.shared.state();
                        let ended = ty == b"tool_execution_end";
                        let note = if ended { st.blocked.ended(&call) } else { None };
                        (st.host.rename(&call, &name, ended), note)
                    }
                    _ => (None, None),
                };
                if let Some(note) = note {
                    // The gate's note goes right before the end of the call it blocked.
                    self.session_event(&note, Mark::Other);
                }
                match renamed {
                    None => self.session_event(line, Mark::Other),
                    Some(name) => {
                        // Rare (xd dispatch only): rebuild this one frame with the host tool name.
                        let mut v: Value = serde_json::from_slice(line).unwrap_or(Value::Null);
                        v["toolName"] = Value::String(name);
                        let rewritten = v.to_string().into_bytes();
                        self.session_event(&rewritten, Mark::Other);
                    }
                }
            }
            b"message_update" => self.session_event(line, Mark::Update),
            b"queue_update" => {
                // pi: what waits in its steering and follow-up queues (the agent is busy while
                // anything does). Rare and small: parsed whole.
                let v: Value = serde_json::from_slice(line).unwrap_or(Value::Null);
                let len = |k: &str| v.get(k).and_then(Value::as_array).map_or(0, Vec::len) as u64;
                self.shared.state().life.queue_reported(len("steering") + len("followUp"));
                self.session_event(line, Mark::Other);
                self.shared.cond.notify_all();
            }
            b"operation_end" | b"operation_error" => {
                // omp protocol 1.1: the end of a long command (client::operations). Queued
                // first, then filed for the call that waits on it.
                let ended = f.str(line, "operationId").map(|op| {
                    let outcome = if ty == b"operation_end" {
                        Ok(f.raw(line, "data").filter(|d| *d != b"null").map(<[u8]>::to_vec))
                    } else {
                        Err(failure_of(f, line, &f.str(line, "command").unwrap_or(Cow::Borrowed("operation"))))
                    };
                    (op.into_owned(), outcome)
                });
                self.session_event(line, Mark::Other);
                if let Some((op, outcome)) = ended {
                    self.flush();
                    let mut st = self.shared.state();
                    st.life.operation_ended(&op);
                    st.ops.ended(op, outcome);
                    drop(st);
                    self.shared.cond.notify_all();
                }
            }
            b"agent_start" => {
                self.shared.fault("reader");
                self.session_event(line, Mark::AgentStart)
            }
            b"agent_end" => {
                let terminal = f.kind(line, "isTerminal") != Some(Kind::False);
                let will_retry = f.kind(line, "willRetry") == Some(Kind::True);
                self.session_event(line, Mark::AgentEnd { terminal, will_retry });
            }
            b"message_end" => {
                let message = f.raw(line, "message").unwrap_or(b"null");
                let stop = stop_of(&mut self.inner, message);
                self.session_event(line, Mark::MessageEnd { message, stop });
            }
            b"auto_retry_start" => self.session_event(line, Mark::Recovery(RecoveryMark::RetryStart)),
            b"auto_retry_end" => {
                let success = f.kind(line, "success") != Some(Kind::False);
                self.session_event(line, Mark::Recovery(RecoveryMark::RetryEnd { success }));
            }
            b"compaction_start" | b"auto_compaction_start" => {
                let overflow = f.str(line, "reason").as_deref() == Some("overflow");
                self.session_event(line, Mark::Recovery(RecoveryMark::CompactionStart { overflow }));
            }
            b"compaction_end" | b"auto_compaction_end" => {
                let will_retry = f.kind(line, "willRetry") == Some(Kind::True);
                self.session_event(line, Mark::Recovery(RecoveryMark::CompactionEnd { will_retry }));
            }
            b"agent_settled" => {
                let aborted = f.kind(line, "aborted") == Some(Kind::True);
                self.session_event(line, Mark::Recovery(RecoveryMark::Settled { aborted }));
            }
            b"prompt_result" => {
                let id = f.str(line, "id").map(Cow::into_owned);
                let invoked = f.kind(line, "agentInvoked") != Some(Kind::False);
                let gate = self.shared.announcing();
                if let Some(id) = &id {
                    self.flush();
                    self.shared.state().life.completed_without_run(id, Some(line), invoked);
                }
                self.session_event(line, Mark::Other);
                self.announce();
                drop(gate);
                self.shared.cond.notify_all();
            }
            _ => self.session_event(line, Mark::Other),
        }
    }

    /// An event of the session's stream: retained for the active collector, then queued.
    fn session_event(&mut self, line: &[u8], mark: Mark) {
        self.shared.counters.session_event();
        let frame = self.frame_of(line);
        if matches!(mark, Mark::AgentEnd { .. } | Mark::Recovery(_)) {
            // This may complete a turn (or, not terminal, make a waiter's activity probe due):
            // its events are in the queue before any waiter wakes.
            self.emit(frame);
            self.flush();
            let gate = self.shared.announcing();
            self.shared.state().life.event(line, mark);
            self.announce();
            drop(gate);
            self.shared.cond.notify_all();
        } else {
            let tapping = {
                let mut st = self.shared.state();
                st.life.event(line, mark);
                st.life.tapping()
            };
            self.emit(frame);
            if tapping {
                // A streamed turn's waiter takes each event as it comes (client::stream).
                self.shared.cond.notify_all();
            }
        }
    }

    fn response(&mut self, line: &[u8]) {
        if self.shared.queue_responses.load(std::sync::atomic::Ordering::Acquire) {
            // The raw-frame tap: queued like an event, before the call it answers returns.
            self.emit_line(line);
        }
        // Events the agent sent before this response are queued before its caller returns.
        self.flush();
        let s = self.shared;
        s.counters.responses.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // The pending lock is held for the decision only (the guard ends with this statement).
        let outcome = correlate(&self.fields, line, &mut lock(&s.pending));
        let (id, command, rejected, settled) = match outcome {
            Correlation::BadId { command } => {
                self.record(line, &command, None, "Received a response whose id is not a string");
                return;
            }
            Correlation::IdlessSuccess => return,
            Correlation::Resolved { target, sent, rejected, disposition } => {
                if sent == "get_state" {
                    // It may be an activity probe a waiter sleeps on: wake it, under the state
                    // lock so the wakeup cannot fall between its check and its wait.
                    let _st = s.state();
                    s.cond.notify_all();
                }
                if (sent == "follow_up" || sent == "steer") && rejected.is_none() {
                    // omp protocol 1.1 acknowledges a queued message as an operation: the agent
                    // will run it (client::lifecycle, queued operations). Noted here, before any
                    // frame of its run can be read.
                    if let Some(op) = self.fields.raw(line, "data").and_then(super::operations::acknowledged_operation) {
                        s.state().life.operation_queued(op);
                        s.cond.notify_all();
                    }
                }
                if is_prompt_command(&sent) {
                    let gate = s.announcing();
                    {
                        let mut st = s.state();
                        match &rejected {
                            Some(e) => st.life.rejected(&target, e),
                            None => st.life.acknowledged(&target, disposition),
                        }
                    }
                    self.announce();
                    drop(gate);
                    s.cond.notify_all();
                }
                return;
            }
            Correlation::Unmatched { id, command, rejected, settled } => (id, command, rejected, settled),
        };
        let shown = if command.is_empty() { settled.as_ref().map(|(c, _)| c.clone()).unwrap_or_default() } else { command.clone() };
        if let Some(e) = rejected {
            let e = if command.is_empty() { e.for_command(&shown) } else { e };
            let text = e.failure.as_ref().map(|f| f.error.clone()).unwrap_or_default();
            let message = format!(
                "Received unmatched RPC error response for {shown} (id={}): {text}",
                id.as_deref().unwrap_or("None")
            );
            // Recorded (and its protocol_error event queued) before the turn fails, so its
            // waiter already sees the record, and a close right after it still delivers the event.
            self.record(line, &shown, id.as_deref(), &message);
            if let (Some(id), true) = (&id, is_prompt_command(&shown)) {
                self.flush();
                let gate = s.announcing();
                s.state().life.late_failure(id, e);
                self.announce();
                drop(gate);
                s.cond.notify_all();
            }
            return;
        }
        let id = id.unwrap_or_default();
        let message = match settled {
            Some((_, Settled::Answered)) => format!("Received a second response for {shown} (id={id})"),
            Some((_, Settled::TimedOut)) => format!("Received a response for {shown} (id={id}) after its request timed out"),
            None => format!("Received a response for unknown request id {id} ({shown})"),
        };
        self.record(line, &shown, Some(&id), &message);
    }

    fn record(&mut self, line: &[u8], command: &str, id: Option<&str>, message: &str) {
        let mut r = Map::new();
        r.insert("message".into(), json!(message));
        r.insert("command".into(), json!(command));
        r.insert("requestId".into(), json!(id));
        r.insert("frame".into(), serde_json::from_slice(line).unwrap_or(Value::Null));
        self.protocol_error(r);
    }
}

/// Where a response frame belongs (see `correlate`).
#[derive(Debug)]
pub enum Correlation {
    /// `id` is present but neither a string nor null: nothing can be matched.
    BadId { command: String },
    /// A success without an id (e.g. widget_layout): nothing waits for it.
    IdlessSuccess,
    /// The waiting request `target` (whose command was `sent`) got the reply; a success says
    /// what happens to a prompt (`data.agentInvoked`, `data.disposition`).
    Resolved { target: String, sent: String, rejected: Option<Error>, disposition: Disposition },
    /// No request waits for it; `settled` says how an earlier request with its id ended.
    Unmatched { id: Option<String>, command: String, rejected: Option<Error>, settled: Option<(String, Settled)> },
}

/// The error a failed response or an `operation_error` carries. omp's typed errors add
/// `errorInfo {code, message, details?, retryable}`: kept verbatim, its code and message
/// stand in for a missing `code` / `error`.
fn failure_of(f: &Fields, line: &[u8], command: &str) -> Error {
    let info = match f.kind(line, "errorInfo") {
        Some(Kind::Object) => f.raw(line, "errorInfo").and_then(|r| serde_json::from_slice::<Value>(r).ok()),
        _ => None,
    };
    let info_str = |key: &str| info.as_ref().and_then(|i| i[key].as_str()).map(str::to_string);
    let text = match f.str(line, "error") {
        Some(e) => e.into_owned(),
        None => f
            .raw(line, "error")
            .map(|r| String::from_utf8_lossy(r).into_owned())
            .or_else(|| info_str("message"))
            .unwrap_or_else(|| "unknown error".into()),
    };
    let code = f.str(line, "code").map(Cow::into_owned).or_else(|| info_str("code"));
    Error::command_failure(CommandFailure { command: command.to_string(), error: text, code, info })
}

/// Matches a scanned `response` frame against the pending table: by id, or for an id-less
/// failure by the command heuristic (spec §6.3). A matched request is resolved (its caller
/// gets the reply) and leaves the table. Apart from `pending` this touches no client state,
/// so the fuzzer runs it against a table of its own.
pub fn correlate(f: &Fields, line: &[u8], pending: &mut Pending) -> Correlation {
    let command = f.str(line, "command").unwrap_or_default().into_owned();
    let success = f.kind(line, "success") == Some(Kind::True);
    let failure = || failure_of(f, line, &command);
    let data = || f.raw(line, "data").filter(|d| d != b"null").map(<[u8]>::to_vec);
    let id = match f.get(line, "id") {
        None => None,
        Some(field) if field.kind == Kind::Null => None,
        // An id that does not decode (a lone surrogate escape: JSON.parse takes it, Rust strings
        // cannot) is still an id: kept as its raw text it matches nothing, instead of passing
        // for an id-less failure and failing whichever request the command heuristic picks.
        Some(field) if field.kind == Kind::String => Some(f.str(line, "id").map_or_else(
            || String::from_utf8_lossy(&line[field.value.start + 1..field.value.end - 1]).into_owned(),
            Cow::into_owned,
        )),
        Some(_) => return Correlation::BadId { command },
    };
    let target = match &id {
        Some(id) => Some(id.clone()),
        None if success => return Correlation::IdlessSuccess,
        None => pending.match_idless(&command),
    };
    let reply = if success { Ok(data()) } else { Err(failure()) };
    let disposition = match reply.as_ref().ok().and_then(|d| d.as_deref()) {
        Some(data) if success => disposition(data),
        _ => Disposition::Unknown,
    };
    let rejected = reply.as_ref().err().cloned();
    if let Some(target) = target {
        if let Some(sent) = pending.resolve(&target, reply) {
            return Correlation::Resolved { target, sent, rejected, disposition };
        }
    }
    let settled = id.as_deref().and_then(|i| pending.settled(i).map(|(c, how)| (c.to_string(), how)));
    Correlation::Unmatched { id, command, rejected, settled }
}

/// UTF-8 (checked only when not plain ASCII), one JSON object, and at most one `type` member
/// (with two, the agent's JSON.parse and a reader taking the first would disagree about what
/// the frame is; JSON.stringify never writes one); fills `fields`.
pub fn check_frame(fields: &mut Fields, line: &[u8]) -> Result<(), String> {
    if !line.is_ascii() {
        std::str::from_utf8(line).map_err(|e| format!("invalid UTF-8 ({e})"))?;
    }
    fields.scan(line, 0..line.len()).map_err(|e| e.to_string())?;
    match fields.count(line, "type") {
        0 | 1 => Ok(()),
        n => Err(format!("{n} \"type\" members")),
    }
}

/// How a `message_end`'s message stopped, if it is an assistant message (a top-level scan of
/// the message; `stopReason` is enough: only assistant messages carry one).
fn stop_of(f: &mut Fields, message: &[u8]) -> Stop {
    if f.scan(message, 0..message.len()).is_err() {
        return Stop::NotAssistant;
    }
    match f.str(message, "stopReason").as_deref() {
        None => Stop::NotAssistant,
        Some("error") => Stop::Error,
        Some("aborted") => Stop::Aborted,
        Some(_) => Stop::Normal,
    }
}

/// What a success response's `data` says happens to a prompt: `agentInvoked:false` (omp) or
/// `disposition:"handled"` (pi 0.99 on) — it completed without a run; `"queued"` — the live
/// run takes it; `"started"` — a run starts for it.
fn disposition(data: &[u8]) -> Disposition {
    let mut f = Fields::new();
    if f.scan(data, 0..data.len()).is_err() {
        return Disposition::Unknown;
    }
    if f.kind(data, "agentInvoked") == Some(Kind::False) {
        return Disposition::Handled;
    }
    match f.str(data, "disposition").as_deref() {
        Some("handled") => Disposition::Handled,
        Some("queued") => Disposition::Queued,
        Some("started") => Disposition::Started,
        _ => Disposition::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::pending::Slot;

    fn correlate_line(line: &str, pending: &mut Pending) -> Correlation {
        let mut f = Fields::new();
        check_frame(&mut f, line.as_bytes()).unwrap();
        correlate(&f, line.as_bytes(), pending)
    }

    // Found by the classify_correlate fuzz target: a failure whose string id does not decode
    // was taken for an id-less one and failed the only pending request of its command.
    #[test]
    fn a_frame_with_two_type_members_is_invalid() {
        let mut f = Fields::new();
        assert!(check_frame(&mut f, br#"{"type":"message_update","x":{"type":"text"}}"#).is_ok(), "a nested type is another object's");
        let e = check_frame(&mut f, br#"{"type":"agent_end","messages":[],"type":"message_update"}"#).unwrap_err();
        assert_eq!(e, "2 \"type\" members");
        assert!(check_frame(&mut f, br#"{"type":"a","t\u0079pe":"b"}"#).is_err(), "an escaped key is the same key");
    }

    #[test]
    fn undecodable_string_id_never_matches_by_command() {
        let mut p = Pending::default();
        let slot = Slot::new();
        p.insert("req_1".into(), "bash", slot.clone()).unwrap();
        let got = correlate_line(r#"{"type":"response","id":"\ud800","command":"bash","success":false}"#, &mut p);
        assert!(matches!(&got, Correlation::Unmatched { id: Some(id), .. } if id == "\\ud800"), "{got:?}");
        assert_eq!(p.count(), 1, "the pending bash request is untouched");
        assert!(slot.wait(Some(std::time::Instant::now())).is_none());
        // A real id-less failure still finds it.
        let got = correlate_line(r#"{"type":"response","command":"bash","success":false,"error":"x"}"#, &mut p);
        assert!(matches!(&got, Correlation::Resolved { target, .. } if target == "req_1"), "{got:?}");
        assert_eq!(slot.wait(None).unwrap().unwrap_err().status, Status::CommandFailed);
    }

    // omp's typed errors (protocol 1.1): errorInfo is kept verbatim and reaches the error JSON;
    // its code and message stand in where the frame has no `code` / `error`.
    #[test]
    fn typed_errors_keep_error_info() {
        let mut p = Pending::default();
        let slot = Slot::new();
        p.insert("req_1".into(), "cancel_operation", slot.clone()).unwrap();
        let line = r#"{"type":"response","id":"req_1","command":"cancel_operation","success":false,"error":"Unknown operation: op-9","errorInfo":{"code":"operation_not_found","message":"Unknown operation: op-9","details":{"operationId":"op-9"},"retryable":false}}"#;
        correlate_line(line, &mut p);
        let e = slot.wait(None).unwrap().unwrap_err();
        let v = e.to_value();
        assert_eq!(v["errorCode"], "operation_not_found");
        assert_eq!(v["errorInfo"], json!({"code":"operation_not_found","message":"Unknown operation: op-9","details":{"operationId":"op-9"},"retryable":false}));
        assert_eq!(v["error"], "Unknown operation: op-9");
        // An id-less failure matched by its command keeps it too; a missing `error` is taken
        // from errorInfo.message; a top-level `code` wins over errorInfo's.
        let slot = Slot::new();
        p.insert("req_2".into(), "ping", slot.clone()).unwrap();
        correlate_line(r#"{"type":"response","command":"ping","success":false,"code":"top","errorInfo":{"code":"unknown_command","message":"Unknown command: ping","retryable":false}}"#, &mut p);
        let v = slot.wait(None).unwrap().unwrap_err().to_value();
        assert_eq!((v["error"].as_str(), v["errorCode"].as_str()), (Some("Unknown command: ping"), Some("top")));
        assert_eq!(v["errorInfo"]["code"], "unknown_command");
        // errorInfo that is not an object is not kept.
        let slot = Slot::new();
        p.insert("req_3".into(), "bash", slot.clone()).unwrap();
        correlate_line(r#"{"type":"response","id":"req_3","command":"bash","success":false,"error":"x","errorInfo":"oops"}"#, &mut p);
        let v = slot.wait(None).unwrap().unwrap_err().to_value();
        assert!(v.get("errorInfo").is_none() && v.get("errorCode").is_none(), "{v}");
    }

    #[test]
    fn responses_correlate_by_id_and_report_the_rest() {
        let mut p = Pending::default();
        let slot = Slot::new();
        p.insert("req_1".into(), "get_state", slot.clone()).unwrap();
        assert!(matches!(correlate_line(r#"{"type":"response","id":7,"success":true}"#, &mut p), Correlation::BadId { .. }));
        assert!(matches!(correlate_line(r#"{"type":"response","success":true}"#, &mut p), Correlation::IdlessSuccess));
        let got = correlate_line(r#"{"type":"response","id":"req_1","command":"get_state","success":true,"data":{"a":1}}"#, &mut p);
        assert!(matches!(&got, Correlation::Resolved { sent, rejected: None, .. } if sent == "get_state"), "{got:?}");
        assert_eq!(slot.wait(None).unwrap().unwrap().as_deref(), Some(&br#"{"a":1}"#[..]));
        let got = correlate_line(r#"{"type":"response","id":"req_1","command":"get_state","success":true}"#, &mut p);
        assert!(matches!(&got, Correlation::Unmatched { settled: Some((c, Settled::Answered)), .. } if c == "get_state"), "{got:?}");
    }
}
