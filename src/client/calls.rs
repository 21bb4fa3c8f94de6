//! Calls on a live client: the request/response round trip and the waits on the client's state
//! (with the activity probes they send), then the public calls built on them — commands,
//! prompts and turns, the event and UI queues, host tools and URI schemes, policy verdicts, and
//! the readouts (stderr, protocol errors, info, counters, logs) that work after close too.

use std::sync::atomic::Ordering;
use std::sync::MutexGuard;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use crate::error::{Error, Result, Status};
use crate::observe::Level;
use crate::protocol::argv::Flavor;
use crate::protocol::version;
use crate::turn;
use crate::wait::lock;

use super::events::EventBytes;
use super::host::{HostRegistry, Outgoing};
use super::lifecycle;
use super::operations;
use super::options::UiPolicy;
use super::pending::{Reply, Slot as ReplySlot};
use super::ui;
use super::{deadline_after, is_prompt_command, request_line, Client, Deadline, InflightProbe, Shared, State, Wait};

impl Shared {
    /// Sends a request and waits for its response. `track` marks a prompt-like command
    /// (with whether it is queued into a live run).
    pub(super) fn call(&self, id: &str, ty: &str, line: &[u8], deadline: Deadline, track: Option<bool>) -> Reply {
        let slot = ReplySlot::new();
        lock(&self.pending).insert(id.to_string(), ty, slot.clone())?;
        if ty == "abort" || ty == "abort_retry" || ty == "abort_and_prompt" {
            // Before the write: a retry the agent then cancels ends its prompt aborted.
            self.state().life.abort_asked();
        }
        if let Some(streaming) = track {
            self.state().life.track(id, streaming);
        } else if ty == "steer" || ty == "follow_up" {
            // Before the write: the agent may run it by itself once the current run ends. A
            // probe may be due from now on: the activity watcher sleeps until one could be.
            self.state().life.asked_to_queue();
            self.cond.notify_all();
        }
        let sent = Instant::now();
        if track.is_some() {
            // Before the write: the reader may see the prompt's first event before it returns.
            self.counters.prompt_sent();
        }
        if let Err(e) = self.write(line, deadline) {
            lock(&self.pending).remove(id);
            if track.is_some() {
                let gate = self.announcing();
                let done = {
                    let mut st = self.state();
                    st.life.rejected(id, &e);
                    st.life.take_completions()
                };
                self.push_completions(done);
                drop(gate);
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

    pub(super) fn request(&self, ty: &str, params: Option<&Map<String, Value>>, deadline: Deadline) -> Reply {
        if ty.is_empty() {
            return Err(Error::invalid("the command type must not be empty"));
        }
        // A command the agent's version does not have yet (table.json `since`) fails here, not
        // after a round trip that pi answers with an id-less "Unknown command"; so does a
        // parameter it would ignore (bash's excludeFromContext before pi 0.76).
        if let Some(why) = version::lacks_request(self.opts.flavor, self.opts.agent_version, ty, params) {
            return Err(Error::invalid(why));
        }
        let id = self.next_request_id();
        let line = request_line(&id, ty, params)?;
        let track = is_prompt_command(ty).then(|| params.is_some_and(|p| p.get("streamingBehavior").is_some_and(|v| !v.is_null())));
        self.call(&id, ty, &line, deadline, track)
    }

    /// Waits on the state condition until `done` holds, the client closes, the deadline or
    /// the idle timeout passes — asking the agent whether it is idle where its stream leaves
    /// that open (`how.probe`).
    pub(super) fn wait_state_since<T>(
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
                        // An idle answer may complete a prompt (pi's silent preflight): the
                        // gate comes before the state in the lock order.
                        drop(st);
                        let gate = self.announcing();
                        st = self.state();
                        st.life.probed(answer, starts);
                        let done = st.life.take_completions();
                        drop(st);
                        self.push_completions(done);
                        drop(gate);
                        st = self.state();
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
                    return Err(self.idle_timeout(i));
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

    /// The activity watcher (a thread of a client started with `prompt_complete_events`):
    /// where the stream leaves the agent's activity open — pi's extension `/command` that runs
    /// nothing, omp's compaction handoff, a steer that outlived an abort — a waiter's probes
    /// decide; a host that streams events has no waiter, so this thread probes as one would,
    /// and the completion reaches it as its `prompt_complete` event. It sleeps on the state
    /// condition while no probe could come due, and ends when the client closes.
    pub(super) fn watch_activity(&self) {
        let Some(quiet) = self.opts.activity_probe else { return };
        let settled = |st: &State| st.probe.is_none() && st.life.probe_due(quiet).is_none();
        let how = Wait { began_before: false, idle: None, probe: true };
        loop {
            {
                let mut st = self.state();
                while st.close_reason.is_none() && settled(&st) {
                    st = self.cond.wait(st).unwrap_or_else(std::sync::PoisonError::into_inner);
                }
                if st.close_reason.is_some() {
                    return;
                }
            }
            // Probes until nothing is left open (a completion is queued as it happens).
            if self.wait_state_since(None, "", how, &mut |st| settled(st).then_some(())).is_err() {
                return; // closed
            }
        }
    }

    /// The error of a turn the agent went silent on for `idle` (turn_idle_timeout_ms).
    fn idle_timeout(&self, idle: Duration) -> Error {
        Error::new(Status::Timeout, format!("no event from the agent for {} ms (turn_idle_timeout_ms){}", idle.as_millis(), self.stderr_suffix()))
    }

    /// The active turn has had no event for turn_idle_timeout_ms, the agent not waiting on the
    /// host (whose clock stands still meanwhile): its waiter would time out now.
    fn turn_went_idle(&self, st: &State) -> Option<Duration> {
        let idle = self.opts.turn_idle_timeout?;
        (!self.awaiting_host(st) && Instant::now() >= st.life.last_event + idle).then_some(idle)
    }

    /// A wait for the agent's runs: the idle timeout, and probes where the stream is ambiguous.
    pub(super) fn turn_wait(&self) -> Wait {
        Wait { began_before: false, idle: self.opts.turn_idle_timeout, probe: true }
    }

    /// How long a probe may wait for its answer before it counts as "busy".
    pub(super) fn probe_patience(&self) -> Duration {
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

/// Releases the lifecycle slot when a collector call returns, however it returns.
/// The lifecycle operation of a blocking `prompt_and_wait` (what a second collector is told is
/// running; a Cancel handle cancels it).
const PROMPT_AND_WAIT: &str = "prompt_and_wait";
/// The lifecycle operation of a turn begun with `prompt_begin` and taken with `take_turn`
/// (no thread waits on it: its host aborts it by sending `abort`).
const PROMPT_BEGIN: &str = "prompt_begin";

struct Slot<'a> {
    shared: &'a Shared,
    op: &'static str,
}

impl Slot<'_> {
    /// Leaves the slot held: whoever takes the turn releases it.
    fn keep(self) {
        std::mem::forget(self);
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.shared.state().life.release(self.op);
    }
}

impl Client {
    /// The deadline of a request sent now: the start option `request_timeout_ms` (30 s by
    /// default) from now.
    pub fn default_request_deadline(&self) -> Deadline {
        deadline_after(self.shared.opts.request_timeout)
    }

    /// The deadline of a turn started now: `turn_timeout_ms` from now (none by default).
    pub fn default_turn_deadline(&self) -> Deadline {
        deadline_after(self.shared.opts.turn_timeout)
    }

    /// Any command: returns the response's `data` JSON verbatim (`null` when absent). When the
    /// agent acknowledges it as an operation (omp protocol 1.1, client::operations), waits for
    /// the operation's end within the same deadline and returns the end's `data` instead.
    /// `get_messages` under protocol v2 is the page walk of client::messages.
    ///
    /// `ty` is the command's `type`, `params` its other members; the agent's version must have
    /// the command (`src/protocol/table.json`), else INVALID_ARGUMENT before anything is sent.
    /// A refusal is COMMAND_FAILED with the agent's words in [`Error::failure`](Error).
    pub fn request(&self, ty: &str, params: Option<&Map<String, Value>>, deadline: Deadline) -> Result<String> {
        if ty == "get_messages" && params.map_or(true, Map::is_empty) {
            return self.get_messages(deadline);
        }
        self.command(ty, params, deadline)
    }

    /// [`Client::request`] as sent: no page walk.
    pub(super) fn command(&self, ty: &str, params: Option<&Map<String, Value>>, deadline: Deadline) -> Result<String> {
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

    /// Prompts and waits for that prompt's completion (after every retry and recovery the agent
    /// makes by itself); returns the turn JSON: `{"events","messages","assistantText",
    /// "outcome","agentInvoked",…}` (docs/c-api.md, "The turn"). `options`: prompt options
    /// (`images`, `content` blocks, `streamingBehavior`). A [`Cancel`](super::stream::Cancel) handle
    /// ends the wait with CANCELLED after aborting the turn; a timeout leaves the turn running.
    pub fn prompt_and_wait(&self, message: &str, options: Option<Map<String, Value>>, deadline: Deadline) -> Result<String> {
        self.prompt_and_wait_json(message, options, deadline).map(json_text)
    }

    /// The same, as bytes (UTF-8 JSON without NUL; not checked again — it can be 64 MiB).
    #[doc(hidden)]
    pub fn prompt_and_wait_json(&self, message: &str, options: Option<Map<String, Value>>, deadline: Deadline) -> Result<Vec<u8>> {
        self.prompt_and_wait_turn(message, options, deadline).map(|t| t.json)
    }

    /// The same, with the turn's parts located in its JSON (the C ABI's `omprpc_turn`): a
    /// [`prompt_begin`](Self::prompt_begin), a wait for the turn's completion, a
    /// [`take_turn`](Self::take_turn).
    #[doc(hidden)]
    pub fn prompt_and_wait_turn(&self, message: &str, options: Option<Map<String, Value>>, deadline: Deadline) -> Result<turn::Turn> {
        let id = self.begin_turn(PROMPT_AND_WAIT, message, options, deadline)?;
        if let Err(e) = self.wait_completed(deadline) {
            if e.status == Status::Cancelled {
                // A Cancel handle (client::stream): the turn ends before the call returns.
                self.abort_turn();
            }
            // A timeout leaves the turn running; a cancel aborted it. Either frees the slot.
            let _ = self.release_turn_of(PROMPT_AND_WAIT, &id);
            return Err(e);
        }
        self.take_turn_of(PROMPT_AND_WAIT, &id)?.ok_or_else(|| Error::new(Status::Panic, "a completed turn was not there to take"))
    }

    /// Prompts and returns the request id once the agent acknowledged it (within `deadline`),
    /// holding the client's lifecycle slot for the turn: until [`take_turn`](Self::take_turn)
    /// takes it (or the client closes), another `prompt_and_wait`, `stream`, `collect_events`
    /// or `wait_for_idle` fails with CONCURRENCY. The turn's completion is announced by its
    /// `prompt_complete` event (start option `prompt_complete_events`), after which
    /// `take_turn` returns it without blocking. For a host that waits on the event fd, not on
    /// a thread (the Node binding).
    #[doc(hidden)]
    pub fn prompt_begin(&self, message: &str, options: Option<Map<String, Value>>, deadline: Deadline) -> Result<String> {
        self.begin_turn(PROMPT_BEGIN, message, options, deadline)
    }

    /// The turn of the prompt begun as `request_id` (with [`prompt_begin`](Self::prompt_begin))
    /// once it completed, releasing the lifecycle slot; never blocks. `None` while it has not
    /// completed (the slot stays held); NOT_FOUND when `request_id` is not the begun turn; the
    /// turn's failure (e.g. COMMAND_FAILED, PROCESS_EXITED, CLOSED) once it failed — the slot
    /// is released then too. Nobody waits on a begun turn, so its take applies the idle timeout
    /// a waiter would: with `turn_idle_timeout_ms`, a take after that long without an event (the
    /// agent not waiting on the host) fails with TIMEOUT, the slot released (a further take is
    /// NOT_FOUND) and the turn left running, as a waiter's idle timeout leaves it.
    #[doc(hidden)]
    pub fn take_turn(&self, request_id: &str) -> Result<Option<turn::Turn>> {
        self.take_turn_of(PROMPT_BEGIN, request_id)
    }

    /// Gives up the begun turn `request_id`: releases the lifecycle slot and leaves the turn
    /// running, as a waiter's timeout does (another prompt is then the agent's to accept or
    /// refuse while it runs). NOT_FOUND when `request_id` is not the begun turn.
    #[doc(hidden)]
    pub fn release_turn(&self, request_id: &str) -> Result<()> {
        self.release_turn_of(PROMPT_BEGIN, request_id)
    }

    /// Claims the lifecycle slot as `op`, starts collecting the turn (before the prompt is
    /// written, so none of its events can be missed) and sends the prompt; the slot stays held
    /// once the agent acknowledged, and is released when it did not.
    fn begin_turn(&self, op: &'static str, message: &str, options: Option<Map<String, Value>>, deadline: Deadline) -> Result<String> {
        let s = &self.shared;
        let (params, streaming) = Self::prompt_params(message, options)?;
        let id = s.next_request_id();
        let line = request_line(&id, "prompt", Some(&params))?;
        {
            let mut st = s.state();
            st.life.acquire(op)?;
            st.life.collect(Some(id.clone()), turn::TURN_PREFIX);
        }
        let slot = Slot { shared: s, op };
        s.call(&id, "prompt", &line, deadline, Some(streaming))?;
        slot.keep(); // acknowledged: the turn holds the slot until it is taken
        Ok(id)
    }

    /// The turn `request_id` that `op` holds the slot for, its lifecycle state locked: NOT_FOUND
    /// when it is not the begun turn.
    fn begun_turn<'a>(&'a self, op: &'static str, request_id: &str) -> Result<std::sync::MutexGuard<'a, State>> {
        let st = self.shared.state();
        if st.life.active_operation() == Some(op) && st.life.collecting_for(request_id) {
            Ok(st)
        } else {
            Err(Error::new(Status::NotFound, format!("no begun turn has the request id {request_id:?}")))
        }
    }

    /// Releases the slot `op` holds for the turn `request_id`, leaving the turn running.
    fn release_turn_of(&self, op: &'static str, request_id: &str) -> Result<()> {
        self.begun_turn(op, request_id)?.life.release(op);
        Ok(())
    }

    /// Takes the completed turn `request_id` that `op` holds the slot for, and releases the
    /// slot; `None` while it runs. A begun turn (PROMPT_BEGIN) that went idle fails here.
    fn take_turn_of(&self, op: &'static str, request_id: &str) -> Result<Option<turn::Turn>> {
        let s = &self.shared;
        let collector = {
            let mut st = self.begun_turn(op, request_id)?;
            if !st.life.collector_done() {
                // A blocking waiter applies the idle timeout itself (Shared::wait_state_since).
                if let Some(idle) = (op == PROMPT_BEGIN).then(|| s.turn_went_idle(&st)).flatten() {
                    st.life.release(op);
                    drop(st);
                    return Err(s.idle_timeout(idle));
                }
                return Ok(None);
            }
            let collector = st.life.take_collector();
            st.life.release(op);
            collector.expect("a completed collector is there until taken")
        };
        s.completions_announced();
        turn::build_turn(request_id, collector, s.opts.turn_summary.then(|| s.opts.model.clone())).map(Some)
    }

    /// Events from now through the end of the agent's current work (client::lifecycle), as a
    /// JSON array.
    pub fn collect_events(&self, deadline: Deadline) -> Result<String> {
        self.collect_events_json(deadline).map(json_text)
    }

    #[doc(hidden)]
    pub fn collect_events_json(&self, deadline: Deadline) -> Result<Vec<u8>> {
        self.collect_events_located(deadline).map(|(array, _)| array)
    }

    /// The same array, with where each event sits in it (the C ABI's event batch).
    #[doc(hidden)]
    pub fn collect_events_located(&self, deadline: Deadline) -> Result<(Vec<u8>, Vec<turn::Span>)> {
        let s = &self.shared;
        {
            let mut st = s.state();
            st.life.acquire("collect_events")?;
            st.life.collect(None, b"[");
        }
        let _slot = Slot { shared: s, op: "collect_events" };
        let collector = self.completed_collector(deadline)?;
        turn::events_located(collector)
    }

    /// Waits for the active collector to complete and takes it (its `prompt_complete` event, when
    /// announced, is queued first); CANCELLED when a Cancel handle asked (client::stream).
    fn completed_collector(&self, deadline: Deadline) -> Result<turn::Collector> {
        self.wait_completed(deadline)?;
        let collector = self.shared.state().life.take_collector();
        Ok(collector.expect("a completed collector is there until taken"))
    }

    /// Waits until the active collector completed (leaving it in place; its `prompt_complete`
    /// event, when announced, is queued first); CANCELLED when a Cancel handle asked
    /// (client::stream).
    fn wait_completed(&self, deadline: Deadline) -> Result<()> {
        let s = &self.shared;
        s.wait_state_since(deadline, "Timed out waiting for the agent to finish", s.turn_wait(), &mut |st| {
            if st.life.collector_done() {
                Some(Ok(()))
            } else if st.life.cancel_requested() {
                Some(Err(super::stream::cancelled()))
            } else {
                None
            }
        })??;
        s.completions_announced();
        Ok(())
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
        s.completions_announced();
        match sticky {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The name of the running lifecycle operation, if any (for bindings and tests).
    #[doc(hidden)]
    pub fn active_operation(&self) -> Option<&'static str> {
        self.shared.state().life.active_operation()
    }

    /// Up to `max` events from the client's queue (each one JSON object, UTF-8), waiting until
    /// `deadline` for the first: TIMEOUT when none came, CLOSED once the client closed and the
    /// queue is drained. A full queue drops the oldest events and says so in an
    /// `event_overflow` event.
    pub fn next_events(&self, max: usize, deadline: Deadline) -> Result<Vec<EventBytes>> {
        self.shared.events.pop(max.max(1), deadline)
    }

    /// Switches the raw-frame tap (the start option `queue_responses`): from the next response
    /// read on, responses are queued as events too (on) or reach only their callers (off). A
    /// binding whose frame listeners come and go taps only while one listens: a tapped response
    /// wakes the event reader for each call.
    pub fn set_queue_responses(&self, on: bool) {
        self.shared.queue_responses.store(on, std::sync::atomic::Ordering::Release);
    }

    /// A file descriptor that is readable while events are queued, for `poll(2)`/epoll loops.
    /// The client owns it.
    #[cfg(unix)]
    pub fn event_fd(&self) -> i32 {
        self.shared.events.fd()
    }

    /// Windows' counterpart of `event_fd`: a manual-reset event that is set while events are
    /// queued, for `WaitForMultipleObjects` loops. The client owns it.
    #[cfg(windows)]
    pub fn event_handle(&self) -> std::os::windows::io::RawHandle {
        self.shared.events.handle()
    }

    /// The next `extension_ui_request` the headless UI policy did not answer (JSON), waiting
    /// until `deadline`.
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

    /// Answers UI request `id` with a value (input, select, editor).
    pub fn ui_send_value(&self, id: &str, value: &str) -> Result<()> {
        self.send_ui(id, ui::value_frame(id, value))
    }

    /// Answers confirm request `id`.
    pub fn ui_send_confirmation(&self, id: &str, confirmed: bool) -> Result<()> {
        self.send_ui(id, ui::confirm_frame(id, confirmed))
    }

    /// Cancels UI request `id` (`timed_out`: the host's own timeout fired).
    pub fn ui_cancel(&self, id: &str, timed_out: bool) -> Result<()> {
        self.send_ui(id, ui::cancel_frame(id, timed_out))
    }

    /// Sets the headless UI policy (None: every request reaches `next_ui_request`); requests
    /// already waiting that it answers are answered now.
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

    /// `set_host_tools`: registers the host tools (omp), replacing those registered; their calls
    /// arrive as `host_tool_call` events, answered with [`Client::host_tool_result`]. pi's host
    /// tools are the start option `host_tools` (the tool bridge).
    pub fn set_host_tools(&self, tools: Value, deadline: Deadline) -> Result<String> {
        self.refuse_bridged("set_host_tools")?;
        let names = HostRegistry::check_tools(&tools)?;
        self.register("set_host_tools", "tools", tools, deadline, |h, ok| h.set_tools(if ok { names.clone() } else { Vec::new() }))
    }

    /// `add_host_tools`: registers more host tools, keeping those registered (omp protocol
    /// 1.1). The names are known before the request goes out; a refusal takes back the ones
    /// that were new.
    pub fn add_host_tools(&self, tools: Value, deadline: Deadline) -> Result<String> {
        self.refuse_bridged("add_host_tools")?;
        let names = HostRegistry::check_tools(&tools)?;
        let added = self.shared.state().host.add_tools(&names);
        self.update_registry("add_host_tools", "tools", tools, deadline, |h| h.remove_tools(&added))
    }

    /// `remove_host_tools {toolNames}`: the names leave the registry once the agent agreed
    /// (until then it may still call them).
    pub fn remove_host_tools(&self, names: Value, deadline: Deadline) -> Result<String> {
        self.refuse_bridged("remove_host_tools")?;
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

    /// pi has no host tool commands: its host tools come from the bridge extension, which it
    /// loads once, at start; on omp too, tools served through the bridge (`bridge:"always"`)
    /// are fixed at start. Refused before anything changes.
    fn refuse_bridged(&self, command: &str) -> Result<()> {
        let bridged = self.shared.opts.bridge.as_ref().is_some_and(|p| !p.tools.is_empty());
        if self.shared.flavor == Flavor::Pi || bridged {
            return Err(Error::invalid(format!(
                "{command}: the host tools of a bridged client are registered at start (the start option host_tools, served through the tool bridge); start a new client with the new tools"
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

    /// `set_host_uri_schemes`: the URI schemes the host serves (`host_uri_request` events,
    /// answered with [`Client::host_uri_result`]), replacing those registered.
    pub fn set_host_uri_schemes(&self, schemes: Value, deadline: Deadline) -> Result<String> {
        let parsed = HostRegistry::check_schemes(&schemes)?;
        self.register("set_host_uri_schemes", "schemes", schemes, deadline, |h, ok| {
            h.set_schemes(if ok { parsed.clone() } else { Vec::new() })
        })
    }

    /// A partial result for open host call `call_id` (NOT_FOUND for an unknown call, CANCELLED
    /// when the agent cancelled it).
    pub fn host_tool_update(&self, call_id: &str, partial: Value) -> Result<()> {
        let out = self.shared.host_answer(|h| h.tool_update(call_id, partial))?;
        self.shared.send_outgoing(out, self.default_request_deadline())
    }

    /// The result of host call `call_id` (`{"content":[…]}`), `is_error` for a failure; the
    /// call is then closed.
    pub fn host_tool_result(&self, call_id: &str, result: Value, is_error: bool) -> Result<()> {
        let out = self.shared.host_answer(|h| h.tool_result(call_id, result, is_error))?;
        self.shared.send_outgoing(out, self.default_request_deadline())
    }

    /// The answer to `host_uri_request` `request_id`.
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
            s.note_blocked(&call, &tool, reason);
        }
        conn.send(json!({"id": conn.ext_id(request_id), "verdict": {"block": !allow, "reason": reason}}).to_string().as_bytes())
            .map_err(|e| Error::new(Status::Io, format!("the tool bridge connection is gone: {e}")))
    }

    /// The agent's recent stderr lines (a bounded ring; works after close too).
    pub fn stderr(&self) -> String {
        lock(&self.shared.stderr).text()
    }

    /// The protocol faults recorded so far, as a JSON array (the newest 128).
    pub fn protocol_errors(&self) -> String {
        Value::Array(self.shared.state().protocol_errors.iter().cloned().collect()).to_string()
    }

    /// The client's state as JSON: pid, argv, flavor, agent version, protocol version, the
    /// ready frame, whether and why it closed, …
    pub fn info(&self) -> String {
        let s = &self.shared;
        let pending = lock(&s.pending).count();
        let st = s.state();
        let ready = st.ready.as_ref().and_then(|r| serde_json::from_slice::<Value>(r).ok()).unwrap_or(Value::Null);
        json!({
            "pid": s.process.pid(),
            "argv": s.argv_shown,
            // The argv prefix the agent runs through (null without one); `argv` includes it.
            "launcher": s.opts.launcher.as_ref().map(|l| crate::protocol::argv::redact(&l.argv)),
            "flavor": s.flavor.name(),
            "agentVersion": s.opts.agent_version.as_ref().map(|v| v.to_string()),
            "bridgeLoaded": st.bridge_hello.is_some(),
            // The host tools served through the tool bridge: fixed at start.
            "bridgedTools": s.opts.bridge.as_ref().map(|p| p.tool_names()).unwrap_or_default(),
            // Where the bridge listens and what its extension dials (null: no bridge).
            "bridgeEndpoint": s.bridge_endpoint,
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
        m.insert("requests_pending".into(), json!(lock(&s.pending).count()));
        m.insert("closed".into(), json!(s.closed.load(Ordering::SeqCst)));
        Value::Object(m).to_string()
    }

    /// Up to `max` log records (JSON objects, one per element), waiting until `deadline` for
    /// the first; INVALID_ARGUMENT when the client was started without `log_level`.
    pub fn next_logs(&self, max: usize, deadline: Deadline) -> Result<Vec<String>> {
        self.shared.log.pop(max, deadline)
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
