//! The derived stream and the turn summary: what most hosts want from a turn without
//! interpreting every raw event — text and reasoning in arrival order (never mixed), tool
//! calls paired by `toolCallId` with their outcome (a call another tool made — pi's codemode
//! scripts — names its caller in `parentToolCallId`, and the caller lists it in `children`),
//! stop reasons, the final text both as the
//! last assistant message and as all the text, and usage per message and per turn.
//!
//! It also keeps the turn's record of attempts (turn::recovery): the failed attempts and what
//! the agent did about each, the compactions, and derived items for them (`retry` when the agent
//! waits to retry, `retry_end`, `compaction` when a compaction ends, `settled`).
//!
//! Usage rules: token counts are summed across the turn's LLM calls (each call bills its full
//! input); `contextTokens` is the last call's total (rebuilt from its parts when that is 0);
//! the model is the message's, else the configured one; when no `message_end` carried usage,
//! the last assistant message of `agent_end` is used; a turn whose calls report no input and no
//! output has `usage: null`, never a zero-filled record.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use crate::turn::assistant_text;
use crate::turn::recovery::Recovery;

#[derive(Default, Clone, Copy)]
struct Tokens {
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
    total: u64,
    cost: f64,
}

impl Tokens {
    fn of(usage: &Value) -> Option<Tokens> {
        let u = usage.as_object()?;
        let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
        Some(Tokens {
            input: n("input"),
            output: n("output"),
            cache_read: n("cacheRead"),
            cache_write: n("cacheWrite"),
            total: n("totalTokens"),
            cost: u.get("cost").and_then(|c| c.get("total")).and_then(Value::as_f64).unwrap_or(0.0),
        })
    }

    fn total_or_parts(&self) -> u64 {
        if self.total > 0 {
            self.total
        } else {
            self.input + self.output + self.cache_read + self.cache_write
        }
    }

    fn to_json(self, model: Option<&str>) -> Value {
        json!({"inputTokens": self.input, "outputTokens": self.output, "cacheReadTokens": self.cache_read,
               "cacheWriteTokens": self.cache_write, "totalTokens": self.total_or_parts(), "cost": self.cost, "model": model})
    }
}

struct Tool {
    id: String,
    name: String,
    args: Value,
    outcome: Option<&'static str>,
    result: Value,
    reason: Option<String>,
    /// The call that made this one (pi 0.99 on: a codemode script's inner calls), else None.
    parent: Option<String>,
}

/// Feeds on raw events, in order; yields derived items and, at the end, the summary.
#[derive(Default)]
pub struct Summarizer {
    configured_model: Option<String>,
    chunks: Vec<(bool, String)>,
    text: String,
    reasoning: String,
    tools: Vec<Tool>,
    tool_index: HashMap<String, usize>,
    blocked: HashMap<String, String>,
    stop_reasons: Vec<Value>,
    last_stop: Option<String>,
    final_text: Option<String>,
    calls: Vec<(Tokens, Option<String>)>,
    message_usage: Vec<Value>,
    agent_end_fallback: Option<(Tokens, Option<String>)>,
    complete: bool,
    recovery: Recovery,
    /// The last assistant message of the current run ended so (for the record's failed attempt).
    last_assistant: Option<Value>,
}

fn s(v: &Value) -> Option<&str> {
    v.as_str()
}

/// The call that made a tool event's call: pi (0.99 on) sets `parentToolCallId` on every
/// `tool_execution_*` event of a call another tool made (`ctx.executeTool`, codemode scripts).
fn parent_of(ev: &Value) -> Option<String> {
    s(&ev["parentToolCallId"]).filter(|p| !p.is_empty()).map(str::to_string)
}

impl Summarizer {
    pub fn new(configured_model: Option<String>) -> Self {
        Summarizer { configured_model, ..Default::default() }
    }

    fn chunk(&mut self, reasoning: bool, delta: &str) {
        if delta.is_empty() {
            return;
        }
        if reasoning {
            self.reasoning.push_str(delta);
        } else {
            self.text.push_str(delta);
        }
        match self.chunks.last_mut() {
            Some((r, t)) if *r == reasoning => t.push_str(delta),
            _ => self.chunks.push((reasoning, delta.to_string())),
        }
    }

    /// One raw event; returns the derived items it produces (possibly none).
    pub fn feed(&mut self, ev: &Value) -> Vec<Value> {
        let mut out = Vec::new();
        match ev["type"].as_str().unwrap_or("") {
            "message_update" => {
                let a = &ev["assistantMessageEvent"];
                match a["type"].as_str().unwrap_or("") {
                    "text_delta" => {
                        let d = s(&a["delta"]).unwrap_or("");
                        self.chunk(false, d);
                        out.push(json!({"kind": "text", "text": d}));
                    }
                    "thinking_start" => out.push(json!({"kind": "reasoning_start"})),
                    "thinking_delta" => {
                        let d = s(&a["delta"]).unwrap_or("");
                        self.chunk(true, d);
                        out.push(json!({"kind": "reasoning", "text": d}));
                    }
                    _ => {}
                }
            }
            "tool_execution_start" => {
                let id = s(&ev["toolCallId"]).unwrap_or("").to_string();
                let name = s(&ev["toolName"]).unwrap_or("").to_string();
                let parent = parent_of(ev);
                self.tool_index.insert(id.clone(), self.tools.len());
                self.tools.push(Tool {
                    id: id.clone(),
                    name: name.clone(),
                    args: ev["args"].clone(),
                    outcome: None,
                    result: Value::Null,
                    reason: None,
                    parent: parent.clone(),
                });
                out.push(json!({"kind": "tool_start", "toolCallId": id, "toolName": name, "args": ev["args"], "parentToolCallId": parent}));
            }
            "tool_execution_update" => {
                out.push(json!({"kind": "tool_update", "toolCallId": ev["toolCallId"], "partialResult": ev["partialResult"],
                                "parentToolCallId": parent_of(ev)}));
            }
            "tool_blocked" => {
                if let Some(id) = s(&ev["toolCallId"]) {
                    self.blocked.insert(id.to_string(), s(&ev["reason"]).unwrap_or("blocked").to_string());
                }
            }
            "tool_execution_end" => {
                let id = s(&ev["toolCallId"]).unwrap_or("").to_string();
                let is_error = ev["isError"] == true || ev["result"]["isError"] == true;
                let (outcome, reason) = match self.blocked.get(&id) {
                    Some(r) => ("blocked", Some(r.clone())),
                    None if is_error => ("error", None),
                    None => ("success", None),
                };
                let i = match self.tool_index.get(&id) {
                    Some(&i) => i,
                    None => {
                        // An end without a start (e.g. blocked before it ran): pair it anyway.
                        self.tool_index.insert(id.clone(), self.tools.len());
                        self.tools.push(Tool {
                            id: id.clone(),
                            name: String::new(),
                            args: Value::Null,
                            outcome: None,
                            result: Value::Null,
                            reason: None,
                            parent: parent_of(ev),
                        });
                        self.tools.len() - 1
                    }
                };
                let t = &mut self.tools[i];
                if t.name.is_empty() {
                    t.name = s(&ev["toolName"]).unwrap_or("").to_string();
                }
                if t.parent.is_none() {
                    t.parent = parent_of(ev);
                }
                t.outcome = Some(outcome);
                t.result = ev["result"].clone();
                t.reason = reason.clone();
                out.push(json!({"kind": "tool_end", "toolCallId": id, "toolName": t.name, "outcome": outcome,
                                "result": ev["result"], "reason": reason, "parentToolCallId": t.parent}));
            }
            "agent_start" => {
                self.recovery.run_started();
                self.last_assistant = None;
            }
            "auto_retry_start" => {
                self.recovery.frame(ev);
                out.push(json!({"kind": "retry", "attempt": ev["attempt"], "maxAttempts": ev["maxAttempts"],
                                "delayMs": ev["delayMs"], "error": ev["errorMessage"]}));
            }
            "auto_retry_end" => {
                self.recovery.frame(ev);
                out.push(json!({"kind": "retry_end", "success": ev["success"] != false, "attempt": ev["attempt"],
                                "finalError": ev["finalError"]}));
            }
            "compaction_start" | "auto_compaction_start" => self.recovery.frame(ev),
            "compaction_end" | "auto_compaction_end" => {
                self.recovery.frame(ev);
                // The record's entry: its reason comes from the start (omp's end has none).
                let mut item = self.recovery.last_compaction();
                item["kind"] = json!("compaction");
                out.push(item);
            }
            "agent_settled" => {
                self.recovery.frame(ev);
                self.complete = true;
                out.push(json!({"kind": "settled", "aborted": ev["aborted"] == true}));
            }
            "message_end" => {
                let m = &ev["message"];
                if m["role"] == "assistant" || (m.get("role").is_none() && m.get("stopReason").is_some()) {
                    self.last_assistant = Some(json!({"stopReason": m["stopReason"], "errorMessage": m["errorMessage"]}));
                    self.recovery.frame(ev);
                    let model = s(&m["model"]).map(str::to_string);
                    let stop = s(&m["stopReason"]).map(str::to_string);
                    let usage = Tokens::of(&m["usage"]);
                    if let Some(u) = usage {
                        let shown = model.clone().or_else(|| self.configured_model.clone());
                        self.message_usage.push(u.to_json(shown.as_deref()));
                        self.calls.push((u, model.clone()));
                    }
                    if let Some(text) = assistant_text(m) {
                        self.final_text = Some(text);
                    }
                    if let Some(r) = &stop {
                        if matches!(r.as_str(), "error" | "aborted" | "length") {
                            let item = json!({"kind": "stop", "reason": r, "errorMessage": m["errorMessage"]});
                            self.stop_reasons.push(item.clone());
                            out.push(item);
                        }
                    }
                    self.last_stop = stop.or(self.last_stop.take());
                    out.push(json!({"kind": "message_end", "stopReason": m["stopReason"],
                                    "usage": usage.map(|u| u.to_json(model.as_deref().or(self.configured_model.as_deref())))}));
                }
            }
            "agent_end" => {
                let last = ev["messages"].as_array().and_then(|ms| ms.iter().rev().find(|m| m["role"] == "assistant"));
                let streamed = self.last_assistant.take();
                self.recovery.run_ended(streamed.as_ref().or(last));
                if let Some(m) = last {
                    if self.final_text.is_none() {
                        self.final_text = assistant_text(m);
                    }
                    // Only the last assistant message: `messages` may hold the whole history.
                    if let Some(u) = Tokens::of(&m["usage"]) {
                        self.agent_end_fallback = Some((u, s(&m["model"]).map(str::to_string)));
                    }
                }
                // Complete unless the agent goes on (isTerminal:false, willRetry:true), or it
                // failed and the agent may still retry or compact (the client's lifecycle decides;
                // a turn's summary is complete when the turn is built).
                // `terminal`: the agent said nothing more follows this run (not omp's
                // isTerminal:false, not pi's willRetry:true); the prompt's end is still the
                // client's to say (prompt_complete).
                let failed = streamed.as_ref().or(last).is_some_and(|m| m["stopReason"] == "error");
                let terminal = ev["isTerminal"] != false && ev["willRetry"] != true;
                if terminal && !failed {
                    self.complete = true;
                }
                out.push(json!({"kind": "turn_end", "terminal": terminal}));
            }
            _ => {}
        }
        out
    }

    fn usage(&self) -> Value {
        let calls: Vec<(Tokens, Option<String>)> = if self.calls.is_empty() {
            self.agent_end_fallback.clone().into_iter().collect()
        } else {
            self.calls.clone()
        };
        let Some((last, _)) = calls.last() else { return Value::Null };
        let mut sum = Tokens::default();
        for (t, _) in &calls {
            sum.input += t.input;
            sum.output += t.output;
            sum.cache_read += t.cache_read;
            sum.cache_write += t.cache_write;
            sum.total += t.total_or_parts();
            sum.cost += t.cost;
        }
        if sum.input == 0 && sum.output == 0 {
            return Value::Null;
        }
        let model = calls.iter().rev().find_map(|(_, m)| m.clone()).or_else(|| self.configured_model.clone());
        let mut v = sum.to_json(model.as_deref());
        v["contextTokens"] = json!(last.total_or_parts());
        v["calls"] = json!(calls.len());
        v
    }

    /// The summary of everything fed so far.
    pub fn finish(&self) -> Value {
        // Each call's inner calls, in the order they started: with `parentToolCallId` this makes
        // the flat list a tree a host can render without a second pass over the events.
        let mut children: HashMap<&str, Vec<&str>> = HashMap::new();
        for t in &self.tools {
            if let Some(p) = &t.parent {
                children.entry(p.as_str()).or_default().push(&t.id);
            }
        }
        let tools: Vec<Value> = self
            .tools
            .iter()
            .map(|t| {
                let mut m = Map::new();
                m.insert("toolCallId".into(), json!(t.id));
                m.insert("toolName".into(), json!(t.name));
                m.insert("args".into(), t.args.clone());
                m.insert("outcome".into(), json!(t.outcome.unwrap_or("pending")));
                m.insert("result".into(), t.result.clone());
                m.insert("reason".into(), json!(t.reason));
                m.insert("parentToolCallId".into(), json!(t.parent));
                m.insert("children".into(), json!(children.get(t.id.as_str()).cloned().unwrap_or_default()));
                Value::Object(m)
            })
            .collect();
        let chunks: Vec<Value> = self
            .chunks
            .iter()
            .map(|(r, t)| json!({"kind": if *r { "reasoning" } else { "text" }, "text": t}))
            .collect();
        json!({
            "complete": self.complete,
            "text": self.text,
            "finalText": self.final_text,
            "reasoning": self.reasoning,
            "chunks": chunks,
            "toolCalls": tools,
            "stopReason": self.last_stop,
            "stopReasons": self.stop_reasons,
            "usage": self.usage(),
            "messageUsage": self.message_usage,
            "attempts": self.recovery.attempts(),
            "failedAttempts": self.recovery.failed_attempts(),
            "compactions": self.recovery.compactions(),
        })
    }
}

/// The summary of a list of raw events.
pub fn summarize(events: &[Value], configured_model: Option<String>) -> Value {
    let mut s = Summarizer::new(configured_model);
    for e in events {
        s.feed(e);
    }
    s.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(text: &str, model: Option<&str>, u: (u64, u64, u64, u64, u64)) -> Value {
        let mut m = json!({"role": "assistant", "content": [{"type": "text", "text": text}], "stopReason": "stop",
            "usage": {"input": u.0, "output": u.1, "cacheRead": u.2, "cacheWrite": u.3, "totalTokens": u.4,
                      "cost": {"total": 0.5}}});
        if let Some(model) = model {
            m["model"] = json!(model);
        }
        m
    }

    #[test]
    fn usage_from_one_message_end() {
        let s = summarize(
            &[json!({"type": "message_end", "message": msg("Done.", Some("claude-sonnet-4-6"), (1200, 350, 800, 64, 2414))}),
              json!({"type": "agent_end", "messages": []})],
            None,
        );
        let u = &s["usage"];
        assert_eq!((u["inputTokens"].as_u64(), u["outputTokens"].as_u64(), u["totalTokens"].as_u64()), (Some(1200), Some(350), Some(2414)));
        assert_eq!((u["cacheReadTokens"].as_u64(), u["cacheWriteTokens"].as_u64()), (Some(800), Some(64)));
        assert_eq!(u["model"], "claude-sonnet-4-6");
        assert_eq!(s["finalText"], "Done.");
        assert_eq!(s["complete"], true);
    }

    #[test]
    fn usage_sums_calls_and_context_is_the_last_total() {
        let s = summarize(
            &[json!({"type": "message_end", "message": msg("", Some("m"), (1000, 200, 500, 50, 1750))}),
              json!({"type": "message_end", "message": msg("Done.", Some("m"), (1200, 350, 800, 64, 2414))}),
              json!({"type": "agent_end", "messages": []})],
            None,
        );
        let u = &s["usage"];
        assert_eq!(u["inputTokens"], 2200);
        assert_eq!(u["outputTokens"], 550);
        assert_eq!(u["totalTokens"], 4164);
        assert_eq!(u["cacheReadTokens"], 1300);
        assert_eq!(u["cacheWriteTokens"], 114);
        assert_eq!(u["contextTokens"], 2414);
        assert_eq!(u["calls"], 2);
        assert_eq!(s["messageUsage"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn usage_falls_back_to_agent_end_and_configured_model() {
        let s = summarize(&[json!({"type": "agent_end", "messages": [
            {"role": "assistant", "content": [], "usage": {"input": 1, "output": 1, "totalTokens": 2}},
            msg("Final", Some("claude-sonnet-4-6"), (42, 7, 0, 0, 49))]})], None);
        assert_eq!(s["usage"]["inputTokens"], 42);
        assert_eq!(s["usage"]["totalTokens"], 49);
        assert_eq!(s["usage"]["model"], "claude-sonnet-4-6");
        assert_eq!(s["finalText"], "Final");
        let s = summarize(&[json!({"type": "message_end", "message": msg("x", None, (1, 1, 0, 0, 0))})], Some("configured".into()));
        assert_eq!(s["usage"]["model"], "configured");
        assert_eq!(s["usage"]["contextTokens"], 2, "rebuilt from the parts when totalTokens is 0");
        assert_eq!(s["complete"], false, "no agent_end yet");
    }

    #[test]
    fn no_usage_means_null_not_zeros() {
        let s = summarize(&[json!({"type": "message_update", "assistantMessageEvent": {"type": "text_delta", "delta": "Hi there"}}),
            json!({"type": "message_end", "message": {"stopReason": "stop"}}), json!({"type": "agent_end", "messages": []})], None);
        assert_eq!(s["usage"], Value::Null);
        assert_eq!(s["text"], "Hi there");
    }

    #[test]
    fn a_retried_turn_lists_its_failed_attempt_and_derives_retry_items() {
        // pi 0.73.1, recorded (abridged): the failed run, auto_retry_start, the retry's run.
        let err = json!({"role": "assistant", "content": [], "stopReason": "error", "errorMessage": "500 boom"});
        let mut sm = Summarizer::new(None);
        let mut kinds = Vec::new();
        for e in [json!({"type": "agent_start"}),
                  json!({"type": "message_end", "message": err}),
                  json!({"type": "agent_end", "messages": [err]}),
                  json!({"type": "auto_retry_start", "attempt": 1, "maxAttempts": 3, "delayMs": 2000, "errorMessage": "500 boom"}),
                  json!({"type": "agent_start"}),
                  json!({"type": "message_end", "message": msg("hi there", None, (12, 5, 0, 0, 17))}),
                  json!({"type": "auto_retry_end", "success": true, "attempt": 1}),
                  json!({"type": "agent_end", "messages": [msg("hi there", None, (12, 5, 0, 0, 17))]}),
                  json!({"type": "auto_compaction_start", "reason": "threshold"}),
                  json!({"type": "auto_compaction_end", "aborted": false, "willRetry": false})] {
            for item in sm.feed(&e) {
                kinds.push(item["kind"].as_str().unwrap().to_string());
            }
        }
        assert!(kinds.contains(&"retry".to_string()) && kinds.contains(&"retry_end".to_string()), "{kinds:?}");
        let compaction = sm.feed(&json!({"type": "auto_compaction_end", "aborted": false}));
        assert_eq!(compaction[0]["kind"], "compaction");
        assert_eq!(sm.finish()["compactions"][0]["reason"], "threshold", "omp's end names no reason: the start's stands");
        let s = sm.finish();
        assert_eq!(s["attempts"], 2);
        assert_eq!(s["failedAttempts"], json!([{"attempt": 1, "error": "500 boom", "then": "retry", "delayMs": 2000}]));
        assert_eq!(s["finalText"], "hi there");
        assert_eq!(s["complete"], true);
        assert_eq!(s["stopReasons"][0]["reason"], "error", "the failed attempt's stop is still listed");
    }

    #[test]
    fn chunks_keep_order_and_reasoning_apart_and_tools_pair() {
        let mut sm = Summarizer::new(None);
        let d = |t: &str, x: &str| json!({"type": "message_update", "assistantMessageEvent": {"type": t, "delta": x}});
        for e in [d("thinking_delta", "hm"), d("text_delta", "A"), d("text_delta", "B"), d("thinking_delta", "so"),
                  json!({"type": "tool_execution_start", "toolCallId": "t1", "toolName": "bash", "args": {"c": 1}}),
                  json!({"type": "tool_execution_end", "toolCallId": "t1", "toolName": "bash", "result": {}, "isError": true}),
                  json!({"type": "tool_blocked", "toolCallId": "t2", "toolName": "rm", "reason": "nope"}),
                  json!({"type": "tool_execution_end", "toolCallId": "t2", "toolName": "rm", "result": {}, "isError": true}),
                  json!({"type": "tool_execution_start", "toolCallId": "t3", "toolName": "read", "args": {}}),
                  json!({"type": "tool_execution_end", "toolCallId": "t3", "toolName": "read", "result": {"x": 1}}),
                  json!({"type": "message_end", "message": {"role": "assistant", "content": [], "stopReason": "length"}})] {
            sm.feed(&e);
        }
        let s = sm.finish();
        assert_eq!(s["text"], "AB");
        assert_eq!(s["reasoning"], "hmso");
        let kinds: Vec<_> = s["chunks"].as_array().unwrap().iter().map(|c| (c["kind"].as_str().unwrap().to_string(), c["text"].as_str().unwrap().to_string())).collect();
        assert_eq!(kinds, [("reasoning".into(), "hm".into()), ("text".into(), "AB".into()), ("reasoning".into(), "so".into())]);
        let outcomes: Vec<_> = s["toolCalls"].as_array().unwrap().iter().map(|t| t["outcome"].as_str().unwrap().to_string()).collect();
        assert_eq!(outcomes, ["error", "blocked", "success"]);
        assert_eq!(s["toolCalls"][1]["reason"], "nope");
        assert_eq!(s["stopReason"], "length");
        assert_eq!(s["stopReasons"][0]["reason"], "length");
    }

    #[test]
    fn inner_calls_pair_by_id_and_nest_under_their_caller() {
        // pi 1.6.0, recorded (abridged; tests/fixtures/recordings/pi-1.6.0-codemode.jsonl): a
        // codemode call whose script runs bash and read at once; read ends first, then bash,
        // then the script. Every inner event names its caller; the caller's events name none.
        let start = |id: &str, name: &str, parent: Option<&str>| {
            let mut e = json!({"type": "tool_execution_start", "toolCallId": id, "toolName": name, "args": {"n": id}});
            if let Some(p) = parent {
                e["parentToolCallId"] = json!(p);
            }
            e
        };
        let end = |id: &str, name: &str, parent: Option<&str>, text: &str| {
            let mut e = json!({"type": "tool_execution_end", "toolCallId": id, "toolName": name, "isError": false,
                               "result": {"content": [{"type": "text", "text": text}]}});
            if let Some(p) = parent {
                e["parentToolCallId"] = json!(p);
            }
            e
        };
        let mut sm = Summarizer::new(None);
        let mut derived = Vec::new();
        for e in [start("c", "codemode", None),
                  start("c/1", "bash", Some("c")),
                  json!({"type": "tool_execution_update", "toolCallId": "c/1", "toolName": "bash", "parentToolCallId": "c", "partialResult": {}}),
                  start("c/2", "read", Some("c")),
                  end("c/2", "read", Some("c"), "note"),
                  end("c/1", "bash", Some("c"), "inner"),
                  end("c", "codemode", None, "Script completed"),
                  start("d", "bash", None),
                  end("d", "bash", None, "top")] {
            derived.extend(sm.feed(&e));
        }
        let s = sm.finish();
        let calls = s["toolCalls"].as_array().unwrap();
        fn row(t: &Value) -> (&str, Option<&str>, &str) {
            (t["toolCallId"].as_str().unwrap(), t["parentToolCallId"].as_str(), t["result"]["content"][0]["text"].as_str().unwrap())
        }
        assert_eq!(calls.iter().map(row).collect::<Vec<_>>(),
                   [("c", None, "Script completed"), ("c/1", Some("c"), "inner"), ("c/2", Some("c"), "note"), ("d", None, "top")],
                   "each call holds its own end, in the order the calls started");
        assert_eq!(calls[0]["children"], json!(["c/1", "c/2"]));
        assert_eq!(calls[1]["children"], json!([]));
        assert_eq!(calls[3]["children"], json!([]));
        assert_eq!(calls[1]["args"], json!({"n": "c/1"}), "the start's args stay (pi's inner ends carry none)");
        let parents: Vec<(&str, Option<&str>)> = derived
            .iter()
            .filter(|d| d["kind"].as_str().is_some_and(|k| k.starts_with("tool_")))
            .map(|d| (d["kind"].as_str().unwrap(), d["parentToolCallId"].as_str()))
            .collect();
        assert_eq!(parents, [("tool_start", None), ("tool_start", Some("c")), ("tool_update", Some("c")), ("tool_start", Some("c")),
                             ("tool_end", Some("c")), ("tool_end", Some("c")), ("tool_end", None), ("tool_start", None), ("tool_end", None)]);
    }
}
