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
    AgentEnd { terminal: bool },
    MessageEnd { message: &'a [u8] },
    /// `message_update`: retained only when the turn keeps all events.
    Update,
    Other,
}

/// How a collected run ended.
pub struct Outcome {
    /// The raw terminal `agent_end` frame, if the run had one.
    pub agent_end: Option<Vec<u8>>,
    pub agent_invoked: bool,
    /// The raw `prompt_result` frame, if that is what completed it.
    pub prompt_result: Option<Vec<u8>>,
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
    limit: Option<usize>,
    max_bytes: Option<usize>,
    keep: TurnEvents,
    pub outcome: Option<Result<Outcome>>,
}

impl Collector {
    /// Collects after `prefix`, at most `limit` events and `max_bytes` bytes (a run that passes
    /// either fails the collection with LIMIT_EXCEEDED).
    pub fn new(prompt_id: Option<String>, prefix: &[u8], limit: Option<usize>, max_bytes: Option<usize>, keep: TurnEvents) -> Self {
        Collector { prompt_id, events: prefix.to_vec(), offsets: Vec::new(), streamed: Vec::new(), limit, max_bytes, keep, outcome: None }
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
            self.stream(mark);
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
            self.stream(mark);
        }
    }

    /// The messages streamed since the run started, for rebuilding a compacted `agent_end`.
    fn stream(&mut self, mark: &Mark) {
        match mark {
            Mark::AgentStart => self.streamed.clear(),
            Mark::MessageEnd { message } => self.streamed.push(message.to_vec()),
            _ => {}
        }
    }
}
