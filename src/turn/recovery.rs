//! What a turn went through on its way to the end: the attempts the agent made at the prompt,
//! each failed attempt with its error and what the agent did next (a retry after a delay, an
//! overflow compaction, giving up), the compactions inside the turn, and whether the agent said
//! it settled. Pure, no I/O: fed a turn's frames in order — by the turn builder from what the
//! collector kept (whatever events the turn retains), and by the summarizer from every event.
//!
//! Rules:
//! - attempt 1 is the prompt's first run; each retry the agent makes (`auto_retry_start`) and each
//!   overflow compaction that goes on to retry (`compaction_end` / `auto_compaction_end` with
//!   `willRetry`) begins the next attempt;
//! - an attempt failed when its run's last assistant message stopped with `"error"`, or when the
//!   agent announced a retry for it (omp may announce one before the run's `agent_end`); what
//!   followed is its `then`: `"retry"`, `"compaction"` (overflow), `"gave_up"` (the retries ran
//!   out: `auto_retry_end {success:false}`), `"cancelled"` (a retry the host aborted in its
//!   delay), or `"none"` (the agent did nothing more about it);
//! - a compaction is listed with its reason and result (`aborted`, `willRetry`, `errorMessage`).

use serde_json::{json, Value};

struct Failed {
    attempt: u32,
    error: Option<String>,
    then: &'static str,
    delay_ms: Option<u64>,
}

/// The record of one turn's attempts (see the module rules).
#[derive(Default)]
pub struct Recovery {
    /// The attempt now running or last run (0 before the first run).
    attempt: u32,
    /// The next run begins a new attempt (a retry or an overflow recovery was announced).
    next_is_retry: bool,
    /// The current attempt is already listed as failed (its retry came before its `agent_end`).
    listed: bool,
    /// The error of the current run's failed assistant message (`message_end`), if one failed:
    /// omp announces its retry or overflow compaction before the run's `agent_end`.
    run_error: Option<Option<String>>,
    failed: Vec<Failed>,
    compactions: Vec<Value>,
    settled: Option<bool>,
}

fn str_of(v: &Value) -> Option<String> {
    v.as_str().map(str::to_string)
}

impl Recovery {
    pub fn new() -> Self {
        Recovery::default()
    }

    /// An `agent_start`.
    pub fn run_started(&mut self) {
        if self.attempt == 0 || self.next_is_retry {
            self.attempt += 1;
            self.listed = false;
        }
        self.next_is_retry = false;
        self.run_error = None;
    }

    /// An `agent_end`, with its run's last assistant message (from its `messages`, or streamed).
    pub fn run_ended(&mut self, last_assistant: Option<&Value>) {
        let Some(m) = last_assistant else { return };
        if m["stopReason"] != "error" || self.listed {
            return;
        }
        self.listed = true;
        self.failed.push(Failed { attempt: self.attempt.max(1), error: str_of(&m["errorMessage"]), then: "none", delay_ms: None });
    }

    /// The failure of the current attempt, listed now if the agent announced it before the run
    /// ended (`error` from the announcement, else the failed message's).
    fn current_failure(&mut self, error: Option<String>) -> &mut Failed {
        if !self.listed {
            self.listed = true;
            let error = error.or_else(|| self.run_error.clone().flatten());
            self.failed.push(Failed { attempt: self.attempt.max(1), error, then: "none", delay_ms: None });
        }
        self.failed.last_mut().expect("listed above")
    }

    /// A frame of the agent's own recovery: `auto_retry_start` / `auto_retry_end`,
    /// `compaction_start` / `compaction_end` (pi) or `auto_compaction_start` / `auto_compaction_end`
    /// (omp, pi before 0.50), `agent_settled`; and a `message_end` whose assistant message failed.
    /// Other frames are ignored.
    pub fn frame(&mut self, ev: &Value) {
        match ev["type"].as_str().unwrap_or("") {
            "message_end" if ev["message"]["stopReason"] == "error" => self.run_error = Some(str_of(&ev["message"]["errorMessage"])),
            "auto_retry_start" => {
                let f = self.current_failure(str_of(&ev["errorMessage"]));
                f.then = "retry";
                // omp's delay is a float (its jitter): whole milliseconds here.
                f.delay_ms = ev["delayMs"].as_f64().map(|d| d.round() as u64);
                self.next_is_retry = true;
            }
            "auto_retry_end" if ev["success"] == false => {
                let cancelled = ev["finalError"] == "Retry cancelled";
                let f = self.current_failure(str_of(&ev["finalError"]));
                f.then = if cancelled { "cancelled" } else { "gave_up" };
                self.next_is_retry = false;
            }
            "compaction_start" | "auto_compaction_start" => {
                let reason = ev["reason"].as_str().unwrap_or("threshold");
                if reason == "overflow" && (self.listed || self.run_error.is_some()) {
                    self.current_failure(None).then = "compaction";
                }
                self.compactions.push(json!({"reason": reason, "aborted": null, "willRetry": null, "errorMessage": null}));
            }
            "compaction_end" | "auto_compaction_end" => {
                if self.compactions.last().map_or(true, |c| !c["aborted"].is_null()) {
                    // An end without its start (the turn began mid-compaction).
                    self.compactions.push(json!({"reason": ev["reason"].as_str().unwrap_or("threshold")}));
                }
                let c = self.compactions.last_mut().expect("pushed above");
                c["aborted"] = json!(ev["aborted"] == true);
                c["willRetry"] = json!(ev["willRetry"] == true);
                c["errorMessage"] = ev["errorMessage"].clone();
                if ev["willRetry"] == true {
                    self.next_is_retry = true;
                }
            }
            "agent_settled" => self.settled = Some(ev["aborted"] == true),
            _ => {}
        }
    }

    /// How many attempts the agent made at the prompt (1 without retries; 0 when nothing ran).
    pub fn attempts(&self) -> u32 {
        self.attempt
    }

    /// `[{"attempt","error","then","delayMs"?}]`, oldest first.
    pub fn failed_attempts(&self) -> Value {
        Value::Array(
            self.failed
                .iter()
                .map(|f| {
                    let mut v = json!({"attempt": f.attempt, "error": f.error, "then": f.then});
                    if let Some(d) = f.delay_ms {
                        v["delayMs"] = json!(d);
                    }
                    v
                })
                .collect(),
        )
    }

    /// `[{"reason","aborted","willRetry","errorMessage"}]`, oldest first.
    pub fn compactions(&self) -> Value {
        Value::Array(self.compactions.clone())
    }

    /// The last compaction's entry (`{"reason",…}`), or null.
    pub fn last_compaction(&self) -> Value {
        self.compactions.last().cloned().unwrap_or(Value::Null)
    }

    /// `Some(aborted)` once the agent said it settled (`agent_settled`).
    pub fn settled(&self) -> Option<bool> {
        self.settled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assistant(stop: &str, error: Option<&str>) -> Value {
        json!({"role": "assistant", "stopReason": stop, "errorMessage": error})
    }

    #[test]
    fn a_plain_turn_is_one_attempt_with_no_failures() {
        let mut r = Recovery::new();
        r.run_started();
        r.run_ended(Some(&assistant("stop", None)));
        assert_eq!((r.attempts(), r.failed_attempts(), r.compactions(), r.settled()), (1, json!([]), json!([]), None));
    }

    #[test]
    fn pi_1_x_retry_after_a_500_then_settles() {
        // agent_end (error, willRetry), auto_retry_start, agent_start, auto_retry_end, agent_end, agent_settled.
        let mut r = Recovery::new();
        r.run_started();
        r.run_ended(Some(&assistant("error", Some("500: boom"))));
        r.frame(&json!({"type": "auto_retry_start", "attempt": 1, "maxAttempts": 3, "delayMs": 2000, "errorMessage": "500: boom"}));
        r.run_started();
        r.frame(&json!({"type": "auto_retry_end", "success": true, "attempt": 1}));
        r.run_ended(Some(&assistant("stop", None)));
        r.frame(&json!({"type": "agent_settled", "aborted": false}));
        assert_eq!(r.attempts(), 2);
        assert_eq!(r.failed_attempts(), json!([{"attempt": 1, "error": "500: boom", "then": "retry", "delayMs": 2000}]));
        assert_eq!(r.settled(), Some(false));
    }

    #[test]
    fn a_retry_announced_before_the_run_ended_is_listed_once() {
        let mut r = Recovery::new();
        r.run_started();
        r.frame(&json!({"type": "auto_retry_start", "delayMs": 9.6, "errorMessage": "overloaded"}));
        r.run_ended(Some(&assistant("error", Some("overloaded"))));
        r.run_started();
        r.run_ended(Some(&assistant("stop", None)));
        assert_eq!(r.failed_attempts(), json!([{"attempt": 1, "error": "overloaded", "then": "retry", "delayMs": 10}]));
        assert_eq!(r.attempts(), 2);
    }

    #[test]
    fn pi_0_73_overflow_compacts_and_retries() {
        let mut r = Recovery::new();
        r.run_started();
        r.run_ended(Some(&assistant("error", Some("400 maximum context length"))));
        r.frame(&json!({"type": "compaction_start", "reason": "overflow"}));
        r.frame(&json!({"type": "compaction_end", "reason": "overflow", "aborted": false, "willRetry": true}));
        r.run_started();
        r.run_ended(Some(&assistant("stop", None)));
        assert_eq!(r.attempts(), 2);
        assert_eq!(r.failed_attempts()[0]["then"], "compaction");
        assert_eq!(r.compactions(), json!([{"reason": "overflow", "aborted": false, "willRetry": true, "errorMessage": null}]));
    }

    #[test]
    fn retries_that_run_out_or_are_cancelled_say_so() {
        let mut r = Recovery::new();
        r.run_started();
        r.run_ended(Some(&assistant("error", Some("503"))));
        r.frame(&json!({"type": "auto_retry_start", "delayMs": 1}));
        r.run_started();
        r.run_ended(Some(&assistant("error", Some("503 again"))));
        r.frame(&json!({"type": "auto_retry_end", "success": false, "finalError": "503 again"}));
        let thens: Vec<_> = r.failed_attempts().as_array().unwrap().iter().map(|f| f["then"].clone()).collect();
        assert_eq!(thens, [json!("retry"), json!("gave_up")]);
        let mut r = Recovery::new();
        r.run_started();
        r.run_ended(Some(&assistant("error", Some("500"))));
        r.frame(&json!({"type": "auto_retry_start", "delayMs": 2000}));
        r.frame(&json!({"type": "auto_retry_end", "success": false, "finalError": "Retry cancelled"}));
        r.frame(&json!({"type": "agent_settled", "aborted": true}));
        assert_eq!((r.attempts(), r.failed_attempts()[0]["then"].as_str(), r.settled()), (1, Some("cancelled"), Some(true)));
    }

    #[test]
    fn omp_compacts_for_the_overflow_before_the_failed_run_ends() {
        // omp 18.2.3, recorded: the failed message_end, two overflow compactions (the first finds
        // nothing to drop), a new run, one agent_end.
        let mut r = Recovery::new();
        r.run_started();
        r.frame(&json!({"type": "message_end", "message": assistant("error", Some("400 maximum context length"))}));
        r.frame(&json!({"type": "auto_compaction_start", "reason": "overflow", "action": "shake"}));
        r.frame(&json!({"type": "auto_compaction_end", "aborted": false, "willRetry": false, "skipped": true}));
        r.frame(&json!({"type": "auto_compaction_start", "reason": "overflow", "action": "context-full"}));
        r.frame(&json!({"type": "auto_compaction_end", "aborted": false, "willRetry": true}));
        r.run_started();
        r.run_ended(Some(&assistant("stop", None)));
        assert_eq!(r.attempts(), 2);
        assert_eq!(r.failed_attempts(), json!([{"attempt": 1, "error": "400 maximum context length", "then": "compaction"}]));
        assert_eq!(r.compactions().as_array().unwrap().len(), 2);
        assert_eq!(r.compactions()[1]["willRetry"], true);
    }

    #[test]
    fn a_second_run_without_a_retry_is_the_same_attempt() {
        // omp: a todo reminder starts a second run of the same prompt.
        let mut r = Recovery::new();
        r.run_started();
        r.run_ended(Some(&assistant("stop", None)));
        r.run_started();
        r.run_ended(Some(&assistant("stop", None)));
        assert_eq!(r.attempts(), 1);
    }
}
