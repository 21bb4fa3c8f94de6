//! The polled event queue: bounded, oldest dropped on overflow with a synthetic
//! `event_overflow` event in their place, an eventfd that is readable while events are queued
//! (or the client is closed), and drain-then-CLOSED after close. The library's own
//! `prompt_complete` events outlive an overflow: a turn's waiter (a binding's stream, a
//! promptAndWait on the event fd) needs its turn's end, or it would wait forever.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex};
use std::time::Instant;

use crate::error::{Error, Result, Status};
use crate::transport::bytes::FrameBytes;
use crate::transport::process::Signal;
use crate::wait::wait_until;
use crate::wait::lock;

/// One event: the frame's JSON bytes, a range of the read that carried it or bytes of its own
/// (transport::bytes).
pub type EventBytes = FrameBytes;

/// How the library's `prompt_complete` events begin (lifecycle::Completion::event writes them).
pub const COMPLETION_PREFIX: &[u8] = br#"{"type":"prompt_complete","omprpc":true,"#;

/// At most this many `prompt_complete` events at the front of the queue are kept through an
/// overflow: they are the library's, one per prompt, but an agent could send lookalikes, which
/// must not be able to grow the queue past its bounds.
const KEPT_COMPLETIONS: usize = 64;

/// The queue's ring is shrunk back to this many slots whenever it has been emptied.
const IDLE_CAPACITY: usize = 64;

pub fn event_bytes(json: &[u8]) -> EventBytes {
    FrameBytes::copied(json)
}

struct Inner {
    items: VecDeque<EventBytes>,
    /// Bytes held by `items`.
    bytes: usize,
    dropped: u64,
    closed: Option<Error>,
    /// Totals for the counters (kept under the lock the queue takes anyway).
    queued: u64,
    delivered: u64,
    dropped_total: u64,
    first_push: Option<Instant>,
}

/// The queue's figures for `omprpc_client_counters`.
pub struct QueueStats {
    pub queued: u64,
    pub delivered: u64,
    pub dropped: u64,
    pub held: usize,
    pub held_bytes: usize,
    pub first_push: Option<Instant>,
}

pub struct EventQueue {
    inner: Mutex<Inner>,
    cond: Condvar,
    signal: Signal,
    capacity: usize,
    max_bytes: usize,
}

impl EventQueue {
    /// At most `capacity` events and `max_bytes` bytes are held (the newest event always is).
    pub fn new(capacity: usize, max_bytes: usize) -> std::io::Result<Self> {
        Ok(EventQueue {
            inner: Mutex::new(Inner {
                items: VecDeque::new(),
                bytes: 0,
                dropped: 0,
                closed: None,
                queued: 0,
                delivered: 0,
                dropped_total: 0,
                first_push: None,
            }),
            cond: Condvar::new(),
            signal: Signal::new()?,
            capacity: capacity.max(1),
            max_bytes,
        })
    }

    /// Readable while events are queued or the queue is closed.
    #[cfg(unix)]
    pub fn fd(&self) -> i32 {
        self.signal.raw()
    }

    /// Set while events are queued or the queue is closed (a manual-reset event).
    #[cfg(windows)]
    pub fn handle(&self) -> std::os::windows::io::RawHandle {
        self.signal.raw()
    }

    pub fn push(&self, ev: EventBytes) -> bool {
        self.push_all(std::iter::once(ev))
    }

    pub fn stats(&self) -> QueueStats {
        let g = lock(&self.inner);
        QueueStats {
            queued: g.queued,
            delivered: g.delivered,
            dropped: g.dropped_total,
            held: g.items.len(),
            held_bytes: g.bytes,
            first_push: g.first_push,
        }
    }

    /// Queues several events under one lock with at most one wakeup: the reader hands over
    /// everything one read of stdout produced, so a fast poller is not woken per event.
    /// Returns true when this call began an overflow (the first drop since the host last
    /// polled), so the caller can log it once rather than per dropped event.
    pub fn push_all(&self, evs: impl IntoIterator<Item = EventBytes>) -> bool {
        let mut g = lock(&self.inner);
        let was_empty = g.items.is_empty() && g.dropped == 0;
        let was_dropping = g.dropped > 0;
        if g.first_push.is_none() {
            g.first_push = Some(Instant::now());
        }
        for ev in evs {
            g.queued += 1;
            g.bytes += ev.len();
            g.items.push_back(ev);
            while g.items.len() > self.capacity || (g.bytes > self.max_bytes && g.items.len() > 1) {
                // The oldest event that is not one of the kept completions at the front; the
                // newest event always stays.
                let kept = g.items.iter().take(KEPT_COMPLETIONS).take_while(|e| e.starts_with(COMPLETION_PREFIX)).count();
                let at = if kept < g.items.len() - 1 { kept } else { 0 };
                let old = g.items.remove(at).expect("the queue is not empty");
                g.bytes -= old.len();
                g.dropped += 1;
                g.dropped_total += 1;
            }
        }
        let now_empty = g.items.is_empty() && g.dropped == 0;
        let began_dropping = !was_dropping && g.dropped > 0;
        drop(g);
        if was_empty && !now_empty {
            self.signal.set();
            self.cond.notify_all();
        }
        began_dropping
    }

    /// After this, pollers get what is queued, then `CLOSED` with `reason`.
    pub fn close(&self, reason: Error) {
        let mut g = lock(&self.inner);
        if g.closed.is_none() {
            g.closed = Some(reason);
        }
        drop(g);
        self.signal.set();
        self.cond.notify_all();
    }

    /// Takes up to `max` events, waiting until `deadline` (None: forever) for the first.
    pub fn pop(&self, max: usize, deadline: Option<Instant>) -> Result<Vec<EventBytes>> {
        let mut g = lock(&self.inner);
        loop {
            if g.dropped > 0 || !g.items.is_empty() {
                let mut out = Vec::with_capacity(max.min(g.items.len() + 1));
                let marker = usize::from(g.dropped > 0);
                if g.dropped > 0 {
                    out.push(event_bytes(
                        format!(r#"{{"type":"event_overflow","omprpc":true,"dropped":{}}}"#, g.dropped).as_bytes(),
                    ));
                    g.dropped = 0;
                }
                while out.len() < max {
                    match g.items.pop_front() {
                        Some(e) => {
                            g.bytes -= e.len();
                            out.push(e)
                        }
                        None => break,
                    }
                }
                g.delivered += (out.len() - marker) as u64;
                if g.items.is_empty() {
                    if g.items.capacity() > IDLE_CAPACITY {
                        // A burst grew the ring; an idle client keeps a small one (issue 24:
                        // what a client holds once its events are read).
                        g.items.shrink_to(IDLE_CAPACITY);
                    }
                    if g.closed.is_none() {
                        self.signal.clear();
                    }
                }
                return Ok(out);
            }
            if let Some(reason) = &g.closed {
                return Err(Error::new(Status::Closed, reason.message.clone()));
            }
            g = wait_until(&self.cond, g, deadline).ok_or_else(|| Error::new(Status::Timeout, "no event arrived before the timeout"))?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn text(v: &[EventBytes]) -> Vec<String> {
        v.iter().map(|e| String::from_utf8(e.to_vec()).unwrap()).collect()
    }

    #[test]
    fn overflow_is_reported_in_place_of_the_dropped() {
        let q = EventQueue::new(2, usize::MAX).unwrap();
        for i in 0..5 {
            q.push(event_bytes(format!("{{\"n\":{i}}}").as_bytes()));
        }
        let got = text(&q.pop(10, Some(Instant::now())).unwrap());
        assert_eq!(got, [r#"{"type":"event_overflow","omprpc":true,"dropped":3}"#, r#"{"n":3}"#, r#"{"n":4}"#]);
    }

    #[test]
    fn a_prompt_complete_outlives_an_overflow() {
        let q = EventQueue::new(3, usize::MAX).unwrap();
        let done = br#"{"type":"prompt_complete","omprpc":true,"requestId":"1","outcome":"agent_end","agentInvoked":true}"#;
        q.push(event_bytes(br#"{"n":0}"#));
        q.push(event_bytes(done));
        for i in 1..6 {
            q.push(event_bytes(format!("{{\"n\":{i}}}").as_bytes()));
        }
        let got = text(&q.pop(10, Some(Instant::now())).unwrap());
        let done = String::from_utf8(done.to_vec()).unwrap();
        assert_eq!(got, [r#"{"type":"event_overflow","omprpc":true,"dropped":4}"#, &done, r#"{"n":4}"#, r#"{"n":5}"#]);
    }

    #[test]
    fn an_emptied_queue_gives_back_what_a_burst_grew() {
        let q = EventQueue::new(100_000, usize::MAX).unwrap();
        for i in 0..10_000 {
            q.push(event_bytes(format!("{{\"n\":{i}}}").as_bytes()));
        }
        assert!(lock(&q.inner).items.capacity() >= 10_000);
        let mut taken = 0;
        while taken < 10_000 {
            let got = q.pop(4096, Some(Instant::now())).unwrap();
            assert_eq!(String::from_utf8(got[0].to_vec()).unwrap(), format!("{{\"n\":{taken}}}"));
            taken += got.len();
        }
        assert_eq!(taken, 10_000);
        assert!(lock(&q.inner).items.capacity() <= IDLE_CAPACITY);
        q.push(event_bytes(b"{}"));
        assert_eq!(q.pop(10, Some(Instant::now())).unwrap().len(), 1);
    }

    #[test]
    fn lookalike_completions_cannot_grow_the_queue() {
        let q = EventQueue::new(4, usize::MAX).unwrap();
        for _ in 0..KEPT_COMPLETIONS + 10 {
            q.push(event_bytes(br#"{"type":"prompt_complete","omprpc":true,"requestId":"x"}"#));
        }
        assert_eq!(q.stats().held, 4);
    }

    #[test]
    fn the_byte_bound_drops_oldest_but_keeps_the_newest() {
        let q = EventQueue::new(100, 10).unwrap();
        q.push(event_bytes(b"12345678"));
        q.push(event_bytes(b"abcdef"));
        q.push(event_bytes(&[b'x'; 50]));
        let got = text(&q.pop(10, Some(Instant::now())).unwrap());
        assert_eq!(got[0], r#"{"type":"event_overflow","omprpc":true,"dropped":2}"#);
        assert_eq!(got[1].len(), 50);
    }

    #[test]
    fn fd_follows_the_queue_and_close_drains_first() {
        let q = EventQueue::new(10, usize::MAX).unwrap();
        #[cfg(unix)]
        let readable = |q: &EventQueue| crate::transport::process::poll_readable(q.fd(), Some(Duration::ZERO));
        #[cfg(windows)]
        let readable = |q: &EventQueue| crate::transport::process::win32::wait_one(q.handle(), Some(Duration::ZERO));
        assert!(!readable(&q));
        q.push(event_bytes(b"{}"));
        assert!(readable(&q));
        q.pop(1, None).unwrap();
        assert!(!readable(&q));
        assert_eq!(q.pop(1, Some(Instant::now())).unwrap_err().status, Status::Timeout);
        q.push(event_bytes(b"{\"a\":1}"));
        q.close(Error::new(Status::Closed, "bye"));
        assert!(readable(&q));
        assert_eq!(q.pop(5, None).unwrap().len(), 1);
        assert_eq!(q.pop(5, None).unwrap_err().status, Status::Closed);
        assert!(readable(&q));
    }

    #[test]
    fn close_wakes_a_blocked_poller() {
        let q = std::sync::Arc::new(EventQueue::new(10, usize::MAX).unwrap());
        let q2 = q.clone();
        let t = std::thread::spawn(move || q2.pop(1, None));
        std::thread::sleep(Duration::from_millis(50));
        let t0 = Instant::now();
        q.close(Error::new(Status::Closed, "bye"));
        assert_eq!(t.join().unwrap().unwrap_err().status, Status::Closed);
        // Without the wake the poller would wait forever; the bound leaves a loaded machine room.
        assert!(t0.elapsed() < Duration::from_millis(1000), "woken after {:?}", t0.elapsed());
    }
}
