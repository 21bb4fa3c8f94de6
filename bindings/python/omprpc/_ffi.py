"""ctypes layer over the omprpc C ABI (include/omprpc.h, docs/c-api.md).

* The shared library is found through ``OMPRPC_LIBRARY`` (an explicit choice wins), else next
  to the package (``omprpc/_lib/libomprpc.so``, ``omprpc.dll`` on Windows: what a wheel
  carries), else by name through the system loader's search: on Linux the soname
  ``libomprpc.so.<ABI>`` (``make install``, ldconfig, ``LD_LIBRARY_PATH``), on Windows
  ``omprpc.dll`` (the program's directory, System32 and the directories given to
  ``os.add_dll_directory``: ctypes leaves ``PATH`` out), else — when running from a checkout —
  the repository's cargo output: ``target/release`` or ``target/debug``, and on Windows also
  the cross-build's ``target/x86_64-pc-windows-gnu/{release,debug}`` (the most recently built
  one first). Node searches the same places in the same order (bindings/node/lib/native.cjs).
* Every function gets ``argtypes`` / ``restype`` from ``_ffi_gen.SIGNATURES``, generated from
  the header (as are the status constants and the structs; ``make generate``). Owned strings
  come back as ``c_void_p``, are copied with ``ctypes.string_at`` and released with
  ``omprpc_string_free``.
* The functions of ``_ffi_gen.REQUIRED`` (the first surface; the same list as Node's)
  must be exported: a library without one is an ImportError. The others, added later within
  the same ABI version, are optional: a library without one still loads, the name is bound to
  a stand-in raising :class:`RpcError` when called, and :func:`has` tells them apart.
* ``omprpc_abi_version()`` is checked against :data:`ABI_VERSION` at import.
* :class:`Handle` guards a client pointer: calls count themselves in, so ``free`` waits
  until every call that is still inside the library (all woken by ``close``) has returned.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import threading
from ctypes import c_int, c_size_t, c_void_p
from pathlib import Path
from typing import Any, Callable, Sequence

# The status constants (OK, TIMEOUT …) and the signature table, generated from the header.
from ._ffi_gen import *  # noqa: F403
from ._ffi_gen import REQUIRED as _REQUIRED
from ._ffi_gen import SIGNATURES as _SIGNATURES
from .errors import (
    STATUS_CLASSES,
    RpcClosedError,
    RpcCommandError,
    RpcError,
    RpcProcessExitError,
    RpcProtocolError,
)

#: The C ABI version this binding was written against (``OMPRPC_ABI_VERSION``).
ABI_VERSION = 2

TIMEOUT_INFINITE = -1
TIMEOUT_DEFAULT = -2

_LIB_NAME = {"darwin": "libomprpc.dylib", "win32": "omprpc.dll"}.get(sys.platform, "libomprpc.so")


#: The name the system loader knows an installed library by, and where it looks for it (the
#: words of the "not found" error). Linux: the SONAME (``make install`` links it to the
#: versioned file; only ELF platforms have one, build.rs). Windows: the DLL's own name, which
#: ``LoadLibraryEx`` looks for in ctypes' default places.
_BY_NAME: tuple[str, str] | None = {
    "linux": (f"libomprpc.so.{ABI_VERSION}", "by soname, through ldconfig and LD_LIBRARY_PATH"),
    "win32": ("omprpc.dll", "by name, through the DLL search: the program's directory, System32, "
                            "os.add_dll_directory"),
}.get("linux" if sys.platform.startswith("linux") else sys.platform)

#: The cargo output directories of a checkout, under its target/: a Windows checkout builds into
#: target/{release,debug}, and a cross-build from Linux into the target triple's directory.
_CARGO_DIRS = ("release", "debug") + (
    ("x86_64-pc-windows-gnu/release", "x86_64-pc-windows-gnu/debug") if sys.platform == "win32" else ()
)


def _candidates() -> list[Path | str]:
    """Where :func:`_load` looks, in order: paths (loaded when the file exists) and the name
    the system loader searches for (a bare name)."""
    env = os.environ.get("OMPRPC_LIBRARY")
    if env:
        return [Path(env)]
    here = Path(__file__).resolve().parent
    found: list[Path | str] = [here / "_lib" / _LIB_NAME]
    if _BY_NAME:
        found.append(_BY_NAME[0])
    # A checkout: <repo>/bindings/python/omprpc → <repo>/target/{release,debug}.
    repo = here.parents[2] if len(here.parents) > 2 else None
    if repo is not None and (repo / "Cargo.toml").is_file():
        builds = [repo / "target" / kind / _LIB_NAME for kind in _CARGO_DIRS]
        builds = [b for b in builds if b.is_file()]
        builds.sort(key=lambda p: p.stat().st_mtime, reverse=True)
        found.extend(builds)
    return found


def _load() -> tuple[ctypes.CDLL, str]:
    tried = []
    for candidate in _candidates():
        if isinstance(candidate, str):
            try:
                lib = ctypes.CDLL(candidate)  # by name: the loader's own search
            except OSError as exc:
                # The loader's own reason: absent, or present but unloadable (another architecture …).
                tried.append(f"{candidate} ({_BY_NAME[1] if _BY_NAME else 'by name'}: {exc})")
                continue
            return lib, candidate
        if candidate.is_file():
            lib = ctypes.CDLL(str(candidate))  # CDLL: every call releases the GIL
            return lib, str(candidate)
        tried.append(str(candidate))
    raise ImportError(
        "omprpc: cannot find the omprpc shared library. Looked at, in order:\n  "
        + "\n  ".join(tried)
        + "\nFix: install the wheel for this platform (pip install omprpc-…-<platform>.whl, which "
        "carries the library), or install the library ("
        + ("put omprpc.dll from the Windows release zip where the DLL search finds it"
           if sys.platform == "win32" else "make install; its soname is then found")
        + f"), or set OMPRPC_LIBRARY to the path of {_LIB_NAME}."
    )


class _Missing:
    """Stands in for an optional function the loaded library does not export (an older build):
    an error when called, instead of an ImportError for every program."""

    argtypes = None
    restype = None

    def __init__(self, name: str, path: str):
        self.__name__ = name
        self._path = path

    def __call__(self, *args: Any) -> Any:
        raise RpcError(f"omprpc: {self.__name__} is not in {self._path} (an older build of the library)")


#: The optional functions the loaded library does not export (see :func:`has`).
MISSING: frozenset[str] = frozenset()


def _bind(lib: ctypes.CDLL, path: str) -> frozenset[str]:
    """Sets every function's signature; returns the optional ones the library lacks."""
    missing = set()
    for name, (restype, argtypes) in _SIGNATURES.items():
        try:
            fn = getattr(lib, name)
        except AttributeError as exc:
            if name in _REQUIRED:
                raise ImportError(f"omprpc: the library does not export {name}: {exc}") from None
            setattr(lib, name, _Missing(name, path))
            missing.add(name)
            continue
        fn.restype = restype
        fn.argtypes = argtypes
    return frozenset(missing)


def has(name: str) -> bool:
    """Whether the loaded library exports ``name`` (a function of the header)."""
    return name in _SIGNATURES and name not in MISSING


def check_abi(found: int, path: str) -> None:
    if found != ABI_VERSION:
        raise ImportError(
            f"omprpc: ABI mismatch: the library at {path} has ABI version {found}, but this "
            f"Python binding needs ABI version {ABI_VERSION}. Rebuild or reinstall the binding "
            "and the library from the same omprpc version (or point OMPRPC_LIBRARY at a "
            "matching library)."
        )


lib, LIBRARY_PATH = _load()
MISSING = _bind(lib, LIBRARY_PATH)
check_abi(int(lib.omprpc_abi_version()), LIBRARY_PATH)

LIBRARY_VERSION: str = ctypes.string_at(lib.omprpc_version()).decode("utf-8", "replace")


def status_name(status: int) -> str:
    return ctypes.string_at(lib.omprpc_status_name(status)).decode("ascii", "replace")


def take(ptr: c_void_p) -> bytes | None:
    """Copies an owned string out of the library and frees it."""
    if not ptr.value:
        return None
    try:
        return ctypes.string_at(ptr.value)
    finally:
        lib.omprpc_string_free(ptr.value)
        ptr.value = None


def take_raw(ptr: int | None) -> bytes | None:
    """Like :func:`take`, for a raw pointer value."""
    if not ptr:
        return None
    try:
        return ctypes.string_at(ptr)
    finally:
        lib.omprpc_string_free(ptr)


def error_from(status: int, err: bytes | None) -> RpcError:
    """The Python exception for a failed call (the C status + its error JSON)."""
    detail: dict[str, Any] = {}
    if err:
        try:
            parsed = json.loads(err)
            if isinstance(parsed, dict):
                detail = parsed
        except ValueError:
            detail = {"message": err.decode("utf-8", "replace")}
    message = str(detail.get("message") or status_name(status))
    try:
        known: Status | None = Status(status)
    except ValueError:  # a status newer than this binding
        known = None
    exc: RpcError
    if status == COMMAND_FAILED:
        command = detail.get("command")
        error = detail.get("error")
        code = detail.get("errorCode")
        info = detail.get("errorInfo")
        exc = RpcCommandError(
            command if isinstance(command, str) else "",
            error if isinstance(error, str) else message,
            info if isinstance(info, dict) else None,
            code=code if isinstance(code, str) else None,
        )
    elif status == PROTOCOL:
        exc = RpcProtocolError(detail, message=message)
    else:
        exc = STATUS_CLASSES.get(known, RpcError)(message) if known is not None else RpcError(message)
    exc.status = known if known is not None else status
    exc.status_name = status_name(status)
    return exc



def encode(text: str, what: str) -> bytes:
    """UTF-8 for a C string argument; a NUL would silently cut the string, so it is refused."""
    if "\x00" in text:
        raise ValueError(f"{what} must not contain NUL characters")
    return text.encode("utf-8", "surrogatepass")


def dumps(value: Any) -> bytes:
    """JSON for the library: compact, UTF-8, no NaN/Infinity (JavaScript rejects them)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode(
        "utf-8", "surrogatepass"
    )


def build_argv(options: bytes) -> bytes:
    out, err = c_void_p(), c_void_p()
    status = lib.omprpc_build_argv(options, ctypes.byref(out), ctypes.byref(err))
    if status != OK:
        raise error_from(status, take(err))
    return take(out) or b"[]"


def call_static(fn: Callable[..., int], *args: Any) -> bytes:
    """A function of no client with one owned string out-parameter, then ``out_error``."""
    out, err = c_void_p(), c_void_p()
    status = fn(*args, ctypes.byref(out), ctypes.byref(err))
    if status != OK:
        raise error_from(status, take(err))
    return take(out) or b""


def start(options: bytes) -> int:
    out, err = c_void_p(), c_void_p()
    status = lib.omprpc_client_start(options, ctypes.byref(out), ctypes.byref(err))
    if status != OK:
        raise error_from(status, take(err))
    if not out.value:
        raise RpcError("omprpc_client_start returned no client")
    return out.value


class Handle:
    """An ``omprpc_client*`` with use-after-free protection.

    ``call``/``call_out`` refuse to run once ``free`` began; ``free`` waits until every call
    already inside the library has returned (``close`` wakes them all), then frees.
    """

    def __init__(self, ptr: int):
        self._ptr: int | None = ptr
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._inflight = 0
        self.closed_message = "the client is closed: close() stopped the agent"

    def _enter(self) -> int:
        with self._lock:
            if self._ptr is None:
                err = RpcClosedError(self.closed_message)
                err.status, err.status_name = Status.CLOSED, "CLOSED"
                raise err
            self._inflight += 1
            return self._ptr

    def _leave(self) -> None:
        with self._lock:
            self._inflight -= 1
            if self._inflight == 0:
                self._idle.notify_all()

    @property
    def alive(self) -> bool:
        return self._ptr is not None

    def call(self, fn: Callable[..., int], *args: Any) -> None:
        """A call whose only out-parameter is ``out_error``."""
        ptr = self._enter()
        err = c_void_p()
        try:
            status = fn(ptr, *args, ctypes.byref(err))
        finally:
            self._leave()
        if status != OK:
            raise error_from(status, take(err))

    def call_out(self, fn: Callable[..., int], *args: Any) -> bytes | None:
        """A call with one owned string out-parameter, then ``out_error``."""
        ptr = self._enter()
        out, err = c_void_p(), c_void_p()
        try:
            status = fn(ptr, *args, ctypes.byref(out), ctypes.byref(err))
        finally:
            self._leave()
        if status != OK:
            raise error_from(status, take(err))
        return take(out)

    def call_status(self, fn: Callable[..., int], *args: Any) -> tuple[int, bytes | None, bytes | None]:
        """Like ``call_out`` but returns (status, out, error) instead of raising."""
        ptr = self._enter()
        out, err = c_void_p(), c_void_p()
        try:
            status = fn(ptr, *args, ctypes.byref(out), ctypes.byref(err))
        finally:
            self._leave()
        return status, take(out), take(err)

    def call_raw(self, fn: Callable[..., int], *args: Any) -> tuple[int, int | None, bytes | None]:
        """Like ``call_status`` but hands back the owned output pointer unread (caller frees)."""
        ptr = self._enter()
        out, err = c_void_p(), c_void_p()
        try:
            status = fn(ptr, *args, ctypes.byref(out), ctypes.byref(err))
        finally:
            self._leave()
        return status, out.value, take(err)

    def event_fd(self) -> int:
        ptr = self._enter()
        fd, err = c_int(-1), c_void_p()
        try:
            status = lib.omprpc_client_event_fd(ptr, ctypes.byref(fd), ctypes.byref(err))
        finally:
            self._leave()
        if status != OK:
            raise error_from(status, take(err))
        return fd.value

    def event_handle(self) -> int:
        """Windows' counterpart of :meth:`event_fd`: the client's event HANDLE, valid until
        :meth:`free` (the library owns it: never set, reset or close it)."""
        ptr = self._enter()
        handle, err = c_void_p(), c_void_p()
        try:
            status = lib.omprpc_client_event_handle(ptr, ctypes.byref(handle), ctypes.byref(err))
        finally:
            self._leave()
        if status != OK:
            raise error_from(status, take(err))
        if not handle.value:
            raise RpcError("omprpc_client_event_handle returned no handle")
        return handle.value

    def close(self) -> None:
        try:
            self.call(lib.omprpc_client_close)
        except RpcProcessExitError:
            pass  # already freed

    def free(self) -> None:
        with self._lock:
            ptr, self._ptr = self._ptr, None
            while self._inflight:
                self._idle.wait()
        if ptr is not None:
            lib.omprpc_client_free(ptr)


class Owned:
    """A library object whose bytes Python reads in place (a turn, an event batch): ``ptr``
    until ``release`` (or the garbage collector) frees it with ``free``, once. Its views
    (``omprpc_str``) are absolute addresses, read with :meth:`read`."""

    __slots__ = ("_ptr", "_free", "__weakref__")

    def __init__(self, ptr: int, free: Callable[[int], None]):
        self._ptr: int | None = ptr
        self._free = free

    @property
    def ptr(self) -> int:
        if self._ptr is None:
            raise ValueError("the library object was released")
        return self._ptr

    def read(self, data: int, size: int) -> bytes:
        """``size`` bytes at ``data``, an address inside this object."""
        if self._ptr is None:
            raise ValueError("the library object was released")
        return ctypes.string_at(data, size)

    def release(self) -> None:
        ptr, self._ptr = self._ptr, None
        if ptr:
            try:
                self._free(ptr)
            except Exception:  # interpreter shutdown
                pass

    def __del__(self) -> None:
        self.release()


def text(s: Any) -> str | None:
    """An ``omprpc_str`` as text; None when absent (``data`` NULL)."""
    return ctypes.string_at(s.data, s.len).decode("utf-8", "replace") if s.data else None


def json_of(s: Any) -> Any:
    """An ``omprpc_str`` holding JSON, decoded; None when absent."""
    return json.loads(ctypes.string_at(s.data, s.len)) if s.data else None


# An omprpc_event_view is four words (type data/len, json data/len): an array of them is read
# as one run of size_t, its columns taken with strided slices (C loops, not one ctypes struct
# per event).
_VIEW_SIZE = ctypes.sizeof(omprpc_event_view)  # noqa: F405
_FLAT_VIEWS = (_VIEW_SIZE == 4 * ctypes.sizeof(c_size_t) == 4 * ctypes.sizeof(c_void_p)
               and omprpc_event_view.json.offset == 2 * ctypes.sizeof(c_size_t))  # noqa: F405


Columns = Sequence[int]


def view_columns(fn: Callable[..., int], obj: int) -> tuple[Columns, Columns, Columns, Columns]:
    """``fn(obj, &views, &count, &err)`` (``omprpc_turn_events``, ``omprpc_event_batch_events``):
    the views as columns — type addresses, type lengths, JSON addresses, JSON lengths (an
    absent type: address 0, length 0): strided views of one copy of the array (no Python int
    per member until one is read)."""
    arr, count, err = ctypes.POINTER(omprpc_event_view)(), c_size_t(), c_void_p()  # noqa: F405
    status = fn(obj, ctypes.byref(arr), ctypes.byref(count), ctypes.byref(err))
    if status != OK:  # noqa: F405
        raise error_from(status, take(err))
    n = count.value
    if n == 0:
        return [], [], [], []
    if _FLAT_VIEWS:
        addr = ctypes.cast(arr, c_void_p).value or 0
        flat = memoryview(ctypes.string_at(addr, n * _VIEW_SIZE)).cast("P")
        return flat[0::4], flat[1::4], flat[2::4], flat[3::4]
    items = [arr[i] for i in range(n)]  # pragma: no cover - a platform where the words differ
    return ([v.event_type.data or 0 for v in items], [v.event_type.len for v in items],
            [v.json.data or 0 for v in items], [v.json.len for v in items])
