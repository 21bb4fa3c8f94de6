//! The fake pi by version: what a pi of the version `OMPRPC_FAKE_VERSION` (default
//! [`FAKE_PI_VERSION`], 0.73.1) writes differently, applied in the one place every frame
//! passes (`Agent::event`, `Agent::respond`), so each scenario is written once.
//! Measured on pi 0.73.1 and 1.6.0 (tests/fixtures/recordings, NOTES), the boundaries from
//! pi 1.6.0's CHANGELOG:
//!
//! * 0.75.4 — `agent_end` carries `willRetry` (true only when a retry follows it).
//! * 0.79.8 — a context overflow is no longer recovered by compaction and a new run: the failed
//!   run's `agent_end` is the last (measured: 0.79.7 recovers, 0.79.8 and 0.79.10 do not;
//!   CHANGELOG 0.79.8 "avoid retrying completed assistant responses").
//! * 0.80.4 — the agent announces settling: after the last run of its work (no retry, no
//!   recovery follows) `{"type":"agent_settled","aborted":<bool>}` (aborted: an abort ended it,
//!   i.e. the run's last assistant message stopped `"aborted"`, or the host aborted a retry's
//!   delay). It comes after the frames that close the work (`auto_retry_end` when retries run
//!   out, `entry_appended`), before the `abort` response when an abort ended it, after the
//!   `abort_retry` response. `get_state` says `isStreaming:true` until it.
//! * 0.83.0 — an assistant `message_start` still streaming says `stopReason:"pending"`.
//! * 0.84.0 — `message_update` is delta-only: no `message`, no `assistantMessageEvent.partial`,
//!   a top-level `usage` instead.
//! * 0.86.0 — the session's first run lists a `system` message first (the recovery scenarios,
//!   which show the run's own messages, emit it).
//! * 0.87.0 — a failed attempt left out of the context is announced as
//!   `entry_appended {entry:{type:"context_edit",…,replacement:null}}`.
//! * 0.99.0 — `prompt`, `steer` and `follow_up` success responses carry `data.disposition`:
//!   `"started"` (a run starts), `"queued"` (a prompt with `streamingBehavior` or while a run is
//!   live; every steer and follow-up), `"handled"` (an extension command: no run).
//!
//! omp (any version) writes none of these.

use omprpc::protocol::version::Version;

use crate::json::{arr, obj, J};

use super::{Agent, Flavor};

pub const WILL_RETRY: Version = Version::new(0, 75, 4);
pub const OVERFLOW_GIVES_UP: Version = Version::new(0, 79, 8);
/// The library's own fact (src/protocol/version.rs).
pub const SETTLED: Version = omprpc::protocol::version::PI_AGENT_SETTLED;
pub const PENDING_STOP: Version = Version::new(0, 83, 0);
pub const DELTA_ONLY: Version = Version::new(0, 84, 0);
pub const SYSTEM_MESSAGE: Version = Version::new(0, 86, 0);
pub const CONTEXT_EDIT: Version = Version::new(0, 87, 0);
pub const DISPOSITION: Version = Version::new(0, 99, 0);

/// The agent's version: env `OMPRPC_FAKE_VERSION` (as `--version` answers it), else pi's
/// [`crate::extension::FAKE_PI_VERSION`] / omp's newest.
pub fn of(flavor: Flavor) -> Version {
    let default = match flavor {
        Flavor::Pi => Version::parse(crate::extension::FAKE_PI_VERSION).unwrap_or(Version::new(0, 73, 1)),
        Flavor::Omp => omprpc::protocol::version::OMP_NEWEST,
    };
    std::env::var("OMPRPC_FAKE_VERSION").ok().and_then(|v| Version::parse(&v)).unwrap_or(default)
}

/// `key` of an object.
pub(super) fn field<'a>(j: &'a J, key: &str) -> Option<&'a J> {
    match j {
        J::Obj(fields) => fields.iter().find(|(k, _)| *k == key).map(|(_, v)| v),
        _ => None,
    }
}

/// Whether `j` is the string `s` (however it was built).
pub(super) fn is_str(j: Option<&J>, s: &str) -> bool {
    match j {
        Some(J::Str(t)) | Some(J::Safe(t)) => t == s,
        Some(J::Raw(t)) => t.strip_prefix('"').and_then(|t| t.strip_suffix('"')) == Some(s),
        _ => false,
    }
}

fn without(j: J, key: &str) -> J {
    match j {
        J::Obj(fields) => J::Obj(fields.into_iter().filter(|(k, _)| *k != key).collect()),
        other => other,
    }
}

impl Agent {
    /// A pi of `v` or newer (never omp).
    pub(super) fn pi_since(&self, v: Version) -> bool {
        self.flavor == Flavor::Pi && self.version >= v
    }

    /// pi 0.80.4 on: the agent announces settling.
    pub(super) fn settles(&self) -> bool {
        self.pi_since(SETTLED)
    }

    /// The frame as this agent's version writes it (see the module rules).
    pub(super) fn versioned(&self, j: J) -> J {
        if self.flavor != Flavor::Pi {
            return j;
        }
        let ty = field(&j, "type");
        if is_str(ty, "agent_end") {
            if self.pi_since(WILL_RETRY) && field(&j, "willRetry").is_none() {
                return j.with("willRetry", J::Bool(false));
            }
        } else if is_str(ty, "message_update") {
            if self.pi_since(DELTA_ONLY) {
                let event = field(&j, "assistantMessageEvent").cloned().map(|e| without(e, "partial"));
                let mut fields = vec![("type", J::from("message_update")), ("usage", super::turns::usage())];
                if let Some(e) = event {
                    fields.push(("assistantMessageEvent", e));
                }
                return J::Obj(fields);
            }
        } else if is_str(ty, "message_start") && self.pi_since(PENDING_STOP) {
            if let Some(m) = field(&j, "message") {
                if is_str(field(m, "role"), "assistant") && is_str(field(m, "stopReason"), "stop") {
                    let m = m.clone().with("stopReason", J::from("pending"));
                    return j.with("message", m);
                }
            }
        }
        j
    }

    /// After a frame went out: an `agent_start` counts a run; a settling agent's final
    /// `agent_end` (not `willRetry`, not `isTerminal:false`) makes `agent_settled` due.
    pub(super) fn after_frame(&mut self, j: &J) {
        let ty = field(j, "type");
        if is_str(ty, "agent_start") {
            self.runs += 1;
            return;
        }
        if !is_str(ty, "agent_end") || !self.settles() {
            return;
        }
        if matches!(field(j, "willRetry"), Some(J::Bool(true))) || matches!(field(j, "isTerminal"), Some(J::Bool(false))) {
            return;
        }
        let last = match field(j, "messages") {
            Some(J::Arr(items)) => items.iter().rev().find(|m| is_str(field(m, "role"), "assistant")),
            _ => None,
        };
        let aborted = last.is_some_and(|m| is_str(field(m, "stopReason"), "aborted"));
        self.settle_due = Some(aborted);
    }

    /// Writes the `agent_settled` that is due, if any (before a response, at the end of a batch).
    pub(super) fn settle_if_due(&mut self) {
        if let Some(aborted) = self.settle_due.take() {
            self.out.frame(&obj! {"type": "agent_settled", "aborted": aborted});
        }
    }

    /// `agent_settled {aborted}` now, where the agent settles (no-op otherwise).
    pub(super) fn settle(&mut self, aborted: bool) {
        if self.settles() {
            self.settle_due = None;
            self.out.frame(&obj! {"type": "agent_settled", "aborted": aborted});
        }
    }

    /// The end of a batch (a command handled, a timer fired): the due `agent_settled`, flushed.
    pub fn end_batch(&mut self) {
        self.settle_if_due();
        self.out.flush();
    }

    /// pi 0.99 on: a success response to prompt/steer/follow_up with its disposition (the
    /// one a scenario set with `self.disposition`, else "started" for a prompt, "queued" for a
    /// steer or follow-up). A prompt answered with data of its own (`agentInvoked`) is left be.
    pub(super) fn with_disposition(&mut self, command: &str, outcome: Result<Option<J>, String>) -> Result<Option<J>, String> {
        let chosen = self.disposition.take();
        if !self.pi_since(DISPOSITION) || !matches!(command, "prompt" | "steer" | "follow_up") {
            return outcome;
        }
        let disposition = chosen.unwrap_or(if command == "prompt" { "started" } else { "queued" });
        match outcome {
            Ok(None) => Ok(Some(obj! {"disposition": disposition})),
            Ok(Some(data @ J::Obj(_))) if field(&data, "agentInvoked").is_none() => Ok(Some(data.with("disposition", J::from(disposition)))),
            other => other,
        }
    }

    /// pi 0.86 on, the session's first run: the system message it lists first.
    pub(super) fn system_message(&self) -> Option<J> {
        (self.pi_since(SYSTEM_MESSAGE) && self.runs <= 1).then(|| {
            obj! {
                "role": "system",
                "content": "",
                "sections": obj! {"preamble": "You are a fake coding agent.", "tools": "<tools>\n- read: Read file contents\n</tools>"},
                "timestamp": 1,
                "toolsAdded": arr![obj! {"name": "read", "description": "Read file contents"}],
            }
        })
    }

    /// pi 0.87 on: the failed attempt is left out of the context (`entry_appended`).
    pub(super) fn context_edit(&mut self) {
        if self.pi_since(CONTEXT_EDIT) {
            self.event(obj! {
                "type": "entry_appended",
                "entry": obj! {"type": "context_edit", "id": "edit-1", "parentId": "entry-2", "timestamp": "2026-01-01T00:00:00.000Z", "targetId": "entry-2", "replacement": J::Null},
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_recognised_however_built() {
        assert!(is_str(Some(&J::from("x")), "x"));
        assert!(is_str(Some(&J::Raw("\"x\"".into())), "x"));
        assert!(!is_str(Some(&J::Raw("1".into())), "x"));
        assert!(!is_str(None, "x"));
        let o = obj! {"type": "agent_end", "n": 1};
        assert!(is_str(field(&o, "type"), "agent_end"));
        assert!(field(&o, "missing").is_none());
    }
}
