"""Lazily decoded turn events.

A turn of 100 000 events is ~64 MB of JSON; decoding all of it into Python objects takes
seconds, while most hosts read a few fields of a few events. When the library writes a
turn's events one per line (each event, then ``,\\n``: events never contain a raw newline),
``PromptTurn.events`` is built without decoding them: one regular-expression pass over the
library's buffer finds every event's ``type``, and each event becomes an instance of a lazy
subclass of its typed class (``isinstance(ev, MessageUpdateEvent)`` holds, ``ev.type`` costs
nothing). Its other fields decode that one event on first access (then it is cached).

Equality, hashing, ``repr``, pickling and copying behave as for the eager object (they decode
it; copies and pickles are plain typed objects). A frame of a known type whose fields do not
parse raises :class:`~omprpc.RpcError` when a field is read (eager decoding would have made it
an ``UnknownNotification`` with ``parse_error``).
"""

from __future__ import annotations

import dataclasses
import gc
import json
import re
import threading
from collections import deque
from itertools import repeat
from typing import Any, Callable

from . import _ffi
from .errors import RpcError
from .protocol import (
    AgentEndEvent,
    AgentStartEvent,
    AutoCompactionEndEvent,
    AutoCompactionStartEvent,
    AutoRetryEndEvent,
    AutoRetryStartEvent,
    ExtensionError,
    ExtensionUiRequest,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    PolicyEvalEvent,
    ReadyEvent,
    RetryFallbackAppliedEvent,
    RetryFallbackSucceededEvent,
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
    to_notification,
)

#: Between two events of a turn written one per line; the type of the next event when it is
#: the first member (as every agent writes it). An empty group: the type must be decoded.
_SEPARATOR = re.compile(rb',\n(?:\{"type":"([^"\\]*)")?')
_FIRST_TYPE = re.compile(rb'\{"type":"([^"\\]*)"')
_SEP = b",\n"


def _identity(obj: Any) -> Any:
    return obj


class LazyEvent:
    """Mixin of the lazy event classes (no state of its own)."""

    __slots__ = ()
    _lz_base: type
    #: (source, index) until decoded, then the typed object.
    _lz: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Constructed like its typed class (dataclasses.replace does): then it is not lazy.
        object.__setattr__(self, "_lz", type(self)._lz_base(*args, **kwargs))

    def _lz_get(self) -> Any:
        lz = self._lz
        if type(lz) is not tuple:
            return lz
        src, i = lz
        obj = to_notification(src.payload(i), private=True)
        base = type(self)._lz_base
        if type(obj) is not base:
            error = getattr(obj, "parse_error", None) or f"decoded as {type(obj).__name__}"
            raise RpcError(f"turn event {i} ({base.__name__}) does not parse: {error}")
        object.__setattr__(self, "_lz", obj)
        return obj

    def _omprpc_raw_payload(self) -> Any:
        """The event as the agent sent it (a dict, decoded anew)."""
        lz = self._lz
        if type(lz) is tuple:
            return lz[0].payload(lz[1])
        payload = getattr(lz, "payload", None)
        return payload if isinstance(payload, dict) else dataclasses.asdict(lz)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyEvent):
            other = other._lz_get()
        return bool(self._lz_get() == other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(self._lz_get())

    def __repr__(self) -> str:
        return repr(self._lz_get())

    def __reduce_ex__(self, protocol: Any) -> Any:
        # Copies and pickles are the plain typed object.
        return (_identity, (self._lz_get(),))

    def __copy__(self) -> Any:
        return self._lz_get()

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        import copy

        return copy.deepcopy(self._lz_get(), memo)


def _constant(value: Any) -> Callable[[Any], Any]:
    return lambda self: value


def _decoded_field(name: str) -> Callable[[Any], Any]:
    return lambda self: getattr(self._lz_get(), name)


def _lazy_class(base: type) -> type:
    ns: dict[str, Any] = {"__slots__": ("_lz",), "_lz_base": base,
                          "__qualname__": f"Lazy{base.__qualname__}", "__module__": __name__,
                          "__doc__": f"A lazily decoded :class:`{base.__name__}` (see omprpc._lazy)."}
    for f in dataclasses.fields(base):
        if f.name == "type":
            ns["type"] = property(_constant(f.default))  # known without decoding
        else:
            ns[f.name] = property(_decoded_field(f.name))
    return type(f"Lazy{base.__name__}", (LazyEvent, base), ns)


_BASES: dict[str, type] = {
    "agent_start": AgentStartEvent, "agent_end": AgentEndEvent, "turn_start": TurnStartEvent,
    "turn_end": TurnEndEvent, "message_start": MessageStartEvent, "message_update": MessageUpdateEvent,
    "message_end": MessageEndEvent, "tool_execution_start": ToolExecutionStartEvent,
    "tool_execution_update": ToolExecutionUpdateEvent, "tool_execution_end": ToolExecutionEndEvent,
    "auto_compaction_start": AutoCompactionStartEvent, "auto_compaction_end": AutoCompactionEndEvent,
    "auto_retry_start": AutoRetryStartEvent, "auto_retry_end": AutoRetryEndEvent,
    "retry_fallback_applied": RetryFallbackAppliedEvent, "retry_fallback_succeeded": RetryFallbackSucceededEvent,
    "ttsr_triggered": TtsrTriggeredEvent, "todo_reminder": TodoReminderEvent, "todo_auto_clear": TodoAutoClearEvent,
    "ready": ReadyEvent, "extension_ui_request": ExtensionUiRequest, "extension_error": ExtensionError,
    "policy_eval": PolicyEvalEvent, "tool_blocked": ToolBlockedEvent,
}
_LAZY_UNKNOWN = _lazy_class(UnknownNotification)
#: type (bytes, as found in the buffer) → lazy class; unknown types → lazy UnknownNotification.
_CLASSES: dict[bytes, type] = {k.encode(): _lazy_class(v) for k, v in _BASES.items()}


class _EventSource:
    """The events of one turn: ``[ev0,\\nev1,\\n…]`` in a library buffer (``OwnedString``) or in
    bytes, from ``start`` (the ``[``) to ``end`` (just past the ``]``). Keeps the buffer alive
    while any lazy event of it does."""

    __slots__ = ("_buf", "_lo", "_hi", "_starts", "_lock", "count", "_decoded", "_payloads")

    def __init__(self, buf: _ffi.OwnedString | bytes, start: int, end: int):
        self._buf = buf
        self._lo = start + 1
        self._hi = end - 1
        self._starts: list[int] | None = None
        self._lock = threading.Lock()
        self.count = 0
        self._decoded = 0
        self._payloads: list[Any] | None = None

    def view(self) -> memoryview:
        buf = self._buf
        mv = buf.view() if isinstance(buf, _ffi.OwnedString) else memoryview(buf)
        return mv[self._lo:self._hi]

    def _bytes(self, start: int, end: int) -> bytes:
        buf = self._buf
        if isinstance(buf, _ffi.OwnedString):
            return buf.slice(self._lo + start, self._lo + end)
        return buf[self._lo + start:self._lo + end]

    def _last(self) -> Any:
        """The last event (often read alone: the agent_end) without finding all the others."""
        size = self._hi - self._lo
        window = 1 << 16
        while True:
            lo = max(0, size - window)
            tail = self._bytes(lo, size)
            cut = tail.rfind(_SEP)
            if cut >= 0:
                return json.loads(tail[cut + 2:])
            if lo == 0:
                return json.loads(tail)
            window *= 8

    def _all(self) -> list[Any]:
        """Every event at once: one bulk decode (the GC paused) beats one decode per event
        once a host reads most of them."""
        with self._lock:
            if self._payloads is None:
                data = self._bytes(-1, self._hi - self._lo + 1)
                paused = gc.isenabled()
                if paused:
                    gc.disable()
                try:
                    self._payloads = json.loads(data)
                finally:
                    if paused:
                        gc.enable()
            return self._payloads

    def payload(self, i: int) -> Any:
        payloads = self._payloads
        if payloads is not None:
            return payloads[i]
        # After an eighth of a large turn was read event by event, decode the rest in bulk.
        self._decoded += 1
        if self._decoded > 256 and self._decoded > self.count >> 3:
            return self._all()[i]
        starts = self._starts
        if starts is None and i == self.count - 1:
            return self._last()
        if starts is None:
            with self._lock:
                starts = self._starts
                if starts is None:
                    starts = [0]
                    starts.extend(m.start() + 2 for m in re.finditer(_SEP, self.view()))
                    self._starts = starts
        start = starts[i]
        end = starts[i + 1] - 2 if i + 1 < len(starts) else self._hi - self._lo
        return json.loads(self._bytes(start, end))


def lazy_events(buf: _ffi.OwnedString | bytes, start: int, end: int) -> tuple[RpcNotification, ...] | None:
    """The events of ``buf[start:end]`` (a JSON array) as lazy typed events, or None when the
    array is not written one event per line (an older library): decode it then."""
    src = _EventSource(buf, start, end)
    view = src.view()
    n = len(view)
    if n == 0:
        return ()
    types: list[bytes] = _SEPARATOR.findall(view)
    if not types:
        # One event, or an older library's `ev,ev,…` (no newlines): tell them apart. A large
        # one is decoded eagerly either way (one event costs the same; many: the old format).
        if n > 1 << 20:
            return None
        try:
            one = json.loads(bytes(view))
        except ValueError:
            return None
        if not isinstance(one, dict):
            return None
    first = _FIRST_TYPE.match(view)
    types.insert(0, first.group(1) if first is not None else b"")
    del view
    n = src.count = len(types)
    # C-level loops (map/zip) and the cyclic GC paused: 100 000 objects in a few ms each.
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        objs: list[Any] = list(map(object.__new__, map(_CLASSES.get, types, repeat(_LAZY_UNKNOWN, n))))
        deque(map(object.__setattr__, objs, repeat("_lz", n), zip(repeat(src, n), range(n))), maxlen=0)
    finally:
        if paused:
            gc.enable()
    if b"" in types:
        for i, t in enumerate(types):
            if not t:  # "type" is not the first member: decode this one now
                objs[i] = to_notification(src.payload(i), private=True)
    return tuple(objs)
