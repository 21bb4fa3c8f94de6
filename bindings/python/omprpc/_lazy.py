"""Lazily decoded turn events.

A turn of 100 000 events is ~64 MB of JSON; decoding all of it into Python objects takes
seconds, while most hosts read a few fields of a few events. The library hands the events out
as structure (``omprpc_turn_events``, ``omprpc_event_batch_events``): each event's ``type`` and
its JSON, borrowed from the turn or batch. ``PromptTurn.events`` (and ``collect_events``) are
built from those views without decoding any event: each becomes an instance of a lazy subclass
of its typed class (``isinstance(ev, MessageUpdateEvent)`` holds, ``ev.type`` costs nothing).
Its other fields decode that one event, read from the library's buffer, on first access (then
it is cached).

Equality, hashing, ``repr``, pickling and copying behave as for the eager object (they decode
it; copies and pickles are plain typed objects). A frame of a known type whose fields do not
parse raises :class:`~omprpc.RpcError` when a field is read (eager decoding would have made it
an ``UnknownNotification`` with ``parse_error``).
"""

from __future__ import annotations

import ctypes
import dataclasses
import gc
import json
import threading
from collections import deque
from itertools import repeat
from typing import Any, Callable, Sequence

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


class EventSource:
    """The events of one turn or batch, in a library object (``_ffi.Owned``) kept alive while
    any lazy event of it is: event ``i`` is the JSON at ``ptrs[i]`` (``lens[i]`` bytes).
    ``region`` (address, size): one buffer holding them all, in order, as the consecutive
    elements of one JSON array (a turn's events in the turn JSON)."""

    __slots__ = ("_owner", "_ptrs", "_lens", "_region", "_lock", "count", "_decoded", "_payloads")

    def __init__(self, owner: _ffi.Owned, ptrs: Sequence[int], lens: Sequence[int],
                 region: tuple[int, int] | None = None):
        self._owner = owner
        self._ptrs = ptrs
        self._lens = lens
        self._region = region
        self._lock = threading.Lock()
        self.count = len(ptrs)
        self._decoded = 0
        self._payloads: list[Any] | None = None

    def array_json(self) -> bytes:
        """The events as one JSON array, copied out of the library's buffer."""
        ptrs, lens, read = self._ptrs, self._lens, self._owner.read
        if not ptrs:
            return b"[]"
        region = self._region
        if region is not None:
            # Consecutive elements of one array: between them only commas and white space.
            first, end = ptrs[0], ptrs[-1] + lens[-1]
            base, size = region
            if base < first and end < base + size and read(first - 1, 1) == b"[" and read(end, 1) == b"]":
                return read(first - 1, end - first + 2)
            return b"[" + read(first, end - first) + b"]"
        return b"[" + b",".join(map(read, ptrs, lens)) + b"]"

    def all(self) -> list[Any]:
        """Every event at once: one bulk decode (the GC paused) beats one decode per event
        once a host reads most of them."""
        with self._lock:
            if self._payloads is None:
                data = self.array_json()
                paused = gc.isenabled()
                if paused:
                    gc.disable()
                try:
                    payloads = json.loads(data)
                finally:
                    if paused:
                        gc.enable()
                self._payloads = payloads if isinstance(payloads, list) else []
            return self._payloads

    def payload(self, i: int) -> Any:
        payloads = self._payloads
        if payloads is not None:
            return payloads[i]
        # After an eighth of a large turn was read event by event, decode the rest in bulk.
        self._decoded += 1
        if self._decoded > 256 and self._decoded > self.count >> 3:
            return self.all()[i]
        return json.loads(self._owner.read(self._ptrs[i], self._lens[i]))


def lazy_events(src: EventSource, tptrs: Sequence[int], tlens: Sequence[int]) -> tuple[RpcNotification, ...]:
    """The events of ``src`` as lazy typed events, their classes found from the views'
    ``event_type`` (address, length; 0, 0 when absent); an event without a type is decoded at
    once. The type text is read once per distinct address, not once per event: the library
    hands every event of one type the same ``event_type`` (src/ffi/structured.rs), so a turn of
    100 000 events reads a handful of types."""
    n = src.count
    if n == 0:
        return ()
    # C-level loops (map/zip) and the cyclic GC paused: 100 000 objects in a few ms each.
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        classes = {addr: _CLASSES.get(ctypes.string_at(addr, size), _LAZY_UNKNOWN) if addr else _LAZY_UNKNOWN
                   for addr, size in dict(zip(tptrs, tlens)).items()}
        objs: list[Any] = list(map(object.__new__, map(classes.__getitem__, tptrs)))
        deque(map(object.__setattr__, objs, repeat("_lz", n), zip(repeat(src, n), range(n))), maxlen=0)
    finally:
        if paused:
            gc.enable()
    if 0 in classes:
        for i, addr in enumerate(tptrs):
            if not addr:  # an event without a type: decoded now
                objs[i] = to_notification(src.payload(i), private=True)
    return tuple(objs)
