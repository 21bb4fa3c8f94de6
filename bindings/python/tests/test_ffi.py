"""The ctypes layer: loading, the ABI handshake, signatures, errors, teardown and GC."""

from __future__ import annotations

import gc
import os
import re
import subprocess
import sys
import textwrap
import time
import weakref
from pathlib import Path

import pytest

import omprpc
from omprpc import (
    RpcClient,
    RpcCommandError,
    RpcConcurrencyError,
    RpcError,
    RpcProcessExitError,
    RpcTimeoutError,
    _ffi,
)

from conftest import HERE, IMPORT_ROOT, REPO, agent_command


def _run_python(code: str, *, env: dict[str, str] | None = None, args: tuple[str, ...] = (),
                argv: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = os.pathsep.join([str(IMPORT_ROOT), str(HERE), full_env.get("PYTHONPATH", "")])
    full_env.update(env or {})
    return subprocess.run([sys.executable, *args, "-c", textwrap.dedent(code), *argv], env=full_env,
                          capture_output=True, text=True, timeout=120)


def test_versions() -> None:
    assert omprpc.ABI_VERSION == _ffi.lib.omprpc_abi_version() == 2
    assert re.match(r"^\d+\.\d+\.\d+", omprpc.LIBRARY_VERSION)
    assert _ffi.status_name(4) == "TIMEOUT" and _ffi.status_name(999) == "UNKNOWN"


# Imports the binding in the child and says whether it loaded or why it refused.
_IMPORT_OR_REFUSED = textwrap.dedent("""
    try:
        import omprpc
    except ImportError as exc:
        print("REFUSED:", exc)
    else:
        print("LOADED")
""")


def test_abi_mismatch_is_refused_at_import() -> None:
    # monkeypatch the library's answer before the binding loads it
    result = _run_python(textwrap.dedent("""
        import ctypes
        real = ctypes.CDLL
        class Patched(real):
            def __getattr__(self, name):
                fn = super().__getattr__(name)
                if name == "omprpc_abi_version":
                    fn = lambda: 999
                    setattr(self, name, fn)
                return fn
        ctypes.CDLL = Patched
    """) + _IMPORT_OR_REFUSED)
    assert "REFUSED:" in result.stdout, result.stdout + result.stderr
    assert "ABI version 999" in result.stdout and f"needs ABI version {omprpc.ABI_VERSION}" in result.stdout


def test_abi_check_function(monkeypatch: pytest.MonkeyPatch) -> None:
    _ffi.check_abi(_ffi.ABI_VERSION, "/x/libomprpc.so")
    monkeypatch.setattr(_ffi, "ABI_VERSION", 3)
    with pytest.raises(ImportError, match="ABI mismatch"):
        _ffi.check_abi(2, "/x/libomprpc.so")


def test_missing_library_is_a_clear_import_error(tmp_path: Path) -> None:
    result = _run_python("import omprpc", env={"OMPRPC_LIBRARY": str(tmp_path / "nope.so")})
    assert result.returncode != 0
    assert "cannot find the omprpc shared library" in result.stderr and "OMPRPC_LIBRARY" in result.stderr


def test_every_declared_function_is_in_the_header() -> None:
    header = REPO / "include" / "omprpc.h"
    if not header.is_file():
        pytest.skip("no checkout header")
    exported = set(re.findall(r"\b(omprpc_[a-z_]+)\(", header.read_text()))
    assert set(_ffi._SIGNATURES) <= exported
    for name in _ffi._SIGNATURES:
        if name in _ffi.MISSING:
            continue
        fn = getattr(_ffi.lib, name)
        assert fn.argtypes is not None
        # owned strings never come back as c_char_p (that would leak them)
        assert fn.restype is not __import__("ctypes").c_char_p


_HIDE_EXPORTS = textwrap.dedent("""
    import ctypes, sys
    hide = set(sys.argv[1:])
    real = ctypes.CDLL
    class Patched(real):
        def __getattr__(self, name):
            if name in hide:
                raise AttributeError(f"undefined symbol: {name}")
            return super().__getattr__(name)
    ctypes.CDLL = Patched
""")


def test_required_and_optional_functions() -> None:
    from omprpc import _ffi_gen

    assert _ffi_gen.REQUIRED <= set(_ffi_gen.SIGNATURES)
    # The first surface is required; the structured results (added later) are optional.
    assert {"omprpc_abi_version", "omprpc_client_start", "omprpc_client_free"} <= _ffi_gen.REQUIRED
    assert not {"omprpc_client_prompt_and_wait_turn", "omprpc_turn_free", "omprpc_event_batch_free"} & _ffi_gen.REQUIRED
    assert _ffi.MISSING == frozenset() and _ffi.has("omprpc_turn_free") and not _ffi.has("omprpc_nope")


def test_an_older_library_without_an_optional_function_loads() -> None:
    result = _run_python(_HIDE_EXPORTS + textwrap.dedent("""
        import omprpc
        from omprpc import _ffi
        print("MISSING", sorted(_ffi.MISSING), _ffi.has("omprpc_turn_free"), _ffi.has("omprpc_turn_events"))
        try:
            _ffi.lib.omprpc_turn_free(None)
        except omprpc.RpcError as exc:
            print("RAISED", exc)
    """), argv=("omprpc_turn_free", "omprpc_client_next_event_batch"))
    assert result.returncode == 0, result.stderr
    assert "MISSING ['omprpc_client_next_event_batch', 'omprpc_turn_free'] False True" in result.stdout
    assert "RAISED omprpc: omprpc_turn_free is not in " in result.stdout and "older build" in result.stdout


def test_a_library_without_a_required_function_is_refused() -> None:
    result = _run_python(_HIDE_EXPORTS + _IMPORT_OR_REFUSED, argv=("omprpc_client_start",))
    assert "REFUSED: omprpc: the library does not export omprpc_client_start" in result.stdout, result.stdout + result.stderr


#: Every failing status: its class, and the builtin a Python caller would catch it as.
STATUS_CLASSES = [
    (omprpc.Status.INVALID_ARGUMENT, omprpc.RpcInvalidArgumentError, ValueError),
    (omprpc.Status.INVALID_JSON, omprpc.RpcInvalidJsonError, ValueError),
    (omprpc.Status.INVALID_UTF8, omprpc.RpcInvalidUtf8Error, ValueError),
    (omprpc.Status.TIMEOUT, RpcTimeoutError, TimeoutError),
    (omprpc.Status.PROCESS_EXITED, RpcProcessExitError, RpcProcessExitError),
    (omprpc.Status.CLOSED, omprpc.RpcClosedError, RpcProcessExitError),
    (omprpc.Status.CONCURRENCY, RpcConcurrencyError, RpcConcurrencyError),
    (omprpc.Status.PROTOCOL, omprpc.RpcProtocolError, omprpc.RpcProtocolError),
    (omprpc.Status.IO, omprpc.RpcIOError, OSError),
    (omprpc.Status.NOT_FOUND, omprpc.RpcNotFoundError, LookupError),
    (omprpc.Status.CANCELLED, omprpc.RpcCancelledError, omprpc.RpcCancelledError),
    (omprpc.Status.LIMIT_EXCEEDED, omprpc.RpcLimitExceededError, omprpc.RpcLimitExceededError),
    (omprpc.Status.PANIC, omprpc.RpcPanicError, omprpc.RpcPanicError),
]


@pytest.mark.parametrize("status,cls,builtin", STATUS_CLASSES)
def test_status_mapping(status: omprpc.Status, cls: type, builtin: type) -> None:
    err = _ffi.error_from(int(status), b'{"code":"X","status":%d,"message":"went wrong"}' % status)
    assert type(err) is cls and str(err) == "went wrong" and err.status == status
    assert err.status is status and err.status_name == status.name
    assert isinstance(err, builtin) and isinstance(err, RpcError) and isinstance(err, RuntimeError)


def test_every_failing_status_has_its_class() -> None:
    assert {s for s, _, _ in STATUS_CLASSES} | {omprpc.Status.OK, omprpc.Status.COMMAND_FAILED} == set(omprpc.Status)
    assert [(s.name, int(s)) for s in omprpc.Status] == [(_ffi.status_name(v), v) for v in range(len(omprpc.Status))]


def test_a_refused_option_is_caught_as_a_value_error() -> None:
    with pytest.raises(ValueError, match='option "mcp" must be true or false') as refused:
        _ = omprpc.RpcClient(executable="pi", flavor="pi", mcp="yes").command  # type: ignore[arg-type]
    assert isinstance(refused.value, omprpc.RpcInvalidArgumentError)
    assert refused.value.status is omprpc.Status.INVALID_ARGUMENT


def test_command_failed_mapping() -> None:
    err = _ffi.error_from(_ffi.COMMAND_FAILED, b'{"code":"COMMAND_FAILED","status":5,"message":"x: y",'
                                               b'"command":"x","error":"y","errorCode":"session_busy"}')
    assert isinstance(err, RpcCommandError)
    assert (err.command, err.error, err.code, str(err)) == ("x", "y", "session_busy", "x: y")


def test_invalid_option_is_reported(make_client) -> None:
    with pytest.raises(RpcError, match="no_such_option"):
        make_client(core_options={"no_such_option": 1})


def test_handle_refuses_calls_after_free(make_client) -> None:
    client = make_client()
    session = client._session
    assert session is not None
    client.stop()
    assert not session.handle.alive
    with pytest.raises(RpcProcessExitError):
        session.handle.call_out(_ffi.lib.omprpc_client_info)


def test_stop_from_a_listener_defers_the_free(make_client) -> None:
    client = make_client()
    stopped: list[bool] = []

    def stop_here(event: object) -> None:
        client.stop()
        stopped.append(True)

    client.on_turn_start(stop_here)
    with pytest.raises(RpcProcessExitError):
        client.prompt_and_wait("slow", timeout=10)
    deadline = time.time() + 5
    while not stopped and time.time() < deadline:
        time.sleep(0.01)
    assert stopped == [True] and client.is_running is False


def test_an_unreferenced_client_is_stopped_by_gc(fake_agent: str) -> None:
    client = RpcClient(command=agent_command(fake_agent), startup_timeout=10,
                       core_options={"stop_grace_ms": 500})
    client.start()
    pid = client.info()["pid"]
    session_ref = weakref.ref(client._session)  # type: ignore[arg-type]
    del client
    gc.collect()
    deadline = time.time() + 5
    while time.time() < deadline:
        try:
            os.kill(pid, 0)
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().split()[2] == "Z":
                    break
        except (ProcessLookupError, FileNotFoundError):
            break
        time.sleep(0.02)
    else:
        pytest.fail("the agent outlived its garbage-collected client")
    gc.collect()
    deadline = time.time() + 5
    while session_ref() is not None and time.time() < deadline:
        gc.collect()
        time.sleep(0.02)
    assert session_ref() is None, "the session (handle, dispatcher) leaked"


def test_dev_mode_and_gc_pressure(fake_agent: str) -> None:
    # -X dev + warnings as errors: no ResourceWarning, no unraisable exception, no leaked thread.
    result = _run_python(f"""
        import gc, sys, threading, warnings
        warnings.simplefilter("error")
        gc.set_threshold(1, 1, 1)
        unraisable = []
        sys.unraisablehook = unraisable.append
        from conftest import agent_command
        from omprpc import RpcClient, host_tool
        tool = host_tool(name="echo_host", description="d", parameters={{"type": "object"}},
                         execute=lambda a, c: (c.send_update("u"), "ok")[1])
        for i in range(3):
            with RpcClient(command=agent_command({fake_agent!r}), startup_timeout=10,
                           custom_tools=[tool]) as client:
                seen = []
                client.on_event(lambda e: seen.append(e.type))
                turn = client.prompt_and_wait("needs host tool", timeout=10)
                assert [e.type for e in turn.events][-1] == "agent_end", turn.events
                assert client.prompt_and_wait("burst 200", timeout=10).assistant_text == "pong"
                gc.collect()
            assert "agent_end" in seen
        gc.collect()
        left = [t.name for t in threading.enumerate() if t.name.startswith("omprpc-dispatch")]
        assert not left, left
        assert not unraisable, unraisable
        print("OK")
    """, args=("-X", "dev", "-W", "error"))
    assert result.returncode == 0 and "OK" in result.stdout, result.stdout + result.stderr
