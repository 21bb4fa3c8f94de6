"""The exception classes of omprpc (``omp_rpc``'s names and attributes, and one class per status).

Every error raised from a C status carries ``status`` (an :class:`omprpc.Status`, an ``int``; or
``None`` when the error did not come from the library) and ``status_name``. Each status has its
own class, which also inherits the builtin a Python caller would catch for that failure:

=================  ============================  ==============================
status             class                         also a
=================  ============================  ==============================
INVALID_ARGUMENT   :class:`RpcInvalidArgumentError`  ``ValueError``
INVALID_JSON       :class:`RpcInvalidJsonError`      ``ValueError``
INVALID_UTF8       :class:`RpcInvalidUtf8Error`      ``ValueError``
TIMEOUT            :class:`RpcTimeoutError`          ``TimeoutError``
COMMAND_FAILED     :class:`RpcCommandError`
PROCESS_EXITED     :class:`RpcProcessExitError`
CLOSED             :class:`RpcClosedError`           (an ``RpcProcessExitError``, as in omp_rpc)
CONCURRENCY        :class:`RpcConcurrencyError`
PROTOCOL           :class:`RpcProtocolError`
IO                 :class:`RpcIOError`               ``OSError``
NOT_FOUND          :class:`RpcNotFoundError`         ``LookupError``
CANCELLED          :class:`RpcCancelledError`
LIMIT_EXCEEDED     :class:`RpcLimitExceededError`
PANIC              :class:`RpcPanicError`            (a bug in the library: please report it)
=================  ============================  ==============================

Every class is an :class:`RpcError`, itself a ``RuntimeError`` as in ``omp_rpc``.
"""

from __future__ import annotations

from typing import Any, Mapping

from ._ffi_gen import Status

__all__ = [
    "RpcError",
    "RpcTimeoutError",
    "RpcProcessExitError",
    "RpcClosedError",
    "RpcConcurrencyError",
    "RpcCommandError",
    "RpcProtocolError",
    "RpcInvalidArgumentError",
    "RpcInvalidJsonError",
    "RpcInvalidUtf8Error",
    "RpcIOError",
    "RpcNotFoundError",
    "RpcCancelledError",
    "RpcLimitExceededError",
    "RpcPanicError",
]


class RpcError(RuntimeError):
    """Base exception of the omprpc Python binding."""

    status: int | None = None
    status_name: str | None = None


class RpcTimeoutError(RpcError, TimeoutError):
    """A deadline passed (start-up, a request, a turn, a UI request). The client stays usable."""


class RpcProcessExitError(RpcError):
    """The agent exited, closed its output, or the client was stopped."""


class RpcClosedError(RpcProcessExitError):
    """The client was closed or stopped (status CLOSED)."""


class RpcConcurrencyError(RpcError):
    """A second prompt-lifecycle collector (prompt_and_wait, collect_events, wait_for_idle)."""


class RpcInvalidArgumentError(RpcError, ValueError):
    """The library refused an argument or option, naming it (also a command the running agent's
    version lacks, an option the version cannot honour)."""


class RpcInvalidJsonError(RpcError, ValueError):
    """A JSON text handed to the library did not parse."""


class RpcInvalidUtf8Error(RpcError, ValueError):
    """A string handed to the library was not UTF-8."""


class RpcIOError(RpcError, OSError):
    """An operating-system call failed (spawning the agent, a pipe, a socket, a file)."""


class RpcNotFoundError(RpcError, LookupError):
    """What was named does not exist (a UI request, a host tool call, a pending id)."""


class RpcCancelledError(RpcError):
    """The work was cancelled (a host tool call the agent gave up, a late answer refused)."""


class RpcLimitExceededError(RpcError):
    """A configured bound was reached (a frame, a queue, a turn's bytes)."""


class RpcPanicError(RpcError):
    """The library caught a panic of its own: a bug in omprpc. The client is closed."""


def _info_fields(info: Mapping[str, Any] | None) -> tuple[str | None, Any, bool | None]:
    """``code``, ``details`` and ``retryable`` of a typed error's ``errorInfo`` (omp_rpc's rules:
    all None without one; ``retryable`` False when it is there but says nothing)."""
    if not info:
        return None, None, None
    code = info.get("code")
    return (str(code) if code is not None else None), info.get("details"), bool(info.get("retryable"))


class RpcCommandError(RpcError):
    """The agent answered ``success: false`` (also a late prompt failure).

    ``command`` is the command, ``error`` the agent's text. omp's typed errors also carry
    ``error_info`` (the frame's ``errorInfo`` object), and from it ``code``, ``details`` and
    ``retryable``. ``code`` falls back to a bare ``code`` member of the response frame (the
    keyword ``code``) where there is no ``errorInfo``.
    """

    def __init__(self, command: str, error: str, error_info: Mapping[str, Any] | None = None, *,
                 code: str | None = None):
        super().__init__(f"{command}: {error}")
        self.command = command
        self.error = error
        self.error_info: dict[str, Any] | None = dict(error_info) if error_info is not None else None
        info_code, self.details, self.retryable = _info_fields(error_info)
        self.code: str | None = info_code if info_code is not None else code


class RpcProtocolError(RpcError):
    """An unmatched error response or another protocol fault the library recorded.

    The records are reported (``client.protocol_errors``, ``on_protocol_error``), not raised; a
    call that fails with the status PROTOCOL (an agent that broke the protocol) raises one.
    ``payload`` is the offending frame (or the library's record when there is no frame),
    ``record`` the library's full record.
    """

    def __init__(self, payload: Mapping[str, Any], *, message: str | None = None,
                 record: Mapping[str, Any] | None = None):
        self.payload: dict[str, Any] = dict(payload)
        self.record: dict[str, Any] = dict(record) if record is not None else dict(payload)
        command = payload.get("command")
        request_id = payload.get("id")
        error = payload.get("error")
        if record is not None:
            command = record.get("command", command) or command
            request_id = record.get("requestId", request_id) or request_id
        self.command: str | None = command if isinstance(command, str) and command else None
        self.request_id: str | None = request_id if isinstance(request_id, str) else None
        self.remote_error: str | None = error if isinstance(error, str) else None
        info = payload.get("errorInfo")
        self.error_info: dict[str, Any] | None = dict(info) if isinstance(info, Mapping) else None
        self.code: str | None
        self.details: Any
        self.retryable: bool | None
        self.code, self.details, self.retryable = _info_fields(self.error_info)
        if message is None:
            fragments = ["Received unmatched RPC error response"]
            if self.command:
                fragments.append(f"for {self.command}")
            if self.request_id:
                fragments.append(f"(id={self.request_id})")
            if self.remote_error:
                fragments.append(f": {self.remote_error}")
            message = " ".join(fragments)
        super().__init__(message)

    @classmethod
    def _from_record(cls, record: Mapping[str, Any]) -> RpcProtocolError:
        frame = record.get("frame")
        payload = frame if isinstance(frame, dict) else record
        message = record.get("message")
        return cls(payload, message=message if isinstance(message, str) else None, record=record)


#: The class of each status whose error carries only a message (COMMAND_FAILED and PROTOCOL
#: carry more: ``_ffi.error_from`` builds them); the table at the top of this module.
STATUS_CLASSES: dict[Status, type[RpcError]] = {
    Status.INVALID_ARGUMENT: RpcInvalidArgumentError,
    Status.INVALID_JSON: RpcInvalidJsonError,
    Status.INVALID_UTF8: RpcInvalidUtf8Error,
    Status.TIMEOUT: RpcTimeoutError,
    Status.PROCESS_EXITED: RpcProcessExitError,
    Status.CLOSED: RpcClosedError,
    Status.CONCURRENCY: RpcConcurrencyError,
    Status.IO: RpcIOError,
    Status.NOT_FOUND: RpcNotFoundError,
    Status.CANCELLED: RpcCancelledError,
    Status.LIMIT_EXCEEDED: RpcLimitExceededError,
    Status.PANIC: RpcPanicError,
}


#: The core's own CLOSED message for a client its host stopped: the handle is gone by then, so
#: the binding says it (tests/test_error_table.py holds the two equal, as Go's and Node's do).
CLOSED_MESSAGE = "the client is closed: close() stopped the agent"


def not_running_error(stopped: bool) -> RpcError:
    """What a call on a client that is not running raises: a stopped client's CLOSED (an
    RpcClosedError, still the RpcError omp_rpc raised), a never-started one omp_rpc's RpcError."""
    if not stopped:
        return RpcError("RPC client is not started")
    exc = RpcClosedError(CLOSED_MESSAGE)
    exc.status, exc.status_name = Status.CLOSED, "CLOSED"
    return exc

