//! Failed LLM calls and what the agent does about them: retries after a delay, overflow
//! recovery, giving up — the frames real pi 0.73.1, pi 1.6.0 and omp 18.2.3 sent against the
//! fake LLM's failures (recorded with tests/support's harness; tests/recovery.rs holds the fake
//! to the committed recordings, tests/fixtures/recordings/pi-*-{retry-500,…}.jsonl). What pi
//! writes differently by version (`willRetry`, `agent_settled`, dispositions, …) is added
//! where every frame passes (agent/versions.rs); this module writes the sequences.
//!
//! Prompt messages (the run's own messages are shown: pi 0.86+ lists the system message first
//! in the session's first run, then the user message, then the assistant's):
//!
//! * "retry once [MS]": the call fails with a 500 — pi: the failed run ends (`agent_end`,
//!   `willRetry:true` from 0.75.4), then `auto_retry_start {attempt:1,maxAttempts:3,delayMs:MS,
//!   errorMessage}` (pi 0.87+: `entry_appended` context_edit); omp holds the run's `agent_end`
//!   back: `auto_retry_start {…,maxAttempts:10,delayMs:<float>,errorId}` right after the failed
//!   `turn_end`. MS (default 100) later a new run answers "recovered" — pi: `message_end`,
//!   `auto_retry_end {success:true,attempt:1}`, `turn_end`, `agent_end`; omp: `message_end`,
//!   `turn_end`, `auto_retry_end {…,retryErrors}`, `agent_end {isTerminal:true}`.
//! * "rate limited [MS]": the same with a 429.
//! * "retry until abort [MS]": the same with a 60 s delay (or MS); `abort` in it: pi — `auto_retry_end
//!   {success:false,attempt:1,finalError:"Retry cancelled"}`, (0.80.4+: `agent_settled
//!   {aborted:true}`), the response; omp — `auto_retry_end`, the failed run's `agent_end
//!   {isTerminal:true}`, the response. `abort_retry`: pi — `auto_retry_end`, the response,
//!   (0.80.4+: `agent_settled {aborted:false}`); omp — the response, `auto_retry_end`,
//!   `agent_end`. Responses to both carry no data.
//! * "retries exhausted": every attempt fails, maxAttempts 2 (delays 100 and 200 ms): each
//!   retry run fails like the first (no user message in it), the second retry's failure ends
//!   it — pi: `agent_end` (`willRetry:false`), `auto_retry_end {success:false,attempt:2,
//!   finalError}`; omp: `auto_retry_end {…}`, `agent_end {isTerminal:true}`.
//! * "overflow [MS]": a context-length error — pi before 0.80.4: `agent_end`,
//!   `compaction_start {reason:"overflow"}`, MS (default 100) of compaction, `compaction_end
//!   {reason:"overflow",result,aborted:false,willRetry:true}`, a new run answering "recovered";
//!   pi 0.80.4+: gives up — `agent_end`, (0.87+: `entry_appended`), `agent_settled`; omp:
//!   `auto_compaction_start {reason:"overflow",action:"shake"}`, `auto_compaction_end
//!   {action:"shake",skipped:true,willRetry:false,errorMessage}`, `auto_compaction_start
//!   {…,action:"context-full"}`, MS later `auto_compaction_end {action:"context-full",result,
//!   willRetry:true}` and the new run. `abort` during the compaction: pi 0.73.1 answers it and
//!   goes on (the compaction ends, the retry runs); omp — `auto_compaction_end
//!   {action:"context-full",aborted:true,willRetry:false}`, the failed run's `agent_end
//!   {isTerminal:true}`, the response.
//! * "failed call": a 400 the agent does nothing about: the failed run ends (`agent_end`; omp
//!   `isTerminal:true`) and nothing follows (pi 0.80.4+: `agent_settled`).
//!
//! While a retry's delay runs, `get_state` says `isStreaming` false on pi before 0.80.4, true on
//! pi 0.80.4+ (until `agent_settled`) and on omp; during a compaction `isCompacting:true`
//! (`isStreaming` false on pi, true on omp). A prompt meanwhile: pi before 0.80.4 accepts it
//! and the next run takes it (its user message opens that run), pi 0.80.4+ refuses it, omp
//! acknowledges then refuses it; with `streamingBehavior` (and `steer`, `follow_up`) it is
//! queued into the next run. The errors are worded as each agent words the fake LLM's
//! (OpenAI-shaped) failures: pi 0.73.1 `500 The server had an error…`, pi 1.6.0
//! `500: {"code":null,…}` (the fake pi uses 1.6.0's wording from 0.80.4 on), omp
//! `500 …\n… (type=server_error)`.

use std::time::{Duration, Instant};

use crate::command::Cmd;
use crate::json::{arr, obj, J};

use super::turns::message_update;
use super::{Agent, Flavor};

/// How an LLM call failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Failure {
    /// HTTP 500.
    ServerError,
    /// HTTP 429.
    RateLimit,
    /// HTTP 400: the prompt exceeds the context window.
    ContextLength,
    /// HTTP 400: a request the provider refuses.
    BadRequest,
}

/// The recovery scenarios a prompt message can ask for.
#[derive(Debug)]
pub(super) enum Scenario {
    RetryOnce { failure: Failure, delay_ms: u64 },
    RetryUntilAbort { delay_ms: u64 },
    RetriesExhausted,
    Overflow { compaction_ms: u64 },
    FailedCall,
}

/// The default retry delay and compaction time (ms).
const QUICK_MS: u64 = 100;
/// "retry until abort": the retry's delay.
const LONG_DELAY_MS: u64 = 60_000;

impl Scenario {
    /// None: not a keyword of this family.
    pub(super) fn parse(message: &str) -> Option<Scenario> {
        let (word, ms) = match message.rsplit_once(' ') {
            Some((w, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => (w, n.parse::<u64>().ok()),
            _ => (message, None),
        };
        let ms_or_default = ms.unwrap_or(QUICK_MS);
        Some(match (word, ms) {
            ("retry once", _) => Scenario::RetryOnce { failure: Failure::ServerError, delay_ms: ms_or_default },
            ("rate limited", _) => Scenario::RetryOnce { failure: Failure::RateLimit, delay_ms: ms_or_default },
            ("overflow", _) => Scenario::Overflow { compaction_ms: ms_or_default },
            ("retry until abort", _) => Scenario::RetryUntilAbort { delay_ms: ms.unwrap_or(LONG_DELAY_MS) },
            ("retries exhausted", None) => Scenario::RetriesExhausted,
            ("failed call", None) => Scenario::FailedCall,
            _ => return None,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// A retry's delay: the next attempt runs when it is over.
    Retry,
    /// An overflow compaction: the retry runs when it is done.
    Compaction,
}

/// The agent's own work still to come: a retry after its delay, or the end of a compaction.
pub struct Pending {
    due: Instant,
    step: Step,
    failure: Failure,
    /// The retry that is scheduled (`auto_retry_start`'s `attempt`).
    attempt: u64,
    max_attempts: u64,
    /// The first delay; pi doubles it for each retry.
    base_delay_ms: u64,
    /// Every attempt fails ("retries exhausted").
    fails_again: bool,
    /// The last failed run's messages (omp ends the work with them when a retry is cancelled).
    failed_run: Vec<J>,
    /// Messages queued meanwhile: the next run takes them.
    queued: Vec<String>,
}

impl Agent {
    /// The words of `failure` as this agent writes them in `errorMessage`.
    fn error_text(&self, failure: Failure) -> &'static str {
        match (self.flavor, self.settles(), failure) {
            (Flavor::Omp, _, Failure::ServerError) => "500 The server had an error while processing your request. Sorry about that!\nThe server had an error while processing your request. Sorry about that! (type=server_error)",
            (Flavor::Omp, _, Failure::RateLimit) => "429 Rate limit reached for requests. Please try again later. retry-after-ms=1000\nRate limit reached for requests. Please try again later. (type=requests param=rate_limit_exceeded)",
            (Flavor::Omp, _, Failure::ContextLength) => "400 This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.\nThis model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages. (type=invalid_request_error param=messages code=context_length_exceeded)",
            (Flavor::Omp, _, Failure::BadRequest) => "400 Invalid request: bad parameter\nInvalid request: bad parameter (type=fake_error)",
            (Flavor::Pi, true, Failure::ServerError) => r#"500: {"code":null,"message":"The server had an error while processing your request. Sorry about that!","param":null,"type":"server_error"}"#,
            (Flavor::Pi, true, Failure::RateLimit) => r#"429: {"code":"rate_limit_exceeded","message":"Rate limit reached for requests. Please try again later.","param":null,"type":"requests"}"#,
            (Flavor::Pi, true, Failure::ContextLength) => r#"400: {"code":"context_length_exceeded","message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.","param":"messages","type":"invalid_request_error"}"#,
            (Flavor::Pi, true, Failure::BadRequest) => r#"400: {"code":400,"message":"Invalid request: bad parameter","type":"fake_error"}"#,
            (Flavor::Pi, false, Failure::ServerError) => "500 The server had an error while processing your request. Sorry about that!",
            (Flavor::Pi, false, Failure::RateLimit) => "429 Rate limit reached for requests. Please try again later.",
            (Flavor::Pi, false, Failure::ContextLength) => "400 This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.",
            (Flavor::Pi, false, Failure::BadRequest) => "400 Invalid request: bad parameter",
        }
    }

    /// omp's `errorId` (and `errorStatus`) of a failure.
    fn omp_error_id(failure: Failure) -> (u32, u32) {
        match failure {
            Failure::ServerError => (500, 135168),
            Failure::RateLimit => (429, 135168),
            Failure::ContextLength => (400, 8392704),
            Failure::BadRequest => (400, 400),
        }
    }

    /// After the prompt's response.
    pub(super) fn run_recovery(&mut self, scenario: Scenario, prompt: &str) {
        let users = vec![prompt.to_owned()];
        match scenario {
            Scenario::RetryOnce { failure, delay_ms } => self.fail_then_retry(failure, users, delay_ms, false),
            Scenario::RetryUntilAbort { delay_ms } => self.fail_then_retry(Failure::ServerError, users, delay_ms, false),
            Scenario::RetriesExhausted => self.fail_then_retry(Failure::ServerError, users, QUICK_MS, true),
            Scenario::Overflow { compaction_ms } => self.overflow(users, compaction_ms),
            Scenario::FailedCall => {
                let messages = self.failed_run(&users, Failure::BadRequest);
                self.end_work(messages);
            }
        }
    }

    /// The first attempt fails; the agent announces its retry.
    fn fail_then_retry(&mut self, failure: Failure, users: Vec<String>, delay_ms: u64, fails_again: bool) {
        let messages = self.failed_run(&users, failure);
        let max_attempts = match (fails_again, self.flavor) {
            (true, _) => 2,
            (false, Flavor::Pi) => 3,
            (false, Flavor::Omp) => 10,
        };
        let pending = Pending {
            due: Instant::now(),
            step: Step::Retry,
            failure,
            attempt: 1,
            max_attempts,
            base_delay_ms: delay_ms,
            fails_again,
            failed_run: Vec::new(),
            queued: Vec::new(),
        };
        self.announce_retry(pending, messages);
    }

    /// A run whose LLM call fails: agent_start, turn_start, (the system message,) the user
    /// messages, the failed assistant message, turn_end — no agent_end. Returns the run's messages.
    fn failed_run(&mut self, users: &[String], failure: Failure) -> Vec<J> {
        let mut messages = self.run_start(users);
        let mut failed = self
            .assistant_with_content(Vec::new())
            .with("stopReason", J::from("error"));
        if self.flavor == Flavor::Omp {
            let (status, id) = Agent::omp_error_id(failure);
            failed = failed.with("errorStatus", J::from(status as i64)).with("errorId", J::from(id as i64));
        }
        let failed = failed.with("errorMessage", J::from(self.error_text(failure)));
        self.event(obj! {"type": "message_start", "message": failed.clone()});
        self.event(obj! {"type": "message_end", "message": failed.clone()});
        self.event(obj! {"type": "turn_end", "message": failed.clone(), "toolResults": arr![]});
        messages.push(failed);
        self.st.messages = messages.clone();
        messages
    }

    /// agent_start, turn_start, the system message where pi lists it, the user messages.
    fn run_start(&mut self, users: &[String]) -> Vec<J> {
        self.event(obj! {"type": "agent_start"});
        self.event(obj! {"type": "turn_start"});
        let mut messages = Vec::new();
        if let Some(system) = self.system_message() {
            self.event(obj! {"type": "message_start", "message": system.clone()});
            self.event(obj! {"type": "message_end", "message": system.clone()});
            messages.push(system);
        }
        for text in users {
            let user = self.user_message(text, false);
            self.event(obj! {"type": "message_start", "message": user.clone()});
            self.event(obj! {"type": "message_end", "message": user.clone()});
            messages.push(user);
        }
        messages
    }

    /// A run that answers "recovered", up to its assistant `message_end`. Returns the run's
    /// messages (the answer last).
    fn answer_run(&mut self, users: &[String]) -> Vec<J> {
        let mut messages = self.run_start(users);
        let partial = self.assistant_with_content(Vec::new());
        let answer = self.assistant_message("recovered");
        self.event(obj! {"type": "message_start", "message": partial});
        self.event(message_update(&answer, "text_start", 0, ""));
        self.event(message_update(&answer, "text_delta", 0, "recovered"));
        self.event(message_update(&answer, "text_end", 0, ""));
        self.event(obj! {"type": "message_end", "message": answer.clone()});
        self.st.last_assistant_text = Some("recovered".to_owned());
        messages.push(answer);
        self.st.messages = messages.clone();
        messages
    }

    /// The failed run `messages` ended and the agent goes on with retry `pending.attempt`.
    fn announce_retry(&mut self, mut pending: Pending, messages: Vec<J>) {
        let delay_ms = pending.base_delay_ms << (pending.attempt - 1).min(16);
        let error = self.error_text(pending.failure);
        match self.flavor {
            Flavor::Pi => {
                let mut end = obj! {"type": "agent_end", "messages": J::Arr(messages.clone())};
                if self.pi_since(super::versions::WILL_RETRY) {
                    end = end.with("willRetry", J::Bool(true));
                }
                self.event(end);
                self.event(obj! {
                    "type": "auto_retry_start",
                    "attempt": pending.attempt,
                    "maxAttempts": pending.max_attempts,
                    "delayMs": delay_ms,
                    "errorMessage": error,
                });
                self.context_edit();
            }
            Flavor::Omp => {
                let (_, id) = Agent::omp_error_id(pending.failure);
                self.event(obj! {
                    "type": "auto_retry_start",
                    "attempt": pending.attempt,
                    "maxAttempts": pending.max_attempts,
                    // omp's delay is jittered: a float.
                    "delayMs": J::Num(delay_ms as f64 + 0.4021558981875),
                    "errorMessage": error,
                    "errorId": id as i64,
                });
            }
        }
        pending.due = Instant::now() + Duration::from_millis(delay_ms);
        pending.step = Step::Retry;
        pending.failed_run = messages;
        self.recovery = Some(pending);
    }

    /// The work ends with the failed run `messages` and nothing after it.
    fn end_work(&mut self, messages: Vec<J>) {
        let mut end = obj! {"type": "agent_end", "messages": J::Arr(messages)};
        if self.flavor == Flavor::Omp {
            end = end.with("isTerminal", J::Bool(true));
        }
        self.event(end);
    }

    /// omp's `retryErrors` on `auto_retry_end`: one entry per failed attempt.
    fn retry_errors(attempts: u64, recovered: bool) -> J {
        J::Arr(
            (1..=attempts)
                .map(|attempt| {
                    let status = if recovered && attempt == attempts { "recovered" } else { "superseded" };
                    obj! {
                        "entryId": format!("entry-{}", attempt + 1),
                        "persistenceKey": format!("assistant:{attempt}:anthropic:claude-sonnet-4-5::error"),
                        "note": "error; retried",
                        "retryRecovery": obj! {"kind": "auto-retry", "status": status, "attempt": attempt, "recovery": "plain", "note": "error; retried"},
                    }
                })
                .collect(),
        )
    }

    fn overflow(&mut self, users: Vec<String>, compaction_ms: u64) {
        let messages = self.failed_run(&users, Failure::ContextLength);
        match self.flavor {
            // pi 0.79.8 on gives up: the failed run is the last (0.87 on leaves the failed
            // attempt out of the context, 0.80.4 on settles after it).
            Flavor::Pi if self.pi_since(super::versions::OVERFLOW_GIVES_UP) => {
                self.event(obj! {"type": "agent_end", "messages": J::Arr(messages)});
                self.context_edit();
                return;
            }
            Flavor::Pi => {
                self.event(obj! {"type": "agent_end", "messages": J::Arr(messages.clone())});
                self.event(obj! {"type": "compaction_start", "reason": "overflow"});
            }
            Flavor::Omp => {
                self.event(obj! {"type": "auto_compaction_start", "reason": "overflow", "action": "shake"});
                self.event(obj! {
                    "type": "auto_compaction_end",
                    "action": "shake",
                    "aborted": false,
                    "willRetry": false,
                    "skipped": true,
                    "errorMessage": "Auto-shake found nothing eligible to drop; trying the next preferred compaction method.",
                });
                self.event(obj! {"type": "auto_compaction_start", "reason": "overflow", "action": "context-full"});
            }
        }
        self.recovery = Some(Pending {
            due: Instant::now() + Duration::from_millis(compaction_ms),
            step: Step::Compaction,
            failure: Failure::ContextLength,
            attempt: 1,
            max_attempts: 1,
            base_delay_ms: compaction_ms,
            fails_again: false,
            failed_run: messages,
            queued: Vec::new(),
        });
    }

    /// When the agent's own next step is due (None: nothing pending).
    pub(super) fn recovery_due(&self) -> Option<Instant> {
        self.recovery.as_ref().map(|p| p.due)
    }

    /// The pending step is due: the retry runs, or the compaction ends and the retry runs.
    pub(super) fn recovery_fire(&mut self) {
        let Some(pending) = self.recovery.take() else { return };
        match pending.step {
            Step::Retry if pending.fails_again => {
                let messages = self.failed_run(&pending.queued, pending.failure);
                if pending.attempt < pending.max_attempts {
                    let next = Pending { attempt: pending.attempt + 1, queued: Vec::new(), ..pending };
                    return self.announce_retry(next, messages);
                }
                let error = self.error_text(pending.failure);
                let end = obj! {"type": "auto_retry_end", "success": false, "attempt": pending.attempt, "finalError": error};
                match self.flavor {
                    Flavor::Pi => {
                        self.event(obj! {"type": "agent_end", "messages": J::Arr(messages)});
                        self.event(end);
                    }
                    Flavor::Omp => {
                        self.event(end.with("retryErrors", Agent::retry_errors(pending.attempt, false)));
                        self.end_work(messages);
                    }
                }
            }
            Step::Retry => {
                let messages = self.answer_run(&pending.queued);
                let answer = messages.last().cloned().unwrap_or(J::Null);
                let end = obj! {"type": "auto_retry_end", "success": true, "attempt": pending.attempt};
                match self.flavor {
                    Flavor::Pi => {
                        self.event(end);
                        self.event(obj! {"type": "turn_end", "message": answer, "toolResults": arr![]});
                        self.event(obj! {"type": "agent_end", "messages": J::Arr(messages)});
                    }
                    Flavor::Omp => {
                        self.event(obj! {"type": "turn_end", "message": answer, "toolResults": arr![]});
                        self.event(end.with("retryErrors", Agent::retry_errors(pending.attempt, true)));
                        self.end_work(messages);
                    }
                }
            }
            Step::Compaction => {
                match self.flavor {
                    Flavor::Pi => self.event(obj! {
                        "type": "compaction_end",
                        "reason": "overflow",
                        "result": obj! {"summary": "summary", "firstKeptEntryId": "entry-1", "tokensBefore": 2, "details": obj! {"readFiles": arr![], "modifiedFiles": arr![]}},
                        "aborted": false,
                        "willRetry": true,
                    }),
                    Flavor::Omp => self.event(obj! {
                        "type": "auto_compaction_end",
                        "action": "context-full",
                        "result": obj! {"summary": "summary", "shortSummary": "summary", "firstKeptEntryId": "entry-1", "tokensBefore": 17, "details": obj! {"readFiles": arr![], "modifiedFiles": arr![]}},
                        "aborted": false,
                        "willRetry": true,
                    }),
                }
                let messages = self.answer_run(&pending.queued);
                let answer = messages.last().cloned().unwrap_or(J::Null);
                self.event(obj! {"type": "turn_end", "message": answer, "toolResults": arr![]});
                self.end_work(messages);
            }
        }
    }

    /// Commands while the agent's own work is pending (false: not pending, or not one of these).
    pub(super) fn recovery_command(&mut self, cmd: &Cmd<'_>) -> bool {
        let Some(step) = self.recovery.as_ref().map(|p| p.step) else { return false };
        let (id, ty) = (&cmd.id, cmd.ty.as_str());
        // pi before 0.80.4 is idle by its own account in a retry's delay: it takes a prompt,
        // and the retry's run carries it.
        let takes_prompts = self.flavor == Flavor::Pi && !self.settles();
        match ty {
            "prompt" | "steer" | "follow_up" => {
                let message = cmd.str("message").unwrap_or_default();
                let queued = ty != "prompt" || cmd.str("streamingBehavior").is_ok();
                if !queued && !takes_prompts {
                    self.busy(cmd);
                    return true;
                }
                if let Some(p) = self.recovery.as_mut() {
                    p.queued.push(message);
                }
                if queued {
                    self.disposition = Some("queued");
                }
                if ty == "prompt" {
                    self.ack(id, ty);
                } else {
                    self.ok(id, ty, obj! {});
                }
            }
            "abort" | "abort_retry" => {
                match step {
                    Step::Retry => self.cancel_retry(cmd),
                    Step::Compaction if ty == "abort" => self.cancel_compaction(cmd),
                    // abort_retry leaves a compaction be.
                    Step::Compaction => self.ack(id, ty),
                }
            }
            _ => return false,
        }
        true
    }

    /// `abort` / `abort_retry` in a retry's delay: the retry is cancelled.
    fn cancel_retry(&mut self, cmd: &Cmd<'_>) {
        let Some(pending) = self.recovery.take() else { return };
        let (id, ty) = (&cmd.id, cmd.ty.as_str());
        let end = obj! {"type": "auto_retry_end", "success": false, "attempt": pending.attempt, "finalError": "Retry cancelled"};
        match (self.flavor, ty) {
            (Flavor::Pi, "abort") => {
                self.event(end);
                self.settle(true);
                self.ack(id, ty);
            }
            (Flavor::Pi, _) => {
                self.event(end);
                self.ack(id, ty);
                self.settle(false);
            }
            (Flavor::Omp, "abort") => {
                self.event(end);
                self.end_work(pending.failed_run);
                self.ack(id, ty);
            }
            (Flavor::Omp, _) => {
                self.ack(id, ty);
                self.event(end);
                self.end_work(pending.failed_run);
            }
        }
    }

    /// `abort` during an overflow compaction: omp ends it aborted, and the work with it; pi
    /// (0.73.1) answers and goes on compacting, then retries.
    fn cancel_compaction(&mut self, cmd: &Cmd<'_>) {
        if self.flavor == Flavor::Omp {
            if let Some(pending) = self.recovery.take() {
                self.event(obj! {"type": "auto_compaction_end", "action": "context-full", "aborted": true, "willRetry": false});
                self.end_work(pending.failed_run);
            }
        }
        self.ack(&cmd.id, &cmd.ty);
    }

    /// `get_state`'s `isStreaming` while work is pending (see the module comment).
    pub(super) fn recovery_streaming(&self) -> bool {
        match self.recovery.as_ref().map(|p| p.step) {
            None => false,
            Some(_) if self.flavor == Flavor::Omp => true,
            Some(Step::Retry) => self.settles(),
            Some(Step::Compaction) => false,
        }
    }

    /// `get_state`'s `isCompacting`.
    pub(super) fn compacting(&self) -> bool {
        self.recovery.as_ref().is_some_and(|p| p.step == Step::Compaction)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_and_their_delays() {
        assert!(matches!(Scenario::parse("retry once"), Some(Scenario::RetryOnce { failure: Failure::ServerError, delay_ms: 100 })));
        assert!(matches!(Scenario::parse("retry once 750"), Some(Scenario::RetryOnce { failure: Failure::ServerError, delay_ms: 750 })));
        assert!(matches!(Scenario::parse("rate limited 5"), Some(Scenario::RetryOnce { failure: Failure::RateLimit, delay_ms: 5 })));
        assert!(matches!(Scenario::parse("overflow"), Some(Scenario::Overflow { compaction_ms: 100 })));
        assert!(matches!(Scenario::parse("overflow 900"), Some(Scenario::Overflow { compaction_ms: 900 })));
        assert!(matches!(Scenario::parse("retry until abort"), Some(Scenario::RetryUntilAbort { delay_ms: 60_000 })));
        assert!(matches!(Scenario::parse("retry until abort 2000"), Some(Scenario::RetryUntilAbort { delay_ms: 2000 })));
        assert!(matches!(Scenario::parse("retries exhausted"), Some(Scenario::RetriesExhausted)));
        assert!(matches!(Scenario::parse("failed call"), Some(Scenario::FailedCall)));
        for other in ["retry", "retry once x", "failed call 5", "retries exhausted 5", "overflows", "say hello"] {
            assert!(Scenario::parse(other).is_none(), "{other}");
        }
    }
}
