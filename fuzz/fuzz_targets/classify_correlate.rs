//! Frame classification and response correlation: the reader's frame check (UTF-8 + the
//! scanner, src/protocol/scan.rs) differentially against serde_json, then `correlate`
//! (src/client/reader.rs) against a pending table (src/client/pending.rs) and a model of it.
//!
//! Input: lines. `I<c>` registers a request (ids req_1, req_2… as the client makes them),
//! `A<n>` abandons one (timeout), `D<n>` removes one (write failed), `X` closes the table,
//! `S<bytes>` synthesises a response from the bytes; any other line is a raw frame.
#![no_main]

use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use libfuzzer_sys::fuzz_target;
use omprpc::fuzzing::{check_frame, correlate, validate, Correlation, Fields, Kind, Pending, Settled, Slot};
use serde_json::{json, Value};

const COMMANDS: [&str; 6] = ["prompt", "get_state", "parse", "bash", "abort_and_prompt", ""];
const SETTLED_MEMORY: usize = 1024;

/// serde_json refuses some JSON that JavaScript's JSON.parse (the agent's side) accepts and
/// the scanner therefore accepts too: lone surrogates, numbers past f64, nesting past 128.
fn explainable(e: &serde_json::Error) -> bool {
    let m = e.to_string();
    ["recursion limit exceeded", "number out of range", "surrogate", "unicode code point", "hex escape"]
        .iter()
        .any(|s| m.contains(s))
}

fn kind_of(v: &Value) -> Kind {
    match v {
        Value::String(_) => Kind::String,
        Value::Number(_) => Kind::Number,
        Value::Object(_) => Kind::Object,
        Value::Array(_) => Kind::Array,
        Value::Bool(true) => Kind::True,
        Value::Bool(false) => Kind::False,
        Value::Null => Kind::Null,
    }
}

/// The scanner and serde_json agree on what is a frame and on its top-level members.
fn classify(line: &[u8], f: &mut Fields) -> bool {
    let ours = check_frame(f, line);
    let theirs = serde_json::from_slice::<Value>(line);
    if let (Ok(_), Ok(v)) = (std::str::from_utf8(line), &theirs) {
        // The full validator accepts what serde accepts (any JSON value).
        assert!(validate(line).is_ok(), "validate refused valid JSON {v}");
    }
    if std::str::from_utf8(line).is_ok() {
        if let Ok(k) = validate(line) {
            match &theirs {
                Ok(v) => assert_eq!(kind_of(v), k),
                Err(e) => assert!(explainable(e), "validate accepted what serde refuses: {e}"),
            }
        }
    }
    match (&ours, &theirs) {
        (Ok(()), Ok(Value::Object(m))) => {
            let keys: BTreeSet<String> = f
                .iter()
                .map(|fl| {
                    let raw = f.raw_key(line, fl);
                    let mut q = b"\"".to_vec();
                    q.extend_from_slice(raw);
                    q.push(b'"');
                    serde_json::from_slice::<String>(&q).expect("serde decoded this key")
                })
                .collect();
            assert_eq!(keys, m.keys().cloned().collect::<BTreeSet<_>>(), "top-level keys differ");
            for (k, v) in m {
                let field = f.get(line, k).expect("key found");
                assert_eq!(field.kind, kind_of(v), "kind of {k}");
                let raw = f.raw(line, k).unwrap();
                assert_eq!(&serde_json::from_slice::<Value>(raw).expect("member parses"), v, "value of {k}");
            }
            assert_eq!(f.str(line, "type").as_deref(), m.get("type").and_then(Value::as_str));
            assert_eq!(f.str(line, "id").as_deref(), m.get("id").and_then(Value::as_str));
            true
        }
        (Ok(()), Ok(other)) => panic!("scanner took a non-object for a frame: {other}"),
        // Two `type` members are refused on purpose (check_frame); serde keeps the last.
        (Err(why), Ok(Value::Object(_))) if why.ends_with("\"type\" members") && f.count(line, "type") >= 2 => false,
        (Err(why), Ok(Value::Object(_))) => panic!("scanner refused a valid object: {why}"),
        (Ok(()), Err(e)) => {
            if !explainable(e) {
                // Nested values are checked for structure only when the line has no control
                // byte (the fast path): with them replaced, serde must agree.
                let full = line.iter().any(|&b| b < 0x20);
                assert!(!full, "scanner accepted invalid JSON in full-check mode: {e}");
                let mut top = b"{".to_vec();
                for (i, fl) in f.iter().enumerate() {
                    if i > 0 {
                        top.push(b',');
                    }
                    top.push(b'"');
                    top.extend_from_slice(f.raw_key(line, fl));
                    top.extend_from_slice(b"\":");
                    match fl.kind {
                        Kind::Object | Kind::Array => top.extend_from_slice(b"null"),
                        _ => top.extend_from_slice(&line[fl.value.clone()]),
                    }
                }
                top.push(b'}');
                match serde_json::from_slice::<Value>(&top) {
                    Ok(Value::Object(_)) => {}
                    Err(e2) if explainable(&e2) => {}
                    other => panic!("scanner accepted a bad top level ({e}): {other:?}"),
                }
            }
            true
        }
        _ => false,
    }
}

#[derive(Default)]
struct Model {
    pending: Vec<(String, String)>,
    slots: Vec<(String, Arc<Slot>)>,
    history: VecDeque<(String, String, Settled)>,
    closed: bool,
    next: u64,
}

impl Model {
    fn remember(&mut self, id: String, cmd: String, how: Settled) {
        if self.history.len() >= SETTLED_MEMORY {
            self.history.pop_front();
        }
        self.history.push_back((id, cmd, how));
    }
    fn settled(&self, id: &str) -> Option<(String, Settled)> {
        self.history.iter().rev().find(|(i, _, _)| i == id).map(|(_, c, h)| (c.clone(), *h))
    }
    fn slot(&self, id: &str) -> Arc<Slot> {
        self.slots.iter().rev().find(|(i, _)| i == id).expect("slot").1.clone()
    }
}

fn response(line: &[u8], f: &Fields, table: &mut Pending, model: &mut Model) {
    let command = f.str(line, "command").unwrap_or_default().into_owned();
    let success = f.kind(line, "success") == Some(Kind::True);
    let got = correlate(f, line, table);
    let id_field = f.get(line, "id");
    match id_field.map(|x| x.kind) {
        Some(Kind::Null) | None => {
            if success {
                assert!(matches!(got, Correlation::IdlessSuccess), "{got:?}");
                return;
            }
            let same: Vec<&(String, String)> = model.pending.iter().filter(|(_, c)| *c == command).collect();
            let target = if same.len() == 1 {
                Some(same[0].0.clone())
            } else if command == "parse" && model.pending.len() == 1 {
                Some(model.pending[0].0.clone())
            } else {
                None
            };
            check_outcome(got, target, None, &command, success, model);
        }
        Some(Kind::String) => {
            // A string id is matched by id only, never by the id-less heuristic.
            let id = f.str(line, "id").map(|c| c.into_owned());
            let target = id.as_ref().filter(|i| model.pending.iter().any(|(p, _)| p == *i)).cloned();
            match &got {
                Correlation::Unmatched { id: Some(_), .. } | Correlation::Resolved { .. } => {}
                other => panic!("a response with a string id came out as {other:?}"),
            }
            check_outcome(got, target, id, &command, success, model);
        }
        Some(_) => {
            assert!(matches!(&got, Correlation::BadId { command: c } if *c == command), "{got:?}");
        }
    }
    assert_eq!(table.count(), model.pending.len());
}

fn check_outcome(got: Correlation, target: Option<String>, id: Option<String>, command: &str, success: bool, model: &mut Model) {
    match (got, target) {
        (Correlation::Resolved { target, sent, rejected, .. }, Some(want)) => {
            assert_eq!(target, want);
            let pos = model.pending.iter().position(|(i, _)| *i == want).unwrap();
            let (_, cmd) = model.pending.remove(pos);
            assert_eq!(sent, cmd);
            assert_eq!(rejected.is_some(), !success);
            let reply = model.slot(&want).wait(Some(Instant::now())).expect("the waiter got its reply");
            assert_eq!(reply.is_ok(), success);
            model.remember(want, cmd, Settled::Answered);
        }
        (Correlation::Unmatched { id: got_id, command: c, rejected, settled }, None) => {
            if let Some(i) = &id {
                assert_eq!(got_id.as_ref(), Some(i));
                assert_eq!(settled, model.settled(i));
            } else {
                assert!(settled.is_none());
            }
            assert_eq!(c, command);
            assert_eq!(rejected.is_some(), !success);
        }
        (got, want) => panic!("correlated to {got:?}, the model says {want:?}"),
    }
}

fn synthesize(b: &[u8], model: &Model) -> Vec<u8> {
    let get = |i: usize| b.get(i).copied().unwrap_or(0);
    let id = match get(0) % 6 {
        0 => Value::Null,
        1 => json!(model.pending.get(get(1) as usize % model.pending.len().max(1)).map_or("req_0".into(), |p| p.0.clone())),
        2 => json!(model.history.back().map_or("req_0".into(), |h| h.0.clone())),
        3 => json!(format!("req_{}", get(1))),
        4 => json!(get(1)),
        _ => json!(String::from_utf8_lossy(&b[b.len().min(3)..])),
    };
    let command = COMMANDS[get(2) as usize % COMMANDS.len()];
    let mut v = json!({"type": "response", "command": command});
    if get(0) / 6 % 2 == 0 {
        v["id"] = id;
    }
    match get(0) / 12 % 4 {
        0 => v["success"] = json!(true),
        1 => v["success"] = json!(false),
        2 => v["success"] = json!("true"),
        _ => {}
    }
    if get(0) / 48 % 2 == 1 {
        v["data"] = json!({"agentInvoked": false});
        v["error"] = json!({"nested": [1, 2]});
    } else {
        v["error"] = json!("boom");
    }
    v.to_string().into_bytes()
}

fuzz_target!(|input: &[u8]| {
    let mut table = Pending::default();
    let mut model = Model::default();
    let mut f = Fields::new();
    for raw in input.split(|&b| b == b'\n') {
        let (op, rest) = match raw.split_first() {
            Some((&op, rest)) => (op, rest),
            None => (0, raw),
        };
        let line: Vec<u8> = match op {
            b'I' => {
                model.next += 1;
                let id = format!("req_{}", model.next);
                let cmd = if rest.len() <= 1 {
                    COMMANDS[rest.first().copied().unwrap_or(0) as usize % COMMANDS.len()].to_string()
                } else {
                    String::from_utf8_lossy(rest).into_owned()
                };
                let slot = Slot::new();
                let r = table.insert(id.clone(), &cmd, slot.clone());
                assert_eq!(r.is_err(), model.closed, "insert after close");
                if !model.closed {
                    model.pending.push((id.clone(), cmd));
                    model.slots.push((id, slot));
                }
                continue;
            }
            b'A' | b'D' if !model.pending.is_empty() => {
                let n = rest.first().copied().unwrap_or(0) as usize % model.pending.len();
                let (id, cmd) = model.pending.remove(n);
                if op == b'A' {
                    table.abandon(&id);
                    model.remember(id, cmd, Settled::TimedOut);
                } else {
                    table.remove(&id);
                }
                assert_eq!(table.count(), model.pending.len());
                continue;
            }
            b'X' => {
                table.close(&omprpc::Error::new(omprpc::Status::Closed, "closed by the fuzzer"));
                for (id, _) in model.pending.drain(..) {
                    let r = model.slots.iter().rev().find(|(i, _)| *i == id).unwrap().1.wait(Some(Instant::now()));
                    assert!(matches!(r, Some(Err(ref e)) if e.status == omprpc::Status::Closed));
                }
                model.closed = true;
                assert_eq!(table.count(), 0);
                continue;
            }
            b'S' => synthesize(rest, &model),
            _ => raw.to_vec(),
        };
        if classify(&line, &mut f) && f.str_bytes(&line, "type").as_deref() == Some(b"response") {
            response(&line, &f, &mut table, &mut model);
        }
    }
});
