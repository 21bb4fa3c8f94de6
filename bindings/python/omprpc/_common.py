"""Helpers every part of the client uses: timeouts in the library's units, JSON decoding of
large batches, blocking calls that Ctrl-C can interrupt, and the ``LIBRARY_DEFAULT`` sentinel."""

from __future__ import annotations

import gc
import json
import logging
import threading
from typing import Any, Callable, Sequence

from . import _ffi
from .protocol import RpcNotification, to_notification


def _ms(timeout: float | None) -> int:
    """Seconds → the library's milliseconds; None → no deadline."""
    if timeout is None:
        return _ffi.TIMEOUT_INFINITE
    if timeout <= 0:
        return 0
    return max(1, int(round(timeout * 1000)))


def _request_ms(timeout: float | None) -> int:
    """A typed command's ``timeout=``: LIBRARY_DEFAULT → the client's ``request_timeout``,
    None → no deadline, else seconds."""
    return _ffi.TIMEOUT_DEFAULT if timeout is LIBRARY_DEFAULT else _ms(timeout)


def _loads(data: bytes | None) -> Any:
    return None if data is None else json.loads(data)


def _loads_bulk(data: bytes) -> Any:
    """json.loads for large batches. Decoded JSON holds no reference cycles, yet every
    container it allocates counts towards the cyclic GC's thresholds: with the collector
    paused while decoding, thousands of events decode 2-4x faster. The previous state is
    restored at once (only if this call changed it)."""
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        return json.loads(data)
    finally:
        if paused:
            gc.enable()


def _typed_bulk(payloads: Sequence[Any]) -> tuple[RpcNotification, ...]:
    """Typed events for many payloads (the GC paused as in :func:`_loads_bulk`)."""
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        return tuple(to_notification(p) for p in payloads)
    finally:
        if paused:
            gc.enable()


def _interruptible(call: Callable[[], Any]) -> Any:
    """Runs a call that may block for long. On the main thread it runs on a helper thread while
    the main thread waits in an interruptible wait, so Ctrl-C (KeyboardInterrupt) works even
    though a ctypes call cannot be interrupted; the call itself then finishes in the
    background (stop() ends it at once). Elsewhere the call runs directly."""
    if threading.current_thread() is not threading.main_thread():
        return call()
    box: list[tuple[bool, Any]] = []
    done = threading.Event()

    def run() -> None:
        try:
            box.append((True, call()))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            box.append((False, exc))
        finally:
            done.set()

    threading.Thread(target=run, name="omprpc-call", daemon=True).start()
    done.wait()
    ok, value = box[0]
    if ok:
        return value
    raise value


class _LibraryDefault:
    """The default of a keyword whose default is the library's own (docs/c-api.md)."""

    _instance: _LibraryDefault | None = None

    def __new__(cls) -> _LibraryDefault:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "LIBRARY_DEFAULT"

    def __bool__(self) -> bool:
        return False


#: A keyword left at the library's default (its value is not sent).
LIBRARY_DEFAULT: Any = _LibraryDefault()

#: The library's log levels and the `logging` level each is forwarded at (trace below DEBUG).
_LOG_LEVELS = {"error": logging.ERROR, "warn": logging.WARNING, "info": logging.INFO, "debug": logging.DEBUG, "trace": 5}
