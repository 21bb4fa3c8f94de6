//! `--replay FILE`: plays a session recorded with the client's `record_path` option back to
//! a live client, so a session with a real agent becomes a regression test.
//!
//! The recording's "in" frames (what the agent sent) are written to stdout in order, byte
//! for byte. At an "out" entry (what the client sent) the replay reads the client's next
//! frame from stdin and checks it against the recording: the same `type` and the same
//! fields. A request's `id` is the client's own counter and may differ between runs, so it
//! is not compared; the live id is remembered, and a recorded frame answering the recorded
//! id (a `response`, a `prompt_result`) goes out with the live id instead. Answers to the
//! agent's own requests (`extension_ui_response`, `host_tool_result`, `host_tool_update`,
//! `host_uri_result`) carry the agent's ids, which the replay reproduces, so their `id` is
//! compared like any other field. Consecutive "out" entries may arrive in any order (a
//! client sends from several threads).
//!
//! A frame that does not match, a frame after the end of the recording, or a recording that
//! cannot be read → a message on stderr naming the entry and both frames, exit 1 (the
//! client's waiting call then fails with that message in its stderr tail). stdin EOF before
//! the end is not an error (the client closed early): a note on stderr, exit 0.
//!
//! `--replay-speed X`: keep the recorded pacing of the "in" frames, X times faster (1 = as
//! recorded). Without it, as fast as possible.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::out::Out;

/// Client frames that answer a request of the agent: their `id` is the agent's.
const AGENT_ID_ANSWERS: [&str; 4] = ["extension_ui_response", "host_tool_result", "host_tool_update", "host_uri_result"];

enum Entry {
    /// What the agent wrote: the exact line, and its top-level `id` if any.
    In { t_ms: f64, text: String, id: Option<String> },
    /// What the client wrote, parsed; `line` is the recording's line number.
    Out { t_ms: f64, frame: Map<String, Value>, line: usize },
}

/// Returns Some(exit code) when the arguments ask for a replay.
pub fn from_args(args: &[String]) -> Option<i32> {
    let mut file: Option<String> = None;
    let mut speed: Option<f64> = None;
    let mut i = 0;
    while i < args.len() {
        let (name, inline) = match args[i].split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_owned())),
            _ => (args[i].as_str(), None),
        };
        if name == "--replay" || name == "--replay-speed" {
            let value = match inline {
                Some(v) => v,
                None => {
                    i += 1;
                    match args.get(i) {
                        Some(v) => v.clone(),
                        None => return Some(fail(2, &format!("{name} needs a value"))),
                    }
                }
            };
            if name == "--replay" {
                file = Some(value);
            } else {
                match value.parse::<f64>() {
                    Ok(x) if x > 0.0 && x.is_finite() => speed = Some(x),
                    _ => return Some(fail(2, &format!("--replay-speed must be a positive number, not {value:?}"))),
                }
            }
        }
        i += 1;
    }
    match (file, speed) {
        (Some(f), speed) => Some(run(&f, speed)),
        (None, Some(_)) => Some(fail(2, "--replay-speed needs --replay FILE")),
        (None, None) => None,
    }
}

/// With `--replay FILE`: the recorded agent's flavour and version (`agentVersion`, when the
/// recording has one), read from the header line.
pub fn recorded_agent(args: &[String]) -> Option<(String, Option<String>)> {
    let i = args.iter().position(|a| a == "--replay" || a.starts_with("--replay="))?;
    let path = match args[i].split_once('=') {
        Some((_, p)) => p.to_string(),
        None => args.get(i + 1)?.clone(),
    };
    let text = std::fs::read_to_string(path).ok()?;
    let header: Value = serde_json::from_str(text.lines().next()?).ok()?;
    let flavor = header.get("flavor")?.as_str()?.to_string();
    Some((flavor, header.get("agentVersion").and_then(Value::as_str).map(str::to_string)))
}

fn fail(code: i32, message: &str) -> i32 {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "omprpc-fake-agent: {message}");
    let _ = err.flush();
    code
}

fn load(path: &str) -> Result<Vec<Entry>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read the recording {path}: {e}"))?;
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    let (_, header) = lines.next().ok_or_else(|| format!("{path} is empty"))?;
    let header: Value = serde_json::from_str(header).map_err(|e| format!("{path}:1: the header is not JSON: {e}"))?;
    match header.get("omprpc_recording").and_then(Value::as_u64) {
        Some(1) => {}
        Some(v) => return Err(format!("{path}: recording format {v} is not supported (this replay reads format 1)")),
        None => return Err(format!("{path}:1: not an omprpc recording (no \"omprpc_recording\" header)")),
    }
    let mut entries = Vec::new();
    for (n, line) in lines {
        let n = n + 1;
        let at = |what: &str| format!("{path}:{n}: {what}");
        let fields: HashMap<String, Box<RawValue>> = serde_json::from_str(line).map_err(|e| at(&format!("not a JSON object: {e}")))?;
        let get = |k: &str| fields.get(k).map(|r| r.get());
        let t_ms = get("t_ms").and_then(|t| t.parse::<f64>().ok()).ok_or_else(|| at("no numeric \"t_ms\""))?;
        let frame = fields.get("frame").ok_or_else(|| at("no \"frame\""))?;
        let invalid = get("invalid") == Some("true");
        match get("dir") {
            Some("\"in\"") => {
                let (text, id) = if invalid {
                    (serde_json::from_str::<String>(frame.get()).map_err(|e| at(&format!("an invalid frame must be a string: {e}")))?, None)
                } else {
                    let id = serde_json::from_str::<HashMap<String, Box<RawValue>>>(frame.get())
                        .ok()
                        .and_then(|m| m.get("id").and_then(|i| serde_json::from_str::<String>(i.get()).ok()));
                    (frame.get().to_owned(), id)
                };
                entries.push(Entry::In { t_ms, text, id });
            }
            Some("\"out\"") => match serde_json::from_str::<Value>(frame.get()) {
                Ok(Value::Object(frame)) if !invalid => entries.push(Entry::Out { t_ms, frame, line: n }),
                _ => return Err(at("an \"out\" frame must be a JSON object")),
            },
            _ => return Err(at("\"dir\" must be \"in\" or \"out\"")),
        }
    }
    Ok(entries)
}

/// Whether the live frame is the recorded one; on a request, the ids are set aside.
fn matches(recorded: &Map<String, Value>, live: &Map<String, Value>) -> bool {
    let ty = recorded.get("type").and_then(Value::as_str).unwrap_or_default();
    let with_id = AGENT_ID_ANSWERS.contains(&ty);
    let keys = |m: &Map<String, Value>| -> Vec<String> { m.keys().filter(|k| with_id || k.as_str() != "id").cloned().collect() };
    keys(recorded) == keys(live) && keys(recorded).iter().all(|k| recorded[k] == live[k])
}

/// A JSON object's members in their order, values as written (serde_json's own `Map` would
/// sort the keys).
struct Members(Vec<(String, Box<RawValue>)>);

impl<'de> serde::Deserialize<'de> for Members {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Members;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<Members, A::Error> {
                let mut v = Vec::new();
                while let Some(kv) = m.next_entry::<String, Box<RawValue>>()? {
                    v.push(kv);
                }
                Ok(Members(v))
            }
        }
        d.deserialize_map(V)
    }
}

/// The recorded frame with its `id` replaced by the live request's; every other member
/// stays as recorded, in its order.
fn with_live_id(text: &str, live: &str) -> String {
    let Ok(Members(members)) = serde_json::from_str::<Members>(text) else { return text.to_owned() };
    let mut out = String::with_capacity(text.len() + live.len());
    out.push('{');
    for (n, (k, v)) in members.iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        out.push_str(&Value::String(k.clone()).to_string());
        out.push(':');
        if k == "id" {
            out.push_str(&Value::String(live.to_owned()).to_string());
        } else {
            out.push_str(v.get());
        }
    }
    out.push('}');
    out
}

fn run(path: &str, speed: Option<f64>) -> i32 {
    let entries = match load(path) {
        Ok(e) => e,
        Err(m) => return fail(2, &m),
    };
    let mut out = Out::new();
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut line = String::new();
    // Recorded request id → the live one, where they differ.
    let mut ids: HashMap<String, String> = HashMap::new();
    // Pacing: the moment an entry was reached, and its recorded time.
    let mut clock = (Instant::now(), 0.0f64);
    let mut i = 0;
    while i < entries.len() {
        match &entries[i] {
            Entry::In { t_ms, text, id } => {
                if let Some(x) = speed {
                    let due = clock.0 + Duration::from_secs_f64(((t_ms - clock.1) / x).max(0.0) / 1000.0);
                    if let Some(wait) = due.checked_duration_since(Instant::now()) {
                        out.flush();
                        std::thread::sleep(wait);
                    }
                }
                match id.as_ref().and_then(|id| ids.get(id)) {
                    Some(live) => out.line(with_live_id(text, live).as_bytes()),
                    None => out.line(text.as_bytes()),
                }
                i += 1;
            }
            Entry::Out { .. } => {
                out.flush();
                // The run of consecutive client frames, matched in any order.
                let run_end = entries[i..].iter().position(|e| matches!(e, Entry::In { .. })).map_or(entries.len(), |p| i + p);
                let mut open: Vec<usize> = (i..run_end).collect();
                while !open.is_empty() {
                    line.clear();
                    match input.read_line(&mut line) {
                        Ok(0) | Err(_) => {
                            let left = entries.len() - i;
                            fail(0, &format!("replay: the client closed its stdin with {left} recorded entries left (at {path} line {})", out_line(&entries[open[0]])));
                            out.flush();
                            return 0;
                        }
                        Ok(_) => {}
                    }
                    if line.trim().is_empty() {
                        continue;
                    }
                    let live = match serde_json::from_str::<Value>(line.trim_end()) {
                        Ok(Value::Object(m)) => m,
                        _ => return fail(1, &format!("replay mismatch: the client sent a frame that is not a JSON object: {}", line.trim_end())),
                    };
                    let Some(pos) = open.iter().position(|&k| match &entries[k] {
                        Entry::Out { frame, .. } => matches(frame, &live),
                        Entry::In { .. } => false,
                    }) else {
                        let expected: Vec<String> = open.iter().map(|&k| format!("{path}:{}: {}", out_line(&entries[k]), out_frame(&entries[k]))).collect();
                        return fail(
                            1,
                            &format!("replay mismatch: the client sent {}, the recording expects {}", Value::Object(live), expected.join(" or ")),
                        );
                    };
                    let k = open.remove(pos);
                    if let Entry::Out { frame, t_ms, .. } = &entries[k] {
                        let recorded = frame.get("id").and_then(Value::as_str);
                        let live_id = live.get("id").and_then(Value::as_str);
                        if let (Some(r), Some(l)) = (recorded, live_id) {
                            if r != l && !AGENT_ID_ANSWERS.contains(&frame.get("type").and_then(Value::as_str).unwrap_or_default()) {
                                ids.insert(r.to_owned(), l.to_owned());
                            }
                        }
                        clock = (Instant::now(), *t_ms);
                    }
                }
                i = run_end;
            }
        }
    }
    out.flush();
    // The end of the recording: anything more the client sends is not in it.
    loop {
        line.clear();
        match input.read_line(&mut line) {
            Ok(0) | Err(_) => return 0,
            Ok(_) if line.trim().is_empty() => continue,
            Ok(_) => return fail(1, &format!("replay mismatch: the client sent {} after the end of the recording {path}", line.trim_end())),
        }
    }
}

fn out_line(e: &Entry) -> usize {
    match e {
        Entry::Out { line, .. } => *line,
        Entry::In { .. } => 0,
    }
}

fn out_frame(e: &Entry) -> String {
    match e {
        Entry::Out { frame, .. } => Value::Object(frame.clone()).to_string(),
        Entry::In { text, .. } => text.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(text: &str) -> Map<String, Value> {
        match serde_json::from_str(text).unwrap() {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    #[test]
    fn live_ids_replace_recorded_ones_keeping_the_frame_as_written() {
        let recorded = r#"{"type":"response","id":"req_1","data":{"b":1,"a":[2, 3]},"success":true}"#;
        assert_eq!(with_live_id(recorded, "req_7"), r#"{"type":"response","id":"req_7","data":{"b":1,"a":[2, 3]},"success":true}"#);
        assert_eq!(with_live_id("not json", "req_7"), "not json");
    }

    #[test]
    fn request_ids_are_set_aside_but_answers_to_the_agent_keep_theirs() {
        let rec = obj(r#"{"id":"req_1","type":"prompt","message":"hi"}"#);
        assert!(matches(&rec, &obj(r#"{"id":"req_9","type":"prompt","message":"hi"}"#)));
        assert!(!matches(&rec, &obj(r#"{"id":"req_1","type":"prompt","message":"ho"}"#)));
        assert!(!matches(&rec, &obj(r#"{"id":"req_1","type":"prompt","message":"hi","images":[]}"#)));
        let ui = obj(r#"{"type":"extension_ui_response","id":"ui-1","value":"x"}"#);
        assert!(matches(&ui, &obj(r#"{"id":"ui-1","type":"extension_ui_response","value":"x"}"#)));
        assert!(!matches(&ui, &obj(r#"{"type":"extension_ui_response","id":"ui-2","value":"x"}"#)));
    }
}
