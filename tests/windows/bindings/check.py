"""make windows-bindings-test: the Python binding on a Windows CPython, under Wine, through its
public API (tests/windows/bindings/run.sh runs it).

    python check.py full      the library found where expected, a call with an owned string
                              out and back, an option error as its typed exception, then the
                              fake agent: a streamed turn; the dispatcher's wait on the event
                              handle (blocked when the turn's events arrive, woken by settle()
                              and by stop()); omprpc.aio: a streamed turn, a turn cancelled
                              through its task, the agent's exit ending a stream
    python check.py lookup    only: the library found where expected
    python check.py missing   no library anywhere: the ImportError names every place it tried

Environment: EXPECTED_VERSION; EXPECTED_LIBRARY (a directory the loaded library lies under, or
the bare name the system loader was given); OMPRPC_AGENT (the fake agent, full);
EXPECTED_PLACES (missing: the texts the error must hold, separated by "|"); ADD_DLL_DIRECTORY
(a directory given to os.add_dll_directory first: how a Windows program points ctypes' search
by name at an installed omprpc.dll). Prints PASS lines; any failure raises.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from typing import Any


def same_place(loaded: str, expected: str) -> bool:
    """Whether ``loaded`` is the bare name ``expected``, or a file under the directory ``expected``."""
    if os.sep not in expected and "/" not in expected:
        return loaded == expected
    canon = lambda p: os.path.normcase(os.path.realpath(p))  # noqa: E731
    return canon(loaded).startswith(canon(expected) + os.sep)


def main(mode: str) -> None:
    if os.environ.get("ADD_DLL_DIRECTORY"):
        os.add_dll_directory(os.environ["ADD_DLL_DIRECTORY"])
    if mode == "missing":
        try:
            import omprpc  # noqa: F401
        except ImportError as exc:
            text = str(exc)
        else:
            raise AssertionError("import omprpc succeeded with no library anywhere")
        for place in os.environ["EXPECTED_PLACES"].split("|"):
            assert place in text, f"the error does not name {place!r}:\n{text}"
        print(f"windows-bindings-test: PASS python: no library -> ImportError naming every place "
              f"({len(os.environ['EXPECTED_PLACES'].split('|'))} checked)")
        return

    import omprpc
    from omprpc import RpcClient, RpcInvalidArgumentError

    assert sys.platform == "win32", sys.platform
    loaded = omprpc.LIBRARY_PATH
    assert same_place(loaded, os.environ["EXPECTED_LIBRARY"]), (loaded, os.environ["EXPECTED_LIBRARY"])
    assert omprpc.LIBRARY_VERSION == os.environ["EXPECTED_VERSION"], omprpc.LIBRARY_VERSION
    assert omprpc.ABI_VERSION == 2
    print(f"windows-bindings-test: PASS python {sys.version.split()[0]} on {sys.platform}: "
          f"omprpc {omprpc.LIBRARY_VERSION} loaded from {loaded}")
    if mode == "lookup":
        return

    # An owned string out of the library and freed by it, UTF-8 both ways.
    content = omprpc.prompt_from_content([{"type": "text", "text": "h\u00e9llo"}, {"type": "text", "text": "w\u00f6rld"}])
    assert content == {"message": "h\u00e9llo\n\nw\u00f6rld", "images": []}, content
    # An option the core refuses before anything starts: its status and message, typed.
    try:
        RpcClient(command=["unused.exe"], flavor="bogus").start()
    except RpcInvalidArgumentError as exc:
        assert exc.status_name == "INVALID_ARGUMENT" and "flavor" in str(exc), (exc.status_name, str(exc))
    else:
        raise AssertionError("flavor 'bogus' was accepted")
    print("windows-bindings-test: PASS python: prompt_from_content round trip; a bad option is RpcInvalidArgumentError")

    agent = os.environ["OMPRPC_AGENT"]
    check_streamed_turn(agent)
    check_dispatcher_wait(agent)
    asyncio.run(check_aio(agent))


def dispatcher_of(pid: int, prefix: str) -> threading.Thread:
    """The client's thread named ``<prefix>-<agent pid>`` (how the binding names them)."""
    found = [t for t in threading.enumerate() if t.name == f"{prefix}-{pid}"]
    assert len(found) == 1, [t.name for t in threading.enumerate()]
    return found[0]


def check_streamed_turn(agent: str) -> None:
    from omprpc import RpcClient

    deltas: list[str] = []
    lock = threading.Lock()

    def on_update(event: object) -> None:
        ame = getattr(event, "assistant_message_event")
        if ame.get("type") == "text_delta":
            with lock:
                deltas.append(ame["delta"])

    client = RpcClient(command=[agent], startup_timeout=30.0)
    client.on_message_update(on_update)
    client.start()
    try:
        turn = client.prompt_and_wait("ping")
    finally:
        client.stop()
    assert turn.assistant_text == "pong", turn.assistant_text
    with lock:
        assert "".join(deltas) == "pong", deltas
    print(f"windows-bindings-test: PASS python: a turn from the fake agent, streamed {deltas}")


def check_dispatcher_wait(agent: str) -> None:
    """The dispatcher sleeps on the client's event handle with nothing queued: the turn's
    events wake it, settle() wakes it (each prompt_and_wait returns long before the listeners'
    sync timeout), and stop() ends it."""
    from omprpc import RpcClient

    types: list[str] = []
    ended = threading.Event()

    def on_event(event: object) -> None:
        types.append(getattr(event, "type"))
        if types[-1] == "agent_end":
            ended.set()

    sync_timeout = 30.0  # a lost wake-up would hold each prompt_and_wait this long
    client = RpcClient(command=[agent], startup_timeout=30.0, listener_sync_timeout=sync_timeout)
    client.on_event(on_event)
    client.start()
    try:
        dispatcher = dispatcher_of(client.info()["pid"], "omprpc-dispatch")
        time.sleep(0.5)  # the ready event dispatched: the dispatcher waits, nothing queued
        assert dispatcher.is_alive() and not ended.is_set(), types
        client.prompt("say hello")  # acknowledged; the events reach the listener only through the wait
        assert ended.wait(30.0), f"the blocked dispatcher never delivered the turn: {types}"
        took = 0.0
        for n in range(5):
            started = time.monotonic()
            assert client.prompt_and_wait(f"ping {n}").assistant_text == "pong"
            assert types.count("agent_end") == n + 2, types  # settle(): the listener saw the turn
            took += time.monotonic() - started
            assert took < sync_timeout, f"{n + 1} turns took {took:.1f} s: settle() waited out its timeout"
        time.sleep(0.3)  # waiting again
    finally:
        client.stop()
    dispatcher.join(10.0)  # hang guard only: stop() closed the client, which sets the handle
    assert not dispatcher.is_alive(), "stop() did not end the dispatcher's wait"
    print(f"windows-bindings-test: PASS python: the dispatcher waits on the event handle: woken by a turn's "
          f"events, by settle() (5 turns in {took:.2f} s) and by stop()")


async def check_aio(agent: str) -> None:
    from omprpc import RpcProcessExitError
    from omprpc.aio import AsyncRpcClient, TextChunk, TurnComplete

    async def texts_of(stream: Any) -> str:
        items = [item async for item in stream]
        assert isinstance(items[-1], TurnComplete), items
        return "".join(i.text for i in items if isinstance(i, TextChunk))

    async with AsyncRpcClient(command=[agent], startup_timeout=30.0) as client:
        watcher = dispatcher_of((await client.info())["pid"], "omprpc-aio-wait")
        await asyncio.sleep(0.3)  # the watcher waits on the handle, nothing queued
        assert await asyncio.wait_for(texts_of(client.stream("ping")), 30.0) == "pong"
        # A turn cancelled through its task: the run is aborted, and the next turn is clean.
        streaming = asyncio.Event()

        async def consume() -> None:
            async for item in client.stream("stream until abort"):
                if isinstance(item, TextChunk):
                    streaming.set()

        task = asyncio.ensure_future(consume())
        await asyncio.wait_for(streaming.wait(), 30.0)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        assert task.cancelled()
        assert await asyncio.wait_for(texts_of(client.stream("hello")), 30.0) == "pong"
        assert not (await client.get_state()).is_streaming
    watcher.join(0)
    assert not watcher.is_alive(), "close() left the handle's watcher running"

    # The agent's exit closes the client, which sets the handle: the watcher hands the end on.
    async with AsyncRpcClient(command=[agent], startup_timeout=30.0) as client:
        watcher = dispatcher_of((await client.info())["pid"], "omprpc-aio-wait")
        try:
            await asyncio.wait_for(texts_of(client.stream("crash")), 30.0)
        except RpcProcessExitError as exc:
            assert "exited with code 3" in str(exc), str(exc)
        else:
            raise AssertionError("a crashing agent's stream ended normally")
        watcher.join(10.0)  # hang guard only
        assert not watcher.is_alive(), "the watcher still waits after the client closed"
    print("windows-bindings-test: PASS python: omprpc.aio on the event handle: a streamed turn, a turn "
          "cancelled through its task then a clean one, an agent's exit ending the stream")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "full")
