"""Listeners, the dispatcher, UI requests, host tools and host URIs against the fake agent."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from omprpc import (
    EventOverflow,
    ExtensionUiRequest,
    HostToolContext,
    ReadyEvent,
    RpcError,
    RpcProcessExitError,
    RpcTimeoutError,
    ToolExecutionEndEvent,
    ToolExecutionUpdateEvent,
    UnknownNotification,
    host_tool,
    host_uri,
)

ECHO_SCHEMA = {
    "type": "object",
    "properties": {"message": {"type": "string"}},
    "required": ["message"],
    "additionalProperties": False,
}


def _echo_tool(execute: Any, **kwargs: Any):
    return host_tool(name="echo_host", description="Echo from Python", parameters=ECHO_SCHEMA, execute=execute,
                     **kwargs)


# --- listeners ----------------------------------------------------------------------------------


def test_ready_and_typed_listeners_in_order(make_client) -> None:
    client = make_client(start=False)
    ready: list[ReadyEvent] = []
    typed: list[str] = []
    notes: list[str] = []
    events: list[str] = []
    client.on_ready(ready.append)
    client.on_notification(lambda n: notes.append(n.type))
    client.on_event(lambda e: events.append(e.type))
    client.on_turn_start(lambda e: typed.append(e.type))
    client.on_message_update(lambda e: typed.append(e.type))
    client.on_agent_end(lambda e: typed.append(e.type))
    client.start()
    assert [r.type for r in ready] == ["ready"]  # start() returns after the listeners saw it
    client.prompt_and_wait("say hello", timeout=10)
    client.stop()
    assert [r.type for r in ready] == ["ready"]
    assert typed == ["turn_start", "message_update", "agent_end"]
    assert notes[0] == "ready" and notes[-1] == "agent_end"
    assert events == ["agent_start", "turn_start", "message_start", "message_update", "message_end", "turn_end",
                      "agent_end"]


def test_every_typed_listener_fires(make_client) -> None:
    client = make_client()
    seen: list[str] = []
    kinds = ["agent_start", "agent_end", "turn_start", "turn_end", "message_start", "message_update",
             "message_end", "tool_execution_start", "tool_execution_update", "tool_execution_end",
             "auto_compaction_start", "auto_compaction_end", "auto_retry_start", "auto_retry_end",
             "retry_fallback_applied", "retry_fallback_succeeded", "ttsr_triggered", "todo_reminder",
             "todo_auto_clear"]
    for kind in kinds:
        getattr(client, f"on_{kind}")(lambda e: seen.append(e.type))
    turn = client.prompt_and_wait("all events", timeout=10)
    assert sorted(set(seen)) == sorted(kinds)
    reminder = next(e for e in turn.events if e.type == "todo_reminder")
    assert reminder.todos[0].content == "Map tools"
    compaction = next(e for e in turn.events if e.type == "auto_compaction_end")
    assert compaction.result is not None and compaction.result.tokens_before == 123
    fallback = next(e for e in turn.events if e.type == "retry_fallback_applied")
    assert (fallback.from_model, fallback.to_model) == ("a", "b")


def test_listeners_have_seen_the_turn_when_prompt_and_wait_returns(make_client) -> None:
    client = make_client()
    ends: list[str] = []

    def slow(event: Any) -> None:
        time.sleep(0.05)
        ends.append(event.type)

    client.on_turn_start(slow)
    client.on_agent_end(slow)
    client.prompt_and_wait("say hello", timeout=10)
    assert ends == ["turn_start", "agent_end"]
    client.prompt("say hello")
    client.wait_for_idle(timeout=10)
    assert ends[-1] == "agent_end"


def test_listeners_have_seen_everything_before_a_crash_when_the_call_raises(make_client) -> None:
    # A crashing agent: agent_start, one message_update, exit. prompt_and_wait raises, and by
    # then every listener has run for both events — every time, not most times. (The listeners
    # are added just after start: also a race with the dispatcher's first batch.)
    for i in range(100):
        client = make_client()
        typed: list[str] = []
        raw: list[str] = []

        def busy(event: Any) -> None:
            sum(range(2000))  # a listener that takes a little time
            typed.append(event.type)

        client.on_event(busy)  # (the ready frame may still be queued: it is not an agent event)
        client.on_event_payload(lambda p: p.get("type") != "ready" and raw.append(p.get("type")))
        with pytest.raises(RpcProcessExitError, match="crashed"):
            client.prompt_and_wait("crash", timeout=10)
        assert typed == ["agent_start", "message_update"], f"iteration {i}: {typed}"
        assert raw == ["agent_start", "message_update"], f"iteration {i}: {raw}"
        client.stop()


def test_listeners_have_seen_everything_before_a_request_returns_or_raises(make_client) -> None:
    # prompt() returns at the agent's response; the turn follows it on stdout, before the
    # answers to the later requests: when those return (or raise), the listeners saw the turn.
    client = make_client()
    seen: list[str] = []

    def slow(event: Any) -> None:
        sum(range(20000))
        seen.append(event.type)

    client.on_event(slow)
    for i in range(20):
        del seen[:]
        client.prompt("say hello")
        client.get_state()
        assert seen[-1:] == ["agent_end"] and len(seen) == 7, f"iteration {i}: {seen}"
        del seen[:]
        client.prompt("say hello")
        with pytest.raises(RpcError):
            client.request_raw("no_such_command")
        assert seen[-1:] == ["agent_end"] and len(seen) == 7, f"iteration {i}: {seen}"


def test_unsubscribe_is_idempotent_and_exact(make_client) -> None:
    client = make_client()
    seen: list[str] = []

    def listener(event: Any) -> None:
        seen.append(event.type)

    first = client.on_turn_start(listener)
    second = client.on_turn_start(listener)  # the same function twice
    first()
    first()
    client.prompt_and_wait("say hello", timeout=10)
    assert seen == ["turn_start"]  # the second registration is still there
    second()
    client.prompt_and_wait("say hello", timeout=10)
    assert seen == ["turn_start"]


def test_listener_errors_are_recorded_and_do_not_stop_the_client(make_client) -> None:
    client = make_client(start=False)
    recorded: list[tuple[str, str | None, str]] = []

    def boom(n: Any) -> None:
        if n.type == "turn_start":
            raise RuntimeError("boom")

    client.on_notification(boom)
    client.on_listener_error(lambda e: recorded.append((e.listener_kind, e.source_type, str(e.error))))
    client.on_listener_error(lambda e: 1 / 0)  # errors of error listeners are swallowed
    client.start()
    assert client.prompt_and_wait("say hello", timeout=10).assistant_text == "pong"
    client.stop()
    assert recorded == [("notification", "turn_start", "boom")]
    assert len(client.listener_errors) == 1 and client.listener_errors[0].listener is boom


def test_listener_mutation_does_not_change_the_turn(make_client) -> None:
    client = make_client()
    client.on_message_end(lambda e: e.message["content"].__setitem__(0, {"type": "text", "text": "mutated"}))
    turn = client.prompt_and_wait("say hello", timeout=10)
    assert turn.require_assistant_text() == "pong"
    assert client.get_messages()[0]["content"][0]["text"] == "pong"


def test_extension_error_and_unknown_notifications(make_client) -> None:
    client = make_client()
    errors: list[str] = []
    unknown: list[UnknownNotification] = []
    client.on_extension_error(lambda e: errors.append(e.error))
    client.on_unknown_notification(unknown.append)
    client.prompt_and_wait("notifications", timeout=10)
    assert errors == ["boom"]
    assert [u.payload["type"] for u in unknown] == ["unknown_future_event"]
    assert unknown[0].parse_error is None


def test_a_slow_listener_does_not_stall_the_agent(make_client) -> None:
    # The core queue decouples: prompt_and_wait completes even though the listener lags.
    client = make_client(listener_sync_timeout=0)
    gate = threading.Event()
    client.on_message_update(lambda e: gate.wait(10))
    t0 = time.monotonic()
    turn = client.prompt_and_wait("burst 500", timeout=20)
    assert time.monotonic() - t0 < 5
    assert turn.assistant_text == "pong"
    gate.set()


def test_event_overflow_is_reported(make_client) -> None:
    client = make_client(start=False, listener_sync_timeout=0, core_options={"event_queue_capacity": 16})
    gate = threading.Event()
    overflows: list[EventOverflow] = []
    notes: list[str] = []
    client.on_event_overflow(overflows.append)
    client.on_notification(lambda n: notes.append(n.type))
    client.on_ready(lambda e: gate.wait(10))  # the dispatcher is stuck before the burst
    client.start()
    turn = client.prompt_and_wait("burst 400", timeout=20)
    assert len(turn.event_payloads) == 406  # the turn itself is complete
    gate.set()
    client.stop()
    assert overflows and sum(o.dropped for o in overflows) > 0
    assert "event_overflow" in notes and notes[-1] == "agent_end"


def test_protocol_errors_reach_listeners(make_client) -> None:
    client = make_client()
    seen: list[str] = []
    client.on_protocol_error(lambda e: seen.append(str(e)))
    client.prompt_and_wait("duplicate response", timeout=10)
    client.stop()
    assert len(seen) == 1 and "second response" in seen[0]
    assert client.protocol_errors[0].command == "prompt"


# --- UI requests -----------------------------------------------------------------------------------


def test_ui_value_round_trip(make_client) -> None:
    client = make_client()
    client.prompt("needs ui")
    request = client.next_ui_request(timeout=5)
    assert isinstance(request, ExtensionUiRequest)
    assert (request.method, request.title, request.placeholder) == ("input", "Need input", "value")
    assert request.is_interactive() and request.accepts_text() and request.requires_response()
    client.send_ui_value(request.id, "approved")
    client.wait_for_idle(timeout=5)


def test_ui_confirmation_and_cancel(make_client) -> None:
    client = make_client()
    seen: list[dict] = []
    client.on_unknown_notification(lambda n: seen.append(n.payload))
    client.prompt("needs confirm")
    request = client.next_ui_request(timeout=5)
    assert request.method == "confirm" and request.message == "Continue?"
    client.send_ui_confirmation(request.id, True)
    client.wait_for_idle(timeout=5)
    client.prompt("needs cancel")
    request = client.next_ui_request(timeout=5)
    assert request.method == "editor"
    client.cancel_ui_request(request.id, timed_out=True)
    client.wait_for_idle(timeout=5)
    client.stop()
    answers = [p["frame"] for p in seen if p.get("type") == "ui_response_seen"]
    assert answers == [
        {"type": "extension_ui_response", "id": "ui-2", "confirmed": True},
        {"type": "extension_ui_response", "id": "ui-3", "cancelled": True, "timedOut": True},
    ]


def test_passive_ui_requests_reach_listeners_only(make_client) -> None:
    client = make_client()
    methods: list[str] = []
    client.on_ui_request(lambda r: methods.append(r.method))
    client.prompt_and_wait("passive ui", timeout=10)
    assert methods == ["notify", "setStatus", "setWidget", "open_url"]
    with pytest.raises(RpcTimeoutError, match="extension UI request"):
        client.next_ui_request(timeout=0.1)


def test_unknown_ui_method_is_delivered_and_answerable(make_client) -> None:
    client = make_client()
    client.prompt("unknown ui")
    request = client.next_ui_request(timeout=5)
    assert request.method == "ask" and request.requires_response() and not request.is_interactive()
    client.cancel_ui_request(request.id)
    client.wait_for_idle(timeout=5)


def test_dismissed_ui_request_is_not_returned(make_client) -> None:
    client = make_client()
    client.prompt_and_wait("ui dismiss", timeout=10)
    with pytest.raises(RpcTimeoutError):
        client.next_ui_request(timeout=0.1)


def test_next_ui_request_is_woken_by_stop(make_client) -> None:
    client = make_client()
    errors: list[BaseException] = []

    def wait() -> None:
        try:
            client.next_ui_request()  # no deadline
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    thread = threading.Thread(target=wait)
    thread.start()
    time.sleep(0.1)
    t0 = time.monotonic()
    client.stop()
    thread.join(5)
    assert not thread.is_alive() and time.monotonic() - t0 < 3
    assert len(errors) == 1 and isinstance(errors[0], RpcProcessExitError)


def test_headless_ui_answers_inside_the_library(make_client) -> None:
    client = make_client()
    seen: list[str] = []
    uninstall = client.install_headless_ui(on_request=lambda r: seen.append(r.method))
    client.prompt_and_wait("needs ui", timeout=10)  # cancelled → the agent's follow-up turn
    client.prompt_and_wait("unknown ui", timeout=10)  # unknown methods are cancelled too (§6.11)
    client.prompt_and_wait("passive ui", timeout=10)
    assert seen[:2] == ["input", "ask"] and "notify" in seen
    uninstall()
    uninstall()
    client.prompt("needs ui")
    request = client.next_ui_request(timeout=5)  # no policy any more: the host answers
    client.send_ui_value(request.id, "x")
    client.wait_for_idle(timeout=5)


def test_headless_ui_installed_before_start_with_values(make_client) -> None:
    client = make_client(start=False)
    answers: list[dict] = []
    client.on_unknown_notification(lambda n: answers.append(n.payload))
    client.install_headless_ui(confirm=True, input_value="typed")
    client.start()
    client.prompt_and_wait("needs confirm", timeout=10)
    client.prompt_and_wait("needs ui", timeout=10)
    client.stop()
    frames = [p["frame"] for p in answers if p.get("type") == "ui_response_seen"]
    assert frames == [
        {"type": "extension_ui_response", "id": "ui-2", "confirmed": True},
        {"type": "extension_ui_response", "id": "ui-1", "value": "typed"},
    ]


def test_headless_on_request_errors_are_recorded(make_client) -> None:
    client = make_client()

    def bad(request: ExtensionUiRequest) -> None:
        raise ValueError("nope")

    client.install_headless_ui(on_request=bad)
    client.prompt_and_wait("needs ui", timeout=10)
    client.stop()
    assert [(e.listener_kind, str(e.error)) for e in client.listener_errors] == [("headless_ui_request", "nope")]


# --- host tools ------------------------------------------------------------------------------------


def test_host_tool_with_updates(make_client) -> None:
    contexts: list[HostToolContext] = []

    def echo(args: dict, ctx: HostToolContext) -> str:
        contexts.append(ctx)
        assert threading.current_thread().name.startswith("omprpc-host")
        ctx.send_update(f"working:{args['message']}")
        return f"host:{args['message']}"

    client = make_client(custom_tools=(_echo_tool(echo),))
    assert client.get_state().dump_tools[-1].name == "echo_host"
    turn = client.prompt_and_wait("needs host tool", timeout=10)
    updates = [e for e in turn.events if isinstance(e, ToolExecutionUpdateEvent)]
    ends = [e for e in turn.events if isinstance(e, ToolExecutionEndEvent)]
    assert [u.partial_result["content"][0]["text"] for u in updates] == ["working:hello"]
    assert [e.result["content"][0]["text"] for e in ends] == ["host:hello"]
    assert ends[0].is_error is False
    assert contexts[0].tool_call_id == "toolu_host_1"


def test_host_tool_decode_structured_result_and_errors(make_client) -> None:
    def structured(params: tuple, ctx: HostToolContext) -> dict:
        return {"content": [{"type": "text", "text": f"decoded:{params[0]}"}], "details": {"n": 1}}

    client = make_client(custom_tools=(_echo_tool(structured, decode=lambda a: (a["message"],)),))
    end = [e for e in client.prompt_and_wait("needs host tool", timeout=10).events if e.type == "tool_execution_end"]
    assert end[0].result == {"content": [{"type": "text", "text": "decoded:hello"}], "details": {"n": 1}}

    def failing(args: dict, ctx: HostToolContext) -> str:
        raise RuntimeError("tool exploded")

    client.set_custom_tools([_echo_tool(failing)])
    end = [e for e in client.prompt_and_wait("needs host tool", timeout=10).events if e.type == "tool_execution_end"]
    assert end[0].is_error is True and end[0].result["content"][0]["text"] == "tool exploded"

    client.set_custom_tools([_echo_tool(lambda a, c: 42)])  # not a str or mapping
    end = [e for e in client.prompt_and_wait("needs host tool", timeout=10).events if e.type == "tool_execution_end"]
    assert end[0].is_error is True

    client.set_custom_tools([_echo_tool(lambda a, c: {"no": "content"})])  # the library rejects the shape
    end = [e for e in client.prompt_and_wait("needs host tool", timeout=10).events if e.type == "tool_execution_end"]
    assert end[0].is_error is True and "Invalid host tool result" in end[0].result["content"][0]["text"]


def test_host_tool_cancellation(make_client) -> None:
    cancelled = threading.Event()
    finished = threading.Event()

    def waits(args: dict, ctx: HostToolContext) -> str:
        assert ctx.wait_cancelled(5)
        cancelled.set()
        ctx.send_update("ignored after cancel")
        finished.set()
        return "dropped"

    client = make_client(custom_tools=(_echo_tool(waits),))
    turn = client.prompt_and_wait("cancel host tool", timeout=10)
    assert cancelled.wait(5) and finished.wait(5)
    assert not any(e.type == "tool_execution_end" for e in turn.events)
    assert client.get_state().session_id == "fake-session"  # nothing was written for it


def test_host_tool_is_cancelled_by_stop(make_client) -> None:
    started = threading.Event()
    cancelled = threading.Event()

    def waits(args: dict, ctx: HostToolContext) -> str:
        started.set()
        if ctx.wait_cancelled(10):
            cancelled.set()
        return "late"

    client = make_client(custom_tools=(_echo_tool(waits),))
    client.prompt("needs host tool")
    assert started.wait(5)
    client.stop()
    assert cancelled.wait(5)


def test_unknown_and_malformed_host_calls_are_answered_by_the_library(make_client) -> None:
    client = make_client(custom_tools=(_echo_tool(lambda a, c: "ok"),))
    seen: list[dict] = []
    client.on_unknown_notification(lambda n: seen.append(n.payload))
    client.prompt_and_wait("unknown host tool", timeout=10)
    client.prompt_and_wait("bad host call", timeout=10)
    client.stop()
    results = [p["frame"] for p in seen if p.get("type") == "host_result_seen"]
    assert [r["isError"] for r in results] == [True, True]
    assert 'Host tool "no_such_tool" is not registered' in results[0]["result"]["content"][0]["text"]
    assert "must be an object" in results[1]["result"]["content"][0]["text"]
    assert len(client.protocol_errors) == 2


def test_xd_dispatched_tool_events_carry_the_host_tool_name(make_client) -> None:
    client = make_client(custom_tools=(_echo_tool(lambda a, c: "done"),))
    turn = client.prompt_and_wait("needs xd tool", timeout=10)
    names = [(e.type, e.tool_name) for e in turn.events if e.type.startswith("tool_execution")]
    assert names == [("tool_execution_start", "write"), ("tool_execution_end", "echo_host")]


def test_many_host_calls_run_on_a_bounded_pool(make_client) -> None:
    running = 0
    peak = 0
    lock = threading.Lock()

    def slow(args: dict, ctx: HostToolContext) -> str:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        time.sleep(0.05)
        with lock:
            running -= 1
        return "ok"

    client = make_client(custom_tools=(_echo_tool(slow),), max_host_workers=2)
    for _ in range(4):
        client.prompt_and_wait("needs host tool", timeout=10)
    assert 1 <= peak <= 2


# --- host URIs ------------------------------------------------------------------------------------


def test_host_uri_read_and_write(make_client) -> None:
    writes: list[tuple[str, str]] = []
    memo = host_uri(
        scheme=" Memo ",
        read=lambda url, ctx: {"content": f"notes for {url}", "content_type": "text/markdown", "notes": ["n"]},
        write=lambda url, content, ctx: writes.append((url, content)),
        description="notes",
    )
    assert memo.scheme == "memo" and memo.writable
    client = make_client(host_uris=(memo,))
    seen: list[dict] = []
    client.on_unknown_notification(lambda n: seen.append(n.payload))
    client.prompt_and_wait("needs host uri", timeout=10)
    client.prompt_and_wait("needs host uri write", timeout=10)
    client.stop()
    frames = [p["frame"] for p in seen if p.get("type") == "host_uri_result_seen"]
    assert frames[0] == {"type": "host_uri_result", "id": "uri-1", "content": "notes for memo://notes/today",
                         "contentType": "text/markdown", "notes": ["n"]}
    assert frames[1] == {"type": "host_uri_result", "id": "uri-1"}
    assert writes == [("memo://notes/today", "new text")]


def test_host_uri_errors(make_client) -> None:
    def broken(url: str, ctx: Any) -> str:
        raise KeyError("missing note")

    client = make_client(host_uris=(host_uri(scheme="memo", read=broken),))
    seen: list[dict] = []
    client.on_unknown_notification(lambda n: seen.append(n.payload))
    client.prompt_and_wait("needs host uri", timeout=10)
    client.prompt_and_wait("needs host uri write", timeout=10)  # read-only scheme: the library answers
    client.stop()
    frames = [p["frame"] for p in seen if p.get("type") == "host_uri_result_seen"]
    assert frames[0]["isError"] is True and "missing note" in frames[0]["error"]
    assert "write handler" in frames[1]["error"]


def test_set_host_uris_after_start(make_client) -> None:
    client = make_client()
    assert client.set_host_uris([host_uri(scheme="memo", read=lambda u, c: "x")]) == ("memo",)
    assert client.set_custom_tools([_echo_tool(lambda a, c: "x")]) == ("echo_host",)
