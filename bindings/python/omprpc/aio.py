"""``omprpc.aio``: the asyncio client, :class:`AsyncRpcClient`.

One event loop drives any number of agents. How it waits, and why:

* **Events** come from the library's event queue, read on the loop: ``loop.add_reader`` on the
  client's ``omprpc_client_event_fd`` (readable while events are queued) takes every queued
  event at once as an event batch (``omprpc_client_next_event_batch``, timeout 0: it never
  blocks the loop). No thread reads events, and the sync client's dispatcher thread is not
  started. Windows has no such descriptor, and its Proactor loop no ``add_reader``: there one
  thread per client waits on the client's event HANDLE (``omprpc_client_event_handle``) and
  wakes the loop (``call_soon_threadsafe``), which takes the events the same way; the thread
  only waits, and it waits again once the loop has taken them.
* **Commands** (``get_state``, ``prompt``'s acknowledgement, ``bash``, …) are the sync client's
  own methods — the same argument checks, results and exceptions — run on a small shared
  thread pool (``executor``; by default one per process with :data:`DEFAULT_MAX_WORKERS`
  threads), because the C API's requests wait for the agent's reply inside the library. A
  thread is taken for one request's round trip, never for a turn.
* **Turns** (:meth:`AsyncRpcClient.stream`, :meth:`AsyncRpcClient.run`) send the prompt, then
  follow the event queue until the library's ``prompt_complete`` event for that prompt (the
  start option ``prompt_complete_events``): no thread of ours waits while the agent works
  (where the stream leaves the agent's activity open, the library's own watcher asks the
  agent, and the completion arrives as that event). The
  derived items (text and reasoning chunks, tool calls requested and completed, a retry the
  agent schedules, a compaction, the turn's end with usage and its attempts) are computed by
  the library's streaming summarizer (:class:`omprpc.Summarizer`), fed each event of the
  turn. Where the turn ends is the library's word (``prompt_complete``: the agent's
  ``agent_settled`` on pi 0.80.4 on, else the last run's end it does not retry after), never
  an ``agent_end`` read here: a retry or an overflow recovery stays inside one turn.
* The waits of the sync API that block inside the library for a whole run
  (``prompt_and_wait``, ``collect_events``, ``wait_for_idle``, ``next_ui_request``) are offered
  too, on a second shared pool (:data:`DEFAULT_MAX_WAITS` threads): each holds one of its
  threads until it returns, and they never hold up the commands (more of them at once than
  the pool has threads wait for a thread: prefer :meth:`~AsyncRpcClient.stream` and
  :meth:`~AsyncRpcClient.events`, which hold none). Calls that do not wait for
  the agent (the answers to UI requests and policy questions, ``send_frame``, ``info``,
  ``counters``) run on the loop directly.
* **Host tools and the policy gate**: an ``async def`` tool (``HostTool.execute``) or policy
  handler runs as a task on the loop; a plain function runs on the client's host worker pool,
  as with the sync client. Either way what it raises becomes the tool's error result (or
  blocks the tool), never an exception in the loop.

Cancellation: cancelling the task that iterates :meth:`~AsyncRpcClient.stream` (or awaits
:meth:`~AsyncRpcClient.run` or ``prompt_and_wait``), or leaving the ``async for`` early,
**aborts** the agent's run (``abort`` is sent). The next prompt of that client is sent only
once the aborted prompt has completed, so no event of the cancelled turn reaches the next one.
A cancelled command (``get_state``, ``bash``, …) or wait (``wait_for_idle``, …) raises
CancelledError at once; the library call ends in its pool thread (at the request's timeout or
the agent's answer) and its result is dropped. A call still queued for a thread never runs.

Back-pressure: each reader (an :meth:`~AsyncRpcClient.events` iterator, a stream) buffers at
most ``max_buffered_events`` frames (:data:`DEFAULT_MAX_BUFFERED_EVENTS`) that it has not
read yet. Past that, frames are dropped *for that reader* and counted: an ``events()``
iterator then yields an :class:`omprpc.EventOverflow` with the number it lost, where they went
missing; a stream, which cannot summarize a turn with holes, raises
:class:`omprpc.RpcLimitExceededError` and its turn is aborted as any turn left early. The
loop never waits on a slow reader, and no reader's memory grows without bound.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import ctypes
import inspect
import sys
import threading
from typing import Any, AsyncGenerator, Awaitable, Callable, Coroutine, Final, Mapping, Protocol, Sequence, TypeVar, cast

from . import _ffi
from ._aio_commands import _AsyncCommands
from ._common import LIBRARY_DEFAULT
from ._ffi import lib
from ._host import _verdict_of
from ._session import _BATCH_MAX_EVENTS, _HOST_TYPES, _decode_events, _Session
from ._turn import turn_outcome
from .client import RpcClient
from .errors import RpcError, RpcLimitExceededError, RpcProcessExitError, not_running_error
from .protocol import EventOverflow, ImageContent, JsonObject, PolicyEvalEvent, RpcNotification, to_notification
from .stream import (
    ABORT_REPEAT_INTERVAL,
    CompactionComplete,
    ReasoningChunk,
    RetryScheduled,
    StreamItem,
    TextChunk,
    ToolCallComplete,
    ToolCallRequest,
    TurnComplete,
    _derived,
    concurrency_error,
    turn_complete,
)
from .summary import Summarizer

__all__ = [
    "AsyncRpcClient",
    "CompactionComplete",
    "DEFAULT_MAX_BUFFERED_EVENTS",
    "DEFAULT_MAX_WAITS",
    "DEFAULT_MAX_WORKERS",
    "ReasoningChunk",
    "RetryScheduled",
    "StreamItem",
    "TextChunk",
    "ToolCallComplete",
    "ToolCallRequest",
    "TurnComplete",
]

_T = TypeVar("_T")

#: Threads of the shared pool that runs the commands of every AsyncRpcClient without its own
#: ``executor``: each holds a thread for one request's round trip to its agent (milliseconds).
DEFAULT_MAX_WORKERS: Final = 8
#: Threads of the second shared pool, for the sync API's waits on whole runs (prompt_and_wait,
#: collect_events, wait_for_idle, next_ui_request): they cannot starve the commands' pool.
DEFAULT_MAX_WAITS: Final = 8

#: Frames each reader of the client (an events() iterator, a stream) may have waiting before
#: more are dropped for it and counted (the library's own event queue holds as many).
DEFAULT_MAX_BUFFERED_EVENTS: Final = 65_536


class _Watch(Protocol):
    def close(self) -> None: ...


if sys.platform == "win32":
    from . import _winwait

    class _HandleWatch:
        """``loop.add_reader`` for the client's event HANDLE on Windows: a thread waits on the
        handle (set while events are queued or the client is closed) and has the loop call
        ``on_ready`` (``call_soon_threadsafe``); the handle stays set until the loop took the
        events, so the thread waits for that before it waits on the handle again. A failed
        wait goes to ``on_failure`` on the loop. ``close`` (on the loop) stops and joins the
        thread: the client may be freed after it, never before."""

        def __init__(self, loop: asyncio.AbstractEventLoop, handle: int, on_ready: Callable[[], None],
                     on_failure: Callable[[OSError], None], name: str):
            self._loop = loop
            self._handle = handle
            self._on_ready = on_ready
            self._on_failure = on_failure
            self._stop = _winwait.WakeEvent()
            self._taken = _winwait.WakeEvent()
            self._thread = threading.Thread(target=self._run, name=name, daemon=True)
            self._thread.start()

        def _run(self) -> None:
            # The stop event first: of several signalled handles the wait names the first.
            try:
                while _winwait.wait_any((self._stop.handle, self._handle)) == 1:
                    self._loop.call_soon_threadsafe(self._ready)
                    if _winwait.wait_any((self._stop.handle, self._taken.handle)) != 1:
                        return
            except RuntimeError:
                return  # the loop was closed under a client nobody closed
            except OSError as exc:
                try:
                    self._loop.call_soon_threadsafe(self._on_failure, exc)
                except RuntimeError:
                    pass

        def _ready(self) -> None:
            try:
                self._on_ready()
            finally:
                self._taken.set()

        def close(self) -> None:
            self._stop.set()
            self._thread.join()
            self._stop.close()
            self._taken.close()

_pools: dict[str, concurrent.futures.ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()


def _pool(kind: str) -> concurrent.futures.ThreadPoolExecutor:
    with _pools_lock:
        pool = _pools.get(kind)
        if pool is None:
            size = DEFAULT_MAX_WAITS if kind == "wait" else DEFAULT_MAX_WORKERS
            pool = _pools[kind] = concurrent.futures.ThreadPoolExecutor(size, thread_name_prefix=f"omprpc-aio-{kind}")
        return pool


_STATUS_BY_NAME: Final = {_ffi.status_name(n): n for n in range(_ffi.PANIC + 1)}


def _overflow_error(dropped: int, bound: int) -> RpcLimitExceededError:
    """The error of a stream whose reader fell more than ``bound`` events behind."""
    exc = RpcLimitExceededError(
        f"the stream's reader fell behind: {dropped} events of the turn were dropped past the bound of "
        f"{bound} buffered events (max_buffered_events); the turn was aborted")
    exc.status, exc.status_name = _ffi.Status.LIMIT_EXCEEDED, _ffi.status_name(_ffi.LIMIT_EXCEEDED)
    return exc


def _completion_error(error: object) -> RpcError:
    """The exception of a prompt that completed with ``outcome: "failed"`` (its ``error``
    object has the shape of a failed call's error detail)."""
    detail = error if isinstance(error, dict) else {"message": "the prompt failed"}
    status = _STATUS_BY_NAME.get(str(detail.get("code")), _ffi.COMMAND_FAILED)
    return _ffi.error_from(status, _ffi.dumps(detail))


# -- the core: the sync client, without its dispatcher thread --


class _Core(RpcClient):
    """The sync client whose commands AsyncRpcClient runs on its pool. Its dispatcher thread
    is not started: AsyncRpcClient reads the event queue on the loop."""

    _dispatches_events = False


_END: Final = object()
#: Loop iterations a new turn grants the finalizer of a stream left by `break` (the hook
#: schedules a task that creates the aclose() task, which then runs): then the old one is open.
_FINALIZER_TURNS: Final = 3


class _Lost:
    """What a subscriber's reader gets where frames were dropped: how many (see _Subscriber)."""

    __slots__ = ("dropped",)

    def __init__(self, dropped: int) -> None:
        self.dropped = dropped


class _Subscriber:
    """One reader of the client's frames (an events() iterator or a turn): a queue of at most
    ``bound`` frames, ended by ``_END`` or an exception. The loop never waits on a slow reader:
    a frame that finds the queue full is dropped and counted, and the reader gets a
    :class:`_Lost` with the count where the frames went missing (before the next frame that
    fits, or once it has read everything queued) — never a silent drop, never unbounded
    memory. The library's completion notices (``prompt_complete``) are kept past the bound:
    a turn (or an abandoned turn's settling) must see its end."""

    __slots__ = ("queue", "bound", "lost")

    def __init__(self, bound: int) -> None:
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.bound = bound
        self.lost = 0

    def put(self, frame: JsonObject, raw: bytes) -> None:
        if self.queue.qsize() >= self.bound and frame.get("type") != "prompt_complete":
            self.lost += 1
            return
        if self.lost:
            self.queue.put_nowait(_Lost(self.lost))
            self.lost = 0
        self.queue.put_nowait((frame, raw))

    def end(self, item: object) -> None:
        """Ends the reader with ``_END`` or an exception (after what it has not read)."""
        if self.lost:
            self.queue.put_nowait(_Lost(self.lost))
            self.lost = 0
        self.queue.put_nowait(item)

    async def get(self) -> tuple[JsonObject, bytes] | _Lost:
        """The next frame, decoded and as the agent's bytes; or how many were dropped here."""
        if self.lost and self.queue.empty():
            lost, self.lost = _Lost(self.lost), 0
            return lost
        item = await self.queue.get()
        if item is _END:
            self.queue.put_nowait(_END)  # every later get() ends too
            raise StopAsyncIteration
        if isinstance(item, BaseException):
            self.queue.put_nowait(item)
            raise item
        frame: tuple[JsonObject, bytes] | _Lost = item
        return frame


class _CallGate:
    """Whether a pooled call began: closing the gate before the pool's thread reaches it
    means the call never runs; after, the call has begun (and close() says so)."""

    __slots__ = ("_lock", "_began", "_closed")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._began = False
        self._closed = False

    def run(self, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        with self._lock:
            if self._closed:
                raise asyncio.CancelledError()  # the caller left before the thread came
            self._began = True
        return fn(*args, **kwargs)

    def close(self) -> bool:
        """Closes the gate; returns whether the call had begun."""
        with self._lock:
            self._closed = True
            return self._began


class AsyncRpcClient(_AsyncCommands):
    """An asyncio client for ``omp --mode rpc`` and ``pi --mode rpc``: the keywords of
    :class:`omprpc.RpcClient` (``custom_tools`` and ``policy_handler`` may be ``async def``),
    plus ``executor`` (a ``concurrent.futures.Executor`` for the commands; default: a shared
    pool of :data:`DEFAULT_MAX_WORKERS` threads). Use ``async with AsyncRpcClient(...) as
    client:`` or ``await start()`` / ``await close()``; the loop that started it is the only
    one that may use it.

    Every command of the sync client is a coroutine here with the same name, arguments,
    result and exceptions (``await client.get_state()``, ``await client.bash("ls")``, …),
    written out in ``_aio_commands.py``. ``max_buffered_events``: how many unread frames each
    reader (``events()``, a stream) may hold (see the module's doc on back-pressure).
    """

    def __init__(self, *, executor: concurrent.futures.Executor | None = None,
                 max_buffered_events: int = DEFAULT_MAX_BUFFERED_EVENTS, **options: Any) -> None:
        if isinstance(max_buffered_events, bool) or not isinstance(max_buffered_events, int) or max_buffered_events < 1:
            raise ValueError("max_buffered_events must be a positive int")
        self._max_buffered_events = max_buffered_events
        core_options = dict(options.pop("core_options", None) or {})
        # Completions arrive as events: what a turn waits for instead of a blocked thread.
        core_options["prompt_complete_events"] = True
        self._core = _Core(core_options=core_options, **options)
        self._executor = executor
        self._loop: asyncio.AbstractEventLoop | None = None
        self._session: _Session | None = None
        self._stopped = False  # close() ended a session: a call now is CLOSED, not "not started"
        self._fd = -1
        self._watch: _Watch | None = None  # Windows: the _HandleWatch in place of add_reader
        self._subscribers: list[_Subscriber] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._failure: RpcError | None = None
        #: The prompt a cancelled turn left running: the next turn waits for its completion.
        self._abandoned: asyncio.Future[None] | None = None
        #: The open stream()'s token (one turn at a time), None when no turn streams.
        self._stream_owner: object | None = None

    # -- lifecycle --

    async def __aenter__(self) -> AsyncRpcClient:
        return await self.start()

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    async def start(self) -> AsyncRpcClient:
        """Spawns the agent and waits for it (on the pool), then watches its event queue."""
        if self._session is not None:
            raise RpcError("RPC client is already started")
        loop = asyncio.get_running_loop()
        starting = asyncio.ensure_future(self._pooled(self._core.start))
        try:
            await asyncio.shield(starting)
        except asyncio.CancelledError:
            # The start goes on in its thread: whatever it started is stopped, then the
            # cancellation stands.
            await asyncio.gather(starting, return_exceptions=True)
            await self._pooled(self._core.stop)
            raise
        session = self._core._require()
        self._loop, self._session, self._failure, self._stopped = loop, session, None, False
        if sys.platform == "win32":
            # Named like the sync client's dispatcher: omprpc-aio-wait-<agent pid>.
            name = session.thread.name.replace("omprpc-dispatch", "omprpc-aio-wait", 1)
            self._watch = _HandleWatch(loop, session.handle.event_handle(), self._on_readable, self._watch_failed, name)
        else:
            self._fd = session.handle.event_fd()
            loop.add_reader(self._fd, self._on_readable)
        return self

    async def close(self) -> None:
        """Stops the agent (stdin EOF, grace, SIGTERM, SIGKILL to its process group; on the
        pool). A turn in progress raises RpcProcessExitError; events() iterators end.
        Idempotent."""
        session = self._session
        if session is None:
            return
        self._session = None
        self._stopped = True
        self._unwatch()
        for task in list(self._tasks):
            task.cancel()
        try:
            await self._pooled(self._core.stop)
        finally:
            self._end_subscribers(None)

    @property
    def is_running(self) -> bool:
        return self._session is not None

    @property
    def stderr(self) -> str:
        """The agent's last stderr lines (kept after close())."""
        return self._core.stderr

    @property
    def command(self) -> tuple[str, ...]:
        """The argv start() spawns (see :attr:`omprpc.RpcClient.command`)."""
        return self._core.command

    def set_policy_handler(self, handler: Callable[[PolicyEvalEvent], Any] | None) -> None:
        """Sets (or with None removes) the policy handler, ``async def`` or plain (see
        :meth:`omprpc.RpcClient.set_policy_handler`)."""
        self._core.set_policy_handler(handler)

    def install_headless_ui(self, *, confirm: bool = False, select_value: str | None = None,
                            input_value: str | None = None, editor_value: str | None = None) -> Callable[[], None]:
        """Answers UI requests inside the library (see :meth:`omprpc.RpcClient.install_headless_ui`;
        the requests themselves are in :meth:`events`). Returns the function that uninstalls it."""
        return self._core.install_headless_ui(confirm=confirm, select_value=select_value, input_value=input_value,
                                              editor_value=editor_value)

    # -- commands --

    def _pooled(self, fn: Callable[..., _T], *args: Any, kind: str = "command", **kwargs: Any) -> Awaitable[_T]:
        loop = asyncio.get_running_loop()
        return loop.run_in_executor(self._executor or _pool(kind), lambda: fn(*args, **kwargs))

    def _command(self, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> Awaitable[_T]:
        """A request on the command pool. Cancelled, the awaiting task raises CancelledError at
        once (asyncio's run_in_executor): the request ends in its thread, its result dropped."""
        return self._pooled(fn, *args, **kwargs)

    def _long_wait(self, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> Awaitable[_T]:
        """A wait on the agent's work, on the waits' pool (cancelled: as _command)."""
        return self._pooled(fn, *args, kind="wait", **kwargs)

    async def _turn_wait(self, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """A prompt and the wait for its turn (prompt_and_wait), on the waits' pool. Cancelled:
        CancelledError at once, and the turn is aborted (see _abandon_wait)."""
        await self._settled()
        gate = _CallGate()
        running: asyncio.Future[_T] = asyncio.ensure_future(self._pooled(gate.run, fn, *args, kind="wait", **kwargs))
        try:
            return await asyncio.shield(running)
        except asyncio.CancelledError:
            self._abandon_wait(running, gate)
            raise

    def _abandon_wait(self, running: asyncio.Future[Any], gate: _CallGate) -> None:
        """A prompt_and_wait cancelled by its caller: if its thread has not begun the call, it
        never will; else ``abort`` is sent and the next prompt waits until the call returned
        (the aborted turn completed, or the client stopped)."""
        loop = self._loop
        if not gate.close() or loop is None:
            return  # nothing was sent
        finished: asyncio.Future[None] = loop.create_future()
        self._abandoned = finished

        async def settle() -> None:
            try:
                # The call began before this, so its prompt is written before this abort but for
                # a thread preempted in between: abort again until the call returned (an abort
                # before the prompt aborts nothing).
                while not running.done():
                    try:
                        await self._pooled(self._core.abort)
                    except RpcError:
                        pass  # the turn ended meanwhile, or the client stopped
                    await asyncio.wait({running}, timeout=ABORT_REPEAT_INTERVAL)
            finally:
                if not finished.done():
                    finished.set_result(None)
                if self._abandoned is finished:
                    self._abandoned = None

        self._spawn(settle())

    async def _settled(self) -> None:
        """Waits until a turn abandoned by cancellation completed (a prompt must not meet it)."""
        abandoned = self._abandoned
        if abandoned is not None:
            await asyncio.shield(abandoned)

    # -- events --

    def _on_readable(self) -> None:
        """The event fd is readable (Windows: the event handle is set): take every queued event
        (never blocking) and hand each on."""
        session = self._session
        if session is None:
            return
        try:
            status, ptr, err = session.handle.call_raw(lib.omprpc_client_next_event_batch, _BATCH_MAX_EVENTS, 0)
        except RpcError as exc:
            status, ptr, err = exc.status or _ffi.CLOSED, None, None
        if status == _ffi.TIMEOUT:
            return
        if status != _ffi.OK:  # CLOSED once drained: the agent exited or close() began
            self._unwatch()
            self._failure = _ffi.error_from(status, err)
            self._end_subscribers(self._failure)
            return
        if not ptr:
            return
        try:
            # Each event's own bytes (a turn feeds them to the summarizer as they are), and one
            # array decoded at once for the rest.
            parts = list(map(ctypes.string_at, *_ffi.view_columns(lib.omprpc_event_batch_events, ptr)[2:]))
        finally:
            lib.omprpc_event_batch_free(ptr)
        for frame, raw in zip(_decode_events(parts), parts):
            if isinstance(frame, dict):
                self._dispatch(session, frame, raw)

    def _dispatch(self, session: _Session, frame: JsonObject, raw: bytes) -> None:
        kind = frame.get("type")
        if kind == "response":
            return  # queued for the sync client's frame listeners only
        if kind in _HOST_TYPES:
            self._host_call(session, frame)
            return
        if kind == "policy_eval":
            self._policy_question(session, frame)
        for subscriber in self._subscribers:
            subscriber.put(frame, raw)

    def _watch_failed(self, exc: OSError) -> None:
        """Windows: the wait on the event handle failed; the events end with that error."""
        if self._session is None:
            return
        self._unwatch()
        self._failure = RpcError(f"waiting on the client's event handle failed: {exc}")
        self._end_subscribers(self._failure)

    def _unwatch(self) -> None:
        if self._fd >= 0 and self._loop is not None:
            self._loop.remove_reader(self._fd)
        self._fd = -1
        watch, self._watch = self._watch, None
        if watch is not None:
            watch.close()

    def _end_subscribers(self, failure: RpcError | None) -> None:
        for subscriber in self._subscribers:
            subscriber.end(failure if failure is not None else _END)

    def _subscribe(self) -> _Subscriber:
        if self._session is None or self._failure is not None:
            raise self._failure or not_running_error(self._stopped)
        subscriber = _Subscriber(self._max_buffered_events)
        self._subscribers.append(subscriber)
        return subscriber

    def _unsubscribe(self, subscriber: _Subscriber) -> None:
        try:
            self._subscribers.remove(subscriber)
        except ValueError:
            pass

    async def events(self) -> AsyncGenerator[RpcNotification, None]:
        """Every notification from now on, typed as the sync client's ``on_notification``
        listeners get them (agent events, UI requests, policy questions, extension errors, …;
        not host calls, which the client serves). Ends when close() stops the client; raises
        RpcProcessExitError when the agent exits by itself. Events arrive only while the
        iterator is being iterated (it buffers at most ``max_buffered_events`` that its reader
        has not taken yet; past that it yields an :class:`omprpc.EventOverflow` saying how many
        it dropped)."""
        subscriber = self._subscribe()
        try:
            while True:
                got = await subscriber.get()
                if isinstance(got, _Lost):
                    yield EventOverflow(got.dropped)  # this iterator fell behind by that many
                    continue
                frame = got[0]
                kind = frame.get("type")
                if kind == "prompt_complete" or (kind == "protocol_error" and frame.get("omprpc") is not True):
                    continue  # what the sync client's listeners never see either
                yield to_notification(frame, private=True)
        except StopAsyncIteration:
            return
        finally:
            self._unsubscribe(subscriber)

    # -- turns --

    async def stream(
        self,
        message: str = "",
        *,
        images: Sequence[ImageContent] | None = None,
        content: Sequence[Mapping[str, Any]] | None = None,
        timeout: float | None = LIBRARY_DEFAULT,
    ) -> AsyncGenerator[StreamItem, None]:
        """Prompts, then yields the turn as it happens: :class:`TextChunk`,
        :class:`ReasoningChunk`, :class:`ToolCallRequest`, :class:`ToolCallComplete`,
        :class:`RetryScheduled` (the agent will retry a failed attempt), :class:`CompactionComplete`,
        and last :class:`TurnComplete`, when the library's ``prompt_complete`` says the prompt
        is done (after every retry and recovery the agent makes by itself). ``timeout``: for the prompt's acknowledgement (the turn
        itself has no deadline here: wrap it in ``asyncio.timeout``). A refused or failed
        prompt raises its RpcCommandError; an agent that exits, RpcProcessExitError; a reader that
        falls more than ``max_buffered_events`` frames behind, RpcLimitExceededError (the turn
        is aborted).

        One turn at a time per client: a second stream while one is open raises
        RpcConcurrencyError (the library's rule for a second prompt collector). Cancelling the
        iterating task, or leaving the loop early, aborts the run (see the module's doc); so
        does ``aclose()`` on a stream left unfinished, which a new turn needs first."""
        if self._session is None:
            raise self._failure or not_running_error(self._stopped)
        if self._stream_owner is not None:
            # A stream left by `break` is closed by the loop's async-generator finalizer, a task
            # scheduled when the generator was dropped: let it run before deciding.
            for _ in range(_FINALIZER_TURNS):
                await asyncio.sleep(0)
            if self._stream_owner is not None:
                raise concurrency_error("finish it, or cancel it or aclose() its stream, first")
        owner = self._stream_owner = object()
        try:
            await self._settled()  # an aborted prompt completes first
            subscriber = self._subscribe()
            summarizer = Summarizer(model=self._core._model)
            sent: asyncio.Future[str] = asyncio.ensure_future(
                self._pooled(self._core.prompt, message, images=images, content=content, timeout=timeout))
            done = False
            try:
                request_id = await asyncio.shield(sent)
                while True:
                    got = await subscriber.get()
                    if isinstance(got, _Lost):
                        # The summarizer cannot summarize a turn with holes: the turn fails (and
                        # is aborted, as any turn left early).
                        raise _overflow_error(got.dropped, self._max_buffered_events)
                    frame, raw = got
                    if frame.get("type") == "prompt_complete" and frame.get("omprpc") is True:
                        if frame.get("requestId") != request_id:
                            continue  # an earlier prompt's (sent with prompt())
                        done = True
                        if frame.get("outcome") == "failed":
                            raise _completion_error(frame.get("error"))
                        summary = summarizer.summary()
                        # The turn is over: the next may start now, whether or not this
                        # generator is closed (run() and a loop that breaks leave it to the GC).
                        self._stream_owner = None
                        self._unsubscribe(subscriber)
                        yield turn_complete(request_id, turn_outcome(frame.get("outcome"), "agent_end"), summary)
                        return
                    for derived in summarizer.feed(raw):
                        item = _derived(derived)
                        if item is not None:
                            yield item
            except StopAsyncIteration:
                raise self._failure or RpcProcessExitError("the client was closed during the turn") from None
            finally:
                summarizer.close()
                if not done and self._session is not None and self._failure is None:
                    self._abandon(sent, subscriber)  # it may hold the completion already
                else:
                    self._unsubscribe(subscriber)
        finally:
            if self._stream_owner is owner:
                self._stream_owner = None

    async def run(self, message: str = "", **kwargs: Any) -> TurnComplete:
        """The whole turn of :meth:`stream`, awaited: its :class:`TurnComplete`."""
        async with contextlib.aclosing(self.stream(message, **kwargs)) as stream:
            async for item in stream:
                if isinstance(item, TurnComplete):
                    return item
        raise RpcError("the turn ended without completing")  # pragma: no cover - stream always completes

    def _abandon(self, sent: asyncio.Future[str], subscriber: _Subscriber) -> None:
        """A turn left before its prompt completed: abort the run, and let the next turn start
        only once that prompt completed (or the client stopped). ``subscriber``: the turn's,
        with what it had not read yet."""
        loop = self._loop
        if loop is None:
            return
        finished: asyncio.Future[None] = loop.create_future()
        self._abandoned = finished

        async def settle() -> None:
            try:
                request_id = await sent
                await self._pooled(self._core.abort)
                while True:
                    got = await subscriber.get()
                    if isinstance(got, _Lost):
                        continue  # nobody reads this turn any more; its completion is never dropped
                    frame = got[0]
                    if frame.get("type") == "prompt_complete" and frame.get("requestId") == request_id:
                        return
            except (RpcError, StopAsyncIteration):
                return  # refused, or the client stopped: nothing runs any more
            finally:
                self._unsubscribe(subscriber)
                if not finished.done():
                    finished.set_result(None)
                if self._abandoned is finished:
                    self._abandoned = None

        self._spawn(settle())

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """A task of this client (a host call, a policy question, an abandoned turn's abort):
        kept until done, cancelled by close()."""
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        # An answer the library refused because the client closed meanwhile: nobody waits for
        # it. Anything else is a bug worth the loop's exception handler.
        if exc is not None and not isinstance(exc, RpcError) and self._loop is not None:
            self._loop.call_exception_handler({"message": "an omprpc.aio task failed", "exception": exc, "task": task})

    # -- host tools and the policy gate --

    def _host_call(self, session: _Session, frame: JsonObject) -> None:
        """A host call: an ``async def`` tool runs as a task here; the rest (sync tools, host
        URIs, cancellations) as in the sync client."""
        if frame.get("type") == "host_tool_call":
            session._host_tool_call(frame, spawn=self._spawn)
        else:
            session._dispatch(frame)

    def _policy_question(self, session: _Session, frame: JsonObject) -> None:
        handler = session.policy_handler
        if handler is None or not inspect.iscoroutinefunction(handler):
            session._dispatch(frame)  # a sync handler runs on the host pool
            return
        question = to_notification(frame)
        if isinstance(question, PolicyEvalEvent) and question.id and not session._stopping:
            self._spawn(self._run_async_policy(session, cast(Callable[[PolicyEvalEvent], Awaitable[object]], handler),
                                               question))

    @staticmethod
    async def _run_async_policy(session: _Session, handler: Callable[[PolicyEvalEvent], Awaitable[object]],
                                question: PolicyEvalEvent) -> None:
        try:
            allow, reason = _verdict_of(await handler(question))
        except asyncio.CancelledError:
            return
        except Exception as exc:
            allow, reason = False, f"the policy handler failed: {exc}"
        try:
            session.policy_verdict(question.id, allow, reason, quiet=True)
        except RpcError:
            pass  # the gate's own answer stands
