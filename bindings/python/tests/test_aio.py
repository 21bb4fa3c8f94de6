"""omprpc.aio: the asyncio client, against the fake agent and (where set up) the real pi and
omp. Plain tests that run their coroutine with asyncio.run (no pytest plugin), each under a
hang guard: a test that hangs fails instead."""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable, TypeVar

import pytest

from conftest import IMPORT_ROOT, PACKAGE_ROOT, agent_command
from test_client import _pid_alive
from omprpc import (
    EventOverflow,
    ExtensionUiRequest,
    RpcConcurrencyError,
    HostToolContext,
    PolicyEvalEvent,
    RpcClosedError,
    RpcCommandError,
    RpcClient,
    RpcError,
    RpcLimitExceededError,
    RpcProcessExitError,
    host_tool,
)
from omprpc.aio import (
    DEFAULT_MAX_WAITS,
    DEFAULT_MAX_WORKERS,
    AsyncRpcClient,
    ReasoningChunk,
    StreamItem,
    TextChunk,
    ToolCallComplete,
    ToolCallRequest,
    TurnComplete,
)

#: The hang guard of every test (seconds): generous, the machine may be loaded.
GUARD = 60.0

_T = TypeVar("_T")
ECHO_SCHEMA = {"type": "object", "properties": {"message": {"type": "string"}}}


def run(test: Callable[[], Awaitable[_T]]) -> _T:
    async def guarded() -> _T:
        return await asyncio.wait_for(test(), GUARD)

    return asyncio.run(guarded())


def fake_client(fake_agent: str, scenario: str | None = None, *, flavor: str | None = None,
                **kwargs: Any) -> AsyncRpcClient:
    kwargs.setdefault("startup_timeout", 10.0)
    kwargs.setdefault("request_timeout", 10.0)
    kwargs.setdefault("core_options", {"stop_grace_ms": 2000, "kill_grace_ms": 1000})
    if flavor is not None:
        kwargs["flavor"] = flavor
    return AsyncRpcClient(command=agent_command(fake_agent, scenario, flavor=flavor), **kwargs)


async def items_of(stream: AsyncIterator[StreamItem]) -> list[StreamItem]:
    return [item async for item in stream]


def texts(items: list[StreamItem]) -> str:
    return "".join(i.text for i in items if isinstance(i, TextChunk))


# -- turns and the derived stream --


def test_streamed_turn_yields_the_derived_items_in_order(fake_agent: str) -> None:
    async def test() -> None:
        async with fake_client(fake_agent) as client:
            items = await items_of(client.stream("thinking"))
            assert [type(i) for i in items] == [ReasoningChunk, TextChunk, TurnComplete]
            assert (items[0], items[1]) == (ReasoningChunk("hmm"), TextChunk("visible"))
            done = items[-1]
            assert isinstance(done, TurnComplete)
            assert (done.outcome, done.stop_reason, done.text) == ("agent_end", "stop", "visible")
            assert done.usage is not None and (done.usage.input_tokens, done.usage.output_tokens) == (1, 1)
            assert done.summary.reasoning == "hmm" and done.summary.complete
            # the next turn starts clean: only its own items
            again = await client.run("hello")
            assert (again.text, again.summary.text) == ("pong", "pong")
            assert again.request_id != done.request_id

    run(test)


def test_tool_calls_are_requested_then_completed(fake_agent: str) -> None:
    async def test() -> None:
        async with fake_client(fake_agent) as client:
            items = await items_of(client.stream("all events"))
            requests = [i for i in items if isinstance(i, ToolCallRequest)]
            completes = [i for i in items if isinstance(i, ToolCallComplete)]
            assert requests and len(requests) == len(completes)
            for req in requests:
                at = items.index(req)
                end = next(c for c in completes if c.tool_call_id == req.tool_call_id)
                assert items.index(end) > at and end.tool_name == req.tool_name
            assert isinstance(items[-1], TurnComplete) and texts(items) == "pong"

    run(test)


def test_prompts_that_run_nothing_complete(fake_agent: str) -> None:
    async def test() -> None:
        async with fake_client(fake_agent) as client:
            local = await client.run("local")
            assert (local.outcome, local.text) == ("not_invoked", None)
            result = await client.run("prompt result")
            assert result.outcome == "prompt_result"

    run(test)


@pytest.mark.parametrize("flavor", ["omp", "pi"])
def test_an_extension_command_without_a_run_completes(fake_agent: str, flavor: str) -> None:
    """pi acknowledges "/noop" and runs nothing, says nothing more: the library's activity
    probe decides (omp says so with a prompt_result)."""

    async def test() -> None:
        async with fake_client(fake_agent, flavor=flavor, core_options={"stop_grace_ms": 300}) as client:
            done = await client.run("/noop")
            assert done.outcome == ("prompt_result" if flavor == "omp" else "not_invoked")
            assert (await client.run("hello")).text == "pong"

    run(test)


def test_a_late_prompt_failure_raises_the_sync_clients_error(fake_agent: str) -> None:
    async def test() -> None:
        async with fake_client(fake_agent) as client:
            with pytest.raises(RpcCommandError) as err:
                await client.run("late failure")
            assert "late failure" in str(err.value)
            assert (await client.run("hello")).text == "pong"  # still usable

    run(test)


# -- commands --


def test_every_command_is_a_coroutine_with_the_sync_results_and_errors(fake_agent: str) -> None:
    async def test() -> None:
        client = fake_client(fake_agent)
        with pytest.raises(RpcError, match="not started"):
            await client.get_state()
        async with client:
            state = await client.get_state()
            assert (state.session_id, state.session_name) == ("fake-session", "Scratchpad")
            assert (await client.bash("echo hello")).output == "hello\n"
            await client.set_session_name("renamed")
            assert (await client.get_state()).session_name == "renamed"
            assert (await client.request_raw("get_available_models"))["models"]
            with pytest.raises(RpcCommandError, match="unsupported: no_such_command"):
                await client.request_raw("no_such_command")
            with pytest.raises(AttributeError):
                client.on_event  # listeners are the sync client's; here: events()
            # many commands at once: the pool bounds the threads, the answers are each its own
            names = await asyncio.gather(*(client.get_last_assistant_text() for _ in range(50)))
            assert names == [None] * 50
        with pytest.raises(RpcClosedError, match="close\\(\\) stopped the agent"):
            await client.get_state()

    run(test)


def test_wrong_arguments_fail_before_anything_is_sent(fake_agent: str) -> None:
    with pytest.raises(ValueError):
        AsyncRpcClient(command=[fake_agent], max_event_history=0)

    async def test() -> None:
        async with fake_client(fake_agent) as client:
            with pytest.raises(TypeError):
                await client.get_state(42)
            with pytest.raises(ValueError):
                await client.run("bad\x00prompt")
            assert (await client.run("hello")).text == "pong"

    run(test)


# -- events --


def test_events_iterates_the_typed_notifications(fake_agent: str) -> None:
    async def test() -> None:
        async with fake_client(fake_agent) as client:
            seen: list[str] = []
            ready = asyncio.Event()

            async def read() -> None:
                events = client.events()
                ready.set()
                async for event in events:
                    seen.append(event.type)
                    if event.type == "agent_end":
                        return

            reader = asyncio.ensure_future(read())
            await ready.wait()
            await asyncio.sleep(0)  # the iterator has subscribed
            await client.run("notifications")
            await reader
            # (the agent's ready frame may come first: read off the queue only now)
            assert [t for t in seen if t != "ready"][0] == "extension_error" and "unknown" in seen
            assert seen[-3:] == ["message_end", "turn_end", "agent_end"]
            assert "prompt_complete" not in seen  # the client's own marker stays inside

    run(test)


def test_events_end_at_close(fake_agent: str) -> None:
    async def test() -> None:
        client = await fake_client(fake_agent).start()
        got: list[str] = []

        async def read() -> None:
            async for event in client.events():
                got.append(event.type)

        reader = asyncio.ensure_future(read())
        await client.run("hello")
        await client.close()
        await reader  # ended, no exception
        assert "agent_end" in got

    run(test)


# -- host tools, the gate, UI --


@pytest.mark.parametrize("kind", ["async", "sync"])
def test_host_tools_async_and_sync(fake_agent: str, kind: str) -> None:
    calls: list[tuple[Any, str, str]] = []

    async def echo_async(args: dict[str, Any], ctx: HostToolContext[Any]) -> str:
        calls.append((args, ctx.tool_call_id, threading.current_thread().name))
        ctx.send_update("working")
        await asyncio.sleep(0)
        return f"echo: {args['message']}"

    def echo_sync(args: dict[str, Any], ctx: HostToolContext[Any]) -> str:
        calls.append((args, ctx.tool_call_id, threading.current_thread().name))
        return f"echo: {args['message']}"

    tool = host_tool(name="echo_host", description="Echo", parameters=ECHO_SCHEMA,
                     execute=echo_async if kind == "async" else echo_sync)

    async def test() -> None:
        async with fake_client(fake_agent, custom_tools=[tool]) as client:
            items = await items_of(client.stream("needs host tool"))
            done = [i for i in items if isinstance(i, ToolCallComplete)]
            assert len(done) == 1
            assert (done[0].tool_call_id, done[0].outcome) == ("toolu_host_1", "success")
            assert done[0].result["content"][0]["text"] == "echo: hello"
            assert isinstance(items[-1], TurnComplete)

    run(test)
    assert [(a, t) for a, t, _ in calls] == [({"message": "hello"}, "toolu_host_1")]
    # an async tool runs on the loop's thread, a sync one on the host worker pool
    assert calls[0][2] == "MainThread" if kind == "async" else calls[0][2].startswith("omprpc-host")


def test_the_sync_client_refuses_an_async_tool_clearly(make_client: Any) -> None:
    async def echo(args: dict[str, Any], ctx: HostToolContext[Any]) -> str:
        return "never run"

    client = make_client(custom_tools=[host_tool(name="echo_host", description="Echo", parameters=ECHO_SCHEMA,
                                                 execute=echo)])
    turn = client.prompt_and_wait("needs host tool", timeout=GUARD)
    end = [p for p in turn.event_payloads if p["type"] == "tool_execution_end"]
    assert end[0]["isError"] is True and "AsyncRpcClient" in end[0]["result"]["content"][0]["text"]


@pytest.mark.parametrize("kind", ["async", "sync"])
def test_a_failing_host_tool_is_the_tools_error_result(fake_agent: str, kind: str) -> None:
    async def fail_async(args: dict[str, Any], ctx: HostToolContext[Any]) -> str:
        raise RuntimeError("disk on fire")

    def fail_sync(args: dict[str, Any], ctx: HostToolContext[Any]) -> str:
        raise RuntimeError("disk on fire")

    async def wrong_shape(args: dict[str, Any], ctx: HostToolContext[Any]) -> Any:
        return 42

    async def test() -> None:
        tool = host_tool(name="echo_host", description="Echo", parameters=ECHO_SCHEMA,
                         execute=fail_async if kind == "async" else fail_sync)
        async with fake_client(fake_agent, custom_tools=[tool]) as client:
            done = [i for i in await items_of(client.stream("needs host tool")) if isinstance(i, ToolCallComplete)]
            assert done[0].outcome == "error" and "disk on fire" in done[0].result["content"][0]["text"]
            # and the loop goes on: the next turn runs
            assert (await client.run("hello")).text == "pong"
            await client.set_custom_tools([host_tool(name="echo_host", description="Echo", parameters=ECHO_SCHEMA,
                                                     execute=wrong_shape)])
            done = [i for i in await items_of(client.stream("needs host tool")) if isinstance(i, ToolCallComplete)]
            assert done[0].outcome == "error" and "must return a string" in done[0].result["content"][0]["text"]

    run(test)


def test_async_policy_gate_decides(fake_agent: str) -> None:
    asked: list[str] = []

    async def gate(question: PolicyEvalEvent) -> Any:
        asked.append(question.tool_name)
        await asyncio.sleep(0)
        if question.arguments.get("command") == "echo boom":
            raise RuntimeError("cannot decide")
        if question.arguments.get("command") == "echo no":
            return (False, "not today")
        return True

    async def test() -> None:
        async with fake_client(fake_agent, flavor="pi", policy_handler=gate,
                               core_options={"stop_grace_ms": 300}) as client:
            allowed = await items_of(client.stream('gated bash {"command":"echo yes"}'))
            end = next(i for i in allowed if isinstance(i, ToolCallComplete))
            assert (end.tool_name, end.outcome) == ("bash", "success")
            assert isinstance(allowed[-1], TurnComplete) and allowed[-1].text == "after: yes\n"
            blocked = await items_of(client.stream('gated bash {"command":"echo no"}'))
            end = next(i for i in blocked if isinstance(i, ToolCallComplete))
            assert (end.outcome, end.reason) == ("blocked", "not today")
            failed = await items_of(client.stream('gated bash {"command":"echo boom"}'))
            end = next(i for i in failed if isinstance(i, ToolCallComplete))
            assert end.outcome == "blocked" and "cannot decide" in (end.reason or "")
        assert asked == ["bash", "bash", "bash"]

    run(test)


def test_ui_request_answered_from_async_code(fake_agent: str) -> None:
    async def test() -> None:
        async with fake_client(fake_agent, flavor="pi", core_options={"stop_grace_ms": 300}) as client:
            answered: list[str] = []

            async def answer() -> None:
                async for event in client.events():
                    if isinstance(event, ExtensionUiRequest):
                        answered.append(event.id)
                        await client.send_ui_value(event.id, "typed in async")
                        return

            answering = asyncio.ensure_future(answer())
            await asyncio.sleep(0)
            # pi's "needs ui": the request comes before the prompt's acknowledgement, which
            # waits for the answer
            items = await items_of(client.stream("needs ui"))
            await answering
            assert answered == ["ui-1"]
            assert texts(items) == "ui acknowledged"

    run(test)


def test_the_sync_waits_are_coroutines_too(fake_agent: str) -> None:
    """prompt_and_wait / wait_for_idle / next_ui_request, awaited; as many UI waits as their
    pool has threads do not starve the commands, and the answer goes through."""

    async def test() -> None:
        async with fake_client(fake_agent, flavor="pi", core_options={"stop_grace_ms": 300}) as client:
            assert (await client.prompt_and_wait("hello")).assistant_text == "pong"
            await client.wait_for_idle(timeout=GUARD)
            waits = [asyncio.ensure_future(client.next_ui_request(timeout=GUARD)) for _ in range(DEFAULT_MAX_WAITS)]
            assert (await client.get_state()).session_id == "fake-session"  # not starved
            turn = asyncio.ensure_future(items_of(client.stream("needs confirm")))
            done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            request = done.pop().result()
            assert (request.id, request.method) == ("ui-2", "confirm")
            await client.send_ui_confirmation(request.id, True)
            assert texts(await turn) == "ui acknowledged"
        # close() woke the waits that got no request
        results = await asyncio.gather(*waits, return_exceptions=True)
        assert sum(isinstance(r, RpcProcessExitError) for r in results) == DEFAULT_MAX_WAITS - 1, results

    run(test)


# -- cancellation, close, agent death --


def test_cancelling_a_turn_aborts_it_and_the_next_turn_is_clean(fake_agent: str) -> None:
    async def test() -> None:
        async with fake_client(fake_agent) as client:
            log: list[Any] = []

            async def record() -> None:  # until the second run's end
                async for event in client.events():
                    log.append((event.type, getattr(event, "message", None)))
                    if [t for t, _ in log].count("agent_end") == 2:
                        return

            recorder = asyncio.ensure_future(record())
            await asyncio.sleep(0)
            streaming = asyncio.Event()

            async def consume() -> None:
                async for item in client.stream("stream until abort"):
                    if isinstance(item, TextChunk):
                        streaming.set()

            turn = asyncio.ensure_future(consume())
            await streaming.wait()
            turn.cancel()
            with pytest.raises(asyncio.CancelledError):
                await turn
            nxt = await items_of(client.stream("hello"))
            assert [type(i) for i in nxt] == [TextChunk, TurnComplete] and texts(nxt) == "pong"
            done = nxt[-1]
            assert isinstance(done, TurnComplete)
            # nothing of the aborted run in this turn's summary (its aborted stop, its text)
            assert (done.summary.stop_reasons, done.summary.text, done.summary.final_text) == ((), "pong", "pong")
            await recorder
            # The cancelled run was aborted, and it ended before the next prompt's run began.
            types = [t for t, _ in log]
            ends = [i for i, t in enumerate(types) if t == "agent_end"]
            starts = [i for i, t in enumerate(types) if t == "agent_start"]
            assert len(starts) == 2 and len(ends) == 2 and ends[0] < starts[1]
            assert not (await client.get_state()).is_streaming
            aborted = [i for i, (t, m) in enumerate(log)
                       if t == "message_end" and isinstance(m, dict) and m.get("stopReason") == "aborted"]
            assert len(aborted) == 1 and aborted[0] < starts[1], log

    run(test)


def test_one_turn_at_a_time_per_client(fake_agent: str) -> None:
    async def test() -> None:
        async with fake_client(fake_agent) as client:
            first = client.stream("stream until abort")
            assert isinstance(await first.__anext__(), TextChunk)
            with pytest.raises(RpcConcurrencyError) as err:
                await client.run("hello")
            assert err.value.status_name == "CONCURRENCY"
            await first.aclose()  # aborts: the next turn may start
            assert (await client.run("hello")).summary.text == "pong"

    run(test)


def test_leaving_a_turn_early_aborts_it_too(fake_agent: str) -> None:
    async def test() -> None:
        async with fake_client(fake_agent) as client:
            async for item in client.stream("stream until abort"):
                assert isinstance(item, TextChunk)
                break
            nxt = await client.run("hello")
            assert (nxt.text, nxt.summary.text) == ("pong", "pong")

    run(test)


def test_cancelled_before_the_acknowledgement_still_aborts(fake_agent: str) -> None:
    async def test() -> None:
        async with fake_client(fake_agent) as client:
            turn = asyncio.ensure_future(client.run("stream until abort"))
            await asyncio.sleep(0)  # the prompt is on its way, not acknowledged yet
            turn.cancel()
            with pytest.raises(asyncio.CancelledError):
                await turn
            assert (await client.run("hello")).summary.text == "pong"

    run(test)


def test_close_during_a_turn_raises_in_the_turn(fake_agent: str) -> None:
    async def test() -> None:
        client = await fake_client(fake_agent).start()
        started = asyncio.Event()

        async def consume() -> None:
            async for _ in client.stream("stream until abort"):
                started.set()

        turn = asyncio.ensure_future(consume())
        await started.wait()
        await client.close()
        with pytest.raises(RpcProcessExitError):
            await turn
        await client.close()  # idempotent
        assert not client.is_running

    run(test)


def test_agent_death_raises_instead_of_hanging(fake_agent: str) -> None:
    async def test() -> None:
        async with fake_client(fake_agent) as client:
            with pytest.raises(RpcProcessExitError):
                await client.run("crash")
            assert "fatal: crashed" in client.stderr
            with pytest.raises(RpcProcessExitError):
                await client.run("hello")
            with pytest.raises(RpcProcessExitError):
                await client.get_state()

    run(test)


def test_a_failed_start_raises_and_leaves_the_client_startable(fake_agent: str) -> None:
    async def test() -> None:
        client = fake_client(fake_agent, "exit-early")
        with pytest.raises(RpcError) as err:
            await client.start()
        assert "boom: no model configured" in str(err.value) + client.stderr
        assert not client.is_running
        await client.close()  # nothing to close

    run(test)


def test_a_cancelled_start_leaves_no_process(fake_agent: str, tmp_path: Path) -> None:
    base = tmp_path / "gc"

    async def test() -> None:
        client = fake_client(fake_agent, "grandchild", env={"OMPRPC_FAKE_GRANDCHILD": str(base)},
                             core_options={"stop_grace_ms": 200, "kill_grace_ms": 500})
        starting = asyncio.ensure_future(client.start())
        await asyncio.sleep(0)
        starting.cancel()
        try:
            await starting  # cancelled while the start ran in its thread (or it had finished)
        except asyncio.CancelledError:
            assert not client.is_running
        await client.close()
        grandchild = int(Path(str(base) + ".pid").read_text())  # written before the agent is ready
        while _pid_alive(grandchild):  # the hang guard bounds it
            await asyncio.sleep(0.02)

    run(test)


def test_headless_ui_answers_in_the_library(fake_agent: str) -> None:
    async def test() -> None:
        async with fake_client(fake_agent, flavor="pi", core_options={"stop_grace_ms": 300}) as client:
            uninstall = client.install_headless_ui(confirm=True)
            assert (await client.run("needs confirm")).text == "ui acknowledged"
            uninstall()

    run(test)


# -- the loop --


def test_the_loop_keeps_running_during_a_turn(fake_agent: str) -> None:
    """A ticker reaches 20 ticks while one turn streams and another agent's bash request is
    in flight: nothing the client does blocks the loop."""

    async def test() -> None:
        async with fake_client(fake_agent) as client:
            ticks = 0
            ticked = asyncio.Event()

            async def ticker() -> None:
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.001)
                    ticks += 1
                    if ticks == 20:
                        ticked.set()

            ticking = asyncio.ensure_future(ticker())
            stream = client.stream("stream until abort")
            first = await stream.__anext__()
            assert isinstance(first, TextChunk)
            at_first = ticks
            await ticked.wait()  # the turn is still open: no TurnComplete was taken
            assert ticks >= at_first and (await client.get_state()).is_streaming
            await stream.aclose()  # aborts
            ticking.cancel()
            assert (await client.run("hello")).text == "pong"

    run(test)


def test_twenty_agents_in_one_loop_with_bounded_threads(fake_agent: str) -> None:
    async def test() -> None:
        clients = [fake_client(fake_agent) for _ in range(20)]
        await asyncio.gather(*(c.start() for c in clients))
        try:
            results = await asyncio.gather(*(items_of(c.stream("slow")) for c in clients))
            assert all(texts(r) == "pong" and isinstance(r[-1], TurnComplete) for r in results)
            names = [t.name for t in threading.enumerate()]
            # A sync client's dispatcher is named after its agent (omprpc-dispatch-<pid>); sync
            # clients of other modules may run meanwhile (real agents start in the background).
            ours = {f"omprpc-dispatch-{(await c.info())['pid']}" for c in clients}
            assert not ours & set(names) and "omprpc-dispatch" not in names, names
            assert sum(n.startswith("omprpc-aio-command") for n in names) <= DEFAULT_MAX_WORKERS
            assert sum(n.startswith("omprpc-aio-wait") for n in names) <= DEFAULT_MAX_WAITS
        finally:
            await asyncio.gather(*(c.close() for c in clients))

    run(test)


# -- the README's example --


def test_the_readmes_asyncio_example_runs(fake_agent: str) -> None:
    readme = (PACKAGE_ROOT / "README.md").read_text()
    block = readme.split("<!-- asyncio-example:", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    assert block.count('["target/debug/omprpc-fake-agent"]') == 1
    code = block.replace('["target/debug/omprpc-fake-agent"]', repr([fake_agent]))
    env = dict(os.environ, PYTHONPATH=str(IMPORT_ROOT))
    out = subprocess.run([sys.executable, "-X", "dev", "-W", "error", "-c", code], env=env, capture_output=True,
                         text=True, timeout=GUARD)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-3:] == ["[success: echo: hello]", "[done: None, 0 tokens]", "fake-session"], out.stdout


# -- cancelling awaited commands --


def test_a_cancelled_prompt_and_wait_aborts_and_the_next_prompt_is_accepted(fake_agent: str) -> None:
    async def test() -> None:
        async with fake_client(fake_agent) as client:
            log: list[tuple[str, Any]] = []
            streaming = asyncio.Event()

            async def record() -> None:  # until the second run's end
                async for event in client.events():
                    log.append((event.type, getattr(event, "message", None)))
                    if event.type == "message_update":
                        streaming.set()
                    if [t for t, _ in log].count("agent_end") == 2:
                        return

            recorder = asyncio.ensure_future(record())
            await asyncio.sleep(0)  # subscribed
            waiting = asyncio.ensure_future(client.prompt_and_wait("stream until abort"))
            await streaming.wait()
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            turn = await client.prompt_and_wait("hello")  # waits for the aborted turn, then runs
            assert (turn.assistant_text, turn.outcome) == ("pong", "agent_end")
            await recorder
            types = [t for t, _ in log]
            starts = [i for i, t in enumerate(types) if t == "agent_start"]
            aborted = [i for i, (t, m) in enumerate(log)
                       if t == "message_end" and isinstance(m, dict) and m.get("stopReason") == "aborted"]
            assert len(starts) == 2 and len(aborted) == 1 and aborted[0] < starts[1], log
            assert not (await client.get_state()).is_streaming

    run(test)


def test_a_cancelled_prompt_and_wait_lets_a_stream_follow(fake_agent: str) -> None:
    async def test() -> None:
        async with fake_client(fake_agent) as client:
            waiting = asyncio.ensure_future(client.prompt_and_wait("stream until abort"))
            events = client.events()
            async for event in events:
                if event.type == "message_update":
                    break
            await events.aclose()
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            assert texts(await items_of(client.stream("hello"))) == "pong"

    run(test)


def test_a_cancelled_request_returns_at_once_and_its_thread_is_freed(fake_agent: str) -> None:
    """The "hanging" agent acknowledges the first prompt and answers nothing after: a request
    waits for its own timeout in the library. Cancelled, the caller is free at once; the
    request ends in its thread (its RpcTimeoutError dropped), and the one-thread executor
    serves the next command."""

    async def test() -> None:
        with concurrent.futures.ThreadPoolExecutor(1) as executor:
            async with fake_client(fake_agent, "hanging", executor=executor) as client:
                await client.prompt("hello")
                pending = asyncio.ensure_future(client.get_state(timeout=1.0))
                await asyncio.sleep(0)  # handed to the executor
                pending.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await asyncio.wait_for(pending, 0.5)  # at once, not after the request's second
                # The dropped call ends by its timeout in the executor's only thread, which then
                # runs the next pooled call (the library's own activity probes may still be
                # pending: the agent answers nothing).
                assert await asyncio.wrap_future(executor.submit(lambda: "free")) == "free"

    run(test)


def test_every_sync_method_has_its_async_twin() -> None:
    """AsyncRpcClient's methods are written out (no __getattr__): each public method of the
    sync client that talks to the agent or the library is a coroutine function here with the
    same parameters (listener registration aside: events() is the async client's)."""
    sync_only = {"on_", "start", "stop", "stream"}
    not_coroutines = {"set_policy_handler", "install_headless_ui"}
    assert not hasattr(AsyncRpcClient, "__getattr__")
    missing, differ = [], []
    for name, value in inspect.getmembers(RpcClient, callable):
        if name.startswith("_") or name.startswith("on_") or name in sync_only:
            continue
        twin = getattr(AsyncRpcClient, name, None)
        if twin is None:
            missing.append(name)
            continue
        if name not in not_coroutines and not inspect.iscoroutinefunction(twin):
            differ.append((name, "not a coroutine function"))
        if name not in not_coroutines and str(inspect.signature(twin)) != str(inspect.signature(value)):
            differ.append((name, str(inspect.signature(twin)), str(inspect.signature(value))))
    assert (missing, differ) == ([], [])
    for name in ("start", "close", "stream", "run", "events"):
        assert callable(getattr(AsyncRpcClient, name))


# -- bounded reader queues --

#: The readers' bound in these tests: a normal turn's frames fit, "burst 200"'s do not.
BOUND = 20


def test_an_events_reader_that_falls_behind_is_told_how_many_it_lost(fake_agent: str) -> None:
    async def test() -> None:
        async with fake_client(fake_agent, max_buffered_events=BOUND) as client:
            events = client.events()
            reading = asyncio.ensure_future(events.__anext__())  # subscribed, reads one
            await asyncio.sleep(0)
            turn = await client.prompt_and_wait("burst 200")  # the library's own collector
            seen = [await reading]
            # BOUND frames were buffered, the rest were dropped and counted: the count comes
            # where they went missing, once the buffer is read. One frame more gets through when
            # the reader had taken its first before the next arrived; when the library handed
            # the first frames over in one batch it had not (both seen: a timing of the run).
            while not isinstance(seen[-1], EventOverflow):
                seen.append(await events.__anext__())
            ready = 1 if seen[0].type == "ready" else 0  # the agent's, if still queued at subscribe
            got = seen[ready:-1]
            assert len(seen) - 1 in (BOUND, BOUND + 1)
            assert [e.type for e in got] == [e.type for e in turn.events[:len(got)]]
            # Nothing lost silently: each of the turn's events was read or counted.
            lost = seen[-1]
            assert isinstance(lost, EventOverflow)
            assert lost.dropped == len(turn.events) - len(got) and lost.dropped >= 180
            # Later frames come through again.
            assert (await client.run("hello")).text == "pong"
            nxt = await events.__anext__()
            assert nxt.type == "agent_start"
            await events.aclose()

    run(test)


def test_a_stream_whose_reader_falls_behind_fails_typed_and_aborts(fake_agent: str) -> None:
    """A turn cannot be summarized with holes: the stream raises RpcLimitExceededError (and
    the turn is left as any turn left early); the next turn runs."""

    async def test() -> None:
        async with fake_client(fake_agent, max_buffered_events=BOUND) as client:
            with pytest.raises(RpcLimitExceededError) as err:
                async for _ in client.stream("burst 200"):
                    await client.wait_for_idle()  # the reader sits while the turn ends
            assert err.value.status_name == "LIMIT_EXCEEDED" and "max_buffered_events" in str(err.value)
            assert (await client.run("hello")).text == "pong"

    run(test)


def test_max_buffered_events_must_be_positive() -> None:
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError):
            AsyncRpcClient(command=["unused"], max_buffered_events=bad)  # type: ignore[arg-type]
