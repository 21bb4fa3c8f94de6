//! Operations (omp protocol 1.1, "omp-rpc" 1.1.0): a long command (`bash`, `compact`,
//! `handoff`, `login`, and the prompts) is acknowledged at once with
//! `{ack:"accepted", operationId, queued}` and ends later with exactly one `operation_end
//! {operationId, data?}` or `operation_error {operationId, status, error, errorInfo}`.
//!
//! Rules:
//! * A plain request whose answer is such an acknowledgement waits for the operation's end,
//!   within the same deadline, and returns the end's `data` (or fails with its error): the
//!   caller of `bash` gets the command's output, as with an agent that answers at once.
//!   Prompts and `follow_up` are not waited for here: their completion is the run's
//!   (client::lifecycle), and their acknowledgement is what the caller asked for.
//! * The ends are kept as they arrive, whether or not anyone waits yet (the end may come
//!   before the waiter has read the acknowledgement), bounded: the oldest of more than
//!   `KEPT` unclaimed ends is forgotten (prompts' ends, which nobody claims, pass through).
//! * No I/O here: the reader files the ends, the waiting call takes its own.

use std::collections::VecDeque;

use serde_json::Value;

use crate::error::Error;

/// Unclaimed operation ends kept for a waiter that has not read its acknowledgement yet.
const KEPT: usize = 256;

/// How an operation ended: its `data` (verbatim JSON, None when absent), or its error.
pub type Outcome = Result<Option<Vec<u8>>, Error>;

#[derive(Default)]
pub struct Operations {
    ended: VecDeque<(String, Outcome)>,
}

impl Operations {
    /// Files an operation's end (the reader, for `operation_end` / `operation_error`).
    pub fn ended(&mut self, operation_id: String, outcome: Outcome) {
        if self.ended.len() >= KEPT {
            self.ended.pop_front();
        }
        self.ended.push_back((operation_id, outcome));
    }

    /// The end of `operation_id`, once it arrived (taken: each end is claimed once).
    pub fn take(&mut self, operation_id: &str) -> Option<Outcome> {
        let i = self.ended.iter().position(|(id, _)| id == operation_id)?;
        self.ended.remove(i).map(|(_, outcome)| outcome)
    }
}

/// The operation an acknowledgement names: `{"ack":"accepted","operationId":"op_…",…}`.
pub fn acknowledged_operation(data: &[u8]) -> Option<String> {
    // Acknowledgements are small objects naming `ack`: every other answer (a plain request's,
    // on every agent) is passed over without being parsed.
    if data.len() > 4096 || !data.starts_with(b"{") || !data.windows(5).any(|w| w == b"\"ack\"") {
        return None;
    }
    let v: Value = serde_json::from_slice(data).ok()?;
    if v.get("ack").and_then(Value::as_str) != Some("accepted") {
        return None;
    }
    v.get("operationId").and_then(Value::as_str).map(str::to_string)
}

/// Whether a plain request of this command waits for the operation it starts.
pub fn waits_for_operation(command: &str) -> bool {
    !matches!(command, "prompt" | "abort_and_prompt" | "follow_up" | "steer")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Status;

    #[test]
    fn an_end_that_arrives_before_its_waiter_is_kept_for_it() {
        let mut ops = Operations::default();
        ops.ended("op_1".into(), Ok(Some(b"{\"output\":\"hi\"}".to_vec())));
        ops.ended("op_2".into(), Err(Error::command_failed("bash", "Operation cancelled: op_2", Some("operation_cancelled".into()))));
        assert_eq!(ops.take("op_1").unwrap().unwrap().as_deref(), Some(&b"{\"output\":\"hi\"}"[..]));
        assert!(ops.take("op_1").is_none(), "claimed once");
        assert_eq!(ops.take("op_2").unwrap().unwrap_err().status, Status::CommandFailed);
        assert!(ops.take("op_3").is_none());
    }

    #[test]
    fn unclaimed_ends_are_bounded() {
        let mut ops = Operations::default();
        for i in 0..KEPT + 10 {
            ops.ended(format!("op_{i}"), Ok(None));
        }
        assert!(ops.take("op_0").is_none(), "the oldest unclaimed end was forgotten");
        assert!(ops.take(&format!("op_{}", KEPT + 9)).is_some());
        assert_eq!(ops.ended.len(), KEPT - 1);
    }

    #[test]
    fn only_an_operation_acknowledgement_names_an_operation() {
        assert_eq!(acknowledged_operation(br#"{"ack":"accepted","operationId":"op_7","queued":false}"#).as_deref(), Some("op_7"));
        assert_eq!(acknowledged_operation(br#"{"output":"hello\n","exitCode":0}"#), None);
        assert_eq!(acknowledged_operation(br#"{"ack":"rejected","operationId":"op_7"}"#), None);
        assert_eq!(acknowledged_operation(br#"{"ack":"accepted","operationId":7}"#), None);
        assert_eq!(acknowledged_operation(b"null"), None);
        assert!(waits_for_operation("bash") && waits_for_operation("compact") && waits_for_operation("login"));
        assert!(!waits_for_operation("prompt") && !waits_for_operation("follow_up"));
    }
}
