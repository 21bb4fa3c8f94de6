"""The dispatcher's wait where there is no event descriptor to poll (Windows: no poll(2), no
``omprpc_client_event_fd``; docs/windows.md): it sleeps inside the library's own wait, in
slices. Run here on Linux with the descriptor path switched off, against the fake agent, so
that the Windows path is exercised before Windows can start agents."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, Iterator

import pytest

import omprpc._session as session_module
from omprpc import RpcClient, RpcError
from omprpc.aio import AsyncRpcClient


@pytest.fixture
def no_event_fd(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(session_module, "POLL_EVENT_FD", False)
    yield


def test_listeners_see_every_turn_before_prompt_and_wait_returns(no_event_fd: None, make_client: Any) -> None:
    client = make_client(start=False)
    seen: list[str] = []
    deltas: list[str] = []
    lock = threading.Lock()

    def on_event(event: Any) -> None:
        with lock:
            seen.append(event.type)

    def on_update(event: Any) -> None:
        if event.assistant_message_event.get("type") == "text_delta":
            with lock:
                deltas.append(event.assistant_message_event["delta"])

    client.on_event(on_event)
    client.on_message_update(on_update)
    client.start()
    session = client._require()  # type: ignore[attr-defined]
    assert session.event_fd is None and session._wake_r is None  # the library-wait path is the one running
    for n in range(1, 6):
        turn = client.prompt_and_wait(f"ping {n}")
        assert turn.assistant_text == "pong"
        # settle(): every event of the turn reached the listeners before prompt_and_wait returned.
        with lock:
            assert deltas == ["pong"] * n
            assert seen[-len(turn.events):] == [e.type for e in turn.events]
            assert seen.count("agent_end") == n


def test_stop_ends_the_dispatchers_wait_in_the_library(no_event_fd: None, make_client: Any) -> None:
    client = make_client(start=False)
    client.on_event(lambda _event: None)  # a listener: the dispatcher runs and waits
    client.start()
    session = client._require()  # type: ignore[attr-defined]
    time.sleep(0.3)  # the dispatcher is inside a slice of the library's wait, the queue empty
    assert session.thread.is_alive()
    client.stop()
    session.thread.join(10.0)  # hang guard only
    assert not session.thread.is_alive()
    assert not client.is_running


def test_aio_refuses_to_start_without_an_event_descriptor(no_event_fd: None, fake_agent: str) -> None:
    client = AsyncRpcClient(command=[fake_agent], startup_timeout=10.0)

    async def start() -> None:
        await client.start()

    with pytest.raises(RpcError, match=r"docs/windows\.md") as info:
        asyncio.run(start())
    assert "RpcClient" in str(info.value)
    assert not client.is_running
