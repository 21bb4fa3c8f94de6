//! Prompt lifecycle: which accepted prompts are still running, and the single active
//! collector (prompt_and_wait, collect_events, wait_for_idle are single-flight).
//!
//! Completion is tracked per prompt id (spec §6.2), never by a global counter. A prompt ends
//! where the agent says it will not go on (ARCHITECTURE.md, "Activity"):
//! - a `prompt_result` frame, a response with `data.agentInvoked:false` or
//!   `data.disposition:"handled"` (pi 0.99 on) completes that id at once, with no run;
//! - the end of the agent's work completes every running prompt that was queued into a live run
//!   (`streamingBehavior`, `disposition:"queued"`), or whose run started (`agent_start`) after
//!   it was sent — so a late end of an earlier run cannot end a newer prompt. That end is:
//!   - where the agent announces settling (pi 0.80.4 on; a pi of unknown version once it
//!     answered a prompt with a disposition, 0.99 on, or sent an `agent_settled`): its
//!     `agent_settled`, however many runs came before it; `{aborted:true}` ends it aborted;
//!   - otherwise a terminal `agent_end` (`isTerminal` not false), unless the agent goes on by
//!     itself: the end said `willRetry:true`, or announced a retry (`auto_retry_start`, which
//!     omp may send before the `agent_end`), or the run failed (its last assistant message
//!     stopped with `"error"`) and the agent then retries or compacts for the overflow
//!     (`compaction_start` / `auto_compaction_start` with reason `"overflow"`). Such a prompt
//!     stays open until the next run's end, until the retries give up (`auto_retry_end
//!     {success:false}`: ended aborted when the host asked to abort, which cancels them), or
//!     until an overflow compaction ends without retrying;
//! - a late failure (a second, failing response for the prompt's id) fails that id.
//!
//! The agent's activity comes from its own stream, whoever started the run: it is busy from any
//! `agent_start` until the end above (omp may send a second `agent_start` without an
//! `agent_end` between), and while a `queue_update` (pi) reports queued messages. Where the
//! stream cannot tell, a `get_state` probe decides — the waiter sends it, this module only says
//! when one is due and what its answer means:
//! - a non-terminal `agent_end` followed by silence (omp's compaction handoff ends a run so and
//!   starts nothing after it);
//! - a failed run's terminal `agent_end` followed by silence (the agent does nothing about an
//!   error it cannot retry, such as a bad request) — pi before 0.80.4 (omp says what follows a
//!   failed run before that run's terminal end, so its failed terminal end is the end);
//! - a prompt the agent acknowledged with no run after it and no disposition (pi before 0.99
//!   runs an extension's `/command` inside the prompt's preflight and starts no run);
//! - the client asked the agent to queue a message (`steer`, `follow_up`, a prompt with
//!   `streamingBehavior`): omp runs a steer that outlived an abort as a run of its own.
//!
//! No probe is due while the agent's own frames will decide: a run is open, a retry or an
//! overflow recovery is under way, or a settling agent has not settled yet.
//!
//! A probe is due once the agent has been quiet for the probe period (no frame of its
//! session). Its answer: `isStreaming` or `isCompacting` → busy, look again after a longer
//! quiet; queued messages (`queuedMessageCount` omp, `pendingMessageCount` pi) with nothing
//! streaming → busy once (omp starts their run right away), and if two answers in a row say
//! so with no run started between them, the messages are parked (pi keeps a steer that outlived
//! an abort until the next prompt) and the agent is idle; "idle" for a prompt acknowledged
//! without a run stands only when a second answer agrees too. An idle answer ends what it was due
//! for: the open `agent_end` stands as the run's end, an acknowledged prompt without a run
//! completes with `agentInvoked:false`.
//!
//! Every completion of a tracked prompt is also kept (`take_completions`) for the
//! `prompt_complete` event, so a host that streams events learns when its prompt is done
//! exactly as a waiter would.

pub use crate::turn::{Collector, Mark, Outcome, RecoveryMark, Stop, TurnEvents, TurnOutcome};
use crate::error::{Error, Result, Status};

struct Prompt {
    id: String,
    /// Queued into a live run (`streamingBehavior`, `disposition:"queued"`): it ends with that run.
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

/// What a prompt's success response said would happen to it (pi 0.99 on: `data.disposition`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disposition {
    /// No disposition (older agents): the stream, or a probe, tells.
    Unknown,
    /// `"started"`: a run starts for it.
    Started,
    /// `"queued"`: the live run takes it.
    Queued,
    /// `"handled"`, or `agentInvoked:false`: nothing runs for it.
    Handled,
}

/// A tracked prompt that completed: what the `prompt_complete` event says.
#[derive(Clone, Debug, PartialEq)]
pub struct Completion {
    pub id: String,
    /// A [`TurnOutcome`] name (`agent_end`, `agent_settled`, `aborted`, `prompt_result`,
    /// `not_invoked`), or `failed` (refused, never sent, or a late failure).
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

/// Why the agent's work is not over although its last run ended (`open_end`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Open {
    /// The stream cannot tell (a non-terminal `agent_end`; a failed run the agent may act on):
    /// the agent's next frames decide, else a probe.
    Unclear,
    /// The agent goes on by itself (a retry, an overflow recovery): its frames decide.
    Recovering,
    /// The agent announces settling: its `agent_settled` decides.
    Settling,
}

/// A queued message the agent acknowledged as an operation (`operation_queued`): over at its
/// `operation_end`, or at the end of a run once more than `after` runs have started.
struct QueuedOp {
    id: String,
    after: u64,
}

/// The longest quiet wait between two probes that found the agent busy.
const PROBE_BACKOFF_MAX: std::time::Duration = std::time::Duration::from_secs(5);

pub struct Lifecycle {
    /// When the last session event arrived (for the idle timeout and the probe's quiet).
    pub last_event: std::time::Instant,
    prompts: Vec<Prompt>,
    agent_starts: u64,
    /// Between an `agent_start` and an `agent_end`.
    in_run: bool,
    /// The agent announces settling (`agent_settled`): known from its version at start (pi 0.80.4
    /// on); for a pi of unknown version learned from its first disposition (0.99 on) or
    /// `agent_settled`, and until then taken as not.
    settles: Option<bool>,
    /// The agent says what follows a failed run before that run's terminal `agent_end` (omp: it
    /// holds the failed run's end back), so a failed terminal end is the end.
    recovers_before_its_end: bool,
    /// The current run's last assistant message stopped so.
    run_stop: Stop,
    /// The agent said it goes on after this run (`auto_retry_start`, an overflow compaction, a
    /// compaction that will retry, `willRetry`) and no run started since.
    recovering: bool,
    /// The agent gave up on the current run's failure (`auto_retry_end {success:false}`, an
    /// overflow compaction that will not retry) and no run started since: `Some(true)` when the
    /// host's abort cancelled it. omp says so before the failed run's `agent_end`.
    gave_up: Option<bool>,
    /// The host asked the agent to abort since the last run started (an ended retry is then a
    /// cancelled one).
    abort_asked: bool,
    /// Messages the agent last reported queued (`queue_update`, pi).
    queued: u64,
    /// The last run ended but the agent's work may not be over: what decides.
    open_end: Option<Open>,
    /// `follow_up` / `steer` messages omp 1.1 acknowledged as operations, not run yet.
    queued_ops: Vec<QueuedOp>,
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
    /// The raw session events of the active collection not yet taken (`take_tapped`): kept only
    /// for a streamed turn (`collect_streaming`), whose reader feeds the summarizer as they come.
    tap: Option<Vec<Vec<u8>>>,
    /// Counts the collector operations acquired: identifies the one a [`Cancel`](super::stream::Cancel)
    /// handle was taken from.
    operation_seq: u64,
    /// The host asked to cancel the active turn (`cancel`): its waiter aborts it.
    cancelled: bool,
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
            settles: Some(false),
            recovers_before_its_end: false,
            run_stop: Stop::Normal,
            recovering: false,
            gave_up: None,
            abort_asked: false,
            queued: 0,
            open_end: None,
            asked_to_queue: false,
            queued_ops: Vec::new(),
            busy_probes: 0,
            queued_at: None,
            answered_at: None,
            active: None,
            collector: None,
            tap: None,
            operation_seq: 0,
            cancelled: false,
            sticky: None,
            completions: Vec::new(),
            announcing: false,
            max_events,
            max_bytes,
            keep,
        }
    }

    /// Whether the agent announces settling, as its version says (`None`: not known — learned
    /// from the stream, see `settles`).
    pub fn agent_settles(&mut self, settles: Option<bool>) {
        self.settles = settles;
    }

    /// The agent announces its retries and overflow recovery before a failed run's terminal
    /// `agent_end` (omp 18): no probe after such an end.
    pub fn agent_recovers_before_its_end(&mut self) {
        self.recovers_before_its_end = true;
    }

    pub fn active_operation(&self) -> Option<&'static str> {
        self.active
    }

    /// Claims the single lifecycle slot.
    pub fn acquire(&mut self, op: &'static str) -> Result<()> {
        if let Some(current) = self.active {
            // A turn begun for an event loop (the C ABI's prompt_begin) is its binding's
            // prompt_and_wait: the error names what the program called.
            let current = if current == "prompt_begin" { "prompt_and_wait" } else { current };
            return Err(Error::new(
                Status::Concurrency,
                format!("Cannot start {op} while {current} is already collecting prompt lifecycle events"),
            ));
        }
        self.active = Some(op);
        self.operation_seq += 1;
        self.cancelled = false;
        Ok(())
    }

    pub fn release(&mut self, op: &'static str) {
        if self.active == Some(op) {
            self.active = None;
            self.collector = None;
            self.tap = None;
            self.cancelled = false;
        }
    }

    /// The operation acquired last (with `acquire`): what a cancel handle taken now would name.
    pub fn operation_seq(&self) -> u64 {
        self.operation_seq
    }

    /// Asks the waiter of the active turn (`prompt_and_wait`, `stream`) to cancel it; `seq`: only
    /// when that is still the operation acquired as `seq`. Whether a turn was asked to.
    pub fn cancel(&mut self, seq: Option<u64>) -> bool {
        let turn = matches!(self.active, Some("prompt_and_wait" | "stream"));
        if !turn || seq.is_some_and(|s| s != self.operation_seq) || self.collector_done() {
            return false;
        }
        self.cancelled = true;
        true
    }

    /// The active turn was asked to cancel and has not completed.
    pub fn cancel_requested(&self) -> bool {
        self.cancelled && !self.collector_done()
    }

    /// Like `collect` for a streamed turn: the collector keeps no events (nothing bounds a
    /// streamed turn's length), each is tapped instead until `take_tapped`.
    pub fn collect_streaming(&mut self, prompt_id: String) {
        self.last_event = std::time::Instant::now();
        self.collector = Some(Collector::new(Some(prompt_id), b"[", None, None, TurnEvents::None));
        self.tap = Some(Vec::new());
    }

    /// The tapped events not taken yet, oldest first.
    pub fn take_tapped(&mut self) -> Vec<Vec<u8>> {
        self.tap.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// A streamed turn is collecting: its waiter wants to hear of every event.
    pub fn tapping(&self) -> bool {
        self.tap.is_some() && !self.collector_done()
    }

    /// Starts retaining events (before the prompt is written, so none can be missed) after
    /// `prefix` in the output buffer.
    pub fn collect(&mut self, prompt_id: Option<String>, prefix: &[u8]) {
        self.last_event = std::time::Instant::now();
        self.collector = Some(Collector::new(prompt_id, prefix, self.max_events, self.max_bytes, self.keep));
    }

    /// The active collector is that of the prompt `request_id`.
    pub fn collecting_for(&self, request_id: &str) -> bool {
        self.collector.as_ref().is_some_and(|c| c.prompt_id.as_deref() == Some(request_id))
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

    /// A prompt's success response arrived, saying `disposition` (pi 0.99 on).
    pub fn acknowledged(&mut self, id: &str, disposition: Disposition) {
        if self.settles.is_none() && disposition != Disposition::Unknown {
            // A pi of unknown version that answers with a disposition is 0.99 or newer: it
            // announces settling (0.80.4 on).
            self.settles = Some(true);
        }
        if disposition == Disposition::Handled {
            self.completed_without_run(id, None, false);
            return;
        }
        if let Some(p) = self.prompts.iter_mut().find(|p| p.id == id) {
            p.acknowledged = true;
            if disposition == Disposition::Queued {
                p.streaming = true;
            }
        }
    }

    /// `steer` / `follow_up` is about to be written: the agent may run it by itself later.
    pub fn asked_to_queue(&mut self) {
        self.asked_to_queue = true;
    }

    /// `abort` (or `abort_retry`, `abort_and_prompt`) is about to be written.
    pub fn abort_asked(&mut self) {
        self.abort_asked = true;
    }

    /// omp protocol 1.1 acknowledged a `follow_up` / `steer` as operation `op`: the agent will
    /// run it. Its run is the first to start after those of the prompts still waiting for
    /// theirs (or the current run, which omp ends with the operation's `operation_end`); until
    /// then the agent is busy. The doubt of having asked to queue is settled by the
    /// acknowledgement.
    pub fn operation_queued(&mut self, op: String) {
        let waiting = self.prompts.iter().filter(|p| !p.streaming && p.starts_at_send == self.agent_starts).count() as u64;
        let queued_before = self.queued_ops.iter().filter(|q| q.after >= self.agent_starts).count() as u64;
        self.queued_ops.push(QueuedOp { id: op, after: self.agent_starts + waiting + queued_before });
        self.asked_to_queue = false;
    }

    /// An `operation_end` / `operation_error`: a queued operation of that id is over.
    pub fn operation_ended(&mut self, op: &str) {
        self.queued_ops.retain(|q| q.id != op);
    }

    /// `queue_update` (pi): how many messages wait in the agent's steering and follow-up queues.
    pub fn queue_reported(&mut self, queued: u64) {
        self.queued = queued;
    }

    /// Busy by the agent's own stream: a run is open, the agent goes on after one, messages
    /// are queued, or a prompt of ours has not completed.
    pub fn busy(&self) -> bool {
        self.in_run
            || self.recovering
            || matches!(self.open_end, Some(Open::Recovering | Open::Settling))
            || self.queued > 0
            || !self.prompts.is_empty()
            || !self.queued_ops.is_empty()
    }

    /// Idle, and nothing leaves a doubt a probe would have to settle.
    pub fn is_idle(&self) -> bool {
        !self.busy() && !self.doubt()
    }

    /// The stream alone cannot say whether the agent will do more (the module rules).
    fn doubt(&self) -> bool {
        self.open_end == Some(Open::Unclear) || self.asked_to_queue
    }

    /// The agent's own frames will say what happens next: no probe.
    fn frames_decide(&self) -> bool {
        self.in_run || self.recovering || matches!(self.open_end, Some(Open::Recovering | Open::Settling))
    }

    /// When a `get_state` probe is due (None: the stream decides, or a prompt still waits for
    /// its response). `quiet`: how long the agent must have been silent first.
    pub fn probe_due(&self, quiet: std::time::Duration) -> Option<std::time::Instant> {
        if self.frames_decide() || self.prompts.iter().any(|p| !p.acknowledged) {
            return None;
        }
        // Queued messages with no run open, or an acknowledged prompt still open with none.
        let open = self.doubt() || self.queued > 0 || !self.prompts.is_empty() || !self.queued_ops.is_empty();
        if !open {
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
        if self.agent_starts != starts_at_send || self.frames_decide() {
            // A run started meanwhile, or the agent's frames said more than the answer.
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
            // A queued operation's run may be a moment late too.
            Probe::Idle => silent_prompt || !self.queued_ops.is_empty(),
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
        // Idle by its own account: a queued operation has run, or will not.
        self.queued_ops.clear();
        // Parked messages wait for the next prompt; until a queue_update says otherwise.
        self.queued = 0;
        if self.open_end.take().is_some() {
            self.work_ended(None);
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

    /// `data.agentInvoked:false` or `disposition:"handled"` on the response, or a
    /// `prompt_result` frame.
    pub fn completed_without_run(&mut self, id: &str, prompt_result: Option<&[u8]>, agent_invoked: bool) {
        let how = if prompt_result.is_some() { TurnOutcome::PromptResult } else { TurnOutcome::NotInvoked };
        let done = Completion { id: id.to_string(), outcome: how.name(), agent_invoked, error: None };
        self.complete(id, done, || Ok(Outcome { how, agent_invoked, prompt_result: prompt_result.map(<[u8]>::to_vec) }));
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
            if let Some(tap) = self.tap.as_mut().filter(|_| c.outcome.is_none()) {
                tap.push(line.to_vec());
            }
            c.retain(line, &mark);
        }
        match mark {
            Mark::AgentStart => {
                self.agent_starts += 1;
                self.in_run = true;
                self.open_end = None;
                self.recovering = false;
                self.gave_up = None;
                self.abort_asked = false;
                self.run_stop = Stop::Normal;
                self.busy_probes = 0;
            }
            Mark::MessageEnd { stop: Stop::NotAssistant, .. } => {}
            Mark::MessageEnd { stop, .. } => self.run_stop = stop,
            Mark::AgentEnd { terminal, will_retry } => {
                self.in_run = false;
                self.recovering |= will_retry;
                let open = if self.settles == Some(true) {
                    Some(Open::Settling)
                } else if !terminal {
                    Some(Open::Unclear)
                } else if self.recovering {
                    Some(Open::Recovering)
                } else if self.run_stop == Stop::Error && self.gave_up.is_none() && !self.recovers_before_its_end {
                    Some(Open::Unclear)
                } else {
                    None
                };
                match open {
                    Some(open) => self.open_end = Some(open),
                    None => {
                        self.open_end = None;
                        let cancelled = self.gave_up.take() == Some(true);
                        self.work_ended(cancelled.then_some(TurnOutcome::Aborted));
                    }
                }
            }
            Mark::Recovery(r) => self.recovery(r),
            Mark::Update | Mark::Other => {}
        }
    }

    /// The agent's own word on what follows a run (the module rules).
    fn recovery(&mut self, r: RecoveryMark) {
        match r {
            RecoveryMark::RetryStart | RecoveryMark::CompactionStart { overflow: true } | RecoveryMark::CompactionEnd { will_retry: true } => {
                self.recovering = true;
                self.gave_up = None;
                if self.open_end == Some(Open::Unclear) {
                    self.open_end = Some(Open::Recovering);
                }
            }
            RecoveryMark::RetryEnd { success: false } | RecoveryMark::CompactionEnd { will_retry: false } => {
                let was = std::mem::replace(&mut self.recovering, false);
                let cancelled = was && self.abort_asked && r == (RecoveryMark::RetryEnd { success: false });
                self.gave_up = Some(cancelled);
                if self.settles == Some(true) || self.in_run {
                    // agent_settled, or the run's own agent_end (omp says this before it), ends it.
                    return;
                }
                // The agent gives up on the failed run: its end stands, aborted when the host's
                // abort is what cancelled the retry.
                if matches!(self.open_end, Some(Open::Recovering | Open::Unclear)) {
                    self.open_end = None;
                    self.gave_up = None;
                    self.work_ended(cancelled.then_some(TurnOutcome::Aborted));
                }
            }
            RecoveryMark::Settled { aborted } => {
                // A retry the host cancelled (abort_retry: pi settles with aborted:false) ended
                // the work as an abort would; pi before 1.1 sends no `aborted` at all, and its
                // aborted last run says so.
                let aborted = aborted || self.gave_up == Some(true) || self.run_stop == Stop::Aborted;
                self.settles = Some(true);
                self.recovering = false;
                self.gave_up = None;
                self.in_run = false;
                self.open_end = None;
                self.work_ended(Some(if aborted { TurnOutcome::Aborted } else { TurnOutcome::AgentSettled }));
            }
            // The retry succeeded: the run it started is under way (its agent_start came first),
            // and its end is the end.
            RecoveryMark::RetryEnd { success: true } => self.recovering = false,
            RecoveryMark::CompactionStart { overflow: false } => {}
        }
    }

    /// Restarts the quiet clock: a frame that is not a session event (a response) still
    /// shows the agent at work, and the host answering a call is activity on the turn.
    pub fn touch(&mut self) {
        self.last_event = std::time::Instant::now();
    }

    /// The agent's work is over (the module rules). `how`: the outcome, when not the last run's
    /// own (`agent_end`, or `aborted` when that run stopped aborted).
    fn work_ended(&mut self, how: Option<TurnOutcome>) {
        let how = how.unwrap_or(if self.run_stop == Stop::Aborted { TurnOutcome::Aborted } else { TurnOutcome::AgentEnd });
        self.abort_asked = false;
        let starts = self.agent_starts;
        // A queued operation whose run has started (and now ended) is over.
        self.queued_ops.retain(|q| starts <= q.after);
        let mut done = Vec::new();
        self.prompts.retain(|p| {
            let ends = p.streaming || starts > p.starts_at_send;
            if ends {
                done.push(p.id.clone());
            }
            !ends
        });
        if self.announcing {
            self.completions.extend(done.iter().map(|id| Completion { id: id.clone(), outcome: how.name(), agent_invoked: true, error: None }));
        }
        if let Some(c) = &mut self.collector {
            let mine = match &c.prompt_id {
                None => true,
                Some(id) => done.contains(id),
            };
            if mine {
                c.finish(Ok(Outcome { how, agent_invoked: true, prompt_result: None }));
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
        l.event(b"{\"type\":\"agent_end\"}", Mark::AgentEnd { terminal: true, will_retry: false });
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
        l.acknowledged("run", Disposition::Unknown);
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
        assert!(c.event().starts_with(crate::client::events::COMPLETION_PREFIX), "type leads (ffi::structured reads it there; the queue keeps it through an overflow)");
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
    fn a_follow_up_acknowledged_as_an_operation_is_busy_until_its_own_run_ends() {
        // omp 1.1 acknowledges follow_up as an operation ({ack:"accepted", operationId}).
        // Here no operation_end follows: the prompt's run ends, then the follow-up's run.
        let mut l = Lifecycle::new(None, None, TurnEvents::All);
        l.track("req_1", false);
        l.acknowledged("req_1", Disposition::Unknown);
        l.asked_to_queue();
        l.operation_queued("op_follow".into());
        assert!(!l.is_idle());
        start(&mut l);
        end(&mut l);
        assert!(l.busy(), "the prompt's run ended: the follow-up's has not started");
        assert!(l.probe_due(Q).is_some(), "a silent agent is asked");
        start(&mut l);
        end(&mut l);
        assert!(l.is_idle(), "the follow-up's run ended");
    }

    #[test]
    fn a_queued_operation_run_inside_the_current_run_ends_with_its_operation_end() {
        // omp 18.2.3 (protocol 1.1): a follow_up sent during a run is taken into that run; its
        // operation_end comes after the run's agent_end.
        let mut l = Lifecycle::new(None, None, TurnEvents::All);
        l.track("req_1", false);
        l.acknowledged("req_1", Disposition::Unknown);
        start(&mut l);
        l.asked_to_queue();
        l.operation_queued("op_follow".into());
        end(&mut l);
        assert!(l.busy(), "its operation_end has not come");
        l.operation_ended("op_other");
        assert!(l.busy());
        l.operation_ended("op_follow");
        assert!(l.is_idle());
    }

    #[test]
    fn a_queued_operation_the_agent_never_runs_ends_when_it_says_twice_it_is_idle() {
        let mut l = Lifecycle::new(None, None, TurnEvents::All);
        l.asked_to_queue();
        l.operation_queued("op_follow".into());
        let s = l.starts_seen();
        l.probed(Probe::Idle, s);
        assert!(l.busy(), "one idle answer may come just before the run");
        l.probed(Probe::Idle, s);
        assert!(l.is_idle());
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
        l.acknowledged("req_1", Disposition::Unknown);
        assert!(l.probe_due(Q).unwrap() >= l.last_event + Q, "acknowledged, no run yet: a probe only after the quiet");
        start(&mut l);
        l.event(b"{\"type\":\"agent_end\",\"isTerminal\":false}", Mark::AgentEnd { terminal: false, will_retry: false });
        assert!(!l.collector_done());
        assert!(l.probe_due(Q).is_some());
        let s = l.starts_seen();
        l.probed(Probe::Running, s);
        assert!(!l.collector_done(), "still compacting");
        l.probed(Probe::Idle, s);
        assert!(l.collector_done());
        let c = l.take_collector().unwrap();
        let o = c.outcome.unwrap().ok().unwrap();
        assert_eq!(o.how, TurnOutcome::AgentEnd);
        assert!(l.is_idle());
    }

    #[test]
    fn a_continuation_after_a_non_terminal_end_is_part_of_the_turn() {
        let mut l = Lifecycle::new(None, None, TurnEvents::All);
        l.collect(Some("req_1".into()), b"[");
        l.track("req_1", false);
        l.acknowledged("req_1", Disposition::Unknown);
        start(&mut l);
        l.event(b"{}", Mark::AgentEnd { terminal: false, will_retry: false });
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
        l.acknowledged("req_1", Disposition::Unknown);
        let s = l.starts_seen();
        l.probe_due(Q).expect("acknowledged, no run: a probe is due");
        l.probed(Probe::Idle, s);
        assert!(!l.collector_done(), "one idle answer could precede a run that starts late");
        l.probed(Probe::Idle, s);
        let c = l.take_collector().unwrap();
        let o = c.outcome.unwrap().ok().unwrap();
        assert!(!o.agent_invoked);
        assert_eq!(o.how, TurnOutcome::NotInvoked);
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
        l.event(b"{}", Mark::MessageEnd { message: b"1", stop: Stop::NotAssistant });
        l.event(b"{}", Mark::AgentStart);
        l.event(b"{}", Mark::MessageEnd { message: b"2", stop: Stop::NotAssistant });
        let c = l.take_collector().unwrap();
        assert_eq!(c.streamed, vec![b"2".to_vec()]);
        assert_eq!(c.events, b"[{},\n{},\n{}");
        assert_eq!(c.offsets, [(1, 3), (5, 7), (9, 11)]);
    }

    // --- the end of a prompt: agent_settled, dispositions, retries, overflow recovery -------

    fn failed(l: &mut Lifecycle) {
        l.event(b"{}", Mark::MessageEnd { message: b"{}", stop: Stop::Error });
    }

    fn answered(l: &mut Lifecycle) {
        l.event(b"{}", Mark::MessageEnd { message: b"{}", stop: Stop::Normal });
    }

    fn end_with(l: &mut Lifecycle, will_retry: bool) {
        l.event(b"{\"type\":\"agent_end\"}", Mark::AgentEnd { terminal: true, will_retry });
    }

    fn frame(l: &mut Lifecycle, r: RecoveryMark) {
        l.event(b"{}", Mark::Recovery(r));
    }

    /// A prompt tracked, acknowledged and collected by prompt_and_wait.
    fn prompted(settles: Option<bool>) -> Lifecycle {
        let mut l = Lifecycle::new(None, None, TurnEvents::All);
        l.agent_settles(settles);
        l.announce_completions();
        l.collect(Some("req_1".into()), b"[");
        l.track("req_1", false);
        l.acknowledged("req_1", Disposition::Started);
        l
    }

    fn how(l: &mut Lifecycle) -> TurnOutcome {
        l.take_collector().unwrap().outcome.unwrap().ok().unwrap().how
    }

    #[test]
    fn pi_1_x_a_retry_after_a_500_ends_at_agent_settled_not_at_the_failed_agent_end() {
        // pi 1.6.0, recorded: agent_end {willRetry:true}, auto_retry_start, 2 s, agent_start,
        // auto_retry_end {success:true}, agent_end, agent_settled {aborted:false}.
        let mut l = prompted(Some(true));
        start(&mut l);
        failed(&mut l);
        end_with(&mut l, true);
        assert!(!l.collector_done() && !l.is_idle());
        frame(&mut l, RecoveryMark::RetryStart);
        assert_eq!(l.probe_due(Q), None, "the agent's own frames decide: no probe in the retry's delay");
        start(&mut l);
        frame(&mut l, RecoveryMark::RetryEnd { success: true });
        answered(&mut l);
        end_with(&mut l, false);
        assert!(!l.collector_done(), "an agent that announces settling ends at its agent_settled");
        assert!(!l.is_idle() && l.probe_due(Q).is_none());
        frame(&mut l, RecoveryMark::Settled { aborted: false });
        assert!(l.is_idle());
        assert_eq!(how(&mut l), TurnOutcome::AgentSettled);
        assert_eq!(outcomes(&mut l), [("req_1".into(), "agent_settled")]);
    }

    #[test]
    fn pi_1_x_overflow_gives_up_and_settles_with_the_failed_run() {
        let mut l = prompted(Some(true));
        start(&mut l);
        failed(&mut l);
        end_with(&mut l, false);
        assert!(!l.collector_done());
        frame(&mut l, RecoveryMark::Settled { aborted: false });
        assert_eq!(how(&mut l), TurnOutcome::AgentSettled);
    }

    #[test]
    fn pi_1_x_abort_in_the_retry_delay_settles_aborted() {
        let mut l = prompted(Some(true));
        start(&mut l);
        failed(&mut l);
        end_with(&mut l, true);
        frame(&mut l, RecoveryMark::RetryStart);
        l.abort_asked();
        frame(&mut l, RecoveryMark::RetryEnd { success: false });
        assert!(!l.collector_done(), "agent_settled follows at once");
        frame(&mut l, RecoveryMark::Settled { aborted: true });
        assert!(l.is_idle());
        assert_eq!(how(&mut l), TurnOutcome::Aborted);
    }

    #[test]
    fn pi_1_x_abort_retry_in_the_delay_is_an_aborted_outcome_though_pi_settles_unaborted() {
        // abort_retry cancels only the retry: auto_retry_end "Retry cancelled", the response,
        // agent_settled {aborted:false}.
        let mut l = prompted(Some(true));
        start(&mut l);
        failed(&mut l);
        end_with(&mut l, true);
        frame(&mut l, RecoveryMark::RetryStart);
        l.abort_asked();
        frame(&mut l, RecoveryMark::RetryEnd { success: false });
        frame(&mut l, RecoveryMark::Settled { aborted: false });
        assert_eq!(how(&mut l), TurnOutcome::Aborted);
        // Retries that ran out without the host asking settle as the agent says.
        let mut l = prompted(Some(true));
        start(&mut l);
        failed(&mut l);
        end_with(&mut l, false);
        frame(&mut l, RecoveryMark::RetryEnd { success: false });
        frame(&mut l, RecoveryMark::Settled { aborted: false });
        assert_eq!(how(&mut l), TurnOutcome::AgentSettled);
    }

    #[test]
    fn pi_0_80_settles_without_saying_aborted_and_its_aborted_run_says_it() {
        // pi 0.80.10 (measured): agent_settled has no `aborted` before 1.1.0.
        let mut l = prompted(Some(true));
        start(&mut l);
        l.event(b"{}", Mark::MessageEnd { message: b"{}", stop: Stop::Aborted });
        end_with(&mut l, false);
        frame(&mut l, RecoveryMark::Settled { aborted: false });
        assert_eq!(how(&mut l), TurnOutcome::Aborted);
    }

    #[test]
    fn dispositions_decide_at_once_handled_without_a_probe_and_queued_with_the_live_run() {
        let mut l = Lifecycle::new(None, None, TurnEvents::All);
        l.agent_settles(Some(true));
        l.collect(Some("req_1".into()), b"[");
        l.track("req_1", false);
        l.acknowledged("req_1", Disposition::Handled);
        assert!(l.collector_done() && l.is_idle(), "handled: nothing runs, no probe");
        let c = l.take_collector().unwrap().outcome.unwrap().ok().unwrap();
        assert_eq!((c.how, c.agent_invoked), (TurnOutcome::NotInvoked, false));
        // A prompt the agent queued into its live run ends with that run, not with a later one.
        start(&mut l);
        l.collect(Some("req_2".into()), b"[");
        l.track("req_2", false);
        l.acknowledged("req_2", Disposition::Queued);
        answered(&mut l);
        end_with(&mut l, false);
        frame(&mut l, RecoveryMark::Settled { aborted: false });
        assert_eq!(how(&mut l), TurnOutcome::AgentSettled);
        assert!(l.is_idle());
    }

    #[test]
    fn pi_0_73_a_retry_announced_after_the_failed_agent_end_keeps_the_prompt_open() {
        // pi 0.73.1, recorded: agent_end (error), auto_retry_start, 2 s, agent_start, …,
        // auto_retry_end {success:true}, agent_end.
        let mut l = prompted(Some(false));
        start(&mut l);
        failed(&mut l);
        end_with(&mut l, false);
        assert!(!l.collector_done(), "a failed run may be retried");
        assert!(l.probe_due(Q).is_some(), "if nothing follows, a probe decides");
        frame(&mut l, RecoveryMark::RetryStart);
        assert_eq!(l.probe_due(Q), None);
        let s = l.starts_seen();
        l.probed(Probe::Idle, s);
        assert!(!l.collector_done(), "an idle answer in the retry's delay does not end it");
        start(&mut l);
        frame(&mut l, RecoveryMark::RetryEnd { success: true });
        answered(&mut l);
        end_with(&mut l, false);
        assert!(l.is_idle());
        assert_eq!(how(&mut l), TurnOutcome::AgentEnd);
    }

    #[test]
    fn an_error_the_agent_does_nothing_about_ends_when_a_probe_finds_it_idle() {
        let mut l = prompted(Some(false));
        start(&mut l);
        failed(&mut l);
        end_with(&mut l, false);
        let s = l.starts_seen();
        l.probed(Probe::Idle, s);
        assert!(l.is_idle());
        assert_eq!(how(&mut l), TurnOutcome::AgentEnd);
    }

    #[test]
    fn retries_that_run_out_end_the_prompt_with_the_last_failed_run() {
        let mut l = prompted(Some(false));
        start(&mut l);
        failed(&mut l);
        end_with(&mut l, false);
        frame(&mut l, RecoveryMark::RetryStart);
        start(&mut l);
        failed(&mut l);
        end_with(&mut l, false);
        frame(&mut l, RecoveryMark::RetryEnd { success: false });
        assert!(l.is_idle(), "the agent gave up: no probe needed");
        assert_eq!(how(&mut l), TurnOutcome::AgentEnd);
    }

    #[test]
    fn pi_0_73_abort_in_the_retry_delay_ends_the_prompt_aborted_at_once() {
        // pi 0.73.1, recorded: abort → auto_retry_end {success:false, finalError:"Retry cancelled"}, response.
        let mut l = prompted(Some(false));
        start(&mut l);
        failed(&mut l);
        end_with(&mut l, false);
        frame(&mut l, RecoveryMark::RetryStart);
        l.abort_asked();
        frame(&mut l, RecoveryMark::RetryEnd { success: false });
        assert!(l.is_idle());
        assert_eq!(how(&mut l), TurnOutcome::Aborted);
        assert_eq!(outcomes(&mut l), [("req_1".into(), "aborted")]);
    }

    #[test]
    fn omp_announces_the_retry_inside_the_run_and_ends_at_the_last_terminal_agent_end() {
        // omp 18.2.3, recorded: the failed run's agent_end is held back; auto_retry_start, then a
        // second agent_start, auto_retry_end, and one agent_end {isTerminal:true}.
        let mut l = prompted(Some(false));
        start(&mut l);
        failed(&mut l);
        frame(&mut l, RecoveryMark::RetryStart);
        start(&mut l);
        frame(&mut l, RecoveryMark::RetryEnd { success: true });
        answered(&mut l);
        end_with(&mut l, false);
        assert_eq!(how(&mut l), TurnOutcome::AgentEnd);
        // Abort in the delay: auto_retry_end "Retry cancelled", then the failed run's agent_end.
        let mut l = prompted(Some(false));
        start(&mut l);
        failed(&mut l);
        frame(&mut l, RecoveryMark::RetryStart);
        l.abort_asked();
        frame(&mut l, RecoveryMark::RetryEnd { success: false });
        assert!(!l.collector_done(), "its agent_end is still to come");
        end_with(&mut l, false);
        assert!(l.is_idle(), "ended at once: the agent said it gave up");
        assert_eq!(how(&mut l), TurnOutcome::Aborted);
    }

    #[test]
    fn omp_a_failed_terminal_end_is_the_end_without_a_probe() {
        // omp 18.2.3: a 400 nobody retries — the failed message, one terminal agent_end.
        let mut l = prompted(Some(false));
        l.agent_recovers_before_its_end();
        start(&mut l);
        failed(&mut l);
        end_with(&mut l, false);
        assert!(l.is_idle());
        assert_eq!(how(&mut l), TurnOutcome::AgentEnd);
    }

    #[test]
    fn an_overflow_compaction_that_retries_keeps_the_prompt_open_until_the_new_run_ends() {
        // pi 0.73.1 (compaction_*) and 0.37.2 (auto_compaction_*): the failed agent_end, then the
        // compaction with willRetry, then a new run.
        let mut l = prompted(Some(false));
        start(&mut l);
        failed(&mut l);
        end_with(&mut l, false);
        frame(&mut l, RecoveryMark::CompactionStart { overflow: true });
        assert_eq!(l.probe_due(Q), None);
        frame(&mut l, RecoveryMark::CompactionEnd { will_retry: true });
        assert!(!l.collector_done() && !l.is_idle());
        start(&mut l);
        answered(&mut l);
        end_with(&mut l, false);
        assert_eq!(how(&mut l), TurnOutcome::AgentEnd);
        // omp: both compactions inside the run find nothing to drop; the failed end then stands.
        let mut l = prompted(Some(false));
        start(&mut l);
        failed(&mut l);
        for _ in 0..2 {
            frame(&mut l, RecoveryMark::CompactionStart { overflow: true });
            frame(&mut l, RecoveryMark::CompactionEnd { will_retry: false });
        }
        end_with(&mut l, false);
        assert!(l.is_idle());
        assert_eq!(how(&mut l), TurnOutcome::AgentEnd);
    }

    #[test]
    fn a_pi_of_unknown_version_learns_settling_from_its_disposition_or_first_agent_settled() {
        // A disposition says pi 0.99 or newer: its first prompt already ends at agent_settled.
        let mut l = prompted(None);
        start(&mut l);
        answered(&mut l);
        end_with(&mut l, false);
        assert!(!l.collector_done() && l.probe_due(Q).is_none(), "waits for its agent_settled");
        frame(&mut l, RecoveryMark::Settled { aborted: false });
        assert_eq!(how(&mut l), TurnOutcome::AgentSettled);
        // Without one (0.80.4 – 0.98) the first prompt ends at its agent_end; the agent_settled
        // that follows teaches the rest.
        let mut l = Lifecycle::new(None, None, TurnEvents::All);
        l.agent_settles(None);
        l.collect(Some("req_1".into()), b"[");
        l.track("req_1", false);
        l.acknowledged("req_1", Disposition::Unknown);
        start(&mut l);
        answered(&mut l);
        end_with(&mut l, false);
        assert_eq!(how(&mut l), TurnOutcome::AgentEnd);
        frame(&mut l, RecoveryMark::Settled { aborted: false });
        l.collect(Some("req_2".into()), b"[");
        l.track("req_2", false);
        l.acknowledged("req_2", Disposition::Unknown);
        start(&mut l);
        answered(&mut l);
        end_with(&mut l, false);
        assert!(!l.collector_done());
        frame(&mut l, RecoveryMark::Settled { aborted: false });
        assert_eq!(how(&mut l), TurnOutcome::AgentSettled);
    }

    #[test]
    fn an_aborted_last_run_is_an_aborted_outcome() {
        let mut l = prompted(Some(false));
        start(&mut l);
        l.event(b"{}", Mark::MessageEnd { message: b"{}", stop: Stop::Aborted });
        end_with(&mut l, false);
        assert_eq!(how(&mut l), TurnOutcome::Aborted);
    }
}
