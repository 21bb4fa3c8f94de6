"""Host tools, host URIs and the tool policy gate: the worker pool that runs their handlers, the
session's side (``_HostCalls``: a host call or policy question in, the handler's answer out)
and RpcClient's side (``_HostRegistration``: verdicts, handlers, registering tools and URI
schemes)."""

from __future__ import annotations

import inspect
import queue
import threading
from typing import Any, Awaitable, Callable, Coroutine, Sequence, cast

from . import _ffi
from ._base import _ClientBase
from ._common import LIBRARY_DEFAULT, _loads, _request_ms
from ._events import PolicyHandler
from ._ffi import lib
from .errors import RpcError
from .host_tools import HostTool, HostToolContext, normalize_result
from .host_uris import HostUri, HostUriContext, normalize_read_result
from .protocol import JsonObject, PolicyEvalEvent


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


def _verdict_of(verdict: object) -> tuple[bool, str | None]:
    """A policy handler's answer: True / False or ``(allow, reason)``; anything else blocks."""
    if isinstance(verdict, bool):
        return verdict, None
    if (isinstance(verdict, tuple) and len(verdict) == 2 and isinstance(verdict[0], bool)
            and (verdict[1] is None or isinstance(verdict[1], str))):
        return verdict[0], verdict[1]
    return False, f"the policy handler returned {verdict!r}, not a verdict"


class _HostCalls:
    """A mixin of _Session: runs the policy handler, host tools and host URI handlers on the
    worker pool and sends their answers (``_Session`` sets these attributes)."""

    handle: _ffi.Handle
    tools: dict[str, HostTool[Any, Any]]
    uris: dict[str, HostUri[Any]]
    pool: _WorkerPool
    calls: dict[str, threading.Event]
    calls_lock: threading.Lock
    _stopping: bool

    # -- the policy gate --

    def _run_policy(self, handler: PolicyHandler, question: PolicyEvalEvent) -> None:
        """Runs the policy handler on a host worker and sends its verdict. A handler that
        raises or returns something else blocks the tool (the gate fails closed)."""
        try:
            allow, reason = _verdict_of(handler(question))
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

    def _host_tool_call(self, frame: JsonObject,
                        spawn: Callable[[Coroutine[Any, Any, None]], None] | None = None) -> None:
        """Runs the called tool on the worker pool; with ``spawn`` (``omprpc.aio``: a task on
        its event loop), an ``async def`` tool as the coroutine handed to ``spawn``."""
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
        call = (tool, call_id, tool_call_id if isinstance(tool_call_id, str) else "",
                args if isinstance(args, dict) else {}, cancel)
        if spawn is not None and inspect.iscoroutinefunction(tool.execute):
            spawn(self._run_async_tool(*call))
        elif not self.pool.submit(self._run_tool, *call):
            cancel.set()

    def _tool_context(self, call_id: str, tool_call_id: str, cancel: threading.Event) -> HostToolContext[Any]:
        return HostToolContext(
            tool_call_id=tool_call_id,
            _cancel_event=cancel,
            _send_update=lambda result: self._tool_update(call_id, result, cancel),
        )

    def _run_tool(self, tool: HostTool[Any, Any], call_id: str, tool_call_id: str, args: JsonObject,
                  cancel: threading.Event) -> None:
        try:
            value = tool.execute(tool.parse_params(args), self._tool_context(call_id, tool_call_id, cancel))
        except Exception as exc:
            self._tool_done(call_id, cancel, None, exc)
        else:
            self._tool_done(call_id, cancel, value, None)

    async def _run_async_tool(self, tool: HostTool[Any, Any], call_id: str, tool_call_id: str, args: JsonObject,
                              cancel: threading.Event) -> None:
        """:meth:`_run_tool` for an ``async def`` tool, as a task of ``omprpc.aio``'s loop (a
        task cancelled at close sends nothing: the agent is gone)."""
        try:
            value = await cast(Awaitable[Any], tool.execute(tool.parse_params(args),
                                                            self._tool_context(call_id, tool_call_id, cancel)))
        except Exception as exc:
            self._tool_done(call_id, cancel, None, exc)
        else:
            self._tool_done(call_id, cancel, value, None)

    def _tool_done(self, call_id: str, cancel: threading.Event, value: Any, error: Exception | None) -> None:
        """Sends a host tool's outcome (its value, or what it raised as the error result) unless
        the call was cancelled meanwhile (then nobody waits for it); the call is then over."""
        try:
            self._send_tool_outcome(call_id, cancel, value, error)
        finally:
            with self.calls_lock:
                self.calls.pop(call_id, None)

    def _send_tool_outcome(self, call_id: str, cancel: threading.Event, value: Any, error: Exception | None) -> None:
        if cancel.is_set():
            return
        if error is None and inspect.isawaitable(value):
            if inspect.iscoroutine(value):
                value.close()  # never run: no "never awaited" warning
            error = TypeError("an async host tool needs omprpc.aio.AsyncRpcClient (RpcClient runs plain functions)")
        if error is not None:
            self._tool_reply(call_id, {"content": [{"type": "text", "text": str(error)}], "details": {}}, True)
            return
        try:
            result = normalize_result(value)
        except Exception as exc:
            self._tool_reply(call_id, {"content": [{"type": "text", "text": str(exc)}], "details": {}}, True)
            return
        self._tool_reply(call_id, result, False)

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


class _HostRegistration(_ClientBase):
    """RpcClient's side: answering policy questions, and registering host tools and URI schemes
    (set / add / remove; before start() they are only stored)."""

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

    # -- host tools and URIs --

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
