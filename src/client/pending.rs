//! Requests waiting for their response: correlation by id, and the command-name heuristic for
//! id-less failures (used only for frames without an id, spec §6.3).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use crate::error::{Error, Result};
use crate::wait::wait_until;
use crate::wait::lock;

/// What a request gets back: the raw `data` JSON (None when the response had none).
pub type Reply = Result<Option<Vec<u8>>>;

/// Where one reply is handed from the reader to the waiting caller. A mutex and condvar, not
/// a channel: the caller parks at once instead of spinning, which matters when the agent,
/// the reader and the caller share one CPU.
#[derive(Default)]
pub struct Slot {
    reply: Mutex<Option<Reply>>,
    ready: Condvar,
}

impl Slot {
    pub fn new() -> Arc<Slot> {
        Arc::new(Slot::default())
    }

    fn put(&self, r: Reply) {
        let mut g = lock(&self.reply);
        if g.is_none() {
            *g = Some(r);
        }
        drop(g);
        self.ready.notify_one();
    }

    /// The reply, waiting until `deadline` (None: forever). None when the deadline passed.
    pub fn wait(&self, deadline: Option<Instant>) -> Option<Reply> {
        let mut g = lock(&self.reply);
        loop {
            if let Some(r) = g.take() {
                return Some(r);
            }
            g = wait_until(&self.ready, g, deadline)?;
        }
    }
}

struct Entry {
    command: String,
    slot: Arc<Slot>,
}

/// Ids whose request ended (answered or timed out) are remembered this long, so a second
/// response for one is told apart from a response for an id we never sent.
const SETTLED_MEMORY: usize = 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settled {
    Answered,
    TimedOut,
}

#[derive(Default)]
pub struct Pending {
    entries: HashMap<String, Entry>,
    by_command: HashMap<String, usize>,
    settled: VecDeque<(String, String, Settled)>,
    closed: Option<Error>,
}

impl Pending {
    /// Registers a request, unless the client is already closed.
    pub fn insert(&mut self, id: String, command: &str, slot: Arc<Slot>) -> Result<()> {
        if let Some(e) = &self.closed {
            return Err(Error::closed_because(e));
        }
        *self.by_command.entry(command.to_string()).or_default() += 1;
        self.entries.insert(id, Entry { command: command.to_string(), slot });
        Ok(())
    }

    fn take(&mut self, id: &str) -> Option<Entry> {
        let e = self.entries.remove(id)?;
        if let Some(n) = self.by_command.get_mut(&e.command) {
            *n -= 1;
            if *n == 0 {
                self.by_command.remove(&e.command);
            }
        }
        Some(e)
    }

    fn remember(&mut self, id: String, command: String, how: Settled) {
        if self.settled.len() >= SETTLED_MEMORY {
            self.settled.pop_front();
        }
        self.settled.push_back((id, command, how));
    }

    /// Delivers a response to the request with this id. Returns the request's command, or
    /// None when no request with that id is waiting.
    pub fn resolve(&mut self, id: &str, reply: Reply) -> Option<String> {
        let e = self.take(id)?;
        e.slot.put(reply);
        self.remember(id.to_string(), e.command.clone(), Settled::Answered);
        Some(e.command)
    }

    /// The id of the request an id-less failure for `command` belongs to: the only pending
    /// request of that command, or for `parse` the only pending request at all.
    pub fn match_idless(&self, command: &str) -> Option<String> {
        if self.by_command.get(command) == Some(&1) {
            return self.entries.iter().find(|(_, e)| e.command == command).map(|(id, _)| id.clone());
        }
        if command == "parse" && self.entries.len() == 1 {
            return self.entries.keys().next().cloned();
        }
        None
    }

    /// A waiter gave up (timeout): forget the request but remember its id.
    pub fn abandon(&mut self, id: &str) {
        if let Some(e) = self.take(id) {
            self.remember(id.to_string(), e.command, Settled::TimedOut);
        }
    }

    /// A write failed before the request reached the agent.
    pub fn remove(&mut self, id: &str) {
        self.take(id);
    }

    /// How an id that is no longer pending ended, and its command.
    pub fn settled(&self, id: &str) -> Option<(&str, Settled)> {
        self.settled.iter().rev().find(|(i, _, _)| i == id).map(|(_, c, s)| (c.as_str(), *s))
    }

    /// Fails every waiting request and refuses new ones.
    pub fn close(&mut self, reason: &Error) {
        if self.closed.is_none() {
            self.closed = Some(reason.clone());
        }
        for (_, e) in self.entries.drain() {
            e.slot.put(Err(reason.clone()));
        }
        self.by_command.clear();
    }

    /// How many requests wait for their answer.
    pub fn count(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Status;

    #[test]
    fn idless_heuristic_needs_exactly_one_candidate() {
        let mut p = Pending::default();
        let tx = Slot::new();
        p.insert("req_1".into(), "get_state", tx.clone()).unwrap();
        assert_eq!(p.match_idless("get_state").as_deref(), Some("req_1"));
        assert_eq!(p.match_idless("parse").as_deref(), Some("req_1"));
        assert_eq!(p.match_idless("bash"), None);
        p.insert("req_2".into(), "get_state", tx.clone()).unwrap();
        assert_eq!(p.match_idless("get_state"), None);
        assert_eq!(p.match_idless("parse"), None);
        assert_eq!(p.resolve("req_1", Ok(None)).as_deref(), Some("get_state"));
        assert_eq!(p.match_idless("get_state").as_deref(), Some("req_2"));
        assert_eq!(p.settled("req_1"), Some(("get_state", Settled::Answered)));
        p.abandon("req_2");
        assert_eq!(p.settled("req_2"), Some(("get_state", Settled::TimedOut)));
        assert_eq!(p.count(), 0);
    }

    #[test]
    fn close_fails_waiters_and_refuses_new_requests() {
        let mut p = Pending::default();
        let tx = Slot::new();
        p.insert("req_1".into(), "x", tx.clone()).unwrap();
        p.close(&Error::new(Status::Closed, "gone"));
        assert_eq!(tx.wait(None).unwrap().unwrap_err().status, Status::Closed);
        assert!(tx.wait(Some(Instant::now())).is_none(), "a slot is taken once");
        assert_eq!(p.insert("req_2".into(), "x", tx).unwrap_err().status, Status::Closed);
    }
}
