//! Collecting one turn's events: what the active lifecycle operation retains of the session's
//! stream, bounded, into the buffer the turn JSON is built from. Pure, no I/O: the client's
//! lifecycle (client::lifecycle) decides when collecting starts and what ends it.

use crate::error::{Error, Result, Status};

/// Which events a turn keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TurnEvents {
    All,
    /// `message_update` frames repeat the whole partial message each time; a host that reads
    /// deltas from the event queue (or the summary) needs none of them in the turn.
    NoUpdates,
    None,
}

/// What the reader says about one frame of the session's stream.
pub enum Mark<'a> {
    AgentStart,
    /// `agent_end`: `terminal` unless it says `isTerminal:false` (omp hands a run over to a
    /// continuation so); `will_retry`: pi's `willRetry:true` (0.75.4 on: a retry follows).
    AgentEnd { terminal: bool, will_retry: bool },
    /// `message_end`: its message, and how it stopped when it is an assistant message.
    MessageEnd { message: &'a [u8], stop: Stop },
    /// `message_update`: retained only when the turn keeps all events.
    Update,
    /// The agent's own word on what it does after a run's end (turn::recovery): kept for the
    /// turn's record whatever events the turn retains.
    Recovery(Recovery),
    Other,
}

/// How a `message_end`'s message stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Not an assistant message (no `stopReason`).
    NotAssistant,
    /// An assistant message that stopped otherwise (`stop`, `toolUse`, `length` …).
    Normal,
    /// `stopReason:"error"`: the LLM call failed (the agent may retry or compact).
    Error,
    /// `stopReason:"aborted"`.
    Aborted,
}

/// The recovery and settling frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recovery {
    /// `auto_retry_start`: the agent retries the failed call after a delay.
    RetryStart,
    /// `auto_retry_end`: `success:false` when the retries ran out or were cancelled.
    RetryEnd { success: bool },
    /// `compaction_start` (pi) / `auto_compaction_start` (omp, pi before 0.50), `overflow` when
    /// its reason is the context overflow the last run failed with.
    CompactionStart { overflow: bool },
    /// `compaction_end` / `auto_compaction_end`: `will_retry` when the agent runs the prompt again.
    CompactionEnd { will_retry: bool },
    /// `agent_settled` (pi 0.80.4 on): the agent will not go on by itself.
    Settled { aborted: bool },
}

/// How a collected prompt ended.
pub struct Outcome {
    pub how: super::TurnOutcome,
    pub agent_invoked: bool,
    /// The raw `prompt_result` frame, if that is what completed it.
    pub prompt_result: Option<Vec<u8>>,
}

/// One low-level run the turn saw end: its `agent_end` and the messages streamed in it (to
/// rebuild a compacted `agent_end`). omp may start a run again without ending the first (it holds
/// back a failed run's `agent_end` and sends only the last one, listing only the last run's
/// messages): such a run has no `agent_end`, its messages are the ones it streamed.
pub struct Run {
    pub agent_end: Option<Vec<u8>>,
    pub streamed: Vec<Vec<u8>>,
    /// Its `agent_start` came after the collection began (else it is the tail of a run that was
    /// live already: a prompt queued into it).
    pub started_here: bool,
}

/// The turn's lifecycle in order, for its record (turn::recovery).
pub enum Fact {
    Start,
    /// The end of `runs[i]`.
    End(usize),
    /// A recovery or settling frame, or a failed assistant message's `message_end`.
    Frame(Vec<u8>),
}

/// Events retained for the one active lifecycle operation.
pub struct Collector {
    /// Some: ends when that prompt completes. None: ends at the next terminal `agent_end`.
    pub prompt_id: Option<String>,
    /// The output being built: a prefix (`[` or `{"events":[`), then the events,
    /// comma-separated — so the result needs no second copy of them.
    pub events: Vec<u8>,
    /// (start, end) of each event in `events`.
    pub offsets: Vec<(usize, usize)>,
    /// Raw `message` of each `message_end` since the last `agent_start` (compaction rebuild).
    pub streamed: Vec<Vec<u8>>,
    /// Every run that ended while collecting, oldest first.
    pub runs: Vec<Run>,
    pub facts: Vec<Fact>,
    /// An `agent_start` came since the collection began.
    started: bool,
    /// An `agent_start` came and no `agent_end` since.
    open_run: bool,
    limit: Option<usize>,
    max_bytes: Option<usize>,
    keep: TurnEvents,
    pub outcome: Option<Result<Outcome>>,
}

impl Collector {
    /// Collects after `prefix`, at most `limit` events and `max_bytes` bytes (a run that passes
    /// either fails the collection with LIMIT_EXCEEDED).
    pub fn new(prompt_id: Option<String>, prefix: &[u8], limit: Option<usize>, max_bytes: Option<usize>, keep: TurnEvents) -> Self {
        Collector {
            prompt_id,
            events: prefix.to_vec(),
            offsets: Vec::new(),
            streamed: Vec::new(),
            runs: Vec::new(),
            facts: Vec::new(),
            started: false,
            open_run: false,
            limit,
            max_bytes,
            keep,
            outcome: None,
        }
    }

    /// Ends the collection (the first outcome stands).
    pub fn finish(&mut self, r: Result<Outcome>) {
        if self.outcome.is_none() {
            self.outcome = Some(r);
        }
    }

    /// One event of the session's stream, in arrival order (nothing once it has ended).
    pub fn retain(&mut self, line: &[u8], mark: &Mark) {
        if self.outcome.is_some() {
            return;
        }
        let keep = match self.keep {
            TurnEvents::All => true,
            TurnEvents::NoUpdates => !matches!(mark, Mark::Update),
            TurnEvents::None => false,
        };
        if !keep {
            self.stream(line, mark);
        } else if let Some(l) = self.limit.filter(|l| self.offsets.len() >= *l) {
            self.finish(Err(Error::new(
                Status::LimitExceeded,
                format!(
                    "Event history limit was exceeded: the run produced more than {l} events \
                     (max_event_history={l}). Increase max_event_history, or set it to null for no limit."
                ),
            )));
        } else if let Some(m) = self.max_bytes.filter(|m| self.events.len() + line.len() > *m) {
            self.finish(Err(Error::new(
                Status::LimitExceeded,
                format!(
                    "the run's events passed max_turn_bytes ({m} bytes); raise it, or keep fewer \
                     events with turn_events \"no_updates\""
                ),
            )));
        } else {
            if !self.offsets.is_empty() {
                // One event per line: still one JSON value, and a binding can cut the events
                // apart with a byte search instead of parsing them all.
                self.events.extend_from_slice(b",\n");
            }
            let start = self.events.len();
            self.events.extend_from_slice(line);
            self.offsets.push((start, self.events.len()));
            self.stream(line, mark);
        }
    }

    /// The runs, the messages streamed in each (for rebuilding a compacted `agent_end`) and the
    /// recovery frames, whatever events the turn keeps.
    fn stream(&mut self, line: &[u8], mark: &Mark) {
        match mark {
            Mark::AgentStart => {
                let streamed = std::mem::take(&mut self.streamed);
                if self.open_run {
                    // A run started again without ending (omp): the first keeps what it streamed.
                    self.runs.push(Run { agent_end: None, streamed, started_here: true });
                }
                self.started = true;
                self.open_run = true;
                self.facts.push(Fact::Start);
            }
            Mark::AgentEnd { .. } => {
                let streamed = std::mem::take(&mut self.streamed);
                self.facts.push(Fact::End(self.runs.len()));
                self.runs.push(Run { agent_end: Some(line.to_vec()), streamed, started_here: self.started });
                self.open_run = false;
            }
            Mark::MessageEnd { message, stop } => {
                self.streamed.push(message.to_vec());
                if *stop == Stop::Error {
                    // The record's failed attempt may be announced before the run's end (omp).
                    self.facts.push(Fact::Frame(line.to_vec()));
                }
            }
            Mark::Recovery(_) => self.facts.push(Fact::Frame(line.to_vec())),
            Mark::Update | Mark::Other => {}
        }
    }
}
