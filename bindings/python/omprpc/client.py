"""``RpcClient``: the ``omp_rpc`` client API over the omprpc C ABI.

Threads per started client:

* the caller's threads, each blocking inside the library (the GIL is released) for requests,
  prompts and waits;
* one **dispatcher** thread (``omprpc-dispatch``) that polls the library's event queue in
  batches and runs every listener, in order; it never writes to the agent except for host
  replies it hands to the workers;
* a bounded pool of **host workers** (``omprpc-host``, ``max_host_workers``, default 8) that run
  host tools and host URI handlers.

The protocol itself (framing, correlation, turn assembly, argv, UI policy, host call checks)
lives in the library; this module converts JSON to Python objects.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import re
import select
import threading
import time
import weakref
from collections import deque
from pathlib import Path
from typing import Any, Callable, Literal, Mapping, Optional, Sequence, TypeVar, Union, cast

from . import _ffi, _lazy
from ._ffi import lib
from .errors import (
    RpcCommandError,
    RpcError,
    RpcProcessExitError,
    RpcProtocolError,
    RpcTimeoutError,
)
from .host_tools import HostTool, HostToolContext, normalize_result
from .helpers import prompt_from_content
from .host_uris import HostUri, HostUriContext, normalize_read_result
from .protocol import (
    AGENT_EVENT_TYPES,
    TODO_STATUSES,
    AgentEndEvent,
    AgentMessage,
    AgentStartEvent,
    AssistantMessage,
    AutoCompactionEndEvent,
    AutoCompactionStartEvent,
    AutoRetryEndEvent,
    AutoRetryStartEvent,
    BashResult,
    BranchMessage,
    BranchResult,
    CancellationResult,
    CompactionResult,
    EventOverflow,
    ExtensionError,
    ExtensionUiRequest,
    FastModeResult,
    ImageContent,
    InterruptMode,
    JsonObject,
    JsonValue,
    MessageEndEvent,
    MessagesPage,
    MessageStartEvent,
    MessageUpdateEvent,
    ModelCycleResult,
    ModelInfo,
    PolicyEvalEvent,
    ReadyEvent,
    RetryFallbackAppliedEvent,
    RetryFallbackSucceededEvent,
    RpcAgentEvent,
    RpcNotification,
    SessionState,
    SessionStats,
    SteeringMode,
    StreamingBehavior,
    ThinkingLevel,
    ThinkingLevelCycleResult,
    TodoAutoClearEvent,
    TodoItem,
    TodoPhase,
    TodoReminderEvent,
    ToolBlockedEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TtsrTriggeredEvent,
    TurnEndEvent,
    TurnStartEvent,
    UnknownNotification,
    parse_agent_messages,
    parse_bash_result,
    parse_branch_messages,
    parse_branch_result,
    parse_cancellation_result,
    parse_compaction_result,
    parse_extension_ui_request,
    parse_fast_mode_result,
    parse_model_cycle_result,
    parse_model_info,
    parse_session_state,
    parse_session_stats,
    parse_thinking_level_cycle_result,
    parse_todo_phases,
    to_notification,
)
from .summary import TurnSummary, parse_turn_summary
# Defined in this module before; imported back from their new modules (the "as" form marks
# them as re-exported for type checkers).
from ._common import LIBRARY_DEFAULT as LIBRARY_DEFAULT
from ._common import _LOG_LEVELS as _LOG_LEVELS
from ._common import _interruptible as _interruptible
from ._common import _LibraryDefault as _LibraryDefault
from ._common import _loads as _loads
from ._common import _loads_bulk as _loads_bulk
from ._common import _ms as _ms
from ._common import _request_ms as _request_ms
from ._common import _typed_bulk as _typed_bulk
from ._todos import TodoPhaseSeed as TodoPhaseSeed
from ._todos import TodoSeed as TodoSeed
from ._todos import _normalize_todo_phases as _normalize_todo_phases
from ._turn import _TURN_PREFIX as _TURN_PREFIX
from ._turn import _TURN_TAIL_MARK as _TURN_TAIL_MARK
from ._turn import PromptTurn as PromptTurn
from ._turn import _event_payload as _event_payload
from ._turn import _parse_turn as _parse_turn
from ._turn import _PromptLifecycle as _PromptLifecycle
from ._turn import _RawEvents as _RawEvents

__all__ = [
    "RpcClient",
    "PromptTurn",
    "ListenerErrorEvent",
    "AgentEventListener",
    "NotificationListener",
    "UiRequestListener",
    "ExtensionErrorListener",
    "ReadyListener",
    "UnknownNotificationListener",
    "ProtocolErrorListener",
    "ListenerErrorListener",
    "PolicyEvalListener",
    "ToolBlockedListener",
    "PolicyHandler",
    "PolicyVerdictValue",
]

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
_T = TypeVar("_T")

_ERROR_HISTORY_LIMIT = 128
_BATCH_MAX_EVENTS = 4096
_MESSAGES_PAGE_FALLBACK_CODES = frozenset({"session_busy", "stale_cursor"})
_MESSAGES_PAGE_FALLBACK_ERRORS = frozenset(
    {"Cannot page messages while the session is changing", "RPC message cursor is stale"}
)
_HOST_FRAME_MARK = b'"host_'
# Frames the session handles itself even when nobody listens: host calls and their
# cancellations, policy questions. A superset (any frame mentioning them) is fine.
_HOST_MARK_RE = re.compile(rb'"host_')
_POLICY_MARK_RE = re.compile(rb'"policy_eval"')


# --- listeners --------------------------------------------------------------------------------


class ListenerErrorEvent:
    """A listener raised: where (``listener_kind``, the frame type), which listener, what."""

    __slots__ = ("listener_kind", "source_type", "listener", "error")

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

    def add(self, kind: str, fn: Callable[..., Any], typed: bool = False) -> Callable[[], None]:
        if not callable(fn):
            raise TypeError("a listener must be callable")
        entry = _Entry(fn)
        table = self.typed if typed else self.lists
        with self._lock:
            table[kind] = table.get(kind, ()) + (entry,)
            self.count += 1

        def unsubscribe() -> None:
            with self._lock:
                current = table.get(kind, ())
                if entry in current:
                    table[kind] = tuple(e for e in current if e is not entry)
                    self.count -= 1

        return unsubscribe

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


# --- the host worker pool ------------------------------------------------------------------


class _WorkerPool:
    """At most ``max_workers`` daemon threads, started on demand (daemon: a host tool that
    never returns cannot hold up interpreter exit)."""

    def __init__(self, max_workers: int, name: str):
        self._max = max(1, max_workers)
        self._name = name
        self._queue: queue.SimpleQueue[tuple[Callable[..., None], tuple[Any, ...]] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._closed = False

    def submit(self, fn: Callable[..., None], *args: Any) -> bool:
        with self._lock:
            if self._closed:
                return False
            self._queue.put((fn, args))
            if len(self._threads) < self._max and self._idle < self._queue.qsize():
                t = threading.Thread(target=self._work, name=f"{self._name}-{len(self._threads) + 1}",
                                     daemon=True)
                self._threads.append(t)
                t.start()
        return True

    def _work(self) -> None:
        while True:
            with self._lock:
                self._idle += 1
            item = self._queue.get()
            with self._lock:
                self._idle -= 1
            if item is None:
                return
            fn, args = item
            try:
                fn(*args)
            except BaseException:  # pragma: no cover - the jobs catch their own errors
                pass

    def shutdown(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for _ in self._threads:
                self._queue.put(None)


# --- one started client ----------------------------------------------------------------------


class _Session:
    """Everything that lives from start() to stop(): the handle, the dispatcher, the workers."""

    def __init__(self, ptr: int, listeners: _Listeners, tools: Sequence[HostTool[Any, Any]],
                 uris: Sequence[HostUri[Any]], max_workers: int, listener_sync_timeout: float,
                 stop_join_timeout: float, policy_handler: PolicyHandler | None = None):
        self.handle = _ffi.Handle(ptr)
        self.listeners = listeners
        self.tools: dict[str, HostTool[Any, Any]] = {t.name: t for t in tools}
        self.uris: dict[str, HostUri[Any]] = {u.scheme: u for u in uris}
        self.policy_handler = policy_handler
        self.flavor: str | None = None
        #: Host tools served through the tool bridge: fixed at start (pi has no set_host_tools).
        self.bridged_tools = False
        self.pool = _WorkerPool(max_workers, "omprpc-host")
        self.sync_timeout = listener_sync_timeout
        self.join_timeout = stop_join_timeout
        self.calls: dict[str, threading.Event] = {}
        self.calls_lock = threading.Lock()
        self.stderr_cache = ""
        self.protocol_errors_cache: tuple[RpcProtocolError, ...] = ()
        self.counters_cache: dict[str, Any] = {}
        #: Log records left at stop (teardown's), for next_logs() after it (forward_logs=False).
        self.logs_cache: list[dict[str, Any]] = []
        #: Forwards the library's log records to `logging` (only when log_level was given).
        self.log_thread: threading.Thread | None = None
        self.protocol_version = 1
        self._shutdown_lock = threading.Lock()
        self._stopping = False
        self._dispatcher_done = False
        self._free_on_exit = False
        # listener synchronisation (see settle())
        self._sync = threading.Condition()
        self._sync_req = 0
        self._drained = 0
        self._terminal_seen = 0
        self._sync_waiters = 0
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self.event_fd = self.handle.event_fd()
        self.thread = threading.Thread(target=self._run, name="omprpc-dispatch", daemon=True)

    def start(self) -> None:
        try:
            info = self.info()
            self.flavor = info.get("flavor")
            self.protocol_version = int(info.get("protocolVersion") or 1)
        except (RpcError, ValueError, TypeError):
            self.protocol_version = 1
        self.thread.start()

    def info(self) -> dict[str, Any]:
        data = _loads(self.handle.call_out(lib.omprpc_client_info))
        return data if isinstance(data, dict) else {}

    def counters(self) -> dict[str, Any]:
        data = _loads(self.handle.call_out(lib.omprpc_client_counters))
        return data if isinstance(data, dict) else {}

    def next_logs(self, max_records: int, timeout_ms: int) -> list[dict[str, Any]]:
        out = self.handle.call_out(lib.omprpc_client_next_logs, max(1, max_records), timeout_ms)
        records = _loads(out)
        return [r for r in records if isinstance(r, dict)] if isinstance(records, list) else []

    def forward_logs(self) -> None:
        """Starts the thread that hands log records to the ``omprpc`` logger (its children
        ``omprpc.<target>``) on a Python thread, never on a library thread. It ends once the
        library reports CLOSED, after teardown's own records."""
        self.log_thread = threading.Thread(target=self._forward_logs, name="omprpc-logs", daemon=True)
        self.log_thread.start()

    def _forward_logs(self) -> None:
        while True:
            try:
                records = self.next_logs(256, -1)
            except RpcError:
                return  # CLOSED (or the handle is gone): every record was forwarded
            for record in records:
                target = str(record.get("target") or "omprpc").replace("::", ".")
                logger = logging.getLogger(target if target.startswith("omprpc") else "omprpc")
                level = _LOG_LEVELS.get(str(record.get("level")), logging.INFO)
                if logger.isEnabledFor(level):
                    logger.log(level, "%s", record.get("message", ""), extra={"omprpc": record})

    # -- the dispatcher --

    def _run(self) -> None:
        poller = select.poll()
        poller.register(self.event_fd, select.POLLIN)
        poller.register(self._wake_r, select.POLLIN)
        next_events = lib.omprpc_client_next_events
        next_lines = lib.omprpc_client_next_events_lines
        try:
            while True:
                with self._sync:
                    pass_req = self._sync_req
                # With listeners, a batch is one JSON array, decoded at once (faster than line
                # by line). Without, JSON lines: only the session's own frames are decoded.
                listening = self.listeners.count > 0
                try:
                    status, ptr, err = self.handle.call_raw(next_events if listening else next_lines,
                                                            _BATCH_MAX_EVENTS, 0)
                except RpcError:
                    break
                if status == _ffi.OK:
                    if listening:
                        data = _ffi.take_raw(ptr)
                        if data:
                            self._dispatch_batch(data)
                    elif ptr and self.listeners.count > 0:
                        # A listener came while the batch was taken (events queued after it
                        # was added may be in it): the whole batch goes to the listeners.
                        data = _ffi.take_raw(ptr)
                        if data:
                            self._dispatch_batch(b"[" + data.rstrip(b"\n").replace(b"\n", b",") + b"]")
                    elif ptr:
                        self._dispatch_lines(ptr)
                    continue
                if status == _ffi.TIMEOUT:
                    with self._sync:
                        self._drained = pass_req
                        if self._sync_waiters:
                            self._sync.notify_all()
                    poller.poll()
                    try:
                        while os.read(self._wake_r, 512):
                            pass
                    except (BlockingIOError, OSError):
                        pass
                    continue
                break  # CLOSED (after the queue was drained), or a fault
        finally:
            with self._sync:
                self._drained = 1 << 62
                self._terminal_seen = 1 << 62
                self._sync.notify_all()
            with self._shutdown_lock:
                self._dispatcher_done = True
                free_now = self._free_on_exit
            if free_now:
                self._release()

    def _dispatch_lines(self, ptr: int) -> None:
        """A batch of JSON lines while nobody listens: only host calls (when this session
        serves host tools or URIs; the library answers the others) and policy questions (with
        a policy handler) are decoded, found in the library's buffer without copying it."""
        marks = []
        if self.tools or self.uris:
            marks.append(_HOST_MARK_RE)
        if self.policy_handler is not None:
            marks.append(_POLICY_MARK_RE)
        if not marks:
            lib.omprpc_string_free(ptr)
            return
        owned = _ffi.OwnedString(ptr)
        try:
            found = any(m.search(owned.view()) for m in marks)
            data = owned.slice(0) if found else b""
        finally:
            owned.release()
        for line in data.split(b"\n"):
            if line and any(m.search(line) for m in marks):
                try:
                    frame = json.loads(line)
                except ValueError:
                    continue
                if isinstance(frame, dict):
                    try:
                        self._dispatch(frame)
                    except Exception as exc:  # a bug here must not end the dispatcher
                        kind = frame.get("type")
                        self.listeners.record_error(ListenerErrorEvent(
                            "dispatch", kind if isinstance(kind, str) else None, self._dispatch, exc))

    def _dispatch_batch(self, data: bytes) -> None:
        listeners = self.listeners
        if listeners.count == 0 and _HOST_FRAME_MARK not in data and self.policy_handler is None:
            return  # nobody listens and no host call: nothing to decode
        try:
            frames = _loads_bulk(data)
        except ValueError:
            return
        for frame in frames:
            if isinstance(frame, dict):
                try:
                    self._dispatch(frame)
                except Exception as exc:  # a bug here must not end the dispatcher
                    kind = frame.get("type")
                    listeners.record_error(ListenerErrorEvent("dispatch", kind if isinstance(kind, str) else None,
                                                              self._dispatch, exc))

    def _dispatch(self, frame: JsonObject) -> None:
        kind = frame.get("type")
        frame_entries = self.listeners.lists["frame"]
        if frame_entries and frame.get("omprpc") is not True:
            self.listeners.run("frame", kind if isinstance(kind, str) else None, frame_entries, frame)
        if kind == "response":
            return  # queued for the frame listeners only (the start option queue_responses)
        if kind == "protocol_error" and frame.get("omprpc") is not True:
            return  # the agent's own report: the library's record of it follows (on_protocol_error)
        raw_entries = self.listeners.lists["payload"]
        if raw_entries:
            self.listeners.run("payload", kind if isinstance(kind, str) else None, raw_entries, frame)
        # Typed events share nothing with a frame the raw listeners were handed; otherwise the
        # frame was decoded for this dispatch alone and no copy is needed.
        private = not (frame_entries or raw_entries)
        if kind == "host_tool_call":
            self._host_tool_call(frame)
            return
        if kind == "host_uri_request":
            self._host_uri_request(frame)
            return
        if kind in ("host_tool_cancel", "host_uri_cancel"):
            target = frame.get("targetId")
            if isinstance(target, str):
                with self.calls_lock:
                    event = self.calls.get(target)
                if event is not None:
                    event.set()
            return
        L = self.listeners
        lists = L.lists
        if kind == "policy_eval":
            question = to_notification(frame, private=private)
            if isinstance(question, PolicyEvalEvent):
                handler = self.policy_handler
                if handler is not None and question.id and not self._stopping:
                    self.pool.submit(self._run_policy, handler, question)
                L.run("notification", question.type, lists["notification"], question)
                L.run("policy_eval", question.type, lists["policy_eval"], question)
                return
        if kind == "tool_blocked":
            blocked = to_notification(frame, private=private)
            L.run("notification", blocked.type, lists["notification"], blocked)
            L.run("tool_blocked", blocked.type, lists["tool_blocked"], blocked)
            return
        if frame.get("omprpc") is True:
            if kind == "protocol_error":
                entries = lists["protocol_error"]
                if entries:
                    err = RpcProtocolError._from_record(frame)
                    L.run("protocol_error", err.command, entries, err)
                return
            if kind == "event_overflow":
                dropped = frame.get("dropped")
                overflow = EventOverflow(dropped=dropped if isinstance(dropped, int) else 0)
                L.run("notification", overflow.type, lists["notification"], overflow)
                L.run("event_overflow", overflow.type, lists["event_overflow"], overflow)
                return
        if kind == "ready":
            ready = to_notification(frame, private=private)
            L.run("notification", ready.type, lists["notification"], ready)
            L.run("ready", ready.type, lists["ready"], ready)
            return
        if kind == "extension_ui_request":
            entries = lists["ui_request"]
            if entries or lists["notification"]:
                request = to_notification(frame, private=private)
                L.run("notification", request.type, lists["notification"], request)
                if isinstance(request, ExtensionUiRequest):
                    L.run("ui_request", request.type, entries, request)
            return
        if kind == "extension_error":
            note = to_notification(frame, private=private)
            L.run("notification", note.type, lists["notification"], note)
            L.run("extension_error", note.type, lists["extension_error"], note)
            return
        if isinstance(kind, str) and kind in AGENT_EVENT_TYPES:
            typed = L.typed.get(kind, ())
            if lists["notification"] or lists["event"] or typed or lists["unknown_notification"]:
                note = to_notification(frame, private=private)
                L.run("notification", note.type, lists["notification"], note)
                if isinstance(note, UnknownNotification):
                    L.run("unknown_notification", note.type, lists["unknown_notification"], note)
                else:
                    L.run("event", note.type, lists["event"], note)
                    L.run("typed_event", note.type, typed, note)
            if kind == "agent_end" and frame.get("isTerminal") is not False:
                with self._sync:
                    self._terminal_seen += 1
                    if self._sync_waiters:
                        self._sync.notify_all()
            return
        if lists["notification"] or lists["unknown_notification"]:
            note = to_notification(frame, private=private)
            L.run("notification", note.type, lists["notification"], note)
            L.run("unknown_notification", note.type, lists["unknown_notification"], note)

    # -- listener synchronisation --

    def sync_mark(self) -> int:
        """Where the dispatcher is, for :meth:`settle`; -1 when nobody listens (then batches
        are not decoded and agent_end frames not counted)."""
        if self.listeners.count == 0:
            return -1
        with self._sync:
            return self._terminal_seen

    def settle(self, mark: int, expect_terminal: bool) -> None:
        """After a lifecycle call returned: waits (at most ``listener_sync_timeout``) until the
        dispatcher has run the listeners for everything queued so far — and, when the call
        ended at an ``agent_end``, for that ``agent_end`` — so listeners have seen the turn
        when prompt_and_wait returns, as with omp_rpc."""
        if self.sync_timeout <= 0 or self.listeners.count == 0:
            return
        if threading.current_thread() is self.thread or not self.thread.is_alive():
            return
        if mark < 0:
            expect_terminal = False
        deadline = time.monotonic() + self.sync_timeout
        with self._sync:
            self._sync_req += 1
            req = self._sync_req
            self._sync_waiters += 1
        try:
            try:
                os.write(self._wake_w, b"s")
            except (BlockingIOError, OSError):
                pass
            with self._sync:
                while not (self._drained >= req and (not expect_terminal or self._terminal_seen > mark)):
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return
                    self._sync.wait(remaining)
        finally:
            with self._sync:
                self._sync_waiters -= 1

    # -- the policy gate --

    def _run_policy(self, handler: PolicyHandler, question: PolicyEvalEvent) -> None:
        """Runs the policy handler on a host worker and sends its verdict. A handler that
        raises or returns something else blocks the tool (the gate fails closed)."""
        try:
            verdict = handler(question)
            if isinstance(verdict, bool):
                allow, reason = verdict, None
            elif (isinstance(verdict, tuple) and len(verdict) == 2 and isinstance(verdict[0], bool)
                  and (verdict[1] is None or isinstance(verdict[1], str))):
                allow, reason = verdict
            else:
                allow, reason = False, f"the policy handler returned {verdict!r}, not a verdict"
        except Exception as exc:
            allow, reason = False, f"the policy handler failed: {exc}"
        self.policy_verdict(question.id, allow, reason, quiet=True)

    def policy_verdict(self, request_id: str, allow: bool, reason: str | None, *, quiet: bool = False) -> None:
        reason_c = _ffi.encode(reason, "reason") if reason else None
        try:
            self.handle.call(lib.omprpc_client_policy_verdict, _ffi.encode(request_id, "request id"), bool(allow),
                             reason_c)
        except RpcError as exc:
            # Timed out (the gate decided), already answered, or closed: nothing to do.
            if not quiet or exc.status not in (_ffi.NOT_FOUND, _ffi.CLOSED, _ffi.PROCESS_EXITED):
                raise

    # -- host tools and URIs --

    def _host_tool_call(self, frame: JsonObject) -> None:
        call_id = frame.get("id")
        if not isinstance(call_id, str) or self._stopping:
            return
        name = frame.get("toolName")
        tool = self.tools.get(name) if isinstance(name, str) else None
        if tool is None:
            self._tool_reply(call_id, {"content": [{"type": "text", "text": f'Host tool "{name}" is not registered'}],
                                       "details": {}}, True)
            return
        cancel = threading.Event()
        with self.calls_lock:
            self.calls[call_id] = cancel
        tool_call_id = frame.get("toolCallId")
        args = frame.get("arguments")
        if not self.pool.submit(self._run_tool, tool, call_id, tool_call_id if isinstance(tool_call_id, str) else "",
                                args if isinstance(args, dict) else {}, cancel):
            cancel.set()

    def _run_tool(self, tool: HostTool[Any, Any], call_id: str, tool_call_id: str, args: JsonObject,
                  cancel: threading.Event) -> None:
        try:
            try:
                context: HostToolContext[Any] = HostToolContext(
                    tool_call_id=tool_call_id,
                    _cancel_event=cancel,
                    _send_update=lambda result: self._tool_update(call_id, result, cancel),
                )
                value = tool.execute(tool.parse_params(args), context)
                if cancel.is_set():
                    return
                self._tool_reply(call_id, normalize_result(value), False)
            except Exception as exc:
                if cancel.is_set():
                    return
                self._tool_reply(call_id, {"content": [{"type": "text", "text": str(exc)}], "details": {}}, True)
        finally:
            with self.calls_lock:
                self.calls.pop(call_id, None)

    def _tool_update(self, call_id: str, result: JsonObject, cancel: threading.Event) -> None:
        try:
            self.handle.call(lib.omprpc_client_host_tool_update, _ffi.encode(call_id, "call id"), _ffi.dumps(result))
        except RpcError as exc:
            if exc.status in (_ffi.CANCELLED, _ffi.NOT_FOUND, _ffi.CLOSED, _ffi.PROCESS_EXITED):
                if exc.status == _ffi.CANCELLED:
                    cancel.set()
                return
            raise

    def _tool_reply(self, call_id: str, result: JsonObject, is_error: bool) -> None:
        try:
            body = _ffi.dumps(result)
        except (TypeError, ValueError) as exc:
            body, is_error = _ffi.dumps({"content": [{"type": "text", "text": f"Host tool result is not JSON: {exc}"}],
                                         "details": {}}), True
        try:
            self.handle.call(lib.omprpc_client_host_tool_result, _ffi.encode(call_id, "call id"), body, is_error)
        except RpcError as exc:
            if exc.status in (_ffi.INVALID_ARGUMENT, _ffi.INVALID_JSON) and not is_error:
                # The handler's value had the wrong shape: tell the agent instead of leaving it waiting.
                self._tool_reply(call_id, {"content": [{"type": "text", "text": f"Invalid host tool result: {exc}"}],
                                           "details": {}}, True)

    def _host_uri_request(self, frame: JsonObject) -> None:
        request_id = frame.get("id")
        url = frame.get("url")
        operation = frame.get("operation")
        if not isinstance(request_id, str) or self._stopping:
            return
        url = url if isinstance(url, str) else ""
        scheme = url.split(":", 1)[0].strip().lower()
        uri = self.uris.get(scheme)
        if uri is None:
            self._uri_reply(request_id, {"error": f'Host URI scheme "{scheme}://" is not registered'})
            return
        cancel = threading.Event()
        with self.calls_lock:
            self.calls[request_id] = cancel
        content = frame.get("content")
        # omp protocol 1.1: the part of a read asked for ({start, end?, unit}), copied.
        wanted = frame.get("range")
        part = dict(wanted) if isinstance(wanted, dict) else None
        if not self.pool.submit(self._run_uri, uri, request_id, url, operation,
                                content if isinstance(content, str) else "", part, cancel):
            cancel.set()

    def _run_uri(self, uri: HostUri[Any], request_id: str, url: str, operation: object, content: str,
                 part: dict[str, Any] | None, cancel: threading.Event) -> None:
        try:
            try:
                context = HostUriContext(url=url, operation=cast(Any, operation), range=part, _cancel_event=cancel)
                if operation == "write":
                    if uri.write is None:
                        raise RpcError(f'Host URI scheme "{uri.scheme}://" was not registered with a write handler')
                    uri.write(url, content, context)
                    reply: JsonObject = {}
                else:
                    reply = normalize_read_result(uri.read(url, context))
                if cancel.is_set():
                    return
            except Exception as exc:
                if cancel.is_set():
                    return
                reply = {"error": str(exc)}
            self._uri_reply(request_id, reply)
        finally:
            with self.calls_lock:
                self.calls.pop(request_id, None)

    def _uri_reply(self, request_id: str, reply: JsonObject) -> None:
        try:
            self.handle.call(lib.omprpc_client_host_uri_result, _ffi.encode(request_id, "request id"),
                             _ffi.dumps(reply))
        except (TypeError, ValueError) as exc:
            self._uri_reply(request_id, {"error": f"Host URI result is not JSON: {exc}"})
        except RpcError as exc:
            if exc.status in (_ffi.INVALID_ARGUMENT, _ffi.INVALID_JSON) and "error" not in reply:
                self._uri_reply(request_id, {"error": str(exc)})

    # -- teardown --

    def shutdown(self) -> None:
        """close → the dispatcher drains the queue (listeners see everything) → join → free."""
        with self._shutdown_lock:
            if self._stopping:
                return
            self._stopping = True
        with self.calls_lock:
            for event in self.calls.values():
                event.set()
        self.handle.close()
        if self.log_thread is not None and self.log_thread is not threading.current_thread():
            # close returned after teardown: the rest of the records are queued; take them.
            self.log_thread.join(self.join_timeout)
        self._cache_records()
        self.pool.shutdown()
        if threading.current_thread() is self.thread:
            with self._shutdown_lock:
                self._free_on_exit = True  # the dispatcher frees when it leaves its loop
            return
        if self.thread.ident is not None:
            self.thread.join(self.join_timeout)
        with self._shutdown_lock:
            if self.thread.ident is not None and not self._dispatcher_done:
                self._free_on_exit = True
                return
        self._release()

    def _cache_records(self) -> None:
        try:
            self.stderr_cache = (self.handle.call_out(lib.omprpc_client_stderr) or b"").decode("utf-8", "replace")
        except RpcError:
            pass
        try:
            self.protocol_errors_cache = self.protocol_errors()
        except RpcError:
            pass
        try:
            self.counters_cache = self.counters()
        except RpcError:
            pass
        if self.log_thread is None:
            try:
                while True:  # until CLOSED (all taken) or INVALID_ARGUMENT (logs are off)
                    self.logs_cache.extend(self.next_logs(4096, 0))
            except RpcError:
                pass

    def _release(self) -> None:
        self.handle.free()
        for fd in (self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass

    def stderr(self) -> str:
        if not self.handle.alive or self._stopping:
            return self.stderr_cache
        try:
            return (self.handle.call_out(lib.omprpc_client_stderr) or b"").decode("utf-8", "replace")
        except RpcProcessExitError:
            return self.stderr_cache

    def protocol_errors(self) -> tuple[RpcProtocolError, ...]:
        records = _loads(self.handle.call_out(lib.omprpc_client_protocol_errors))
        if not isinstance(records, list):
            return ()
        return tuple(RpcProtocolError._from_record(r) for r in records if isinstance(r, dict))


# --- the client ------------------------------------------------------------------------------


_TURN_EVENTS = ("all", "no_updates", "none")
_BRIDGE_MODES = ("auto", "always", "never")
_BRIDGE_TRANSPORTS = ("unix", "tcp")


class RpcClient:
    """A client for ``omp --mode rpc`` (and ``pi --mode rpc``), API-compatible with
    ``omp_rpc.RpcClient``. Use ``with RpcClient(...) as client:`` or start()/stop().

    Options beyond ``omp_rpc``'s: ``flavor`` ("omp"/"pi"/"auto"), ``system_prompt``,
    ``extensions``, ``turn_timeout`` (seconds; default for prompt_and_wait / collect_events /
    wait_for_idle when their ``timeout`` is None; None = no deadline), ``max_host_workers``,
    ``listener_sync_timeout`` (seconds a lifecycle call waits for listeners to catch up; 0 = do
    not wait), ``stop_join_timeout`` and ``core_options`` (extra start options for the
    library, e.g. ``{"stop_grace_ms": 500, "event_queue_capacity": 100000}``; they override
    the keywords).

    The library's start options, as keywords (docs/c-api.md has the details):

    * environment: ``inherit_env`` (True: all of this process's environment, the default as in
      ``omp_rpc``; False: only ``env``; ``"allowlist"``: only the names an agent needs, see
      :func:`omprpc.env_allowlisted`), ``env_passthrough`` (exact names copied from this
      process's environment, e.g. one API key), ``system_prompt_via_file`` (system prompts go
      to the agent as files in a private directory, not in its argv);
    * turns: ``turn_idle_timeout`` (seconds without any event before a waiting turn fails with
      RpcTimeoutError), ``turn_events`` ("all", "no_updates": no ``message_update`` in the
      turn, "none"), ``max_turn_bytes`` / ``event_queue_max_bytes`` (None: no limit),
      ``turn_summary`` (every turn gets a :attr:`PromptTurn.summary`);
    * the tool bridge (pi's host tools, the policy gate): ``bridge`` ("auto": on pi,
      "always", "never"), ``bridge_transport`` ("unix", "tcp"), ``host_tool_timeout``
      (seconds before the bridge fails a host tool call). With ``flavor="pi"``, ``custom_tools``
      are served through the bridge: their calls reach the tools exactly as on omp;
    * the policy gate over the agent's own tools: ``tool_policy`` (``{"mode": "host"}``: each
      tool call is a :class:`PolicyEvalEvent` to answer with :meth:`policy_verdict`;
      ``{"mode": "rules", "allow": [...], "block": {name: reason}, "default": "block"}``:
      decided in the library; ``timeout_ms``, ``fail_open``) and ``policy_handler`` (a callable
      run on the host worker pool that answers each question: it returns True / False or
      ``(allow, reason)``; raising blocks the tool. With a handler and no ``tool_policy`` the
      gate is ``{"mode": "host"}``);
    * observability: ``log_level`` ("error" … "trace"; default off) makes the library keep
      log records (spawn with a redacted argv, handshake, requests with latency — never
      params, prompts, system prompts or env values —, protocol errors, teardown), which a
      thread forwards to the ``logging`` logger ``omprpc`` (children ``omprpc.spawn``,
      ``omprpc.request``, …; the record's fields in ``extra={"omprpc": …}``); with
      ``forward_logs=False`` take them with :meth:`next_logs` instead. :meth:`counters`
      reads the per-client counters. ``OMPRPC_LOG=debug`` in the environment prints records
      to stderr whatever the options;
    * recording: ``record_path`` writes every frame of the session, both directions, with
      timestamps, to a JSONL file (created 0600: it holds prompts and tool output), which
      ``omprpc-fake-agent --replay FILE`` plays back as a regression test.
    """

    def __init__(
        self,
        *,
        command: Sequence[str] | None = None,
        executable: str = "omp",
        provider: str | None = None,
        model: str | None = None,
        session_dir: str | Path | None = None,
        cwd: str | Path | None = None,
        env: Mapping[str, str] | None = None,
        user: int | str | None = None,
        group: int | str | None = None,
        extra_groups: Sequence[int | str] | None = None,
        thinking: ThinkingLevel | None = None,
        append_system_prompt: str | None = None,
        provider_session_id: str | None = None,
        tools: Sequence[str] | None = None,
        custom_tools: Sequence[HostTool[Any, Any]] | None = None,
        host_uris: Sequence[HostUri[Any]] | None = None,
        no_session: bool = False,
        no_skills: bool = False,
        no_rules: bool = False,
        no_title: bool | None = None,
        rpc_defaults: bool = True,
        extra_args: Sequence[str] = (),
        startup_timeout: float | None = 30.0,
        request_timeout: float | None = 30.0,
        max_event_history: int | None = 10_000,
        max_stderr_chunks: int | None = 512,
        flavor: str | None = None,
        system_prompt: str | None = None,
        extensions: Sequence[str] | None = None,
        turn_timeout: float | None = None,
        max_host_workers: int = 8,
        listener_sync_timeout: float = 5.0,
        stop_join_timeout: float = 30.0,
        core_options: Mapping[str, Any] | None = None,
        inherit_env: bool | Literal["allowlist"] = True,
        env_passthrough: Sequence[str] = (),
        system_prompt_via_file: bool = False,
        turn_idle_timeout: float | None = None,
        turn_events: Literal["all", "no_updates", "none"] | None = None,
        max_turn_bytes: int | None = LIBRARY_DEFAULT,
        event_queue_max_bytes: int | None = LIBRARY_DEFAULT,
        turn_summary: bool = False,
        bridge: Literal["auto", "always", "never"] | None = None,
        bridge_transport: Literal["unix", "tcp"] | None = None,
        host_tool_timeout: float | None = None,
        tool_policy: Mapping[str, Any] | None = None,
        policy_handler: PolicyHandler | None = None,
        log_level: Literal["error", "warn", "info", "debug", "trace"] | None = None,
        forward_logs: bool = True,
        record_path: str | Path | None = None,
    ) -> None:
        if user is not None or group is not None or extra_groups is not None:
            raise NotImplementedError(
                "omprpc does not switch user/group for the agent process; run the host under "
                "the wanted account instead (user, group and extra_groups must be None)"
            )
        self._command = tuple(command) if command is not None else None
        self._executable = executable
        self._provider = provider
        self._model = model
        self._session_dir = Path(session_dir) if session_dir is not None else None
        self._cwd = Path(cwd) if cwd is not None else None
        self._env = {str(k): str(v) for k, v in (env or {}).items()}
        self._thinking = thinking
        self._append_system_prompt = append_system_prompt
        self._provider_session_id = provider_session_id
        self._tools = tuple(tools) if tools is not None else None
        self._custom_tools: tuple[HostTool[Any, Any], ...] = tuple(custom_tools or ())
        self._host_uris: tuple[HostUri[Any], ...] = tuple(host_uris or ())
        self._no_session = no_session
        self._no_skills = no_skills
        self._no_rules = no_rules
        self._no_title = no_title
        self._rpc_defaults = rpc_defaults
        self._extra_args = tuple(extra_args)
        self._startup_timeout = startup_timeout
        self._request_timeout = request_timeout
        self._max_event_history = self._validate_history_limit("max_event_history", max_event_history)
        self._max_stderr_chunks = self._validate_history_limit("max_stderr_chunks", max_stderr_chunks)
        self._flavor = flavor
        self._system_prompt = system_prompt
        self._extensions = tuple(extensions) if extensions is not None else None
        self._turn_timeout = turn_timeout
        self._max_host_workers = max_host_workers
        self._listener_sync_timeout = listener_sync_timeout
        self._stop_join_timeout = stop_join_timeout
        self._core_options = dict(core_options or {})
        if inherit_env not in (True, False, "allowlist"):
            raise ValueError('inherit_env must be True, False or "allowlist"')
        self._inherit_env = inherit_env
        if isinstance(env_passthrough, (str, bytes)):
            raise TypeError("env_passthrough must be a sequence of names, not a string")
        self._env_passthrough = tuple(str(n) for n in env_passthrough)
        self._system_prompt_via_file = bool(system_prompt_via_file)
        self._turn_idle_timeout = turn_idle_timeout
        if turn_events is not None and turn_events not in _TURN_EVENTS:
            raise ValueError(f"turn_events must be one of {_TURN_EVENTS}")
        self._turn_events = turn_events
        self._max_turn_bytes = max_turn_bytes if max_turn_bytes is LIBRARY_DEFAULT else \
            self._validate_history_limit("max_turn_bytes", max_turn_bytes)
        self._event_queue_max_bytes = event_queue_max_bytes if event_queue_max_bytes is LIBRARY_DEFAULT else \
            self._validate_history_limit("event_queue_max_bytes", event_queue_max_bytes)
        self._turn_summary = bool(turn_summary)
        if bridge is not None and bridge not in _BRIDGE_MODES:
            raise ValueError(f"bridge must be one of {_BRIDGE_MODES}")
        self._bridge = bridge
        if bridge_transport is not None and bridge_transport not in _BRIDGE_TRANSPORTS:
            raise ValueError(f"bridge_transport must be one of {_BRIDGE_TRANSPORTS}")
        self._bridge_transport = bridge_transport
        self._host_tool_timeout = host_tool_timeout
        if log_level is not None and log_level not in _LOG_LEVELS:
            raise ValueError(f"log_level must be one of {tuple(_LOG_LEVELS)} or None")
        self._log_level = log_level
        self._forward_logs = bool(forward_logs)
        self._record_path = Path(record_path) if record_path is not None else None
        self._counters: dict[str, Any] = {}
        self._logs: list[dict[str, Any]] = []
        if policy_handler is not None and not callable(policy_handler):
            raise TypeError("policy_handler must be callable")
        if tool_policy is not None:
            if not isinstance(tool_policy, Mapping):
                raise TypeError("tool_policy must be a mapping")
            if policy_handler is not None and tool_policy.get("mode", "host") != "host":
                raise ValueError('a policy_handler needs tool_policy mode "host" (rules are decided in the library)')
        self._tool_policy = dict(tool_policy) if tool_policy is not None else None
        self._policy_handler = policy_handler

        self._listeners = _Listeners()
        self._headless: list[tuple[object, JsonObject]] = []
        self._session: _Session | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None  # type: ignore[type-arg,unused-ignore]
        self._lifecycle_lock = threading.RLock()
        self._stderr_text = ""
        self._protocol_errors: tuple[RpcProtocolError, ...] = ()
        self._prompt_lifecycle = _PromptLifecycle(self)

    # -- lifecycle --

    def __enter__(self) -> RpcClient:
        return self.start()

    def __exit__(self, _exc_type: object, _exc: object, _tb: object) -> None:
        self.stop()

    def _argv_options(self) -> JsonObject:
        o: JsonObject = {
            "rpc_defaults": self._rpc_defaults,
            "no_session": self._no_session,
            "no_skills": self._no_skills,
            "no_rules": self._no_rules,
            "extra_args": list(self._extra_args),
        }
        if self._command is not None:
            o["command"] = list(self._command)
        if not (self._flavor == "pi" and self._executable == "omp"):  # pi's default is "pi"
            o["executable"] = self._executable
        for key, value in (
            ("provider", self._provider),
            ("model", self._model),
            ("session_dir", str(self._session_dir) if self._session_dir is not None else None),
            ("thinking", self._thinking),
            ("append_system_prompt", self._append_system_prompt),
            ("provider_session_id", self._provider_session_id),
            ("no_title", self._no_title),
            ("flavor", self._flavor),
            ("system_prompt", self._system_prompt),
        ):
            if value is not None:
                o[key] = value
        if self._tools is not None:
            o["tools"] = list(self._tools)
        if self._extensions is not None:
            o["extensions"] = list(self._extensions)
        return o

    def _argv_extra(self) -> JsonObject:
        """Start options that change the argv too (the bridge extension, prompt files)."""
        o: JsonObject = {}
        if self._system_prompt_via_file:
            o["system_prompt_via_file"] = True
        if self._custom_tools:
            o["host_tools"] = [tool.to_wire() for tool in self._custom_tools]
        if self._bridge is not None:
            o["bridge"] = self._bridge
        if self._bridge_transport is not None:
            o["bridge_transport"] = self._bridge_transport
        if self._host_tool_timeout is not None:
            o["host_tool_timeout_ms"] = _ms(self._host_tool_timeout)
        policy = self._tool_policy
        if policy is None and self._policy_handler is not None:
            policy = {"mode": "host"}
        if policy is not None:
            o["tool_policy"] = policy
        return o

    def _start_options(self) -> JsonObject:
        o = self._argv_options()
        o.update(self._argv_extra())
        o["inherit_env"] = self._inherit_env
        if self._env_passthrough:
            o["env_passthrough"] = list(self._env_passthrough)
        if self._env:
            o["env"] = dict(self._env)
        if self._cwd is not None:
            o["cwd"] = str(self._cwd)
        # Responses reach the event queue too, for on_frame (the dispatcher drops them when
        # nobody listens).
        o["queue_responses"] = True
        o["startup_timeout_ms"] = _ms(self._startup_timeout)
        o["request_timeout_ms"] = _ms(self._request_timeout)
        o["turn_timeout_ms"] = _ms(self._turn_timeout)
        o["max_event_history"] = self._max_event_history
        o["max_stderr_lines"] = self._max_stderr_chunks
        if self._turn_idle_timeout is not None:
            o["turn_idle_timeout_ms"] = _ms(self._turn_idle_timeout)
        if self._turn_events is not None:
            o["turn_events"] = self._turn_events
        if self._max_turn_bytes is not LIBRARY_DEFAULT:
            o["max_turn_bytes"] = self._max_turn_bytes
        if self._event_queue_max_bytes is not LIBRARY_DEFAULT:
            o["event_queue_max_bytes"] = self._event_queue_max_bytes
        if self._turn_summary:
            o["turn_summary"] = True
        if self._host_uris:
            o["host_uri_schemes"] = [uri.to_wire() for uri in self._host_uris]
        if self._headless:
            o["ui_policy"] = self._headless[-1][1]
        if self._log_level is not None:
            o["log_level"] = self._log_level
        if self._record_path is not None:
            o["record_path"] = str(self._record_path)
        o.update(self._core_options)
        return o

    def start(self) -> RpcClient:
        """Spawns the agent, waits for it, negotiates protocol v2 when offered and registers
        host tools / URIs. On any failure nothing is left running."""
        with self._lifecycle_lock:
            if self._session is not None:
                raise RpcError("RPC client is already started")
            with self._listeners._lock:
                self._listeners.errors.clear()
            self._stderr_text = ""
            self._protocol_errors = ()
            ptr = _ffi.start(_ffi.dumps(self._start_options()))
            try:
                session = _Session(ptr, self._listeners, self._custom_tools, self._host_uris,
                                   self._max_host_workers, self._listener_sync_timeout,
                                   self._stop_join_timeout, self._policy_handler)
            except BaseException:
                handle = _ffi.Handle(ptr)
                handle.close()
                handle.free()
                raise
            self._session = session
            self._finalizer = weakref.finalize(self, _Session.shutdown, session)
            session.start()
            if self._log_level is not None and self._forward_logs:
                session.forward_logs()
            session.bridged_tools = bool(self._custom_tools) and (
                self._bridge == "always" or (self._bridge != "never" and session.flavor == "pi"))
        # as with omp_rpc, ready (and whatever came before it) has reached the listeners
        session.settle(session.sync_mark(), expect_terminal=False)
        return self

    def stop(self) -> None:
        """Stops the agent (stdin EOF, grace, SIGTERM, SIGKILL to its process group). Every
        blocked call returns at once with RpcProcessExitError; listeners have seen every
        event the agent sent when stop() returns. Idempotent, callable from any thread."""
        with self._lifecycle_lock:
            session = self._session
            if session is None:
                return
            self._session = None
            finalizer, self._finalizer = self._finalizer, None
        if finalizer is not None:
            finalizer.detach()
        session.shutdown()
        self._stderr_text = session.stderr_cache
        self._protocol_errors = session.protocol_errors_cache
        self._counters = session.counters_cache
        self._logs = session.logs_cache

    def _require(self) -> _Session:
        session = self._session
        if session is None:
            raise RpcError("RPC client is not started")
        return session

    @staticmethod
    def _synced(session: _Session, call: Callable[[], _T], terminal: Callable[[_T], bool] | None = None) -> _T:
        """Runs a call that waits on the agent, then (returned or raised an RpcError) waits for
        the dispatcher to have run the listeners for every event queued before its outcome;
        with ``terminal(result)``, also for the ``agent_end`` that ended it."""
        mark = session.sync_mark()
        try:
            result = call()
        except RpcError:
            session.settle(mark, expect_terminal=False)
            raise
        session.settle(mark, expect_terminal=terminal(result) if terminal is not None else False)
        return result

    # -- read-only state --

    @property
    def stderr(self) -> str:
        """The agent's last ``max_stderr_chunks`` stderr lines (kept after stop())."""
        session = self._session
        if session is None:
            return self._stderr_text
        return session.stderr()

    @property
    def command(self) -> tuple[str, ...]:
        """The argv start() spawns (built by the library; nothing is started). With the tool
        bridge (pi's host tools, a policy gate) the path of its ``--extension``, which exists
        only once started, reads ``"\\x00omprpc-bridge-extension"`` (``info()["argv"]`` has
        the real one)."""
        options = self._argv_options()
        options.update(self._argv_extra())
        return tuple(json.loads(_ffi.build_argv(_ffi.dumps(options))))

    @property
    def protocol_errors(self) -> tuple[RpcProtocolError, ...]:
        session = self._session
        if session is None:
            return self._protocol_errors
        try:
            return session.protocol_errors()
        except RpcProcessExitError:
            return session.protocol_errors_cache

    def counters(self) -> dict[str, Any]:
        """The library's per-client counters (frames and bytes in and out, requests sent and
        pending, events queued / delivered / dropped, time to first event, …; docs/c-api.md).
        After stop(), the last values read (at stop)."""
        session = self._session
        if session is None:
            return dict(self._counters)
        try:
            return session.counters()
        except RpcProcessExitError:
            return dict(session.counters_cache)

    def next_logs(self, max_records: int = 256, timeout: float | None = 0.0) -> list[dict[str, Any]]:
        """Takes up to ``max_records`` log records (dicts: level, target, message, t_ms, …),
        waiting up to ``timeout`` seconds (None: until one arrives or the client stops) for
        the first; [] when none arrived. For clients started with ``log_level`` and
        ``forward_logs=False`` (otherwise the records go to the ``omprpc`` logger). After
        stop(), the records left then (teardown's), then []."""
        session = self._session
        if session is None:
            taken, self._logs = self._logs[:max(1, max_records)], self._logs[max(1, max_records):]
            return taken
        if self._forward_logs and session.log_thread is not None:
            raise RpcError("log records are forwarded to the 'omprpc' logger (forward_logs=True)")
        try:
            return session.next_logs(max_records, -1 if timeout is None else _ms(timeout))
        except RpcTimeoutError:
            return []

    @property
    def listener_errors(self) -> tuple[ListenerErrorEvent, ...]:
        with self._listeners._lock:
            return tuple(self._listeners.errors)

    @property
    def is_running(self) -> bool:
        return self._session is not None

    def info(self) -> dict[str, Any]:
        """The library's view: pid, argv (system prompts redacted), flavor, protocolVersion,
        ready frame, closed / closeReason, activeOperation, pendingRequests."""
        return self._require().info()

    # -- listeners --

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

    # -- the tool policy gate --

    def policy_verdict(self, request_id: str, allow: bool, reason: str | None = None) -> None:
        """Answers a :class:`PolicyEvalEvent`: allow the agent's tool call, or block it with
        ``reason`` (None: a default reason). ``RpcError`` (status NOT_FOUND) when that question
        is not open: unknown, answered, or decided by the gate's timeout."""
        self._require().policy_verdict(request_id, allow, reason)

    def set_policy_handler(self, handler: PolicyHandler | None) -> None:
        """Sets (or with None removes) the callable that answers policy questions on the host
        worker pool; see the ``policy_handler`` keyword. Questions already delivered are not
        asked again. The gate itself is configured at start (``tool_policy`` / a handler)."""
        if handler is not None and not callable(handler):
            raise TypeError("policy_handler must be callable")
        self._policy_handler = handler
        session = self._session
        if session is not None:
            session.policy_handler = handler

    # -- UI --

    def install_headless_ui(
        self,
        *,
        on_request: UiRequestListener | None = None,
        confirm: bool = False,
        select_value: str | None = None,
        input_value: str | None = None,
        editor_value: str | None = None,
    ) -> Callable[[], None]:
        """Answers UI requests inside the library, with no round trip through Python: confirm
        → ``confirm``; select / input / editor → the given value, else cancelled; any other
        method that is not passive (e.g. a later ``ask``) → cancelled. ``on_request`` sees
        every UI request (passive ones too) on the dispatcher thread. The most recent active
        installation decides; the returned function uninstalls this one."""
        policy: JsonObject = {"confirm": bool(confirm), "select": select_value, "input": input_value,
                              "editor": editor_value}
        token = object()
        unsubscribe_listener: Callable[[], None] | None = None
        if on_request is not None:
            callback = on_request
            listeners = self._listeners

            def handle(request: ExtensionUiRequest) -> None:
                try:
                    callback(request)
                except Exception as exc:
                    listeners.record_error(ListenerErrorEvent("headless_ui_request", request.type, callback, exc))

            unsubscribe_listener = self._listeners.add("ui_request", handle)
        with self._lifecycle_lock:
            self._headless.append((token, policy))
            self._apply_ui_policy()

        def uninstall() -> None:
            if unsubscribe_listener is not None:
                unsubscribe_listener()
            with self._lifecycle_lock:
                before = len(self._headless)
                self._headless = [entry for entry in self._headless if entry[0] is not token]
                if len(self._headless) != before:
                    self._apply_ui_policy()

        return uninstall

    def _apply_ui_policy(self) -> None:
        session = self._session
        if session is None:
            return
        policy = _ffi.dumps(self._headless[-1][1]) if self._headless else None
        try:
            session.handle.call(lib.omprpc_client_set_ui_policy, policy)
        except RpcProcessExitError:
            pass

    def next_ui_request(self, timeout: float | None = None) -> ExtensionUiRequest:
        """The next UI request that needs an answer (select, confirm, input, editor, or an
        unknown non-passive method). ``timeout=None`` waits without a deadline; stop() wakes it
        (RpcProcessExitError)."""
        session = self._require()
        ms = _ms(timeout)
        data = _loads(self._synced(session, lambda: _interruptible(
            lambda: session.handle.call_out(lib.omprpc_client_next_ui_request, ms))))
        return parse_extension_ui_request(data if isinstance(data, dict) else {})

    def send_ui_value(self, request_id: str, value: str) -> None:
        self._require().handle.call(lib.omprpc_client_ui_send_value, _ffi.encode(request_id, "request_id"),
                                    _ffi.encode(value, "value"))

    def send_ui_confirmation(self, request_id: str, confirmed: bool) -> None:
        self._require().handle.call(lib.omprpc_client_ui_send_confirmation,
                                    _ffi.encode(request_id, "request_id"), bool(confirmed))

    def cancel_ui_request(self, request_id: str, *, timed_out: bool = False) -> None:
        self._require().handle.call(lib.omprpc_client_ui_cancel, _ffi.encode(request_id, "request_id"),
                                    bool(timed_out))

    def send_widget_layout(
        self,
        widget_key: str,
        *,
        visible: bool,
        available_width: int,
        visible_rows: int,
        hidden_blocks: Sequence[str] | None = None,
    ) -> None:
        frame: JsonObject = {
            "type": "widget_layout",
            "widgetKey": widget_key,
            "visible": visible,
            "availableWidth": available_width,
            "visibleRows": visible_rows,
        }
        if hidden_blocks is not None:
            frame["hiddenBlocks"] = list(hidden_blocks)
        self.send_frame(frame)

    def send_frame(self, frame: Mapping[str, Any]) -> None:
        """Writes one frame as is (no id, no response awaited)."""
        self._require().handle.call(lib.omprpc_client_send_frame, _ffi.dumps(dict(frame)))

    # -- requests --

    def _request_data(self, command_type: str, payload: Mapping[str, Any] | None = None, *,
                      _timeout: float | None = LIBRARY_DEFAULT) -> Any:
        session = self._require()
        params = {k: v for k, v in (payload or {}).items() if v is not None}
        ctype = _ffi.encode(command_type, "command type")
        encoded = _ffi.dumps(params) if params else None
        ms = _request_ms(_timeout)
        data = self._synced(session, lambda: session.handle.call_out(lib.omprpc_client_request, ctype, encoded, ms))
        return _loads(data)

    def _request(self, command_type: str, _timeout: float | None = LIBRARY_DEFAULT, **payload: Any) -> JsonObject:
        data = self._request_data(command_type, payload, _timeout=_timeout)
        if data is None:
            return {}
        if not isinstance(data, dict):
            raise RpcError("RPC response payload must be an object")
        return data

    def request_raw(self, command_type: str, **payload: JsonValue) -> JsonObject:
        """Any command; keyword arguments that are None are left out. Returns ``data``."""
        return self._request(command_type, **payload)

    def get_state(self, *, timeout: float | None = LIBRARY_DEFAULT) -> SessionState:
        return parse_session_state(self._request("get_state", _timeout=timeout))

    def set_fast_mode(self, enabled: bool, *, timeout: float | None = LIBRARY_DEFAULT) -> FastModeResult:
        return parse_fast_mode_result(self._request("set_fast_mode", _timeout=timeout, enabled=enabled))

    def set_model(self, provider: str, model_id: str, *, timeout: float | None = LIBRARY_DEFAULT) -> ModelInfo:
        data = self._request("set_model", _timeout=timeout, provider=provider, modelId=model_id)
        model = parse_model_info(data or None)
        if model is None:
            raise RpcError("set_model returned an empty payload")
        return model

    def cycle_model(self, *, timeout: float | None = LIBRARY_DEFAULT) -> ModelCycleResult | None:
        """None when there is no other model (the agent answers null)."""
        return parse_model_cycle_result(self._request_data("cycle_model", _timeout=timeout))

    def get_available_models(self, *, timeout: float | None = LIBRARY_DEFAULT) -> tuple[ModelInfo, ...]:
        models = self._request("get_available_models", _timeout=timeout).get("models")
        if not isinstance(models, list):
            return ()
        return tuple(m for m in (parse_model_info(item) for item in models) if m is not None)

    def set_thinking_level(self, level: ThinkingLevel, *, timeout: float | None = LIBRARY_DEFAULT) -> None:
        self._request("set_thinking_level", _timeout=timeout, level=level)

    def cycle_thinking_level(self, *, timeout: float | None = LIBRARY_DEFAULT) -> ThinkingLevelCycleResult | None:
        return parse_thinking_level_cycle_result(self._request_data("cycle_thinking_level", _timeout=timeout))

    def set_steering_mode(self, mode: SteeringMode, *, timeout: float | None = LIBRARY_DEFAULT) -> None:
        self._request("set_steering_mode", _timeout=timeout, mode=mode)

    def set_follow_up_mode(self, mode: SteeringMode, *, timeout: float | None = LIBRARY_DEFAULT) -> None:
        self._request("set_follow_up_mode", _timeout=timeout, mode=mode)

    def set_interrupt_mode(self, mode: InterruptMode, *, timeout: float | None = LIBRARY_DEFAULT) -> None:
        self._request("set_interrupt_mode", _timeout=timeout, mode=mode)

    def compact(self, custom_instructions: str | None = None,
                *, timeout: float | None = 600.0) -> CompactionResult:
        data = self._request("compact", _timeout=timeout, customInstructions=custom_instructions)
        return parse_compaction_result(data)

    def set_auto_compaction(self, enabled: bool, *, timeout: float | None = LIBRARY_DEFAULT) -> None:
        self._request("set_auto_compaction", _timeout=timeout, enabled=enabled)

    def set_auto_retry(self, enabled: bool, *, timeout: float | None = LIBRARY_DEFAULT) -> None:
        self._request("set_auto_retry", _timeout=timeout, enabled=enabled)

    def abort_retry(self, *, timeout: float | None = LIBRARY_DEFAULT) -> None:
        self._request("abort_retry", _timeout=timeout)

    def bash(self, command: str, *, timeout: float | None = LIBRARY_DEFAULT) -> BashResult:
        return parse_bash_result(self._request("bash", _timeout=timeout, command=command))

    def abort_bash(self, *, timeout: float | None = LIBRARY_DEFAULT) -> None:
        self._request("abort_bash", _timeout=timeout)

    def get_session_stats(self, *, timeout: float | None = LIBRARY_DEFAULT) -> SessionStats:
        return parse_session_stats(self._request("get_session_stats", _timeout=timeout))

    def export_html(self, output_path: str | Path | None = None, *, timeout: float | None = LIBRARY_DEFAULT) -> Path:
        payload = self._request("export_html", _timeout=timeout,
                                outputPath=str(output_path) if output_path is not None else None)
        path = payload.get("path")
        if not isinstance(path, str):
            raise RpcError("export_html response did not include a path")
        return Path(path)

    def new_session(self, parent_session: str | None = None,
                    *, timeout: float | None = LIBRARY_DEFAULT) -> CancellationResult:
        return parse_cancellation_result(self._request("new_session", _timeout=timeout, parentSession=parent_session))

    def switch_session(self, session_path: str | Path,
                       *, timeout: float | None = LIBRARY_DEFAULT) -> CancellationResult:
        data = self._request("switch_session", _timeout=timeout, sessionPath=str(session_path))
        return parse_cancellation_result(data)

    def branch(self, entry_id: str, *, timeout: float | None = LIBRARY_DEFAULT) -> BranchResult:
        return parse_branch_result(self._request("branch", _timeout=timeout, entryId=entry_id))

    def get_branch_messages(self, *, timeout: float | None = LIBRARY_DEFAULT) -> tuple[BranchMessage, ...]:
        return parse_branch_messages(self._request("get_branch_messages", _timeout=timeout))

    def get_last_assistant_text(self, *, timeout: float | None = LIBRARY_DEFAULT) -> str | None:
        value = self._request("get_last_assistant_text", _timeout=timeout).get("text")
        return value if isinstance(value, str) else None

    def set_session_name(self, name: str, *, timeout: float | None = LIBRARY_DEFAULT) -> None:
        self._request("set_session_name", _timeout=timeout, name=name)

    def get_todos(self, *, timeout: float | None = LIBRARY_DEFAULT) -> tuple[TodoPhase, ...]:
        return self.get_state(timeout=timeout).todo_phases

    def set_todos(self, todos: Sequence[TodoSeed | TodoPhaseSeed],
                  *, timeout: float | None = LIBRARY_DEFAULT) -> tuple[TodoPhase, ...]:
        phases = _normalize_todo_phases(todos)
        return parse_todo_phases(self._request("set_todos", _timeout=timeout, phases=phases).get("todoPhases"))

    def clear_todos(self, *, timeout: float | None = LIBRARY_DEFAULT) -> tuple[TodoPhase, ...]:
        return self.set_todos((), timeout=timeout)

    def get_messages(self, *, timeout: float | None = LIBRARY_DEFAULT) -> tuple[AgentMessage, ...]:
        """The session's messages. Under protocol v2 the pages of ``get_messages_page`` are
        walked (falling back to ``get_messages`` when the session is busy or a cursor goes
        stale); under v1 ``get_messages`` is used."""
        session = self._require()
        if session.protocol_version == 2:
            try:
                messages: list[AgentMessage] = []
                seen: set[str] = set()
                total: int | None = None
                cursor: str | None = None
                while True:
                    page = self.get_messages_page(cursor=cursor, limit=256, timeout=timeout)
                    if total is not None and page.total_messages != total:
                        raise RpcError("RPC message pagination returned an inconsistent total")
                    total = page.total_messages
                    messages.extend(page.messages)
                    cursor = page.next_cursor
                    if cursor is None:
                        break
                    if cursor in seen:
                        raise RpcError("RPC message pagination repeated a cursor")
                    seen.add(cursor)
                if len(messages) != total:
                    raise RpcError("RPC message pagination ended before the advertised total")
                return tuple(messages)
            except RpcCommandError as error:
                if error.command != "get_messages_page" or not (
                    error.code in _MESSAGES_PAGE_FALLBACK_CODES or error.error in _MESSAGES_PAGE_FALLBACK_ERRORS
                ):
                    raise
        return parse_agent_messages(self._request("get_messages", _timeout=timeout).get("messages"))

    def get_messages_page(self, *, cursor: str | None = None, limit: int | None = None,
                          timeout: float | None = LIBRARY_DEFAULT) -> MessagesPage:
        payload = self._request("get_messages_page", _timeout=timeout, cursor=cursor, limit=limit)
        total = payload.get("totalMessages")
        if not isinstance(total, int) or isinstance(total, bool) or total < 0:
            raise RpcError("get_messages_page response has an invalid totalMessages")
        next_cursor = payload.get("nextCursor")
        if next_cursor is not None and not isinstance(next_cursor, str):
            raise RpcError("get_messages_page response has an invalid nextCursor")
        return MessagesPage(
            messages=parse_agent_messages(payload.get("messages")), total_messages=total, next_cursor=next_cursor
        )

    def _register(self, export: Any, wire: Any, key: str, timeout: float | None) -> tuple[str, ...]:
        """One registration call (set/add/remove host tools or URI schemes) → the names the
        agent lists in its answer under ``key``."""
        session = self._require()
        encoded = _ffi.dumps(wire)
        ms = _request_ms(timeout)
        data = _loads(self._synced(session, lambda: session.handle.call_out(export, encoded, ms)))
        names = data.get(key) if isinstance(data, dict) else None
        if names is None:
            names = []
        if not isinstance(names, list):
            raise RpcError(f"the registration response did not include {key}")
        return tuple(str(name) for name in names)

    def _refuse_bridged(self, what: str) -> None:
        session = self._session
        if session is not None and session.bridged_tools:
            raise RpcError(f"the host tools of a bridged client (pi) are registered at start and cannot be {what}; "
                           "start a new client with the new custom_tools")

    def set_custom_tools(self, tools: Sequence[HostTool[Any, Any]], *,
                         timeout: float | None = LIBRARY_DEFAULT) -> tuple[str, ...]:
        """Registers host tools (replacing the set). Before start() they are only stored. Tools
        served through the tool bridge (pi) are fixed at start: RpcError then."""
        self._refuse_bridged("replaced")
        self._custom_tools = tuple(tools)
        session = self._session
        if session is None:
            return tuple(tool.name for tool in self._custom_tools)
        session.tools = {t.name: t for t in self._custom_tools}
        return self._register(lib.omprpc_client_set_host_tools, [t.to_wire() for t in self._custom_tools],
                              "toolNames", timeout)

    def add_custom_tools(self, tools: Sequence[HostTool[Any, Any]], *,
                         timeout: float | None = LIBRARY_DEFAULT) -> tuple[str, ...]:
        """Registers more host tools (``add_host_tools``, omp protocol 1.1), keeping those
        registered; a tool of the same name is replaced in place. Returns every name the agent
        lists. Handlers serve calls from the moment the request goes out; a refusal (an agent
        without the command: RpcCommandError) leaves the registrations as they were."""
        self._refuse_bridged("added to")
        merged = {t.name: t for t in self._custom_tools}
        merged.update({t.name: t for t in tools})
        before, self._custom_tools = self._custom_tools, tuple(merged.values())
        session = self._session
        if session is None:
            return tuple(merged)
        previous = session.tools
        session.tools = dict(merged)
        try:
            return self._register(lib.omprpc_client_add_host_tools, [t.to_wire() for t in tools], "toolNames", timeout)
        except BaseException:
            self._custom_tools, session.tools = before, previous
            raise

    def remove_custom_tools(self, tool_names: Sequence[str], *,
                            timeout: float | None = LIBRARY_DEFAULT) -> tuple[str, ...]:
        """Unregisters host tools by name (``remove_host_tools``); returns the names left."""
        self._refuse_bridged("removed from")
        gone = set(tool_names)
        session = self._session
        if session is None:
            self._custom_tools = tuple(t for t in self._custom_tools if t.name not in gone)
            return tuple(t.name for t in self._custom_tools)
        names = self._register(lib.omprpc_client_remove_host_tools, list(tool_names), "toolNames", timeout)
        # Handlers stay until the agent agreed: it may call them until then.
        self._custom_tools = tuple(t for t in self._custom_tools if t.name not in gone)
        session.tools = {t.name: t for t in self._custom_tools}
        return names

    def set_host_uris(self, host_uris: Sequence[HostUri[Any]], *,
                      timeout: float | None = LIBRARY_DEFAULT) -> tuple[str, ...]:
        """Registers host URI schemes (replacing the set). Before start() only stored."""
        self._host_uris = tuple(host_uris)
        session = self._session
        if session is None:
            return tuple(uri.scheme for uri in self._host_uris)
        session.uris = {u.scheme: u for u in self._host_uris}
        return self._register(lib.omprpc_client_set_host_uri_schemes, [u.to_wire() for u in self._host_uris],
                              "schemes", timeout)

    def add_host_uris(self, host_uris: Sequence[HostUri[Any]], *,
                      timeout: float | None = LIBRARY_DEFAULT) -> tuple[str, ...]:
        """Registers more host URI schemes (``add_host_uri_schemes``, omp protocol 1.1), keeping
        those registered; a refusal leaves them as they were. Returns every scheme listed."""
        merged = {u.scheme: u for u in self._host_uris}
        merged.update({u.scheme: u for u in host_uris})
        before, self._host_uris = self._host_uris, tuple(merged.values())
        session = self._session
        if session is None:
            return tuple(merged)
        previous = session.uris
        session.uris = dict(merged)
        try:
            return self._register(lib.omprpc_client_add_host_uri_schemes, [u.to_wire() for u in host_uris],
                                  "schemes", timeout)
        except BaseException:
            self._host_uris, session.uris = before, previous
            raise

    def remove_host_uris(self, schemes: Sequence[str], *,
                         timeout: float | None = LIBRARY_DEFAULT) -> tuple[str, ...]:
        """Unregisters host URI schemes (``remove_host_uri_schemes``); returns those left."""
        gone = {s.strip().lower() for s in schemes}
        session = self._session
        if session is None:
            self._host_uris = tuple(u for u in self._host_uris if u.scheme not in gone)
            return tuple(u.scheme for u in self._host_uris)
        names = self._register(lib.omprpc_client_remove_host_uri_schemes, list(schemes), "schemes", timeout)
        self._host_uris = tuple(u for u in self._host_uris if u.scheme not in gone)
        session.uris = {u.scheme: u for u in self._host_uris}
        return names

    # -- omp protocol 1.1 (the omp_rpc surface; agents without it answer "Unknown command") --

    def get_protocol_info(self, *, timeout: float | None = LIBRARY_DEFAULT) -> JsonObject:
        """The agent's protocol description: ``protocol``, ``server``, ``capabilities``, ``limits`` …"""
        return self._request("get_protocol_info", _timeout=timeout)

    def cancel_operation(self, operation_id: str, *, timeout: float | None = LIBRARY_DEFAULT) -> JsonObject:
        """Cancels a running operation (its call then fails with code ``operation_cancelled``);
        an unknown one: RpcCommandError, code ``operation_not_found``."""
        return self._request("cancel_operation", _timeout=timeout, operationId=operation_id)

    def get_messages_response(self, *, timeout: float | None = LIBRARY_DEFAULT) -> JsonObject:
        """``get_messages``' whole ``data``, unparsed."""
        return self._request("get_messages", _timeout=timeout)

    def get_session_entries(self, *, offset: int | None = None, limit: int | None = None,
                            entry_types: Sequence[str] | None = None, include_content: bool | None = None,
                            timeout: float | None = LIBRARY_DEFAULT) -> JsonObject:
        """A page of the session's entries: ``{entries, total, offset, limit, currentLeafId,
        nextOffset?}`` as the agent sends it."""
        return self._request("get_session_entries", _timeout=timeout, offset=offset, limit=limit,
                             entryTypes=list(entry_types) if entry_types is not None else None,
                             includeContent=include_content)

    def get_session_tree(self, *, include_entries: bool = False,
                         timeout: float | None = LIBRARY_DEFAULT) -> JsonObject:
        """The session's entry tree: ``{root, currentLeafId}``."""
        return self._request("get_session_tree", _timeout=timeout, includeEntries=include_entries)

    def get_observable_sessions(self, *, timeout: float | None = LIBRARY_DEFAULT) -> tuple[JsonObject, ...]:
        return self._listed("get_observable_sessions", "sessions", timeout)

    def get_login_providers(self, *, timeout: float | None = LIBRARY_DEFAULT) -> tuple[JsonObject, ...]:
        return self._listed("get_login_providers", "providers", timeout)

    def login(self, provider_id: str, *, timeout: float | None = 600.0) -> JsonObject:
        """Logs in to an OAuth provider and returns the operation's result. The agent sends the
        URL to open as a passive ``open_url`` UI request (an ``on_ui_request`` listener sees
        it). ``timeout``: for the whole login, 600 s as ``omp_rpc``."""
        return self._request("login", _timeout=timeout, providerId=provider_id)

    def ping(self, payload: JsonValue = None, *, timeout: float | None = LIBRARY_DEFAULT) -> JsonObject:
        """omp protocol 1.1: ``{pong: true, payload?}`` (the agent also sends a ``pong`` frame)."""
        return self._request("ping", _timeout=timeout, payload=payload)

    # -- pi's own commands (pi's RpcClient, 0.73.1) --

    def fork(self, entry_id: str, *, timeout: float | None = LIBRARY_DEFAULT) -> BranchResult:
        """pi: a new session from the user message ``entry_id`` (see :meth:`get_fork_messages`)."""
        return parse_branch_result(self._request("fork", _timeout=timeout, entryId=entry_id))

    def clone(self, *, timeout: float | None = LIBRARY_DEFAULT) -> CancellationResult:
        """pi: the current branch copied into a new session."""
        return parse_cancellation_result(self._request("clone", _timeout=timeout))

    def get_fork_messages(self, *, timeout: float | None = LIBRARY_DEFAULT) -> tuple[BranchMessage, ...]:
        """pi: the user messages a fork can start from."""
        return parse_branch_messages(self._request("get_fork_messages", _timeout=timeout))

    def get_commands(self, *, timeout: float | None = LIBRARY_DEFAULT) -> tuple[JsonObject, ...]:
        """pi: the slash commands (extension commands, prompt templates, skills)."""
        return self._listed("get_commands", "commands", timeout)

    # -- omp's commands beyond omp_rpc's --

    def get_available_commands(self, *, timeout: float | None = LIBRARY_DEFAULT) -> tuple[JsonObject, ...]:
        """omp: the slash commands (built-in, extension, custom, file), each ``{name, description?,
        source, …}``."""
        return self._listed("get_available_commands", "commands", timeout)

    def handoff(self, custom_instructions: str | None = None, *,
                timeout: float | None = 600.0) -> JsonObject | None:
        """omp: summarizes the session into a handoff document and compacts in place;
        ``{savedPath}``, or None when nothing was saved."""
        data = self._request_data("handoff", {"customInstructions": custom_instructions}, _timeout=timeout)
        return dict(data) if isinstance(data, dict) else None

    def set_subagent_subscription(self, level: str, *,
                                  timeout: float | None = LIBRARY_DEFAULT) -> JsonObject:
        """omp: which subagent frames to receive, ``"off"``, ``"progress"`` or ``"events"``."""
        return self._request("set_subagent_subscription", _timeout=timeout, level=level)

    def get_subagents(self, *, timeout: float | None = LIBRARY_DEFAULT) -> tuple[JsonObject, ...]:
        return self._listed("get_subagents", "subagents", timeout)

    def get_subagent_messages(self, *, subagent_id: str | None = None, session_file: str | None = None,
                              from_byte: int | None = None,
                              timeout: float | None = LIBRARY_DEFAULT) -> JsonObject:
        """omp: a subagent's transcript from ``from_byte`` on (``{sessionFile, fromByte, nextByte,
        reset, entries, messages}``)."""
        return self._request("get_subagent_messages", _timeout=timeout, subagentId=subagent_id,
                             sessionFile=session_file, fromByte=from_byte)

    def _listed(self, command: str, key: str, timeout: float | None) -> tuple[JsonObject, ...]:
        items = self._request(command, _timeout=timeout).get(key)
        if not isinstance(items, list):
            raise RpcError(f"{command} response did not include {key}")
        return tuple(dict(item) for item in items if isinstance(item, dict))

    # -- prompts --

    @staticmethod
    def _prompt_options(images: Sequence[ImageContent] | None,
                        streaming_behavior: StreamingBehavior | None = None,
                        content: Sequence[Mapping[str, Any]] | None = None) -> bytes | None:
        options: JsonObject = {}
        if images is not None:
            options["images"] = list(images)
        if streaming_behavior is not None:
            options["streamingBehavior"] = streaming_behavior
        if content is not None:
            if isinstance(content, (str, bytes, Mapping)):
                raise TypeError("content must be a sequence of content blocks")
            options["content"] = list(content)
        return _ffi.dumps(options) if options else None

    def prompt(
        self,
        message: str = "",
        *,
        images: Sequence[ImageContent] | None = None,
        streaming_behavior: StreamingBehavior | None = None,
        content: Sequence[Mapping[str, Any]] | None = None,
        timeout: float | None = LIBRARY_DEFAULT,
    ) -> str:
        """Sends ``prompt``; returns its request id once the agent acknowledged it (``timeout``:
        for the acknowledgement). ``content``: blocks appended to the message (text, images,
        text files; see :func:`omprpc.prompt_from_content`)."""
        session = self._require()
        encoded = _ffi.encode(message, "message")
        options = self._prompt_options(images, streaming_behavior, content)
        ms = _request_ms(timeout)
        rid = self._synced(session, lambda: session.handle.call_out(lib.omprpc_client_prompt, encoded, options, ms))
        return (rid or b"").decode()

    def abort_and_prompt(self, message: str = "", *, images: Sequence[ImageContent] | None = None,
                         content: Sequence[Mapping[str, Any]] | None = None,
                         timeout: float | None = LIBRARY_DEFAULT) -> str:
        session = self._require()
        encoded = _ffi.encode(message, "message")
        options = self._prompt_options(images, None, content)
        ms = _request_ms(timeout)
        rid = self._synced(session, lambda: session.handle.call_out(lib.omprpc_client_abort_and_prompt, encoded,
                                                                    options, ms))
        return (rid or b"").decode()

    @staticmethod
    def _with_content(message: str, images: Sequence[ImageContent] | None,
                      content: Sequence[Mapping[str, Any]] | None) -> tuple[str, list[Any] | None]:
        """steer / follow_up: content blocks become message text and images here (the
        library converts them for prompts only)."""
        all_images = list(images) if images is not None else None
        if content is None:
            return message, all_images
        built = prompt_from_content(content)
        text = built.get("message") or ""
        if text:
            message = f"{message}\n\n{text}" if message else text
        extra = built.get("images") or []
        if extra:
            all_images = (all_images or []) + list(extra)
        return message, all_images

    def steer(self, message: str = "", *, images: Sequence[ImageContent] | None = None,
              content: Sequence[Mapping[str, Any]] | None = None, timeout: float | None = LIBRARY_DEFAULT) -> None:
        message, all_images = self._with_content(message, images, content)
        self._request("steer", _timeout=timeout, message=message, images=all_images)

    def follow_up(self, message: str = "", *, images: Sequence[ImageContent] | None = None,
                  content: Sequence[Mapping[str, Any]] | None = None,
                  timeout: float | None = LIBRARY_DEFAULT) -> JsonObject:
        """Queues a follow-up; returns the acknowledgement's ``data`` (``{}`` when it has none)."""
        message, all_images = self._with_content(message, images, content)
        return self._request("follow_up", _timeout=timeout, message=message, images=all_images)

    def abort(self, *, timeout: float | None = LIBRARY_DEFAULT) -> None:
        self._request("abort", _timeout=timeout)

    def _turn_ms(self, timeout: float | None) -> int:
        return _ms(timeout) if timeout is not None else _ffi.TIMEOUT_DEFAULT

    def prompt_and_wait(
        self,
        message: str = "",
        *,
        images: Sequence[ImageContent] | None = None,
        streaming_behavior: StreamingBehavior | None = None,
        timeout: float | None = None,
        content: Sequence[Mapping[str, Any]] | None = None,
    ) -> PromptTurn:
        """Prompts and waits until *that* prompt completes (its run's terminal ``agent_end``,
        a ``prompt_result``, or ``agentInvoked:false``). ``timeout=None`` means the
        ``turn_timeout`` option, which defaults to no deadline. ``content`` as for prompt()."""
        session = self._require()
        encoded = _ffi.encode(message, "message")
        options = self._prompt_options(images, streaming_behavior, content)
        ms = self._turn_ms(timeout)

        def call() -> _ffi.OwnedString:
            status, ptr, err = session.handle.call_raw(lib.omprpc_client_prompt_and_wait, encoded, options, ms)
            if status != _ffi.OK:
                raise _ffi.error_from(status, err)
            if not ptr:
                raise RpcError("the library returned no turn")
            return _ffi.OwnedString(ptr)  # freed with the turn (or at once if nobody takes it)

        return self._synced(session, lambda: _parse_turn(_interruptible(call)),
                            lambda turn: turn.agent_invoked and turn.prompt_result is None)

    def collect_events(self, timeout: float | None = None) -> tuple[RpcNotification, ...]:
        """Events from now through the next terminal ``agent_end`` (typed)."""
        session = self._require()
        ms = self._turn_ms(timeout)
        raw = self._synced(session, lambda: _interruptible(lambda: session.handle.call_out(
            lib.omprpc_client_collect_events, ms)), lambda _raw: True)
        events = _lazy.lazy_events(raw, 0, len(raw)) if raw and raw[:1] == b"[" else None
        if events is None:
            data = _loads_bulk(raw) if raw is not None else None
            events = _typed_bulk(data if isinstance(data, list) else ())
        return events

    def wait_for_idle(self, timeout: float | None = None) -> None:
        """Waits until every accepted prompt has completed; raises the first late prompt
        failure recorded since the last prompt."""
        session = self._require()
        ms = self._turn_ms(timeout)
        self._synced(session, lambda: _interruptible(lambda: session.handle.call(lib.omprpc_client_wait_for_idle, ms)))

    @staticmethod
    def _validate_history_limit(name: str, limit: int | None) -> int | None:
        if limit is None:
            return None
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise TypeError(f"{name} must be an int or None")
        if limit <= 0:
            raise ValueError(f"{name} must be greater than zero")
        return limit
