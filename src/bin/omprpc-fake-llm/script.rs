//! The script: rules matched on the last user message, replies chosen by position.

use serde_json::{json, Map, Value};

use crate::stream::Api;

#[derive(Clone, Debug, Default)]
pub struct ToolCall {
    pub id: Option<String>,
    pub name: String,
    /// The arguments as JSON text (as the model would stream them).
    pub arguments: Value,
}

#[derive(Clone, Debug)]
pub struct Reply {
    pub text: Option<String>,
    pub reasoning: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub delay_ms: u64,
    pub chunk_delay_ms: u64,
    pub hang: bool,
    pub hang_max_ms: u64,
    pub usage: Option<Map<String, Value>>,
    pub finish_reason: Option<String>,
    pub error: Option<(u16, String)>,
    /// The first `times` requests this reply answers fail so instead (then it is served).
    pub fail: Option<Failure>,
}

/// A failure a real provider answers with, in each API's own wire shape (stream.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailKind {
    /// HTTP 500, a server error.
    Http500,
    /// HTTP 429 with a `retry-after` header (seconds).
    Http429 { retry_after_s: u64 },
    /// HTTP 400 saying the prompt exceeds the model's context window.
    ContextLength,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Failure {
    pub kind: FailKind,
    pub times: u32,
    /// OpenAI's `retry-after-ms` header too (omp's provider layer waits that long between its
    /// own retries of the call, and its session as long before retrying the turn).
    pub retry_after_ms: Option<u64>,
}

impl Default for Reply {
    fn default() -> Self {
        Reply {
            text: Some("pong".into()),
            reasoning: None,
            tool_calls: Vec::new(),
            delay_ms: 0,
            chunk_delay_ms: 0,
            hang: false,
            hang_max_ms: 600_000,
            usage: None,
            finish_reason: None,
            error: None,
            fail: None,
        }
    }
}

struct Rule {
    matcher: String,
    replies: Vec<Reply>,
}

#[derive(Default)]
pub struct Script {
    rules: Vec<Rule>,
    default: Option<Reply>,
    usage: Option<Map<String, Value>>,
}

fn err(msg: impl Into<String>) -> String {
    msg.into()
}

fn parse_tool_call(v: &Value) -> Result<ToolCall, String> {
    let o = v.as_object().ok_or_else(|| err("a tool call must be an object"))?;
    let name = o.get("name").and_then(Value::as_str).ok_or_else(|| err("a tool call needs a string \"name\""))?;
    let arguments = match o.get("arguments") {
        None | Some(Value::Null) => json!({}),
        Some(Value::String(s)) => serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone())),
        Some(v) => v.clone(),
    };
    Ok(ToolCall { id: o.get("id").and_then(Value::as_str).map(str::to_string), name: name.to_string(), arguments })
}

fn parse_reply(v: &Value) -> Result<Reply, String> {
    let o = match v {
        Value::String(s) => return Ok(Reply { text: Some(s.clone()), ..Reply::default() }),
        Value::Object(o) => o,
        _ => return Err(err("a reply must be an object or a string")),
    };
    for k in o.keys() {
        if !matches!(
            k.as_str(),
            "text" | "reasoning" | "tool_call" | "tool_calls" | "delay_ms" | "chunk_delay_ms" | "hang" | "hang_max_ms" | "usage" | "finish_reason" | "error" | "fail"
        ) {
            return Err(format!("unknown reply key {k:?}"));
        }
    }
    let s = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_string);
    let n = |k: &str| o.get(k).and_then(Value::as_u64);
    let mut tool_calls = Vec::new();
    if let Some(tc) = o.get("tool_call") {
        tool_calls.push(parse_tool_call(tc)?);
    }
    if let Some(list) = o.get("tool_calls") {
        for tc in list.as_array().ok_or_else(|| err("tool_calls must be an array"))? {
            tool_calls.push(parse_tool_call(tc)?);
        }
    }
    let error = match o.get("error") {
        None | Some(Value::Null) => None,
        Some(e) => Some((
            e.get("status").and_then(Value::as_u64).unwrap_or(500) as u16,
            e.get("message").and_then(Value::as_str).unwrap_or("fake LLM error").to_string(),
        )),
    };
    let fail = o.get("fail").map(parse_failure).transpose()?;
    let text = s("text");
    let hang = o.get("hang").and_then(Value::as_bool).unwrap_or(false);
    Ok(Reply {
        // A reply that says nothing else still streams something.
        text: if text.is_none() && tool_calls.is_empty() && error.is_none() && !hang { Some(String::new()) } else { text },
        reasoning: s("reasoning"),
        tool_calls,
        delay_ms: n("delay_ms").unwrap_or(0),
        chunk_delay_ms: n("chunk_delay_ms").unwrap_or(0),
        hang,
        hang_max_ms: n("hang_max_ms").unwrap_or(600_000),
        usage: o.get("usage").and_then(Value::as_object).cloned(),
        finish_reason: s("finish_reason"),
        error,
        fail,
    })
}

/// `"fail": "http_500" | "http_429" | "context_length"`, or an object with `kind`, `times`
/// (default 1), for 429 `retry_after_s` (default 1), and `retry_after_ms` (a `retry-after-ms`
/// header on a 500 or 429).
fn parse_failure(v: &Value) -> Result<Failure, String> {
    let (kind, o) = match v {
        Value::String(k) => (k.as_str(), None),
        Value::Object(o) => (o.get("kind").and_then(Value::as_str).ok_or_else(|| err("\"fail\" needs a string \"kind\""))?, Some(o)),
        _ => return Err(err("\"fail\" is a kind or an object")),
    };
    let n = |k: &str| o.and_then(|o| o.get(k)).and_then(Value::as_u64);
    let kind = match kind {
        "http_500" => FailKind::Http500,
        "http_429" => FailKind::Http429 { retry_after_s: n("retry_after_s").unwrap_or(1) },
        "context_length" => FailKind::ContextLength,
        other => return Err(format!("unknown failure kind {other:?} (http_500, http_429, context_length)")),
    };
    Ok(Failure { kind, times: n("times").unwrap_or(1).min(u64::from(u32::MAX)) as u32, retry_after_ms: n("retry_after_ms") })
}

impl Script {
    pub fn parse(text: &str) -> Result<Script, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let (rules_v, default, usage) = match &v {
            Value::Array(_) => (v.clone(), None, None),
            Value::Object(o) => (
                o.get("rules").cloned().unwrap_or(json!([])),
                o.get("default").map(parse_reply).transpose()?,
                o.get("usage").and_then(Value::as_object).cloned(),
            ),
            _ => return Err(err("a script is an array of rules or an object with \"rules\"")),
        };
        let mut rules = Vec::new();
        for r in rules_v.as_array().ok_or_else(|| err("\"rules\" must be an array"))? {
            let o = r.as_object().ok_or_else(|| err("a rule must be an object"))?;
            let matcher = o.get("match").and_then(Value::as_str).unwrap_or("").to_string();
            let replies = match (o.get("replies"), o.get("reply")) {
                (Some(Value::Array(a)), _) => a.iter().map(parse_reply).collect::<Result<Vec<_>, _>>()?,
                (None, Some(one)) => vec![parse_reply(one)?],
                _ => return Err(format!("rule {matcher:?} needs \"replies\" (an array) or \"reply\"")),
            };
            rules.push(Rule { matcher, replies });
        }
        Ok(Script { rules, default, usage })
    }

    /// The reply for this request, substitutions applied, and where it sits in the script
    /// (`(rule, reply)`; the default reply is `(usize::MAX, 0)`): a reply's `fail` counts
    /// the requests it answered there.
    pub fn reply_for(&self, conv: &Conversation) -> (Reply, (usize, usize)) {
        let found = self
            .rules
            .iter()
            .enumerate()
            .find(|(_, r)| conv.last_user.contains(r.matcher.as_str()))
            .and_then(|(i, r)| Some(((i, conv.call_index), r.replies.get(conv.call_index)?.clone())));
        let (place, picked) = match found {
            Some((place, reply)) => (place, reply),
            None => ((usize::MAX, 0), self.default.clone().unwrap_or_default()),
        };
        let mut reply = picked;
        if reply.usage.is_none() {
            reply.usage = self.usage.clone();
        }
        reply.text = reply.text.map(|t| conv.substitute(&t));
        reply.reasoning = reply.reasoning.map(|t| conv.substitute(&t));
        for tc in &mut reply.tool_calls {
            conv.substitute_value(&mut tc.arguments);
        }
        (reply, place)
    }
}

/// What the script needs to know about one request.
#[derive(Debug, Default)]
pub struct Conversation {
    pub last_user: String,
    pub call_index: usize,
    pub last_tool_result: String,
    pub model: String,
}

/// Text of OpenAI / Anthropic content: a string, or text parts joined.
fn content_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| match p {
                Value::String(s) => Some(s.clone()),
                Value::Object(o) if o.get("type").and_then(Value::as_str).map_or(true, |t| t == "text") => {
                    o.get("text").and_then(Value::as_str).map(str::to_string)
                }
                Value::Object(o) if o.get("type").and_then(Value::as_str) == Some("tool_result") => None,
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn has_text_part(v: &Value) -> bool {
    match v {
        Value::String(_) => true,
        Value::Array(parts) => parts.iter().any(|p| p.get("type").and_then(Value::as_str) != Some("tool_result")),
        _ => false,
    }
}

impl Conversation {
    pub fn from_request(req: &Value, api: Api) -> Conversation {
        let empty = Vec::new();
        let messages = req.get("messages").and_then(Value::as_array).unwrap_or(&empty);
        let mut conv = Conversation { model: req.get("model").and_then(Value::as_str).unwrap_or("fake-model").to_string(), ..Default::default() };
        let role = |m: &Value| m.get("role").and_then(Value::as_str).unwrap_or("").to_string();
        // The last user message that the user wrote (Anthropic tool results ride in user turns).
        let last_user_idx = messages.iter().rposition(|m| role(m) == "user" && (api == Api::OpenAi || has_text_part(&m["content"])));
        if let Some(i) = last_user_idx {
            conv.last_user = content_text(&messages[i]["content"]);
            conv.call_index = messages[i + 1..].iter().filter(|m| role(m) == "assistant").count();
        }
        for m in messages.iter().rev() {
            match api {
                Api::OpenAi if role(m) == "tool" => {
                    conv.last_tool_result = content_text(&m["content"]);
                    break;
                }
                Api::Anthropic if role(m) == "user" => {
                    let result = m["content"].as_array().and_then(|parts| {
                        parts.iter().rev().find(|p| p.get("type").and_then(Value::as_str) == Some("tool_result"))
                    });
                    if let Some(r) = result {
                        conv.last_tool_result = content_text(&r["content"]);
                        break;
                    }
                }
                _ => {}
            }
        }
        conv
    }

    pub fn substitute(&self, s: &str) -> String {
        s.replace("{{last_tool_result}}", &self.last_tool_result)
            .replace("{{last_user}}", &self.last_user)
            .replace("{{call_index}}", &self.call_index.to_string())
            .replace("{{model}}", &self.model)
    }

    fn substitute_value(&self, v: &mut Value) {
        match v {
            Value::String(s) => *s = self.substitute(s),
            Value::Array(a) => a.iter_mut().for_each(|x| self.substitute_value(x)),
            Value::Object(o) => o.values_mut().for_each(|x| self.substitute_value(x)),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_by_match_and_position() {
        let s = Script::parse(
            r#"[{"match":"run bash","replies":[{"tool_call":{"name":"bash","arguments":{"command":"echo hi"}}},{"text":"done: {{last_tool_result}}"}]}]"#,
        )
        .unwrap();
        let req = json!({"model":"m","messages":[{"role":"system","content":"x"},{"role":"user","content":[{"type":"text","text":"please run bash"}]}]});
        let (r, _) = s.reply_for(&Conversation::from_request(&req, Api::OpenAi));
        assert_eq!(r.tool_calls[0].name, "bash");
        let req = json!({"messages":[{"role":"user","content":"please run bash"},{"role":"assistant","content":null,"tool_calls":[]},{"role":"tool","content":"hi\n"}]});
        let (r, _) = s.reply_for(&Conversation::from_request(&req, Api::OpenAi));
        assert_eq!(r.text.as_deref(), Some("done: hi\n"));
        let req = json!({"messages":[{"role":"user","content":"other"}]});
        assert_eq!(s.reply_for(&Conversation::from_request(&req, Api::OpenAi)).0.text.as_deref(), Some("pong"));
    }

    #[test]
    fn anthropic_tool_results_are_not_user_text() {
        let req = json!({"messages":[
            {"role":"user","content":"run bash"},
            {"role":"assistant","content":[{"type":"tool_use","id":"t","name":"bash","input":{}}]},
            {"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"out"}]}]}]});
        let c = Conversation::from_request(&req, Api::Anthropic);
        assert_eq!((c.last_user.as_str(), c.call_index, c.last_tool_result.as_str()), ("run bash", 1, "out"));
    }
}
