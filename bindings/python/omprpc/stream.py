"""``omprpc.stream``: one turn as it happens, as typed items, for both clients.

The items (:class:`TextChunk`, :class:`ReasoningChunk`, :class:`ToolCallRequest`,
:class:`ToolCallComplete`, :class:`RetryScheduled`, :class:`CompactionComplete`, and last
:class:`TurnComplete`) are what the library's streaming summarizer (:class:`omprpc.Summarizer`)
derives from the turn's events: ``omprpc.aio``'s ``AsyncRpcClient.stream()`` yields them, and so
does the sync client's :meth:`omprpc.RpcClient.stream` (:class:`TurnStream`). ``omprpc.aio``
re-exports them under the same names.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Final, Generator, Mapping, Sequence, Union

from . import _ffi
from ._session import _HOST_TYPES
from ._turn import PromptTurn, TurnOutcome
from .errors import RpcConcurrencyError, RpcError
from .protocol import ImageContent, JsonObject
from .summary import Compaction, FailedAttempt, Summarizer, SummaryUsage, TurnSummary

if TYPE_CHECKING:
    from .client import RpcClient

__all__ = [
    "CompactionComplete",
    "ReasoningChunk",
    "RetryScheduled",
    "StreamItem",
    "TextChunk",
    "ToolCallComplete",
    "ToolCallRequest",
    "TurnComplete",
    "TurnStream",
]

# -- the derived stream (the shapes a host executor yields) --


@dataclass(slots=True, frozen=True)
class TextChunk:
    """A piece of the assistant's visible text, in arrival order."""

    text: str


@dataclass(slots=True, frozen=True)
class ReasoningChunk:
    """A piece of the assistant's reasoning (thinking), in arrival order."""

    text: str


@dataclass(slots=True, frozen=True)
class ToolCallRequest:
    """The agent started a tool call (its own tool or a host tool)."""

    tool_call_id: str
    tool_name: str
    args: Any


@dataclass(slots=True, frozen=True)
class ToolCallComplete:
    """A tool call ended. ``outcome``: ``"success"``, ``"error"`` or ``"blocked"`` (by the
    policy gate; ``reason`` says why)."""

    tool_call_id: str
    tool_name: str
    outcome: str
    result: Any
    reason: str | None


@dataclass(slots=True, frozen=True)
class RetryScheduled:
    """The agent's attempt failed and it will retry by itself after ``delay_ms`` (its
    ``auto_retry_start``): ``attempt`` of ``max_attempts`` retries, ``error`` the failure. The
    turn goes on: the retry's items follow, then :class:`TurnComplete`. Aborting now (``abort``,
    or leaving the stream) cancels the retry."""

    attempt: int | None
    max_attempts: int | None
    delay_ms: int | None
    error: str | None


@dataclass(slots=True, frozen=True)
class CompactionComplete:
    """A compaction inside the turn ended (``reason`` ``"overflow"``: the context was too long
    for the model; then ``will_retry`` says the agent retries the failed attempt)."""

    reason: str | None
    aborted: bool
    will_retry: bool
    error_message: str | None


@dataclass(slots=True, frozen=True)
class TurnComplete:
    """The prompt completed (always the stream's last item), where the library says the agent
    will not go on (a retry or an overflow recovery is inside the turn).

    ``outcome`` (:data:`omprpc.TurnOutcome`): ``"agent_settled"`` (pi 0.80.4 on said it
    settled), ``"agent_end"`` (the last run ended: omp, older pi), ``"aborted"``,
    ``"prompt_result"`` or ``"not_invoked"`` (nothing ran); ``stop_reason`` the last assistant
    message's (``"stop"``, ``"toolUse"``, ``"aborted"``, ``"error"``, ``"length"``, …);
    ``usage`` summed over the turn's LLM calls; ``text`` the final assistant text; ``summary``
    the library's whole summary of the turn; ``attempts`` how many attempts the agent made (1
    plus each retry and each overflow compaction it retried after), ``failed_attempts`` the
    ones that failed and what the agent did next, ``compactions`` those inside the turn."""

    request_id: str
    outcome: TurnOutcome
    stop_reason: str | None
    usage: SummaryUsage | None
    text: str | None
    summary: TurnSummary
    attempts: int = 0
    failed_attempts: tuple[FailedAttempt, ...] = ()
    compactions: tuple[Compaction, ...] = ()


StreamItem = Union[TextChunk, ReasoningChunk, ToolCallRequest, ToolCallComplete, RetryScheduled,
                   CompactionComplete, TurnComplete]


def _int_or_none(v: object) -> int | None:
    """A JSON number as whole units (omp's retry delay is a float), None when absent."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return round(v)


def _derived(item: Mapping[str, Any]) -> StreamItem | None:
    """One item of the library's summarizer as a stream item (None: not streamed)."""
    kind = item.get("kind")
    if kind == "text":
        return TextChunk(str(item.get("text") or ""))
    if kind == "reasoning":
        return ReasoningChunk(str(item.get("text") or ""))
    if kind == "tool_start":
        return ToolCallRequest(str(item.get("toolCallId") or ""), str(item.get("toolName") or ""), item.get("args"))
    if kind == "tool_end":
        reason = item.get("reason")
        return ToolCallComplete(str(item.get("toolCallId") or ""), str(item.get("toolName") or ""),
                                str(item.get("outcome") or ""), item.get("result"),
                                reason if isinstance(reason, str) else None)
    if kind == "retry":
        error = item.get("error")
        return RetryScheduled(_int_or_none(item.get("attempt")), _int_or_none(item.get("maxAttempts")),
                              _int_or_none(item.get("delayMs")), error if isinstance(error, str) else None)
    if kind == "compaction":
        reason, message = item.get("reason"), item.get("errorMessage")
        return CompactionComplete(reason if isinstance(reason, str) else None, item.get("aborted") is True,
                                  item.get("willRetry") is True, message if isinstance(message, str) else None)
    return None



def turn_complete(request_id: str, outcome: TurnOutcome, summary: TurnSummary) -> TurnComplete:
    """The stream's last item: the library's summary of the turn, and how it completed."""
    return TurnComplete(request_id, outcome, summary.stop_reason, summary.usage, summary.final_text, summary,
                        summary.attempts, summary.failed_attempts, summary.compactions)


def concurrency_error(what_to_do: str) -> RpcConcurrencyError:
    """The error of a second stream on a client while one is open (the library's rule for a
    second prompt collector, with its status)."""
    exc = RpcConcurrencyError(f"a turn is already streaming on this client (one at a time): {what_to_do}")
    exc.status, exc.status_name = _ffi.Status.CONCURRENCY, _ffi.status_name(_ffi.CONCURRENCY)
    return exc


#: How long leaving a stream early waits (seconds) for the aborted turn to complete, by default:
#: the agent answers ``abort`` at once and ends its run within moments.
DEFAULT_SETTLE_TIMEOUT: Final = 30.0

#: How often leaving a stream early repeats ``abort`` (seconds) while its turn has not completed.
ABORT_REPEAT_INTERVAL: Final = 0.25

# What the sync stream's queue carries: ("event", payload), ("done", PromptTurn), ("failed", exc).
_Entry = tuple[str, Any]


class TurnStream:
    """One prompt of the sync :class:`omprpc.RpcClient` as it happens (returned by
    :meth:`omprpc.RpcClient.stream`): iterate it for the items of :mod:`omprpc.stream`, the last a
    :class:`TurnComplete`; :meth:`final_turn` consumes the rest and returns that one.

    The prompt is sent when the stream is made. The turn is the library's: a thread of the
    stream waits in ``prompt_and_wait`` (the turn ends where the library says the agent will not
    go on, after every retry and recovery), while an event-payload listener hands each event
    to the library's summarizer as the iterating thread reads it. A refused or failed prompt
    raises its ``RpcCommandError`` from the iteration; an agent that exits, ``RpcProcessExitError``.

    Use it in a ``with`` block: leaving the block before the turn completed (``break``, an
    exception, Ctrl-C) sends ``abort`` and waits (at most ``settle_timeout``) until the agent
    has finished the aborted turn, so the client's next prompt is accepted. :meth:`close` does
    the same. One stream at a time per client: a second while one is open raises
    ``RpcConcurrencyError``."""

    def __init__(self, client: RpcClient, message: str, *, images: Sequence[ImageContent] | None,
                 content: Sequence[Mapping[str, Any]] | None, timeout: float | None,
                 settle_timeout: float | None) -> None:
        session = client._require()
        self._client = client
        self._settle_timeout = settle_timeout
        self._queue: queue.SimpleQueue[_Entry] = queue.SimpleQueue()
        self._summarizer = Summarizer(model=client._model)
        self._completed = threading.Event()  # the waiter thread returned (turn over, or failed)
        self._closed = False
        self._turn: TurnComplete | None = None  # the last item, once yielded
        self._items = self._generate()
        # The client's stream slot is released once both the block is left and the turn is
        # over (whichever comes last): a new prompt must not start under an aborting turn.
        self._holders = 2
        self._holders_lock = threading.Lock()
        self._remove_listener: Callable[[], None] | None = client.on_event_payload(self._on_payload)
        self._waiter = threading.Thread(target=self._wait, args=(message, images, content, timeout),
                                        name=f"omprpc-stream-{session.thread.name}", daemon=True)
        self._waiter.start()

    # -- the producer side --

    def _on_payload(self, payload: JsonObject) -> None:
        """The dispatcher thread: every event in order (host calls are the client's)."""
        if payload.get("type") not in _HOST_TYPES:
            self._queue.put(("event", payload))

    def _wait(self, message: str, images: Sequence[ImageContent] | None,
              content: Sequence[Mapping[str, Any]] | None, timeout: float | None) -> None:
        try:
            turn = self._client.prompt_and_wait(message, images=images, content=content, timeout=timeout)
            # prompt_and_wait returns once every listener ran for the turn's events: they are
            # all queued before this.
            self._queue.put(("done", turn))
        except BaseException as exc:  # handed to the iterating thread, never lost
            self._queue.put(("failed", exc))
        finally:
            self._completed.set()
            self._release()

    def _release(self) -> None:
        with self._holders_lock:
            self._holders -= 1
            last = self._holders == 0
        if last:
            self._client._stream_open = False

    # -- the consumer side --

    def _generate(self) -> Generator[StreamItem, None, None]:
        while True:
            kind, value = self._queue.get()
            if kind == "event":
                for derived in self._summarizer.feed(value):
                    item = _derived(derived)
                    if item is not None:
                        yield item
                continue
            if kind == "failed":
                self._finish()
                raise value
            turn: PromptTurn = value
            summary = self._summarizer.summary()
            # The turn is over: the client's next stream may start now, whether or not this one
            # is closed (a loop that stops at the TurnComplete leaves it open).
            self._finish()
            self._turn = turn_complete(turn.request_id or "", turn.outcome, summary)
            yield self._turn
            return

    def __iter__(self) -> TurnStream:
        return self

    def __next__(self) -> StreamItem:
        if self._closed:
            raise StopIteration
        try:
            return next(self._items)
        except BaseException:  # the end, a failure or an interrupt (Ctrl-C): the turn is left
            self.close()
            raise

    def final_turn(self) -> TurnComplete:
        """Consumes the rest of the turn; returns its :class:`TurnComplete`."""
        for _ in self:
            pass
        if self._turn is None:
            raise RpcError("the stream was closed before its turn completed")
        return self._turn

    # -- leaving --

    def close(self) -> None:
        """Ends the stream: if its turn has not completed, sends ``abort`` and waits (at most
        ``settle_timeout``) for the agent to finish it. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            if not self._completed.is_set():
                self._abort_until_completed()
        finally:
            self._items.close()
            self._finish()

    def _abort_until_completed(self) -> None:
        """Sends ``abort`` until the turn completed (at most ``settle_timeout``). Again after
        ABORT_REPEAT_INTERVAL: the waiter thread may not have written its prompt yet when the
        first abort went out (an abort before the prompt aborts nothing)."""
        deadline = None if self._settle_timeout is None else time.monotonic() + self._settle_timeout
        while True:
            try:
                self._client.abort()
            except RpcError:
                pass  # the turn ended meanwhile, or the client stopped: nothing to abort
            left = None if deadline is None else deadline - time.monotonic()
            wait = ABORT_REPEAT_INTERVAL if left is None else min(ABORT_REPEAT_INTERVAL, max(left, 0.0))
            if self._completed.wait(wait) or (left is not None and left <= wait):
                return

    def _finish(self) -> None:
        """Stops listening and gives the client's stream slot back (once)."""
        remove, self._remove_listener = self._remove_listener, None
        if remove is None:
            return
        remove()
        self._summarizer.close()
        self._release()

    def __enter__(self) -> TurnStream:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
