//! The Rust client against the REAL pi 0.73.1 (`@mariozechner/pi-coding-agent`), offline, with
//! `omprpc-fake-llm` as its model. pi is installed once into a cache outside the repository
//! (see `tests/support/pi.rs`); without node/npm/registry these tests fail with the reason,
//! unless `OMPRPC_SKIP_REAL_AGENTS=1`.
//!
//! Run: `cargo test --test real_pi` (add `-- --nocapture` to see pi's install progress).
//! What pi does on the wire is written down in `tests/support/PI-NOTES.md`.

#[path = "support/common.rs"]
mod common;
#[path = "support/pi.rs"]
mod pi;

use std::time::{Duration, Instant};

use common::{answer_host_add, events, one, parse, result_text, secs, tool_names, turn, wait_event, wait_event_after};
use omprpc::client::{deadline_after, parse_params};
use omprpc::{Client, Status};
use pi::PiEnv;
use serde_json::{json, Value};

fn start(env: &PiEnv, extra_args: &[&str], extra_opts: Value) -> Client {
    common::start_with("pi", env.options(extra_args), extra_opts)
}

fn system_prompt(request: &Value) -> String {
    request["messages"][0]["content"].as_str().unwrap_or_default().to_string()
}

// (a) A plain text turn.
#[test]
fn text_turn() {
    let Some(env) = PiEnv::new("text_turn", json!([{"match": "say hello", "replies": [{"text": "Hello from the fake model"}]}])) else { return };
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
    assert_eq!(types.last(), Some(&pi::pi_turn_end().0));
    assert_eq!(t["outcome"], pi::pi_turn_end().1);
    assert_eq!((t["attempts"].as_u64(), t["failedAttempts"].as_array().map(Vec::len)), (Some(1), Some(0)));
    // What pi sent the model: one streaming request, its system prompt, the default tools.
    let reqs = env.llm_requests();
    assert_eq!(reqs.len(), 1, "{reqs:#?}");
    assert_eq!(reqs[0]["model"], "fake-model");
    assert_eq!(reqs[0]["stream"], true);
    assert_eq!(reqs[0]["stream_options"]["include_usage"], true);
    assert_eq!(reqs[0]["messages"][0]["role"], "system");
    // pi's own wording: "…operating inside pi…" from 0.50 (0.37 said "You are an expert coding
    // assistant"; 1.5.0 on says "You are a coding assistant running inside pi").
    let wording = if pi::pi_at_least("1.5.0") {
        "running inside pi"
    } else if pi::pi_at_least("0.50.7") {
        "operating inside pi"
    } else {
        "You are an expert coding assistant"
    };
    assert!(system_prompt(&reqs[0]).contains(wording), "{}", system_prompt(&reqs[0]));
    assert_eq!(reqs[0]["messages"][1], json!({"role": "user", "content": [{"type": "text", "text": "say hello"}]}));
    assert_eq!(tool_names(&reqs[0]), ["read", "bash", "edit", "write"]);
    // The client keeps working: a state round trip and a second turn with the default reply.
    let state: Value = serde_json::from_str(&c.request("get_state", None, secs(60)).unwrap()).unwrap();
    assert_eq!(state["model"]["id"], "fake-model");
    assert_eq!(state["isStreaming"], false);
    assert_eq!(turn(&c, "anything else")["assistantText"], "pong");
    c.close().unwrap();
}

// (b) The model calls pi's built-in bash tool.
#[test]
fn builtin_bash_tool_turn() {
    let script = json!([{"match": "run bash", "replies": [
        {"text": "Running it. ", "tool_call": {"name": "bash", "arguments": {"command": "echo hi-from-bash && pwd"}}},
        {"text": "done: {{last_tool_result}}"}]}]);
    let Some(env) = PiEnv::new("bash_tool", script) else { return };
    let c = start(&env, &["--tools", "bash"], json!({}));
    let t = turn(&c, "please run bash");
    let work = env.work.canonicalize().unwrap().display().to_string();
    let start = one(&t, "tool_execution_start");
    assert_eq!(start["toolName"], "bash");
    assert_eq!(start["args"], json!({"command": "echo hi-from-bash && pwd"}));
    let end = one(&t, "tool_execution_end");
    assert_eq!(end["toolCallId"], start["toolCallId"]);
    assert_eq!(end["isError"], false);
    assert_eq!(result_text(&end["result"]), format!("hi-from-bash\n{work}\n"));
    // The final text quotes the tool result the model was sent back.
    assert_eq!(t["assistantText"], format!("done: hi-from-bash\n{work}\n"));
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
    // messages: user, assistant(tool call), toolResult, assistant(text) — pi 1.x lists the run's
    // system message first.
    let roles: Vec<&str> = t["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    let roles = roles.strip_prefix(&["system"][..]).unwrap_or(&roles);
    assert_eq!(roles, ["user", "assistant", "toolResult", "assistant"]);
    assert_eq!(t["messages"].as_array().unwrap().iter().find(|m| m["role"] == "assistant").unwrap()["stopReason"], "toolUse");
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
  pi.registerCommand("quiet", { description: "Does nothing", handler: async () => {} });
}
"#;

// (c) An extension command that asks the UI: the prompt response comes only after the answer.
#[test]
fn extension_ui_round_trip() {
    let Some(env) = PiEnv::new("extension_ui", json!([])) else { return };
    let ext = env.write_file("ask.mjs", ASK_EXTENSION);
    let c = start(&env, &["--extension", ext.to_str().unwrap()], json!({}));
    // get_commands exists from pi 0.50 (0.37.2: "Unknown command").
    if pi::pi_at_least("0.50.7") {
        let commands: Value = serde_json::from_str(&c.request("get_commands", None, secs(60)).unwrap()).unwrap();
        assert_eq!(commands["commands"][0]["name"], "ask");
        assert_eq!(commands["commands"][0]["source"], "extension");
    }

    for (answer, expected) in [(Some("Alice"), "hello Alice"), (None, "hello undefined")] {
        std::thread::scope(|s| {
            let p = s.spawn(|| c.prompt("prompt", "/ask", None, secs(120)));
            let req = parse(&c.next_ui_request(secs(120)).unwrap_or_else(|e| panic!("no UI request: {e}\nstderr: {}", c.stderr())));
            assert_eq!(req["type"], "extension_ui_request");
            assert_eq!(req["method"], "input");
            assert_eq!(req["title"], "Your name?");
            assert_eq!(req["placeholder"], "type it");
            // pi answers the prompt only once the command handler is done (pi 0.67+; up to
            // 0.51.0 at once, like omp).
            if pi::pi_at_least("0.67.6") {
                std::thread::sleep(Duration::from_millis(300));
                assert!(!p.is_finished(), "pi acknowledged /ask before its UI request was answered");
            }
            let id = req["id"].as_str().unwrap();
            match answer {
                Some(v) => c.ui_send_value(id, v).unwrap(),
                None => c.ui_cancel(id, false).unwrap(),
            }
            p.join().unwrap().unwrap_or_else(|e| panic!("/ask: {e}"));
        });
        // The fire-and-forget notify is an event, not a UI request to answer.
        let note = wait_event(&c, "notify", |e| e["type"] == "extension_ui_request" && e["method"] == "notify");
        assert_eq!(note["message"], expected);
        assert_eq!(note["notifyType"], "info");
        // pi.sendMessage from a command: a custom message_end from pi 0.50 (0.37.2 writes none).
        if pi::pi_at_least("0.50.7") {
            let msg = wait_event(&c, "custom message_end", |e| e["type"] == "message_end" && e["message"]["role"] == "custom");
            assert_eq!(msg["message"]["customType"], "omprpc-ask");
            assert_eq!(msg["message"]["content"], format!("answer: {}", answer.unwrap_or("undefined")));
        }
        assert_eq!(c.next_ui_request(deadline_after(Some(Duration::ZERO))).unwrap_err().status, Status::Timeout);
    }
    // A command that needs no answer: the acknowledgement with no run after it completes
    // prompt_and_wait (pi runs no agent loop for it and sends nothing else).
    let turn: Value = serde_json::from_str(&c.prompt_and_wait("/quiet", None, secs(60)).unwrap_or_else(|e| panic!("/quiet: {e}"))).unwrap();
    assert_eq!(turn["agentInvoked"], false, "{turn}");
    c.wait_for_idle(secs(60)).unwrap();
    // A command runs no agent loop and never reaches the model.
    assert!(env.llm_requests().is_empty());
    c.close().unwrap();
}

// prompt_complete_events on the real pi: a text turn completes after its agent_end; an
// extension command that runs nothing (pi's silent preflight) completes after an activity probe
// found pi idle — a waiter's, or with nobody waiting the library's own — the event says not_invoked.
#[test]
fn prompt_complete_events_on_real_pi() {
    let Some(env) = PiEnv::new("prompt_complete", json!([{"match": "say hello", "replies": [{"text": "hi there"}]}])) else { return };
    let ext = env.write_file("ask.mjs", ASK_EXTENSION);
    let c = start(&env, &["--extension", ext.to_str().unwrap()], json!({"prompt_complete_events": true}));
    let id = c.prompt("prompt", "say hello", None, secs(60)).unwrap();
    let (before, done) = wait_event_after(&c, "prompt_complete", |e| e["type"] == "prompt_complete" && e["requestId"] == id.as_str());
    let (last, outcome) = pi::pi_turn_end();
    assert_eq!(before.last().map(|e| e["type"].clone()), Some(json!(last)));
    assert_eq!((done["outcome"].as_str(), done["agentInvoked"].as_bool()), (Some(outcome), Some(true)));
    let turn: Value = serde_json::from_str(&c.prompt_and_wait("/quiet", None, secs(60)).unwrap()).unwrap();
    let quiet = wait_event(&c, "prompt_complete", |e| e["type"] == "prompt_complete" && e["requestId"] == turn["requestId"]);
    assert_eq!((quiet["outcome"].as_str(), quiet["agentInvoked"].as_bool()), (Some("not_invoked"), Some(false)), "{quiet}");
    // Nobody waiting: the library's activity watcher probes pi as the waiter did.
    let id = c.prompt("prompt", "/quiet", None, secs(60)).unwrap();
    let (_, quiet) = wait_event_after(&c, "prompt_complete", |e| e["type"] == "prompt_complete" && e["requestId"] == id.as_str());
    assert_eq!((quiet["outcome"].as_str(), quiet["agentInvoked"].as_bool()), (Some("not_invoked"), Some(false)), "{quiet}");
    c.close().unwrap();
}

// (d) steer and abort while the model hangs mid-stream; the client stays usable.
#[test]
fn steer_then_abort_a_hanging_turn() {
    let script = json!([
        {"match": "hang", "replies": [{"text": "thinking about it", "hang": true}]},
        {"match": "steer me", "replies": [{"text": "steered ok"}]}]);
    let Some(env) = PiEnv::new("steer_abort", script) else { return };
    let c = start(&env, &[], json!({}));
    std::thread::scope(|s| {
        let t = s.spawn(|| c.prompt_and_wait("hang please", None, secs(120)));
        // The model has started streaming (one delta, then silence).
        wait_event(&c, "first text delta", |e| e["type"] == "message_update" && e["assistantMessageEvent"]["type"] == "text_delta");
        let p = parse_params(Some(r#"{"message":"steer me now"}"#)).unwrap();
        c.request("steer", p.as_ref(), secs(60)).unwrap();
        // queue_update exists from pi 0.67 (absent in 0.51.0); before it the steer response is all.
        if pi::pi_at_least("0.67.6") {
            let q = wait_event(&c, "queue_update", |e| e["type"] == "queue_update");
            assert_eq!(q["steering"], json!(["steer me now"]));
        }
        let aborted_at = Instant::now();
        c.request("abort", None, secs(60)).unwrap();
        let turn: Value = serde_json::from_str(&t.join().unwrap().unwrap_or_else(|e| panic!("aborted turn: {e}"))).unwrap();
        assert!(aborted_at.elapsed() < Duration::from_secs(30));
        let end = turn["events"].as_array().unwrap().last().unwrap();
        assert_eq!(end["type"], pi::pi_turn_end().0);
        // `aborted` on agent_settled from 1.1.0 (CHANGELOG; 0.80.10 sends none).
        if pi::pi_at_least("1.1.0") {
            assert_eq!(end["aborted"], true, "{end}");
        }
        if pi::pi_runs_a_steer_after_abort() && pi::pi_settles() {
            // The steer's run comes before pi settles: the prompt holds both runs and ends
            // where pi says (no `aborted` before 1.1.0), with the steer answered.
            assert_eq!(turn["outcome"], "agent_settled", "{turn:#}");
            assert_eq!(turn["assistantText"], "steered ok");
            return;
        }
        assert_eq!(turn["outcome"], "aborted");
        assert_eq!(turn["assistantMessage"]["stopReason"], "aborted");
        assert_eq!(turn["assistantMessage"]["errorMessage"], "Request was aborted");
        assert_eq!(turn["assistantText"], "thinking ");
    });
    if pi::pi_runs_a_steer_after_abort() {
        // pi ran the steer itself (before 0.80.4 in a run after the aborted prompt's end, as
        // omp does): once it is idle, nothing is queued and the model answered the steer.
        c.wait_for_idle(secs(60)).unwrap_or_else(|e| panic!("pi idle after the steer's run: {e}"));
        let state: Value = serde_json::from_str(&c.request("get_state", None, secs(60)).unwrap()).unwrap();
        assert_eq!((state["isStreaming"].as_bool(), state["pendingMessageCount"].as_u64()), (Some(false), Some(0)), "{state}");
        let reqs = env.llm_requests();
        assert_eq!(reqs.len(), 2);
        assert_eq!(reqs[1]["messages"].as_array().unwrap().last().unwrap()["content"][0]["text"], "steer me now");
        c.close().unwrap();
        return;
    }
    // The steer was not delivered to the aborted run: pi keeps it queued…
    let state: Value = serde_json::from_str(&c.request("get_state", None, secs(60)).unwrap()).unwrap();
    assert_eq!(state["isStreaming"], false);
    assert_eq!(state["pendingMessageCount"], 1);
    // Parked, not running: the agent is idle by its own account (two probes agree).
    c.wait_for_idle(secs(60)).unwrap_or_else(|e| panic!("pi is idle with a parked steer: {e}"));
    // …and delivers it right after the next prompt's message, so the model answers the steer.
    let t = turn(&c, "say hi");
    assert_eq!(t["assistantText"], "steered ok");
    let users: Vec<String> = t["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"][0]["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(users, ["say hi", "steer me now"]);
    let reqs = env.llm_requests();
    assert_eq!(reqs.len(), 2);
    let msgs = reqs[1]["messages"].as_array().unwrap();
    assert_eq!(msgs.last().unwrap()["content"][0]["text"], "steer me now");
    c.close().unwrap();
}

// (e) Usage: message_end carries the fake model's numbers; the turn summary adds them up.
#[test]
fn usage_reaches_message_end_and_the_summary() {
    let script = json!([{"match": "count tokens", "replies": [
        {"tool_call": {"name": "bash", "arguments": {"command": "true"}}, "usage": {"prompt_tokens": 100, "completion_tokens": 7}},
        {"text": "counted", "usage": {"prompt_tokens": 150, "completion_tokens": 9, "cached_tokens": 50}}]}]);
    let Some(env) = PiEnv::new("usage", script) else { return };
    let c = start(&env, &["--tools", "bash"], json!({"turn_summary": true}));
    let t = turn(&c, "count tokens");
    let usages: Vec<&Value> =
        events(&t, "message_end").into_iter().filter(|e| e["message"]["role"] == "assistant").map(|e| &e["message"]["usage"]).collect();
    assert_eq!(usages.len(), 2);
    let pick = |u: &Value| (u["input"].as_u64(), u["output"].as_u64(), u["cacheRead"].as_u64(), u["totalTokens"].as_u64());
    assert_eq!(pick(usages[0]), (Some(100), Some(7), Some(0), Some(107)));
    // pi subtracts cached prompt tokens from input: 150 - 50.
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

// (f) A host tool bridged into pi through the library's generated extension.
// A host tool that works silently for longer than turn_idle_timeout_ms: the idle clock stands
// still while the agent waits on the host, so the turn does not fail.
#[test]
fn a_silent_bridged_host_tool_outlasts_the_idle_timeout() {
    let script = json!([{"match": "add numbers", "replies": [
        {"tool_call": {"name": "host_add", "arguments": {"a": 2, "b": 3}}},
        {"text": "sum is {{last_tool_result}}"}]}]);
    let Some(env) = PiEnv::new("silent_tool", script) else { return };
    let tools = json!([{"name": "host_add", "description": "Add two numbers", "parameters": {"type": "object"}}]);
    let c = start(&env, &[], json!({"host_tools": tools, "turn_idle_timeout_ms": 4000}));
    std::thread::scope(|s| {
        let t = s.spawn(|| c.prompt_and_wait("add numbers", None, secs(120)));
        let call = wait_event(&c, "host_tool_call", |e| e["type"] == "host_tool_call");
        std::thread::sleep(Duration::from_millis(5000));
        c.host_tool_result(call["id"].as_str().unwrap(), json!("5"), false).unwrap();
        let turn: Value = serde_json::from_str(&t.join().unwrap().unwrap_or_else(|e| panic!("the open call should stop the idle clock: {e}"))).unwrap();
        assert_eq!(turn["assistantText"], "sum is 5");
    });
    c.close().unwrap();
}

#[test]
fn bridged_host_tool() {
    let script = json!([{"match": "add numbers", "replies": [
        {"tool_call": {"name": "host_add", "arguments": {"a": 2, "b": 3}}},
        {"text": "sum is {{last_tool_result}}"}]}]);
    let Some(env) = PiEnv::new("bridged_tool", script) else { return };
    let tools = json!([{"name": "host_add", "description": "Add two numbers", "parameters": {
        "type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}]);
    let c = start(&env, &[], json!({"host_tools": tools}));
    std::thread::scope(|s| {
        let t = s.spawn(|| c.prompt_and_wait("add numbers", None, secs(120)));
        let call = wait_event(&c, "host_tool_call", |e| e["type"] == "host_tool_call");
        assert_eq!(call["toolName"], "host_add");
        assert_eq!(call["arguments"], json!({"a": 2, "b": 3}));
        assert_eq!(call["bridged"], true);
        answer_host_add(&c, &call);
        let turn: Value = serde_json::from_str(&t.join().unwrap().unwrap_or_else(|e| panic!("bridged turn: {e}\nstderr: {}", c.stderr()))).unwrap();
        let end = one(&turn, "tool_execution_end");
        assert_eq!((end["toolName"].as_str(), end["isError"].as_bool()), (Some("host_add"), Some(false)));
        assert_eq!(result_text(&end["result"]), "5");
        assert_eq!(turn["assistantText"], "sum is 5");
    });
    // pi offered the bridged tool to the model next to its own.
    let reqs = env.llm_requests();
    assert!(tool_names(&reqs[0]).contains(&"host_add".to_string()), "{:?}", tool_names(&reqs[0]));

    // Abort while the host still holds the call: the AbortSignal reaches the host as
    // host_tool_cancel, the run ends, and a late result is refused.
    std::thread::scope(|s| {
        let t = s.spawn(|| c.prompt_and_wait("add numbers slowly", None, secs(120)));
        let call = wait_event(&c, "host_tool_call", |e| e["type"] == "host_tool_call");
        c.request("abort", None, secs(60)).unwrap();
        let cancel = wait_event(&c, "host_tool_cancel", |e| e["type"] == "host_tool_cancel");
        assert_eq!(cancel["targetId"], call["id"]);
        let turn: Value = serde_json::from_str(&t.join().unwrap().unwrap_or_else(|e| panic!("aborted bridged turn: {e}"))).unwrap();
        let end = one(&turn, "tool_execution_end");
        assert_eq!((end["isError"].as_bool(), result_text(&end["result"]).as_str()), (Some(true), "cancelled"));
        // pi 0.84 – 1.5.0 reports the abort as an error of the next model call (CHANGELOG 1.5.1:
        // "cancellation … reported as an error instead of an abort"; measured 0.84.0 … 1.5.0).
        // Before 1.1.0 pi's agent_settled says nothing of an abort, so such a run ends the
        // prompt as pi settled it: its word is the error.
        let as_error = pi::pi_at_least("0.84.0") && !pi::pi_at_least("1.5.1");
        let m = &turn["assistantMessage"];
        assert_eq!(m["stopReason"], if as_error { "error" } else { "aborted" }, "{m:#}");
        assert!(m["errorMessage"].as_str().is_some_and(|e| e.contains("aborted")), "{m:#}");
        let outcome = if as_error && !pi::pi_at_least("1.1.0") { "agent_settled" } else { "aborted" };
        assert_eq!(turn["outcome"], outcome, "{turn:#}");
        let late = c.host_tool_result(call["id"].as_str().unwrap(), json!("too late"), false).unwrap_err();
        assert_eq!(late.status, Status::Cancelled, "{late}");
    });
    assert_eq!(env.llm_requests().len(), 3, "the aborted run made no second LLM call");
    c.close().unwrap();
}

// (g) The policy gate blocks pi's own bash tool: by library rules, and by the host's verdict.
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
    let Some(env) = PiEnv::new("policy_gate", script) else { return };

    // Rules: answered inside the library, no host round trip.
    let c = start(&env, &[], json!({"tool_policy": {"mode": "rules", "block": {"bash": "no shell for you"}, "default": "allow"}}));
    let t = turn(&c, "run forbidden");
    let end = one(&t, "tool_execution_end");
    assert_eq!(end["toolName"], "bash");
    assert_eq!(end["isError"], true);
    assert_eq!(result_text(&end["result"]), "no shell for you");
    assert_eq!(t["assistantText"], "after: no shell for you");
    assert!(!env.work.join("ran-forbidden").exists(), "the blocked command ran");
    let blocked = wait_event(&c, "tool_blocked", |e| e["type"] == "tool_blocked");
    assert_eq!((blocked["toolName"].as_str(), blocked["reason"].as_str()), (Some("bash"), Some("no shell for you")));
    // The note sits right before the end of the call it blocked (pi decides over the socket
    // while its frames may still be in the pipe: the library orders them).
    let types: Vec<&str> = t["events"].as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap()).collect();
    let at = types.iter().position(|t| *t == "tool_blocked").expect("the note is among the turn's events");
    assert_eq!(types[at + 1], "tool_execution_end", "{types:?}");
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
        assert!(by_text.contains(&(false, "second-ran\n".to_string())), "{by_text:?}");
        assert_eq!(turn["assistantText"], "finished");
    });
    assert!(!env.work.join("ran-first").exists(), "the blocked command ran");
    c.close().unwrap();

    // Host mode, and the host never answers: the gate's timeout blocks the call and tells the
    // library, which voids the question (policy_eval_cancel), notes the block, and refuses a
    // late verdict.
    let c = start(&env, &[], json!({"tool_policy": {"mode": "host", "timeout_ms": 500}}));
    let t = turn(&c, "run forbidden");
    let reason = "blocked: the host's policy gave no verdict (omprpc bridge: no answer within 500 ms)";
    let end = one(&t, "tool_execution_end");
    assert_eq!((end["isError"].as_bool(), result_text(&end["result"])), (Some(true), reason.to_string()));
    assert!(!env.work.join("ran-forbidden").exists(), "the blocked command ran");
    let question = wait_event(&c, "policy_eval", |e| e["type"] == "policy_eval");
    let voided = wait_event(&c, "policy_eval_cancel", |e| e["type"] == "policy_eval_cancel");
    assert_eq!(voided["targetId"], question["id"]);
    let blocked = wait_event(&c, "tool_blocked", |e| e["type"] == "tool_blocked");
    assert_eq!((blocked["toolCallId"].as_str(), blocked["reason"].as_str()), (end["toolCallId"].as_str(), Some(reason)));
    let late = c.policy_verdict(question["id"].as_str().unwrap(), true, "").unwrap_err();
    assert_eq!(late.status, Status::NotFound, "{late}");
    c.close().unwrap();
}

/// A recording with this machine's paths replaced by placeholders (it may become a committed
/// fixture): the workspace, node, pi's CLI, HOME, the temp dir and the fake LLM's port.
fn scrub(text: &str, env: &PiEnv) -> String {
    let mut pairs: Vec<(String, String)> = Vec::new();
    let mut add = |from: String, to: &str| {
        if !from.is_empty() && from != "/" {
            pairs.push((from, to.to_string()));
        }
    };
    add(env.install.cli.display().to_string(), "<pi-cli>");
    add(env.install.node.display().to_string(), "<node>");
    if let Ok(real) = env.root.canonicalize() {
        add(real.display().to_string(), "<workspace>");
    }
    add(env.root.display().to_string(), "<workspace>");
    add(std::env::temp_dir().display().to_string(), "<tmp>");
    add(std::env::var("HOME").unwrap_or_default(), "<home>");
    add(format!("127.0.0.1:{}", env.llm.port), "127.0.0.1:<port>");
    // Longest first, so a path is replaced whole before a prefix of it.
    pairs.sort_by_key(|(from, _)| std::cmp::Reverse(from.len()));
    let mut out = text.to_string();
    for (from, to) in &pairs {
        // As they appear inside JSON strings ('/' is never escaped by pi or by omprpc).
        let from = serde_json::to_string(from).unwrap();
        let to = serde_json::to_string(to).unwrap();
        out = out.replace(&from[1..from.len() - 1], &to[1..to.len() - 1]);
    }
    out
}

// (h) A real session, recorded (`record_path`) and replayed through the fake agent
// (`--replay`) to a fresh client: the same turn, the same state. The scrubbed recording
// replays too; OMPRPC_UPDATE_RECORDINGS=1 writes it to tests/fixtures/recordings/, where
// tests/record.rs replays it without pi.
#[test]
fn recorded_session_replays() {
    let script = json!([{"match": "say hello", "replies": [{"text": "Hello from the fake model"}]}]);
    let Some(env) = PiEnv::new("record", script) else { return };
    let rec = env.root.join("session.jsonl");
    let c = start(&env, &[], json!({"record_path": rec.display().to_string()}));
    let live = turn(&c, "say hello");
    let live_state = parse(c.request("get_state", None, secs(60)).unwrap().as_bytes());
    c.close().unwrap();
    assert_eq!(live["assistantText"], "Hello from the fake model");

    let text = std::fs::read_to_string(&rec).unwrap();
    let scrubbed = scrub(&text, &env);
    let leaks = [env.root.display().to_string(), std::env::temp_dir().display().to_string(), env!("CARGO_MANIFEST_DIR").to_string()];
    for leak in &leaks {
        assert!(!scrubbed.contains(leak.as_str()), "the scrubbed recording still mentions {leak}");
    }
    let scrubbed_path = env.write_file("scrubbed.jsonl", &scrubbed);
    let kinds = |t: &Value| -> Vec<String> { t["events"].as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap().to_string()).collect() };
    for path in [&rec, &scrubbed_path] {
        // `--mode rpc` makes the client ask the replay its `--version`: the recorded pi's.
        let opts = json!({"command": [env!("CARGO_BIN_EXE_omprpc-fake-agent"), "--replay", path.display().to_string(), "--mode", "rpc"],
                          "flavor": "pi", "startup_timeout_ms": 30000, "request_timeout_ms": 30000});
        let r = Client::start(&opts.to_string()).unwrap_or_else(|e| panic!("replaying {}: {e}", path.display()));
        let again = turn(&r, "say hello");
        assert_eq!(kinds(&again), kinds(&live), "{}", path.display());
        assert_eq!(again["assistantText"], live["assistantText"]);
        assert_eq!(again["assistantMessage"]["usage"], live["assistantMessage"]["usage"]);
        let state = parse(r.request("get_state", None, secs(30)).unwrap().as_bytes());
        for field in ["model", "sessionId", "isStreaming", "thinkingLevel", "messageCount"] {
            if path == &rec {
                assert_eq!(state[field], live_state[field], "get_state.{field}");
            }
            assert!(!state[field].is_null() || live_state[field].is_null(), "get_state.{field}");
        }
        assert_eq!(state["model"]["id"], "fake-model");
        r.close().unwrap();
    }
    if std::env::var("OMPRPC_UPDATE_RECORDINGS").as_deref() == Ok("1") {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("pi-text-turn.jsonl"), &scrubbed).unwrap();
        eprintln!("wrote tests/fixtures/recordings/pi-text-turn.jsonl");
    }
}

// (g) The library builds the argv for the pi it finds: `--version` is probed through the
// launcher, and `tools: []` with a bridged tool means "none of pi's own tools, the host's
// tool on" on every version (pi 0.68+: `--tools host_add`; 0.40–0.67: `--no-tools`, which
// there leaves extension tools on, while `--tools host_add` would only warn "Unknown tool";
// before 0.40, which ignores `--no-tools`: `--tools ""`).
#[test]
fn the_argv_fits_the_pi_version() {
    let script = json!([{"match": "add numbers", "replies": [
        {"tool_call": {"name": "host_add", "arguments": {"a": 2, "b": 3}}},
        {"text": "sum is {{last_tool_result}}"}]}]);
    let Some(env) = PiEnv::new("argv_version", script) else { return };
    let launcher = env.write_file("pi.sh", &format!("#!/bin/sh\nexec '{}' '{}' \"$@\"\n", env.install.node.display(), env.install.cli.display()));
    std::fs::set_permissions(&launcher, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let tools = json!([{"name": "host_add", "description": "Add two numbers", "parameters": {
        "type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}]);
    let opts = json!({"executable": launcher.display().to_string(), "model": "fake/fake-model", "no_session": true,
        "tools": [], "host_tools": tools, "cwd": env.work.display().to_string(), "env": env.env(json!({"PI_OFFLINE": "1"})),
        "inherit_env": false, "startup_timeout_ms": 120000, "request_timeout_ms": 60000, "stop_grace_ms": 3000});
    let c = Client::start(&opts.to_string()).unwrap_or_else(|e| panic!("start: {e}"));
    let info: Value = serde_json::from_str(&c.info()).unwrap();
    assert_eq!(info["agentVersion"], pi::pi_version().as_str(), "{info}");
    assert_eq!(info["flavor"], "pi", "pi's bare --version output names the flavour: {info}");
    assert_eq!(info["bridgeLoaded"], true);
    let argv: Vec<String> = serde_json::from_value(info["argv"].clone()).unwrap();
    let want: &[&str] = if pi::pi_at_least("0.68.0") {
        &["--tools", "host_add"]
    } else if pi::pi_at_least("0.40.1") {
        &["--no-tools"]
    } else {
        &["--tools", ""]
    };
    assert!(argv.windows(want.len()).any(|w| w == want), "{argv:?}");
    std::thread::scope(|s| {
        let t = s.spawn(|| c.prompt_and_wait("add numbers", None, secs(120)));
        let call = wait_event(&c, "host_tool_call", |e| e["type"] == "host_tool_call");
        c.host_tool_result(call["id"].as_str().unwrap(), json!("5"), false).unwrap();
        let turn: Value = serde_json::from_str(&t.join().unwrap().unwrap_or_else(|e| panic!("turn: {e}\nstderr: {}", c.stderr()))).unwrap();
        assert_eq!(turn["assistantText"], "sum is 5");
    });
    assert_eq!(tool_names(&env.llm_requests()[0]), ["host_add"], "only the host's tool is offered");
    assert!(!c.stderr().contains("Unknown tool \"host_add\""), "{}", c.stderr());
    c.close().unwrap();
}

// A follow_up queued while the model streams runs in the same run, after the answer: the
// agent is busy until that run's terminal agent_end, and wait_for_idle waits for it.
#[test]
fn a_queued_follow_up_runs_before_the_agent_is_idle() {
    let Some(env) = PiEnv::new("follow_up", common::follow_up_script()) else { return };
    let c = start(&env, &[], json!({}));
    common::queued_follow_up_runs_before_idle(&c);
    assert_eq!(env.llm_requests().len(), 2, "the answer, then the follow-up");
    c.close().unwrap();
}

// --- (i) A prompt ends where pi says it will not go on: retries, overflow recovery, abort ---
//
// The fake LLM fails a call (`fail`), pi recovers by itself or gives up, and the turn holds it
// all: the call returns after pi's last run with that run's outcome, pi starts nothing after it
// returned, and a second prompt right after is accepted. Each session is recorded; the scrubbed
// recording is replayed through the fake agent to a fresh client, which must end the turn the
// same way; OMPRPC_UPDATE_RECORDINGS=1 writes it to tests/fixtures/recordings/pi-<version>-<case>.jsonl
// (for the pi versions the fake agent reproduces: the newest and the previous one).

/// pi's own retry settings (agent dir settings.json): a short first delay, except where a test
/// needs the delay to act in.
fn retry_settings(env: &PiEnv, base_delay_ms: u64) {
    let settings = json!({"retry": {"enabled": true, "maxRetries": 3, "baseDelayMs": base_delay_ms}});
    std::fs::write(env.ws.agent_dir.join("settings.json"), settings.to_string()).unwrap();
}

fn nothing_after(c: &Client, env: &PiEnv) {
    common::nothing_after(c, "pi", || env.llm_requests().len(), pi::pi_turn_end().1);
}

/// Scrubs the session recorded at `rec`, replays it through the fake agent (`drive` runs the
/// same calls) checking that the replayed turn ends as `live` did, and writes it as a fixture
/// when asked (the newest and the previous pi only).
fn replayed(env: &PiEnv, rec: &std::path::Path, case: &str, live: &Value, drive: impl Fn(&Client) -> Value) {
    let scrubbed = scrub(&std::fs::read_to_string(rec).unwrap(), env);
    let path = env.write_file(&format!("{case}.jsonl"), &scrubbed);
    // `--mode rpc` makes the client ask the replay its `--version`: the recorded pi's.
    let opts = json!({"command": [env!("CARGO_BIN_EXE_omprpc-fake-agent"), "--replay", path.display().to_string(), "--mode", "rpc"],
                      "flavor": "pi", "startup_timeout_ms": 30000, "request_timeout_ms": 30000});
    let r = Client::start(&opts.to_string()).unwrap_or_else(|e| panic!("replaying {case}: {e}"));
    assert_eq!(parse(r.info().as_bytes())["agentVersion"], pi::pi_version().as_str());
    let again = drive(&r);
    for field in ["outcome", "attempts", "settled", "failedAttempts", "compactions", "assistantText"] {
        assert_eq!(again[field], live[field], "replayed {case}: {field}");
    }
    r.close().unwrap();
    use omprpc::protocol::version::{PI_NEWEST, PI_PREVIOUS};
    let v = pi::pi_version();
    if std::env::var("OMPRPC_UPDATE_RECORDINGS").as_deref() == Ok("1") && (v == PI_NEWEST.to_string() || v == PI_PREVIOUS.to_string()) {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings");
        std::fs::write(dir.join(format!("pi-{v}-{case}.jsonl")), &scrubbed).unwrap();
        eprintln!("wrote tests/fixtures/recordings/pi-{v}-{case}.jsonl");
    }
}

fn recorded_start(env: &PiEnv, rec: &std::path::Path) -> Client {
    start(env, &[], json!({"record_path": rec.display().to_string(), "turn_summary": true}))
}

/// A retry after the model failed once with `kind`: one turn, two attempts.
fn a_retry_is_one_turn(case: &str, kind: Value) {
    let script = json!([{"match": "flaky", "replies": [{"text": "recovered", "fail": kind}]}]);
    let Some(env) = PiEnv::new(case, script) else { return };
    retry_settings(&env, 300);
    let rec = env.root.join("session.jsonl");
    let c = recorded_start(&env, &rec);
    let t = turn(&c, "flaky");
    assert_eq!(t["assistantText"], "recovered", "{t:#}");
    assert_eq!((t["outcome"].as_str(), t["settled"].as_bool()), (Some(pi::pi_turn_end().1), Some(pi::pi_settles())));
    assert_eq!(t["attempts"], 2, "{t:#}");
    let failed = &t["failedAttempts"];
    assert_eq!((failed.as_array().map(Vec::len), failed[0]["attempt"].as_u64(), failed[0]["then"].as_str()), (Some(1), Some(1), Some("retry")), "{failed}");
    assert!(failed[0]["error"].as_str().is_some_and(|e| e.contains(if case.ends_with("429") { "429" } else { "500" })), "{failed}");
    assert_eq!(failed[0]["delayMs"], 300);
    // The turn holds both runs: the failed attempt's error message, then the answer.
    let stops: Vec<&str> = t["messages"].as_array().unwrap().iter().filter_map(|m| m["stopReason"].as_str()).collect();
    assert_eq!(stops, ["error", "stop"]);
    assert_eq!((t["summary"]["attempts"].as_u64(), t["summary"]["failedAttempts"][0]["then"].as_str()), (Some(2), Some("retry")));
    assert_eq!(events(&t, "agent_start").len(), 2);
    one(&t, "auto_retry_start");
    nothing_after(&c, &env);
    c.close().unwrap();
    replayed(&env, &rec, case, &t, |r| turn(r, "flaky"));
}

#[test]
fn a_retry_after_a_500_is_one_turn() {
    a_retry_is_one_turn("retry-500", json!("http_500"));
}

#[test]
fn a_retry_after_a_429_is_one_turn() {
    a_retry_is_one_turn("retry-429", json!({"kind": "http_429", "retry_after_s": 1}));
}

// A context-length error: pi before 0.80 compacts for the overflow and retries (one turn, two
// attempts, the compaction in it); pi 1.x gives up and settles with the failed run.
#[test]
fn overflow_recovery_is_one_turn() {
    let script = json!([{"match": "too long", "replies": [{"text": "recovered", "fail": "context_length"}]}]);
    let Some(env) = PiEnv::new("overflow", script) else { return };
    let rec = env.root.join("session.jsonl");
    let c = recorded_start(&env, &rec);
    turn(&c, "first");
    let t = turn(&c, "too long");
    let failed = &t["failedAttempts"];
    assert!(failed[0]["error"].as_str().is_some_and(|e| e.contains("maximum context length")), "{failed}");
    if !pi::pi_recovers_from_overflow() {
        assert_eq!((t["outcome"].as_str(), t["attempts"].as_u64(), failed[0]["then"].as_str()), (Some(pi::pi_turn_end().1), Some(1), Some("none")), "{t:#}");
        assert_eq!(t["assistantMessage"]["stopReason"], "error");
        assert_eq!(t["compactions"], json!([]));
    } else {
        assert_eq!((t["outcome"].as_str(), t["attempts"].as_u64(), failed[0]["then"].as_str()), (Some("agent_end"), Some(2), Some("compaction")), "{t:#}");
        assert_eq!(t["assistantText"], "recovered");
        let c0 = &t["compactions"][0];
        assert_eq!((c0["reason"].as_str(), c0["willRetry"].as_bool(), c0["aborted"].as_bool()), (Some("overflow"), Some(true), Some(false)), "{c0}");
    }
    nothing_after(&c, &env);
    c.close().unwrap();
    replayed(&env, &rec, "overflow", &t, |r| {
        turn(r, "first");
        turn(r, "too long")
    });
}

/// Sends `abort` once the agent announced its retry, while `prompt_and_wait` waits on another
/// thread; returns the turn and how long it took to come back after the abort.
fn abort_in_the_retry_delay(c: &Client) -> (Value, Duration) {
    std::thread::scope(|s| {
        let t = s.spawn(|| c.prompt_and_wait("flaky", None, secs(120)));
        wait_event(c, "auto_retry_start", |e| e["type"] == "auto_retry_start");
        let aborted_at = Instant::now();
        c.request("abort", None, secs(60)).unwrap();
        let turn = t.join().unwrap().unwrap_or_else(|e| panic!("aborted turn: {e}\nstderr: {}", c.stderr()));
        (serde_json::from_str(&turn).unwrap(), aborted_at.elapsed())
    })
}

// Abort while pi waits to retry (its default 2 s): the turn ends at once, aborted, and pi does
// not retry after it.
#[test]
fn abort_in_the_retry_delay_ends_the_turn_aborted() {
    let script = json!([{"match": "flaky", "replies": [{"text": "recovered", "fail": "http_500"}]}]);
    let Some(env) = PiEnv::new("abort-in-retry-delay", script) else { return };
    retry_settings(&env, 2000);
    let rec = env.root.join("session.jsonl");
    let c = recorded_start(&env, &rec);
    let (t, took) = abort_in_the_retry_delay(&c);
    assert!(took < Duration::from_secs(1), "the aborted turn came back {took:?} after the abort");
    assert_eq!((t["outcome"].as_str(), t["attempts"].as_u64()), (Some("aborted"), Some(1)), "{t:#}");
    assert_eq!(t["failedAttempts"][0]["then"], "cancelled", "{t:#}");
    let requests = env.llm_requests().len();
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(env.llm_requests().len(), requests, "pi retried after the abort");
    nothing_after(&c, &env);
    c.close().unwrap();
    replayed(&env, &rec, "abort-in-retry-delay", &t, |r| abort_in_the_retry_delay(r).0);
}

// A failure pi does nothing about (a 400): the failed run is the end — on pi 1.x its
// agent_settled says so; before, nothing follows the failed agent_end and a get_state probe
// finds pi idle.
#[test]
fn a_failure_nobody_retries_ends_the_turn_with_it() {
    let script = json!([{"match": "broken", "replies": [{"error": {"status": 400, "message": "bad request"}}]}]);
    let Some(env) = PiEnv::new("failure-not-retried", script) else { return };
    let c = start(&env, &[], json!({}));
    let t = turn(&c, "broken");
    assert_eq!((t["outcome"].as_str(), t["attempts"].as_u64()), (Some(pi::pi_turn_end().1), Some(1)), "{t:#}");
    assert_eq!((t["failedAttempts"][0]["then"].as_str(), t["assistantMessage"]["stopReason"].as_str()), (Some("none"), Some("error")), "{t:#}");
    assert!(t["failedAttempts"][0]["error"].as_str().is_some_and(|e| e.contains("bad request")), "{t:#}");
    assert_eq!(env.llm_requests().len(), 1);
    nothing_after(&c, &env);
    c.close().unwrap();
}

// The same failures in the Anthropic wire shape (`anthropic-messages`: a 500's `api_error`, an
// overflow's "prompt is too long"): pi retries the one and recovers from (up to 0.79.7) or gives
// up on (0.79.8 on) the other, as with OpenAI's.
#[test]
fn failures_in_the_anthropic_shape_are_retried_and_recovered_alike() {
    let script = json!([
        {"match": "flaky", "replies": [{"text": "recovered", "fail": "http_500"}]},
        {"match": "too long", "replies": [{"text": "recovered", "fail": "context_length"}]}]);
    let Some(env) = PiEnv::new("anthropic-shape", script) else { return };
    let mut models = pi::models_json_at(&format!("http://127.0.0.1:{}", env.llm.port));
    models["providers"]["fake"]["api"] = json!("anthropic-messages");
    std::fs::write(env.agent_dir.join("models.json"), models.to_string()).unwrap();
    retry_settings(&env, 300);
    let c = start(&env, &[], json!({}));
    let t = turn(&c, "flaky");
    assert_eq!((t["assistantText"].as_str(), t["attempts"].as_u64(), t["failedAttempts"][0]["then"].as_str()), (Some("recovered"), Some(2), Some("retry")), "{t:#}");
    assert_eq!(t["assistantMessage"]["api"], "anthropic-messages");
    let t = turn(&c, "too long");
    let want = if pi::pi_recovers_from_overflow() { (Some("recovered"), Some(2), Some("compaction")) } else { (None, Some(1), Some("none")) };
    assert_eq!((t["assistantText"].as_str(), t["attempts"].as_u64(), t["failedAttempts"][0]["then"].as_str()), want, "{t:#}");
    assert!(t["failedAttempts"][0]["error"].as_str().is_some_and(|e| e.contains("prompt is too long")), "{t:#}");
    nothing_after(&c, &env);
    c.close().unwrap();
}

// --- (j) Nested tool calls: codemode (pi 0.99 on) ----------------------------------------------
//
// The model answers with a `codemode` call whose script runs bash and read in parallel (bash
// sleeps first, so read ends before it: the ends come in another order than the starts); each
// inner call runs through pi's tool pipeline with its own tool_execution_start/end, carrying
// `parentToolCallId` (the codemode call's id) and an id `<parent>/<n>`. The turn summary pairs
// every call with its own end and nests the inner calls under the codemode call. Recorded and
// replayed; OMPRPC_UPDATE_RECORDINGS=1 writes tests/fixtures/recordings/pi-1.6.0-codemode.jsonl,
// which the bindings' and the C tests replay.
#[test]
fn codemode_inner_calls_are_nested_under_their_parent() {
    if !pi::pi_at_least("0.99.0") {
        eprintln!("skipped: pi {} has no codemode (0.99.0 on)", pi::pi_version());
        return;
    }
    let code = "const [sh, note] = await Promise.all([tools.bash({command: \"sleep 0.3; echo inner\"}), tools.read({path: \"note.txt\"})]);\nreturn sh.output.trim() + \"+\" + note.trim();";
    let script = json!([{"match": "run codemode", "replies": [
        {"text": "Scripting it. ", "tool_call": {"name": "codemode", "arguments": {"code": code}}},
        {"text": "done: {{last_tool_result}}"}]}]);
    let Some(env) = PiEnv::new("codemode", script) else { return };
    std::fs::write(env.work.join("note.txt"), "from-note\n").unwrap();
    let rec = env.root.join("session.jsonl");
    let c = start(&env, &["--tools", "codemode,bash,read"], json!({"record_path": rec.display().to_string(), "turn_summary": true}));
    let t = turn(&c, "please run codemode");
    assert!(t["assistantText"].as_str().is_some_and(|a| a.ends_with("inner+from-note")), "{t:#}");
    codemode_turn_is_nested(&t);
    // Inner calls add no transcript entries: the model got one tool result, the script's.
    let results: Vec<&Value> = t["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "toolResult").collect();
    assert_eq!(results.len(), 1, "{:#}", t["messages"]);
    assert_eq!(results[0]["toolName"], "codemode");
    let nested: Vec<(&str, &str)> = results[0]["nestedCalls"]["calls"].as_array().unwrap().iter()
        .map(|n| (n["name"].as_str().unwrap(), n["status"].as_str().unwrap())).collect();
    assert_eq!(nested, [("bash", "ok"), ("read", "ok")], "{:#}", results[0]);
    let reqs = env.llm_requests();
    assert_eq!(tool_names(&reqs[0]), ["codemode", "bash", "read"]);
    let tool_msgs: Vec<&Value> = reqs[1]["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(tool_msgs.len(), 1, "{:#}", reqs[1]);
    c.close().unwrap();
    replayed(&env, &rec, "codemode", &t, |r| turn(r, "please run codemode"));
}

/// A codemode turn (the summary on): the codemode call carries no parent and lists its two inner
/// calls (bash, read) as children; each inner call's start, updates and end name it, its id is
/// `<parent>/<n>`, all of them come between the parent's start and end, and each call's summary
/// item holds its own result however the ends interleaved.
fn codemode_turn_is_nested(t: &Value) {
    let events: Vec<&Value> = t["events"].as_array().unwrap().iter().collect();
    let starts: Vec<usize> = (0..events.len()).filter(|&i| events[i]["type"] == "tool_execution_start").collect();
    assert_eq!(starts.len(), 3, "{:#}", t["events"]);
    let outer = events[starts[0]];
    assert_eq!((outer["toolName"].as_str(), outer.get("parentToolCallId")), (Some("codemode"), None), "{outer}");
    let parent = outer["toolCallId"].as_str().unwrap();
    let outer_end = (0..events.len()).find(|&i| events[i]["type"] == "tool_execution_end" && events[i]["toolCallId"] == parent).unwrap();
    for (i, e) in events.iter().enumerate() {
        let ty = e["type"].as_str().unwrap();
        if !ty.starts_with("tool_execution_") || e["toolCallId"] == parent {
            continue;
        }
        assert_eq!(e["parentToolCallId"], parent, "{e}");
        assert!(e["toolCallId"].as_str().unwrap().starts_with(&format!("{parent}/")), "{e}");
        assert!(i > starts[0] && i < outer_end, "{ty} of an inner call outside its parent's start and end");
    }
    let calls = t["summary"]["toolCalls"].as_array().unwrap();
    let row = |c: &Value| {
        let text = c["result"]["content"].as_array().map(|p| p.iter().filter_map(|p| p["text"].as_str()).collect::<String>());
        (c["toolName"].as_str().unwrap().to_string(), c["parentToolCallId"].as_str().map(str::to_string), c["outcome"].as_str().unwrap().to_string(), text.unwrap_or_default())
    };
    let rows: Vec<_> = calls.iter().map(row).collect();
    let p = Some(parent.to_string());
    assert_eq!(rows[1..], [("bash".into(), p.clone(), "success".into(), "inner\n".into()), ("read".into(), p, "success".into(), "from-note\n".into())]);
    assert_eq!((rows[0].0.as_str(), rows[0].1.as_deref(), rows[0].2.as_str()), ("codemode", None, "success"));
    assert!(rows[0].3.ends_with("inner+from-note"), "{:#}", calls[0]);
    let ids: Vec<&str> = calls[1..].iter().map(|c| c["toolCallId"].as_str().unwrap()).collect();
    assert_eq!(calls[0]["children"], json!(ids));
    assert_eq!((calls[1]["children"].clone(), calls[2]["children"].clone()), (json!([]), json!([])));
    assert_eq!(calls[1]["args"], json!({"command": "sleep 0.3; echo inner"}));
}
