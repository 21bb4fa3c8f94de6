//! Prompt lifecycle: which accepted prompts are still running, and the single active
//! collector (prompt_and_wait, collect_events, wait_for_idle are single-flight).
//!
//! Completion is tracked per prompt id (spec §6.2), never by a global counter:
//! - a `prompt_result` frame or a response with `data.agentInvoked:false` completes that id;
//! - a terminal `agent_end` (`isTerminal` not false) completes every running prompt that was
//!   queued into a live run (`streamingBehavior`), or whose run started (`agent_start`) after it
//!   was sent — so a late `agent_end` of an earlier run cannot end a newer prompt;
//! - a late failure (a second, failing response for the prompt's id) fails that id.
//!
//! The agent's activity (ARCHITECTURE.md, "Activity") comes from its own stream, whoever
//! started the run: it is busy from any `agent_start` until a terminal `agent_end` (omp may
//! send a second `agent_start` without an `agent_end` between), and while a `queue_update`
//! (pi) reports queued messages. Where the stream cannot tell, a `get_state` probe decides —
//! the waiter sends it, this module only says when one is due and what its answer means:
//! - a non-terminal `agent_end` followed by silence (omp's compaction handoff ends a run so and
//!   starts nothing after it);
//! - a prompt the agent acknowledged with no run after it (pi runs an extension's `/command`
//!   inside the prompt's preflight and starts no run);
//! - the client asked the agent to queue a message (`steer`, `follow_up`, a prompt with
//!   `streamingBehavior`): omp runs a steer that outlived an abort as a run of its own.
//!
//! A probe is due once the agent has been quiet for the probe period (no frame of its
//! session). Its answer: `isStreaming` or `isCompacting` → busy, look again after a longer
//! quiet; queued messages (`queuedMessageCount` omp, `pendingMessageCount` pi) with nothing
//! streaming → busy once (omp starts their run right away), and if two answers in a row say
//! so with no run started between them, the messages are parked (pi keeps a steer that outlived
//! an abort until the next prompt) and the agent is idle; "idle" for a prompt acknowledged
//! without a run stands only when a second answer agrees too. An idle answer ends what it was due
//! for: the non-terminal `agent_end` stands as the run's end, an acknowledged prompt without a
//! run completes with `agentInvoked:false`.
//!
//! Every completion of a tracked prompt is also kept (`take_completions`) for the
//! `prompt_complete` event, so a host that streams events learns when its prompt is done
//! exactly as a waiter would.

pub use crate::turn::{Collector, Mark, Outcome, TurnEvents};
use crate::error::{Error, Result, Status};

struct Prompt {
    id: String,
    streaming: bool,
    /// `agent_start` frames seen before this prompt was sent.
    starts_at_send: u64,
    /// The agent answered it with success (its run may or may not follow).
    acknowledged: bool,
}

/// What a `get_state` answer says (see the module rules).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// `isStreaming` or `isCompacting`.
    Running,
    /// Nothing runs, but this many messages wait in the agent's queues.
    Queued(u64),
    Idle,
}

impl Probe {
    /// Reads a `get_state` response's `data` (either agent's field names).
    pub fn from_state(state: &serde_json::Value) -> Probe {
        let flag = |k: &str| state.get(k).and_then(serde_json::Value::as_bool).unwrap_or(false);
        if flag("isStreaming") || flag("isCompacting") {
            return Probe::Running;
        }
        let count = |k: &str| state.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0);
        match count("queuedMessageCount") + count("pendingMessageCount") {
            0 => Probe::Idle,
            n => Probe::Queued(n),
        }
    }
}

/// A tracked prompt that completed: what the `prompt_complete` event says.
#[derive(Clone, Debug, PartialEq)]
pub struct Completion {
    pub id: String,
    /// `agent_end` (its run ended), `prompt_result`, `not_invoked` (the response or a probe
    /// said nothing ran) or `failed` (refused, never sent, or a late failure).
    pub outcome: &'static str,
    pub agent_invoked: bool,
    pub error: Option<Error>,
}

impl Completion {
    /// `{"type":"prompt_complete","omprpc":true,"requestId","outcome","agentInvoked","error"?}`.
    pub fn event(&self) -> Vec<u8> {
        let mut v = format!(
            "{{\"type\":\"prompt_complete\",\"omprpc\":true,\"requestId\":{},\"outcome\":\"{}\",\"agentInvoked\":{}",
            serde_json::Value::from(self.id.as_str()),
            self.outcome,
            self.agent_invoked
        );
        if let Some(e) = &self.error {
            v.push_str(",\"error\":");
            v.push_str(&e.to_json());
        }
        v.push('}');
        v.into_bytes()
    }
}

/// The longest quiet wait between two probes that found the agent busy.
const PROBE_BACKOFF_MAX: std::time::Duration = std::time::Duration::from_secs(5);

pub struct Lifecycle {
    /// When the last session event arrived (for the idle timeout and the probe's quiet).
    pub last_event: std::time::Instant,
    prompts: Vec<Prompt>,
    agent_starts: u64,
    /// Between an `agent_start` and a terminal `agent_end`.
    in_run: bool,
    /// Messages the agent last reported queued (`queue_update`, pi).
    queued: u64,
    /// The last `agent_end` was not terminal and no run started since: its frame.
    open_end: Option<Vec<u8>>,
    /// The client asked the agent to queue a message since the agent last proved idle.
    asked_to_queue: bool,
    /// Probes in a row that found the agent busy (the quiet before the next one doubles).
    busy_probes: u32,
    /// The previous probe's answer needs a second one to stand (see `probed`): `agent_starts` then.
    queued_at: Option<u64>,
    /// When the last answer that did not settle it came: the next quiet is measured from the
    /// later of this and the last event (answers do not move the idle clock, `last_event`).
    answered_at: Option<std::time::Instant>,
    active: Option<&'static str>,
    collector: Option<Collector>,
    /// The first late failure since the last prompt was sent (wait_for_idle raises it).
    sticky: Option<Error>,
    /// Completed prompts not yet announced (`take_completions`); kept only when `announcing`.
    completions: Vec<Completion>,
    announcing: bool,
    max_events: Option<usize>,
    max_bytes: Option<usize>,
    keep: TurnEvents,
}

impl Lifecycle {
    pub fn new(max_events: Option<usize>, max_bytes: Option<usize>, keep: TurnEvents) -> Self {
        Lifecycle {
            last_event: std::time::Instant::now(),
            prompts: Vec::new(),
            agent_starts: 0,
            in_run: false,
            queued: 0,
            open_end: None,
            asked_to_queue: false,
            busy_probes: 0,
            queued_at: None,
            answered_at: None,
            active: None,
            collector: None,
            sticky: None,
            completions: Vec::new(),
            announcing: false,
            max_events,
            max_bytes,
            keep,
        }
    }

    pub fn active_operation(&self) -> Option<&'static str> {
        self.active
    }

    /// Claims the single lifecycle slot.
    pub fn acquire(&mut self, op: &'static str) -> Result<()> {
        if let Some(current) = self.active {
            return Err(Error::new(
                Status::Concurrency,
                format!("Cannot start {op} while {current} is already collecting prompt lifecycle events"),
            ));
        }
        self.active = Some(op);
        Ok(())
    }

    pub fn release(&mut self, op: &'static str) {
        if self.active == Some(op) {
            self.active = None;
            self.collector = None;
        }
    }

    /// Starts retaining events (before the prompt is written, so none can be missed) after
    /// `prefix` in the output buffer.
    pub fn collect(&mut self, prompt_id: Option<String>, prefix: &[u8]) {
        self.last_event = std::time::Instant::now();
        self.collector = Some(Collector::new(prompt_id, prefix, self.max_events, self.max_bytes, self.keep));
    }

    pub fn collector_done(&self) -> bool {
        self.collector.as_ref().is_some_and(|c| c.outcome.is_some())
    }

    pub fn take_collector(&mut self) -> Option<Collector> {
        self.collector.take()
    }

    /// A prompt is about to be written.
    pub fn track(&mut self, id: &str, streaming: bool) {
        self.sticky = None;
        if streaming {
            self.asked_to_queue = true;
        }
        self.prompts.push(Prompt { id: id.to_string(), streaming, starts_at_send: self.agent_starts, acknowledged: false });
    }

    /// A prompt's success response arrived.
    pub fn acknowledged(&mut self, id: &str) {
        if let Some(p) = self.prompts.iter_mut().find(|p| p.id == id) {
            p.acknowledged = true;
        }
    }

    /// `steer` / `follow_up` is about to be written: the agent may run it by itself later.
    pub fn asked_to_queue(&mut self) {
        self.asked_to_queue = true;
    }

    /// `queue_update` (pi): how many messages wait in the agent's steering and follow-up queues.
    pub fn queue_reported(&mut self, queued: u64) {
        self.queued = queued;
    }

    /// Busy by the agent's own stream: a run is open, messages are queued, or a prompt of
    /// ours has not completed.
    pub fn busy(&self) -> bool {
        self.in_run || self.queued > 0 || !self.prompts.is_empty()
    }

    /// Idle, and nothing leaves a doubt a probe would have to settle.
    pub fn is_idle(&self) -> bool {
        !self.busy() && !self.doubt()
    }

    /// The stream alone cannot say whether the agent will do more (the module rules).
    fn doubt(&self) -> bool {
        self.open_end.is_some() || self.asked_to_queue
    }

    /// When a `get_state` probe is due (None: the stream decides, or a prompt still waits for
    /// its response). `quiet`: how long the agent must have been silent first.
    pub fn probe_due(&self, quiet: std::time::Duration) -> Option<std::time::Instant> {
        if self.in_run || self.prompts.iter().any(|p| !p.acknowledged) {
            return None;
        }
        // Queued messages with no run open, or an acknowledged prompt still open with none.
        if !(self.doubt() || self.queued > 0 || !self.prompts.is_empty()) {
            return None;
        }
        let backoff = quiet.saturating_mul(1 << self.busy_probes.min(16)).min(PROBE_BACKOFF_MAX.max(quiet));
        let from = self.answered_at.map_or(self.last_event, |a| a.max(self.last_event));
        Some(from + backoff)
    }

    /// `agent_start` frames seen so far (a probe notes it when it is sent).
    pub fn starts_seen(&self) -> u64 {
        self.agent_starts
    }

    /// A probe sent when `starts_at_send` runs had started was answered `probe`.
    pub fn probed(&mut self, probe: Probe, starts_at_send: u64) {
        if self.agent_starts != starts_at_send || self.in_run {
            // A run started meanwhile: the stream knows more than the answer.
            self.busy_probes = 0;
            self.queued_at = None;
            return;
        }
        // Answers that stand only when the next one, with no run between, says the same:
        // queued messages with nothing running (parked, or about to run), and "idle" for a
        // prompt acknowledged without a run (its run may be a moment late under load).
        let silent_prompt = self.open_end.is_none() && self.prompts.iter().any(|p| p.acknowledged && !p.streaming && p.starts_at_send == self.agent_starts);
        let needs_confirmation = match probe {
            Probe::Running => false,
            Probe::Queued(_) => true,
            Probe::Idle => silent_prompt,
        };
        let confirmed = self.queued_at == Some(self.agent_starts);
        let idle = probe != Probe::Running && (!needs_confirmation || confirmed);
        self.queued_at = (needs_confirmation && !idle).then_some(self.agent_starts);
        if !idle {
            if probe == Probe::Running {
                self.busy_probes += 1;
            }
            // Measure the next quiet from now, not from the last frame.
            self.answered_at = Some(std::time::Instant::now());
            return;
        }
        self.busy_probes = 0;
        self.queued_at = None;
        self.asked_to_queue = false;
        // Parked messages wait for the next prompt; until a queue_update says otherwise.
        self.queued = 0;
        if let Some(end) = self.open_end.take() {
            self.terminal_agent_end(&end);
        }
        // The agent is idle by its own account: an acknowledged prompt still open will not run.
        let silent: Vec<String> = self.prompts.iter().filter(|p| p.acknowledged).map(|p| p.id.clone()).collect();
        for id in silent {
            self.completed_without_run(&id, None, false);
        }
    }

    pub fn sticky_error(&self) -> Option<&Error> {
        self.sticky.as_ref()
    }

    /// Keep completions for `take_completions` (the start option `prompt_complete_events`); off,
    /// none are kept and nobody needs to take them.
    pub fn announce_completions(&mut self) {
        self.announcing = true;
    }

    /// Takes the completions not yet announced, in the order they happened.
    pub fn take_completions(&mut self) -> Vec<Completion> {
        std::mem::take(&mut self.completions)
    }

    fn complete(&mut self, id: &str, done: Completion, outcome: impl FnOnce() -> Result<Outcome>) {
        let before = self.prompts.len();
        self.prompts.retain(|p| p.id != id);
        let was_running = self.prompts.len() != before;
        if let Some(c) = &mut self.collector {
            if c.prompt_id.as_deref() == Some(id) && (was_running || c.outcome.is_none()) {
                c.finish(outcome());
            }
        }
        if was_running && self.announcing {
            self.completions.push(done);
        }
    }

    /// The prompt's own response was a failure (or never went out): it will not run.
    pub fn rejected(&mut self, id: &str, err: &Error) {
        let done = Completion { id: id.to_string(), outcome: "failed", agent_invoked: false, error: Some(err.clone()) };
        self.complete(id, done, || Err(err.clone()));
    }

    /// `data.agentInvoked:false` on the response, or a `prompt_result` frame.
    pub fn completed_without_run(&mut self, id: &str, prompt_result: Option<&[u8]>, agent_invoked: bool) {
        let outcome = if prompt_result.is_some() { "prompt_result" } else { "not_invoked" };
        let done = Completion { id: id.to_string(), outcome, agent_invoked, error: None };
        self.complete(id, done, || {
            Ok(Outcome { agent_end: None, agent_invoked, prompt_result: prompt_result.map(<[u8]>::to_vec) })
        });
    }

    /// A second, failing response for a prompt id.
    pub fn late_failure(&mut self, id: &str, err: Error) {
        if self.sticky.is_none() {
            self.sticky = Some(err.clone());
        }
        let done = Completion { id: id.to_string(), outcome: "failed", agent_invoked: true, error: Some(err.clone()) };
        self.complete(id, done, || Err(err));
    }

    /// One event that belongs to the session's event stream, in arrival order.
    pub fn event(&mut self, line: &[u8], mark: Mark) {
        self.last_event = std::time::Instant::now();
        if let Some(c) = &mut self.collector {
            c.retain(line, &mark);
        }
        match mark {
            Mark::AgentStart => {
                self.agent_starts += 1;
                self.in_run = true;
                self.open_end = None;
                self.busy_probes = 0;
            }
            Mark::AgentEnd { terminal: true } => {
                self.in_run = false;
                self.open_end = None;
                self.terminal_agent_end(line);
            }
            Mark::AgentEnd { terminal: false } => {
                self.in_run = false;
                self.open_end = Some(line.to_vec());
            }
            _ => {}
        }
    }

    /// Restarts the quiet clock: a frame that is not a session event (a response) still
    /// shows the agent at work, and the host answering a call is activity on the turn.
    pub fn touch(&mut self) {
        self.last_event = std::time::Instant::now();
    }

    fn terminal_agent_end(&mut self, line: &[u8]) {
        let starts = self.agent_starts;
        let mut done = Vec::new();
        self.prompts.retain(|p| {
            let ends = p.streaming || starts > p.starts_at_send;
            if ends {
                done.push(p.id.clone());
            }
            !ends
        });
        if self.announcing {
            self.completions.extend(done.iter().map(|id| Completion { id: id.clone(), outcome: "agent_end", agent_invoked: true, error: None }));
        }
        if let Some(c) = &mut self.collector {
            let mine = match &c.prompt_id {
                None => true,
                Some(id) => done.contains(id),
            };
            if mine {
                c.finish(Ok(Outcome { agent_end: Some(line.to_vec()), agent_invoked: true, prompt_result: None }));
            }
        }
    }

    /// The client closed: the collector fails with the reason.
    pub fn close(&mut self, reason: &Error) {
        if let Some(c) = &mut self.collector {
            c.finish(Err(reason.clone()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn end(l: &mut Lifecycle) {
        l.event(b"{\"type\":\"agent_end\"}", Mark::AgentEnd { terminal: true });
    }

    fn outcomes(l: &mut Lifecycle) -> Vec<(String, &'static str)> {
        l.take_completions().into_iter().map(|c| (c.id, c.outcome)).collect()
    }

    #[test]
    fn every_way_a_prompt_completes_is_announced_once() {
        let mut silent = Lifecycle::new(None, None, TurnEvents::All);
        silent.track("x", false);
        silent.completed_without_run("x", None, false);
        assert!(outcomes(&mut silent).is_empty(), "not announcing: nothing kept");
        let mut l = Lifecycle::new(None, None, TurnEvents::All);
        l.announce_completions();
        for id in ["run", "local", "result", "refused", "late"] {
            l.track(id, false);
        }
        l.acknowledged("run");
        l.event(b"{\"type\":\"agent_start\"}", Mark::AgentStart);
        l.completed_without_run("local", None, false);
        l.completed_without_run("result", Some(b"{\"type\":\"prompt_result\"}"), false);
        l.rejected("refused", &Error::new(Status::CommandFailed, "no"));
        assert_eq!(outcomes(&mut l), [("local".into(), "not_invoked"), ("result".into(), "prompt_result"), ("refused".into(), "failed")]);
        // The run ends every prompt it carried ("late" was sent before the run started too).
        end(&mut l);
        assert_eq!(outcomes(&mut l), [("run".into(), "agent_end"), ("late".into(), "agent_end")]);
        // A failure after a prompt completed, or for an id never tracked, announces nothing.
        l.late_failure("late", Error::new(Status::CommandFailed, "late"));
        l.completed_without_run("unknown", None, false);
        assert!(outcomes(&mut l).is_empty());
        let c = Completion { id: "r\"1".into(), outcome: "failed", agent_invoked: true, error: Some(Error::new(Status::CommandFailed, "x")) };
        let v: serde_json::Value = serde_json::from_slice(&c.event()).unwrap();
        assert_eq!((v["type"].as_str(), v["requestId"].as_str(), v["error"]["code"].as_str()), (Some("prompt_complete"), Some("r\"1"), Some("COMMAND_FAILED")));
        assert!(c.event().starts_with(b"{\"type\":\"prompt_complete\""), "type leads (ffi::structured reads it there)");
    }

    #[test]
    fn a_late_agent_end_of_an_earlier_run_does_not_end_a_new_prompt() {
        let mut l = Lifecycle::new(None, None, TurnEvents::All);
        l.event(b"{}", Mark::AgentStart); // run A is live
        l.acquire("prompt_and_wait").unwrap();
        l.collect(Some("req_2".into()), b"[");
        l.track("req_2", false);
        end(&mut l); // A ends
        assert!(!l.collector_done());
        assert!(!l.is_idle());
        l.event(b"{}", Mark::AgentStart);
        end(&mut l);
        assert!(l.collector_done());
        assert!(l.is_idle());
    }

    #[test]
    fn queued_prompts_end_with_the_live_run() {
        let mut l = Lifecycle::new(None, None, TurnEvents::All);
        l.event(b"{}", Mark::AgentStart);
        l.collect(Some("req_1".into()), b"[");
        l.track("req_1", true);
        end(&mut l);
        assert!(l.collector_done(), "the queued prompt completes with the live run");
        assert!(!l.busy());
        // Whether the agent runs more by itself after a queued message is the agent's to say.
        let s = l.starts_seen();
        l.probed(Probe::Idle, s);
        assert!(l.is_idle());
    }

    #[test]
    fn local_prompts_and_late_failures_complete_by_id() {
        let mut l = Lifecycle::new(None, None, TurnEvents::All);
        l.track("req_1", false);
        l.track("req_2", false);
        l.completed_without_run("req_1", None, false);
        assert!(!l.is_idle());
        l.late_failure("req_2", Error::command_failed("prompt", "late failure", None));
        assert!(l.is_idle());
        assert_eq!(l.sticky_error().unwrap().status, Status::CommandFailed);
        l.track("req_3", false);
        assert!(l.sticky_error().is_none());
    }

    #[test]
    fn single_flight_and_history_limit() {
        let mut l = Lifecycle::new(Some(2), None, TurnEvents::All);
        l.acquire("prompt_and_wait").unwrap();
        assert_eq!(l.acquire("collect_events").unwrap_err().status, Status::Concurrency);
        l.release("collect_events");
        assert_eq!(l.active_operation(), Some("prompt_and_wait"));
        l.collect(None, b"[");
        for _ in 0..3 {
            l.event(b"{}", Mark::Other);
        }
        let c = l.take_collector().unwrap();
        let e = c.outcome.unwrap().err().unwrap();
        assert_eq!(e.status, Status::LimitExceeded);
        assert!(e.message.contains("max_event_history"));
        l.release("prompt_and_wait");
        assert_eq!(l.active_operation(), None);
    }

    fn start(l: &mut Lifecycle) {
        l.event(b"{\"type\":\"agent_start\"}", Mark::AgentStart);
    }

    const Q: std::time::Duration = std::time::Duration::from_millis(250);

    #[test]
    fn a_run_nobody_prompted_keeps_the_agent_busy_until_its_terminal_end() {
        // omp runs a steer that outlived an abort as a run of its own.
        let mut l = Lifecycle::new(None, None, TurnEvents::All);
        assert!(l.is_idle(), "idle at once when nothing ever ran");
        start(&mut l);
        assert!(!l.is_idle());
        assert_eq!(l.probe_due(Q), None, "an open run needs no probe: the stream will end it");
        start(&mut l); // omp: a second agent_start without an agent_end between
        end(&mut l);
        assert!(l.is_idle());
    }

    #[test]
    fn a_steer_leaves_a_doubt_only_a_probe_settles() {
        let mut l = Lifecycle::new(None, None, TurnEvents::All);
        start(&mut l);
        l.asked_to_queue();
        end(&mut l); // the abort's terminal agent_end; the steer may still run
        assert!(!l.is_idle());
        let due = l.probe_due(Q).expect("a probe is due");
        assert!(due >= l.last_event + Q, "only after the quiet period");
        let starts = l.starts_seen();
        l.probed(Probe::Queued(1), starts);
        assert!(!l.is_idle(), "queued with nothing running: omp is about to run it");
        start(&mut l); // ... and it does
        assert_eq!(l.probe_due(Q), None);
        end(&mut l);
        let starts = l.starts_seen();
        l.probed(Probe::Idle, starts);
        assert!(l.is_idle());
    }

    #[test]
    fn an_answer_overtaken_by_a_run_start_is_ignored() {
        let mut l = Lifecycle::new(None, None, TurnEvents::All);
        l.asked_to_queue();
        let starts = l.starts_seen();
        start(&mut l);
        l.probed(Probe::Idle, starts);
        assert!(!l.is_idle(), "the run that started after the probe was sent counts");
    }

    #[test]
    fn messages_queued_twice_with_nothing_running_are_parked() {
        // pi keeps a steer that outlived an abort until the next prompt.
        let mut l = Lifecycle::new(None, None, TurnEvents::All);
        start(&mut l);
        l.queue_reported(1);
        end(&mut l);
        assert!(!l.is_idle());
        let starts = l.starts_seen();
        l.probed(Probe::Queued(1), starts);
        assert!(!l.is_idle());
        let later = l.probe_due(Q).unwrap();
        assert!(later >= l.last_event + Q, "the next answer after another quiet period");
        l.probed(Probe::Queued(1), starts);
        assert!(l.is_idle(), "parked: the agent will not run them by itself");
        l.queue_reported(0);
        assert!(l.is_idle());
    }

    #[test]
    fn a_running_answer_backs_off_up_to_the_cap() {
        let mut l = Lifecycle::new(None, None, TurnEvents::All);
        l.asked_to_queue();
        for _ in 0..20 {
            let s = l.starts_seen();
            l.probed(Probe::Running, s);
        }
        let wait = l.probe_due(Q).unwrap().saturating_duration_since(l.last_event);
        assert!(wait >= PROBE_BACKOFF_MAX && wait < PROBE_BACKOFF_MAX + std::time::Duration::from_secs(1), "{wait:?}");
        assert!(!l.is_idle());
    }

    #[test]
    fn probe_answers_do_not_move_the_idle_clock() {
        // A hung agent that says it streams must still meet turn_idle_timeout_ms.
        let mut l = Lifecycle::new(None, None, TurnEvents::All);
        l.asked_to_queue();
        let before = l.last_event;
        std::thread::sleep(std::time::Duration::from_millis(5));
        let s = l.starts_seen();
        l.probed(Probe::Running, s);
        assert_eq!(l.last_event, before);
        assert!(l.probe_due(Q).unwrap() >= before + Q * 2 + std::time::Duration::from_millis(5));
    }

    #[test]
    fn compaction_handoff_non_terminal_end_then_silence_ends_the_turn() {
        // omp 18.2.3: agent_end {isTerminal:false} and nothing after it.
        let mut l = Lifecycle::new(None, None, TurnEvents::All);
        l.acquire("prompt_and_wait").unwrap();
        l.collect(Some("req_1".into()), b"[");
        l.track("req_1", false);
        l.acknowledged("req_1");
        assert!(l.probe_due(Q).unwrap() >= l.last_event + Q, "acknowledged, no run yet: a probe only after the quiet");
        start(&mut l);
        l.event(b"{\"type\":\"agent_end\",\"isTerminal\":false}", Mark::AgentEnd { terminal: false });
        assert!(!l.collector_done());
        assert!(l.probe_due(Q).is_some());
        let s = l.starts_seen();
        l.probed(Probe::Running, s);
        assert!(!l.collector_done(), "still compacting");
        l.probed(Probe::Idle, s);
        assert!(l.collector_done());
        let c = l.take_collector().unwrap();
        let o = c.outcome.unwrap().ok().unwrap();
        assert_eq!(o.agent_end.as_deref(), Some(&b"{\"type\":\"agent_end\",\"isTerminal\":false}"[..]));
        assert!(l.is_idle());
    }

    #[test]
    fn a_continuation_after_a_non_terminal_end_is_part_of_the_turn() {
        let mut l = Lifecycle::new(None, None, TurnEvents::All);
        l.collect(Some("req_1".into()), b"[");
        l.track("req_1", false);
        l.acknowledged("req_1");
        start(&mut l);
        l.event(b"{}", Mark::AgentEnd { terminal: false });
        start(&mut l);
        assert_eq!(l.probe_due(Q), None);
        assert!(!l.collector_done());
        end(&mut l);
        assert!(l.collector_done());
    }

    #[test]
    fn pi_extension_command_acknowledged_without_a_run_completes_after_a_probe() {
        let mut l = Lifecycle::new(None, None, TurnEvents::All);
        l.collect(Some("req_1".into()), b"[");
        l.track("req_1", false);
        assert_eq!(l.probe_due(Q), None, "no probe before the prompt's response");
        l.acknowledged("req_1");
        let s = l.starts_seen();
        l.probe_due(Q).expect("acknowledged, no run: a probe is due");
        l.probed(Probe::Idle, s);
        assert!(!l.collector_done(), "one idle answer could precede a run that starts late");
        l.probed(Probe::Idle, s);
        let c = l.take_collector().unwrap();
        let o = c.outcome.unwrap().ok().unwrap();
        assert!(!o.agent_invoked);
        assert!(o.agent_end.is_none());
        assert!(l.is_idle());
    }

    #[test]
    fn probe_reads_either_agents_state() {
        let p = |v: serde_json::Value| Probe::from_state(&v);
        assert_eq!(p(serde_json::json!({"isStreaming": true, "queuedMessageCount": 0})), Probe::Running);
        assert_eq!(p(serde_json::json!({"isStreaming": false, "isCompacting": true})), Probe::Running);
        assert_eq!(p(serde_json::json!({"isStreaming": false, "queuedMessageCount": 2})), Probe::Queued(2));
        assert_eq!(p(serde_json::json!({"isStreaming": false, "pendingMessageCount": 1})), Probe::Queued(1));
        assert_eq!(p(serde_json::json!({"isStreaming": false, "pendingMessageCount": 0})), Probe::Idle);
        assert_eq!(p(serde_json::json!({})), Probe::Idle);
    }

    #[test]
    fn streamed_messages_reset_at_agent_start() {
        let mut l = Lifecycle::new(None, None, TurnEvents::All);
        l.collect(None, b"[");
        l.event(b"{}", Mark::MessageEnd { message: b"1" });
        l.event(b"{}", Mark::AgentStart);
        l.event(b"{}", Mark::MessageEnd { message: b"2" });
        let c = l.take_collector().unwrap();
        assert_eq!(c.streamed, vec![b"2".to_vec()]);
        assert_eq!(c.events, b"[{},\n{},\n{}");
        assert_eq!(c.offsets, [(1, 3), (5, 7), (9, 11)]);
    }
}
