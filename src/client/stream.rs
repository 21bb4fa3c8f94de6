//! A streamed turn and the cancellation of turns.
//!
//! [`Client::stream`] claims the client's single lifecycle slot (as `prompt_and_wait` does),
//! sends the prompt, and hands back a [`Stream`]: an iterator that takes the turn's raw events
//! as the reader sees them (the lifecycle's tap: no copy is kept, and the event queue of
//! `next_events` is left alone), feeds them to the turn summarizer and yields its derived items
//! as [`StreamItem`]s, then [`StreamItem::TurnComplete`] where the lifecycle says the prompt is
//! done. Leaving a turn before then — dropping the stream, a timeout, a [`Cancel`] — sends
//! `abort` and waits for the prompt to complete, so the next prompt finds the agent settled.
//!
//! Cancellation reuses the way `close` interrupts waits: a flag under the state lock and a
//! notification of the state condition, which every wait on a turn rechecks.
#![warn(missing_docs)]

use std::collections::VecDeque;
use std::sync::{Arc, Weak};

use serde_json::{Map, Value};

use crate::error::{Error, Result, Status};
use crate::turn::summary::Summarizer;
use crate::turn::Collector;

use super::items::{StreamItem, TurnComplete};
use super::{deadline_after, request_line, Client, Deadline, Shared};

/// The lifecycle operation of a streamed turn (what a second collector is told is running).
const STREAM: &str = "stream";

/// The error a cancelled turn returns.
pub(super) fn cancelled() -> Error {
    Error::new(Status::Cancelled, "the turn was cancelled (Cancel::cancel): abort was sent to the agent")
}

/// A turn in progress, as an iterator of [`StreamItem`]s (from [`Client::stream`]).
///
/// Each `next()` blocks until the agent produces the next item. The last item is
/// [`StreamItem::TurnComplete`]; after it, or after an error, `next()` returns `None`. An error
/// ends the turn: the prompt failed (`COMMAND_FAILED`), the agent exited (`PROCESS_EXITED`),
/// the client was closed (`CLOSED`), the turn was cancelled (`CANCELLED`, see [`Cancel`]), or
/// the client's `turn_timeout_ms` / `turn_idle_timeout_ms` passed (`TIMEOUT`).
///
/// Dropping the stream before its `TurnComplete` aborts the turn: it sends `abort` and waits
/// (at most the client's request timeout) until the agent ended the prompt, so the client
/// accepts the next prompt as soon as the drop returns.
///
/// One turn at a time per client: while a stream is open, another `stream`, `prompt_and_wait`,
/// `collect_events` or `wait_for_idle` fails with `CONCURRENCY`.
pub struct Stream<'a> {
    client: &'a Client,
    request_id: String,
    /// The lifecycle operation this turn holds (what its [`Cancel`] handle names).
    seq: u64,
    summarizer: Summarizer,
    ready: VecDeque<Result<StreamItem>>,
    deadline: Deadline,
    /// It holds the client's lifecycle slot: the turn has not ended for it.
    open: bool,
}

/// A handle that cancels a turn from any thread (`Clone + Send + Sync`): from
/// [`Client::cancel_handle`] (whatever turn is in progress when `cancel` is called) or
/// [`Stream::cancel_handle`] (that stream's turn only).
///
/// [`cancel`](Cancel::cancel) makes the turn's waiter — a blocked or later [`Stream`] `next()`,
/// or a blocked `prompt_and_wait` — send `abort`, wait until the agent ended the prompt (at
/// most the client's request timeout), and return an error with [`Status::Cancelled`]. The
/// client then accepts the next prompt. It does not keep the client alive.
#[derive(Clone)]
pub struct Cancel {
    shared: Weak<Shared>,
    /// Only this lifecycle operation (a stream's), else whichever turn is running.
    seq: Option<u64>,
}

impl std::fmt::Debug for Cancel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cancel").field("turn", &self.seq).finish_non_exhaustive()
    }
}

impl Cancel {
    /// Asks the turn's waiter to abort it (see [`Cancel`]); returns at once. `true` when a turn
    /// was asked to; `false` when there was none to cancel: no `stream` or `prompt_and_wait` in
    /// progress, this handle's stream already ended, or the client is gone.
    pub fn cancel(&self) -> bool {
        let Some(shared) = self.shared.upgrade() else { return false };
        let asked = shared.state().life.cancel(self.seq);
        if asked {
            shared.cond.notify_all();
        }
        asked
    }
}

impl Client {
    /// Prompts, and returns the turn as a [`Stream`] of [`StreamItem`]s once the agent
    /// acknowledged the prompt (within the client's request timeout). The turn itself has the
    /// client's `turn_timeout_ms` (none by default). Fails with the prompt's error (e.g.
    /// `COMMAND_FAILED`), or `CONCURRENCY` while another turn or wait runs on this client.
    pub fn stream(&self, message: &str) -> Result<Stream<'_>> {
        self.stream_with(message, None)
    }

    /// [`Client::stream`] with prompt options (docs/c-api.md, `omprpc_client_prompt`):
    /// `images`, `content` blocks, … as a JSON object.
    pub fn stream_with(&self, message: &str, options: Option<Map<String, Value>>) -> Result<Stream<'_>> {
        let s = &self.shared;
        let (params, queued) = Self::prompt_params(message, options)?;
        let id = s.next_request_id();
        let line = request_line(&id, "prompt", Some(&params))?;
        let seq = {
            let mut st = s.state();
            st.life.acquire(STREAM)?;
            // Before the prompt is written: no event of its turn can be missed.
            st.life.collect_streaming(id.clone());
            st.life.operation_seq()
        };
        let mut stream = Stream {
            client: self,
            request_id: id.clone(),
            seq,
            summarizer: Summarizer::new(s.opts.model.clone()),
            ready: VecDeque::new(),
            deadline: self.default_turn_deadline(),
            open: true,
        };
        if let Err(e) = s.call(&id, "prompt", &line, self.default_request_deadline(), Some(queued)) {
            // Refused or never acknowledged: nothing to abort.
            stream.release();
            return Err(e);
        }
        Ok(stream)
    }

    /// A handle that cancels the turn in progress on this client when its `cancel` is called
    /// (a [`Stream`] or a `prompt_and_wait`), from any thread. See [`Cancel`].
    pub fn cancel_handle(&self) -> Cancel {
        Cancel { shared: Arc::downgrade(&self.shared), seq: None }
    }

    /// Ends the turn the lifecycle slot's holder is leaving early: sends `abort` unless the
    /// prompt already completed, then waits (at most the request timeout, or until the client
    /// closes) for the prompt's completion. Failures are not reported: the caller has its own
    /// error, and a turn that would not end surfaces at the next prompt.
    pub(super) fn abort_turn(&self) {
        let s = &self.shared;
        if s.state().life.collector_done() {
            return;
        }
        let _ = s.request("abort", None, self.default_request_deadline());
        let settle = deadline_after(Some(s.probe_patience()));
        let _ = s.wait_state_since(settle, "Timed out waiting for the aborted turn to end", s.turn_wait(), &mut |st| {
            st.life.collector_done().then_some(())
        });
        s.completions_announced();
    }
}

/// What a wait on a streamed turn found.
struct Woke {
    events: Vec<Vec<u8>>,
    done: Option<Collector>,
    cancelled: bool,
}

impl Stream<'_> {
    /// The prompt's request id (as in its `prompt_complete` event and [`TurnComplete`]).
    pub fn request_id(&self) -> &str {
        &self.request_id
    }

    /// A handle that cancels this stream's turn, and no later one. See [`Cancel`].
    pub fn cancel_handle(&self) -> Cancel {
        Cancel { shared: Arc::downgrade(&self.client.shared), seq: Some(self.seq) }
    }

    /// Consumes the rest of the turn and returns its [`TurnComplete`] (the items before it are
    /// dropped), or the error that ended the turn.
    pub fn finish(mut self) -> Result<TurnComplete> {
        for item in self.by_ref() {
            if let StreamItem::TurnComplete(done) = item? {
                return Ok(done);
            }
        }
        // A stream that was already over (its TurnComplete or its error taken).
        Err(Error::invalid("the stream has ended: its TurnComplete was already taken"))
    }

    /// Releases the lifecycle slot (once).
    fn release(&mut self) {
        if std::mem::take(&mut self.open) {
            self.client.shared.state().life.release(STREAM);
        }
    }

    /// Aborts the turn if it has not ended, then releases the slot.
    fn abandon(&mut self) {
        if self.open {
            self.client.abort_turn();
            self.release();
        }
    }

    fn feed(&mut self, event: &[u8]) {
        // The reader passed only validated JSON frames.
        let Ok(event) = serde_json::from_slice::<Value>(event) else { return };
        let items = self.summarizer.feed(&event);
        self.ready.extend(items.iter().filter_map(StreamItem::from_derived).map(Ok));
    }

    /// Waits for the turn's next events (or its end, or a cancel) and turns them into items.
    fn pull(&mut self) {
        let s = &self.client.shared;
        let woke = s.wait_state_since(self.deadline, "Timed out waiting for the agent to finish", s.turn_wait(), &mut |st| {
            let events = st.life.take_tapped();
            let done = if st.life.collector_done() { st.life.take_collector() } else { None };
            let cancelled = done.is_none() && st.life.cancel_requested();
            (!events.is_empty() || done.is_some() || cancelled).then_some(Woke { events, done, cancelled })
        });
        let woke = match woke {
            Ok(w) => w,
            Err(e) => {
                // A timeout: the agent may still be at work.
                self.abandon();
                self.ready.push_back(Err(e));
                return;
            }
        };
        for event in &woke.events {
            self.feed(event);
        }
        if let Some(collector) = woke.done {
            s.completions_announced();
            self.release();
            let outcome = collector.outcome.expect("a completed collector has its outcome");
            self.ready.push_back(outcome.map(|o| {
                let summary = self.summarizer.finish();
                StreamItem::TurnComplete(TurnComplete::new(self.request_id.clone(), o.how, o.agent_invoked, summary))
            }));
        } else if woke.cancelled {
            self.cancel_now();
        }
    }

    /// The turn was cancelled: what was not taken yet is dropped, the turn aborted.
    fn cancel_now(&mut self) {
        self.ready.clear();
        self.abandon();
        self.ready.push_back(Err(cancelled()));
    }
}

impl Iterator for Stream<'_> {
    type Item = Result<StreamItem>;

    fn next(&mut self) -> Option<Result<StreamItem>> {
        loop {
            if self.open && !self.ready.is_empty() && self.client.shared.state().life.cancel_requested() {
                // Cancelled while items waited: the cancel comes first.
                self.cancel_now();
            }
            if let Some(item) = self.ready.pop_front() {
                return Some(item);
            }
            if !self.open {
                return None;
            }
            self.pull();
        }
    }
}

impl Drop for Stream<'_> {
    fn drop(&mut self) {
        self.abandon();
    }
}

impl std::fmt::Debug for Stream<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream").field("request_id", &self.request_id).field("open", &self.open).finish_non_exhaustive()
    }
}
