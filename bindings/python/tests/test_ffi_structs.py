"""The generated ctypes structs and the structured-result signatures (``_ffi_gen``), read against
the library: a low-level test of the declarations, not of the binding's API (which still reads
the JSON forms).

The layout is proven against the library itself, with nothing compiled: ``omprpc_turn_get_info``
writes a whole ``omprpc_turn_info`` (the library's size) into a buffer of ours filled with a
sentinel, so a struct larger than ours would overwrite the sentinel after it, a smaller one (or a
member at another offset) would leave members unwritten or misplaced, and every member is then
checked against the turn JSON. The arrays of views have the library's stride only if every view
(the last one included) matches its event in the JSON form.
"""

from __future__ import annotations

import ctypes
import json
from ctypes import POINTER, byref, c_size_t, c_void_p
from typing import Any, Iterator

import pytest

from omprpc import _ffi
from omprpc._ffi import lib
from omprpc._ffi_gen import (
    TURN_OUTCOME_ABORTED,
    TURN_OUTCOME_AGENT_END,
    TURN_OUTCOME_AGENT_SETTLED,
    TURN_OUTCOME_NOT_INVOKED,
    TURN_OUTCOME_PROMPT_RESULT,
    omprpc_event_view,
    omprpc_str,
    omprpc_turn_info,
)

WAIT_MS = 10_000
SENTINEL = 0xA5


def text(s: omprpc_str) -> bytes | None:
    """An ``omprpc_str``'s bytes; None when absent (``data`` NULL)."""
    if not s.data:
        assert s.len == 0
        return None
    return ctypes.string_at(s.data, s.len)


def parsed(s: omprpc_str) -> Any:
    raw = text(s)
    return None if raw is None else json.loads(raw)


def check(status: int, err: c_void_p) -> None:
    if status != _ffi.OK:
        raise _ffi.error_from(status, _ffi.take(err))


@pytest.fixture
def client(fake_agent: str) -> Iterator[_ffi.Handle]:
    handle = _ffi.Handle(_ffi.start(_ffi.dumps({"command": [fake_agent]})))
    try:
        yield handle
    finally:
        handle.close()
        handle.free()


def prompt_turn(client: _ffi.Handle, message: str) -> int:
    status, turn, err = client.call_raw(lib.omprpc_client_prompt_and_wait_turn, message.encode(), None, WAIT_MS)
    if status != _ffi.OK:
        raise _ffi.error_from(status, err)
    assert turn
    return turn


def views(fn: Any, obj: int, item: type) -> list[Any]:
    """``fn(obj, &array, &count, &err)``: the array's items, copied out."""
    arr, count, err = POINTER(item)(), c_size_t(), c_void_p()
    check(fn(obj, byref(arr), byref(count), byref(err)), err)
    return [arr[i] for i in range(count.value)]


def test_struct_fields_follow_the_header() -> None:
    assert [n for n, _ in omprpc_str._fields_] == ["data", "len"]
    assert [n for n, _ in omprpc_event_view._fields_] == ["event_type", "json"]
    assert [n for n, _ in omprpc_turn_info._fields_][:3] == ["outcome", "agent_invoked", "event_count"]
    # ABI 2 appended the record of the attempts after turn_json.
    assert [n for n, _ in omprpc_turn_info._fields_][-5:] == [
        "turn_json", "attempts", "settled", "failed_attempts_json", "compactions_json"]
    assert (TURN_OUTCOME_AGENT_END, TURN_OUTCOME_PROMPT_RESULT, TURN_OUTCOME_NOT_INVOKED,
            TURN_OUTCOME_AGENT_SETTLED, TURN_OUTCOME_ABORTED) == (0, 1, 2, 3, 4)
    # The signatures name the structs (precise types, not c_void_p).
    _, args = _ffi._SIGNATURES["omprpc_turn_events"]
    assert args[1] is POINTER(POINTER(omprpc_event_view)) and args[2] is POINTER(c_size_t)
    assert _ffi._SIGNATURES["omprpc_turn_get_info"][1][1] is POINTER(omprpc_turn_info)


@pytest.mark.skipif(ctypes.sizeof(c_void_p) != 8, reason="the expected numbers are LP64's")
def test_lp64_layout() -> None:
    assert (ctypes.sizeof(omprpc_str), ctypes.sizeof(omprpc_event_view), ctypes.sizeof(omprpc_turn_info)) == (16, 32, 216)
    offsets = {n: getattr(omprpc_turn_info, n).offset for n, _ in omprpc_turn_info._fields_}
    assert (offsets["outcome"], offsets["agent_invoked"], offsets["event_count"], offsets["request_id"]) == (0, 4, 8, 16)
    assert offsets["turn_json"] == 160 and omprpc_event_view.json.offset == 16
    assert (offsets["attempts"], offsets["settled"], offsets["failed_attempts_json"], offsets["compactions_json"]) == (
        176, 180, 184, 200)


def test_turn_read_through_the_generated_structs(client: _ffi.Handle) -> None:
    turn = prompt_turn(client, "say hello")
    try:
        # omprpc_turn_info into a sentinel-filled buffer twice its size.
        size = ctypes.sizeof(omprpc_turn_info)
        buf = (ctypes.c_ubyte * (2 * size))(*([SENTINEL] * (2 * size)))
        err = c_void_p()
        check(lib.omprpc_turn_get_info(turn, ctypes.cast(buf, POINTER(omprpc_turn_info)), byref(err)), err)
        assert all(b == SENTINEL for b in buf[size:]), "the library wrote past our omprpc_turn_info"
        info = omprpc_turn_info.from_buffer(buf)

        whole = parsed(info.turn_json)
        assert isinstance(whole, dict) and whole["assistantText"] == "pong"
        assert text(info.assistant_text) == b"pong"
        assert info.outcome == TURN_OUTCOME_AGENT_END and info.agent_invoked is True
        assert text(info.request_id) == whole["requestId"].encode()
        assistant = whole["assistantMessage"]
        assert parsed(info.assistant_message_json) == assistant
        assert text(info.stop_reason) == assistant["stopReason"].encode()
        assert text(info.error_message) is None
        assert parsed(info.usage_json) == assistant.get("usage")
        assert parsed(info.messages_json) == whole["messages"]
        assert text(info.prompt_result_json) is None and text(info.summary_json) is None
        # The record of the attempts (ABI 2): one attempt, nothing failed, the fake agent
        # (pi 0.73.1 by default) does not announce settling.
        assert (info.attempts, info.settled) == (whole["attempts"], whole["settled"]) == (1, False)
        assert parsed(info.failed_attempts_json) == whole["failedAttempts"] == []
        assert parsed(info.compactions_json) == whole["compactions"] == []
        # The JSON members are slices of the turn JSON (one buffer).
        start, end = info.turn_json.data, info.turn_json.data + info.turn_json.len
        for member in (info.usage_json, info.messages_json, info.assistant_message_json,
                       info.failed_attempts_json, info.compactions_json):
            assert start <= member.data and member.data + member.len <= end

        # The events: as many as the turn JSON's, each the same event, its type read aside.
        events = views(lib.omprpc_turn_events, turn, omprpc_event_view)
        assert len(events) == info.event_count == len(whole["events"]) > 1
        assert [parsed(v.json) for v in events] == whole["events"]
        assert [text(v.event_type) for v in events] == [e["type"].encode() for e in whole["events"]]
        assert text(events[0].event_type) == b"agent_start" and text(events[-1].event_type) == b"agent_end"

        messages = views(lib.omprpc_turn_messages, turn, omprpc_str)
        assert [parsed(m) for m in messages] == whole["messages"]
    finally:
        lib.omprpc_turn_free(turn)


def test_turn_events_agree_with_the_json_form(client: _ffi.Handle) -> None:
    turn = prompt_turn(client, "say hello")
    try:
        types = [text(v.event_type) for v in views(lib.omprpc_turn_events, turn, omprpc_event_view)]
    finally:
        lib.omprpc_turn_free(turn)
    # The same prompt through omprpc_client_prompt_and_wait (the fake agent answers alike).
    raw = client.call_out(lib.omprpc_client_prompt_and_wait, b"say hello", None, WAIT_MS)
    assert raw is not None
    again = json.loads(raw)
    assert again["assistantText"] == "pong"
    assert types == [e["type"].encode() for e in again["events"]]


def run_types(types: list[Any]) -> list[Any]:
    """A run's event types: from its ``agent_start`` (the start-up's ``ready`` dropped)."""
    return types[types.index("agent_start"):]


def test_event_batch_views(client: _ffi.Handle) -> None:
    # A run taken from the queue as batches of views (omprpc_client_next_event_batch) …
    client.call_out(lib.omprpc_client_prompt, b"say hello", None, WAIT_MS)
    events: list[Any] = []
    while not events or events[-1]["type"] != "agent_end":
        status, batch, err = client.call_raw(lib.omprpc_client_next_event_batch, 1000, WAIT_MS)
        if status != _ffi.OK:
            raise _ffi.error_from(status, err)
        try:
            items = views(lib.omprpc_event_batch_events, batch, omprpc_event_view)
            assert items
            for v in items:
                event = parsed(v.json)
                assert isinstance(event, dict) and text(v.event_type) == event["type"].encode()
                events.append(event)
        finally:
            lib.omprpc_event_batch_free(batch)
    # … has the events the same prompt's run brings as JSON (omprpc_client_next_events).
    client.call_out(lib.omprpc_client_prompt, b"say hello", None, WAIT_MS)
    again: list[Any] = []
    while not again or again[-1]["type"] != "agent_end":
        raw = client.call_out(lib.omprpc_client_next_events, 1000, WAIT_MS)
        again.extend(json.loads(raw or b"[]"))
    assert run_types([e["type"] for e in events]) == run_types([e["type"] for e in again])
    assert len(run_types([e["type"] for e in events])) > 2
