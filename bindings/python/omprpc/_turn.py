"""A completed prompt, :class:`PromptTurn`: read from the library's turn JSON without decoding
its events until they are used. And ``client._prompt_lifecycle`` (the running collector)."""

from __future__ import annotations

import json
import threading
import weakref
from typing import TYPE_CHECKING, Any, Mapping, Sequence, cast

from . import _ffi, _lazy
from ._common import _loads_bulk, _typed_bulk
from .errors import RpcError
from .protocol import AgentMessage, AssistantMessage, JsonObject, RpcNotification
from .summary import TurnSummary, parse_turn_summary

if TYPE_CHECKING:
    from .client import RpcClient

_TURN_PREFIX = b'{"events":['
_TURN_TAIL_MARK = b'],"requestId":'


class _RawEvents:
    """The events part of a turn (a JSON array), still in the library's buffer; decoded on
    first use. The buffer is freed with the last object that needs it (the turn, or its lazy
    events)."""

    __slots__ = ("_owner", "_start", "_end")

    def __init__(self, owner: _ffi.OwnedString, start: int, end: int):
        self._owner = owner
        self._start = start
        self._end = end

    def json(self) -> bytes:
        return self._owner.slice(self._start, self._end)

    def payloads(self) -> list[Any]:
        result = _loads_bulk(self.json())
        return result if isinstance(result, list) else []

    def lazy(self) -> tuple[RpcNotification, ...] | None:
        return _lazy.lazy_events(self._owner, self._start, self._end)


class PromptTurn:
    """One completed prompt: its events, the final messages, the assistant message and text.

    ``events`` (typed notifications) and ``event_payloads`` (the frames as dicts) are decoded
    on first access; until then the turn holds the library's JSON text only. Read-only.
    """

    __slots__ = ("_raw", "_payloads", "_events", "_lock", "_messages", "_assistant_message",
                 "_assistant_text", "_request_id", "_agent_invoked", "_prompt_result", "_summary")
    # Public as omprpc.client.PromptTurn, where it was defined before the split.
    __module__ = "omprpc.client"

    def __init__(
        self,
        events: Sequence[RpcNotification] = (),
        messages: Sequence[AgentMessage] = (),
        assistant_message: AssistantMessage | None = None,
        assistant_text: str | None = None,
        *,
        request_id: str | None = None,
        agent_invoked: bool = True,
        prompt_result: JsonObject | None = None,
    ):
        self._raw: _RawEvents | None = None
        self._payloads: list[Any] | None = None
        self._events: tuple[RpcNotification, ...] | None = tuple(events)
        self._lock = threading.Lock()
        self._messages = tuple(messages)
        self._assistant_message = assistant_message
        self._assistant_text = assistant_text
        self._request_id = request_id
        self._agent_invoked = agent_invoked
        self._prompt_result = prompt_result
        self._summary: TurnSummary | None = None

    @classmethod
    def _from_turn(cls, tail: Mapping[str, Any], raw: _RawEvents | None,
                   payloads: list[Any] | None) -> PromptTurn:
        messages = tail.get("messages")
        assistant = tail.get("assistantMessage")
        text = tail.get("assistantText")
        prompt_result = tail.get("promptResult")
        turn = cls(
            (),
            tuple(messages) if isinstance(messages, list) else (),
            cast(AssistantMessage, assistant) if isinstance(assistant, dict) else None,
            text if isinstance(text, str) else None,
            request_id=tail.get("requestId") if isinstance(tail.get("requestId"), str) else None,
            agent_invoked=tail.get("agentInvoked") is not False,
            prompt_result=prompt_result if isinstance(prompt_result, dict) else None,
        )
        turn._events = None
        turn._raw = raw
        turn._payloads = payloads
        summary = tail.get("summary")
        if isinstance(summary, dict):
            turn._summary = parse_turn_summary(summary)
        return turn

    def _load_payloads(self) -> list[Any]:
        with self._lock:
            if self._payloads is None:
                if self._raw is not None:
                    self._payloads = self._raw.payloads()
                    if self._events is not None:
                        self._raw = None  # nothing needs the buffer any more
                else:
                    self._payloads = []
            return self._payloads

    @property
    def events(self) -> tuple[RpcNotification, ...]:
        """Every session event of the turn, typed (unknown frames as UnknownNotification).

        Built on first access. With a library that writes a turn's events one per line, each
        event is decoded only when one of its fields is first read (``type`` and
        ``isinstance`` cost nothing; see ``omprpc._lazy``); otherwise all are decoded then."""
        events = self._events
        if events is None:
            with self._lock:
                events = self._events
                if events is None and self._raw is not None and self._payloads is None:
                    events = self._raw.lazy()
                    if events is not None:
                        self._events = events
            if events is None:
                events = _typed_bulk(self._load_payloads())
                with self._lock:
                    self._events = events
                    self._raw = None
        return events

    @property
    def event_payloads(self) -> tuple[JsonObject, ...]:
        """The turn's events as the agent sent them (dicts), without typed objects."""
        if self._events is not None and self._payloads is None and self._raw is None:
            return tuple(_event_payload(e) for e in self._events)
        return tuple(self._load_payloads())

    def _events_json(self) -> bytes:
        """The events as a JSON array, for the library (omprpc.summarize): the library's own
        text when the turn still holds it."""
        raw = self._raw
        if raw is not None:
            return raw.json()
        payloads = self._payloads
        if payloads is None:
            payloads = list(self.event_payloads)
        return _ffi.dumps(payloads)

    @property
    def summary(self) -> TurnSummary | None:
        """The turn summary (text, reasoning, tool calls and their outcomes, stop reasons,
        usage), computed by the library, when the client was started with
        ``turn_summary=True``; None otherwise (``omprpc.summarize(turn)`` computes one)."""
        return self._summary

    @property
    def messages(self) -> tuple[AgentMessage, ...]:
        return self._messages

    @property
    def assistant_message(self) -> AssistantMessage | None:
        return self._assistant_message

    @property
    def assistant_text(self) -> str | None:
        return self._assistant_text

    @property
    def request_id(self) -> str | None:
        return self._request_id

    @property
    def agent_invoked(self) -> bool:
        """False when the prompt completed without an agent run (slash command, …)."""
        return self._agent_invoked

    @property
    def prompt_result(self) -> JsonObject | None:
        """The ``prompt_result`` frame that completed the prompt, when that is what did."""
        return self._prompt_result

    def require_assistant_text(self) -> str:
        if self._assistant_text is None:
            raise RpcError("Prompt completed without a text assistant message")
        return self._assistant_text

    def __repr__(self) -> str:
        return (f"PromptTurn(request_id={self._request_id!r}, messages={len(self._messages)}, "
                f"assistant_text={self._assistant_text!r})")


def _event_payload(event: RpcNotification) -> JsonObject:
    raw = getattr(event, "_omprpc_raw_payload", None)
    if raw is not None:
        return cast(JsonObject, raw())
    return getattr(event, "payload", None) or {"type": event.type}


def _parse_turn(owned: _ffi.OwnedString) -> PromptTurn:
    """Reads the turn JSON ``{"events":[…],"requestId":…,…}`` without decoding the events:
    the members after ``events`` are located from the end and decoded on their own."""
    size = owned.size
    if size > len(_TURN_PREFIX) and owned.slice(0, len(_TURN_PREFIX)) == _TURN_PREFIX:
        window = 1 << 16
        while True:
            start = max(0, size - window)
            chunk = owned.slice(start, size)
            pos = len(chunk)
            while True:
                pos = chunk.rfind(_TURN_TAIL_MARK, 0, pos)
                if pos < 0:
                    break
                try:
                    tail = json.loads(b"{" + chunk[pos + 2:])
                except ValueError:
                    continue
                if isinstance(tail, dict) and "requestId" in tail and "messages" in tail:
                    raw = _RawEvents(owned, len(_TURN_PREFIX) - 1, start + pos + 1)
                    return PromptTurn._from_turn(tail, raw, None)
            if start == 0:
                break
            window *= 8
    data = json.loads(owned.slice(0, size))
    owned.release()
    if not isinstance(data, dict):
        raise RpcError("the library returned a turn that is not a JSON object")
    events = data.get("events")
    return PromptTurn._from_turn(data, None, events if isinstance(events, list) else [])


class _PromptLifecycle:
    """``client._prompt_lifecycle.active_operation``: the running collector, from the library."""

    def __init__(self, client: RpcClient):
        self._client = weakref.ref(client)

    @property
    def active_operation(self) -> str | None:
        client = self._client()
        session = client._session if client is not None else None
        if session is None:
            return None
        try:
            info = session.info()
        except RpcError:
            return None
        op = info.get("activeOperation")
        return op if isinstance(op, str) else None
