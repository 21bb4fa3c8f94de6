"""omprpc.aio against the real pi and omp (offline, on the project's fake LLM; see
real_agents_support.py): a text turn through the derived stream, and a host tool written as an
``async def`` (pi: served through the tool bridge; omp: natively). Skipped, saying so, when the
real agents are not set up (make python-tests sets them up)."""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable, TypeVar

import pytest

from omprpc import HostToolContext, host_tool
from omprpc.aio import AsyncRpcClient, StreamItem, TextChunk, ToolCallComplete, ToolCallRequest, TurnComplete
from real_agents_support import GUARD, Workspace, note_agent, result_text, settles

_T = TypeVar("_T")

ADD_SCHEMA = {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}
SCRIPT = [
    {"match": "say hello", "replies": [{"text": "Hello from the fake model"}]},
    {"match": "add numbers", "replies": [
        {"tool_call": {"name": "host_add", "arguments": {"a": 2, "b": 3}}},
        {"text": "sum is {{last_tool_result}}"}]},
]


def run(test: Callable[[], Awaitable[_T]]) -> _T:
    async def guarded() -> _T:
        return await asyncio.wait_for(test(), GUARD)

    return asyncio.run(guarded())


@pytest.mark.parametrize("agent", ["pi", "omp"])
def test_real_agent_streams_a_text_turn_and_calls_an_async_host_tool(agent: str) -> None:
    ws = Workspace(agent, SCRIPT)
    added: list[Any] = []

    async def add(args: dict[str, Any], ctx: HostToolContext[Any]) -> str:
        added.append(args)
        await asyncio.sleep(0)
        return str(int(args["a"] + args["b"]))

    # omp offers a host tool to the model directly with loadMode "essential"
    tool = host_tool(name="host_add", description="Add two numbers", parameters=ADD_SCHEMA, execute=add,
                     load_mode="essential" if agent == "omp" else None)

    async def test() -> None:
        async with AsyncRpcClient(**ws.client_kwargs(custom_tools=[tool])) as client:
            info = await client.info()
            note_agent(__name__, info)
            # pi 0.80.4 on (pi 1.6.0 here) ends a prompt with agent_settled.
            end = "agent_settled" if settles(info) else "agent_end"
            hello: list[StreamItem] = [item async for item in client.stream("say hello")]
            chunks = [i.text for i in hello if isinstance(i, TextChunk)]
            assert "".join(chunks) == "Hello from the fake model" and len(chunks) > 1, hello
            done = hello[-1]
            assert isinstance(done, TurnComplete), hello
            assert (done.outcome, done.stop_reason, done.text) == (end, "stop", "Hello from the fake model")
            assert (done.attempts, done.failed_attempts, done.compactions) == (1, (), ())

            items = [item async for item in client.stream("add numbers")]
            request = next(i for i in items if isinstance(i, ToolCallRequest))
            complete = next(i for i in items if isinstance(i, ToolCallComplete))
            assert (request.tool_name, request.args) == ("host_add", {"a": 2, "b": 3})
            assert items.index(request) < items.index(complete)
            assert (complete.tool_call_id, complete.outcome) == (request.tool_call_id, "success")
            assert result_text(complete.result) == "5"
            last = items[-1]
            assert isinstance(last, TurnComplete) and last.text == "sum is 5", items
            assert last.usage is not None and last.usage.calls == 2

    try:
        run(test)
    finally:
        ws.close()
    assert added == [{"a": 2, "b": 3}]
