//! The Rust client against the REAL omp 18.2.3 (`@oh-my-pi/pi-coding-agent`, run by Bun from
//! npm), offline, with `omprpc-fake-llm` as its model — the scenarios of `tests/real_pi.rs`.
//!
//! Opt-in: without `OMPRPC_REAL_OMP=1` every test prints "set OMPRPC_REAL_OMP=1 (make
//! test-omp)" and passes (omp + Bun are ~1.5 GB). With it, omp is installed once into a cache
//! outside the repository (see `tests/support/omp.rs`); a failed install fails the tests.
//!
//! Run: `make test-omp`, or `OMPRPC_REAL_OMP=1 cargo test --test real_omp -- --nocapture`.
//! What omp does on the wire is written down in `tests/support/OMP-NOTES.md`.

#[path = "support/omp.rs"]
mod omp;
#[path = "support/common.rs"]
mod common;
#[path = "support/pi.rs"]
mod pi;

use std::time::{Duration, Instant};

use omp::OmpEnv;
use common::{answer_host_add, events, one, parse, result_text, secs, tool_names, turn, wait_event, wait_event_after};
use omprpc::client::{deadline_after, parse_params};
use omprpc::{Client, Status};
use serde_json::{json, Value};

fn start(env: &OmpEnv, extra_args: &[&str], extra_opts: Value) -> Client {
    common::start_with("omp", env.options(extra_args), extra_opts)
}

fn system_prompt(request: &Value) -> String {
    request["messages"][0]["content"].as_str().unwrap_or_default().to_string()
}

/// The text parts of the last user message of an LLM request.
fn last_user_texts(request: &Value) -> Vec<String> {
    let msgs = request["messages"].as_array().unwrap();
    let user = msgs.iter().rev().find(|m| m["role"] == "user").unwrap();
    match &user["content"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str().map(str::to_string)).collect(),
        _ => vec![],
    }
}

// (a) A plain text turn.
#[test]
fn text_turn() {
    let Some(env) = OmpEnv::new("text_turn", json!([{"match": "say hello", "replies": [{"text": "Hello from the fake model"}]}])) else { return };
    let c = start(&env, &[], json!({}));
    let t = turn(&c, "say hello");
    assert_eq!(t["assistantText"], "Hello from the fake model");
    assert_eq!(t["agentInvoked"], true);
    assert_eq!(t["assistantMessage"]["stopReason"], "stop");
    assert_eq!(t["assistantMessage"]["provider"], "fake");
    // The text came as several deltas.
    let deltas: Vec<&str> = events(&t, "message_update")
        .iter()
        .filter(|e| e["assistantMessageEvent"]["type"] == "text_delta")
        .map(|e| e["assistantMessageEvent"]["delta"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, ["Hello ", "from ", "the ", "fake ", "model"]);
    let types: Vec<&str> = t["events"].as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"agent_start"));
    assert_eq!(types.last(), Some(&"agent_end"));
    // The user message as omp records it: the prompt text alone.
    let user = &t["messages"][0];
    assert_eq!((user["role"].as_str(), user["content"].clone()), (Some("user"), json!([{"type": "text", "text": "say hello"}])));
    // What omp sent the model: one streaming request, its system prompt, its default tools.
    let reqs = env.llm_requests();
    assert_eq!(reqs.len(), 1, "{reqs:#?}");
    assert_eq!(reqs[0]["model"], "fake-model");
    assert_eq!(reqs[0]["stream"], true);
    assert_eq!(reqs[0]["stream_options"]["include_usage"], true);
    assert_eq!(reqs[0]["messages"][0]["role"], "system");
    assert!(system_prompt(&reqs[0]).contains("Oh My Pi"), "{}", &system_prompt(&reqs[0])[..400]);
    // omp puts a <system-reminder> (date, cwd) before the prompt in the same user message.
    let texts = last_user_texts(&reqs[0]);
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert!(texts[0].starts_with("<system-reminder>"), "{texts:?}");
    assert_eq!(texts[1], "say hello");
    let names = tool_names(&reqs[0]);
    for t in ["read", "bash", "edit", "write"] {
        assert!(names.contains(&t.to_string()), "{names:?}");
    }
    // The client keeps working: a state round trip and a second turn with the default reply.
    let state: Value = serde_json::from_str(&c.request("get_state", None, secs(60)).unwrap()).unwrap();
    assert_eq!(state["model"]["id"], "fake-model");
    assert_eq!(state["isStreaming"], false);
    assert_eq!(turn(&c, "anything else")["assistantText"], "pong");
    c.close().unwrap();
}

// (b) The model calls omp's built-in bash tool.
#[test]
fn builtin_bash_tool_turn() {
    let script = json!([{"match": "run bash", "replies": [
        {"text": "Running it. ", "tool_call": {"name": "bash", "arguments": {"command": "echo hi-from-bash && pwd"}}},
        {"text": "done: {{last_tool_result}}"}]}]);
    let Some(env) = OmpEnv::new("bash_tool", script) else { return };
    let c = start(&env, &["--tools", "bash"], json!({}));
    let t = turn(&c, "please run bash");
    let work = env.work.canonicalize().unwrap().display().to_string();
    let start = one(&t, "tool_execution_start");
    assert_eq!(start["toolName"], "bash");
    assert_eq!(start["args"], json!({"command": "echo hi-from-bash && pwd"}));
    let end = one(&t, "tool_execution_end");
    assert_eq!(end["toolCallId"], start["toolCallId"]);
    assert_eq!(end["isError"], false);
    // omp appends the wall time to bash output.
    let text = result_text(&end["result"]);
    assert!(text.starts_with(&format!("hi-from-bash\n{work}\n")), "{text:?}");
    assert!(text.contains("Wall time: "), "{text:?}");
    // Partial output streamed as updates, each the output so far.
    let updates = events(&t, "tool_execution_update");
    assert!(!updates.is_empty());
    assert!(updates.iter().all(|u| u["toolCallId"] == start["toolCallId"]));
    // The final text quotes the tool result the model was sent back.
    assert_eq!(t["assistantText"], format!("done: {text}"));
    // Two LLM calls: the second carries the tool call and its result.
    let reqs = env.llm_requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(tool_names(&reqs[0]), ["bash"], "--tools bash offers only bash");
    let msgs = reqs[1]["messages"].as_array().unwrap();
    let call = &msgs[msgs.len() - 2];
    assert_eq!(call["role"], "assistant");
    assert_eq!(call["tool_calls"][0]["function"]["name"], "bash");
    assert_eq!(call["tool_calls"][0]["id"], start["toolCallId"]);
    let result = &msgs[msgs.len() - 1];
    assert_eq!(result["role"], "tool");
    assert_eq!(result["tool_call_id"], start["toolCallId"]);
    assert_eq!(result["content"], text.as_str());
    // messages: user, assistant(tool call), toolResult, assistant(text).
    let roles: Vec<&str> = t["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "toolResult", "assistant"]);
    assert_eq!(t["messages"][1]["stopReason"], "toolUse");
    c.close().unwrap();
}

const ASK_EXTENSION: &str = r#"
export default function (pi) {
  pi.registerCommand("ask", {
    description: "Ask for a name",
    handler: async (args, ctx) => {
      const name = await ctx.ui.input("Your name?", "type it");
      ctx.ui.notify(`hello ${name}`, "info");
      pi.sendMessage({ customType: "omprpc-ask", content: `answer: ${name}`, display: true });
    },
  });
}
"#;

// (c) An extension command that asks the UI: omp acknowledges the prompt at once and reports
// the command's end with prompt_result {agentInvoked:false}.
#[test]
fn extension_ui_round_trip() {
    let Some(env) = OmpEnv::new("extension_ui", json!([])) else { return };
    let ext = env.write_file("ask.mjs", ASK_EXTENSION);
    let c = start(&env, &["--extension", ext.to_str().unwrap()], json!({}));
    // omp 18.2.3 has no get_commands; get_available_commands lists the extension's command.
    let commands: Value = serde_json::from_str(&c.request("get_available_commands", None, secs(60)).unwrap()).unwrap();
    let ask: Vec<&Value> = commands["commands"].as_array().unwrap().iter().filter(|c| c["name"] == "ask").collect();
    assert_eq!(ask.len(), 1, "{commands:#}");
    assert_eq!(ask[0]["description"], "Ask for a name");

    // prompt_and_wait completes on prompt_result while the host answers the UI request.
    std::thread::scope(|s| {
        let p = s.spawn(|| c.prompt_and_wait("/ask", None, secs(120)));
        let req = parse(&c.next_ui_request(secs(120)).unwrap_or_else(|e| panic!("no UI request: {e}\nstderr: {}", c.stderr())));
        assert_eq!(req["type"], "extension_ui_request");
        assert_eq!(req["method"], "input");
        assert_eq!(req["title"], "Your name?");
        assert_eq!(req["placeholder"], "type it");
        c.ui_send_value(req["id"].as_str().unwrap(), "Alice").unwrap();
        let t: Value = serde_json::from_str(&p.join().unwrap().unwrap_or_else(|e| panic!("/ask: {e}\nstderr: {}", c.stderr()))).unwrap();
        assert_eq!(t["agentInvoked"], false, "{t:#}");
        assert_eq!(t["promptResult"], json!({"type": "prompt_result", "id": t["requestId"], "agentInvoked": false}));
        assert!(t["assistantMessage"].is_null());
        assert!(events(&t, "agent_start").is_empty());
    });
    // The fire-and-forget notify is an event (UI frames are not part of a turn), queued before
    // prompt_result.
    let (skipped, note) = wait_event_after(&c, "notify", |e| e["type"] == "extension_ui_request" && e["method"] == "notify");
    assert_eq!(note["message"], "hello Alice");
    assert_eq!(note["notifyType"], "info");
    assert!(!skipped.iter().any(|e| e["type"] == "prompt_result"), "notify after prompt_result: {skipped:?}");
    wait_event(&c, "prompt_result", |e| e["type"] == "prompt_result");
    // omp 18.2.3 writes no message_start/message_end for pi.sendMessage from a command: the
    // custom message goes into the session silently.
    let state: Value = serde_json::from_str(&c.request("get_state", None, secs(60)).unwrap()).unwrap();
    eprintln!("after /ask: messageCount={}", state["messageCount"]);

    // The plain prompt call: omp answers /ask at once, before the UI request is answered.
    let id = c.prompt("prompt", "/ask", None, secs(120)).unwrap_or_else(|e| panic!("/ask: {e}"));
    let req = parse(&c.next_ui_request(secs(120)).unwrap());
    assert_eq!(req["method"], "input");
    c.ui_cancel(req["id"].as_str().unwrap(), false).unwrap();
    let note = wait_event(&c, "notify", |e| e["type"] == "extension_ui_request" && e["method"] == "notify");
    assert_eq!(note["message"], "hello undefined");
    let done = wait_event(&c, "prompt_result", |e| e["type"] == "prompt_result");
    assert_eq!(done, json!({"type": "prompt_result", "id": id, "agentInvoked": false}));
    assert_eq!(c.next_ui_request(deadline_after(Some(Duration::ZERO))).unwrap_err().status, Status::Timeout);
    c.wait_for_idle(secs(10)).unwrap();
    // A command runs no agent loop and never reaches the model.
    assert!(env.llm_requests().is_empty());
    c.close().unwrap();
}

// (d) steer and abort while the model hangs mid-stream; the client stays usable. Unlike pi,
// omp delivers the queued steer right after the abort, in a run of its own.
#[test]
fn steer_then_abort_a_hanging_turn() {
    let script = json!([
        {"match": "hang", "replies": [{"text": "thinking about it", "hang": true}]},
        {"match": "steer me", "replies": [{"text": "steered ok"}]}]);
    let Some(env) = OmpEnv::new("steer_abort", script) else { return };
    let c = start(&env, &[], json!({}));
    std::thread::scope(|s| {
        let t = s.spawn(|| c.prompt_and_wait("hang please", None, secs(120)));
        // The model has started streaming (one delta, then silence).
        wait_event(&c, "first text delta", |e| e["type"] == "message_update" && e["assistantMessageEvent"]["type"] == "text_delta");
        let p = parse_params(Some(r#"{"message":"steer me now"}"#)).unwrap();
        // omp acknowledges the steer without a queue_update event.
        c.request("steer", p.as_ref(), secs(60)).unwrap();
        let aborted_at = Instant::now();
        c.request("abort", None, secs(60)).unwrap();
        let turn: Value = serde_json::from_str(&t.join().unwrap().unwrap_or_else(|e| panic!("aborted turn: {e}\nstderr: {}", c.stderr()))).unwrap();
        assert!(aborted_at.elapsed() < Duration::from_secs(30));
        assert!(events(&turn, "queue_update").is_empty());
        let end = turn["events"].as_array().unwrap().last().unwrap();
        assert_eq!(end["type"], "agent_end");
        assert_eq!(end["isTerminal"], true);
        assert_eq!(turn["assistantMessage"]["stopReason"], "aborted");
        assert_eq!(turn["assistantMessage"]["errorMessage"], "Interrupted by user");
        assert_eq!(turn["assistantText"], "thinking ");
        // omp now runs the steer by itself: the agent is busy until that run ends.
        c.wait_for_idle(secs(60)).unwrap();
    });
    // The steer started the next run by itself, and it ended before wait_for_idle returned: a user message marked steering:true, answered.
    let steer = wait_event(&c, "the steer's message_end", |e| e["type"] == "message_end" && e["message"]["role"] == "user");
    assert_eq!(steer["message"]["steering"], true, "{steer}");
    assert_eq!(steer["message"]["content"][0]["text"], "steer me now");
    let end = c.next_events(1024, Some(Instant::now())).unwrap().iter().map(|e| parse(e)).find(|e| e["type"] == "agent_end").expect("the steer run's agent_end, queued before wait_for_idle returned");
    assert_eq!(end["isTerminal"], true);
    let last = end["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["content"][0]["text"], "steered ok");
    // Nothing is left queued, and a new prompt gets the default reply.
    c.wait_for_idle(secs(60)).unwrap();
    let state: Value = serde_json::from_str(&c.request("get_state", None, secs(60)).unwrap()).unwrap();
    assert_eq!(state["isStreaming"], false);
    assert_eq!(state["queuedMessageCount"], 0);
    assert_eq!(state["messageCount"], 4, "hang, aborted answer, steer, steered answer");
    let t = turn(&c, "say hi");
    assert_eq!(t["assistantText"], "pong");
    let reqs = env.llm_requests();
    assert_eq!(reqs.len(), 3);
    // The model sees the steer wrapped in a system notice.
    let steer_text = last_user_texts(&reqs[1]).last().cloned().unwrap_or_default();
    assert!(steer_text.starts_with("<system-notice>\nUser interjection during work") && steer_text.ends_with("</system-notice>\nsteer me now"), "{steer_text:?}");
    c.close().unwrap();
}

// (e) Usage: message_end carries the fake model's numbers; the turn summary adds them up.
#[test]
fn usage_reaches_message_end_and_the_summary() {
    let script = json!([{"match": "count tokens", "replies": [
        {"tool_call": {"name": "bash", "arguments": {"command": "true"}}, "usage": {"prompt_tokens": 100, "completion_tokens": 7}},
        {"text": "counted", "usage": {"prompt_tokens": 150, "completion_tokens": 9, "cached_tokens": 50}}]}]);
    let Some(env) = OmpEnv::new("usage", script) else { return };
    let c = start(&env, &["--tools", "bash"], json!({"turn_summary": true}));
    let t = turn(&c, "count tokens");
    let usages: Vec<&Value> =
        events(&t, "message_end").into_iter().filter(|e| e["message"]["role"] == "assistant").map(|e| &e["message"]["usage"]).collect();
    assert_eq!(usages.len(), 2);
    let pick = |u: &Value| (u["input"].as_u64(), u["output"].as_u64(), u["cacheRead"].as_u64(), u["totalTokens"].as_u64());
    eprintln!("usages: {usages:?}\nsummary: {:#}", t["summary"]["usage"]);
    assert_eq!(pick(usages[0]), (Some(100), Some(7), Some(0), Some(107)));
    assert_eq!(pick(usages[1]), (Some(100), Some(9), Some(50), Some(159)));
    let u = &t["summary"]["usage"];
    assert_eq!(u["inputTokens"], 200);
    assert_eq!(u["outputTokens"], 16);
    assert_eq!(u["cacheReadTokens"], 50);
    assert_eq!(u["totalTokens"], 266);
    assert_eq!(u["contextTokens"], 159);
    assert_eq!(u["calls"], 2);
    assert_eq!(u["model"], "fake-model");
    assert_eq!(t["summary"]["finalText"], "counted");
    assert_eq!(t["summary"]["toolCalls"][0]["toolName"], "bash");
    assert_eq!(t["summary"]["toolCalls"][0]["outcome"], "success");
    c.close().unwrap();
}

// (f) A host tool through omp's own host tools (set_host_tools), not the bridge.
#[test]
fn native_host_tool() {
    let script = json!([{"match": "add numbers", "replies": [
        {"tool_call": {"name": "host_add", "arguments": {"a": 2, "b": 3}}},
        {"text": "sum is {{last_tool_result}}"}]}]);
    let Some(env) = OmpEnv::new("host_tool", script) else { return };
    // loadMode "essential": omp offers the tool to the model directly (the default for a
    // host tool is "discoverable").
    let tools = json!([{"name": "host_add", "description": "Add two numbers", "loadMode": "essential", "parameters": {
        "type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}]);
    // The idle clock stands still while omp waits on the host (the host works silently for
    // longer than the idle timeout below).
    let c = start(&env, &[], json!({"host_tools": tools, "turn_idle_timeout_ms": 4000}));
    let argv: Value = serde_json::from_str(&c.info()).unwrap();
    assert!(!argv["argv"].as_array().unwrap().iter().any(|a| a == "--extension"), "no bridge on omp: {argv:#}");
    std::thread::scope(|s| {
        let t = s.spawn(|| c.prompt_and_wait("add numbers", None, secs(120)));
        let (before, call) = wait_event_after(&c, "host_tool_call", |e| e["type"] == "host_tool_call");
        // omp asks the host before it announces the tool (host calls are events, not turn events).
        assert!(!before.iter().any(|e| e["type"] == "tool_execution_start"), "{before:?}");
        assert_eq!(call["toolName"], "host_add");
        assert_eq!(call["arguments"], json!({"a": 2, "b": 3}));
        assert!(call.get("bridged").is_none(), "{call}");
        std::thread::sleep(Duration::from_millis(5000));
        answer_host_add(&c, &call);
        let turn: Value = serde_json::from_str(&t.join().unwrap().unwrap_or_else(|e| panic!("host tool turn: {e}\nstderr: {}", c.stderr()))).unwrap();
        assert_eq!(one(&turn, "tool_execution_start")["toolCallId"], call["toolCallId"]);
        let end = one(&turn, "tool_execution_end");
        assert_eq!((end["toolName"].as_str(), end["isError"].as_bool()), (Some("host_add"), Some(false)));
        assert_eq!(result_text(&end["result"]), "5");
        assert_eq!(turn["assistantText"], "sum is 5");
    });
    let reqs = env.llm_requests();
    assert!(tool_names(&reqs[0]).contains(&"host_add".to_string()), "{:?}", tool_names(&reqs[0]));

    // Abort while the host still holds the call: omp sends host_tool_cancel, the run ends,
    // and a late result is refused.
    std::thread::scope(|s| {
        let t = s.spawn(|| c.prompt_and_wait("add numbers slowly", None, secs(120)));
        let call = wait_event(&c, "host_tool_call", |e| e["type"] == "host_tool_call");
        c.request("abort", None, secs(60)).unwrap();
        let cancel = wait_event(&c, "host_tool_cancel", |e| e["type"] == "host_tool_cancel");
        assert_eq!(cancel["targetId"], call["id"]);
        let turn: Value = serde_json::from_str(&t.join().unwrap().unwrap_or_else(|e| panic!("aborted host tool turn: {e}"))).unwrap();
        let end = one(&turn, "tool_execution_end");
        assert_eq!(end["isError"], true);
        assert_eq!(result_text(&end["result"]), "Host tool \"host_add\" was aborted");
        assert_eq!(turn["assistantMessage"]["stopReason"], "aborted");
        let late = c.host_tool_result(call["id"].as_str().unwrap(), json!("too late"), false).unwrap_err();
        assert_eq!(late.status, Status::Cancelled, "{late}");
    });
    assert_eq!(env.llm_requests().len(), 3, "the aborted run made no second LLM call");
    c.close().unwrap();
}

// (g) The policy gate blocks omp's own bash tool: by library rules, and by the host's verdict.
// The gate is the library's generated ESM extension (omprpc-bridge.mjs) on omp.
#[test]
fn native_tool_blocked_by_the_policy_gate() {
    let script = json!([
        {"match": "run forbidden", "replies": [
            {"tool_call": {"name": "bash", "arguments": {"command": "touch ran-forbidden"}}},
            {"text": "after: {{last_tool_result}}"}]},
        {"match": "two calls", "replies": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": "touch ran-first"}},
                            {"name": "bash", "arguments": {"command": "echo second-ran"}}]},
            {"text": "finished"}]}]);
    let Some(env) = OmpEnv::new("policy_gate", script) else { return };

    // Rules: answered inside the library, no host round trip.
    let c = start(&env, &[], json!({"bridge": "auto", "tool_policy": {"mode": "rules", "block": {"bash": "no shell for you"}, "default": "allow"}}));
    let info: Value = serde_json::from_str(&c.info()).unwrap();
    let argv: Vec<&str> = info["argv"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    let ext = argv.iter().position(|a| *a == "--extension").map(|i| argv[i + 1]).expect("the gate's extension is on the command line");
    assert!(ext.ends_with("omprpc-bridge.mjs"), "{argv:?}");
    // The ESM extension said hello (start waits for it), and `--version` said `omp/X.Y.Z`.
    assert_eq!(info["bridgeLoaded"], true, "{info}");
    assert_eq!(info["agentVersion"], omp::omp_version().as_str(), "{info}");
    let t = turn(&c, "run forbidden");
    let end = one(&t, "tool_execution_end");
    assert_eq!(end["toolName"], "bash");
    assert_eq!(end["isError"], true);
    assert_eq!(result_text(&end["result"]), "no shell for you");
    assert_eq!(t["assistantText"], "after: no shell for you");
    assert!(!env.work.join("ran-forbidden").exists(), "the blocked command ran");
    let blocked = wait_event(&c, "tool_blocked", |e| e["type"] == "tool_blocked");
    assert_eq!((blocked["toolName"].as_str(), blocked["reason"].as_str()), (Some("bash"), Some("no shell for you")));
    c.close().unwrap();

    // Host mode: each native call raises policy_eval; block the first, allow the second.
    let c = start(&env, &[], json!({"tool_policy": {"mode": "host"}}));
    std::thread::scope(|s| {
        let t = s.spawn(|| c.prompt_and_wait("two calls", None, secs(120)));
        for (allow, command) in [(false, "touch ran-first"), (true, "echo second-ran")] {
            let ev = wait_event(&c, "policy_eval", |e| e["type"] == "policy_eval");
            assert_eq!(ev["toolName"], "bash");
            assert_eq!(ev["arguments"]["command"], command);
            c.policy_verdict(ev["id"].as_str().unwrap(), allow, if allow { "" } else { "host says no" }).unwrap();
        }
        let turn: Value = serde_json::from_str(&t.join().unwrap().unwrap_or_else(|e| panic!("gated turn: {e}"))).unwrap();
        let ends = events(&turn, "tool_execution_end");
        assert_eq!(ends.len(), 2);
        let by_text: Vec<(bool, String)> = ends.iter().map(|e| (e["isError"].as_bool().unwrap(), result_text(&e["result"]))).collect();
        assert!(by_text.contains(&(true, "host says no".to_string())), "{by_text:?}");
        assert!(by_text.iter().any(|(err, text)| !err && text.starts_with("second-ran\n")), "{by_text:?}");
        assert_eq!(turn["assistantText"], "finished");
    });
    assert!(!env.work.join("ran-first").exists(), "the blocked command ran");
    c.close().unwrap();
}

/// Turns omp's automatic compaction off: a prompt larger than the model's context window
/// would otherwise trigger a "handoff" compaction (see `compaction_handoff_never_ends_the_run`).
fn no_auto_compaction(c: &Client) {
    let p = parse_params(Some(r#"{"enabled":false}"#)).unwrap();
    c.request("set_auto_compaction", p.as_ref(), secs(60)).unwrap();
}

// (h) Protocol v2: omp offers it in its ready frame and the client negotiates it; a frame
// over 1 MiB then arrives as rpc_chunk frames, reassembled. Without v2 omp shrinks it.
#[test]
fn protocol_v2_negotiation_and_large_frames() {
    let Some(env) = OmpEnv::new("protocol_v2", json!([{"match": "big", "replies": [{"text": "got it"}]}])) else { return };
    let big = format!("big {}", "x".repeat(1536 * 1024));

    let c = start(&env, &[], json!({}));
    let info: Value = serde_json::from_str(&c.info()).unwrap();
    assert_eq!(info["protocolVersion"], 2, "{info:#}");
    assert_eq!(info["flavor"], "omp");
    let ready = &info["ready"];
    assert_eq!(ready["type"], "ready");
    assert_eq!(ready["protocolVersion"], 1);
    assert_eq!(ready["supportedProtocolVersions"], json!([1, 2]));
    assert_eq!(ready["maxFrameBytes"], 1048576);
    assert_eq!(ready["maxReassembledFrameBytes"], 67108864);
    no_auto_compaction(&c);
    let t = turn(&c, &big);
    assert_eq!(t["assistantText"], "got it");
    // The user message came back whole: its message_start/message_end (> 1 MiB) were chunked.
    let user_end = events(&t, "message_end").into_iter().find(|e| e["message"]["role"] == "user").unwrap();
    assert_eq!(user_end["message"]["content"][0]["text"].as_str().map(str::len), Some(big.len()));
    // omp compacted the terminal agent_end (it dropped the already streamed messages and
    // added messageCount); the client rebuilt the full list.
    let end = events(&t, "agent_end")[0];
    assert_eq!(end["isTerminal"], true);
    assert_eq!(t["messages"].as_array().unwrap().len(), 2);
    assert_eq!(t["messages"][0]["content"][0]["text"].as_str().map(str::len), Some(big.len()));
    assert_eq!(t["messages"][1]["content"][0]["text"], "got it");
    assert_eq!(c.protocol_errors(), "[]");
    let reqs = env.llm_requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(last_user_texts(&reqs[0]).last().map(String::len), Some(big.len()));
    // The transcript through get_messages: on v2 the library walks omp's get_messages_page
    // (the big message arrives whole, in chunks) — in every binding, through the one request.
    let m: Value = serde_json::from_str(&c.request("get_messages", None, secs(60)).unwrap()).unwrap();
    assert_eq!(m["messages"].as_array().map(Vec::len), Some(2), "{}", &m.to_string()[..200]);
    assert_eq!(m["messages"][0]["content"][0]["text"].as_str().map(str::len), Some(big.len()));
    assert_eq!(m["messages"][1]["content"][0]["text"], "got it");
    c.close().unwrap();

    // negotiate_v2:false stays on v1: omp shrinks the frame to fit one 1 MiB line, eliding
    // the long string.
    let c = start(&env, &[], json!({"negotiate_v2": false}));
    let info: Value = serde_json::from_str(&c.info()).unwrap();
    assert_eq!(info["protocolVersion"], 1);
    no_auto_compaction(&c);
    let t = turn(&c, &big);
    assert_eq!(t["assistantText"], "got it");
    let user_end = events(&t, "message_end").into_iter().find(|e| e["message"]["role"] == "user").unwrap();
    let text = user_end["message"]["content"][0]["text"].as_str().unwrap();
    assert!(text.len() < 1024 * 1024 && text.contains("chars elided for RPC frame"), "{}", &text[text.len().saturating_sub(200)..]);
    assert_eq!(c.protocol_errors(), "[]");
    c.close().unwrap();
}

// (i) omp 18.2.3: a prompt over the compaction threshold makes omp schedule a "handoff"
// compaction; the run then ends with `agent_end {isTerminal:false}` and nothing follows (omp
// is idle). The library notices the silence, asks `get_state`, and ends the turn there.
#[test]
fn compaction_handoff_ends_the_turn() {
    let Some(env) = OmpEnv::new("handoff", json!([{"match": "big", "replies": [{"text": "got it"}]}])) else { return };
    let big = format!("big {}", "x".repeat(600 * 1024)); // ~150k tokens by omp's estimate > 128k window
    let c = start(&env, &[], json!({}));
    let turn: Value = serde_json::from_str(&c.prompt_and_wait(&big, None, secs(120)).unwrap_or_else(|e| panic!("handoff turn: {e}\nstderr: {}", c.stderr()))).unwrap();
    let evs = turn["events"].as_array().unwrap();
    let types: Vec<&str> = evs.iter().filter_map(|e| e["type"].as_str()).collect();
    assert!(types.contains(&"auto_compaction_start"), "{types:?}");
    let end = evs.iter().rev().find(|e| e["type"] == "agent_end").unwrap();
    assert_eq!(end["isTerminal"], false, "{end}");
    // The turn's answer reached the model and came back before the handoff.
    assert_eq!(turn["assistantText"], "got it");
    let state: Value = serde_json::from_str(&c.request("get_state", None, secs(60)).unwrap()).unwrap();
    assert_eq!(state["isStreaming"], false, "omp is idle: no continuation is coming");
    c.wait_for_idle(secs(30)).unwrap();
    c.close().unwrap();
}


// (j) Host URIs: omp reaches a registered scheme through its own `read` tool; the host answers
// the host_uri_request and the model gets the content as the tool's result.
#[test]
fn host_uri_read_through_omps_read_tool() {
    let script = json!([{"match": "read my notes", "replies": [
        {"tool_call": {"name": "read", "arguments": {"path": "memo://notes/today"}}},
        {"text": "notes say {{last_tool_result}}"}]}]);
    let Some(env) = OmpEnv::new("host_uri", script) else { return };
    let c = start(&env, &[], json!({"host_uri_schemes": [{"scheme": "memo"}]}));
    std::thread::scope(|s| {
        let t = s.spawn(|| c.prompt_and_wait("read my notes", None, secs(120)));
        let req = wait_event(&c, "host_uri_request", |e| e["type"] == "host_uri_request");
        assert_eq!(req["url"], "memo://notes/today", "{req}");
        c.host_uri_result(req["id"].as_str().unwrap(), json!({"content": "buy milk", "contentType": "text/plain"})).unwrap();
        let turn: Value = serde_json::from_str(&t.join().unwrap().unwrap_or_else(|e| panic!("host URI turn: {e}\nstderr: {}", c.stderr()))).unwrap();
        let end = one(&turn, "tool_execution_end");
        assert_eq!(end["toolName"], "read");
        assert!(result_text(&end["result"]).contains("buy milk"), "{end}");
    });
    c.close().unwrap();
}

// (k) A host tool registered without loadMode is "discoverable": omp does not offer it to the
// model, lists it as an xd:// device, and runs it when the model writes JSON to xd://<name>.
#[test]
fn discoverable_host_tool_through_xd_write() {
    let script = json!([{"match": "add numbers", "replies": [
        {"tool_call": {"name": "write", "arguments": {"path": "xd://host_add", "content": "{\"a\":2,\"b\":3}"}}},
        {"text": "sum is {{last_tool_result}}"}]}]);
    let Some(env) = OmpEnv::new("xd_tool", script) else { return };
    let tools = json!([{"name": "host_add", "description": "Add two numbers", "parameters": {
        "type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}]);
    let c = start(&env, &[], json!({"host_tools": tools}));
    std::thread::scope(|s| {
        let t = s.spawn(|| c.prompt_and_wait("add numbers", None, secs(120)));
        let call = wait_event(&c, "host_tool_call", |e| e["type"] == "host_tool_call");
        assert_eq!(call["toolName"], "host_add");
        assert_eq!(call["arguments"], json!({"a": 2, "b": 3}));
        c.host_tool_result(call["id"].as_str().unwrap(), json!("5"), false).unwrap();
        let turn: Value = serde_json::from_str(&t.join().unwrap().unwrap_or_else(|e| panic!("xd turn: {e}\nstderr: {}", c.stderr()))).unwrap();
        assert!(result_text(&one(&turn, "tool_execution_end")["result"]).contains('5'), "{:#}", turn["events"]);
    });
    let reqs = env.llm_requests();
    assert!(!tool_names(&reqs[0]).contains(&"host_add".to_string()), "a discoverable tool is not offered: {:?}", tool_names(&reqs[0]));
    assert!(system_prompt(&reqs[0]).contains("xd://host_add"), "the system prompt lists the device");
    c.close().unwrap();
}

// A follow_up queued while the model streams runs in the same run, after the answer: the
// agent is busy until that run's terminal agent_end, and wait_for_idle waits for it.
#[test]
fn a_queued_follow_up_runs_before_the_agent_is_idle() {
    let Some(env) = OmpEnv::new("follow_up", common::follow_up_script()) else { return };
    let c = start(&env, &[], json!({}));
    common::queued_follow_up_runs_before_idle(&c);
    assert_eq!(env.llm_requests().len(), 2, "the answer, then the follow-up");
    c.close().unwrap();
}

// (m) omp's own approval gate: `approval_mode: "always-ask"` passes `--approval-mode
// always-ask`, and omp asks before every exec-tier tool call with a `select` UI request
// ("Allow tool: bash" …, options Approve/Deny). Approve runs the command; Deny fails the call
// with omp's message and the command never runs.
#[test]
fn approval_mode_always_ask_round_trip() {
    let script = json!([
        {"match": "approve me", "replies": [
            {"tool_call": {"name": "bash", "arguments": {"command": "echo approved-ran"}}},
            {"text": "after: {{last_tool_result}}"}]},
        {"match": "deny me", "replies": [
            {"tool_call": {"name": "bash", "arguments": {"command": "touch ran-denied"}}},
            {"text": "after: {{last_tool_result}}"}]}]);
    let Some(env) = OmpEnv::new("approval", script) else { return };
    let c = start(&env, &["--tools", "bash"], json!({"approval_mode": "always-ask"}));
    let info: Value = serde_json::from_str(&c.info()).unwrap();
    let argv: Vec<&str> = info["argv"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    assert!(argv.windows(2).any(|w| w == ["--approval-mode", "always-ask"]), "{argv:?}");
    for (message, command, answer) in [("approve me", "echo approved-ran", "Approve"), ("deny me", "touch ran-denied", "Deny")] {
        std::thread::scope(|s| {
            let p = s.spawn(|| c.prompt_and_wait(message, None, secs(120)));
            let req = parse(&c.next_ui_request(secs(120)).unwrap_or_else(|e| panic!("no approval request: {e}\nstderr: {}", c.stderr())));
            assert_eq!(req["method"], "select");
            assert_eq!(req["options"], json!(["Approve", "Deny"]));
            assert_eq!(req["title"], format!("Allow tool: bash\nCommand: {command}"));
            c.ui_send_value(req["id"].as_str().unwrap(), answer).unwrap();
            let t: Value = serde_json::from_str(&p.join().unwrap().unwrap_or_else(|e| panic!("{message}: {e}\nstderr: {}", c.stderr()))).unwrap();
            let end = one(&t, "tool_execution_end");
            let text = result_text(&end["result"]);
            if answer == "Approve" {
                assert_eq!(end["isError"], false, "{end}");
                assert!(text.starts_with("approved-ran\n"), "{text:?}");
            } else {
                assert_eq!(end["isError"], true, "{end}");
                assert_eq!(text, "Tool call denied by user: bash");
            }
            assert_eq!(t["assistantText"], format!("after: {text}"));
            // On the event stream omp asks after the model's tool call message and before the
            // tool's execution starts.
            let (skipped, ask) = wait_event_after(&c, "the select", |e| e["type"] == "extension_ui_request" && e["method"] == "select");
            assert_eq!(ask["id"], req["id"]);
            let types: Vec<&str> = skipped.iter().map(|e| e["type"].as_str().unwrap_or("")).collect();
            assert_eq!(types.last(), Some(&"message_end"), "{types:?}");
            assert!(!types.contains(&"tool_execution_start"), "{types:?}");
            let started = wait_event(&c, "tool_execution_start", |e| e["type"] == "tool_execution_start");
            assert_eq!(started["toolCallId"], end["toolCallId"]);
            wait_event(&c, "agent_end", |e| e["type"] == "agent_end" && e["isTerminal"] != false);
        });
    }
    assert!(!env.work.join("ran-denied").exists(), "the denied command ran");
    // Headless (a UI policy that cancels every select): every such tool is denied, no request
    // reaches next_ui_request.
    c.set_ui_policy(omprpc::client::options::UiPolicy::parse(&json!({"select": null})).unwrap());
    let t = turn(&c, "deny me");
    let end = one(&t, "tool_execution_end");
    assert_eq!((end["isError"].as_bool(), result_text(&end["result"])), (Some(true), "Tool call denied by user: bash".to_string()));
    assert_eq!(c.next_ui_request(deadline_after(Some(Duration::ZERO))).unwrap_err().status, Status::Timeout);
    assert!(!env.work.join("ran-denied").exists(), "the denied command ran");
    c.close().unwrap();
}

// (n) 3 MB of tool output (375,000 numbered lines): omp keeps the first 500 lines and the last
// 500, elides the middle with a note, and streams updates bounded the same way, so neither the
// host nor the model ever sees megabytes; nothing needs the v2 chunking.
#[test]
fn three_megabytes_of_tool_output() {
    let script = json!([{"match": "big output", "replies": [
        {"tool_call": {"name": "bash", "arguments": {"command": "seq 1000001 1375000"}}},
        {"text": "big done"}]}]);
    let Some(env) = OmpEnv::new("big_output", script) else { return };
    let c = start(&env, &["--tools", "bash"], json!({}));
    let t = turn(&c, "big output please");
    let end = one(&t, "tool_execution_end");
    assert_eq!(end["isError"], false, "{end}");
    let text = result_text(&end["result"]);
    assert!(text.starts_with("1000001\n1000002\n"), "{:?}", &text[..64]);
    assert!(text.contains("1374999\n1375000\n\n\nWall time: "), "{:?}", &text[text.len() - 300..]);
    assert!(text.contains(" middle lines (") && text.contains("elided. Read artifact://0 for full output]"), "{:?}", &text[text.len() - 300..]);
    assert!(text.len() < 64 * 1024, "{} bytes", text.len());
    let cut = &end["result"]["details"]["meta"]["truncation"];
    assert_eq!((cut["direction"].as_str(), cut["truncatedBy"].as_str()), (Some("middle"), Some("middle")), "{cut}");
    assert_eq!(cut["headRange"]["start"], 1, "{cut}");
    for u in events(&t, "tool_execution_update") {
        assert!(result_text(&u["partialResult"]).len() < 128 * 1024, "an update carried megabytes");
    }
    assert_eq!(t["assistantText"], "big done");
    assert_eq!(c.protocol_errors(), "[]");
    // The model got exactly the tool's result.
    let reqs = env.llm_requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[1]["messages"].as_array().unwrap().last().unwrap()["content"], text.as_str());
    c.close().unwrap();
}

// --- A prompt ends where omp says it will not go on: retries, overflow recovery, abort -------
//
// omp's provider layer retries a failing HTTP call 11 more times by itself (12 identical
// requests; `retry-after-ms: 1` makes that fast), then its session retries the turn: it
// announces the retry inside the failed run (whose agent_end it holds back), starts a second
// run, and sends one terminal agent_end (OMP-NOTES.md).

fn nothing_after(c: &Client, env: &OmpEnv) {
    common::nothing_after(c, "omp", || env.llm_requests().len(), "agent_end");
}

fn a_retry_is_one_turn(case: &str, fail: Value, status: &str) {
    let Some(env) = OmpEnv::new(case, json!([{"match": "flaky", "replies": [{"text": "recovered", "fail": fail}]}])) else { return };
    let c = start(&env, &[], json!({"turn_summary": true}));
    let t = turn(&c, "flaky");
    assert_eq!((t["assistantText"].as_str(), t["outcome"].as_str(), t["attempts"].as_u64()), (Some("recovered"), Some("agent_end"), Some(2)), "{t:#}");
    let failed = &t["failedAttempts"];
    assert_eq!((failed.as_array().map(Vec::len), failed[0]["then"].as_str()), (Some(1), Some("retry")), "{failed}");
    assert!(failed[0]["error"].as_str().is_some_and(|e| e.starts_with(status)), "{failed}");
    assert!(failed[0]["delayMs"].as_u64().is_some(), "{failed}");
    assert_eq!(events(&t, "agent_start").len(), 2);
    assert_eq!(events(&t, "agent_end").len(), 1, "omp holds back the failed run's agent_end");
    assert_eq!(t["summary"]["attempts"], 2);
    nothing_after(&c, &env);
    c.close().unwrap();
}

#[test]
fn a_retry_after_a_500_is_one_turn() {
    a_retry_is_one_turn("retry-500", json!({"kind": "http_500", "times": 12, "retry_after_ms": 1}), "500");
}

#[test]
fn a_retry_after_a_429_is_one_turn() {
    a_retry_is_one_turn("retry-429", json!({"kind": "http_429", "times": 12, "retry_after_s": 0, "retry_after_ms": 1}), "429");
}

// A context-length error after an earlier prompt: omp compacts for the overflow (its first
// method finds nothing to drop, the summary then makes room) and runs the prompt again.
// `compaction.keepRecentTokens` this low lets the summary cut this short conversation.
#[test]
fn overflow_recovery_is_one_turn() {
    let script = json!([{"match": "too long", "replies": [{"text": "recovered", "fail": "context_length"}]}]);
    let Some(env) = OmpEnv::new("overflow", script) else { return };
    std::fs::write(env.agent_dir.join("config.yml"), json!({"compaction": {"keepRecentTokens": 10}}).to_string()).unwrap();
    let c = start(&env, &[], json!({}));
    turn(&c, "first");
    let t = turn(&c, "too long");
    assert_eq!((t["assistantText"].as_str(), t["outcome"].as_str(), t["attempts"].as_u64()), (Some("recovered"), Some("agent_end"), Some(2)), "{t:#}");
    let failed = &t["failedAttempts"];
    assert_eq!(failed[0]["then"], "compaction", "{failed}");
    assert!(failed[0]["error"].as_str().is_some_and(|e| e.contains("maximum context length")), "{failed}");
    let compactions = t["compactions"].as_array().unwrap();
    assert!(compactions.iter().all(|c| c["reason"] == "overflow"), "{compactions:?}");
    assert_eq!(compactions.last().unwrap()["willRetry"], true, "{compactions:?}");
    nothing_after(&c, &env);
    c.close().unwrap();
}

// Abort while omp waits to retry: a 429 whose retry-after (61 s) is above what its provider
// layer waits for, so the session gets the error at once and waits 61 s to retry. The abort
// cancels the retry ("Retry cancelled") and the turn ends at once, aborted.
#[test]
fn abort_in_the_retry_delay_ends_the_turn_aborted() {
    let script = json!([{"match": "flaky", "replies": [{"text": "recovered", "fail": {"kind": "http_429", "times": 12, "retry_after_s": 61}}]}]);
    let Some(env) = OmpEnv::new("abort-in-retry-delay", script) else { return };
    let c = start(&env, &[], json!({}));
    let (t, took) = std::thread::scope(|s| {
        let t = s.spawn(|| c.prompt_and_wait("flaky", None, secs(120)));
        wait_event(&c, "auto_retry_start", |e| e["type"] == "auto_retry_start");
        let aborted_at = Instant::now();
        c.request("abort", None, secs(60)).unwrap();
        let turn = t.join().unwrap().unwrap_or_else(|e| panic!("aborted turn: {e}\nstderr: {}", c.stderr()));
        (parse(turn.as_bytes()), aborted_at.elapsed())
    });
    assert!(took < Duration::from_secs(2), "the aborted turn came back {took:?} after the abort");
    assert_eq!((t["outcome"].as_str(), t["attempts"].as_u64()), (Some("aborted"), Some(1)), "{t:#}");
    assert_eq!(t["failedAttempts"][0]["then"], "cancelled", "{t:#}");
    nothing_after(&c, &env);
    c.close().unwrap();
}

// A failure omp does nothing about (a 400: neither its provider layer nor its session retries
// a client error): one terminal agent_end with the error.
#[test]
fn a_failure_nobody_retries_ends_the_turn_with_it() {
    let script = json!([{"match": "broken", "replies": [{"error": {"status": 400, "message": "bad request"}}]}]);
    let Some(env) = OmpEnv::new("failure-not-retried", script) else { return };
    let c = start(&env, &[], json!({}));
    let t = turn(&c, "broken");
    assert_eq!((t["outcome"].as_str(), t["attempts"].as_u64()), (Some("agent_end"), Some(1)), "{t:#}");
    assert_eq!((t["failedAttempts"][0]["then"].as_str(), t["assistantMessage"]["stopReason"].as_str()), (Some("none"), Some("error")), "{t:#}");
    assert_eq!(env.llm_requests().len(), 1);
    nothing_after(&c, &env);
    c.close().unwrap();
}
