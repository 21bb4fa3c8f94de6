"""Issue 21 through the Python binding, on REAL agents (offline, the project's fake LLM failing a
request the way a provider does): pi 1.6.0 (``OMPRPC_PI_CLI``; it announces settling), pi 0.73.1
(``OMPRPC_PI_PREVIOUS_CLI``; its prompts end at the last ``agent_end``) and omp 18.2.3.

* a retry after an HTTP 500, and after a 429: one turn, two attempts, the answer of the retry;
* overflow recovery (a context-length error): pi 0.73.1 and omp compact and answer, pi 1.6.0
  gives up and settles with the failed run;
* in every case the call returns after the agent's last run with that run's outcome, the agent
  is idle at once, a second prompt sent right after is accepted, and the agent starts nothing
  more (no LLM request) in the time its retry would have taken;
* abort while the agent waits to retry: the turn ends at once, aborted, and no retry follows.

The sync client (``prompt_and_wait``) and ``omprpc.aio`` (``stream()``, whose items include
``RetryScheduled`` and ``CompactionComplete``, and the awaited ``prompt_and_wait``) each run
every case on every agent, each API with clients of its own; a case runs on all of them at
once (a thread or a task each), and the agents start in the background while the run's
other modules go on (``prestart``, conftest.py). pi's retry delay is lowered to 300 ms (agent
dir settings.json), doubling per retry: the abort case lands in pi's third retry's delay
(1.2 s), omp's in its first (61 s), on the same clients as the other cases.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Coroutine, Iterator, TypeVar

import pytest

from omprpc import Compaction, FailedAttempt, PromptTurn, RpcClient
from omprpc.aio import AsyncRpcClient, CompactionComplete, RetryScheduled, StreamItem, TextChunk, TurnComplete
from real_agents_support import (
    GUARD,
    RECOVERY_AGENTS,
    EventLog,
    Workspace,
    concurrently,
    note_agent,
    recovery_workspace,
    settles,
)

_T = TypeVar("_T")

#: pi's retry settings: 300 ms before the first retry, doubling (300, 600, 1200 ms).
FAST_RETRY = {"retry": {"enabled": True, "maxRetries": 3, "baseDelayMs": 300}}
#: omp compacts for an overflow only when it can keep less than the failed prompt
#: (tests/support/OMP-NOTES.md; without it omp gives up).
OMP_SETTINGS = {"compaction": {"keepRecentTokens": 10}}

HELLO = "Hello from the fake model"
#: How long after a turn returned the agent must have started nothing (longer than any retry
#: delay of the fast settings: a retry the turn had wrongly left behind would show by then).
QUIET = 1.0


def fail_kinds(label: str) -> tuple[Any, Any]:
    """The fake LLM's failures (500, 429) for an agent. pi 0.73.1's SDK retries a failing call
    twice by itself, honouring ``retry-after-ms`` (20 ms here, not seconds); omp's provider
    layer retries it 11 more times (``times`` covers them, 1 ms apart), then the session retries."""
    if label == "omp":
        return ({"kind": "http_500", "times": 12, "retry_after_ms": 1},
                {"kind": "http_429", "times": 12, "retry_after_s": 0, "retry_after_ms": 1})
    return {"kind": "http_500", "retry_after_ms": 20}, {"kind": "http_429", "retry_after_s": 1, "retry_after_ms": 20}


#: The abort case's prompt: the agent fails and waits to retry, and the abort lands in the
#: wait of the retry numbered :data:`ABORT_AT` — pi: its third (1.2 s; the first two failures
#: are retried after 300 and 600 ms), omp: its first (a retry-after above 60 s makes omp's
#: provider give up at once, and its session waits that long).
ABORT_PROMPT = "wait to retry"
ABORT_AT = {"pi": 3, "pi-previous": 3, "omp": 1}


def fast_script(label: str) -> list[Any]:
    k500, k429 = fail_kinds(label)
    abort_kind = ({"kind": "http_429", "times": 12, "retry_after_s": 61} if label == "omp"
                  else {"kind": "http_500", "times": 3, "retry_after_ms": 20})
    return [
        {"match": "say hello", "replies": [{"text": HELLO}]},
        {"match": "flaky 500", "replies": [{"text": "recovered", "fail": k500}]},
        {"match": "flaky 429", "replies": [{"text": "recovered", "fail": k429}]},
        {"match": "too long", "replies": [{"text": "recovered", "fail": "context_length"}]},
        {"match": ABORT_PROMPT, "replies": [{"text": "recovered", "fail": abort_kind}]},
    ]


@dataclass
class Agent:
    label: str
    ws: Workspace
    info: dict[str, Any]

    @property
    def settles(self) -> bool:
        return settles(self.info)

    def requests(self) -> int:
        return len(self.ws.llm_requests())


def make_workspaces() -> dict[str, Workspace]:
    spaces: dict[str, Workspace] = {}
    try:
        for label in RECOVERY_AGENTS:
            spaces[label] = recovery_workspace(label, fast_script(label), OMP_SETTINGS if label == "omp" else FAST_RETRY)
    except BaseException:
        for ws in spaces.values():
            ws.close()
        raise
    return spaces


# --- what every case checks ----------------------------------------------------------------


def assistant_stops(messages: Any) -> list[Any]:
    return [m.get("stopReason") for m in messages if isinstance(m, dict) and m.get("role") == "assistant"]


def check_retried(agent: Agent, outcome: str, attempts: int, failed: tuple[FailedAttempt, ...], code: str) -> None:
    """One retry after a failure whose error names ``code``: two attempts, the first failed
    and retried after the agent's delay, outcome the agent's last word."""
    assert outcome == ("agent_settled" if agent.settles else "agent_end"), outcome
    assert attempts == 2, attempts
    assert len(failed) == 1, failed
    first = failed[0]
    assert (first.attempt, first.then) == (1, "retry"), first
    assert first.error is not None and code in first.error, first
    if agent.label == "omp":
        assert first.delay_ms is not None and first.delay_ms > 0, first
    else:
        assert first.delay_ms == 300, first


def check_retried_turn(agent: Agent, turn: PromptTurn, code: str) -> None:
    check_retried(agent, turn.outcome, turn.attempts, turn.failed_attempts, code)
    assert turn.settled is agent.settles
    assert (turn.assistant_text, turn.stop_reason) == ("recovered", "stop")
    check_both_runs(agent, turn)
    assert "auto_retry_start" in [p.get("type") for p in turn.event_payloads]
    assert turn.compactions == ()


def check_both_runs(agent: Agent, turn: PromptTurn) -> None:
    """The turn holds both runs: the failed attempt's error message, then the answer, in its
    events and in its messages (omp's failed run has no agent_end of its own: the library keeps
    its streamed messages)."""
    types = [p.get("type") for p in turn.event_payloads]
    assert types.count("agent_start") == 2, types
    ended = [p["message"].get("stopReason") for p in turn.event_payloads
             if p.get("type") == "message_end" and p["message"].get("role") == "assistant"]
    assert ended == ["error", "stop"], ended
    assert assistant_stops(turn.messages) == ["error", "stop"], turn.messages


def check_overflow(agent: Agent, outcome: str, attempts: int, failed: tuple[FailedAttempt, ...],
                   compactions: tuple[Compaction, ...]) -> None:
    assert len(failed) == 1 and failed[0].attempt == 1, failed
    assert failed[0].error is not None and "maximum context length" in failed[0].error, failed
    if agent.settles:
        # pi 1.x gives up on an overflow: the failed run is the turn, and pi settles.
        assert (outcome, attempts, failed[0].then, compactions) == ("agent_settled", 1, "none", ())
        return
    assert (outcome, attempts, failed[0].then) == ("agent_end", 2, "compaction")
    assert compactions and all(c.reason == "overflow" for c in compactions), compactions
    # omp first tries to shake the context (nothing to drop: no retry), then compacts.
    assert (compactions[-1].aborted, compactions[-1].will_retry) == (False, True), compactions


def check_overflow_turn(agent: Agent, turn: PromptTurn) -> None:
    check_overflow(agent, turn.outcome, turn.attempts, turn.failed_attempts, turn.compactions)
    if agent.settles:
        assert turn.stop_reason == "error" and assistant_stops(turn.messages) == ["error"], turn.messages
    else:
        assert (turn.assistant_text, turn.stop_reason) == ("recovered", "stop")
        check_both_runs(agent, turn)


def check_aborted(agent: Agent, outcome: str, attempts: int, failed: tuple[FailedAttempt, ...]) -> None:
    """Aborted in the wait before retry ``ABORT_AT``: the attempts so far, each failed, the last
    one's retry cancelled."""
    n = ABORT_AT[agent.label]
    assert (outcome, attempts) == ("aborted", n), (outcome, attempts, failed)
    assert [(f.attempt, f.then) for f in failed] == [(i, "retry") for i in range(1, n)] + [(n, "cancelled")], failed
    if agent.label != "omp":
        assert [f.delay_ms for f in failed] == [300, 600, 1200], failed


def wait_until(at: float) -> None:
    """The observation window of a negative check (nothing may happen before ``at``)."""
    left = at - time.monotonic()
    if left > 0:
        time.sleep(left)


def nothing_after(agent: Agent, client: RpcClient, requests: int, quiet_until: float) -> None:
    """After a turn returned with the fake LLM at ``requests`` requests: the
    agent is idle at once, a prompt sent right after is accepted and answered, and until
    ``quiet_until`` the agent calls the model for nothing else."""
    assert client.get_state().is_streaming is False
    second = client.prompt_and_wait("say hello", timeout=GUARD)
    assert (second.assistant_text, second.attempts, second.failed_attempts) == (HELLO, 1, ()), second
    assert second.outcome == ("agent_settled" if agent.settles else "agent_end")
    wait_until(quiet_until)
    assert agent.requests() == requests + 1, "the agent called the model after the turn returned"
    assert client.get_state().is_streaming is False


# --- the clients: every agent's, sync and async, started once for the module -----------------


@dataclass
class SyncAgent(Agent):
    client: RpcClient
    log: EventLog


@dataclass
class AioAgent(Agent):
    client: AsyncRpcClient


class LoopThread:
    """An event loop running on a thread of its own, for the module's aio clients (a client
    belongs to the loop that started it): they start there while the sync tests run."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="aio-loop", daemon=True)
        self.thread.start()

    def submit(self, coro: Coroutine[Any, Any, _T]) -> concurrent.futures.Future[_T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, _T]) -> _T:
        return self.submit(coro).result(GUARD * 2)

    def close(self) -> None:
        self.run(self.loop.shutdown_asyncgens())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(GUARD)
        self.loop.close()


class Fleet:
    """The module's clients, sync and async (the async ones on a loop thread). Real agents are
    slow to start (seconds of CPU each), so the run starts them in the background as soon as
    its tests are collected (:func:`prestart`, from conftest.py) while the other modules run;
    :meth:`started` waits for them."""

    def __init__(self) -> None:
        self.spaces: dict[str, Workspace] = {}
        self.sync_started: dict[str, SyncAgent] = {}
        self.aio_clients: dict[str, AsyncRpcClient] = {}
        self.loop: LoopThread | None = None
        self.aio_start: concurrent.futures.Future[dict[str, AioAgent]] | None = None
        self.error: BaseException | None = None
        self.starter: threading.Thread | None = None
        self.closed = False

    def start_in_background(self) -> None:
        def start() -> None:
            try:
                self.start()
            except BaseException as exc:  # noqa: BLE001 - raised by started(): a failure or a skip
                self.error = exc

        self.starter = threading.Thread(target=start, name="recovery-agents", daemon=True)
        self.starter.start()

    def started(self) -> Fleet:
        """The fleet once its sync clients run (the async ones: :meth:`aio`); raises what the
        start raised (pytest's skip when the real agents are not set up)."""
        if self.starter is not None:
            self.starter.join(GUARD * 2)
            assert not self.starter.is_alive(), f"the agents did not start within {GUARD * 2} s"
        if self.error is not None:
            raise self.error
        return self

    def start(self) -> None:
        sync_spaces, aio_spaces = make_workspaces(), make_workspaces()
        self.spaces = {**{f"sync {k}": v for k, v in sync_spaces.items()},
                       **{f"aio {k}": v for k, v in aio_spaces.items()}}

        def starter(key: str, ws: Workspace) -> Callable[[], SyncAgent]:
            def start() -> SyncAgent:
                client = RpcClient(**ws.client_kwargs())
                log = EventLog(client)
                try:
                    client.start()
                except BaseException:
                    client.stop()
                    raise
                self.sync_started[key] = agent = SyncAgent(key, ws, client.info(), client, log)
                note_agent(__name__, agent.info)
                return agent

            return start

        concurrently({key: starter(key, ws) for key, ws in sync_spaces.items()})
        self.aio_clients = {key: AsyncRpcClient(**ws.client_kwargs()) for key, ws in aio_spaces.items()}
        self.loop = LoopThread()
        self.aio_start = self.loop.submit(self._start_aio(aio_spaces))

    async def _start_aio(self, spaces: dict[str, Workspace]) -> dict[str, AioAgent]:
        started = await asyncio.gather(*(c.start() for c in self.aio_clients.values()), return_exceptions=True)
        failed = [exc for exc in started if isinstance(exc, BaseException)]
        if failed:
            raise failed[0]
        agents = {}
        for key, client in self.aio_clients.items():
            agents[key] = AioAgent(key, spaces[key], await client.info(), client)
            note_agent(__name__, agents[key].info)
        return agents

    def sync(self) -> dict[str, SyncAgent]:
        return self.sync_started

    def aio(self) -> dict[str, AioAgent]:
        assert self.aio_start is not None
        return self.aio_start.result(GUARD * 2)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.starter is not None:
            self.starter.join(GUARD * 2)
        for agent in self.sync_started.values():
            agent.client.stop()
        if self.loop is not None:
            if self.aio_start is not None:
                concurrent.futures.wait([self.aio_start], GUARD * 2)

            async def close_all() -> None:
                await asyncio.gather(*(c.close() for c in self.aio_clients.values()), return_exceptions=True)

            self.loop.run(close_all())
            self.loop.close()
        for ws in self.spaces.values():
            ws.close()


_prestarted: Fleet | None = None


def prestart() -> None:
    """Starts the module's agents in the background (conftest.py calls it once the run's tests
    are collected, when some of this module's are among them)."""
    global _prestarted
    if _prestarted is None:
        _prestarted = Fleet()
        _prestarted.start_in_background()


def close_prestarted() -> None:
    """Stops agents started for tests that never ran (conftest.py, at the end of the run)."""
    global _prestarted
    fleet, _prestarted = _prestarted, None
    if fleet is not None:
        fleet.close()


@pytest.fixture(scope="module")
def fleet() -> Iterator[Fleet]:
    global _prestarted
    fleet, _prestarted = _prestarted, None
    if fleet is None:
        fleet = Fleet()
        fleet.start_in_background()
    try:
        yield fleet.started()
    finally:
        fleet.close()


# --- the sync client's side of each case --------------------------------------------------------


def each(agents: dict[str, SyncAgent], case: Callable[[SyncAgent], None]) -> None:
    """Runs ``case`` on every agent at once (a thread each); fails naming each agent that failed."""
    concurrently({label: (lambda a=agent: case(a)) for label, agent in agents.items()})


def sync_retry_case(code: str) -> Callable[[SyncAgent], None]:
    def case(agent: SyncAgent) -> None:
        turn = agent.client.prompt_and_wait(f"flaky {code} please", timeout=GUARD)
        returned = time.monotonic()
        requests = agent.requests()
        check_retried_turn(agent, turn, code)
        nothing_after(agent, agent.client, requests, returned + QUIET)

    return case


def sync_overflow_case(agent: SyncAgent) -> None:
    agent.client.prompt_and_wait("say hello", timeout=GUARD)  # an earlier prompt to compact
    turn = agent.client.prompt_and_wait("too long please", timeout=GUARD)
    returned = time.monotonic()
    requests = agent.requests()
    check_overflow_turn(agent, turn)
    nothing_after(agent, agent.client, requests, returned + QUIET)


def sync_abort_case(agent: SyncAgent) -> None:
    mark = agent.log.mark()
    result: list[PromptTurn | BaseException] = []
    waiter = threading.Thread(target=lambda: result.append(_call(
        lambda: agent.client.prompt_and_wait(ABORT_PROMPT, timeout=GUARD))), daemon=True)
    waiter.start()
    seen, retry = agent.log.wait("the agent's retry", "auto_retry_start", mark,
                                 lambda e: e.get("attempt") == ABORT_AT[agent.label])
    agent.client.abort()
    waiter.join(GUARD)
    assert not waiter.is_alive(), "the aborted turn never returned"
    returned = time.monotonic()
    requests = agent.requests()
    turn = result[0]
    if isinstance(turn, BaseException):
        raise turn
    delay = float(retry["delayMs"]) / 1000
    # At once: before the retry would have started.
    assert returned - seen < delay, f"the turn came back {returned - seen:.2f} s after the retry was announced"
    check_aborted(agent, turn.outcome, turn.attempts, turn.failed_attempts)
    assert turn.stop_reason == "error", turn  # the failed attempt's message is the last
    # No retry follows: nothing until the retry's time has passed (omp's is 61 s away:
    # watched for QUIET).
    nothing_after(agent, agent.client, requests, min(seen + delay, returned + QUIET) + 0.5)


def _call(fn: Callable[[], _T]) -> _T | BaseException:
    try:
        return fn()
    except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
        return exc


# --- omprpc.aio's side of each case ------------------------------------------------------


def each_async(fleet: Fleet, agents: dict[str, AioAgent], case: Callable[[AioAgent], Awaitable[None]]) -> None:
    """Runs ``case`` on every agent at once (a task each); fails naming each agent that failed."""
    async def all_of() -> list[BaseException | None]:
        return await asyncio.gather(*(case(a) for a in agents.values()), return_exceptions=True)

    assert fleet.loop is not None
    outcomes = fleet.loop.run(all_of())
    failures = {label: exc for label, exc in zip(agents, outcomes) if isinstance(exc, BaseException)}
    if failures:
        raise AssertionError("\n".join(f"--- {label}:\n{''.join(traceback.format_exception(exc))}"
                                       for label, exc in sorted(failures.items())))


async def aio_nothing_after(agent: AioAgent, requests: int, quiet_until: float) -> None:
    """:func:`nothing_after` through the async client (the second prompt streamed)."""
    assert (await agent.client.get_state()).is_streaming is False
    items = [item async for item in agent.client.stream("say hello")]
    done = items[-1]
    assert isinstance(done, TurnComplete), items
    assert (done.text, done.attempts, done.failed_attempts) == (HELLO, 1, ()), done
    assert done.outcome == ("agent_settled" if agent.settles else "agent_end"), done
    assert not any(isinstance(i, RetryScheduled) for i in items), items
    await asyncio.sleep(max(0.0, quiet_until - time.monotonic()))  # the negative check's window
    assert agent.requests() == requests + 1, "the agent called the model after the turn returned"
    assert (await agent.client.get_state()).is_streaming is False


async def aio_stream_500_case(agent: AioAgent) -> None:
    items: list[StreamItem] = [item async for item in agent.client.stream("flaky 500 please")]
    returned = time.monotonic()
    requests = agent.requests()
    retries = [i for i in items if isinstance(i, RetryScheduled)]
    assert len(retries) == 1, items
    retry = retries[0]
    assert retry.attempt == 1 and retry.error is not None and "500" in retry.error, retry
    if agent.label == "omp":
        assert retry.delay_ms is not None and retry.delay_ms > 0, retry
    else:
        assert (retry.delay_ms, retry.max_attempts) == (300, 3), retry
    done = items[-1]
    assert isinstance(done, TurnComplete), items
    assert [type(i) for i in items].count(TurnComplete) == 1
    check_retried(agent, done.outcome, done.attempts, done.failed_attempts, "500")
    assert (done.text, done.stop_reason, done.compactions) == ("recovered", "stop", ())
    # The retry's answer streams after the announcement.
    after = items[items.index(retry) + 1:]
    assert "".join(i.text for i in after if isinstance(i, TextChunk)) == "recovered", items
    await aio_nothing_after(agent, requests, returned + QUIET)


async def aio_prompt_and_wait_429_case(agent: AioAgent) -> None:
    turn = await agent.client.prompt_and_wait("flaky 429 please", timeout=GUARD)
    returned = time.monotonic()
    requests = agent.requests()
    check_retried_turn(agent, turn, "429")
    await aio_nothing_after(agent, requests, returned + QUIET)


async def aio_stream_overflow_case(agent: AioAgent) -> None:
    await agent.client.run("say hello")  # an earlier prompt to compact
    items: list[StreamItem] = [item async for item in agent.client.stream("too long please")]
    returned = time.monotonic()
    requests = agent.requests()
    done = items[-1]
    assert isinstance(done, TurnComplete), items
    check_overflow(agent, done.outcome, done.attempts, done.failed_attempts, done.compactions)
    compacted = [i for i in items if isinstance(i, CompactionComplete)]
    # One item per compaction of the record, as it ended (omp's auto_compaction_end names no
    # reason: the item's is None, the record's comes from the start).
    assert [(c.aborted, c.will_retry) for c in compacted] == [
        (c.aborted, c.will_retry) for c in done.compactions], items
    assert all(c.reason in (None, r.reason) for c, r in zip(compacted, done.compactions)), items
    if agent.settles:
        assert done.stop_reason == "error" and not compacted, items
    else:
        assert (done.text, done.stop_reason) == ("recovered", "stop")
        last_text = max(i for i, x in enumerate(items) if isinstance(x, TextChunk))
        assert items.index(compacted[-1]) < last_text, items
    assert not any(isinstance(i, RetryScheduled) for i in items), items
    await aio_nothing_after(agent, requests, returned + QUIET)


async def aio_stream_abort_case(agent: AioAgent) -> None:
    items: list[StreamItem] = []
    seen = delay = 0.0
    async for item in agent.client.stream(ABORT_PROMPT):
        items.append(item)
        if isinstance(item, RetryScheduled) and item.attempt == ABORT_AT[agent.label]:
            seen, delay = time.monotonic(), (item.delay_ms or 0) / 1000
            await agent.client.abort()
    returned = time.monotonic()
    requests = agent.requests()
    assert seen and delay > 0, items
    assert returned - seen < delay, f"the stream ended {returned - seen:.2f} s after the retry was announced"
    done = items[-1]
    assert isinstance(done, TurnComplete), items
    check_aborted(agent, done.outcome, done.attempts, done.failed_attempts)
    assert done.stop_reason == "error", done
    await aio_nothing_after(agent, requests, min(seen + delay, returned + QUIET) + 0.5)


# --- the cases: each through the sync client and omprpc.aio at once, on every agent --------


def on_both(fleet: Fleet, sync_case: Callable[[SyncAgent], None], aio_case: Callable[[AioAgent], Awaitable[None]]) -> None:
    """``sync_case`` on every agent's sync client and ``aio_case`` on every agent's async one,
    all at the same time; fails naming each API and agent that failed."""
    sync_agents, aio_agents = fleet.sync(), fleet.aio()
    concurrently({"sync client": lambda: each(sync_agents, sync_case),
                  "omprpc.aio": lambda: each_async(fleet, aio_agents, aio_case)})


def test_a_retry_after_a_500_is_one_turn(fleet: Fleet) -> None:
    """Sync: prompt_and_wait; aio: stream(), with its RetryScheduled item."""
    on_both(fleet, sync_retry_case("500"), aio_stream_500_case)


def test_a_retry_after_a_429_is_one_turn(fleet: Fleet) -> None:
    """Sync and aio: prompt_and_wait."""
    on_both(fleet, sync_retry_case("429"), aio_prompt_and_wait_429_case)


def test_overflow_recovery_is_one_turn(fleet: Fleet) -> None:
    """Sync: prompt_and_wait; aio: stream(), with its CompactionComplete items."""
    on_both(fleet, sync_overflow_case, aio_stream_overflow_case)


def test_abort_in_the_retry_delay_ends_the_turn_aborted(fleet: Fleet) -> None:
    """Sync: abort() while prompt_and_wait waits; aio: abort() on the stream's RetryScheduled."""
    on_both(fleet, sync_abort_case, aio_stream_abort_case)
