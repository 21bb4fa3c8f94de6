"""A completed prompt, :class:`PromptTurn`: built from the library's ``omprpc_turn`` (its
metadata and its events as views) without decoding its events until they are used. And
``client._prompt_lifecycle`` (the running collector)."""

from __future__ import annotations

import ctypes
import threading
import weakref
from typing import TYPE_CHECKING, Any, Literal, Sequence, cast

from . import _ffi, _lazy
from ._common import _typed_bulk
from ._ffi import lib
from .errors import RpcError
from .protocol import AgentMessage, AssistantMessage, JsonObject, RpcNotification
from .summary import (
    Compaction,
    FailedAttempt,
    TurnSummary,
    parse_compactions,
    parse_failed_attempts,
    parse_turn_summary,
)

if TYPE_CHECKING:
    from .client import RpcClient

#: How a prompt completed (``omprpc_turn_outcome``, the turn JSON's ``outcome``; the library
#: decides): ``"agent_end"`` (the last run's terminal ``agent_end``, from an agent that does not
#: announce settling: omp, pi before 0.80.4), ``"agent_settled"`` (the agent said it settled, pi
#: 0.80.4 on), ``"aborted"`` (``agent_settled {aborted:true}``, a retry aborted in its delay, or
#: a last run that stopped ``aborted``), ``"prompt_result"`` (omp's ``prompt_result``: a
#: command that ran no agent loop) or ``"not_invoked"`` (nothing ran).
TurnOutcome = Literal["agent_end", "agent_settled", "aborted", "prompt_result", "not_invoked"]
_OUTCOMES: dict[int, TurnOutcome] = {
    _ffi.TURN_OUTCOME_AGENT_END: "agent_end",
    _ffi.TURN_OUTCOME_PROMPT_RESULT: "prompt_result",
    _ffi.TURN_OUTCOME_NOT_INVOKED: "not_invoked",
    _ffi.TURN_OUTCOME_AGENT_SETTLED: "agent_settled",
    _ffi.TURN_OUTCOME_ABORTED: "aborted",
}
_OUTCOME_NAMES: frozenset[str] = frozenset(_OUTCOMES.values())


def turn_outcome(name: object, default: TurnOutcome) -> TurnOutcome:
    """A library outcome name (the turn JSON's, a ``prompt_complete`` event's) as a
    :data:`TurnOutcome`; ``default`` for anything else."""
    return cast(TurnOutcome, name) if isinstance(name, str) and name in _OUTCOME_NAMES else default


class _TurnEvents:
    """A turn's events, still in the library's ``omprpc_turn`` (freed with the last object
    that needs it: the turn, or its lazy events); their views are read on first use."""

    __slots__ = ("_owner", "_region", "_src", "_types", "_lock")

    def __init__(self, owner: _ffi.Owned, region: tuple[int, int]):
        self._owner = owner
        self._region = region
        self._src: _lazy.EventSource | None = None
        self._types: tuple[_ffi.Columns, _ffi.Columns] | None = None
        self._lock = threading.Lock()

    def source(self) -> _lazy.EventSource:
        with self._lock:
            if self._src is None:
                tptrs, tlens, ptrs, lens = _ffi.view_columns(lib.omprpc_turn_events, self._owner.ptr)
                self._src = _lazy.EventSource(self._owner, ptrs, lens, self._region)
                self._types = (tptrs, tlens)
            return self._src

    def json(self) -> bytes:
        return self.source().array_json()

    def payloads(self) -> list[Any]:
        return self.source().all()

    def lazy(self) -> tuple[RpcNotification, ...]:
        src = self.source()
        types = self._types
        assert types is not None
        self._types = None
        return _lazy.lazy_events(src, *types)


class PromptTurn:
    """One completed prompt: its events, the final messages, the assistant message and text.

    ``events`` (typed notifications) and ``event_payloads`` (the frames as dicts) are decoded
    on first access; until then the turn holds the library's JSON text only. Read-only.
    """

    __slots__ = ("_raw", "_payloads", "_events", "_lock", "_messages", "_assistant_message",
                 "_assistant_text", "_request_id", "_agent_invoked", "_prompt_result", "_summary",
                 "_outcome", "_stop_reason", "_error_message", "_usage", "_attempts", "_settled",
                 "_failed_attempts", "_compactions")
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
        self._raw: _TurnEvents | None = None
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
        self._outcome: TurnOutcome = "agent_end" if agent_invoked else "not_invoked"
        if prompt_result is not None:
            self._outcome = "prompt_result"
        self._stop_reason: str | None = None
        self._error_message: str | None = None
        self._usage: JsonObject | None = None
        # The record of the attempts (the library's; a turn built here: one attempt if it ran).
        self._attempts = 1 if agent_invoked and prompt_result is None else 0
        self._settled = False
        self._failed_attempts: tuple[FailedAttempt, ...] = ()
        self._compactions: tuple[Compaction, ...] = ()
        if assistant_message is not None:
            self._stop_reason = _str_or_none(assistant_message.get("stopReason"))
            self._error_message = _str_or_none(assistant_message.get("errorMessage"))
            usage: Any = assistant_message.get("usage")
            self._usage = usage if isinstance(usage, dict) else None

    @classmethod
    def _from_turn(cls, turn: int) -> PromptTurn:
        """From an ``omprpc_turn`` (which it takes: freed with the turn, or its lazy events)."""
        owner = _ffi.Owned(turn, lib.omprpc_turn_free)
        info = _ffi.omprpc_turn_info()
        err = ctypes.c_void_p()
        status = lib.omprpc_turn_get_info(turn, ctypes.byref(info), ctypes.byref(err))
        if status != _ffi.OK:
            owner.release()
            raise _ffi.error_from(status, _ffi.take(err))
        messages = _ffi.json_of(info.messages_json)
        assistant = _ffi.json_of(info.assistant_message_json)
        prompt_result = _ffi.json_of(info.prompt_result_json)
        self = cls(
            (),
            tuple(messages) if isinstance(messages, list) else (),
            cast(AssistantMessage, assistant) if isinstance(assistant, dict) else None,
            _ffi.text(info.assistant_text),
            request_id=_ffi.text(info.request_id),
            agent_invoked=bool(info.agent_invoked),
            prompt_result=prompt_result if isinstance(prompt_result, dict) else None,
        )
        self._outcome = _OUTCOMES.get(info.outcome, self._outcome)
        self._stop_reason = _ffi.text(info.stop_reason)
        self._error_message = _ffi.text(info.error_message)
        usage = _ffi.json_of(info.usage_json)
        self._usage = usage if isinstance(usage, dict) else None
        summary = _ffi.json_of(info.summary_json)
        if isinstance(summary, dict):
            self._summary = parse_turn_summary(summary)
        self._attempts = int(info.attempts)
        self._settled = bool(info.settled)
        self._failed_attempts = parse_failed_attempts(_ffi.json_of(info.failed_attempts_json))
        self._compactions = parse_compactions(_ffi.json_of(info.compactions_json))
        self._events = None
        if info.event_count:
            self._raw = _TurnEvents(owner, (info.turn_json.data, info.turn_json.len))
        else:
            self._payloads = []
            owner.release()
        return self

    @classmethod
    def _from_json(cls, data: Any) -> PromptTurn:
        """From the turn JSON of ``omprpc_client_prompt_and_wait`` (an older library without
        ``omprpc_client_prompt_and_wait_turn``), decoded whole."""
        if not isinstance(data, dict):
            raise RpcError("the library returned a turn that is not a JSON object")
        messages, assistant = data.get("messages"), data.get("assistantMessage")
        text, prompt_result = data.get("assistantText"), data.get("promptResult")
        request_id = data.get("requestId")
        self = cls(
            (),
            tuple(messages) if isinstance(messages, list) else (),
            cast(AssistantMessage, assistant) if isinstance(assistant, dict) else None,
            text if isinstance(text, str) else None,
            request_id=request_id if isinstance(request_id, str) else None,
            agent_invoked=data.get("agentInvoked") is not False,
            prompt_result=prompt_result if isinstance(prompt_result, dict) else None,
        )
        events = data.get("events")
        self._events = None
        self._payloads = events if isinstance(events, list) else []
        summary = data.get("summary")
        if isinstance(summary, dict):
            self._summary = parse_turn_summary(summary)
        self._outcome = turn_outcome(data.get("outcome"), self._outcome)
        attempts = data.get("attempts")
        if isinstance(attempts, int) and not isinstance(attempts, bool):
            self._attempts = attempts
        self._settled = data.get("settled") is True
        self._failed_attempts = parse_failed_attempts(data.get("failedAttempts"))
        self._compactions = parse_compactions(data.get("compactions"))
        return self

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

        Built on first access, from the library's views of the events: each event is decoded
        only when one of its fields is first read (``type`` and ``isinstance`` cost nothing;
        see ``omprpc._lazy``)."""
        events = self._events
        if events is None:
            with self._lock:
                events = self._events
                if events is None and self._raw is not None and self._payloads is None:
                    events = self._events = self._raw.lazy()
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
        """Every run's messages, in order (a failed attempt's error message too, before the
        answer of its retry)."""
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

    @property
    def outcome(self) -> TurnOutcome:
        """How the prompt completed, as the library decided: ``"agent_end"`` (the last run's
        terminal ``agent_end``: an agent that does not announce settling — omp, pi before
        0.80.4), ``"agent_settled"`` (the agent said it settled: pi 0.80.4 on), ``"aborted"``
        (aborted: ``agent_settled {aborted:true}``, a retry the host aborted in its delay, or a
        last run that stopped ``aborted``), ``"prompt_result"`` (omp's ``prompt_result``
        answered it: a command that ran no agent loop) or ``"not_invoked"`` (nothing ran: the
        response said ``agentInvoked: false`` or ``disposition: "handled"``)."""
        return self._outcome

    @property
    def attempts(self) -> int:
        """How many attempts the agent made at the prompt: 1, plus one per retry it made
        (``auto_retry_start``) and per overflow compaction it retried after; 0 when nothing ran.
        Every attempt's run is in the turn (``events``, ``messages``)."""
        return self._attempts

    @property
    def settled(self) -> bool:
        """The agent said it settled (``agent_settled``: pi 0.80.4 on)."""
        return self._settled

    @property
    def failed_attempts(self) -> tuple[FailedAttempt, ...]:
        """The attempts that failed, oldest first: each one's error and what the agent did
        next (``then``: ``"retry"``, ``"compaction"``, ``"gave_up"``, ``"cancelled"``,
        ``"none"``), with the retry's delay. Empty when every attempt succeeded."""
        return self._failed_attempts

    @property
    def compactions(self) -> tuple[Compaction, ...]:
        """The compactions inside the turn (an overflow recovery's, a threshold's), oldest first."""
        return self._compactions

    @property
    def stop_reason(self) -> str | None:
        """The assistant message's ``stopReason`` (``"stop"``, ``"toolUse"``, ``"error"``,
        ``"aborted"`` …); None without one."""
        return self._stop_reason

    @property
    def error_message(self) -> str | None:
        """The assistant message's ``errorMessage`` (when it ended in an error); else None."""
        return self._error_message

    @property
    def usage(self) -> JsonObject | None:
        """The assistant message's ``usage`` object (the last LLM call's tokens and cost; the
        summed usage of the whole turn is ``summary.usage``); None without one."""
        return self._usage

    def require_assistant_text(self) -> str:
        if self._assistant_text is None:
            raise RpcError("Prompt completed without a text assistant message")
        return self._assistant_text

    def __repr__(self) -> str:
        return (f"PromptTurn(request_id={self._request_id!r}, outcome={self._outcome!r}, "
                f"attempts={self._attempts}, messages={len(self._messages)}, "
                f"assistant_text={self._assistant_text!r})")


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _event_payload(event: RpcNotification) -> JsonObject:
    raw = getattr(event, "_omprpc_raw_payload", None)
    if raw is not None:
        return cast(JsonObject, raw())
    return getattr(event, "payload", None) or {"type": event.type}


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
