//! Writing a reply in the OpenAI Chat Completions or Anthropic Messages shape.

use std::io::{self, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use crate::http;
use crate::script::{Conversation, FailKind, Failure, Reply, ToolCall};
use crate::Server;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    OpenAi,
    Anthropic,
}

/// Splits text into deltas, each ending after a space (the last may not).
fn deltas(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for ch in text.chars() {
        cur.push(ch);
        if ch == ' ' {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn args_text(tc: &ToolCall) -> String {
    match &tc.arguments {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

/// The arguments in two pieces (split on a char boundary near the middle).
fn halves(s: &str) -> Vec<String> {
    if s.len() < 2 {
        return vec![s.to_string()];
    }
    let mut mid = s.len() / 2;
    while !s.is_char_boundary(mid) {
        mid += 1;
    }
    vec![s[..mid].to_string(), s[mid..].to_string()]
}

struct Usage {
    prompt: u64,
    completion: u64,
    cached: u64,
}

fn usage_of(reply: &Reply) -> Usage {
    let u = reply.usage.clone().unwrap_or_default();
    let n = |m: &Map<String, Value>, k: &str, d: u64| m.get(k).and_then(Value::as_u64).unwrap_or(d);
    Usage { prompt: n(&u, "prompt_tokens", 12), completion: n(&u, "completion_tokens", 5), cached: n(&u, "cached_tokens", 0) }
}

fn quiet(e: io::Error) -> io::Result<()> {
    // The client going away (abort) is normal here.
    if matches!(e.kind(), ErrorKind::BrokenPipe | ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted) {
        Ok(())
    } else {
        Err(e)
    }
}

/// A failed request as the provider answers it: status, headers and the API's error body
/// (OpenAI's `{"error":{message,type,param,code}}`, Anthropic's `{"type":"error","error":{type,message}}`;
/// the wording of each is the provider's own).
pub fn fail(mut conn: TcpStream, failure: Failure, api: Api) -> io::Result<()> {
    let (status, headers, body) = failure_response(failure, api);
    http::respond_json_with(&mut conn, status, &headers, &body).or_else(quiet)
}

/// [`fail`]'s status, headers and body.
fn failure_response(failure: Failure, api: Api) -> (u16, Vec<(&'static str, String)>, Value) {
    let (status, mut headers, body) = match (failure.kind, api) {
        (FailKind::Http500, Api::OpenAi) => (500, vec![], json!({"error": {"message": "The server had an error while processing your request. Sorry about that!", "type": "server_error", "param": null, "code": null}})),
        (FailKind::Http500, Api::Anthropic) => (500, vec![], json!({"type": "error", "error": {"type": "api_error", "message": "Internal server error"}})),
        (FailKind::Http429 { retry_after_s }, Api::OpenAi) => (
            429,
            vec![("retry-after", retry_after_s.to_string())],
            json!({"error": {"message": "Rate limit reached for requests. Please try again later.", "type": "requests", "param": null, "code": "rate_limit_exceeded"}}),
        ),
        (FailKind::Http429 { retry_after_s }, Api::Anthropic) => (
            429,
            vec![("retry-after", retry_after_s.to_string())],
            json!({"type": "error", "error": {"type": "rate_limit_error", "message": "This request would exceed the rate limit for your organization. Please try again later."}}),
        ),
        (FailKind::ContextLength, Api::OpenAi) => (400, vec![], json!({"error": {
            "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})),
        (FailKind::ContextLength, Api::Anthropic) => {
            (400, vec![], json!({"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 213462 tokens > 200000 maximum"}}))
        }
    };
    if let Some(ms) = failure.retry_after_ms.filter(|_| failure.kind != FailKind::ContextLength) {
        headers.push(("retry-after-ms", ms.to_string()));
    }
    (status, headers, body)
}

pub fn send(server: &Server, mut conn: TcpStream, request: &Value, conv: &Conversation, reply: &Reply, api: Api) -> io::Result<()> {
    if let Some((status, message)) = &reply.error {
        let body = match api {
            Api::OpenAi => json!({"error": {"message": message, "type": "fake_error", "code": status}}),
            Api::Anthropic => json!({"type": "error", "error": {"type": "api_error", "message": message}}),
        };
        return http::respond_json(&mut conn, *status, &body).or_else(quiet);
    }
    let streaming = request.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let mut w = Writer { conn, api, chunk_delay: Duration::from_millis(reply.chunk_delay_ms), first: true };
    let id = server.fresh_id();
    let r = if streaming {
        http::start_sse(&mut w.conn).and_then(|_| {
            if reply.delay_ms > 0 {
                std::thread::sleep(Duration::from_millis(reply.delay_ms));
            }
            match api {
                Api::OpenAi => openai_stream(server, &mut w, conv, reply, id),
                Api::Anthropic => anthropic_stream(server, &mut w, conv, reply, id),
            }
        })
    } else {
        if reply.delay_ms > 0 {
            std::thread::sleep(Duration::from_millis(reply.delay_ms));
        }
        let body = match api {
            Api::OpenAi => openai_whole(server, conv, reply, id),
            Api::Anthropic => anthropic_whole(server, conv, reply, id),
        };
        http::respond_json(&mut w.conn, 200, &body)
    };
    r.or_else(quiet)
}

struct Writer {
    conn: TcpStream,
    api: Api,
    chunk_delay: Duration,
    first: bool,
}

impl Writer {
    fn event(&mut self, name: &str, data: &Value) -> io::Result<()> {
        if !self.first && !self.chunk_delay.is_zero() {
            std::thread::sleep(self.chunk_delay);
        }
        self.first = false;
        let text = match self.api {
            Api::OpenAi => format!("data: {data}\n\n"),
            Api::Anthropic => format!("event: {name}\ndata: {data}\n\n"),
        };
        self.conn.write_all(text.as_bytes())?;
        self.conn.flush()
    }

    fn raw(&mut self, text: &str) -> io::Result<()> {
        self.conn.write_all(text.as_bytes())?;
        self.conn.flush()
    }

    /// Sends nothing more until the client disconnects (or `max` passes).
    fn hang(&mut self, max: Duration) -> io::Result<()> {
        let until = Instant::now() + max;
        self.conn.set_read_timeout(Some(Duration::from_millis(200)))?;
        let mut last_ping = Instant::now();
        let mut buf = [0u8; 1024];
        while Instant::now() < until {
            match self.conn.read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(_) => {}
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {}
                Err(e) => return Err(e),
            }
            if last_ping.elapsed() >= Duration::from_secs(1) {
                // An SSE comment: ignored by clients, and a write notices a dead peer.
                self.raw(": keep-alive\n\n")?;
                last_ping = Instant::now();
            }
        }
        Ok(())
    }
}

fn openai_chunk(id: u64, model: &str, delta: Value, finish: Option<&str>) -> Value {
    json!({
        "id": format!("chatcmpl-fake-{id}"),
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    })
}

fn tool_id(server: &Server, tc: &ToolCall, api: Api) -> String {
    tc.id.clone().unwrap_or_else(|| match api {
        Api::OpenAi => format!("call_fake_{}", server.fresh_id()),
        Api::Anthropic => format!("toolu_fake_{}", server.fresh_id()),
    })
}

fn openai_stream(server: &Server, w: &mut Writer, conv: &Conversation, reply: &Reply, id: u64) -> io::Result<()> {
    let model = conv.model.as_str();
    w.event("", &openai_chunk(id, model, json!({"role": "assistant", "content": ""}), None))?;
    if let Some(r) = &reply.reasoning {
        for d in deltas(r) {
            w.event("", &openai_chunk(id, model, json!({"reasoning_content": d}), None))?;
        }
    }
    let mut text_deltas = deltas(reply.text.as_deref().unwrap_or(""));
    if reply.hang {
        let first = if text_deltas.is_empty() { "…".to_string() } else { text_deltas.remove(0) };
        w.event("", &openai_chunk(id, model, json!({"content": first}), None))?;
        return w.hang(Duration::from_millis(reply.hang_max_ms));
    }
    for d in text_deltas {
        w.event("", &openai_chunk(id, model, json!({"content": d}), None))?;
    }
    for (i, tc) in reply.tool_calls.iter().enumerate() {
        let call_id = tool_id(server, tc, Api::OpenAi);
        w.event(
            "",
            &openai_chunk(
                id,
                model,
                json!({"tool_calls": [{"index": i, "id": call_id, "type": "function", "function": {"name": tc.name, "arguments": ""}}]}),
                None,
            ),
        )?;
        for piece in halves(&args_text(tc)) {
            w.event("", &openai_chunk(id, model, json!({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}), None))?;
        }
    }
    let finish = reply.finish_reason.clone().unwrap_or_else(|| if reply.tool_calls.is_empty() { "stop".into() } else { "tool_calls".into() });
    w.event("", &openai_chunk(id, model, json!({}), Some(&finish)))?;
    let u = usage_of(reply);
    let mut usage = json!({"prompt_tokens": u.prompt, "completion_tokens": u.completion, "total_tokens": u.prompt + u.completion});
    if u.cached > 0 {
        usage["prompt_tokens_details"] = json!({"cached_tokens": u.cached});
    }
    w.event(
        "",
        &json!({"id": format!("chatcmpl-fake-{id}"), "object": "chat.completion.chunk", "created": 0, "model": model, "choices": [], "usage": usage}),
    )?;
    w.raw("data: [DONE]\n\n")
}

fn openai_whole(server: &Server, conv: &Conversation, reply: &Reply, id: u64) -> Value {
    let tool_calls: Vec<Value> = reply
        .tool_calls
        .iter()
        .map(|tc| json!({"id": tool_id(server, tc, Api::OpenAi), "type": "function", "function": {"name": tc.name, "arguments": args_text(tc)}}))
        .collect();
    let mut message = json!({"role": "assistant", "content": reply.text.clone().unwrap_or_default()});
    if !tool_calls.is_empty() {
        message["tool_calls"] = Value::Array(tool_calls);
    }
    let finish = reply.finish_reason.clone().unwrap_or_else(|| if reply.tool_calls.is_empty() { "stop".into() } else { "tool_calls".into() });
    let u = usage_of(reply);
    json!({
        "id": format!("chatcmpl-fake-{id}"), "object": "chat.completion", "created": 0, "model": conv.model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": u.prompt, "completion_tokens": u.completion, "total_tokens": u.prompt + u.completion},
    })
}

fn anthropic_stop(reply: &Reply) -> String {
    match reply.finish_reason.as_deref() {
        None if reply.tool_calls.is_empty() => "end_turn".into(),
        None => "tool_use".into(),
        Some("stop") => "end_turn".into(),
        Some("tool_calls") => "tool_use".into(),
        Some("length") => "max_tokens".into(),
        Some(other) => other.into(),
    }
}

fn anthropic_stream(server: &Server, w: &mut Writer, conv: &Conversation, reply: &Reply, id: u64) -> io::Result<()> {
    let u = usage_of(reply);
    w.event(
        "message_start",
        &json!({"type": "message_start", "message": {
            "id": format!("msg_fake_{id}"), "type": "message", "role": "assistant", "model": conv.model, "content": [],
            "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": u.prompt, "output_tokens": 1, "cache_read_input_tokens": u.cached, "cache_creation_input_tokens": 0}}}),
    )?;
    let mut index = 0;
    if let Some(r) = &reply.reasoning {
        w.event("content_block_start", &json!({"type": "content_block_start", "index": index, "content_block": {"type": "thinking", "thinking": ""}}))?;
        for d in deltas(r) {
            w.event("content_block_delta", &json!({"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": d}}))?;
        }
        w.event("content_block_delta", &json!({"type": "content_block_delta", "index": index, "delta": {"type": "signature_delta", "signature": "fake-signature"}}))?;
        w.event("content_block_stop", &json!({"type": "content_block_stop", "index": index}))?;
        index += 1;
    }
    let mut text_deltas = deltas(reply.text.as_deref().unwrap_or(""));
    if !text_deltas.is_empty() || reply.hang {
        w.event("content_block_start", &json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}))?;
        if reply.hang {
            let first = if text_deltas.is_empty() { "…".to_string() } else { text_deltas.remove(0) };
            w.event("content_block_delta", &json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": first}}))?;
            return w.hang(Duration::from_millis(reply.hang_max_ms));
        }
        for d in text_deltas {
            w.event("content_block_delta", &json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": d}}))?;
        }
        w.event("content_block_stop", &json!({"type": "content_block_stop", "index": index}))?;
        index += 1;
    }
    for tc in &reply.tool_calls {
        let call_id = tool_id(server, tc, Api::Anthropic);
        w.event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": call_id, "name": tc.name, "input": {}}}),
        )?;
        for piece in halves(&args_text(tc)) {
            w.event("content_block_delta", &json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": piece}}))?;
        }
        w.event("content_block_stop", &json!({"type": "content_block_stop", "index": index}))?;
        index += 1;
    }
    w.event(
        "message_delta",
        &json!({"type": "message_delta", "delta": {"stop_reason": anthropic_stop(reply), "stop_sequence": null},
                "usage": {"input_tokens": u.prompt, "output_tokens": u.completion, "cache_read_input_tokens": u.cached}}),
    )?;
    w.event("message_stop", &json!({"type": "message_stop"}))
}

fn anthropic_whole(server: &Server, conv: &Conversation, reply: &Reply, id: u64) -> Value {
    let mut content = Vec::new();
    if let Some(r) = &reply.reasoning {
        content.push(json!({"type": "thinking", "thinking": r, "signature": "fake-signature"}));
    }
    if let Some(t) = reply.text.as_deref().filter(|t| !t.is_empty()) {
        content.push(json!({"type": "text", "text": t}));
    }
    for tc in &reply.tool_calls {
        let input = match &tc.arguments {
            Value::String(s) => serde_json::from_str(s).unwrap_or(json!({})),
            v => v.clone(),
        };
        content.push(json!({"type": "tool_use", "id": tool_id(server, tc, Api::Anthropic), "name": tc.name, "input": input}));
    }
    let u = usage_of(reply);
    json!({
        "id": format!("msg_fake_{id}"), "type": "message", "role": "assistant", "model": conv.model, "content": content,
        "stop_reason": anthropic_stop(reply), "stop_sequence": null,
        "usage": {"input_tokens": u.prompt, "output_tokens": u.completion, "cache_read_input_tokens": u.cached},
    })
}

#[cfg(test)]
mod tests {
    use crate::script::Failure;

    #[test]
    fn failures_are_worded_as_the_providers_word_them() {
        let f = |kind, retry_after_ms| Failure { kind, times: 1, retry_after_ms };
        // A 500 and a 429 (retry-after, and OpenAI's retry-after-ms when asked), in both shapes.
        let (status, headers, body) = failure_response(f(FailKind::Http500, None), Api::OpenAi);
        assert_eq!((status, headers.len(), body["error"]["type"].as_str()), (500, 0, Some("server_error")));
        let (status, headers, body) = failure_response(f(FailKind::Http429 { retry_after_s: 3 }, Some(7)), Api::Anthropic);
        assert_eq!(status, 429);
        assert_eq!(headers, [("retry-after", "3".to_string()), ("retry-after-ms", "7".to_string())]);
        assert_eq!((body["type"].as_str(), body["error"]["type"].as_str()), (Some("error"), Some("rate_limit_error")));
        // A context-length error the agents recognise as an overflow: pi's and omp's patterns
        // ("maximum context length is N tokens" for OpenAI, "prompt is too long" for Anthropic).
        let (status, headers, body) = failure_response(f(FailKind::ContextLength, Some(1)), Api::OpenAi);
        assert_eq!((status, headers.len(), body["error"]["code"].as_str()), (400, 0, Some("context_length_exceeded")));
        assert!(body["error"]["message"].as_str().unwrap().contains("maximum context length is 128000 tokens"));
        let (_, _, body) = failure_response(f(FailKind::ContextLength, None), Api::Anthropic);
        assert!(body["error"]["message"].as_str().unwrap().starts_with("prompt is too long"));
    }

    use super::*;

    #[test]
    fn deltas_keep_every_char() {
        assert_eq!(deltas("say hello world"), vec!["say ", "hello ", "world"]);
        assert!(deltas("").is_empty());
        assert_eq!(halves("{\"a\":\"é\"}").concat(), "{\"a\":\"é\"}");
    }
}
