"""One started client, ``_Session``: the library handle, the dispatcher thread that polls the
event queue and runs the listeners, listener synchronisation, log forwarding and teardown.
Host calls and policy questions are answered by its ``_HostCalls`` side (``_host``)."""

from __future__ import annotations

import ctypes
import json
import logging
import os
import select
import sys
import threading
import time
from operator import sub
from typing import Any, Protocol, Sequence

from . import _ffi
from ._common import _LOG_LEVELS, _loads, _loads_bulk
from ._events import ListenerErrorEvent, PolicyHandler, _Listeners
from ._ffi import lib
from ._host import _HostCalls, _WorkerPool
from .errors import RpcError, RpcProcessExitError, RpcProtocolError
from .host_tools import HostTool
from .host_uris import HostUri
from .protocol import (
    AGENT_EVENT_TYPES,
    EventOverflow,
    ExtensionUiRequest,
    JsonObject,
    PolicyEvalEvent,
    UnknownNotification,
    to_notification,
)

_BATCH_MAX_EVENTS = 4096
#: Host calls and their cancellations: the session serves them even when nobody listens.
_HOST_TYPES = frozenset({"host_tool_call", "host_uri_request", "host_tool_cancel", "host_uri_cancel"})


def _loads_lenient(data: bytes) -> Any:
    """An event's JSON, decoded; None (skipped) if it does not parse."""
    try:
        return json.loads(data)
    except ValueError:
        return None


def _decode_events(parts: list[bytes]) -> list[Any]:
    """Events' JSON texts, decoded: one array at once beats one json.loads per event (the GC
    paused: decoded JSON holds no cycles); an event that does not parse spoils only itself
    (None in its place)."""
    try:
        frames = _loads_bulk(b"[" + b",".join(parts) + b"]")
    except ValueError:
        return [_loads_lenient(part) for part in parts]
    return frames if isinstance(frames, list) else []


class _Wait(Protocol):
    """Where the dispatcher sleeps while the queue is empty: until the library queues an event
    or the client closes, or until ``wake`` (settle() asks the dispatcher to look again).
    omprpc.aio watches the same descriptor, or on Windows the same handle, itself."""

    def wait(self) -> None: ...

    def wake(self) -> None: ...

    def close(self) -> None: ...


if sys.platform == "win32":
    from . import _winwait

    class _HandleWait:
        """Windows, which has neither poll(2) nor the event descriptor (docs/windows.md):
        WaitForMultipleObjects on the library's event HANDLE (set while events are queued or
        the client is closed) and an event of ours that ``wake`` sets."""

        def __init__(self, event_handle: int):
            self.event_handle = event_handle
            self._wake = _winwait.WakeEvent()

        def wait(self) -> None:
            _winwait.wait_any((self.event_handle, self._wake.handle))

        def wake(self) -> None:
            self._wake.set()

        def close(self) -> None:
            self._wake.close()

else:

    class _PollWait:
        """Unix: poll(2) on the library's event descriptor (readable while events are queued or
        the client is closed) and a pipe of ours that ``wake`` writes to."""

        def __init__(self, event_fd: int):
            self._r, self._w = os.pipe()
            os.set_blocking(self._r, False)
            os.set_blocking(self._w, False)
            self._poller = select.poll()
            self._poller.register(event_fd, select.POLLIN)
            self._poller.register(self._r, select.POLLIN)
            #: wake() and close() exclude each other: a write after the close could reach another
            #: file that reused the descriptor.
            self._lock = threading.Lock()
            self._closed = False

        def wait(self) -> None:
            self._poller.poll()
            try:
                while os.read(self._r, 512):
                    pass
            except (BlockingIOError, OSError):
                pass

        def wake(self) -> None:
            with self._lock:
                if self._closed:
                    return
                try:
                    os.write(self._w, b"s")
                except (BlockingIOError, OSError):
                    pass  # the pipe is full: a wake-up is pending anyway

        def close(self) -> None:
            with self._lock:
                if self._closed:
                    return
                self._closed = True
                for fd in (self._r, self._w):
                    try:
                        os.close(fd)
                    except OSError:
                        pass


class _Session(_HostCalls):
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
        self._sync_waiters = 0
        #: Where the dispatcher sleeps while the queue is empty.
        self._waiter: _Wait
        if sys.platform == "win32":
            self._waiter = _HandleWait(self.handle.event_handle())
        else:
            self._waiter = _PollWait(self.handle.event_fd())
        self.thread = threading.Thread(target=self._run, name="omprpc-dispatch", daemon=True)

    def start(self, dispatch: bool = True) -> None:
        """Reads the agent's flavour and protocol, then starts the dispatcher thread unless
        ``dispatch`` is False (``omprpc.aio`` reads the event queue on its event loop)."""
        try:
            info = self.info()
            self.flavor = info.get("flavor")
            self.protocol_version = int(info.get("protocolVersion") or 1)
            # Which agent a dispatcher serves, in thread listings: omprpc-dispatch-<agent pid>.
            if isinstance(info.get("pid"), int):
                self.thread.name = f"omprpc-dispatch-{info['pid']}"
        except (RpcError, ValueError, TypeError):
            self.protocol_version = 1
        if dispatch:
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
        structured = _ffi.has("omprpc_client_next_event_batch")
        next_batch, next_array = lib.omprpc_client_next_event_batch, lib.omprpc_client_next_events
        try:
            while True:
                with self._sync:
                    pass_req = self._sync_req
                # While something takes the streamed message_update events (nearly every event),
                # a batch is one JSON array decoded at once: cheaper than copying the events out
                # one by one. Otherwise a batch of views, decoded selectively by type.
                whole = not structured or self._streaming()
                try:
                    status, ptr, err = self.handle.call_raw(next_array if whole else next_batch,
                                                            _BATCH_MAX_EVENTS, 0)
                except RpcError:
                    break
                if status == _ffi.OK:
                    if ptr:
                        if whole:
                            self._dispatch_array(ptr)
                        else:
                            self._dispatch_batch(ptr)
                    continue
                if status == _ffi.TIMEOUT:
                    with self._sync:
                        self._drained = pass_req
                        if self._sync_waiters:
                            self._sync.notify_all()
                    self._waiter.wait()
                    continue
                break  # CLOSED (after the queue was drained), or a fault
        finally:
            with self._sync:
                self._drained = 1 << 62
                self._sync.notify_all()
            with self._shutdown_lock:
                self._dispatcher_done = True
                free_now = self._free_on_exit
            if free_now:
                self._release()

    def _idle(self) -> bool:
        """Nothing needs any event: no listener, no host tool or URI served here (the library
        answers the others' calls), no policy handler."""
        return self.listeners.count == 0 and not (self.tools or self.uris) and self.policy_handler is None

    def _dispatch_batch(self, batch: int) -> None:
        """An ``omprpc_event_batch``: each event's type is read from its view; only the events
        something needs (see :meth:`_needed`) are decoded, then dispatched in order."""
        try:
            if self._idle():
                return
            tptrs, tlens, ptrs, lens = _ffi.view_columns(lib.omprpc_event_batch_events, batch)
            # Every event copied out (one call each); a type is then a slice of its event's copy
            # when the view points into the event (else read on its own: a decoded escape).
            parts = list(map(ctypes.string_at, ptrs, lens))
            if not (self.listeners.lists["frame"] or self.listeners.lists["payload"]):
                string_at = ctypes.string_at
                types = [part[o:o + n] if 0 <= o <= len(part) - n else string_at(t, n)
                         for part, o, n, t in zip(parts, map(sub, tptrs, ptrs), tlens, tptrs)]
                needed: dict[bytes, bool] = {}
                for t in set(types):
                    needed[t] = self._needed(t.decode("utf-8", "replace"))
                parts = [part for part, t in zip(parts, types) if needed[t]]
                if not parts:
                    return
        finally:
            lib.omprpc_event_batch_free(batch)
        self._dispatch_frames(_decode_events(parts))

    def _streaming(self) -> bool:
        """Whether nearly every event is needed: a frame or payload listener, or one that takes
        the message_update events (an agent's bulk)."""
        lists = self.listeners.lists
        return bool(lists["frame"] or lists["payload"]) or self._needed("message_update")

    def _dispatch_array(self, ptr: int) -> None:
        """A JSON array of events (``omprpc_client_next_events``: while nearly every event is
        needed, or from an older library without ``omprpc_client_next_event_batch``), decoded
        whole when something needs events."""
        if self._idle():
            lib.omprpc_string_free(ptr)
            return
        data = _ffi.take_raw(ptr)
        try:
            frames = _loads_bulk(data) if data else []
        except ValueError:
            return
        self._dispatch_frames(frames if isinstance(frames, list) else [])

    def _dispatch_frames(self, frames: list[Any]) -> None:
        listeners = self.listeners
        for frame in frames:
            if isinstance(frame, dict):
                try:
                    self._dispatch(frame)
                except Exception as exc:  # a bug here must not end the dispatcher
                    kind = frame.get("type")
                    listeners.record_error(ListenerErrorEvent("dispatch", kind if isinstance(kind, str) else None,
                                                              self._dispatch, exc))

    def _needed(self, kind: str) -> bool:
        """Whether :meth:`_dispatch` does anything with a frame of type ``kind`` (the frame and
        payload listeners aside: they take every frame), decided before decoding it."""
        L = self.listeners
        lists = L.lists
        if kind in _HOST_TYPES:
            return L.count > 0 or bool(self.tools or self.uris)
        if kind == "response":
            return False
        if kind == "protocol_error":
            return bool(lists["protocol_error"])
        notified = bool(lists["notification"])
        if kind == "policy_eval":
            return self.policy_handler is not None or notified or bool(lists["policy_eval"] or lists["unknown_notification"])
        if kind == "tool_blocked":
            return notified or bool(lists["tool_blocked"])
        if kind == "event_overflow":
            return notified or bool(lists["event_overflow"] or lists["unknown_notification"])
        if kind == "ready":
            return notified or bool(lists["ready"])
        if kind == "extension_ui_request":
            return notified or bool(lists["ui_request"])
        if kind == "extension_error":
            return notified or bool(lists["extension_error"])
        if kind in AGENT_EVENT_TYPES:
            return notified or bool(lists["event"] or L.typed.get(kind) or lists["unknown_notification"])
        return notified or bool(lists["unknown_notification"])

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
            return
        if lists["notification"] or lists["unknown_notification"]:
            note = to_notification(frame, private=private)
            L.run("notification", note.type, lists["notification"], note)
            L.run("unknown_notification", note.type, lists["unknown_notification"], note)

    # -- listener synchronisation --

    def settle(self) -> None:
        """After a call that waits on the agent returned (or raised): waits (at most
        ``listener_sync_timeout``) until the dispatcher has run the listeners for everything
        queued so far, so listeners have seen the turn when prompt_and_wait returns, as with
        omp_rpc. That is every event before the call's outcome: the library queues an event
        before any waiter wakes on it (where the turn ended is the library's decision, never
        read here)."""
        if self.sync_timeout <= 0 or self.listeners.count == 0:
            return
        if threading.current_thread() is self.thread or not self.thread.is_alive():
            return
        deadline = time.monotonic() + self.sync_timeout
        with self._sync:
            self._sync_req += 1
            req = self._sync_req
            self._sync_waiters += 1
        try:
            self._waiter.wake()
            with self._sync:
                while self._drained < req:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return
                    self._sync.wait(remaining)
        finally:
            with self._sync:
                self._sync_waiters -= 1

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
        self._waiter.close()

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
