"""Issue 21 on the fake agent (its recovery scenarios reproduce the frames real pi 0.73.1, pi
1.6.0 and omp 18.2.3 send; src/bin/omprpc-fake-agent/agent/recovery.rs): a turn holds the
agent's retries and overflow recovery and ends where the library says the agent will not go on;
the sync client's PromptTurn and omprpc.aio's stream expose what happened (outcome, attempts,
failed attempts, compactions; RetryScheduled and CompactionComplete items). Real agents:
test_real_recovery.py."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, Awaitable, Callable, TypeVar

import pytest

from conftest import MakeClient, agent_command
from omprpc import Compaction, FailedAttempt, MessageEndEvent, PromptTurn, RpcClient, UnknownNotification
from omprpc.aio import AsyncRpcClient, CompactionComplete, RetryScheduled, StreamItem, TextChunk, TurnComplete

_T = TypeVar("_T")
GUARD = 60.0

#: The fake agents: pi 0.73.1 (its default; does not announce settling), pi 1.6.0 (announces
#: settling) and omp.
AGENTS: dict[str, tuple[str, dict[str, str]]] = {
    "pi-0.73.1": ("pi", {"OMPRPC_FAKE_VERSION": "0.73.1"}),
    "pi-1.6.0": ("pi", {"OMPRPC_FAKE_VERSION": "1.6.0"}),
    "omp": ("omp", {}),
}
SETTLES = {"pi-0.73.1": False, "pi-1.6.0": True, "omp": False}


def end_of(agent: str) -> str:
    return "agent_settled" if SETTLES[agent] else "agent_end"


def sync_client(make_client: MakeClient, agent: str) -> RpcClient:
    flavor, env = AGENTS[agent]
    return make_client(flavor=flavor, env=env)


def async_client(fake_agent: str, agent: str) -> AsyncRpcClient:
    flavor, env = AGENTS[agent]
    return AsyncRpcClient(command=agent_command(fake_agent, flavor=flavor), flavor=flavor,
                          env=env, startup_timeout=10.0, request_timeout=10.0,
                          core_options={"stop_grace_ms": 2000, "kill_grace_ms": 1000})


def run(test: Callable[[], Awaitable[_T]]) -> _T:
    async def guarded() -> _T:
        return await asyncio.wait_for(test(), GUARD)

    return asyncio.run(guarded())


def assistant_stops(turn: PromptTurn) -> list[Any]:
    return [m.get("stopReason") for m in turn.messages if m.get("role") == "assistant"]


def check_one_retry(agent: str, turn: PromptTurn, code: str) -> None:
    assert (turn.outcome, turn.settled, turn.attempts) == (end_of(agent), SETTLES[agent], 2), turn
    assert (turn.assistant_text, turn.stop_reason, turn.compactions) == ("recovered", "stop", ())
    (failed,) = turn.failed_attempts
    assert (failed.attempt, failed.then) == (1, "retry") and code in (failed.error or ""), failed
    assert failed.delay_ms is not None and 50 <= failed.delay_ms <= 200, failed
    assert [p["type"] for p in turn.event_payloads].count("agent_start") == 2


# -- the sync client ------------------------------------------------------------------------------


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize(("message", "code"), [("retry once", "500"), ("rate limited", "429")])
def test_a_retry_is_one_turn(make_client: MakeClient, agent: str, message: str, code: str) -> None:
    client = sync_client(make_client, agent)
    turn = client.prompt_and_wait(message, timeout=GUARD)
    check_one_retry(agent, turn, code)
    # Every run's messages, the failed attempt's error message first (omp's failed run has no
    # agent_end of its own: its streamed messages).
    assert assistant_stops(turn) == ["error", "stop"], turn.messages
    # Right after, the agent is idle and takes the next prompt.
    assert client.get_state().is_streaming is False
    nxt = client.prompt_and_wait("hello", timeout=GUARD)
    assert (nxt.assistant_text, nxt.attempts, nxt.failed_attempts) == ("pong", 1, ())


@pytest.mark.parametrize("agent", AGENTS)
def test_overflow_recovery(make_client: MakeClient, agent: str) -> None:
    client = sync_client(make_client, agent)
    turn = client.prompt_and_wait("overflow", timeout=GUARD)
    (failed,) = turn.failed_attempts
    assert failed.attempt == 1 and "maximum context length" in (failed.error or ""), failed
    if SETTLES[agent]:  # pi 0.80.4 on gives up and settles
        assert (turn.outcome, turn.attempts, failed.then, turn.compactions) == ("agent_settled", 1, "none", ())
        assert turn.stop_reason == "error" and turn.assistant_text is None
    else:
        assert (turn.outcome, turn.attempts, failed.then) == ("agent_end", 2, "compaction")
        assert turn.assistant_text == "recovered"
        expected = [Compaction("overflow", False, True, None)]
        if agent == "omp":  # first a shake that finds nothing to drop
            assert turn.compactions[0].reason == "overflow" and turn.compactions[0].will_retry is False
            assert turn.compactions[0].error_message is not None
            expected.insert(0, turn.compactions[0])
        assert list(turn.compactions) == expected, turn.compactions
    assert client.prompt_and_wait("hello", timeout=GUARD).assistant_text == "pong"


@pytest.mark.parametrize("agent", AGENTS)
def test_a_failed_call_the_agent_does_nothing_about(make_client: MakeClient, agent: str) -> None:
    client = sync_client(make_client, agent)
    turn = client.prompt_and_wait("failed call", timeout=GUARD)
    assert (turn.outcome, turn.attempts, turn.stop_reason) == (end_of(agent), 1, "error"), turn
    assert [(f.attempt, f.then) for f in turn.failed_attempts] == [(1, "none")], turn.failed_attempts
    assert "400" in (turn.error_message or ""), turn.error_message


@pytest.mark.parametrize("agent", AGENTS)
def test_retries_that_run_out(make_client: MakeClient, agent: str) -> None:
    client = sync_client(make_client, agent)
    turn = client.prompt_and_wait("retries exhausted", timeout=GUARD)
    assert (turn.outcome, turn.attempts, turn.stop_reason) == (end_of(agent), 3, "error"), turn
    assert [(f.attempt, f.then) for f in turn.failed_attempts] == [(1, "retry"), (2, "retry"), (3, "gave_up")]
    assert [f.delay_ms for f in turn.failed_attempts[:2]] == [100, 200]


def cancelled_in_the_retry_delay(client: RpcClient, cancel: Callable[[], Any]) -> PromptTurn:
    """Prompts "retry until abort" (a 60 s retry delay), calls ``cancel`` once the agent
    announced its retry, and returns the turn (which must come back long before the delay)."""
    retrying = threading.Event()
    client.on_auto_retry_start(lambda _event: retrying.set())
    result: list[PromptTurn | BaseException] = []

    def wait() -> None:
        try:
            result.append(client.prompt_and_wait("retry until abort", timeout=GUARD))
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            result.append(exc)

    waiter = threading.Thread(target=wait, daemon=True)
    waiter.start()
    assert retrying.wait(GUARD), "the agent never announced its retry"
    t0 = time.monotonic()
    cancel()
    waiter.join(GUARD)
    assert not waiter.is_alive() and result, "the turn never returned"
    turn = result[0]
    if isinstance(turn, BaseException):
        raise turn
    assert time.monotonic() - t0 < 10, "the turn waited for the retry's 60 s delay"
    return turn


@pytest.mark.parametrize("cancel", ["abort", "abort_retry"])
@pytest.mark.parametrize("agent", AGENTS)
def test_a_retry_cancelled_in_its_delay_ends_the_turn_aborted(make_client: MakeClient, agent: str,
                                                              cancel: str) -> None:
    """``abort`` — and ``abort_retry``, the agent's own command — while the agent waits to retry."""
    client = sync_client(make_client, agent)
    turn = cancelled_in_the_retry_delay(client, getattr(client, cancel))
    assert (turn.outcome, turn.attempts, turn.stop_reason) == ("aborted", 1, "error"), turn
    assert [(f.attempt, f.then) for f in turn.failed_attempts] == [(1, "cancelled")], turn.failed_attempts
    assert client.get_state().is_streaming is False
    assert client.prompt_and_wait("hello", timeout=GUARD).assistant_text == "pong"


@pytest.mark.parametrize("agent", AGENTS)
def test_wait_for_idle_and_collect_events_wait_for_the_retry(make_client: MakeClient, agent: str) -> None:
    """The other waits end where the prompt does: after the retry's run, not at the failed one."""
    client = sync_client(make_client, agent)
    seen: list[str] = []
    client.on_event_payload(lambda p: seen.append(str(p.get("type"))))
    client.prompt("retry once")
    client.wait_for_idle(timeout=GUARD)
    assert seen.count("agent_start") == 2 and "auto_retry_end" in seen, seen
    assert seen[-1] == ("agent_settled" if SETTLES[agent] else "agent_end"), seen
    assert client.get_state().is_streaming is False

    client.prompt("retry once")
    events = client.collect_events(timeout=GUARD)
    # agent_settled is not a typed event (yet): an UnknownNotification with its payload.
    types = [e.payload.get("type") if isinstance(e, UnknownNotification) else e.type for e in events]
    assert types[-1] == ("agent_settled" if SETTLES[agent] else "agent_end"), types
    assert "auto_retry_end" in types, types
    answers = [e.message for e in events if isinstance(e, MessageEndEvent) and e.message.get("role") == "assistant"]
    assert answers and answers[-1].get("stopReason") == "stop", answers


def test_a_summary_of_a_retried_turn_lists_its_attempts(make_client: MakeClient) -> None:
    # turn_summary: the library's summary of the turn holds the same record.
    client = make_client(flavor="pi", env=AGENTS["pi-1.6.0"][1], turn_summary=True)
    turn = client.prompt_and_wait("retry once", timeout=GUARD)
    summary = turn.summary
    assert summary is not None and summary.complete
    assert (summary.attempts, summary.failed_attempts, summary.compactions) == (
        turn.attempts, turn.failed_attempts, turn.compactions)
    assert summary.failed_attempts == (FailedAttempt(1, turn.failed_attempts[0].error, "retry", 100),)


# -- omprpc.aio -----------------------------------------------------------------------------


@pytest.mark.parametrize("agent", AGENTS)
def test_aio_stream_of_a_retry(fake_agent: str, agent: str) -> None:
    async def test() -> None:
        async with async_client(fake_agent, agent) as client:
            items: list[StreamItem] = [i async for i in client.stream("retry once")]
            retries = [i for i in items if isinstance(i, RetryScheduled)]
            assert len(retries) == 1, items
            retry = retries[0]
            assert retry.attempt == 1 and "500" in (retry.error or ""), retry
            assert retry.delay_ms is not None and 50 <= retry.delay_ms <= 200, retry
            assert retry.max_attempts == (10 if agent == "omp" else 3), retry
            done = items[-1]
            assert isinstance(done, TurnComplete) and [type(i) for i in items].count(TurnComplete) == 1, items
            assert (done.outcome, done.attempts, done.text, done.stop_reason) == (end_of(agent), 2, "recovered", "stop")
            assert [(f.attempt, f.then) for f in done.failed_attempts] == [(1, "retry")]
            # The retry's answer streams after the announcement.
            after = items[items.index(retry) + 1:]
            assert "".join(i.text for i in after if isinstance(i, TextChunk)) == "recovered", items
            assert (await client.run("hello")).text == "pong"

    run(test)


@pytest.mark.parametrize("agent", AGENTS)
def test_aio_stream_of_an_overflow(fake_agent: str, agent: str) -> None:
    async def test() -> None:
        async with async_client(fake_agent, agent) as client:
            items: list[StreamItem] = [i async for i in client.stream("overflow")]
            done = items[-1]
            assert isinstance(done, TurnComplete), items
            compacted = [i for i in items if isinstance(i, CompactionComplete)]
            assert [(c.aborted, c.will_retry) for c in compacted] == [
                (c.aborted, c.will_retry) for c in done.compactions], items
            if SETTLES[agent]:
                assert (done.outcome, done.attempts, compacted) == ("agent_settled", 1, []), items
            else:
                assert (done.outcome, done.attempts, done.text) == ("agent_end", 2, "recovered"), items
                assert compacted[-1].will_retry is True, compacted
            assert not any(isinstance(i, RetryScheduled) for i in items)

    run(test)


@pytest.mark.parametrize("agent", AGENTS)
def test_aio_abort_on_a_scheduled_retry_ends_the_stream_aborted(fake_agent: str, agent: str) -> None:
    async def test() -> None:
        async with async_client(fake_agent, agent) as client:
            items: list[StreamItem] = []
            aborted_at = 0.0
            async for item in client.stream("retry until abort"):
                items.append(item)
                if isinstance(item, RetryScheduled):
                    assert item.delay_ms == 60000, item
                    aborted_at = time.monotonic()
                    await client.abort()
            assert aborted_at and time.monotonic() - aborted_at < 10, items
            done = items[-1]
            assert isinstance(done, TurnComplete), items
            assert (done.outcome, done.attempts) == ("aborted", 1), done
            assert [(f.attempt, f.then) for f in done.failed_attempts] == [(1, "cancelled")]
            assert (await client.run("hello")).text == "pong"

    run(test)


@pytest.mark.parametrize("agent", AGENTS)
def test_aio_prompt_and_wait_of_a_rate_limited_turn(fake_agent: str, agent: str) -> None:
    async def test() -> None:
        async with async_client(fake_agent, agent) as client:
            check_one_retry(agent, await client.prompt_and_wait("rate limited", timeout=GUARD), "429")

    run(test)
