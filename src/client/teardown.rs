//! Ending a client: `shut` marks it closed and wakes every waiter at once (any thread may, the
//! reader included, when the agent goes away); `close` then stops the agent and the client's
//! threads; dropping a `Client` closes it.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use serde_json::{json, Value};

use crate::bridge::Conn;
use crate::error::{Error, Result, Status};
use crate::observe::Level;
use crate::transport::record::Recorder;
use crate::wait::lock;

use super::host::Outgoing;
use super::{Client, Shared};

impl Shared {
    /// Marks the client closed (the first reason wins) and wakes every waiter at once.
    pub(super) fn shut(&self, reason: Error) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        self.log.log(Level::Info, "lifecycle", "the client is closing", json!({"status": reason.status.name(), "reason": reason.message}));
        let (policy_questions, bridge_replies, blocked_notes) = {
            let mut st = self.state();
            st.close_reason = Some(reason.clone());
            // The reason, the request table and the turn close together, under the state lock
            // (state → pending): a caller woken by any of them finds the reason in `info`, and a
            // call it makes next finds the table closed (CLOSED, naming the reason) — it cannot
            // slip in before the table closes and get the reason itself.
            lock(&self.pending).close(&reason);
            st.life.close(&reason);
            let questions: Vec<(String, Arc<Conn>)> = st.policy.drain().map(|(id, (conn, _, _))| (id, conn)).collect();
            (questions, st.host.close(), st.blocked.drain())
        };
        // Written after the state lock is released (no I/O under it): every open policy
        // question and every bridged call still open gets its one reply, an error saying why.
        for (id, conn) in policy_questions {
            let _ = conn.send(json!({"id": conn.ext_id(&id), "error": "the host closed the session"}).to_string().as_bytes());
        }
        for r in bridge_replies {
            if let Outgoing::Bridge(conn, frame) = r {
                let _ = conn.send(&frame);
            }
        }
        // Blocks whose tool_execution_end never came: delivered before the queue closes.
        for note in blocked_notes {
            self.events.push(super::events::event_bytes(&note));
        }
        self.cond.notify_all();
        self.ui.close(&reason);
        self.events.close(reason);
        self.closing.set();
    }
}

impl Client {
    /// Idempotent; wakes every blocked call at once, then stops the agent (stdin EOF → grace
    /// → SIGTERM → SIGKILL to its process group) and returns when it is gone.
    pub fn close(&self) -> Result<()> {
        let mut teardown = lock(&self.teardown);
        let s = &self.shared;
        // The words every binding uses for a call after close (Go ErrClosed, Node ClosedError), and
        // why: omp_rpc users match "stopped" (its RpcProcessExitError said "RPC process stopped").
        s.shut(Error::new(Status::Closed, "the client is closed: close() stopped the agent"));
        if teardown.is_some() {
            return Ok(());
        }
        // EOF on stdin starts the agent's own graceful shutdown (drain, dispose, exit).
        let began = Instant::now();
        lock(&s.stdin).take();
        let _ = s.internal.send(Vec::new());
        s.log.log(Level::Debug, "teardown", "stdin closed; waiting for the agent to exit", json!({"stop_grace_ms": s.opts.stop_grace.as_millis() as u64}));
        let exit = s.process.terminate(s.opts.stop_grace, s.opts.kill_grace);
        s.log.log(Level::Info, "teardown", "agent stopped", json!({"pid": s.process.pid(), "exit": exit.to_string(), "ms": began.elapsed().as_secs_f64() * 1000.0}));
        s.reader_stop.set();
        if let Some(b) = lock(&s.bridge).take() {
            b.shutdown();
            s.log.log(Level::Debug, "teardown", "tool bridge shut down", Value::Null);
        }
        if let Some(d) = &s.scratch {
            let _ = std::fs::remove_dir_all(d);
        }
        for t in lock(&self.threads).drain(..) {
            let _ = t.join();
        }
        // Every frame is in: the reader and the writer have stopped.
        if let Some(Err(m)) = s.recorder.as_ref().map(Recorder::flush) {
            s.recording_failed(m);
        }
        s.log.log(Level::Debug, "teardown", "teardown complete", json!({"ms": began.elapsed().as_secs_f64() * 1000.0}));
        // Pollers drain what is left, then get CLOSED.
        s.log.close();
        *teardown = Some(exit);
        Ok(())
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.close();
    }
}
