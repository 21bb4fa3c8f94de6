//! The client against protocol 1.1 ("omp-rpc" 1.1.0, the omp fork `omp_rpc` is written for),
//! served by the fake agent's `--protocol 1.1` (what that server sends:
//! `tests/support/OMP11-NOTES.md`): typed errors reach the error, operations are waited for,
//! host tools and URI schemes are registered incrementally.

#[path = "support/fake.rs"]
mod fake;

use std::time::Duration;

use fake::{secs, FAKE};
use omprpc::client::{deadline_after, parse_params};
use omprpc::{Client, Status};
use serde_json::{json, Value};

fn start() -> Client {
    fake::start_with(json!({"command": [FAKE, "--protocol", "1.1"]}))
}

fn parse(s: impl AsRef<[u8]>) -> Value {
    serde_json::from_slice(s.as_ref()).unwrap()
}

fn request(c: &Client, ty: &str, params: Value) -> Result<Value, omprpc::Error> {
    let p = parse_params(Some(&params.to_string())).unwrap();
    c.request(ty, p.as_ref(), secs(10)).map(|d| parse(&d))
}

/// The error JSON a C caller gets.
fn error_json(e: omprpc::Error) -> Value {
    parse(e.to_json())
}

/// Every event queued now.
fn drain(c: &Client) -> Vec<Value> {
    let mut out = Vec::new();
    while let Ok(evs) = c.next_events(1000, deadline_after(Some(Duration::ZERO))) {
        out.extend(evs.iter().map(|e| parse(&e[..])));
    }
    out
}

#[test]
fn the_ready_frame_and_get_protocol_info_describe_the_protocol() {
    let c = start();
    let info = parse(c.info());
    let ready = &info["ready"];
    assert_eq!(ready["protocol"], json!({"name": "omp-rpc", "version": "1.1.0", "schemaVersion": 1}));
    assert_eq!(ready["seq"], 1, "frame metadata");
    assert_eq!(info["protocolVersion"], 1, "no v2 offered: nothing negotiated");
    let data = request(&c, "get_protocol_info", json!({})).unwrap();
    assert_eq!(data["protocol"], ready["protocol"]);
    assert!(data["capabilities"]["commands"].as_array().unwrap().contains(&json!("cancel_operation")));
    assert!(data.get("seq").is_none(), "metadata is the frame's, not the data's");
    c.close().unwrap();
}

#[test]
fn typed_errors_reach_the_error() {
    let c = start();
    let e = error_json(request(&c, "no_such_command", json!({})).unwrap_err());
    assert_eq!((e["code"].as_str(), e["errorCode"].as_str()), (Some("COMMAND_FAILED"), Some("unknown_command")));
    assert_eq!(e["errorInfo"], json!({"code": "unknown_command", "message": "Unknown command: no_such_command", "retryable": false}));
    let e = error_json(request(&c, "cancel_operation", json!({"operationId": "op_gone"})).unwrap_err());
    assert_eq!((e["command"].as_str(), e["errorCode"].as_str()), (Some("cancel_operation"), Some("operation_not_found")));
    assert_eq!(e["error"], "Operation not found: op_gone");
    let e = error_json(request(&c, "add_host_uri_schemes", json!({"schemes": [{"scheme": "omp"}]})).unwrap_err());
    assert_eq!(e["errorInfo"]["details"], json!({"scheme": "omp"}));
    assert_eq!(e["errorCode"], "host_uri_denied");
    assert_eq!(c.protocol_errors(), "[]");
    c.close().unwrap();
}

#[test]
fn an_operation_is_waited_for_and_returns_its_end() {
    let c = start();
    drain(&c); // ready
    // bash is acknowledged as an operation; the request returns the operation's result.
    let out = request(&c, "bash", json!({"command": "echo hi"})).unwrap();
    assert_eq!((out["output"].as_str(), out["exitCode"].as_i64()), (Some("echo hi\n"), Some(0)));
    let compacted = request(&c, "compact", json!({})).unwrap();
    assert_eq!(compacted["summary"], "trimmed");
    // The operation frames are events too, in the agent's order.
    let types: Vec<String> = drain(&c).iter().map(|e| e["type"].as_str().unwrap_or("").to_string()).collect();
    assert_eq!(types, ["operation_start", "operation_end", "operation_start", "operation_end"]);
    // An operation that fails: operation_error becomes the command's error.
    let e = error_json(request(&c, "login", json!({"providerId": "nobody"})).unwrap_err());
    assert_eq!((e["command"].as_str(), e["errorCode"].as_str()), (Some("login"), Some("invalid_arguments")));
    assert_eq!(e["errorInfo"]["details"], json!({"providerId": "nobody"}));
    // A login that succeeds asks the host to open a URL (a passive UI request) and ends.
    let done = request(&c, "login", json!({"providerId": "anthropic"})).unwrap();
    assert_eq!(done, json!({"providerId": "anthropic"}));
    assert!(drain(&c).iter().any(|e| e["method"] == "open_url" && e["url"] == "https://example.invalid/oauth"));
    c.close().unwrap();
}

#[test]
fn cancel_operation_ends_a_running_operation() {
    let c = start();
    std::thread::scope(|s| {
        let running = s.spawn(|| request(&c, "bash", json!({"command": "hang"})));
        let start = loop {
            let evs = c.next_events(1, secs(10)).unwrap();
            let ev = parse(&evs[0][..]);
            if ev["type"] == "operation_start" {
                break ev;
            }
        };
        let op = start["operationId"].as_str().unwrap();
        assert_eq!(request(&c, "cancel_operation", json!({"operationId": op})).unwrap(), json!({"operationId": op}));
        let e = error_json(running.join().unwrap().unwrap_err());
        assert_eq!((e["command"].as_str(), e["errorCode"].as_str()), (Some("bash"), Some("operation_cancelled")));
        assert_eq!(e["error"], format!("Operation cancelled: {op}"));
    });
    // A deadline that passes while the operation runs is a TIMEOUT; abort_bash then ends it.
    let p = parse_params(Some(r#"{"command":"hang"}"#)).unwrap();
    let e = c.request("bash", p.as_ref(), deadline_after(Some(Duration::from_millis(2000)))).unwrap_err();
    assert_eq!(e.status, Status::Timeout, "{e}");
    assert!(e.message.contains("Timed out waiting for operation op_"), "{e}");
    request(&c, "abort_bash", json!({})).unwrap();
    let ended = drain(&c).into_iter().find(|e| e["type"] == "operation_error").expect("the cancelled operation's end");
    assert_eq!(ended["status"], "cancelled");
    c.close().unwrap();
}

#[test]
fn host_tools_and_uri_schemes_are_registered_incrementally() {
    let c = start();
    let echo = json!([{"name": "echo_host", "description": "Echo", "parameters": {"type": "object"}}]);
    let other = json!([{"name": "other_host", "description": "Other", "parameters": {"type": "object"}}]);
    assert_eq!(parse(c.add_host_tools(echo, secs(10)).unwrap()), json!({"toolNames": ["echo_host"]}));
    assert_eq!(parse(c.add_host_tools(other, secs(10)).unwrap()), json!({"toolNames": ["echo_host", "other_host"]}));
    // An added tool is known to the library: its call is delivered to the host.
    c.prompt("prompt", "needs host tool", None, secs(10)).unwrap();
    let call = loop {
        let ev = parse(&c.next_events(1, secs(10)).unwrap()[0][..]);
        if ev["type"] == "host_tool_call" {
            break ev;
        }
    };
    assert_eq!(call["toolName"], "echo_host");
    c.host_tool_result(call["id"].as_str().unwrap(), json!("echoed"), false).unwrap();
    c.wait_for_idle(secs(10)).unwrap();
    assert_eq!(parse(c.remove_host_tools(json!(["echo_host"]), secs(10)).unwrap()), json!({"toolNames": ["other_host"]}));
    // A removed tool is not: the library answers its call with an error and records it.
    drain(&c);
    c.prompt("prompt", "needs host tool", None, secs(10)).unwrap();
    c.wait_for_idle(secs(10)).unwrap();
    assert!(!drain(&c).iter().any(|e| e["type"] == "host_tool_call"));
    let records = parse(c.protocol_errors());
    assert!(
        records.as_array().unwrap().iter().any(|r| r["frame"]["toolName"] == "echo_host" && r["message"].as_str().unwrap().contains("is not registered")),
        "{records}"
    );
    // Bad lists are refused before anything is sent.
    assert_eq!(c.remove_host_tools(json!([""]), secs(10)).unwrap_err().status, Status::InvalidArgument);
    assert_eq!(c.add_host_tools(json!([{"name": "x"}]), secs(10)).unwrap_err().status, Status::InvalidArgument);

    let docs = json!([{"scheme": "docs", "description": "Docs", "trustClass": "workspace", "range": true}]);
    assert_eq!(parse(c.add_host_uri_schemes(docs, secs(10)).unwrap()), json!({"schemes": ["docs"]}));
    assert_eq!(parse(c.add_host_uri_schemes(json!([{"scheme": "Memo"}]), secs(10)).unwrap()), json!({"schemes": ["docs", "memo"]}));
    // A refused addition leaves what was registered.
    assert_eq!(c.add_host_uri_schemes(json!([{"scheme": "omp"}]), secs(10)).unwrap_err().status, Status::CommandFailed);
    assert_eq!(parse(c.remove_host_uri_schemes(json!(["docs"]), secs(10)).unwrap()), json!({"schemes": ["memo"]}));
    c.close().unwrap();
}

#[test]
fn incremental_registration_is_refused_where_it_cannot_work() {
    // pi's host tools come from the bridge extension, fixed at start.
    let c = fake::start_with(json!({"command": [FAKE, "--flavor", "pi"], "flavor": "pi"}));
    let e = c.add_host_tools(json!([{"name": "t", "description": "d", "parameters": {"type": "object"}}]), secs(10)).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    assert!(e.message.contains("registered at start"), "{e}");
    c.close().unwrap();
    // An agent without the command refuses it; the registry is as it was.
    let c = fake::start_with(json!({"command": [FAKE]}));
    let e = c.add_host_tools(json!([{"name": "echo_host", "description": "d", "parameters": {"type": "object"}}]), secs(10)).unwrap_err();
    assert_eq!(e.status, Status::CommandFailed);
    c.prompt("prompt", "needs host tool", None, secs(10)).unwrap();
    c.wait_for_idle(secs(10)).unwrap();
    assert!(c.protocol_errors().contains("is not registered"), "the refused tool was taken back: {}", c.protocol_errors());
    c.close().unwrap();
}

#[test]
fn session_entries_tree_and_observable_sessions() {
    let c = start();
    let t = parse(c.prompt_and_wait("hello", None, secs(10)).unwrap());
    assert!(t["assistantText"].is_string(), "{t}");
    let all = request(&c, "get_session_entries", json!({})).unwrap();
    let types: Vec<&str> = all["entries"].as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(&types[..2], ["model_change", "thinking_level_change"]);
    assert!(types[2..].iter().all(|t| *t == "message") && types.len() > 2, "{types:?}");
    assert_eq!(all["total"], types.len());
    let page = request(&c, "get_session_entries", json!({"offset": 0, "limit": 1, "entryTypes": ["thinking_level_change", "message"], "includeContent": false})).unwrap();
    assert_eq!((page["offset"].as_u64(), page["limit"].as_u64(), page["nextOffset"].as_u64()), (Some(0), Some(1), Some(1)));
    assert_eq!(page["total"].as_u64(), Some(types.len() as u64 - 1));
    assert_eq!(page["entries"][0]["type"], "thinking_level_change");
    assert!(page["entries"][0].get("entry").is_none(), "includeContent:false");
    let tree = request(&c, "get_session_tree", json!({"includeEntries": true})).unwrap();
    assert_eq!(tree["root"][0]["type"], "model_change");
    assert_eq!(tree["root"][0]["children"][0]["parentId"], tree["root"][0]["id"]);
    assert_eq!(tree["currentLeafId"], all["currentLeafId"]);
    let sessions = request(&c, "get_observable_sessions", json!({})).unwrap();
    assert_eq!(sessions["sessions"][0]["id"], "main");
    c.close().unwrap();
}

// The raw-frame tap (omp_rpc's on_frame): with queue_responses, every response is queued too,
// verbatim, after the events before it and before its call returns.
#[test]
fn queue_responses_taps_every_frame() {
    let c = fake::start_with(json!({"command": [FAKE, "--protocol", "1.1"], "queue_responses": true}));
    drain(&c); // ready
    let out = request(&c, "bash", json!({"command": "echo hi"})).unwrap();
    assert_eq!(out["output"], "echo hi\n");
    let frames = drain(&c);
    let types: Vec<&str> = frames.iter().map(|f| f["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["operation_start", "response", "operation_end"]);
    assert_eq!(frames[1]["data"]["ack"], "accepted");
    assert!(frames[1]["seq"].is_u64(), "verbatim: {}", frames[1]);
    c.close().unwrap();
    // Off (the default): responses reach only their calls.
    let c = start();
    drain(&c);
    request(&c, "get_state", json!({})).unwrap();
    assert!(drain(&c).is_empty());
    // Switched at run time: tapped from the next response on, then off again.
    c.set_queue_responses(true);
    request(&c, "get_state", json!({})).unwrap();
    let frames = drain(&c);
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0]["type"], "response");
    assert_eq!(frames[0]["command"], "get_state");
    c.set_queue_responses(false);
    request(&c, "get_state", json!({})).unwrap();
    assert!(drain(&c).is_empty());
    c.close().unwrap();
}

// An id-less fault the agent reports (`protocol_error` frame) is queued as it came and
// recorded, with its typed error.
#[test]
fn the_agents_protocol_errors_are_recorded() {
    let c = start();
    drain(&c);
    let p = parse_params(Some(r#"{"type":"no_such_frame"}"#)).unwrap().unwrap();
    c.send_frame(&p).unwrap();
    request(&c, "get_state", json!({})).unwrap(); // the agent answers in order: its fault came first
    let frames = drain(&c);
    let raw = frames.iter().find(|f| f["type"] == "protocol_error" && f.get("omprpc").is_none()).expect("the agent's frame");
    assert_eq!(raw["errorInfo"]["code"], "unknown_command");
    let records = parse(c.protocol_errors());
    let rec = &records[0];
    assert_eq!(rec["message"], "the agent reported a protocol error: Unknown command: no_such_frame");
    assert_eq!(rec["frame"]["errorInfo"]["code"], "unknown_command");
    assert!(frames.iter().any(|f| f["type"] == "protocol_error" && f["omprpc"] == true));
    c.close().unwrap();
}
