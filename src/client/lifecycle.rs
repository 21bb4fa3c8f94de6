//! Prompt lifecycle: which accepted prompts are still running, and the single active
//! collector (prompt_and_wait, collect_events, wait_for_idle are single-flight).
//!
//! Completion is tracked per prompt id (spec §6.2), never by a global counter:
//! - a `prompt_result` frame or a response with `data.agentInvoked:false` completes that id;
//! - a terminal `agent_end` (`isTerminal` not false) completes every running prompt that was
//!   queued into a live run (`streamingBehavior`), or whose run started (`agent_start`) after it
//!   was sent — so a late `agent_end` of an earlier run cannot end a newer prompt;
//! - a late failure (a second, failing response for the prompt's id) fails that id.

use crate::client::options::TurnEvents;
use crate::error::{Error, Result, Status};

struct Prompt {
    id: String,
    streaming: bool,
    /// `agent_start` frames seen before this prompt was sent.
    starts_at_send: u64,
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
    prompt_id: Option<String>,
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
    fn finish(&mut self, r: Result<Outcome>) {
        if self.outcome.is_none() {
            self.outcome = Some(r);
        }
    }
}

/// What the reader tells the lifecycle about one collected frame.
pub enum Mark<'a> {
    AgentStart,
    AgentEnd { terminal: bool },
    MessageEnd { message: &'a [u8] },
    /// `message_update`: retained only when the turn keeps all events.
    Update,
    Other,
}

pub struct Lifecycle {
    /// When the last session event arrived (for the idle timeout).
    pub last_event: std::time::Instant,
    prompts: Vec<Prompt>,
    agent_starts: u64,
    active: Option<&'static str>,
    collector: Option<Collector>,
    /// The first late failure since the last prompt was sent (wait_for_idle raises it).
    sticky: Option<Error>,
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
            active: None,
            collector: None,
            sticky: None,
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
        self.collector = Some(Collector {
            prompt_id,
            events: prefix.to_vec(),
            offsets: Vec::new(),
            streamed: Vec::new(),
            limit: self.max_events,
            max_bytes: self.max_bytes,
            keep: self.keep,
            outcome: None,
        });
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
        self.prompts.push(Prompt { id: id.to_string(), streaming, starts_at_send: self.agent_starts });
    }

    pub fn is_idle(&self) -> bool {
        self.prompts.is_empty()
    }

    pub fn sticky_error(&self) -> Option<&Error> {
        self.sticky.as_ref()
    }

    fn complete(&mut self, id: &str, outcome: impl FnOnce() -> Result<Outcome>) {
        let before = self.prompts.len();
        self.prompts.retain(|p| p.id != id);
        let was_running = self.prompts.len() != before;
        if let Some(c) = &mut self.collector {
            if c.prompt_id.as_deref() == Some(id) && (was_running || c.outcome.is_none()) {
                c.finish(outcome());
            }
        }
    }

    /// The prompt's own response was a failure (or never went out): it will not run.
    pub fn rejected(&mut self, id: &str, err: &Error) {
        self.complete(id, || Err(err.clone()));
    }

    /// `data.agentInvoked:false` on the response, or a `prompt_result` frame.
    pub fn completed_without_run(&mut self, id: &str, prompt_result: Option<&[u8]>, agent_invoked: bool) {
        self.complete(id, || {
            Ok(Outcome { agent_end: None, agent_invoked, prompt_result: prompt_result.map(<[u8]>::to_vec) })
        });
    }

    /// A second, failing response for a prompt id.
    pub fn late_failure(&mut self, id: &str, err: Error) {
        if self.sticky.is_none() {
            self.sticky = Some(err.clone());
        }
        self.complete(id, || Err(err));
    }

    /// One event that belongs to the session's event stream, in arrival order.
    pub fn event(&mut self, line: &[u8], mark: Mark) {
        if let Some(c) = &mut self.collector {
            self.last_event = std::time::Instant::now();
            if c.outcome.is_none() {
                let keep = match c.keep {
                    TurnEvents::All => true,
                    TurnEvents::NoUpdates => !matches!(mark, Mark::Update),
                    TurnEvents::None => false,
                };
                if !keep {
                    match &mark {
                        Mark::AgentStart => c.streamed.clear(),
                        Mark::MessageEnd { message } => c.streamed.push(message.to_vec()),
                        _ => {}
                    }
                } else if c.limit.is_some_and(|l| c.offsets.len() >= l) {
                    let l = c.limit.unwrap_or_default();
                    c.finish(Err(Error::new(
                        Status::LimitExceeded,
                        format!(
                            "Event history limit was exceeded: the run produced more than {l} events \
                             (max_event_history={l}). Increase max_event_history, or set it to null for no limit."
                        ),
                    )));
                } else if c.max_bytes.is_some_and(|m| c.events.len() + line.len() > m) {
                    let m = c.max_bytes.unwrap_or_default();
                    c.finish(Err(Error::new(
                        Status::LimitExceeded,
                        format!(
                            "the run's events passed max_turn_bytes ({m} bytes); raise it, or keep fewer \
                             events with turn_events \"no_updates\""
                        ),
                    )));
                } else {
                    if !c.offsets.is_empty() {
                        // One event per line: still one JSON value, and a binding can cut the
                        // events apart with a byte search instead of parsing them all.
                        c.events.extend_from_slice(b",\n");
                    }
                    let start = c.events.len();
                    c.events.extend_from_slice(line);
                    c.offsets.push((start, c.events.len()));
                    match &mark {
                        Mark::AgentStart => c.streamed.clear(),
                        Mark::MessageEnd { message } => c.streamed.push(message.to_vec()),
                        _ => {}
                    }
                }
            }
        }
        match mark {
            Mark::AgentStart => self.agent_starts += 1,
            Mark::AgentEnd { terminal: true } => self.terminal_agent_end(line),
            _ => {}
        }
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
        l.track("req_1", true);
        end(&mut l);
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
