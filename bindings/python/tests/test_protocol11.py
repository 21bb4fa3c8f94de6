"""The omp_rpc surface of omp protocol 1.1 ("omp-rpc" 1.1.0, the omp fork omp_rpc is written
for), against the fake agent's ``--protocol 1.1`` (tests/support/OMP11-NOTES.md): typed errors,
operations, session entries, incremental registration, the ready frame's description."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from conftest import MakeClient
from omprpc import (
    ExtensionUiRequest,
    HostToolContext,
    HostUriContext,
    RpcClient,
    RpcCommandError,
    RpcProtocolError,
    RpcTimeoutError,
    host_tool,
    host_uri,
)

P11 = ("--protocol", "1.1")


def echo_tool(calls: list[dict[str, Any]], name: str = "echo_host") -> Any:
    def run(args: dict[str, Any], _ctx: HostToolContext[Any]) -> str:
        calls.append(dict(args))
        return f"echoed {args.get('message')}"

    return host_tool(name=name, description="Echo", parameters={"type": "object"}, execute=run)


def test_ready_event_carries_the_protocol_description(make_client: MakeClient) -> None:
    client = make_client(start=False, extra=P11)
    readies: list[Any] = []
    client.on_ready(readies.append)
    client.start()
    client.get_state()  # the ready event has been dispatched by now
    assert readies and readies[0].protocol == {"name": "omp-rpc", "version": "1.1.0", "schemaVersion": 1}
    info = client.get_protocol_info()
    assert info["protocol"] == readies[0].protocol
    assert "get_session_tree" in info["capabilities"]["commands"]
    # The event is a copy: changing it changes nothing the client holds.
    readies[0].protocol["name"] = "changed"
    assert client.get_protocol_info(timeout=5)["protocol"]["name"] == "omp-rpc"


def test_typed_errors_carry_error_info(make_client: MakeClient) -> None:
    client = make_client(extra=P11)
    with pytest.raises(RpcCommandError) as caught:
        client.cancel_operation("op_gone")
    err = caught.value
    assert (err.command, err.error, err.code) == ("cancel_operation", "Operation not found: op_gone",
                                                   "operation_not_found")
    assert err.error_info == {"code": "operation_not_found", "message": "Operation not found: op_gone",
                              "retryable": False}
    assert (err.details, err.retryable) == (None, False)
    with pytest.raises(RpcCommandError) as caught:
        client.add_host_uris([host_uri(scheme="omp", read=lambda url, ctx: "")])
    assert (caught.value.code, caught.value.details) == ("host_uri_denied", {"scheme": "omp"})
    with pytest.raises(RpcCommandError) as caught:
        client.request_raw("no_such_command")
    assert caught.value.code == "unknown_command"
    # omp_rpc's constructor: (command, error, error_info).
    made = RpcCommandError("x", "y", {"code": "c", "details": {"a": 1}, "retryable": True})
    assert (made.code, made.details, made.retryable, str(made)) == ("c", {"a": 1}, True, "x: y")
    assert RpcCommandError("x", "y").error_info is None
    assert RpcProtocolError({"type": "response", "errorInfo": {"code": "z"}}).code == "z"


def test_operations_return_their_end(make_client: MakeClient) -> None:
    client = make_client(extra=P11)
    result = client.bash("echo hi")
    assert (result.output, result.exit_code) == ("echo hi\n", 0)
    assert client.compact().summary == "trimmed"
    ui: list[ExtensionUiRequest] = []
    client.on_ui_request(ui.append)
    assert client.login("anthropic") == {"providerId": "anthropic"}
    assert [r.method for r in ui] == ["open_url"] and ui[0].url == "https://example.invalid/oauth"
    with pytest.raises(RpcCommandError) as caught:
        client.login("nobody")
    assert (caught.value.command, caught.value.code, caught.value.details) == (
        "login", "invalid_arguments", {"providerId": "nobody"})
    providers = client.get_login_providers()
    assert [p["id"] for p in providers] == ["anthropic", "github-copilot"]


def test_cancel_operation_ends_a_running_operation(make_client: MakeClient) -> None:
    client = make_client(extra=P11)
    starts: list[dict[str, Any]] = []
    started = threading.Event()

    def seen(payload: dict[str, Any]) -> None:
        if payload.get("type") == "operation_start":
            starts.append(payload)
            started.set()

    client.on_event_payload(seen)
    failure: list[BaseException] = []

    def run() -> None:
        try:
            client.request_raw("bash", command="hang")
        except BaseException as exc:  # noqa: BLE001 - checked below
            failure.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    assert started.wait(10)
    op = starts[0]["operationId"]
    assert client.cancel_operation(op) == {"operationId": op}
    worker.join(10)
    assert not worker.is_alive()
    assert isinstance(failure[0], RpcCommandError) and failure[0].code == "operation_cancelled"
    # A timeout that passes while the operation runs.
    with pytest.raises(RpcTimeoutError):
        client.bash("hang", timeout=0.3)
    client.abort_bash()


def test_every_typed_command_takes_a_timeout(make_client: MakeClient) -> None:
    client = make_client(extra=P11)
    t0 = time.monotonic()
    assert client.get_state(timeout=5).session_id == "fake-session"
    client.set_session_name("n", timeout=None)
    assert client.follow_up("later", timeout=5) == {}
    assert time.monotonic() - t0 < 5


def test_session_entries_tree_and_observable_sessions(make_client: MakeClient) -> None:
    client = make_client(extra=P11)
    client.prompt_and_wait("hello", timeout=10)
    page = client.get_session_entries(limit=1, entry_types=["message"], include_content=False)
    assert page["limit"] == 1 and page["entries"][0]["type"] == "message" and "entry" not in page["entries"][0]
    everything = client.get_session_entries()
    assert [e["type"] for e in everything["entries"][:2]] == ["model_change", "thinking_level_change"]
    tree = client.get_session_tree(include_entries=True)
    assert tree["root"][0]["entry"]["type"] == "model_change"
    assert tree["currentLeafId"] == everything["currentLeafId"]
    assert [s["id"] for s in client.get_observable_sessions()] == ["main"]
    response = client.get_messages_response()
    assert isinstance(response["messages"], list)


def test_host_tools_and_uris_are_registered_incrementally(make_client: MakeClient) -> None:
    calls: list[dict[str, Any]] = []
    client = make_client(extra=P11)
    assert client.add_custom_tools([echo_tool(calls)]) == ("echo_host",)
    assert client.add_custom_tools([echo_tool(calls, "other_host")]) == ("echo_host", "other_host")
    turn = client.prompt_and_wait("needs host tool", timeout=10)
    assert calls == [{"message": "hello"}]
    assert any(p.get("type") == "tool_execution_end" for p in turn.event_payloads)
    assert client.remove_custom_tools(["echo_host"]) == ("other_host",)
    client.prompt_and_wait("needs host tool", timeout=10)
    assert len(calls) == 1, "a removed tool's handler is not called"
    assert any("is not registered" in str(e) for e in client.protocol_errors)

    ranges: list[Any] = []

    def read(url: str, ctx: HostUriContext) -> str:
        ranges.append(ctx.range)
        return "content"

    docs = host_uri(scheme="docs", read=read, trust_class="workspace", range=True, content_types=["text/plain"],
                    max_content_bytes=4096)
    assert docs.to_wire() == {"scheme": "docs", "writable": False, "immutable": False, "trustClass": "workspace",
                              "maxContentBytes": 4096, "contentTypes": ["text/plain"], "range": True}
    assert client.add_host_uris([docs]) == ("docs",)
    assert client.add_host_uris([host_uri(scheme="memo", read=read, range=True)]) == ("docs", "memo")
    # A ranged read: the handler's context has the request's range.
    client.prompt_and_wait("needs host uri", timeout=10)
    assert ranges == [{"start": 0, "end": 99, "unit": "byte"}]
    with pytest.raises(RpcCommandError):
        client.add_host_uris([host_uri(scheme="omp", read=read)])
    assert client.remove_host_uris(["docs"]) == ("memo",)


def test_incremental_registration_on_agents_without_it(make_client: MakeClient) -> None:
    calls: list[dict[str, Any]] = []
    # omp without protocol 1.1: the agent refuses, the handler is not kept.
    client = make_client()
    with pytest.raises(RpcCommandError):
        client.add_custom_tools([echo_tool(calls)])
    client.prompt_and_wait("needs host tool", timeout=10)
    assert calls == []
    # Before start(): stored, sent with the start.
    later = make_client(start=False, extra=P11)
    assert later.add_custom_tools([echo_tool(calls)]) == ("echo_host",)
    assert later.remove_custom_tools(["echo_host"]) == ()
    assert later.add_custom_tools([echo_tool(calls, "kept")]) == ("kept",)
    later.start()
    assert [t["name"] for t in later.get_state().raw["dumpTools"] if t["name"] == "kept"] == ["kept"]


def test_pi_and_omp_commands_have_typed_methods(make_client: MakeClient) -> None:
    """Commands outside omp_rpc: pi's (its RpcClient, 0.73.1) and omp's own, each refused by the
    other agent as the real ones refuse them ("Unknown command"). get_commands,
    get_available_commands and the subagent commands are generated: the data as sent."""
    pi = make_client(flavor="pi")
    assert pi.get_fork_messages()[0].text == "say hello"
    assert pi.fork("5681c403", timeout=5).text == "say hello"
    assert pi.clone().cancelled is False
    assert [c["name"] for c in pi.get_commands()["commands"]] == ["quiet"]
    with pytest.raises(RpcCommandError, match="Unknown command: get_subagents"):
        pi.get_subagents()
    omp = make_client()
    assert omp.set_subagent_subscription("progress") == {"level": "progress"}
    assert omp.get_subagents() == {"subagents": []}
    with pytest.raises(RpcCommandError, match="Unknown subagent"):
        omp.get_subagent_messages(subagent_id="nope")
    assert omp.get_available_commands() == {"commands": []}
    assert omp.handoff() is None
    with pytest.raises(RpcCommandError):
        omp.get_commands()
    p11 = make_client(extra=P11)
    assert p11.handoff() == {"savedPath": "/tmp/fake-handoff.md"}
    assert p11.ping({"n": 1}) == {"pong": True, "payload": {"n": 1}}


def test_on_frame_sees_every_frame_in_order(make_client: MakeClient) -> None:
    client = make_client(start=False, extra=P11)
    frames: list[dict[str, Any]] = []
    client.on_frame(frames.append)
    seen_by_payload: list[str] = []
    client.on_event_payload(lambda p: seen_by_payload.append(str(p.get("type"))))
    client.start()
    result = client.bash("echo hi")
    # The response and the operation's frames were seen before bash() returned.
    types = [f.get("type") for f in frames]
    assert types[0] == "ready"
    i = types.index("operation_start")
    assert types[i:i + 3] == ["operation_start", "response", "operation_end"], types
    assert frames[i + 1]["data"]["ack"] == "accepted" and result.output == "echo hi\n"
    assert all(isinstance(f.get("seq"), int) for f in frames), "frames as the agent sent them"
    assert "response" not in seen_by_payload, "responses reach on_frame only"
    unsubscribe = client.on_frame(lambda f: None)
    unsubscribe()
    count = len(frames)
    client.get_state()
    assert len(frames) == count + 1 and frames[-1]["command"] == "get_state"


def test_responses_are_tapped_only_while_a_frame_listener_listens(make_client: MakeClient) -> None:
    # Untapped, a response never reaches the event queue (it would wake the dispatcher for
    # every call); a listener added after start sees the next response; removing it stops it.
    client = make_client(extra=P11)
    queued = client.counters()["events_queued"]
    client.get_state()
    assert client.counters()["events_queued"] == queued
    frames: list[dict[str, Any]] = []
    unsubscribe = client.on_frame(frames.append)
    client.get_state()
    assert [f.get("type") for f in frames] == ["response"] and frames[0]["command"] == "get_state"
    unsubscribe()
    queued = client.counters()["events_queued"]
    client.get_state()
    assert client.counters()["events_queued"] == queued and len(frames) == 1


def test_host_tool_metadata_is_sent(make_client: MakeClient) -> None:
    tool = host_tool(name="meta", description="With metadata", parameters={"type": "object"}, execute=lambda a, c: "",
                     side_effect_class="read-only", trust_class="host", display={"icon": "x"},
                     input_size_hint_bytes=10, output_size_hint_bytes=20, default_timeout_ms=3000,
                     max_result_bytes=4096, max_update_bytes=1024, load_mode="essential")
    assert tool.to_wire() == {"name": "meta", "description": "With metadata", "parameters": {"type": "object"},
                              "hidden": False, "sideEffectClass": "read-only", "trustClass": "host",
                              "display": {"icon": "x"}, "inputSizeHintBytes": 10, "outputSizeHintBytes": 20,
                              "defaultTimeoutMs": 3000, "maxResultBytes": 4096, "maxUpdateBytes": 1024,
                              "loadMode": "essential"}
    client = make_client(extra=P11)
    client.add_custom_tools([tool])
    sent = [t for t in client.get_state().raw["dumpTools"] if t["name"] == "meta"]
    assert sent and sent[0]["sideEffectClass"] == "read-only" and sent[0]["maxUpdateBytes"] == 1024


def test_the_agents_protocol_errors_reach_on_protocol_error(make_client: MakeClient) -> None:
    client = make_client(extra=P11)
    seen: list[RpcProtocolError] = []
    unknown: list[Any] = []
    client.on_protocol_error(seen.append)
    client.on_unknown_notification(unknown.append)
    client.send_frame({"type": "no_such_frame"})
    client.get_state()
    deadline = time.monotonic() + 10
    while not seen and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(seen) == 1 and seen[0].code == "unknown_command", seen
    assert seen[0].error_info is not None and seen[0].error_info["message"] == "Unknown command: no_such_frame"
    assert client.protocol_errors[-1].code == "unknown_command"
    assert unknown == [], "the agent's protocol_error is not an unknown notification"


def test_an_extension_ui_request_keeps_its_response_schema() -> None:
    """omp 1.1 says what answer a UI request expects (`responseSchema`)."""
    from omprpc import parse_notification

    ui = parse_notification({"type": "extension_ui_request", "id": "ui_1", "method": "confirm", "expectsResponse": True,
                             "timeout": 30000, "responseSchema": {"kind": "boolean"}, "title": "Continue?"})
    assert isinstance(ui, ExtensionUiRequest) and ui.requires_response()
    assert ui.response_schema == {"kind": "boolean"}
    plain = parse_notification({"type": "extension_ui_request", "id": "ui_2", "method": "input"})
    assert isinstance(plain, ExtensionUiRequest) and plain.response_schema is None


#: An omp 1.1-style server for queued follow-ups (tests/support/OMP11-NOTES.md, Operations):
#: prompt and follow_up are operations (`operation_start`, then the response
#: `{ack:"accepted", operationId, queued:false}`), each run as its own run after the previous
#: one. argv[1] "no-end": no `operation_end` follows a run; "end-late": the follow-up is taken
#: into the prompt's run and its `operation_end` comes 0.2 s after that run's `agent_end`.
QUEUED_OPERATION_SERVER = r'''
import json, sys, threading, time
mode = sys.argv[1]
lock = threading.Lock()
runs = []  # the runs to make, in order: (operation id, delay before it)
def send(frame):
    with lock:
        print(json.dumps(frame), flush=True)
def runner():
    while True:
        while not runs:
            time.sleep(0.005)
        op, delay = runs.pop(0)
        time.sleep(delay)
        send({"type": "agent_start"})
        if mode == "end-late" and op == "op_1":
            while not runs:
                time.sleep(0.005)  # the follow-up joins this run
            runs.pop(0)
        send({"type": "agent_end", "messages": []})
        if mode == "end-late":
            time.sleep(0.2)
            send({"type": "operation_end", "operationId": "op_2", "command": "follow_up", "status": "completed"})
threading.Thread(target=runner, daemon=True).start()
send({"type": "ready"})
count = 0
for line in sys.stdin:
    command = json.loads(line)
    kind, rid = command["type"], command.get("id")
    if kind in ("prompt", "follow_up"):
        count += 1
        op = f"op_{count}"
        send({"type": "operation_start", "operationId": op, "command": kind, "requestId": rid})
        send({"id": rid, "type": "response", "command": kind, "success": True,
              "data": {"ack": "accepted", "operationId": op, "queued": False}})
        runs.append((op, 0.05 if kind == "prompt" else 0.2))
    else:
        send({"id": rid, "type": "response", "command": kind, "success": True})
'''


@pytest.mark.parametrize("mode", ["no-end", "end-late"])
def test_wait_for_idle_waits_for_a_follow_up_acknowledged_as_an_operation(mode: str) -> None:
    """The agent is busy until the follow-up has run: its own run ended (no operation_end), or
    its operation_end came (taken into the prompt's run)."""
    import sys

    seen: list[str] = []
    client = RpcClient(command=[sys.executable, "-c", QUEUED_OPERATION_SERVER, mode], startup_timeout=10.0,
                       request_timeout=10.0)
    client.on_frame(lambda f: seen.append(str(f.get("type"))) if f.get("type") != "response" else None)
    with client:
        client.prompt("first")
        assert client.follow_up("second") == {"ack": "accepted", "operationId": "op_2", "queued": False}
        client.wait_for_idle(timeout=20.0)
        if mode == "no-end":
            assert seen.count("agent_end") == 2, seen
        else:
            assert seen.count("agent_end") == 1 and seen[-1] == "operation_end", seen
        assert client.prompt_and_wait("third", timeout=20.0).outcome == "agent_end"
