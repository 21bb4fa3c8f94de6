"""Events reaching the host: the listener types, the listener registry the dispatcher runs
(copy-on-write lists; a listener's error is kept as a :class:`ListenerErrorEvent`), and
RpcClient's ``on_*`` registration methods (a mixin)."""

from __future__ import annotations

import threading
from collections import deque
from typing import Any, Callable, Optional, TypeVar, Union

from ._base import _ClientBase
from .errors import RpcProtocolError
from .protocol import (
    AgentEndEvent,
    AgentStartEvent,
    AutoCompactionEndEvent,
    AutoCompactionStartEvent,
    AutoRetryEndEvent,
    AutoRetryStartEvent,
    EventOverflow,
    ExtensionError,
    ExtensionUiRequest,
    JsonObject,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    PolicyEvalEvent,
    ReadyEvent,
    RetryFallbackAppliedEvent,
    RetryFallbackSucceededEvent,
    RpcAgentEvent,
    RpcNotification,
    TodoAutoClearEvent,
    TodoReminderEvent,
    ToolBlockedEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TtsrTriggeredEvent,
    TurnEndEvent,
    TurnStartEvent,
    UnknownNotification,
)

AgentEventListener = Callable[[RpcAgentEvent], None]
NotificationListener = Callable[[RpcNotification], None]
UiRequestListener = Callable[[ExtensionUiRequest], None]
ExtensionErrorListener = Callable[[ExtensionError], None]
ReadyListener = Callable[[ReadyEvent], None]
UnknownNotificationListener = Callable[[UnknownNotification], None]
EventOverflowListener = Callable[[EventOverflow], None]
ProtocolErrorListener = Callable[[RpcProtocolError], None]
ListenerErrorListener = Callable[["ListenerErrorEvent"], None]
PolicyEvalListener = Callable[[PolicyEvalEvent], None]
ToolBlockedListener = Callable[[ToolBlockedEvent], None]
#: What a policy handler returns: allow (True) or block (False), optionally with a reason.
PolicyVerdictValue = Union[bool, tuple[bool, Optional[str]]]
PolicyHandler = Callable[[PolicyEvalEvent], PolicyVerdictValue]
TListener = TypeVar("TListener", bound=Callable[..., None])

_ERROR_HISTORY_LIMIT = 128


class ListenerErrorEvent:
    """A listener raised: where (``listener_kind``, the frame type), which listener, what."""

    __slots__ = ("listener_kind", "source_type", "listener", "error")
    # Public as omprpc.client.ListenerErrorEvent, where it was defined before the split.
    __module__ = "omprpc.client"

    def __init__(self, listener_kind: str, source_type: str | None, listener: Callable[..., Any],
                 error: BaseException):
        self.listener_kind = listener_kind
        self.source_type = source_type
        self.listener = listener
        self.error = error

    def __repr__(self) -> str:
        return (f"ListenerErrorEvent(listener_kind={self.listener_kind!r}, "
                f"source_type={self.source_type!r}, error={self.error!r})")


class _Entry:
    __slots__ = ("fn",)

    def __init__(self, fn: Callable[..., Any]):
        self.fn = fn


class _Listeners:
    """Listener lists, copy-on-write (the dispatcher iterates without locking)."""

    KINDS = ("notification", "event", "ready", "ui_request", "extension_error",
             "unknown_notification", "protocol_error", "listener_error", "event_overflow",
             "policy_eval", "tool_blocked", "payload", "frame")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.lists: dict[str, tuple[_Entry, ...]] = {k: () for k in self.KINDS}
        self.typed: dict[str, tuple[_Entry, ...]] = {}
        self.count = 0
        self.errors: deque[ListenerErrorEvent] = deque(maxlen=_ERROR_HISTORY_LIMIT)
        #: Called (under the lock, so in order) with True when the first ``frame`` listener is
        #: added and False when the last one goes: the client switches the library's raw-frame
        #: tap, which otherwise wakes the dispatcher for every response (half a get_state).
        self.frame_tap: Callable[[bool], None] | None = None

    def add(self, kind: str, fn: Callable[..., Any], typed: bool = False) -> Callable[[], None]:
        if not callable(fn):
            raise TypeError("a listener must be callable")
        entry = _Entry(fn)
        table = self.typed if typed else self.lists
        with self._lock:
            table[kind] = table.get(kind, ()) + (entry,)
            self.count += 1
            if kind == "frame" and not typed and len(table[kind]) == 1 and self.frame_tap is not None:
                self.frame_tap(True)

        def unsubscribe() -> None:
            with self._lock:
                current = table.get(kind, ())
                if entry in current:
                    table[kind] = tuple(e for e in current if e is not entry)
                    self.count -= 1
                    if kind == "frame" and not typed and not table[kind] and self.frame_tap is not None:
                        self.frame_tap(False)

        return unsubscribe

    def frames_wanted(self, tap: Callable[[bool], None] | None = None) -> bool:
        """Whether a ``frame`` listener is registered; with ``tap``, also tells it (in order
        with the listeners' own calls of it)."""
        with self._lock:
            wanted = bool(self.lists["frame"])
            if tap is not None:
                tap(wanted)
            return wanted

    def record_error(self, event: ListenerErrorEvent) -> None:
        with self._lock:
            self.errors.append(event)
        for entry in self.lists["listener_error"]:
            try:
                entry.fn(event)
            except Exception:
                continue

    def run(self, kind: str, source_type: str | None, entries: tuple[_Entry, ...], payload: Any) -> None:
        for entry in entries:
            try:
                entry.fn(payload)
            except Exception as exc:
                self.record_error(ListenerErrorEvent(kind, source_type, entry.fn, exc))


class _EventListeners(_ClientBase):
    """RpcClient's listener registration: ``on_event`` … ``on_todo_auto_clear``."""

    def on_event(self, listener: AgentEventListener) -> Callable[[], None]:
        return self._listeners.add("event", listener)

    def on_notification(self, listener: NotificationListener) -> Callable[[], None]:
        return self._listeners.add("notification", listener)

    def on_ready(self, listener: ReadyListener) -> Callable[[], None]:
        return self._listeners.add("ready", listener)

    def on_ui_request(self, listener: UiRequestListener) -> Callable[[], None]:
        return self._listeners.add("ui_request", listener)

    def on_extension_error(self, listener: ExtensionErrorListener) -> Callable[[], None]:
        return self._listeners.add("extension_error", listener)

    def on_protocol_error(self, listener: ProtocolErrorListener) -> Callable[[], None]:
        return self._listeners.add("protocol_error", listener)

    def on_listener_error(self, listener: ListenerErrorListener) -> Callable[[], None]:
        return self._listeners.add("listener_error", listener)

    def on_unknown_notification(self, listener: UnknownNotificationListener) -> Callable[[], None]:
        return self._listeners.add("unknown_notification", listener)

    def on_event_overflow(self, listener: EventOverflowListener) -> Callable[[], None]:
        """omprpc only: the event queue overflowed and listeners missed ``dropped`` events."""
        return self._listeners.add("event_overflow", listener)

    def on_policy_eval(self, listener: PolicyEvalListener) -> Callable[[], None]:
        """omprpc only: the tool policy gate (``tool_policy`` mode "host") asks whether the agent
        may run one of its tools; answer with :meth:`policy_verdict` (a ``policy_handler``
        answers by itself). Runs on the dispatcher thread: answer quickly or hand it off."""
        return self._listeners.add("policy_eval", listener)

    def on_event_payload(self, listener: Callable[[JsonObject], None]) -> Callable[[], None]:
        """omprpc only: every frame from the agent (and the library's own notices) as the dict
        it was sent as, before the typed listeners; e.g. to feed a :class:`omprpc.Summarizer`.
        Do not modify the dict: the typed listeners read it next."""
        return self._listeners.add("payload", listener)

    def on_frame(self, listener: Callable[[JsonObject], None]) -> Callable[[], None]:
        """Every frame the agent sends — responses, events, ``ready``, host calls — as the dict
        it was decoded to, in the agent's order, before any other listener sees it (a response
        before the call it answers returns). Not the library's own notices, not what is sent
        to the agent. The same dict is then routed: do not modify it."""
        return self._listeners.add("frame", listener)

    def on_tool_blocked(self, listener: ToolBlockedListener) -> Callable[[], None]:
        """omprpc only: the tool policy gate blocked one of the agent's tool calls."""
        return self._listeners.add("tool_blocked", listener)

    def _typed(self, kind: str, listener: Callable[..., None]) -> Callable[[], None]:
        return self._listeners.add(kind, listener, typed=True)

    def on_agent_start(self, listener: Callable[[AgentStartEvent], None]) -> Callable[[], None]:
        return self._typed("agent_start", listener)

    def on_agent_end(self, listener: Callable[[AgentEndEvent], None]) -> Callable[[], None]:
        return self._typed("agent_end", listener)

    def on_turn_start(self, listener: Callable[[TurnStartEvent], None]) -> Callable[[], None]:
        return self._typed("turn_start", listener)

    def on_turn_end(self, listener: Callable[[TurnEndEvent], None]) -> Callable[[], None]:
        return self._typed("turn_end", listener)

    def on_message_start(self, listener: Callable[[MessageStartEvent], None]) -> Callable[[], None]:
        return self._typed("message_start", listener)

    def on_message_update(self, listener: Callable[[MessageUpdateEvent], None]) -> Callable[[], None]:
        return self._typed("message_update", listener)

    def on_message_end(self, listener: Callable[[MessageEndEvent], None]) -> Callable[[], None]:
        return self._typed("message_end", listener)

    def on_tool_execution_start(self, listener: Callable[[ToolExecutionStartEvent], None]) -> Callable[[], None]:
        return self._typed("tool_execution_start", listener)

    def on_tool_execution_update(self, listener: Callable[[ToolExecutionUpdateEvent], None]) -> Callable[[], None]:
        return self._typed("tool_execution_update", listener)

    def on_tool_execution_end(self, listener: Callable[[ToolExecutionEndEvent], None]) -> Callable[[], None]:
        return self._typed("tool_execution_end", listener)

    def on_auto_compaction_start(self, listener: Callable[[AutoCompactionStartEvent], None]) -> Callable[[], None]:
        return self._typed("auto_compaction_start", listener)

    def on_auto_compaction_end(self, listener: Callable[[AutoCompactionEndEvent], None]) -> Callable[[], None]:
        return self._typed("auto_compaction_end", listener)

    def on_auto_retry_start(self, listener: Callable[[AutoRetryStartEvent], None]) -> Callable[[], None]:
        return self._typed("auto_retry_start", listener)

    def on_auto_retry_end(self, listener: Callable[[AutoRetryEndEvent], None]) -> Callable[[], None]:
        return self._typed("auto_retry_end", listener)

    def on_retry_fallback_applied(self, listener: Callable[[RetryFallbackAppliedEvent], None]) -> Callable[[], None]:
        return self._typed("retry_fallback_applied", listener)

    def on_retry_fallback_succeeded(
        self, listener: Callable[[RetryFallbackSucceededEvent], None]
    ) -> Callable[[], None]:
        return self._typed("retry_fallback_succeeded", listener)

    def on_ttsr_triggered(self, listener: Callable[[TtsrTriggeredEvent], None]) -> Callable[[], None]:
        return self._typed("ttsr_triggered", listener)

    def on_todo_reminder(self, listener: Callable[[TodoReminderEvent], None]) -> Callable[[], None]:
        return self._typed("todo_reminder", listener)

    def on_todo_auto_clear(self, listener: Callable[[TodoAutoClearEvent], None]) -> Callable[[], None]:
        return self._typed("todo_auto_clear", listener)
