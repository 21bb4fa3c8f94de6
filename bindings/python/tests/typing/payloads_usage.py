"""Type-checked by ``mypy --strict`` in ``make python-tests``, never run: the typed payloads
(issue 23 §3). Each ``# type: ignore[…]`` must be needed (``--strict`` warns on an unused
one): were a payload type to regress to ``Any``, the check fails."""

from __future__ import annotations

from omprpc import (
    AgentMessage,
    AgentToolResult,
    AssistantMessageEvent,
    MessageContent,
    RpcClient,
    Usage,
    assistant_text_delta,
)
from omprpc.protocol import MessageUpdateEvent


def answer_text(ev: AssistantMessageEvent) -> str:
    """A switch over the assistant message events: only text deltas are answer text."""
    if ev["type"] == "text_delta":
        delta: str = ev["delta"]
        index: int = ev["contentIndex"]
        return delta if index >= 0 else ""
    if ev["type"] == "thinking_delta" or ev["type"] == "toolcall_delta":
        return ""  # reasoning and tool-argument JSON are not answer text
    if ev["type"] == "toolcall_end":
        return ev["toolCall"]["name"]
    if ev["type"] == "done":
        return ev["message"]["stopReason"]
    return ""


def not_any(ev: AssistantMessageEvent) -> None:
    print(ev["delta"])  # type: ignore[typeddict-item]
    text: str = assistant_text_delta(ev)  # type: ignore[assignment]
    print(text)


def block_text(block: MessageContent) -> str:
    if block["type"] == "text":
        return block["text"]
    if block["type"] == "image":
        return block["mimeType"]
    if block["type"] == "toolCall":
        return block["name"]
    return block["thinking"]


def tool_text(result: AgentToolResult) -> str:
    """The text of a tool result's content blocks."""
    return "".join(block_text(b) for b in result["content"] if b["type"] == "text")


def usage_line(usage: Usage) -> str:
    tokens: int = usage["input"] + usage["output"] + usage["cacheRead"] + usage["cacheWrite"]
    cost: float = usage["cost"]["total"]
    print(usage["inputTokens"])  # type: ignore[typeddict-item]
    return f"{tokens}/{usage['totalTokens']} tokens, ${cost}"


def roles(messages: list[AgentMessage]) -> list[str]:
    out: list[str] = []
    for m in messages:
        if m["role"] == "assistant":
            out.append(usage_line(m["usage"]))
        elif m["role"] == "toolResult":
            out.append(tool_text({"content": m["content"], "details": None}))
        elif m["role"] == "user":
            content = m["content"]
            out.append(content if isinstance(content, str) else f"{len(content)} blocks")
        else:
            out.append(m["role"])
    return out


def stream(client: RpcClient) -> None:
    def on_update(e: MessageUpdateEvent) -> None:
        delta = assistant_text_delta(e.assistant_message_event)
        if delta is not None:
            print(delta, end="", flush=True)

    client.on_message_update(on_update)
