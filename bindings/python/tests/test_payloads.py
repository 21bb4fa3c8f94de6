"""The typed payloads (issue 23 §3): TypedDict unions over the dicts the agent sent. Nothing
validates them, so a variant a newer agent adds passes through; only a text_delta is answer
text. The payload types come from the table once (_payloads_gen), under omp_rpc's names."""

from __future__ import annotations

import typing

import omprpc
from omprpc import _payloads_gen, protocol
from omprpc.protocol import MessageUpdateEvent, parse_notification

PARTIAL = {"role": "assistant", "content": [], "api": "x", "provider": "p", "model": "m", "timestamp": 1}


def update(event: dict[str, object], role: str = "assistant") -> MessageUpdateEvent:
    n = parse_notification({"type": "message_update", "message": {**PARTIAL, "role": role}, "assistantMessageEvent": event})
    assert isinstance(n, MessageUpdateEvent)
    return n


def test_only_a_text_delta_is_answer_text() -> None:
    for kind, want in [("text_delta", "hi"), ("thinking_delta", None), ("toolcall_delta", None)]:
        ev = update({"type": kind, "contentIndex": 0, "delta": "hi", "partial": PARTIAL}).assistant_message_event
        assert omprpc.assistant_text_delta(ev) == want, kind


def test_unknown_variants_pass_through_unchanged() -> None:
    future = {"type": "audio_delta", "contentIndex": 2, "bytes": "AAE="}
    n = update(future, role="narrator")
    assert n.assistant_message_event == future
    assert n.message["role"] == "narrator"
    assert omprpc.assistant_text_delta(n.assistant_message_event) is None


def test_one_representation_of_each_payload() -> None:
    # omprpc.protocol's message and event types are the generated TypedDicts, not copies.
    for name in ["AgentMessage", "AssistantMessage", "TextContent", "ToolCall", "Usage", "AssistantTextDeltaEvent", "MessageContent"]:
        assert getattr(protocol, name) is getattr(_payloads_gen, name), name
        assert getattr(omprpc, name) is getattr(_payloads_gen, name), name
    # One TypedDict per variant of the table's union.
    variants = typing.get_args(protocol.AssistantMessageEvent)
    assert len(variants) == len(_payloads_gen.ASSISTANT_MESSAGE_EVENT_TYPES)
    assert protocol.AssistantTextDeltaEvent in variants and "text_delta" in _payloads_gen.ASSISTANT_MESSAGE_EVENT_TYPES
