"""Windows' waits on the client's event HANDLE (``omprpc_client_event_handle``: a manual-reset
event, set while events are queued or the client is closed; docs/windows.md), through
kernel32 by ctypes. Windows has neither poll(2) nor the event descriptor, so the dispatcher
(``_session``) and ``omprpc.aio``'s watcher wait here, on that handle and an event of their own
that wakes them. Imported on Windows only."""

from __future__ import annotations

import ctypes
import sys
import threading
from ctypes import c_void_p, wintypes
from typing import Sequence

# Windows only; the assertion also tells a type checker on another platform to skip the rest.
assert sys.platform == "win32"

INFINITE = 0xFFFFFFFF
_WAIT_OBJECT_0 = 0x0
_WAIT_TIMEOUT = 0x102

_kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
# ctypes releases the GIL around every foreign call: a thread blocked here holds no lock.
_CreateEventW = _kernel32.CreateEventW
_CreateEventW.argtypes = [c_void_p, wintypes.BOOL, wintypes.BOOL, wintypes.LPCWSTR]
_CreateEventW.restype = wintypes.HANDLE
_SetEvent = _kernel32.SetEvent
_SetEvent.argtypes = [wintypes.HANDLE]
_SetEvent.restype = wintypes.BOOL
_CloseHandle = _kernel32.CloseHandle
_CloseHandle.argtypes = [wintypes.HANDLE]
_CloseHandle.restype = wintypes.BOOL
_WaitForMultipleObjects = _kernel32.WaitForMultipleObjects
_WaitForMultipleObjects.argtypes = [wintypes.DWORD, ctypes.POINTER(wintypes.HANDLE), wintypes.BOOL, wintypes.DWORD]
_WaitForMultipleObjects.restype = wintypes.DWORD


def wait_any(handles: Sequence[int], timeout_ms: int = INFINITE) -> int | None:
    """Waits until one of ``handles`` is signalled: its index (the lowest one signalled), or
    None when ``timeout_ms`` passed first. OSError when the wait fails."""
    array = (wintypes.HANDLE * len(handles))(*handles)
    got = int(_WaitForMultipleObjects(len(handles), array, False, timeout_ms))
    if got == _WAIT_TIMEOUT:
        return None
    if _WAIT_OBJECT_0 <= got < _WAIT_OBJECT_0 + len(handles):
        return got - _WAIT_OBJECT_0
    raise ctypes.WinError(ctypes.get_last_error())


class WakeEvent:
    """An auto-reset event of our own: ``set`` wakes one wait on it (or the next one), which
    resets it. ``set`` after ``close`` does nothing: the handle's value may name another
    object by then."""

    def __init__(self) -> None:
        handle = _CreateEventW(None, False, False, None)
        if not handle:
            raise ctypes.WinError(ctypes.get_last_error())
        self.handle: int = handle
        self._lock = threading.Lock()
        self._closed = False

    def set(self) -> None:
        with self._lock:
            if not self._closed:
                _SetEvent(self.handle)

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                _CloseHandle(self.handle)
