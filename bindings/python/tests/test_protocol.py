"""Typed parsing, normalisation and turn decoding — no agent involved."""

from __future__ import annotations

import ctypes
import json
import threading
from pathlib import Path

import pytest

from omprpc import (
    AgentEndEvent,
    AutoCompactionStartEvent,
    ExtensionUiRequest,
    HostToolContext,
    MessageEndEvent,
    MessageUpdateEvent,
    PromptTurn,
    ReadyEvent,
    RpcError,
    RpcProtocolError,
    TodoItem,
    TodoPhase,
    UnknownNotification,
    assistant_text,
    assistant_text_with_thinking,
    host_tool,
    host_uri,
    image_from_path,
    message_text,
    parse_notification,
    parse_session_state,
    parse_todo_phases,
)
from omprpc import _ffi
from omprpc.client import _normalize_todo_phases
from omprpc.host_uris import normalize_read_result
from omprpc.protocol import (
    parse_model_cycle_result,
    parse_model_info,
    parse_thinking_level_cycle_result,
    to_notification,
)

ASSISTANT = {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "po"},
                                              {"type": "text", "text": "ng"}]}


# --- notifications ----------------------------------------------------------------------------


def test_ready_event_fields() -> None:
    frame = {"type": "ready", "protocolVersion": 1, "supportedProtocolVersions": [1, 2],
             "maxFrameBytes": 1048576, "maxReassembledFrameBytes": 67108864}
    ready = parse_notification(frame)
    assert ready == ReadyEvent(protocol_version=1, supported_protocol_versions=(1, 2), max_frame_bytes=1048576,
                               max_reassembled_frame_bytes=67108864, raw=frame)
    assert parse_notification({"type": "ready"}) == ReadyEvent(raw={"type": "ready"})
    # omp protocol 1.1's description, in omp_rpc's field order; copies of the frame's objects.
    frame11 = {"type": "ready", "protocol": {"name": "omp-rpc", "version": "1.1.0", "schemaVersion": 1},
               "server": {"pid": 7}, "mode": "rpc", "capabilities": {"commands": ["ping"]}, "limits": {},
               "resetProfile": {"name": "rpc-defaults"}, "security": {}, "seq": 1,
               "timestamp": "2026-12-01T00:00:00.000Z", "sessionId": "s"}
    ready = parse_notification(frame11)
    assert isinstance(ready, ReadyEvent)
    assert ready == ReadyEvent(frame11["protocol"], {"pid": 7}, "rpc", {"commands": ["ping"]}, {},
                               {"name": "rpc-defaults"}, {}, 1, "2026-12-01T00:00:00.000Z", "s", frame11)
    frame11["capabilities"]["commands"].append("changed")  # type: ignore[index]
    # Agent events too: nothing of the frame is shared.
    end_frame = {"type": "agent_end", "messages": [{"role": "assistant", "content": [{"type": "text", "text": "a"}]}]}
    end = parse_notification(end_frame)
    end_frame["messages"][0]["content"][0]["text"] = "changed"  # type: ignore[index]
    assert end.messages[0]["content"][0]["text"] == "a"  # type: ignore[union-attr, index]
    assert ready.capabilities == {"commands": ["ping"]}, "the event does not share the frame's objects"
    assert ready.raw is not None and ready.raw["capabilities"] == {"commands": ["ping"]}


def test_unknown_enum_value_degrades_to_unknown_notification() -> None:
    payload = {"type": "auto_compaction_start", "reason": "cosmic-rays", "action": "context-full"}
    note = to_notification(payload)
    assert isinstance(note, UnknownNotification)
    assert note.payload == payload and "auto_compaction_start.reason" in (note.parse_error or "")
    with pytest.raises(ValueError):
        parse_notification(payload)
    newer = to_notification({"type": "auto_compaction_start", "reason": "idle", "action": "prune"})
    assert isinstance(newer, AutoCompactionStartEvent) and newer.action == "prune"
    defaults = to_notification({"type": "auto_compaction_start"})
    assert (defaults.reason, defaults.action) == ("threshold", "context-full")


def test_unknown_roles_and_subtypes_pass_through() -> None:
    end = to_notification({"type": "message_end", "message": {"role": "hologram", "content": "x"}})
    assert isinstance(end, MessageEndEvent) and end.message["role"] == "hologram"
    update = to_notification({"type": "message_update", "message": ASSISTANT,
                              "assistantMessageEvent": {"type": "sparkle_delta", "delta": "x"}})
    assert isinstance(update, MessageUpdateEvent) and update.assistant_message_event["type"] == "sparkle_delta"
    agent_end = to_notification({"type": "agent_end", "messages": [{"role": "hologram"}], "messageCount": 3,
                                 "isTerminal": False})
    assert isinstance(agent_end, AgentEndEvent)
    assert (agent_end.message_count, agent_end.is_terminal) == (3, False)
    broken = to_notification({"type": "message_end", "message": "not an object"})
    assert isinstance(broken, UnknownNotification) and "message_end.message" in (broken.parse_error or "")
    assert isinstance(to_notification({"type": "brand_new"}), UnknownNotification)
    assert to_notification({"type": "brand_new"}).parse_error is None


def test_todo_reminder_accepts_blocked_and_rejects_unknown_status() -> None:
    ok = to_notification({"type": "todo_reminder", "attempt": 1, "maxAttempts": 2,
                          "todos": [{"id": "t", "content": "c", "status": "blocked", "blocker": "b"}]})
    assert ok.todos[0].status == "blocked" and ok.todos[0].blocker == "b"
    bad = to_notification({"type": "todo_reminder", "todos": [{"content": "c", "status": "later"}]})
    assert isinstance(bad, UnknownNotification)


def test_extension_ui_requests() -> None:
    select = parse_notification({"type": "extension_ui_request", "id": "u", "method": "select", "title": "Pick",
                                 "options": ["a", "b"], "optionDetails": [{"description": "A"}, {}], "timeout": 5})
    assert isinstance(select, ExtensionUiRequest)
    assert select.options == ("a", "b") and select.option_details == ({"description": "A"}, {})
    assert select.is_interactive() and select.accepts_text() and select.requires_response()
    url = parse_notification({"type": "extension_ui_request", "id": "o", "method": "open_url",
                              "url": "https://x", "launchUrl": "http://127.0.0.1/r"})
    assert url.is_passive() and not url.requires_response() and url.launch_url == "http://127.0.0.1/r"
    ask = parse_notification({"type": "extension_ui_request", "id": "a", "method": "ask", "questions": []})
    assert ask.method == "ask" and ask.requires_response() and ask.payload["questions"] == []
    widget = parse_notification({"type": "extension_ui_request", "id": "w", "method": "setWidget", "widgetKey": "k",
                                 "widgetBlocks": [{"lines": ["l"], "alignment": "top"}], "widgetPlacement": "nowhere"})
    assert widget.widget_blocks[0].lines == ("l",) and widget.widget_placement == "nowhere"
    # positional order of omp_rpc's dataclass
    assert ExtensionUiRequest("i", "select", "t", ("a",), "m").message == "m"
    assert not parse_notification({"type": "extension_ui_request", "id": "c", "method": "cancel"}).requires_response()


def test_tool_execution_events() -> None:
    start = parse_notification({"type": "tool_execution_start", "toolCallId": "t", "toolName": "read",
                                "args": {"path": "x"}, "intent": "look"})
    assert (start.tool_call_id, start.tool_name, start.args, start.intent) == ("t", "read", {"path": "x"}, "look")
    end = parse_notification({"type": "tool_execution_end", "toolCallId": "t", "toolName": "read", "result": 1})
    assert end.is_error is None and end.result == 1


# --- results ----------------------------------------------------------------------------------


def test_session_state_is_lenient() -> None:
    state = parse_session_state({
        "model": {"id": "m", "name": "M", "api": "a", "provider": "p", "baseUrl": "u", "contextWindow": None,
                  "maxTokens": None, "thinking": {"mode": "effort", "efforts": ["low", "ultra"]}},
        "thinkingLevel": "ultra",
        "steeringMode": "sometimes",
        "sessionId": "s",
        "systemPrompt": "legacy",
        "contextUsage": {"tokens": 5, "contextWindow": 10, "percent": 50},
        "todoPhases": [{"id": "p", "name": "P", "tasks": [{"id": "t", "content": "c", "status": "someday"}]}],
        "dumpTools": [{"name": "read", "description": "d", "parameters": {}, "examples": ["e"]}],
    })
    assert state.model is not None and state.model.context_window == 0 and state.model.max_tokens == 0
    assert state.model.thinking is not None and state.model.thinking.efforts == ("low", "ultra")
    assert state.thinking_level == "ultra" and state.steering_mode == "sometimes"
    assert state.interrupt_mode == "immediate" and state.fast_mode_enabled is False
    assert state.tokens_per_second is None and state.system_prompt == ("legacy",)
    assert state.context_usage is not None and state.context_usage.percent == 50.0
    assert state.todo_phases[0].tasks[0].status == "someday"
    assert state.dump_tools[0].examples == ["e"]
    assert parse_session_state({"systemPrompt": ["a", "b"]}).system_prompt == ("a", "b")
    assert parse_session_state({}).session_id == ""


def test_small_results() -> None:
    assert parse_model_cycle_result(None) is None  # spec §6.8
    assert parse_model_cycle_result({"model": None}) is None
    cycled = parse_model_cycle_result({"model": {"id": "m"}, "thinkingLevel": "high", "isScoped": True})
    assert cycled is not None and cycled.model.id == "m" and cycled.is_scoped
    assert parse_thinking_level_cycle_result(None) is None
    assert parse_thinking_level_cycle_result({"level": "low"}).level == "low"
    assert parse_model_info(None) is None
    assert parse_model_info({"id": "m", "input": ["text", "image"]}).input_modalities == ("text", "image")
    assert parse_todo_phases(None) == ()


# --- helpers ----------------------------------------------------------------------------------


def test_text_helpers(tmp_path: Path) -> None:
    assert assistant_text(ASSISTANT) == "pong"
    assert assistant_text_with_thinking(ASSISTANT) == "hmmpong"
    assert assistant_text({"role": "user", "content": "x"}) is None
    assert message_text({"role": "user", "content": "x"}) == "x"
    assert message_text({"role": "branchSummary", "summary": "s"}) is None
    image = tmp_path / "pic.png"
    image.write_bytes(b"\x89PNG")
    assert image_from_path(image) == {"type": "image", "mimeType": "image/png", "data": "iVBORw=="}
    assert image_from_path(image, "image/x")["mimeType"] == "image/x"
    odd = tmp_path / "blob.zzzunknown"
    odd.write_bytes(b"")
    assert image_from_path(odd)["mimeType"] == "application/octet-stream"


def test_todo_normalisation() -> None:
    assert _normalize_todo_phases([]) == []
    flat = _normalize_todo_phases(["a", {"content": "b", "status": "blocked", "blocker": "x", "notes": 5}])
    assert flat == [{"id": "phase-1", "name": "Todos", "tasks": [
        {"id": "task-1", "content": "a", "status": "pending"},
        {"id": "task-2", "content": "b", "status": "blocked", "notes": None, "details": None, "blocker": "x"},
    ]}]
    phases = _normalize_todo_phases([
        {"name": "One", "tasks": ["x", TodoItem(id="", content="y", status="completed")]},
        TodoPhase(id="p2", name="Two", tasks=()),
    ])
    assert [p["id"] for p in phases] == ["phase-1", "p2"]
    assert [t["id"] for t in phases[0]["tasks"]] == ["task-1", "task-2"]  # one counter per call
    for bad, message in [
        (["x", {"name": "phase"}], "Cannot mix"),
        ([{"content": "  "}], "non-empty 'content'"),
        ([{"name": " ", "tasks": []}], "non-empty 'name'"),
        ([{"content": "x", "status": "later"}], "Unsupported todo status"),
        ("abc", "not a string"),
    ]:
        with pytest.raises(RpcError, match=message):
            _normalize_todo_phases(bad)  # type: ignore[arg-type]


def test_host_tool_and_uri_helpers() -> None:
    tool = host_tool(name="t", description="d", parameters={"type": "object"}, execute=lambda a, c: "x",
                     label="T", hidden=True, trust_class="workspace")
    assert tool.to_wire() == {"name": "t", "description": "d", "parameters": {"type": "object"}, "hidden": True,
                              "label": "T", "trustClass": "workspace"}
    assert tool.normalize_result("x") == {"content": [{"type": "text", "text": "x"}]}
    assert tool.parse_params({"a": 1}) == {"a": 1}
    sent: list[dict] = []
    cancel = threading.Event()
    ctx = HostToolContext(tool_call_id="c", _cancel_event=cancel, _send_update=sent.append)
    ctx.send_update("one")
    cancel.set()
    ctx.send_update("two")
    assert sent == [{"content": [{"type": "text", "text": "one"}]}] and ctx.cancelled
    with pytest.raises(ValueError):
        host_uri(scheme="  ", read=lambda u, c: "")
    uri = host_uri(scheme=" MeMo", read=lambda u, c: "")
    assert (uri.scheme, uri.writable, uri.to_wire()) == ("memo", False, {"scheme": "memo", "writable": False,
                                                                        "immutable": False, "trustClass": "host"})
    assert normalize_read_result("x") == {"content": "x"}
    assert normalize_read_result({"content": 1, "content_type": "application/json", "notes": ["n"],
                                  "immutable": 1}) == {"content": "1", "contentType": "application/json",
                                                       "notes": ["n"], "immutable": True}
    with pytest.raises(ValueError):
        normalize_read_result({"content": "x", "content_type": "image/png"})
    with pytest.raises(ValueError):
        normalize_read_result({"notes": []})
    with pytest.raises(TypeError):
        normalize_read_result(5)  # type: ignore[arg-type]


def test_protocol_error_objects() -> None:
    err = RpcProtocolError({"type": "response", "command": "prompt", "id": "req_1", "success": False,
                            "error": "late"})
    assert str(err) == "Received unmatched RPC error response for prompt (id=req_1) : late"
    assert (err.command, err.request_id, err.remote_error) == ("prompt", "req_1", "late")
    record = {"type": "protocol_error", "omprpc": True, "message": "ignoring protocol v2"}
    err = RpcProtocolError._from_record(record)
    assert str(err) == "ignoring protocol v2" and err.command is None and err.payload == record


def test_prompt_turn_constructor() -> None:
    turn = PromptTurn(events=(), messages=(ASSISTANT,), assistant_message=ASSISTANT, assistant_text="pong")
    assert turn.require_assistant_text() == "pong" and turn.events == () and turn.event_payloads == ()
    with pytest.raises(RpcError):
        PromptTurn().require_assistant_text()
    with pytest.raises(AttributeError):
        turn.assistant_text = "x"  # type: ignore[misc]
