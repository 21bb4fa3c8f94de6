//! Host tools and host URIs (omp): the registered names, the calls the agent has open, the
//! checks on incoming calls (a malformed call with an id gets an error result, never silence)
//! and on the host's replies, and the toolCallId → host tool name map for xd-dispatched calls.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::bridge::Conn;
use crate::error::{Error, Result, Status};

/// Open calls the xd rename map remembers at most (entries normally leave at
/// `tool_execution_end`; this bounds the ones that never get one, spec §6.17).
const XD_MEMORY: usize = 4096;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CallKind {
    Tool,
    UriRead,
    UriWrite,
}

/// Where a call came from, and so where its replies go.
#[derive(Clone)]
pub enum Route {
    /// omp's own `host_tool_call`: replies are frames on the agent's stdin.
    Stdin,
    /// A call through the tool bridge (pi): replies go back on that bridge connection.
    Bridge(Arc<Conn>),
}

/// A reply ready to send, with its destination.
pub enum Outgoing {
    Stdin(Vec<u8>),
    Bridge(Arc<Conn>, Vec<u8>),
}

impl std::fmt::Debug for Outgoing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (to, frame) = match self {
            Outgoing::Stdin(b) => ("stdin", b),
            Outgoing::Bridge(_, b) => ("bridge", b),
        };
        write!(f, "Outgoing({to}: {})", String::from_utf8_lossy(frame))
    }
}

struct Call {
    kind: CallKind,
    cancelled: bool,
    route: Route,
}

#[derive(Default)]
pub struct HostRegistry {
    tools: HashSet<String>,
    /// scheme → writable
    schemes: HashMap<String, bool>,
    calls: HashMap<String, Call>,
    /// Calls the agent cancelled, remembered (bounded) so a late reply gets CANCELLED rather
    /// than NOT_FOUND — while the registry itself forgets them at once, replied to or not.
    cancelled: VecDeque<String>,
    xd: HashMap<String, String>,
    xd_order: VecDeque<String>,
}

/// The outcome of checking an incoming call.
pub enum Incoming {
    /// Valid: deliver the frame to the host as an event.
    Deliver,
    /// Invalid but with an id: the library answers with this error itself.
    Reject(Outgoing),
    /// Invalid and without a usable id: nothing can be answered; record it.
    Unanswerable(String),
}

fn tool_error(route: &Route, id: &str, text: &str) -> Outgoing {
    let result = json!({"content": [{"type": "text", "text": text}], "details": {}});
    tool_result_out(route, id, result, true)
}

fn tool_result_out(route: &Route, id: &str, result: Value, is_error: bool) -> Outgoing {
    match route {
        Route::Stdin => {
            let mut v = json!({"type": "host_tool_result", "id": id, "result": result});
            if is_error {
                v["isError"] = Value::Bool(true);
            }
            Outgoing::Stdin(v.to_string().into_bytes())
        }
        Route::Bridge(conn) => Outgoing::Bridge(
            conn.clone(),
            json!({"id": conn.ext_id(id), "result": result, "isError": is_error}).to_string().into_bytes(),
        ),
    }
}

fn uri_error_frame(id: &str, text: &str) -> Vec<u8> {
    json!({"type": "host_uri_result", "id": id, "error": text, "isError": true}).to_string().into_bytes()
}

/// A tool result or update from the host: `"text"` or `{content:[…], details?}`.
pub fn normalize_tool_result(v: Value) -> Result<Value> {
    match v {
        Value::String(s) => Ok(json!({"content": [{"type": "text", "text": s}]})),
        Value::Object(m) if m.get("content").is_some_and(Value::is_array) => Ok(Value::Object(m)),
        _ => Err(Error::invalid("a host tool result must be a string or an object with a \"content\" array")),
    }
}

/// Lower-cased scheme of a URL (`memo://x` → `memo`).
fn scheme_of(url: &str) -> Option<String> {
    let (scheme, _) = url.split_once(':')?;
    let s = scheme.trim().to_ascii_lowercase();
    let valid = s.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "+.-".contains(c));
    valid.then_some(s)
}

impl HostRegistry {
    /// Calls (tool or URI, stdin or bridge) the agent is waiting on the host to answer.
    pub fn open_calls(&self) -> usize {
        self.calls.len()
    }

    /// Checks a `set_host_tools` list and returns the names it registers.
    pub fn check_tools(tools: &Value) -> Result<Vec<String>> {
        let list = tools.as_array().ok_or_else(|| Error::invalid_json("host tools must be a JSON array"))?;
        let mut names = Vec::with_capacity(list.len());
        for t in list {
            let name = t.get("name").and_then(Value::as_str).map(str::trim).unwrap_or("");
            if name.is_empty() {
                return Err(Error::invalid("every host tool needs a non-empty string \"name\""));
            }
            if !t.get("description").is_some_and(Value::is_string) {
                return Err(Error::invalid(format!("host tool \"{name}\" needs a string \"description\"")));
            }
            if !t.get("parameters").is_some_and(Value::is_object) {
                return Err(Error::invalid(format!("host tool \"{name}\" needs a JSON-Schema object \"parameters\"")));
            }
            names.push(name.to_string());
        }
        Ok(names)
    }

    pub fn set_tools(&mut self, names: Vec<String>) {
        self.tools = names.into_iter().collect();
    }

    /// Adds tool names; returns those that were not registered yet (what a refused
    /// `add_host_tools` takes back with `remove_tools`).
    pub fn add_tools(&mut self, names: &[String]) -> Vec<String> {
        names.iter().filter(|n| self.tools.insert((*n).clone())).cloned().collect()
    }

    pub fn remove_tools(&mut self, names: &[String]) {
        for n in names {
            self.tools.remove(n);
        }
    }

    /// Checks a list of names (`remove_host_tools`' `toolNames`, `remove_host_uri_schemes`'
    /// `schemes`): a JSON array of non-empty strings.
    pub fn check_names(list: &Value, what: &str) -> Result<Vec<String>> {
        let list = list.as_array().ok_or_else(|| Error::invalid_json(format!("{what} must be a JSON array of strings")))?;
        list.iter()
            .map(|n| match n.as_str().map(str::trim) {
                Some(name) if !name.is_empty() => Ok(name.to_string()),
                _ => Err(Error::invalid(format!("{what} must be non-empty strings, not {n}"))),
            })
            .collect()
    }

    /// Checks a `set_host_uri_schemes` list; returns (scheme, writable) pairs.
    pub fn check_schemes(schemes: &Value) -> Result<Vec<(String, bool)>> {
        let list = schemes.as_array().ok_or_else(|| Error::invalid_json("host URI schemes must be a JSON array"))?;
        list.iter()
            .map(|s| {
                let raw = s.get("scheme").and_then(Value::as_str).unwrap_or("");
                let scheme = scheme_of(&format!("{}:", raw.trim()))
                    .ok_or_else(|| Error::invalid(format!("host URI scheme {raw:?} is not a valid scheme name")))?;
                Ok((scheme, s.get("writable").and_then(Value::as_bool).unwrap_or(false)))
            })
            .collect()
    }

    pub fn set_schemes(&mut self, schemes: Vec<(String, bool)>) {
        self.schemes = schemes.into_iter().collect();
    }

    /// Adds (or redefines) schemes; returns what each one was before (None: new), which a
    /// refused `add_host_uri_schemes` puts back with `restore_schemes`.
    pub fn add_schemes(&mut self, schemes: &[(String, bool)]) -> Vec<(String, Option<bool>)> {
        schemes.iter().map(|(s, w)| (s.clone(), self.schemes.insert(s.clone(), *w))).collect()
    }

    pub fn restore_schemes(&mut self, before: &[(String, Option<bool>)]) {
        for (s, w) in before.iter().rev() {
            match w {
                Some(w) => self.schemes.insert(s.clone(), *w),
                None => self.schemes.remove(s),
            };
        }
    }

    pub fn remove_schemes(&mut self, schemes: &[String]) {
        for s in schemes {
            self.schemes.remove(&s.to_ascii_lowercase());
        }
    }

    pub fn on_tool_call(&mut self, f: &Map<String, Value>, route: Route) -> Incoming {
        let Some(id) = f.get("id").and_then(Value::as_str) else {
            return Incoming::Unanswerable("host_tool_call without a string id".into());
        };
        let (Some(name), Some(call_id)) =
            (f.get("toolName").and_then(Value::as_str), f.get("toolCallId").and_then(Value::as_str))
        else {
            return Incoming::Reject(tool_error(&route, id, "Host tool call needs string toolName and toolCallId"));
        };
        if !f.get("arguments").is_some_and(Value::is_object) {
            return Incoming::Reject(tool_error(&route, id, "Host tool arguments must be an object"));
        }
        if !self.tools.contains(name) {
            return Incoming::Reject(tool_error(&route, id, &format!("Host tool \"{name}\" is not registered")));
        }
        if self.xd_order.len() >= XD_MEMORY {
            if let Some(old) = self.xd_order.pop_front() {
                self.xd.remove(&old);
            }
        }
        self.xd.insert(call_id.to_string(), name.to_string());
        self.xd_order.push_back(call_id.to_string());
        if self.calls.contains_key(id) {
            return Incoming::Reject(tool_error(&route, id, &format!("Host tool call id {id:?} is already open")));
        }
        self.calls.insert(id.to_string(), Call { kind: CallKind::Tool, cancelled: false, route });
        Incoming::Deliver
    }

    pub fn on_uri_request(&mut self, f: &Map<String, Value>) -> Incoming {
        let Some(id) = f.get("id").and_then(Value::as_str) else {
            return Incoming::Unanswerable("host_uri_request without a string id".into());
        };
        let kind = match f.get("operation").and_then(Value::as_str) {
            Some("read") => CallKind::UriRead,
            Some("write") => CallKind::UriWrite,
            other => return Incoming::Reject(Outgoing::Stdin(uri_error_frame(id, &format!("Unsupported host URI operation {other:?}")))),
        };
        let Some(url) = f.get("url").and_then(Value::as_str) else {
            return Incoming::Reject(Outgoing::Stdin(uri_error_frame(id, "Host URI request needs a string url")));
        };
        let scheme = scheme_of(url).unwrap_or_default();
        match self.schemes.get(&scheme) {
            None => {
                return Incoming::Reject(Outgoing::Stdin(uri_error_frame(
                    id,
                    &format!("Host URI scheme \"{scheme}://\" is not registered"),
                )))
            }
            Some(false) if kind == CallKind::UriWrite => {
                return Incoming::Reject(Outgoing::Stdin(uri_error_frame(
                    id,
                    &format!("Host URI scheme \"{scheme}://\" is read-only: it has no write handler"),
                )))
            }
            _ => {}
        }
        self.calls.insert(id.to_string(), Call { kind, cancelled: false, route: Route::Stdin });
        Incoming::Deliver
    }

    /// `host_tool_cancel` / `host_uri_cancel`: a later result is dropped. Returns whether
    /// an open call was cancelled.
    pub fn on_cancel(&mut self, target: &str) -> bool {
        if self.calls.remove(target).is_none() {
            return false;
        }
        if self.cancelled.len() >= XD_MEMORY {
            self.cancelled.pop_front();
        }
        self.cancelled.push_back(target.to_string());
        true
    }

    /// The bridge calls a connection had open (it closed): they are cancelled.
    pub fn cancel_route(&mut self, conn: &Arc<Conn>) -> Vec<String> {
        let ids: Vec<String> = self
            .calls
            .iter()
            .filter(|(_, c)| matches!(&c.route, Route::Bridge(rc) if Arc::ptr_eq(rc, conn)))
            .map(|(id, _)| id.clone())
            .collect();
        for id in &ids {
            self.on_cancel(id);
        }
        ids
    }

    /// The host tool name to show on `tool_execution_*` for `tool_call_id`, when it differs
    /// from `shown` (xd dispatch names the outer `write` tool). `end` forgets the call.
    pub fn rename(&mut self, tool_call_id: &str, shown: &str, end: bool) -> Option<String> {
        let name = if end { self.xd.remove(tool_call_id) } else { self.xd.get(tool_call_id).cloned() };
        name.filter(|n| n != shown)
    }

    fn open(&mut self, id: &str, finish: bool, uri: bool) -> Result<(CallKind, Route)> {
        if !self.calls.contains_key(id) && self.cancelled.iter().any(|c| c == id) {
            return Err(Error::new(Status::Cancelled, format!("the agent cancelled host call {id:?}; the reply was dropped")));
        }
        let call = self
            .calls
            .get(id)
            .filter(|c| (c.kind != CallKind::Tool) == uri)
            .ok_or_else(|| Error::new(Status::NotFound, format!("no open host {} call with id {id:?}", if uri { "URI" } else { "tool" })))?;
        let (kind, cancelled, route) = (call.kind, call.cancelled, call.route.clone());
        if finish || cancelled {
            self.calls.remove(id);
        }
        if cancelled {
            return Err(Error::new(Status::Cancelled, format!("the agent cancelled host call {id:?}; the reply was dropped")));
        }
        Ok((kind, route))
    }

    pub fn tool_update(&mut self, id: &str, partial: Value) -> Result<Outgoing> {
        let partial = normalize_tool_result(partial)?;
        Ok(match self.open(id, false, false)?.1 {
            Route::Stdin => Outgoing::Stdin(
                json!({"type": "host_tool_update", "id": id, "partialResult": partial}).to_string().into_bytes(),
            ),
            Route::Bridge(conn) => {
                let frame = json!({"id": conn.ext_id(id), "update": partial}).to_string().into_bytes();
                Outgoing::Bridge(conn, frame)
            }
        })
    }

    pub fn tool_result(&mut self, id: &str, result: Value, is_error: bool) -> Result<Outgoing> {
        let result = normalize_tool_result(result)?;
        let route = self.open(id, true, false)?.1;
        Ok(tool_result_out(&route, id, result, is_error))
    }

    pub fn uri_result_frame(&mut self, id: &str, result: Value) -> Result<Vec<u8>> {
        let Value::Object(mut m) = result else {
            return Err(Error::invalid_json("a host URI result must be a JSON object"));
        };
        if let Some(e) = m.get("error") {
            let text = e.as_str().ok_or_else(|| Error::invalid("host URI \"error\" must be a string"))?.to_string();
            self.open(id, true, true)?;
            return Ok(uri_error_frame(id, &text));
        }
        let kind = self.calls.get(id).map(|c| c.kind);
        if kind == Some(CallKind::UriRead) {
            if !m.get("content").is_some_and(Value::is_string) {
                return Err(Error::invalid("a host URI read result needs a string \"content\""));
            }
            if let Some(ct) = m.get("contentType") {
                if !matches!(ct.as_str(), Some("text/markdown" | "application/json" | "text/plain")) {
                    return Err(Error::invalid("host URI contentType must be text/markdown, application/json or text/plain"));
                }
            }
        }
        self.open(id, true, true)?;
        if kind == Some(CallKind::UriWrite) {
            m.clear();
        }
        m.insert("type".into(), json!("host_uri_result"));
        m.insert("id".into(), json!(id));
        Ok(Value::Object(m).to_string().into_bytes())
    }

    /// The client closed: every open call is cancelled, and each open bridge call gets an
    /// error reply so the extension's promise settles with a reason.
    pub fn close(&mut self) -> Vec<Outgoing> {
        let mut replies = Vec::new();
        for (id, c) in self.calls.iter_mut() {
            if let (Route::Bridge(_), false) = (&c.route, c.cancelled) {
                replies.push(tool_error(&c.route, id, "the host closed the session before answering"));
            }
            c.cancelled = true;
        }
        replies
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    fn frame(v: Vec<u8>) -> Value {
        serde_json::from_slice(&v).unwrap()
    }

    #[test]
    fn incoming_tool_calls_are_checked() {
        let mut h = HostRegistry::default();
        h.set_tools(HostRegistry::check_tools(&json!([{"name": "echo", "description": "d", "parameters": {"type": "object"}}])).unwrap());
        let ok = obj(json!({"id": "c1", "toolCallId": "t1", "toolName": "echo", "arguments": {}}));
        assert!(matches!(h.on_tool_call(&ok, Route::Stdin), Incoming::Deliver));
        let Incoming::Reject(Outgoing::Stdin(f)) = h.on_tool_call(&obj(json!({"id": "c2", "toolCallId": "t", "toolName": "echo", "arguments": "x"})), Route::Stdin) else { panic!() };
        assert_eq!(frame(f)["result"]["content"][0]["text"], "Host tool arguments must be an object");
        let Incoming::Reject(Outgoing::Stdin(f)) = h.on_tool_call(&obj(json!({"id": "c3", "toolCallId": "t", "toolName": "nope", "arguments": {}})), Route::Stdin) else { panic!() };
        assert_eq!(frame(f)["result"]["content"][0]["text"], "Host tool \"nope\" is not registered");
        assert!(matches!(h.on_tool_call(&obj(json!({"toolName": "echo"})), Route::Stdin), Incoming::Unanswerable(_)));
        assert_eq!(h.rename("t1", "write", false).as_deref(), Some("echo"));
        assert_eq!(h.rename("t1", "echo", false), None);
        assert_eq!(h.rename("t1", "write", true).as_deref(), Some("echo"));
        assert_eq!(h.rename("t1", "write", true), None);
    }

    #[test]
    fn replies_respect_cancellation_and_ids() {
        let mut h = HostRegistry::default();
        h.set_tools(vec!["echo".into()]);
        h.on_tool_call(&obj(json!({"id": "c1", "toolCallId": "t1", "toolName": "echo", "arguments": {}})), Route::Stdin);
        let Outgoing::Stdin(u) = h.tool_update("c1", json!("working")).unwrap() else { panic!() };
        let u = frame(u);
        assert_eq!(u["partialResult"]["content"][0]["text"], "working");
        assert_eq!(h.tool_result("c9", json!("x"), false).unwrap_err().status, Status::NotFound);
        assert_eq!(h.tool_result("c1", json!(5), false).unwrap_err().status, Status::InvalidArgument);
        assert!(h.on_cancel("c1"));
        assert!(!h.on_cancel("c1"), "only an open call can be cancelled");
        assert_eq!(h.calls.len(), 0, "a cancelled call leaves the registry at once");
        assert_eq!(h.tool_result("c1", json!("x"), false).unwrap_err().status, Status::Cancelled);
        assert_eq!(h.tool_update("c1", json!("x")).unwrap_err().status, Status::Cancelled);
    }

    #[test]
    fn uri_requests_and_results() {
        let mut h = HostRegistry::default();
        h.set_schemes(HostRegistry::check_schemes(&json!([{"scheme": " Memo "}, {"scheme": "rw", "writable": true}])).unwrap());
        assert!(HostRegistry::check_schemes(&json!([{"scheme": ""}])).is_err());
        let read = obj(json!({"id": "u1", "operation": "read", "url": "MEMO://notes"}));
        assert!(matches!(h.on_uri_request(&read), Incoming::Deliver));
        let Incoming::Reject(Outgoing::Stdin(f)) = h.on_uri_request(&obj(json!({"id": "u2", "operation": "write", "url": "memo://x", "content": "c"}))) else { panic!() };
        assert!(frame(f)["error"].as_str().unwrap().contains("write handler"));
        let Incoming::Reject(Outgoing::Stdin(f)) = h.on_uri_request(&obj(json!({"id": "u3", "operation": "read", "url": "zzz://x"}))) else { panic!() };
        assert!(frame(f)["error"].as_str().unwrap().contains("not registered"));
        assert!(h.uri_result_frame("u1", json!({"content": "x", "contentType": "image/png"})).is_err());
        let r = frame(h.uri_result_frame("u1", json!({"content": "x", "contentType": "text/plain"})).unwrap());
        assert_eq!(r, json!({"type": "host_uri_result", "id": "u1", "content": "x", "contentType": "text/plain"}));
        assert!(matches!(h.on_uri_request(&obj(json!({"id": "w", "operation": "write", "url": "rw://x"}))), Incoming::Deliver));
        assert_eq!(frame(h.uri_result_frame("w", json!({"ignored": 1})).unwrap()), json!({"type": "host_uri_result", "id": "w"}));
    }
}
