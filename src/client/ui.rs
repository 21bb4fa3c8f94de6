//! Extension UI requests: the queue behind `next_ui_request`, and the headless policy that
//! answers inside the library without a round trip through the host.

use std::collections::{HashSet, VecDeque};
use std::sync::{Condvar, Mutex};
use std::time::Instant;

use serde_json::{json, Value};

use crate::client::options::UiPolicy;
use crate::error::{Error, Result, Status};
use crate::wait::wait_until;
use crate::wait::lock;

/// Requests waiting for an answer beyond this are cancelled, oldest first (and reported), so
/// a host that never reads them cannot grow memory without bound.
pub(crate) const UI_QUEUE_MAX: usize = 1024;

const PASSIVE: [&str; 6] = ["notify", "setStatus", "setWidget", "setTitle", "set_editor_text", "open_url"];

/// The `extension_ui_response` frames, one per answer form (spec §2.1).
pub fn value_frame(id: &str, value: &str) -> Vec<u8> {
    json!({"type": "extension_ui_response", "id": id, "value": value}).to_string().into_bytes()
}

pub fn confirm_frame(id: &str, confirmed: bool) -> Vec<u8> {
    json!({"type": "extension_ui_response", "id": id, "confirmed": confirmed}).to_string().into_bytes()
}

pub fn cancel_frame(id: &str, timed_out: bool) -> Vec<u8> {
    let mut v = json!({"type": "extension_ui_response", "id": id, "cancelled": true});
    if timed_out {
        v["timedOut"] = Value::Bool(true);
    }
    v.to_string().into_bytes()
}

fn headless_answer(policy: &UiPolicy, id: &str, method: &str) -> Vec<u8> {
    let value = match method {
        "confirm" => return policy.confirm.map(|c| confirm_frame(id, c)).unwrap_or_else(|| cancel_frame(id, false)),
        "select" => &policy.select,
        "input" => &policy.input,
        "editor" => &policy.editor,
        // Unknown methods that are not passive may be waiting for an answer: cancel them,
        // never leave them hanging (spec §6.11).
        _ => &None,
    };
    match value {
        Some(v) => value_frame(id, v),
        None => cancel_frame(id, false),
    }
}

struct Inner {
    /// Requests not yet taken by `next`.
    items: VecDeque<(String, Vec<u8>)>,
    /// Requests that still wait for an answer (queued or taken), so an answer to anything
    /// else — unknown, answered already, dismissed by the agent — is refused.
    open: HashSet<String>,
    policy: Option<UiPolicy>,
    closed: Option<Error>,
}

pub struct UiQueue {
    inner: Mutex<Inner>,
    cond: Condvar,
}

/// What to do with a UI request after it was queued or answered.
pub struct Handled {
    /// Frames the library sends by itself (headless answers, cancels of evicted requests).
    pub replies: Vec<Vec<u8>>,
    /// A request that was evicted from a full queue, for the protocol-error record.
    pub evicted: Option<String>,
}

impl UiQueue {
    pub fn new(policy: Option<UiPolicy>) -> Self {
        UiQueue { inner: Mutex::new(Inner { items: VecDeque::new(), open: HashSet::new(), policy, closed: None }), cond: Condvar::new() }
    }

    pub fn set_policy(&self, policy: Option<UiPolicy>) -> Vec<Vec<u8>> {
        let mut g = lock(&self.inner);
        g.policy = policy;
        // Requests already waiting are answered by the new policy too.
        let mut replies = Vec::new();
        if let Some(p) = g.policy.clone() {
            let waiting: Vec<_> = g.items.drain(..).collect();
            for (id, raw) in waiting {
                g.open.remove(&id);
                replies.push(headless_answer(&p, &id, &method_of(&raw)));
            }
        }
        replies
    }

    /// A UI request arrived (`raw` is the whole frame).
    pub fn on_request(&self, id: &str, method: &str, raw: &[u8], target: Option<&str>) -> Handled {
        let mut out = Handled { replies: Vec::new(), evicted: None };
        if PASSIVE.contains(&method) {
            return out;
        }
        let mut g = lock(&self.inner);
        if method == "cancel" {
            // The agent dismissed a dialog: nobody should answer it any more.
            if let Some(t) = target {
                g.items.retain(|(i, _)| i != t);
                g.open.remove(t);
            }
            return out;
        }
        if let Some(p) = &g.policy {
            out.replies.push(headless_answer(p, id, method));
            return out;
        }
        if g.closed.is_some() {
            return out;
        }
        if g.items.len() >= UI_QUEUE_MAX {
            if let Some((old, _)) = g.items.pop_front() {
                g.open.remove(&old);
                out.replies.push(cancel_frame(&old, false));
                out.evicted = Some(old);
            }
        }
        if g.open.len() >= UI_QUEUE_MAX * 4 {
            // Taken but never answered: forget the oldest half rather than grow forever.
            let keep: HashSet<String> = g.items.iter().map(|(i, _)| i.clone()).collect();
            g.open.retain(|i| keep.contains(i));
        }
        g.open.insert(id.to_string());
        g.items.push_back((id.to_string(), raw.to_vec()));
        drop(g);
        self.cond.notify_all();
        out
    }

    /// The host answers `id`: it must be waiting for an answer; it no longer waits after.
    /// UI requests the agent waits on the host to answer.
    pub fn open_requests(&self) -> usize {
        lock(&self.inner).open.len()
    }

    pub fn answer(&self, id: &str) -> Result<()> {
        let mut g = lock(&self.inner);
        if !g.open.remove(id) {
            return Err(Error::new(
                Status::NotFound,
                format!("no open UI request with id {id:?} (unknown, answered already, or dismissed by the agent)"),
            ));
        }
        g.items.retain(|(i, _)| i != id);
        Ok(())
    }

    pub fn next(&self, deadline: Option<Instant>) -> Result<Vec<u8>> {
        let mut g = lock(&self.inner);
        loop {
            if let Some((_, raw)) = g.items.pop_front() {
                return Ok(raw);
            }
            if let Some(e) = &g.closed {
                return Err(e.clone());
            }
            g = wait_until(&self.cond, g, deadline)
                .ok_or_else(|| Error::new(Status::Timeout, "Timed out waiting for an extension UI request"))?;
        }
    }

    pub fn close(&self, reason: &Error) {
        let mut g = lock(&self.inner);
        if g.closed.is_none() {
            g.closed = Some(Error::closed_because(reason));
        }
        g.items.clear();
        g.open.clear();
        drop(g);
        self.cond.notify_all();
    }
}

fn method_of(raw: &[u8]) -> String {
    serde_json::from_slice::<Value>(raw)
        .ok()
        .and_then(|v| v.get("method").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(v: &[u8]) -> Value {
        serde_json::from_slice(v).unwrap()
    }

    #[test]
    fn headless_answers_by_method() {
        let q = UiQueue::new(Some(UiPolicy { confirm: Some(true), select: Some("b".into()), ..Default::default() }));
        let r = |m: &str| text(&q.on_request("u", m, b"{}", None).replies[0]);
        assert_eq!(r("confirm")["confirmed"], true);
        assert_eq!(r("select")["value"], "b");
        assert_eq!(r("input")["cancelled"], true);
        assert_eq!(r("ask")["cancelled"], true);
        assert!(q.on_request("u", "notify", b"{}", None).replies.is_empty());
        assert!(q.on_request("u", "cancel", b"{}", Some("x")).replies.is_empty());
    }

    #[test]
    fn queue_waits_and_dismisses() {
        let q = UiQueue::new(None);
        q.on_request("a", "input", br#"{"id":"a","method":"input"}"#, None);
        q.on_request("b", "select", br#"{"id":"b","method":"select"}"#, None);
        q.on_request("n", "notify", b"{}", None);
        q.on_request("c", "cancel", b"{}", Some("a"));
        assert_eq!(text(&q.next(None).unwrap())["id"], "b");
        assert_eq!(q.answer("a").unwrap_err().status, Status::NotFound, "dismissed by the agent");
        q.answer("b").unwrap();
        assert_eq!(q.answer("b").unwrap_err().status, Status::NotFound, "answered twice");
        assert_eq!(q.answer("n").unwrap_err().status, Status::NotFound, "passive");
        assert_eq!(q.next(Some(Instant::now())).unwrap_err().status, Status::Timeout);
        q.on_request("d", "editor", br#"{"id":"d","method":"editor"}"#, None);
        let replies = q.set_policy(Some(UiPolicy { editor: Some("text".into()), ..Default::default() }));
        assert_eq!(text(&replies[0])["value"], "text");
        q.close(&Error::new(Status::Closed, "bye"));
        assert_eq!(q.next(None).unwrap_err().status, Status::Closed);
    }

    #[test]
    fn full_queue_cancels_the_oldest() {
        let q = UiQueue::new(None);
        for i in 0..UI_QUEUE_MAX {
            assert!(q.on_request(&i.to_string(), "input", b"{}", None).replies.is_empty());
        }
        let h = q.on_request("last", "input", b"{}", None);
        assert_eq!(h.evicted.as_deref(), Some("0"));
        assert_eq!(text(&h.replies[0])["id"], "0");
    }
}
