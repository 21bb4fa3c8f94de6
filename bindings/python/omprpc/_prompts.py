"""RpcClient's prompts and turns (a mixin): prompt, abort_and_prompt, steer, follow_up, abort,
and the calls that wait for runs: prompt_and_wait, collect_events, wait_for_idle."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from . import _ffi, _lazy
from ._base import _ClientBase
from ._common import LIBRARY_DEFAULT, _interruptible, _loads_bulk, _ms, _request_ms, _typed_bulk
from ._ffi import lib
from ._turn import PromptTurn
from .errors import RpcError
from .helpers import prompt_from_content
from .protocol import ImageContent, JsonObject, RpcNotification, StreamingBehavior


class _Prompts(_ClientBase):
    """The prompt family and the waits on the agent's runs."""

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
        """Prompts and waits until *that* prompt completes, where the library says the agent
        will not go on by itself: its ``agent_settled`` (pi 0.80.4 on), else the last run's
        terminal ``agent_end`` — a run that failed and that the agent retries, or compacts for
        and retries, is not the end — or a ``prompt_result``, ``agentInvoked:false`` or
        ``disposition:"handled"``. The turn holds every run in between; its ``outcome``,
        ``attempts``, ``failed_attempts`` and ``compactions`` say what happened.
        ``timeout=None`` means the ``turn_timeout`` option, which defaults to no deadline.
        ``content`` as for prompt()."""
        session = self._require()
        encoded = _ffi.encode(message, "message")
        options = self._prompt_options(images, streaming_behavior, content)
        ms = self._turn_ms(timeout)

        if not _ffi.has("omprpc_client_prompt_and_wait_turn"):  # an older library: the JSON form
            return self._synced(session, lambda: PromptTurn._from_json(_loads_bulk(_interruptible(
                lambda: session.handle.call_out(lib.omprpc_client_prompt_and_wait, encoded, options, ms)) or b"null")))

        def call() -> PromptTurn:
            status, ptr, err = session.handle.call_raw(lib.omprpc_client_prompt_and_wait_turn, encoded, options, ms)
            if status != _ffi.OK:
                raise _ffi.error_from(status, err)
            if not ptr:
                raise RpcError("the library returned no turn")
            return PromptTurn._from_turn(ptr)  # freed with the turn (or at once if nobody takes it)

        def wait() -> PromptTurn:
            turn: PromptTurn = _interruptible(call)
            return turn

        return self._synced(session, wait)

    def collect_events(self, timeout: float | None = None) -> tuple[RpcNotification, ...]:
        """Events from now until the agent's work ends as prompt_and_wait's does (its
        ``agent_settled``, or a terminal ``agent_end`` it does not retry after), typed."""
        session = self._require()
        ms = self._turn_ms(timeout)
        if not _ffi.has("omprpc_client_collect_event_batch"):  # an older library: the JSON form
            raw = self._synced(session, lambda: _interruptible(lambda: session.handle.call_out(
                lib.omprpc_client_collect_events, ms)))
            data = _loads_bulk(raw) if raw is not None else None
            return _typed_bulk(data if isinstance(data, list) else ())

        def call() -> tuple[RpcNotification, ...]:
            status, ptr, err = session.handle.call_raw(lib.omprpc_client_collect_event_batch, ms)
            if status != _ffi.OK:
                raise _ffi.error_from(status, err)
            if not ptr:
                raise RpcError("the library returned no events")
            batch = _ffi.Owned(ptr, lib.omprpc_event_batch_free)  # freed with the lazy events
            tptrs, tlens, ptrs, lens = _ffi.view_columns(lib.omprpc_event_batch_events, ptr)
            return _lazy.lazy_events(_lazy.EventSource(batch, ptrs, lens), tptrs, tlens)

        def wait() -> tuple[RpcNotification, ...]:
            events: tuple[RpcNotification, ...] = _interruptible(call)
            return events

        return self._synced(session, wait)

    def wait_for_idle(self, timeout: float | None = None) -> None:
        """Waits until every accepted prompt has completed; raises the first late prompt
        failure recorded since the last prompt."""
        session = self._require()
        ms = self._turn_ms(timeout)
        self._synced(session, lambda: _interruptible(lambda: session.handle.call(lib.omprpc_client_wait_for_idle, ms)))
