//! Turn assembly: from a completed collector to the turn JSON of `prompt_and_wait` — the
//! events, the messages (a compacted `agent_end` rebuilt from the streamed `message_end`
//! messages, spec §1.4 / §4.9), the assistant message and its visible text.
//!
//! Runs on the waiting caller's thread, never on the reader, and copies event bytes once.

pub mod collect;
pub mod recovery;
pub mod summary;

use serde_json::value::RawValue;
use serde_json::Value;

pub use collect::{Collector, Fact, Mark, Outcome, Recovery as RecoveryMark, Run, Stop, TurnEvents};
use crate::error::{Error, Result, Status};
use crate::protocol::scan::Fields;

/// What a prompt_and_wait collector writes before the events: the turn object starts with
/// its `events` member, so the events are copied once, straight into the result.
pub const TURN_PREFIX: &[u8] = b"{\"events\":[";

/// The collected events as a JSON array (the collector was started with prefix `[`). The
/// bytes are validated frames joined by commas: UTF-8 JSON without NUL.
pub fn events_array(c: Collector) -> Result<Vec<u8>> {
    events_located(c).map(|(array, _)| array)
}

/// The collected events (the collector was started with prefix `[`) as that array and where
/// each event sits in it.
pub fn events_located(c: Collector) -> Result<(Vec<u8>, Vec<Span>)> {
    c.outcome.expect("collector is complete")?;
    let mut out = c.events;
    out.push(b']');
    Ok((out, c.offsets))
}

fn role(message: &[u8]) -> Option<String> {
    let mut f = Fields::new();
    f.scan(message, 0..message.len()).ok()?;
    f.str(message, "role").map(|r| r.into_owned())
}

/// The visible text of an assistant message: its text blocks concatenated, thinking excluded.
pub fn assistant_text(message: &Value) -> Option<String> {
    let text: String = match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect(),
        _ => String::new(),
    };
    (!text.is_empty()).then_some(text)
}

/// The transcript an `agent_end` stands for: its messages, preceded — when it was compacted
/// (`messageCount` > messages) — by the first streamed `message_end` messages it left out.
fn messages(agent_end: &[u8], streamed: &[Vec<u8>]) -> Result<Vec<Box<RawValue>>> {
    let mut f = Fields::new();
    f.scan(agent_end, 0..agent_end.len()).map_err(|e| Error::new(Status::Protocol, format!("agent_end: {e}")))?;
    let listed: Vec<Box<RawValue>> = match f.raw(agent_end, "messages") {
        None => Vec::new(),
        Some(raw) => serde_json::from_slice(raw)
            .map_err(|e| Error::new(Status::Protocol, format!("Failed to parse terminal agent_end messages: {e}")))?,
    };
    let count = f
        .raw(agent_end, "messageCount")
        .and_then(|r| std::str::from_utf8(r).ok()?.parse::<usize>().ok())
        .unwrap_or(listed.len());
    if count <= listed.len() {
        return Ok(listed);
    }
    let missing = count - listed.len();
    if streamed.len() < missing {
        return Err(Error::new(
            Status::Protocol,
            format!(
                "Compacted agent_end references {missing} streamed messages, but only {} were retained",
                streamed.len()
            ),
        ));
    }
    let mut out = raw_messages(&streamed[..missing])?;
    out.extend(listed);
    Ok(out)
}

/// Streamed `message_end` messages as JSON values.
fn raw_messages(streamed: &[Vec<u8>]) -> Result<Vec<Box<RawValue>>> {
    streamed
        .iter()
        .map(|m| {
            let raw = std::str::from_utf8(m).ok().and_then(|s| RawValue::from_string(s.to_string()).ok());
            raw.ok_or_else(|| Error::new(Status::Protocol, "a streamed message_end message is not JSON"))
        })
        .collect()
}

/// The assistant message of a turn: the last assistant in the messages, else the last event
/// carrying an assistant `message`.
fn find_assistant<'m>(messages: &'m [Box<RawValue>], events: &'m [u8], offsets: &[(usize, usize)]) -> Option<&'m [u8]> {
    if let Some(m) = messages.iter().rev().find(|m| role(m.get().as_bytes()).as_deref() == Some("assistant")) {
        return Some(m.get().as_bytes());
    }
    let mut f = Fields::new();
    for &(start, end) in offsets.iter().rev() {
        let ev = &events[start..end];
        if f.scan(ev, 0..ev.len()).is_ok() {
            if let Some(m) = f.raw(ev, "message") {
                if role(m).as_deref() == Some("assistant") {
                    return Some(m);
                }
            }
        }
    }
    None
}

/// The summary of the collected events (parsing each one: opt-in, as it costs a full parse).
/// The turn is complete when it is built, whatever its last event said.
fn summarize(c: &Collector, model: Option<String>) -> Value {
    let mut s = summary::Summarizer::new(model);
    for &(start, end) in &c.offsets {
        if let Ok(v) = serde_json::from_slice::<Value>(&c.events[start..end]) {
            s.feed(&v);
        }
    }
    let mut v = s.finish();
    v["complete"] = Value::Bool(true);
    v
}

/// The messages of the runs the turn held: each run's `agent_end` messages (a compacted one
/// rebuilt), oldest run first — the runs that started while collecting, else (a prompt queued
/// into a run that was live already) the last run.
fn turn_messages(runs: &[Run]) -> Result<Vec<Box<RawValue>>> {
    let started = runs.iter().filter(|r| r.started_here);
    let mine: Vec<&Run> = if started.clone().next().is_some() { started.collect() } else { runs.last().into_iter().collect() };
    let mut all = Vec::new();
    for r in mine {
        match &r.agent_end {
            Some(end) => all.extend(messages(end, &r.streamed)?),
            None => all.extend(raw_messages(&r.streamed)?),
        }
    }
    Ok(all)
}

/// The turn's record of attempts (turn::recovery) from the collector's facts; a run's last
/// assistant message is the last it streamed, else its `agent_end`'s.
fn record(c: &Collector) -> recovery::Recovery {
    let mut r = recovery::Recovery::new();
    for fact in &c.facts {
        match fact {
            Fact::Start => r.run_started(),
            Fact::End(i) => {
                let run = &c.runs[*i];
                let streamed = run.streamed.iter().rev().find(|m| role(m).as_deref() == Some("assistant"));
                let last = streamed
                    .and_then(|m| serde_json::from_slice::<Value>(m).ok())
                    .or_else(|| run.agent_end.as_deref().and_then(last_assistant_of));
                r.run_ended(last.as_ref());
            }
            Fact::Frame(f) => {
                if let Ok(v) = serde_json::from_slice::<Value>(f) {
                    r.frame(&v);
                }
            }
        }
    }
    r
}

/// The last assistant message of an `agent_end` frame, parsed.
fn last_assistant_of(agent_end: &[u8]) -> Option<Value> {
    let mut f = Fields::new();
    f.scan(agent_end, 0..agent_end.len()).ok()?;
    let list: Vec<Box<RawValue>> = serde_json::from_slice(f.raw(agent_end, "messages")?).ok()?;
    let last = list.iter().rev().find(|m| role(m.get().as_bytes()).as_deref() == Some("assistant"))?;
    serde_json::from_str(last.get()).ok()
}

/// A byte range of [`Turn::json`].
pub type Span = (usize, usize);

/// How a prompt completed (the C ABI's `omprpc_turn_outcome`; `name` in the turn JSON and the
/// `prompt_complete` event).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TurnOutcome {
    /// The last run's terminal `agent_end` ended it, and the agent did not go on (an agent that
    /// does not announce settling: omp, pi before 0.80.4).
    AgentEnd,
    /// omp's `prompt_result` frame answered it (a command that ran no agent loop).
    PromptResult,
    /// The prompt's response said nothing ran (`agentInvoked:false`, `disposition:"handled"`), or
    /// the agent proved idle with no run for it.
    NotInvoked,
    /// The agent said it settled (`agent_settled`, pi 0.80.4 on) after the prompt's runs.
    AgentSettled,
    /// It was aborted: `agent_settled {aborted:true}`, a retry the host aborted in its delay, or
    /// a last run that stopped `aborted`.
    Aborted,
}

impl TurnOutcome {
    /// The outcome's name in the turn JSON and the `prompt_complete` event (`"agent_end"`, …).
    pub fn name(self) -> &'static str {
        match self {
            TurnOutcome::AgentEnd => "agent_end",
            TurnOutcome::PromptResult => "prompt_result",
            TurnOutcome::NotInvoked => "not_invoked",
            TurnOutcome::AgentSettled => "agent_settled",
            TurnOutcome::Aborted => "aborted",
        }
    }
}

/// A completed turn: its JSON (what `prompt_and_wait` returns) and where its parts are in it,
/// so a caller reads the metadata and each event without parsing the JSON again.
pub struct Turn {
    /// The turn JSON: UTF-8 without NUL.
    pub json: Vec<u8>,
    /// Each retained event, verbatim.
    pub events: Vec<Span>,
    pub request_id: String,
    pub outcome: TurnOutcome,
    pub agent_invoked: bool,
    /// The `messages` array, and each message in it.
    pub messages: Span,
    pub message_spans: Vec<Span>,
    pub assistant_message: Option<Span>,
    /// The assistant message's visible text (text blocks, thinking excluded).
    pub assistant_text: Option<String>,
    /// The assistant message's `stopReason` and, for an error, its `errorMessage`.
    pub stop_reason: Option<String>,
    pub error_message: Option<String>,
    /// The assistant message's `usage` object.
    pub usage: Option<Span>,
    pub prompt_result: Option<Span>,
    pub summary: Option<Span>,
    /// How many attempts the agent made at the prompt (turn::recovery; 0 when nothing ran).
    pub attempts: u32,
    /// The agent said it settled (`agent_settled`).
    pub settled: bool,
    /// `failedAttempts` and `compactions` (JSON arrays).
    pub failed_attempts: Span,
    pub compactions: Span,
}

/// Where `part` (a subslice of `whole`) sits in it.
fn span_of(whole: &[u8], part: &[u8]) -> Span {
    let start = part.as_ptr() as usize - whole.as_ptr() as usize;
    (start, start + part.len())
}

/// The turn JSON for a completed prompt (UTF-8 JSON without NUL); with `summary`, a
/// `summary` member too (the model named is the configured one, for usage that does not name
/// its own).
pub fn build(request_id: &str, c: Collector, summary: Option<Option<String>>) -> Result<Vec<u8>> {
    build_turn(request_id, c, summary).map(|t| t.json)
}

/// [`build`], with the parts located.
pub fn build_turn(request_id: &str, mut c: Collector, summary: Option<Option<String>>) -> Result<Turn> {
    let summary = summary.map(|model| summarize(&c, model));
    let Outcome { how: outcome, agent_invoked, prompt_result } = c.outcome.take().expect("collector is complete")?;
    let msgs = match outcome {
        TurnOutcome::PromptResult | TurnOutcome::NotInvoked => Vec::new(),
        _ => turn_messages(&c.runs)?,
    };
    let rec = record(&c);
    let assistant = find_assistant(&msgs, &c.events, &c.offsets);
    let parsed = assistant.and_then(|a| serde_json::from_slice::<Value>(a).ok());
    let text = parsed.as_ref().and_then(assistant_text);
    let field = |name: &str| parsed.as_ref().and_then(|v| v[name].as_str()).map(str::to_string);
    let (stop_reason, error_message) = (field("stopReason"), field("errorMessage"));
    // The tail is appended to the events' buffer; `at` turns a tail offset into a turn offset.
    let at = c.events.len();
    let mut tail = String::with_capacity(256);
    tail.push_str("],\"requestId\":");
    tail.push_str(&Value::String(request_id.to_string()).to_string());
    tail.push_str(",\"outcome\":\"");
    tail.push_str(outcome.name());
    tail.push_str("\",\"agentInvoked\":");
    tail.push_str(if agent_invoked { "true" } else { "false" });
    tail.push_str(",\"attempts\":");
    tail.push_str(&rec.attempts().to_string());
    tail.push_str(",\"settled\":");
    tail.push_str(if rec.settled().is_some() { "true" } else { "false" });
    tail.push_str(",\"failedAttempts\":");
    let failed_start = at + tail.len();
    tail.push_str(&rec.failed_attempts().to_string());
    let failed_attempts = (failed_start, at + tail.len());
    tail.push_str(",\"compactions\":");
    let compactions_start = at + tail.len();
    tail.push_str(&rec.compactions().to_string());
    let compactions = (compactions_start, at + tail.len());
    tail.push_str(",\"messages\":");
    let messages_start = at + tail.len();
    tail.push('[');
    let mut message_spans = Vec::with_capacity(msgs.len());
    for (i, m) in msgs.iter().enumerate() {
        if i > 0 {
            tail.push(',');
        }
        let start = at + tail.len();
        tail.push_str(m.get());
        message_spans.push((start, at + tail.len()));
    }
    tail.push(']');
    let messages_span = (messages_start, at + tail.len());
    tail.push_str(",\"assistantMessage\":");
    let assistant_text_json = assistant.and_then(|a| std::str::from_utf8(a).ok());
    let assistant_span = assistant_text_json.map(|a| {
        let start = at + tail.len();
        (start, start + a.len())
    });
    tail.push_str(assistant_text_json.unwrap_or("null"));
    tail.push_str(",\"assistantText\":");
    tail.push_str(&text.clone().map(Value::String).unwrap_or(Value::Null).to_string());
    tail.push_str(",\"promptResult\":");
    let prompt_text = prompt_result.as_deref().and_then(|p| std::str::from_utf8(p).ok());
    let prompt_span = prompt_text.map(|p| {
        let start = at + tail.len();
        (start, start + p.len())
    });
    tail.push_str(prompt_text.unwrap_or("null"));
    let mut summary_span = None;
    if let Some(s) = summary {
        tail.push_str(",\"summary\":");
        let start = at + tail.len();
        tail.push_str(&s.to_string());
        summary_span = Some((start, at + tail.len()));
    }
    tail.push('}');
    drop(msgs);
    let mut json = c.events;
    json.extend_from_slice(tail.as_bytes());
    let usage = assistant_span.and_then(|(start, end)| {
        let mut f = Fields::new();
        f.scan(&json, start..end).ok()?;
        f.raw(&json, "usage").map(|u| span_of(&json, u))
    });
    Ok(Turn {
        events: c.offsets,
        request_id: request_id.to_string(),
        outcome,
        agent_invoked,
        messages: messages_span,
        message_spans,
        assistant_message: assistant_span,
        assistant_text: text,
        stop_reason,
        error_message,
        usage,
        prompt_result: prompt_span,
        summary: summary_span,
        attempts: rec.attempts(),
        settled: rec.settled().is_some(),
        failed_attempts,
        compactions,
        json,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The collector a prompt_and_wait would have after `frames`, ended by the first terminal
    /// `agent_end` as the lifecycle ends it for an agent that does not announce settling.
    fn run(frames: &[&str]) -> Collector {
        run_as(frames, false)
    }

    /// … or, `settling`, by the `agent_settled`.
    fn run_as(frames: &[&str], settling: bool) -> Collector {
        let mut c = Collector::new(None, TURN_PREFIX, None, None, TurnEvents::All);
        for fr in frames {
            let v: Value = serde_json::from_str(fr).unwrap();
            let message = v["message"].to_string();
            let mark = match v["type"].as_str().unwrap() {
                "agent_start" => Mark::AgentStart,
                "agent_end" => Mark::AgentEnd { terminal: v["isTerminal"] != false, will_retry: false },
                "message_end" => Mark::MessageEnd { message: message.as_bytes(), stop: Stop::NotAssistant },
                "auto_retry_start" => Mark::Recovery(RecoveryMark::RetryStart),
                "agent_settled" => Mark::Recovery(RecoveryMark::Settled { aborted: v["aborted"] == true }),
                _ => Mark::Other,
            };
            c.retain(fr.as_bytes(), &mark);
            match mark {
                Mark::AgentEnd { terminal: true, .. } if !settling => {
                    c.finish(Ok(Outcome { how: TurnOutcome::AgentEnd, agent_invoked: true, prompt_result: None }))
                }
                Mark::Recovery(RecoveryMark::Settled { aborted }) => c.finish(Ok(Outcome {
                    how: if aborted { TurnOutcome::Aborted } else { TurnOutcome::AgentSettled },
                    agent_invoked: true,
                    prompt_result: None,
                })),
                _ => {}
            }
        }
        c
    }

    const PONG: &str = r#"{"role":"assistant","content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"po"},{"type":"text","text":"ng"}]}"#;

    #[test]
    fn plain_turn() {
        let end = format!(r#"{{"type":"agent_end","messages":[{PONG}]}}"#);
        let c = run(&[r#"{"type":"agent_start"}"#, &end]);
        let t: Value = serde_json::from_slice(&build("req_1", c, Some(None)).unwrap()).unwrap();
        assert_eq!(t["summary"]["finalText"], "pong");
        assert_eq!(t["assistantText"], "pong");
        assert_eq!(t["events"].as_array().unwrap().len(), 2);
        assert_eq!(t["messages"].as_array().unwrap().len(), 1);
        assert_eq!(t["requestId"], "req_1");
    }

    #[test]
    fn compacted_agent_end_is_rebuilt() {
        let me = format!(r#"{{"type":"message_end","message":{PONG}}}"#);
        let term = r#"{"role":"custom","content":"terminal"}"#;
        let me2 = format!(r#"{{"type":"message_end","message":{term}}}"#);
        let end = format!(r#"{{"type":"agent_end","messages":[{term}],"messageCount":2}}"#);
        let c = run(&[r#"{"type":"agent_start"}"#, &me, &me2, &end]);
        let t: Value = serde_json::from_slice(&build("r", c, None).unwrap()).unwrap();
        let roles: Vec<_> = t["messages"].as_array().unwrap().iter().map(|m| m["role"].clone()).collect();
        assert_eq!(roles, [Value::from("assistant"), Value::from("custom")]);
        assert_eq!(t["assistantText"], "pong");
    }

    #[test]
    fn compaction_needs_enough_streamed_messages() {
        let end = r#"{"type":"agent_end","messages":[],"messageCount":3}"#;
        let c = run(&[r#"{"type":"agent_start"}"#, end]);
        let e = build("r", c, None).unwrap_err();
        assert!(e.message.contains("references 3 streamed messages, but only 0 were retained"));
    }

    /// Every located part is the same bytes the turn JSON holds at that member.
    #[test]
    fn the_parts_of_a_turn_are_located_in_its_json() {
        let pong = r#"{"role":"assistant","content":[{"type":"text","text":"pong"}],"usage":{"input":1,"output":2},"stopReason":"stop"}"#;
        let end = format!(r#"{{"type":"agent_end","messages":[{pong}]}}"#);
        let c = run(&[r#"{"type":"agent_start"}"#, r#"{"type":"turn_start"}"#, &end]);
        let t = build_turn("req_9", c, Some(None)).unwrap();
        let v: Value = serde_json::from_slice(&t.json).unwrap();
        let part = |s: Span| -> Value { serde_json::from_slice(&t.json[s.0..s.1]).unwrap() };
        assert_eq!(t.events.len(), 3);
        for (i, &s) in t.events.iter().enumerate() {
            assert_eq!(part(s), v["events"][i]);
        }
        assert_eq!(part(t.messages), v["messages"]);
        assert_eq!(t.message_spans.iter().map(|&s| part(s)).collect::<Vec<_>>(), *v["messages"].as_array().unwrap());
        assert_eq!(part(t.assistant_message.unwrap()), v["assistantMessage"]);
        assert_eq!(part(t.usage.unwrap()), serde_json::json!({"input":1,"output":2}));
        assert_eq!(part(t.summary.unwrap()), v["summary"]);
        assert_eq!((t.outcome, t.agent_invoked, t.request_id.as_str()), (TurnOutcome::AgentEnd, true, "req_9"));
        assert_eq!((t.assistant_text.as_deref(), t.stop_reason.as_deref(), t.error_message), (Some("pong"), Some("stop"), None));
        assert!(t.prompt_result.is_none());
    }

    #[test]
    fn a_prompt_result_turn_has_no_messages() {
        let mut c = Collector::new(None, TURN_PREFIX, None, None, TurnEvents::All);
        let pr = r#"{"type":"prompt_result","id":"r","agentInvoked":false}"#;
        c.retain(pr.as_bytes(), &Mark::Other);
        c.finish(Ok(Outcome { how: TurnOutcome::PromptResult, agent_invoked: false, prompt_result: Some(pr.as_bytes().to_vec()) }));
        let t = build_turn("r", c, None).unwrap();
        assert_eq!((t.outcome, t.agent_invoked), (TurnOutcome::PromptResult, false));
        assert_eq!(&t.json[t.messages.0..t.messages.1], b"[]");
        assert_eq!(&t.json[t.prompt_result.unwrap().0..t.prompt_result.unwrap().1], pr.as_bytes());
        assert!(t.assistant_message.is_none() && t.usage.is_none() && t.summary.is_none());
    }

    #[test]
    fn a_retried_turn_holds_every_run_and_records_the_failed_attempt() {
        // pi 1.6.0 after an HTTP 500 (recorded): the failed run, the retry's run, agent_settled.
        let failed = r#"{"role":"assistant","content":[],"stopReason":"error","errorMessage":"500: boom"}"#;
        let ok = r#"{"role":"assistant","content":[{"type":"text","text":"hi there"}],"stopReason":"stop"}"#;
        let end1 = format!(r#"{{"type":"agent_end","messages":[{{"role":"user","content":"hello"}},{failed}],"willRetry":true}}"#);
        let end2 = format!(r#"{{"type":"agent_end","messages":[{ok}],"willRetry":false}}"#);
        let c = run_as(
            &[
                r#"{"type":"agent_start"}"#,
                &end1,
                r#"{"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":2000,"errorMessage":"500: boom"}"#,
                r#"{"type":"agent_start"}"#,
                &end2,
                r#"{"type":"agent_settled","aborted":false}"#,
            ],
            true,
        );
        let t = build_turn("req_1", c, Some(None)).unwrap();
        let v: Value = serde_json::from_slice(&t.json).unwrap();
        assert_eq!((t.outcome, t.attempts, t.settled), (TurnOutcome::AgentSettled, 2, true));
        assert_eq!(v["outcome"], "agent_settled");
        assert_eq!(v["messages"].as_array().unwrap().len(), 3, "both runs' messages");
        assert_eq!(v["assistantText"], "hi there");
        assert_eq!(v["failedAttempts"], serde_json::json!([{"attempt": 1, "error": "500: boom", "then": "retry", "delayMs": 2000}]));
        assert_eq!(&t.json[t.failed_attempts.0..t.failed_attempts.1], v["failedAttempts"].to_string().as_bytes());
        assert_eq!(&t.json[t.compactions.0..t.compactions.1], b"[]");
        assert_eq!(v["summary"]["complete"], true);
        // With no events retained the record is the same: it comes from the collector's facts.
        let mut c = Collector::new(None, TURN_PREFIX, None, None, TurnEvents::None);
        for (fr, mark) in [
            (r#"{"type":"agent_start"}"#, Mark::AgentStart),
            (end1.as_str(), Mark::AgentEnd { terminal: true, will_retry: true }),
            (r#"{"type":"auto_retry_start","delayMs":2000}"#, Mark::Recovery(RecoveryMark::RetryStart)),
            (r#"{"type":"agent_start"}"#, Mark::AgentStart),
            (end2.as_str(), Mark::AgentEnd { terminal: true, will_retry: false }),
        ] {
            c.retain(fr.as_bytes(), &mark);
        }
        c.finish(Ok(Outcome { how: TurnOutcome::AgentEnd, agent_invoked: true, prompt_result: None }));
        let t = build_turn("req_1", c, None).unwrap();
        let v: Value = serde_json::from_slice(&t.json).unwrap();
        assert_eq!((v["attempts"].as_u64(), v["failedAttempts"][0]["error"].as_str()), (Some(2), Some("500: boom")));
        assert_eq!(v["events"], serde_json::json!([]));
    }

    #[test]
    fn omp_a_run_started_again_without_its_end_keeps_its_streamed_messages() {
        // omp 18.2.3 (recorded): the failed run's agent_end is held back; the last one lists only
        // the last run's messages.
        let user = r#"{"role":"user","content":"flaky"}"#;
        let failed = r#"{"role":"assistant","content":[],"stopReason":"error","errorMessage":"500"}"#;
        let ok = r#"{"role":"assistant","content":[{"type":"text","text":"recovered"}],"stopReason":"stop"}"#;
        let me = |m: &str| format!(r#"{{"type":"message_end","message":{m}}}"#);
        let mut c = Collector::new(None, TURN_PREFIX, None, None, TurnEvents::All);
        let end = format!(r#"{{"type":"agent_end","messages":[{ok}],"isTerminal":true}}"#);
        for (fr, mark) in [
            (r#"{"type":"agent_start"}"#.to_string(), Mark::AgentStart),
            (me(user), Mark::MessageEnd { message: user.as_bytes(), stop: Stop::NotAssistant }),
            (me(failed), Mark::MessageEnd { message: failed.as_bytes(), stop: Stop::Error }),
            (r#"{"type":"auto_retry_start","delayMs":400.5}"#.to_string(), Mark::Recovery(RecoveryMark::RetryStart)),
            (r#"{"type":"agent_start"}"#.to_string(), Mark::AgentStart),
            (me(ok), Mark::MessageEnd { message: ok.as_bytes(), stop: Stop::Normal }),
            (end.clone(), Mark::AgentEnd { terminal: true, will_retry: false }),
        ] {
            c.retain(fr.as_bytes(), &mark);
        }
        c.finish(Ok(Outcome { how: TurnOutcome::AgentEnd, agent_invoked: true, prompt_result: None }));
        let t: Value = serde_json::from_slice(&build("r", c, None).unwrap()).unwrap();
        let stops: Vec<Value> = t["messages"].as_array().unwrap().iter().map(|m| m["stopReason"].clone()).collect();
        assert_eq!(stops, [Value::Null, Value::from("error"), Value::from("stop")]);
        assert_eq!(t["assistantText"], "recovered");
        assert_eq!(t["failedAttempts"], serde_json::json!([{"attempt": 1, "error": "500", "then": "retry", "delayMs": 401}]));
        assert_eq!(t["attempts"], 2);
    }

    #[test]
    fn assistant_falls_back_to_events() {
        let upd = format!(r#"{{"type":"message_update","message":{PONG}}}"#);
        let c = run(&[&upd, r#"{"type":"agent_end","messages":[]}"#]);
        let t: Value = serde_json::from_slice(&build("r", c, None).unwrap()).unwrap();
        assert_eq!(t["assistantText"], "pong");
    }
}
