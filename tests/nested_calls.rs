//! Nested tool calls (`parentToolCallId`): real pi 1.6.0's codemode turn, recorded by
//! tests/real_pi.rs (`codemode_inner_calls_are_nested_under_their_parent`, written with
//! OMPRPC_UPDATE_RECORDINGS=1) and replayed through the fake agent to a client with
//! `turn_summary`. The script ran bash (which sleeps first) and read at once, so the inner
//! calls' ends come in another order than their starts, between the codemode call's updates.

use std::time::Duration;

use omprpc::client::deadline_after;
use omprpc::turn::summary::{summarize, Summarizer};
use omprpc::Client;
use serde_json::{json, Value};

const FAKE: &str = env!("CARGO_BIN_EXE_omprpc-fake-agent");
const CODEMODE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/recordings/pi-1.6.0-codemode.jsonl");

fn parse(s: &[u8]) -> Value {
    serde_json::from_slice(s).unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(s)))
}

/// The recorded codemode turn, replayed to a client started with `turn_summary`.
fn replayed_turn() -> Value {
    // `--mode rpc` makes the client ask the replay its `--version`: the recorded pi's.
    let opts = json!({"command": [FAKE, "--replay", CODEMODE, "--mode", "rpc"], "flavor": "pi", "turn_summary": true,
                      "startup_timeout_ms": 10000, "request_timeout_ms": 10000, "stop_grace_ms": 500});
    let c = Client::start(&opts.to_string()).unwrap_or_else(|e| panic!("replaying the codemode recording: {e}"));
    let t = c
        .prompt_and_wait("please run codemode", None, deadline_after(Some(Duration::from_secs(10))))
        .unwrap_or_else(|e| panic!("codemode turn: {e}\nstderr: {}", c.stderr()));
    c.close().unwrap();
    parse(t.as_bytes())
}

/// (toolCallId, toolName, parentToolCallId, outcome, result text, children) of each summary item.
fn rows(summary: &Value) -> Vec<(String, String, Option<String>, String, String, Value)> {
    summary["toolCalls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let text = c["result"]["content"].as_array().map(|p| p.iter().filter_map(|p| p["text"].as_str()).collect::<String>()).unwrap_or_default();
            let str_of = |k: &str| c[k].as_str().unwrap_or_else(|| panic!("{k} of {c}")).to_string();
            (str_of("toolCallId"), str_of("toolName"), c["parentToolCallId"].as_str().map(str::to_string), str_of("outcome"), text, c["children"].clone())
        })
        .collect()
}

#[test]
fn a_codemode_calls_inner_calls_pair_by_id_and_nest_under_it() {
    let t = replayed_turn();
    // The recording as it is: read's end comes before bash's, both before codemode's.
    let ends: Vec<&str> = t["events"].as_array().unwrap().iter().filter(|e| e["type"] == "tool_execution_end").map(|e| e["toolCallId"].as_str().unwrap()).collect();
    assert_eq!(ends, ["call_fake_2/2", "call_fake_2/1", "call_fake_2"]);
    let parent = Some("call_fake_2".to_string());
    assert_eq!(
        rows(&t["summary"]),
        [
            ("call_fake_2".into(), "codemode".into(), None, "success".into(),
             "Script completed\nWall time 0.4 seconds\nOutput:\ninner+from-note".into(), json!(["call_fake_2/1", "call_fake_2/2"])),
            ("call_fake_2/1".into(), "bash".into(), parent.clone(), "success".into(), "inner\n".into(), json!([])),
            ("call_fake_2/2".into(), "read".into(), parent, "success".into(), "from-note\n".into(), json!([])),
        ],
        "{:#}",
        t["summary"]["toolCalls"]
    );
    assert_eq!(t["summary"]["toolCalls"][1]["args"], json!({"command": "sleep 0.3; echo inner"}), "the start's args: pi's inner end has none");
    // The same summary from the turn's events, outside the client.
    let events = t["events"].as_array().unwrap().clone();
    assert_eq!(summarize(&events, None)["toolCalls"], t["summary"]["toolCalls"]);
}

#[test]
fn the_streaming_summarizer_names_each_tool_items_caller() {
    let t = replayed_turn();
    let mut sm = Summarizer::new(None);
    let mut items = Vec::new();
    for e in t["events"].as_array().unwrap() {
        items.extend(sm.feed(e).into_iter().filter(|i| i["kind"].as_str().is_some_and(|k| k.starts_with("tool_"))));
    }
    let seen: Vec<(String, String, Option<String>)> = items
        .iter()
        .filter(|i| i["kind"] != "tool_update")
        .map(|i| (i["kind"].as_str().unwrap().to_string(), i["toolCallId"].as_str().unwrap().to_string(), i["parentToolCallId"].as_str().map(str::to_string)))
        .collect();
    let p = || Some("call_fake_2".to_string());
    let item = |k: &str, id: &str, parent: Option<String>| (k.to_string(), id.to_string(), parent);
    assert_eq!(
        seen,
        [item("tool_start", "call_fake_2", None), item("tool_start", "call_fake_2/1", p()), item("tool_start", "call_fake_2/2", p()),
         item("tool_end", "call_fake_2/2", p()), item("tool_end", "call_fake_2/1", p()), item("tool_end", "call_fake_2", None)]
    );
    // Updates name their caller too: the codemode call's own updates (its script's progress)
    // have none, bash's name the codemode call.
    let updates: Vec<(&str, Option<&str>)> =
        items.iter().filter(|i| i["kind"] == "tool_update").map(|i| (i["toolCallId"].as_str().unwrap(), i["parentToolCallId"].as_str())).collect();
    assert!(updates.contains(&("call_fake_2", None)) && updates.contains(&("call_fake_2/1", Some("call_fake_2"))), "{updates:?}");
    assert_eq!(sm.finish()["toolCalls"], t["summary"]["toolCalls"]);
}
