//! The Rust client against the project's fake agent: real processes, real pipes.

#[path = "support/fake.rs"]
mod fake;

use std::time::{Duration, Instant};

use fake::{secs, start_with, FAKE};
use omprpc::client::{deadline_after, parse_params};
use omprpc::{Client, Status};
use serde_json::{json, Value};

fn start(args: &[&str]) -> Client {
    let mut argv = vec![FAKE.to_string()];
    argv.extend(args.iter().map(|s| s.to_string()));
    start_with(json!({ "command": argv }))
}

fn parse(s: &str) -> Value {
    serde_json::from_str(s).unwrap()
}

fn turn(c: &Client, message: &str) -> Value {
    parse(&c.prompt_and_wait(message, None, secs(10)).unwrap_or_else(|e| panic!("{message}: {e}")))
}

fn event_types(v: &Value) -> Vec<String> {
    v.as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap_or("").to_string()).collect()
}

/// Polls events until one of type `ty` arrives.
fn wait_event(c: &Client, ty: &str) -> Value {
    let deadline = secs(10);
    loop {
        // One at a time: events after the match stay queued for the next wait.
        let evs = c.next_events(1, deadline).unwrap_or_else(|e| panic!("waiting for {ty}: {e}"));
        let v: Value = serde_json::from_slice(&evs[0]).unwrap();
        if v["type"] == ty {
            return v;
        }
    }
}

#[test]
fn commands_round_trip() {
    let c = start(&[]);
    let state = parse(&c.request("get_state", None, secs(10)).unwrap());
    assert_eq!(state["sessionId"], "fake-session");
    assert_eq!(state["model"]["id"], "claude-sonnet-4-5");
    let p = parse_params(Some(r#"{"command":"echo hello"}"#)).unwrap();
    let bash = parse(&c.request("bash", p.as_ref(), secs(10)).unwrap());
    assert_eq!(bash["output"], "hello\n");
    assert_eq!(bash["exitCode"], 0);
    let p = parse_params(Some(r#"{"provider":"anthropic","modelId":"claude-sonnet-4-6"}"#)).unwrap();
    assert_eq!(parse(&c.request("set_model", p.as_ref(), secs(10)).unwrap())["id"], "claude-sonnet-4-6");
    // A command the agent rejects fails with the agent's text.
    let e = c.request("no_such_command", None, secs(10)).unwrap_err();
    assert_eq!(e.status, Status::CommandFailed);
    assert_eq!(e.failure.as_ref().unwrap().error, "unsupported: no_such_command");
    // A response without data comes back as null.
    assert_eq!(c.request("abort", None, secs(10)).unwrap(), "{}");
    c.close().unwrap();
    assert_eq!(c.request("get_state", None, secs(10)).unwrap_err().status, Status::Closed);
}

#[test]
fn prompt_and_wait_variants() {
    let c = start(&[]);
    let t = turn(&c, "say hello");
    assert_eq!(t["assistantText"], "pong");
    assert!(t["events"].as_array().unwrap().len() >= 3);
    assert_eq!(t["agentInvoked"], true);
    assert_eq!(turn(&c, "thinking")["assistantText"], "visible");
    let compacted = turn(&c, "compacted");
    assert_eq!(compacted["messages"].as_array().unwrap().len(), 2);
    assert_eq!(compacted["messages"][0]["content"][0]["text"], "pong");
    let local = turn(&c, "local");
    assert_eq!(local["agentInvoked"], false);
    assert_eq!(local["events"].as_array().unwrap().len(), 0);
    let pr = turn(&c, "prompt result");
    assert_eq!(pr["agentInvoked"], false);
    assert_eq!(pr["promptResult"]["type"], "prompt_result");
    let nt = turn(&c, "non-terminal");
    let ends = event_types(&nt["events"]).iter().filter(|t| *t == "agent_end").count();
    assert_eq!(ends, 2);
    assert_eq!(nt["assistantText"], "pong");
    c.wait_for_idle(secs(5)).unwrap();
}

#[test]
fn late_failure_fails_the_turn_and_is_recorded_once() {
    let c = start(&["--scenario", "late-failure"]);
    let e = c.prompt_and_wait("say hello", None, secs(10)).unwrap_err();
    assert_eq!(e.status, Status::CommandFailed);
    let f = e.failure.unwrap();
    assert_eq!((f.command.as_str(), f.error.as_str()), ("prompt", "late failure"));
    let errors = parse(&c.protocol_errors());
    assert_eq!(errors.as_array().unwrap().len(), 1);
    assert!(errors[0]["message"].as_str().unwrap().contains("late failure"));
}

#[test]
fn idless_errors_are_correlated_by_command() {
    let c = start(&["--scenario", "idless-error"]);
    let e = c.request("unknown", None, secs(10)).unwrap_err();
    let f = e.failure.unwrap();
    assert_eq!((f.command.as_str(), f.error.as_str()), ("unknown", "unsupported: unknown"));
}

#[test]
fn host_tools_round_trip_with_updates_and_renaming() {
    let c = start_with(json!({"host_tools": [{"name": "echo_host", "description": "Echo", "parameters": {"type": "object"}}]}));
    for (message, shown_at_start) in [("needs host tool", None), ("needs xd tool", Some("write"))] {
        let c = &c;
        std::thread::scope(|s| {
            let waiter = s.spawn(move || turn(c, message));
            let call = wait_event(c, "host_tool_call");
            assert_eq!(call["arguments"]["message"], "hello");
            let id = call["id"].as_str().unwrap();
            c.host_tool_update(id, json!("working:hello")).unwrap();
            c.host_tool_result(id, json!({"content": [{"type": "text", "text": "host:hello"}]}), false).unwrap();
            let t = waiter.join().unwrap();
            let evs = t["events"].as_array().unwrap();
            let upd: Vec<_> = evs.iter().filter(|e| e["type"] == "tool_execution_update").collect();
            let end: Vec<_> = evs.iter().filter(|e| e["type"] == "tool_execution_end").collect();
            assert_eq!(upd.len(), 1);
            assert_eq!(upd[0]["partialResult"]["content"][0]["text"], "working:hello");
            assert_eq!(upd[0]["toolName"], "echo_host");
            assert_eq!(end[0]["result"]["content"][0]["text"], "host:hello");
            assert_eq!(end[0]["toolName"], "echo_host");
            if let Some(name) = shown_at_start {
                let start = evs.iter().find(|e| e["type"] == "tool_execution_start").unwrap();
                assert_eq!(start["toolName"], name);
            }
        });
    }
}

#[test]
fn host_tool_cancel_and_malformed_calls() {
    let c = start_with(json!({"host_tools": [{"name": "echo_host", "description": "Echo", "parameters": {"type": "object"}}]}));
    c.prompt("prompt", "cancel host tool", None, secs(10)).unwrap();
    let call = wait_event(&c, "host_tool_call");
    wait_event(&c, "host_tool_cancel");
    let e = c.host_tool_result(call["id"].as_str().unwrap(), json!("late"), false).unwrap_err();
    assert_eq!(e.status, Status::Cancelled);
    assert_eq!(c.host_tool_result("nope", json!("x"), false).unwrap_err().status, Status::NotFound);
    c.wait_for_idle(secs(10)).unwrap();
    for (message, text) in [("bad host call", "Host tool arguments must be an object"), ("unknown host tool", "is not registered")] {
        c.prompt("prompt", message, None, secs(10)).unwrap();
        let seen = wait_event(&c, "host_result_seen");
        assert_eq!(seen["frame"]["isError"], true, "{message}");
        assert!(seen["frame"]["result"]["content"][0]["text"].as_str().unwrap().contains(text));
        c.wait_for_idle(secs(10)).unwrap();
    }
}

#[test]
fn host_uris() {
    let c = start_with(json!({"host_uri_schemes": [{"scheme": "memo", "writable": true}]}));
    c.prompt("prompt", "needs host uri", None, secs(10)).unwrap();
    let req = wait_event(&c, "host_uri_request");
    c.host_uri_result(req["id"].as_str().unwrap(), json!({"content": "# notes", "contentType": "text/markdown"})).unwrap();
    let seen = wait_event(&c, "host_uri_result_seen");
    assert_eq!(seen["frame"]["content"], "# notes");
    c.wait_for_idle(secs(10)).unwrap();
}

#[test]
fn ui_round_trips_and_headless_policy() {
    let c = start(&[]);
    c.prompt("prompt", "needs ui", None, secs(10)).unwrap();
    let req = parse(std::str::from_utf8(&c.next_ui_request(secs(10)).unwrap()).unwrap());
    assert_eq!(req["method"], "input");
    c.ui_send_value(req["id"].as_str().unwrap(), "approved").unwrap();
    c.wait_for_idle(secs(10)).unwrap();
    c.prompt("prompt", "needs confirm", None, secs(10)).unwrap();
    let req = parse(std::str::from_utf8(&c.next_ui_request(secs(10)).unwrap()).unwrap());
    c.ui_send_confirmation(req["id"].as_str().unwrap(), true).unwrap();
    c.wait_for_idle(secs(10)).unwrap();
    assert_eq!(wait_event(&c, "ui_response_seen")["frame"]["value"], "approved");
    assert_eq!(wait_event(&c, "ui_response_seen")["frame"]["confirmed"], true);
    assert_eq!(c.next_ui_request(deadline_after(Some(Duration::ZERO))).unwrap_err().status, Status::Timeout);
    c.set_ui_policy(Some(Default::default()));
    let t = turn(&c, "needs ui");
    assert_eq!(t["assistantText"], "ui acknowledged");
    assert_eq!(wait_event(&c, "ui_response_seen")["frame"]["cancelled"], true);
    // Unknown interactive methods are cancelled too, never left hanging.
    let t = turn(&c, "unknown ui");
    assert_eq!(t["assistantText"], "ui acknowledged");
}

#[test]
fn pi_flavour_starts_without_ready_and_serves_ui_before_the_response() {
    let c = start_with(json!({"command": [FAKE, "--flavor", "pi"], "flavor": "pi"}));
    assert_eq!(parse(&c.info())["flavor"], "pi");
    std::thread::scope(|s| {
        let p = s.spawn(|| c.prompt("prompt", "needs ui", None, secs(10)));
        let req = parse(std::str::from_utf8(&c.next_ui_request(secs(10)).unwrap()).unwrap());
        c.ui_send_value(req["id"].as_str().unwrap(), "ok").unwrap();
        p.join().unwrap().unwrap();
    });
    c.wait_for_idle(secs(10)).unwrap();
}

#[test]
fn protocol_v2_reassembles_and_falls_back() {
    let c = start(&["--v2"]);
    assert_eq!(parse(&c.info())["protocolVersion"], 2);
    let t = turn(&c, "big 2000000");
    assert_eq!(t["assistantText"].as_str().unwrap().len(), 2_000_000);
    turn(&c, "exact MiB");
    let c = start_with(json!({"command": [FAKE, "--v2"], "env": {"OMPRPC_FAKE_V2_FAIL": "1"}}));
    assert_eq!(parse(&c.info())["protocolVersion"], 1);
    assert_eq!(turn(&c, "say hello")["assistantText"], "pong");
}

#[test]
fn single_flight_collectors() {
    let c = start_with(json!({"host_tools": [{"name": "echo_host", "description": "Echo", "parameters": {"type": "object"}}]}));
    std::thread::scope(|s| {
        let t = s.spawn(|| turn(&c, "needs host tool"));
        // The turn cannot end before the host answers its call: the collector is surely running.
        let call = wait_event(&c, "host_tool_call");
        assert_eq!(c.active_operation(), Some("prompt_and_wait"));
        assert_eq!(c.collect_events(secs(1)).unwrap_err().status, Status::Concurrency);
        c.host_tool_result(call["id"].as_str().unwrap(), json!({"content": [{"type": "text", "text": "done"}]}), false).unwrap();
        assert_eq!(event_types(&t.join().unwrap()["events"]).last().unwrap(), "agent_end");
    });
    c.prompt("prompt", "slow", None, secs(10)).unwrap();
    let evs = parse(&c.collect_events(secs(10)).unwrap());
    assert_eq!(event_types(&evs).last().unwrap(), "agent_end");
}

#[test]
fn close_wakes_waiters_fast_and_is_idempotent() {
    // An agent that outlives its stdin's end and SIGTERM: stopping it takes stop_grace_ms, so a
    // waiter woken well before that was woken by the close itself, not by the agent's end.
    let c = start_with(json!({"command": [FAKE, "--scenario", "ignore-term"], "stop_grace_ms": 3000, "kill_grace_ms": 100}));
    std::thread::scope(|s| {
        let t = s.spawn(|| c.prompt_and_wait("hang", None, secs(30)));
        let until = Instant::now() + Duration::from_secs(5);
        while c.active_operation() != Some("prompt_and_wait") && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(50));
        let t0 = Instant::now();
        let closer = s.spawn(|| c.close());
        let err = t.join().unwrap().expect_err("prompt_and_wait must fail when the client closes");
        assert!(t0.elapsed() < Duration::from_millis(1500), "woken after {:?}", t0.elapsed());
        assert_eq!(err.status, Status::Closed);
        closer.join().unwrap().unwrap();
    });
    c.close().unwrap();
    // What was queued before the close is still delivered, then CLOSED.
    let mut polled = c.next_events(1, secs(1));
    while polled.is_ok() {
        polled = c.next_events(1, secs(1));
    }
    assert_eq!(polled.unwrap_err().status, Status::Closed);
}

#[test]
fn startup_failures_are_clear() {
    let e = Client::start(&json!({"command": [FAKE, "--scenario", "broken-startup"]}).to_string()).err().unwrap();
    assert_eq!(e.status, Status::Protocol);
    assert!(e.message.contains("Frame: 'not-json'"), "{}", e.message);
    let e = Client::start(&json!({"command": [FAKE, "--scenario", "exit-early"]}).to_string()).err().unwrap();
    assert_eq!(e.status, Status::ProcessExited);
    assert!(e.message.contains("exited with code 1"), "{}", e.message);
    assert!(e.message.contains("no model configured"), "{}", e.message);
    let e = Client::start(&json!({"command": [FAKE, "--scenario", "silent"], "startup_timeout_ms": 200}).to_string()).err().unwrap();
    assert_eq!(e.status, Status::Timeout);
    let e = Client::start(&json!({"command": ["/nonexistent/agent"]}).to_string()).err().unwrap();
    assert_eq!(e.status, Status::Io);
    let e = Client::start(&json!({"executable": "no-such-agent-xyz"}).to_string()).err().unwrap();
    assert!(e.message.contains("not found"), "{}", e.message);
}

#[test]
fn stderr_is_a_bounded_ring() {
    let c = start_with(json!({"command": [FAKE, "--scenario", "stderr"], "max_stderr_lines": 1}));
    // The ready frame comes after both lines were written and flushed.
    let until = Instant::now() + Duration::from_secs(5);
    while c.stderr() != "second\n" && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(c.stderr(), "second\n");
}

#[test]
fn event_history_limit_fails_the_turn() {
    let c = start_with(json!({"max_event_history": 2}));
    let e = c.prompt_and_wait("say hello", None, secs(10)).unwrap_err();
    assert_eq!(e.status, Status::LimitExceeded);
    assert!(e.message.contains("max_event_history"));
}

#[test]
fn crash_mid_turn_reports_exit_and_stderr() {
    let c = start(&[]);
    let e = c.prompt_and_wait("crash", None, secs(10)).unwrap_err();
    assert_eq!(e.status, Status::ProcessExited);
    assert!(e.message.contains("code 3"), "{}", e.message);
    assert!(e.message.contains("fatal: crashed"), "{}", e.message);
}

#[test]
fn invalid_frames_are_fatal_or_skipped() {
    let c = start(&["--scenario", "invalid-json"]);
    let e = c.next_events(1000, secs(10));
    // The ready event may come first; then the queue closes with the decode error.
    let mut last = e;
    while last.is_ok() {
        last = c.next_events(1000, secs(10));
    }
    assert_eq!(last.unwrap_err().status, Status::Closed);
    let reason = parse(&c.info())["closeReason"].clone();
    assert_eq!(reason["code"], "PROTOCOL");
    assert!(reason["message"].as_str().unwrap().contains("Frame: '{\"type\":\"broken\"'"));
    let c = start_with(json!({"invalid_frames": "skip"}));
    assert_eq!(turn(&c, "garbage")["assistantText"], "pong");
    assert!(c.protocol_errors().contains("this is not json"));
}

#[test]
fn grandchildren_die_with_the_agent() {
    let dir = std::env::temp_dir().join(format!("omprpc-gc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let base = dir.join("gc");
    let c = start_with(json!({
        "command": [FAKE, "--scenario", "grandchild"],
        "env": {"OMPRPC_FAKE_GRANDCHILD": base.to_str().unwrap()},
        "stop_grace_ms": 200,
    }));
    // The fake is ready only once its grandchild has written its pid and first heartbeat.
    let beat = base.with_extension("beat");
    assert!(base.with_extension("pid").exists() && beat.exists(), "grandchild never started");
    c.close().unwrap();
    std::thread::sleep(Duration::from_millis(150));
    let first = std::fs::read_to_string(&beat).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(std::fs::read_to_string(&beat).unwrap(), first, "grandchild kept running");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[cfg(unix)] // signals, /proc and poll(2); Windows: tests/windows_port.rs
fn ignoring_sigterm_still_ends_in_sigkill() {
    let c = start_with(json!({"command": [FAKE, "--scenario", "ignore-term"], "stop_grace_ms": 100, "kill_grace_ms": 100}));
    let pid = parse(&c.info())["pid"].as_i64().unwrap();
    let t0 = Instant::now();
    c.close().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(3));
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists(), "agent still in the process table");
}

#[test]
fn event_queue_overflow_is_reported() {
    let c = start_with(json!({"event_queue_capacity": 4}));
    turn(&c, "say hello");
    let evs = c.next_events(100, secs(5)).unwrap();
    let first: Value = serde_json::from_slice(&evs[0]).unwrap();
    assert_eq!(first["type"], "event_overflow");
    assert!(first["dropped"].as_u64().unwrap() >= 1);
    assert_eq!(evs.len(), 5);
}

#[test]
fn many_threads_share_one_client() {
    let c = start(&[]);
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                for _ in 0..50 {
                    let st = parse(&c.request("get_state", None, secs(10)).unwrap());
                    assert_eq!(st["sessionId"], "fake-session");
                }
            });
        }
    });
}

#[test]
fn duplicate_success_is_recorded_and_the_turn_still_completes() {
    let c = start(&[]);
    assert_eq!(turn(&c, "duplicate response")["assistantText"], "pong");
    let errors = parse(&c.protocol_errors());
    assert_eq!(errors.as_array().unwrap().len(), 1, "{errors}");
    assert!(errors[0]["message"].as_str().unwrap().contains("second response"));
}

#[test]
fn stream_faults_end_in_clear_statuses() {
    // (scenario, expected close status, text the reason must contain)
    let cases = [
        ("half-line", "PROCESS_EXITED", "without a newline"),
        ("stdout-close", "PROCESS_EXITED", "stdout closed before the process exited"),
        ("invalid-utf8", "PROTOCOL", "invalid UTF-8"),
        ("chunk-violation", "PROTOCOL", "RPC chunk"),
    ];
    for (scenario, code, text) in cases {
        // Wine starts the hidden console of an agent spawned by a program without a console
        // window as a process that inherits the agent's pipe ends, so stdout's closing is seen
        // only when the agent exits (docs/windows.md).
        #[cfg(windows)]
        if scenario == "stdout-close" && fake::under_wine() {
            continue;
        }
        let mut argv = vec![FAKE, "--scenario", scenario];
        if scenario == "chunk-violation" {
            argv.push("--v2");
        }
        let t0 = Instant::now();
        let c = start_with(json!({ "command": argv }));
        let mut polled = c.next_events(100, secs(10));
        while polled.is_ok() {
            polled = c.next_events(100, secs(10));
        }
        assert_eq!(polled.unwrap_err().status, Status::Closed, "{scenario}");
        assert!(t0.elapsed() < Duration::from_secs(5), "{scenario} took {:?}", t0.elapsed());
        let reason = parse(&c.info())["closeReason"].clone();
        assert_eq!(reason["code"], code, "{scenario}: {reason}");
        assert!(reason["message"].as_str().unwrap().contains(text), "{scenario}: {reason}");
    }
}

#[test]
fn frames_over_the_configured_maximum_are_refused() {
    let c = start_with(json!({"max_frame_bytes": 4096}));
    let e = c.prompt_and_wait("big 100000", None, secs(10)).unwrap_err();
    assert_eq!(e.status, Status::Protocol);
    assert!(e.message.contains("max_frame_bytes"), "{}", e.message);
}

#[test]
#[cfg(unix)] // signals, /proc and poll(2); Windows: tests/windows_port.rs
fn stopped_agent_is_still_torn_down() {
    let c = start_with(json!({"kill_grace_ms": 200, "stop_grace_ms": 200}));
    let pid = parse(&c.info())["pid"].as_i64().unwrap() as i32;
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    let t0 = Instant::now();
    c.close().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(3));
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
}

#[test]
fn stderr_flood_stays_bounded_and_the_client_works() {
    let c = start_with(json!({"command": [FAKE, "--scenario", "stderr-flood"], "max_stderr_lines": 100}));
    for _ in 0..20 {
        assert_eq!(parse(&c.request("get_state", None, secs(10)).unwrap())["sessionId"], "fake-session");
    }
    assert!(c.stderr().len() <= 100 * 1001 + 64 * 1024);
}

#[test]
#[cfg(unix)] // signals, /proc and poll(2); Windows: tests/windows_port.rs
fn event_fd_is_readable_exactly_while_events_are_queued() {
    let c = start(&[]);
    let fd = c.event_fd();
    let readable = |ms: i32| {
        let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        unsafe { libc::poll(&mut p, 1, ms) == 1 }
    };
    assert!(readable(5000), "the ready event should make the fd readable");
    while c.next_events(1000, deadline_after(Some(Duration::ZERO))).is_ok() {}
    assert!(!readable(0));
    c.request("get_state", None, secs(10)).unwrap();
    assert!(!readable(50), "a response is not an event");
    c.prompt("prompt", "say hello", None, secs(10)).unwrap();
    assert!(readable(5000));
    c.close().unwrap();
    while c.next_events(1000, deadline_after(Some(Duration::ZERO))).is_ok() {}
    assert!(readable(0), "a closed client stays readable so pollers see CLOSED");
}

#[test]
fn pi_has_no_host_tools_and_says_so() {
    let c = start_with(json!({"command": [FAKE, "--flavor", "pi"], "flavor": "pi"}));
    let e = c.set_host_tools(json!([{"name": "t", "description": "d", "parameters": {"type": "object"}}]), secs(10)).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument, "refused before pi is asked: {e}");
    assert!(e.message.contains("registered at start"), "{}", e.message);
    // pi itself has no such command either.
    let e = c.request("set_host_tools", parse_params(Some(r#"{"tools":[]}"#)).unwrap().as_ref(), secs(10)).unwrap_err();
    assert!(e.message.contains("Unknown command"), "{}", e.message);
    assert_eq!(parse(&c.info())["bridgedTools"], json!([]));
}

/// Tools served through the bridge are fixed at start on omp too (`bridge:"always"`): the
/// library says which (info's bridgedTools) and refuses to change them.
#[test]
fn bridged_tools_are_fixed_at_start_on_omp_too() {
    let tool = json!({"name": "echo_host", "description": "d", "parameters": {"type": "object"}});
    let c = start_with(json!({"command": [FAKE], "host_tools": [tool.clone()], "bridge": "always"}));
    assert_eq!(parse(&c.info())["bridgedTools"], json!(["echo_host"]));
    for e in [c.set_host_tools(json!([tool.clone()]), secs(10)), c.add_host_tools(json!([tool.clone()]), secs(10)), c.remove_host_tools(json!(["echo_host"]), secs(10))] {
        let e = e.unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument, "{e}");
        assert!(e.message.contains("registered at start"), "{e}");
    }
    // Without the bridge, omp registers them natively and says none are bridged.
    let c = start_with(json!({"command": [FAKE], "host_tools": [tool]}));
    assert_eq!(parse(&c.info())["bridgedTools"], json!([]));
}

#[test]
fn requests_time_out_and_late_answers_are_recorded() {
    let c = start(&["--scenario", "hanging"]);
    let e = c.prompt("prompt", "hang", None, secs(10));
    assert!(e.is_ok());
    // The hanging agent answers nothing more: a request times out and the client stays usable.
    let e = c.request("get_state", None, deadline_after(Some(Duration::from_millis(100)))).unwrap_err();
    assert_eq!(e.status, Status::Timeout);
    assert!(parse(&c.info())["closed"] == false);
}

#[test]
fn turn_summary_and_idle_timeout() {
    let c = start_with(json!({"turn_summary": true, "model": "configured-model"}));
    let t = turn(&c, "all events");
    let s = &t["summary"];
    assert_eq!(s["complete"], true);
    assert_eq!(s["finalText"], "pong");
    assert_eq!(s["text"], "pong");
    assert_eq!(s["toolCalls"][0]["toolCallId"], "tool-1");
    assert_eq!(s["toolCalls"][0]["outcome"], "success");
    assert_eq!(s["usage"]["inputTokens"], 1);
    assert_eq!(s["usage"]["model"], "claude-sonnet-4-5");
    // No event for 300 ms: a distinct timeout, while the agent is still alive.
    let c = start_with(json!({"turn_idle_timeout_ms": 300}));
    let t0 = Instant::now();
    let e = c.prompt_and_wait("hang", None, secs(10)).unwrap_err();
    assert_eq!(e.status, Status::Timeout);
    assert!(e.message.contains("turn_idle_timeout_ms"), "{}", e.message);
    assert!(t0.elapsed() < Duration::from_secs(3));
    assert_eq!(parse(&c.info())["closed"], false);
}

/// Arguments reach the agent exactly as given. On Windows a process gets one command line,
/// which std quotes by the MSVC rules and the agent's C runtime splits again: spaces, quotes,
/// backslashes before a quote or at the end, empty arguments and non-ASCII text are where the
/// two can disagree. Nothing here may be read by a shell either (`%PATH%`, `$HOME`, `^&|<>`).
#[test]
fn arguments_reach_the_agent_exactly_as_given() {
    let argv_file = std::env::temp_dir().join(format!("omprpc-argvtest-{}.json", std::process::id()));
    let given = [
        "",
        "two words",
        "\"quoted\"",
        "say \"hi\" twice",
        "back\\slash",
        "trailing\\",
        "trailing two\\\\",
        "\\\"escaped\\\"",
        "tab\there",
        "line\nbreak",
        "%PATH%",
        "$HOME",
        "^&|<>()",
        "*?[]",
        "it's",
        "--model=a b",
        "ü ✓ 日本語 🦀",
    ];
    let mut command = vec![FAKE.to_string()];
    command.extend(given.iter().map(|a| a.to_string()));
    let c = start_with(json!({"command": command, "env": {"OMPRPC_FAKE_ARGV_FILE": argv_file.to_str().unwrap()}}));
    let got: Vec<String> = serde_json::from_str(&std::fs::read_to_string(&argv_file).unwrap()).unwrap();
    assert_eq!(got, given, "the agent's arguments differ from those given");
    c.close().unwrap();
    let _ = std::fs::remove_file(&argv_file);
}

#[test]
fn environment_is_deny_by_default_and_system_prompts_can_go_through_files() {
    let dir = std::env::temp_dir().join(format!("omprpc-envtest-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let env_file = dir.join("env.json");
    let argv_file = dir.join("argv.json");
    std::env::set_var("OMPRPC_TEST_SECRET", "hunter2");
    std::env::set_var("OMPRPC_TEST_OPT_IN", "yes");
    let c = start_with(json!({
        "command": [FAKE, "--append-system-prompt", "be terse", "--system-prompt=be kind"],
        "inherit_env": "allowlist",
        "env_passthrough": ["OMPRPC_TEST_OPT_IN"],
        "env": {"OMPRPC_FAKE_ENV_FILE": env_file.to_str().unwrap(), "OMPRPC_FAKE_ARGV_FILE": argv_file.to_str().unwrap()},
        "system_prompt_via_file": true,
    }));
    let env: Value = serde_json::from_str(&std::fs::read_to_string(&env_file).unwrap()).unwrap();
    assert!(env.get("OMPRPC_TEST_SECRET").is_none(), "a name outside the allow-list leaked");
    assert_eq!(env["OMPRPC_TEST_OPT_IN"], "yes");
    assert!(env.get("PATH").is_some());
    let argv: Vec<String> = serde_json::from_str(&std::fs::read_to_string(&argv_file).unwrap()).unwrap();
    let joined = argv.join(" ");
    assert!(!joined.contains("be terse") && !joined.contains("be kind"), "a system prompt reached argv: {joined}");
    let i = argv.iter().position(|a| a == "--append-system-prompt").unwrap();
    assert_eq!(std::fs::read_to_string(&argv[i + 1]).unwrap(), "be terse");
    let kind = argv.iter().find_map(|a| a.strip_prefix("--system-prompt=")).unwrap().to_string();
    assert_eq!(std::fs::read_to_string(&kind).unwrap(), "be kind");
    assert!(!c.info().contains("be terse"));
    c.close().unwrap();
    assert!(!std::path::Path::new(&kind).exists(), "the prompt files are removed at close");
    let _ = std::fs::remove_dir_all(&dir);
    // With inherit_env false nothing of ours passes at all.
    let env_file2 = std::env::temp_dir().join(format!("omprpc-envtest2-{}.json", std::process::id()));
    let c = start_with(json!({"inherit_env": false, "env": {"OMPRPC_FAKE_ENV_FILE": env_file2.to_str().unwrap()}}));
    let env: Value = serde_json::from_str(&std::fs::read_to_string(&env_file2).unwrap()).unwrap();
    // Wine's loader adds its own names and the system directory to every process it starts.
    #[cfg(windows)]
    let wine_adds = |k: &str| fake::under_wine() && (k.starts_with("WINE") || k == "SystemDrive" || k == "SystemRoot");
    #[cfg(unix)]
    let wine_adds = |_: &str| false;
    assert_eq!(env.as_object().unwrap().keys().filter(|k| !wine_adds(k)).collect::<Vec<_>>(), ["OMPRPC_FAKE_ENV_FILE"]);
    c.close().unwrap();
    // Unset, it is the allow-list with the provider keys pi and omp read: what a README's
    // `{model}` start needs on a user's machine, and still no unlisted secret.
    std::env::set_var("OPENROUTER_API_KEY", "sk-or-envtest");
    let c = start_with(json!({"env": {"OMPRPC_FAKE_ENV_FILE": env_file2.to_str().unwrap()}}));
    let env: Value = serde_json::from_str(&std::fs::read_to_string(&env_file2).unwrap()).unwrap();
    assert_eq!(env["OPENROUTER_API_KEY"], "sk-or-envtest");
    assert_eq!(env["PATH"].as_str(), std::env::var("PATH").ok().as_deref());
    assert!(env.get("OMPRPC_TEST_SECRET").is_none() && env.get("OMPRPC_TEST_OPT_IN").is_none(), "an unlisted name passed: {env}");
    c.close().unwrap();
    let _ = std::fs::remove_file(&env_file2);
}

#[test]
fn prompts_take_content_blocks() {
    let c = start(&[]);
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
    let uri = format!("data:image/png;base64,{}", omprpc::base64::encode(png));
    let opts = parse_params(Some(&json!({"content": [{"type": "text", "text": "and this"}, {"type": "image", "data_uri": uri}]}).to_string())).unwrap();
    let t: Value = parse(&c.prompt_and_wait("look", opts, secs(10)).unwrap());
    assert_eq!(t["assistantText"], "pong");
    let bad = parse_params(Some(r#"{"content": [{"type": "audio"}]}"#)).unwrap();
    let e = c.prompt("prompt", "x", bad, secs(10)).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    assert!(e.message.contains("audio"));
}

#[test]
fn turns_can_keep_fewer_events_and_are_bounded_in_bytes() {
    let c = start_with(json!({"turn_events": "no_updates"}));
    let t = turn(&c, "say hello");
    assert!(event_types(&t["events"]).iter().all(|ty| ty != "message_update"));
    assert_eq!(t["assistantText"], "pong");
    let c = start_with(json!({"turn_events": "none"}));
    let t = turn(&c, "compacted");
    assert_eq!(t["events"].as_array().unwrap().len(), 0);
    assert_eq!(t["messages"].as_array().unwrap().len(), 2, "compaction still rebuilt from message_end");
    let c = start_with(json!({"max_turn_bytes": 10000, "max_event_history": null}));
    let e = c.prompt_and_wait("burst 1000", None, secs(10)).unwrap_err();
    assert_eq!(e.status, Status::LimitExceeded);
    assert!(e.message.contains("max_turn_bytes"));
}

/// A call that waited for a prompt's completion returns after that completion's `prompt_complete`
/// event was queued: a host that drains the queue right after the call finds it (before the
/// fix, about half of these calls returned first).
#[test]
fn the_prompt_complete_event_is_queued_before_the_waiting_call_returns() {
    let c = start_with(json!({"command": [FAKE, "--flavor", "pi"], "flavor": "pi", "prompt_complete_events": true}));
    let queued_now = |c: &Client, id: &str| -> bool {
        let evs = c.next_events(4096, Some(Instant::now())).unwrap_or_default();
        evs.iter().map(|e| serde_json::from_slice::<Value>(e).unwrap()).any(|v| v["type"] == "prompt_complete" && v["requestId"] == id)
    };
    for i in 0..40 {
        let t = parse(&c.prompt_and_wait("say hello", None, secs(10)).unwrap());
        assert!(queued_now(&c, t["requestId"].as_str().unwrap()), "round {i}: prompt_and_wait returned before its prompt_complete event was queued");
        let id = c.prompt("prompt", "say hello", None, secs(10)).unwrap();
        c.wait_for_idle(secs(10)).unwrap();
        assert!(queued_now(&c, &id), "round {i}: wait_for_idle returned before the prompt_complete event was queued");
    }
    c.close().unwrap();
}

/// With `prompt_complete_events`, every tracked prompt's completion is an event after the frame
/// that completed it: what a host streaming events waits for (examples/demo.c).
#[test]
fn prompt_complete_events_say_when_each_prompt_is_done() {
    let c = start_with(json!({"command": [FAKE], "prompt_complete_events": true}));
    let until_complete = |c: &Client, id: &str| -> (Vec<String>, Value) {
        let mut seen = Vec::new();
        loop {
            let evs = c.next_events(64, secs(10)).unwrap_or_else(|e| panic!("waiting for {id}'s prompt_complete: {e}"));
            for ev in evs {
                let v: Value = serde_json::from_slice(&ev).unwrap();
                if v["type"] == "prompt_complete" && v["requestId"] == id {
                    return (seen, v);
                }
                seen.push(v["type"].as_str().unwrap_or_default().to_string());
            }
        }
    };
    let id = c.prompt("prompt", "say hello", None, secs(10)).unwrap();
    let (before, done) = until_complete(&c, &id);
    assert_eq!(before.last().map(String::as_str), Some("agent_end"), "{before:?}");
    assert_eq!((done["outcome"].as_str(), done["agentInvoked"].as_bool(), done["omprpc"].as_bool()), (Some("agent_end"), Some(true), Some(true)));
    let id = c.prompt("prompt", "local", None, secs(10)).unwrap();
    assert_eq!(until_complete(&c, &id).1["outcome"], "not_invoked");
    let id = c.prompt("prompt", "prompt result", None, secs(10)).unwrap();
    let (before, done) = until_complete(&c, &id);
    assert_eq!((done["outcome"].as_str(), before.last().map(String::as_str)), (Some("prompt_result"), Some("prompt_result")));
    let id = c.prompt("prompt", "late failure", None, secs(10)).unwrap();
    let done = until_complete(&c, &id).1;
    assert_eq!((done["outcome"].as_str(), done["error"]["command"].as_str()), (Some("failed"), Some("prompt")), "{done}");
    c.close().unwrap();

    // pi runs an extension's /command inside the prompt's preflight and starts no run: only an
    // activity probe can tell, and nobody waits here — the library's own watcher asks.
    let c = start_with(json!({"command": [FAKE, "--flavor", "pi"], "flavor": "pi", "prompt_complete_events": true}));
    let id = c.prompt("prompt", "/noop", None, secs(10)).unwrap();
    let (_, done) = until_complete(&c, &id);
    assert_eq!((done["outcome"].as_str(), done["agentInvoked"].as_bool()), (Some("not_invoked"), Some(false)), "{done}");
    let counters: Value = serde_json::from_str(&c.counters()).unwrap();
    assert!(counters["activity_probes"].as_u64() >= Some(2), "an idle answer stands when a second agrees: {counters}");
    let id = c.prompt("prompt", "say hello", None, secs(10)).unwrap();
    assert_eq!(until_complete(&c, &id).1["outcome"], "agent_end");
    c.close().unwrap();

    // Off by default: the stream holds only the agent's frames (and the library's reports).
    let c = start(&[]);
    c.prompt_and_wait("say hello", None, secs(10)).unwrap();
    let evs = c.next_events(4096, deadline_after(Some(Duration::from_millis(100)))).unwrap();
    assert!(evs.iter().all(|e| !String::from_utf8_lossy(e).contains("prompt_complete")));
}
