"""Turn summaries: text, reasoning, tool calls, stop reasons and usage of a turn, computed by
the native library (``omprpc_summarize`` / ``omprpc_summarizer_*``, docs/c-api.md).

* ``RpcClient(turn_summary=True)``: every :class:`~omprpc.PromptTurn` of ``prompt_and_wait``
  has a :attr:`~omprpc.PromptTurn.summary` (computed in the library while the turn is built);
* :func:`summarize`: the summary of events you already have (a turn, its payloads, JSON);
* :class:`Summarizer`: the same, streaming: feed raw events one by one (from a listener, say)
  and get the derived items each produces (text and reasoning deltas, tool starts and ends,
  stop reasons, the turn's end).
"""

from __future__ import annotations

import ctypes
import json
import threading
from ctypes import c_void_p
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Literal, Mapping, cast

from . import _ffi
from ._ffi import lib
from .protocol import JsonObject

if TYPE_CHECKING:
    from .client import PromptTurn

__all__ = [
    "Compaction",
    "FailedAttempt",
    "FailedAttemptThen",
    "SummaryChunk",
    "SummaryStop",
    "SummaryToolCall",
    "SummaryUsage",
    "Summarizer",
    "TurnSummary",
    "parse_compactions",
    "parse_failed_attempts",
    "parse_turn_summary",
    "summarize",
]


def _s(v: object) -> str | None:
    return v if isinstance(v, str) else None


def _i(v: object) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


@dataclass(slots=True, frozen=True)
class SummaryUsage:
    """Token usage: one LLM call's (``message_usage``) or the turn's, summed over its calls
    (``usage``; then ``context_tokens`` is the last call's total and ``calls`` their number)."""

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    total_tokens: int
    cost: float
    model: str | None
    context_tokens: int | None = None
    calls: int | None = None

    @classmethod
    def _from(cls, v: object) -> SummaryUsage | None:
        if not isinstance(v, Mapping):
            return None
        cost = v.get("cost")
        return cls(
            input_tokens=_i(v.get("inputTokens")),
            output_tokens=_i(v.get("outputTokens")),
            cache_read_tokens=_i(v.get("cacheReadTokens")),
            cache_write_tokens=_i(v.get("cacheWriteTokens")),
            total_tokens=_i(v.get("totalTokens")),
            cost=float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else 0.0,
            model=_s(v.get("model")),
            context_tokens=_i(v["contextTokens"]) if "contextTokens" in v else None,
            calls=_i(v["calls"]) if "calls" in v else None,
        )


@dataclass(slots=True, frozen=True)
class SummaryChunk:
    """A run of text or reasoning, in arrival order (the two are never mixed in one chunk)."""

    kind: Literal["text", "reasoning"]
    text: str


@dataclass(slots=True, frozen=True)
class SummaryToolCall:
    """A tool call of the turn, start and end paired by ``tool_call_id``. ``outcome`` is
    ``"success"``, ``"error"``, ``"blocked"`` (by the policy gate; ``reason`` says why) or
    ``"pending"`` (no end seen).

    Calls another tool made (pi 0.99 on: a codemode script's inner calls) are items too, in
    start order: ``parent_tool_call_id`` names the call that made one (None for a call of the
    model), and that call's ``children`` lists their ids, so the list renders as a tree."""

    tool_call_id: str
    tool_name: str
    args: Any
    outcome: str
    result: Any
    reason: str | None
    parent_tool_call_id: str | None = None
    children: tuple[str, ...] = ()


@dataclass(slots=True, frozen=True)
class SummaryStop:
    """An abnormal stop of an assistant message (``error``, ``aborted`` or ``length``)."""

    reason: str
    error_message: str | None


#: What the agent did after a failed attempt (the library decides, from the agent's frames):
#: ``"retry"`` (it retried after a delay), ``"compaction"`` (it compacted for a context
#: overflow and retried), ``"gave_up"`` (its retries ran out), ``"cancelled"`` (the host aborted
#: the retry in its delay) or ``"none"`` (it did nothing more about it).
FailedAttemptThen = Literal["retry", "compaction", "gave_up", "cancelled", "none"]


@dataclass(slots=True, frozen=True)
class FailedAttempt:
    """An attempt of the turn that failed (``failedAttempts``): its number (1 is the prompt's
    first run), the error it failed with, what the agent did next (:data:`FailedAttemptThen`)
    and, for a retry, the delay the agent waited before it (milliseconds)."""

    attempt: int
    error: str | None
    then: FailedAttemptThen
    delay_ms: int | None = None

    @classmethod
    def _from(cls, v: object) -> FailedAttempt | None:
        if not isinstance(v, Mapping):
            return None
        delay = v.get("delayMs")
        return cls(
            attempt=_i(v.get("attempt")),
            error=_s(v.get("error")),
            then=cast(FailedAttemptThen, _s(v.get("then")) or "none"),
            delay_ms=delay if isinstance(delay, int) and not isinstance(delay, bool) else None,
        )


@dataclass(slots=True, frozen=True)
class Compaction:
    """A compaction inside the turn (``compactions``): its ``reason`` (``"overflow"``: the
    context was too long for the model; ``"threshold"``, ``"manual"`` …) and its result:
    ``aborted``, ``will_retry`` (the agent retried the failed attempt after it) and
    ``error_message``; the result members are None while the compaction has not ended."""

    reason: str
    aborted: bool | None
    will_retry: bool | None
    error_message: str | None

    @classmethod
    def _from(cls, v: object) -> Compaction | None:
        if not isinstance(v, Mapping):
            return None
        aborted, will_retry = v.get("aborted"), v.get("willRetry")
        return cls(
            reason=_s(v.get("reason")) or "",
            aborted=aborted if isinstance(aborted, bool) else None,
            will_retry=will_retry if isinstance(will_retry, bool) else None,
            error_message=_s(v.get("errorMessage")),
        )


def parse_failed_attempts(v: object) -> tuple[FailedAttempt, ...]:
    """The typed records of a ``failedAttempts`` array (a turn's, a summary's)."""
    items = v if isinstance(v, list) else []
    return tuple(f for f in map(FailedAttempt._from, items) if f is not None)


def parse_compactions(v: object) -> tuple[Compaction, ...]:
    """The typed records of a ``compactions`` array (a turn's, a summary's)."""
    items = v if isinstance(v, list) else []
    return tuple(c for c in map(Compaction._from, items) if c is not None)


@dataclass(slots=True, frozen=True)
class TurnSummary:
    """What most hosts want from a turn without interpreting every event. ``raw`` is the
    library's JSON object, as a dict."""

    complete: bool
    text: str
    final_text: str | None
    reasoning: str
    chunks: tuple[SummaryChunk, ...]
    tool_calls: tuple[SummaryToolCall, ...]
    stop_reason: str | None
    stop_reasons: tuple[SummaryStop, ...]
    usage: SummaryUsage | None
    message_usage: tuple[SummaryUsage, ...]
    raw: JsonObject
    #: The attempts the agent made at the prompt: 1, plus one per retry and per overflow
    #: compaction it retried after (0: nothing ran).
    attempts: int = 0
    #: The attempts that failed, oldest first.
    failed_attempts: tuple[FailedAttempt, ...] = ()
    #: The compactions inside the turn, oldest first.
    compactions: tuple[Compaction, ...] = ()


def parse_turn_summary(data: Mapping[str, Any]) -> TurnSummary:
    """The typed view of a summary object (``{"complete","text","finalText",…}``)."""

    def items(key: str) -> list[Any]:
        v = data.get(key)
        return v if isinstance(v, list) else []

    chunks = tuple(
        SummaryChunk(kind="reasoning" if c.get("kind") == "reasoning" else "text", text=_s(c.get("text")) or "")
        for c in items("chunks") if isinstance(c, Mapping)
    )
    tools = tuple(
        SummaryToolCall(
            tool_call_id=_s(t.get("toolCallId")) or "",
            tool_name=_s(t.get("toolName")) or "",
            args=t.get("args"),
            outcome=_s(t.get("outcome")) or "pending",
            result=t.get("result"),
            reason=_s(t.get("reason")),
            parent_tool_call_id=_s(t.get("parentToolCallId")),
            children=tuple(c for c in (t.get("children") or ()) if isinstance(c, str)),
        )
        for t in items("toolCalls") if isinstance(t, Mapping)
    )
    stops = tuple(
        SummaryStop(reason=_s(s.get("reason")) or "", error_message=_s(s.get("errorMessage")))
        for s in items("stopReasons") if isinstance(s, Mapping)
    )
    usage_list = tuple(u for u in (SummaryUsage._from(u) for u in items("messageUsage")) if u is not None)
    return TurnSummary(
        complete=data.get("complete") is True,
        text=_s(data.get("text")) or "",
        final_text=_s(data.get("finalText")),
        reasoning=_s(data.get("reasoning")) or "",
        chunks=chunks,
        tool_calls=tools,
        stop_reason=_s(data.get("stopReason")),
        stop_reasons=stops,
        usage=SummaryUsage._from(data.get("usage")),
        message_usage=usage_list,
        raw=dict(data),
        attempts=_i(data.get("attempts")),
        failed_attempts=parse_failed_attempts(data.get("failedAttempts")),
        compactions=parse_compactions(data.get("compactions")),
    )


def _options(model: str | None) -> bytes | None:
    if model is None:
        return None
    if not isinstance(model, str):
        raise TypeError("model must be a string or None")
    return _ffi.dumps({"model": model})


def _payload(event: Any) -> Any:
    """A raw event for the library: a mapping as is, a typed event by its payload."""
    if isinstance(event, Mapping):
        return event
    raw = getattr(event, "_omprpc_raw_payload", None)
    if raw is not None:
        return raw()
    payload = getattr(event, "payload", None)
    if isinstance(payload, Mapping):
        return payload
    raise TypeError(
        f"cannot summarize {type(event).__name__}: pass the raw events (PromptTurn.event_payloads, "
        "or the turn itself)"
    )


def summarize(events: PromptTurn | Iterable[Any] | bytes | str, *, model: str | None = None) -> TurnSummary:
    """The summary of a turn's raw events: a :class:`~omprpc.PromptTurn` (its events are read
    from the library's text, never decoded into Python objects), an iterable of raw event
    dicts (``turn.event_payloads``, listener payloads), or the JSON text of an array of them.
    ``model`` is the configured model, named in usage whose message names none."""
    from .client import PromptTurn  # a cycle: client imports this module

    if isinstance(events, PromptTurn):
        data = events._events_json()
    elif isinstance(events, str):
        data = _ffi.encode(events, "events")
    elif isinstance(events, (bytes, bytearray, memoryview)):
        data = bytes(events)
        if b"\x00" in data:
            raise ValueError("events must not contain NUL bytes")
    else:
        data = _ffi.dumps([_payload(e) for e in events])
    raw = _ffi.call_static(lib.omprpc_summarize, data, _options(model))
    parsed = json.loads(raw)
    return parse_turn_summary(parsed if isinstance(parsed, dict) else {})


class Summarizer:
    """A streaming turn summarizer (``omprpc_summarizer_*``). Feed raw events in order with
    :meth:`feed`, which returns the derived items each produces (dicts: ``{"kind": "text"|
    "reasoning_start"|"reasoning"|"tool_start"|"tool_update"|"tool_end"|"message_end"|"stop"|
    "turn_end"|"retry"|"retry_end"|"compaction"|"settled", …}``; the tool items'
    ``parentToolCallId`` names the call that made theirs, None for a call of the model);
    :meth:`summary` is the summary so far. Thread-safe; release it with
    :meth:`close` (or a ``with`` block; the garbage collector does it too)."""

    def __init__(self, *, model: str | None = None) -> None:
        out, err = c_void_p(), c_void_p()
        status = lib.omprpc_summarizer_new(_options(model), ctypes.byref(out), ctypes.byref(err))
        if status != _ffi.OK:
            raise _ffi.error_from(status, _ffi.take(err))
        self._ptr: int | None = out.value
        self._lock = threading.Lock()

    def _call(self, fn: Any, *args: Any) -> bytes:
        with self._lock:  # free must never overlap a call
            if self._ptr is None:
                raise ValueError("the summarizer is closed")
            return _ffi.call_static(fn, self._ptr, *args)

    def feed(self, event: Any) -> list[JsonObject]:
        """Feeds one raw event (a dict, or a typed event that carries its payload); returns
        the derived items it produced (often none)."""
        if isinstance(event, str):
            data = _ffi.encode(event, "event")
        elif isinstance(event, bytes):
            if b"\x00" in event:
                raise ValueError("event must not contain NUL bytes")
            data = event
        else:
            data = _ffi.dumps(_payload(event))
        items = json.loads(self._call(lib.omprpc_summarizer_feed, data))
        return items if isinstance(items, list) else []

    def summary(self) -> TurnSummary:
        """The summary of everything fed so far."""
        parsed = json.loads(self._call(lib.omprpc_summarizer_summary))
        return parse_turn_summary(parsed if isinstance(parsed, dict) else {})

    def close(self) -> None:
        with self._lock:
            ptr, self._ptr = self._ptr, None
        if ptr is not None:
            lib.omprpc_summarizer_free(ptr)

    def __enter__(self) -> Summarizer:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass
