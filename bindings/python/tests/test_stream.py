"""The sync client's stream (RpcClient.stream): the items of omprpc.aio's stream(), from the
library's summarizer, against the fake agent; leaving it early aborts the turn."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from typing import Any

import pytest

import omprpc.aio
import omprpc.stream
from conftest import IMPORT_ROOT, PACKAGE_ROOT, MakeClient
from omprpc import RpcCommandError, RpcConcurrencyError, RpcProcessExitError
from omprpc.stream import (
    CompactionComplete,
    ReasoningChunk,
    RetryScheduled,
    StreamItem,
    TextChunk,
    ToolCallComplete,
    ToolCallRequest,
    TurnComplete,
)

#: Every turn's deadline (seconds): a stream that hangs fails instead (the machine may be loaded).
GUARD = 60.0


def texts(items: list[StreamItem]) -> str:
    return "".join(i.text for i in items if isinstance(i, TextChunk))


def stop_reasons(client: Any) -> list[Any]:
    """The stop reasons of the assistant messages the agent ends from now on (its frames)."""
    seen: list[Any] = []
    client.on_message_end(lambda e: seen.append(e.message.get("stopReason"))
                          if e.message.get("role") == "assistant" else None)
    return seen


def test_the_stream_yields_the_aio_items_in_order(make_client: MakeClient) -> None:
    client = make_client()
    with client.stream("thinking", timeout=GUARD) as stream:
        items = list(stream)
    assert [type(i) for i in items] == [ReasoningChunk, TextChunk, TurnComplete]
    assert (items[0], items[1]) == (ReasoningChunk("hmm"), TextChunk("visible"))
    done = items[-1]
    assert isinstance(done, TurnComplete)
    assert (done.outcome, done.stop_reason, done.text) == ("agent_end", "stop", "visible")
    assert done.usage is not None and (done.usage.input_tokens, done.usage.output_tokens) == (1, 1)
    assert done.summary.reasoning == "hmm" and done.summary.complete and done.request_id
    # One set of classes: omprpc.aio's names are these.
    for cls in (TextChunk, ReasoningChunk, ToolCallRequest, ToolCallComplete, RetryScheduled,
                CompactionComplete, TurnComplete):
        assert getattr(omprpc.aio, cls.__name__) is cls is getattr(omprpc, cls.__name__)


def test_tool_calls_retries_and_compactions_stream_then_the_turn(make_client: MakeClient) -> None:
    client = make_client()
    with client.stream("all events", timeout=GUARD) as stream:
        items = list(stream)
    kinds = [type(i) for i in items]
    assert kinds[-1] is TurnComplete and texts(items) == "pong"
    requests = [i for i in items if isinstance(i, ToolCallRequest)]
    completes = [i for i in items if isinstance(i, ToolCallComplete)]
    assert requests and [(r.tool_call_id, r.tool_name) for r in requests] == \
        [(c.tool_call_id, c.tool_name) for c in completes]
    assert kinds.index(ToolCallRequest) < kinds.index(ToolCallComplete)
    assert CompactionComplete in kinds and RetryScheduled in kinds


def test_final_turn_consumes_the_rest(make_client: MakeClient) -> None:
    client = make_client()
    with client.stream("thinking", timeout=GUARD) as stream:
        assert next(stream) == ReasoningChunk("hmm")
        done = stream.final_turn()
        assert (done.text, done.summary.reasoning) == ("visible", "hmm")
        assert list(stream) == []  # nothing after the turn
        assert stream.final_turn() is done  # asked again: the same
    # The next turn starts clean: only its own items.
    with client.stream("hello", timeout=GUARD) as again:
        turn = again.final_turn()
    assert (turn.text, turn.summary.text, turn.summary.reasoning) == ("pong", "pong", "")
    assert turn.request_id != done.request_id


def test_leaving_the_block_early_aborts_and_the_next_prompt_is_accepted(make_client: MakeClient) -> None:
    client = make_client()
    stops = stop_reasons(client)
    with client.stream("stream until abort", timeout=GUARD) as stream:
        for item in stream:
            assert isinstance(item, TextChunk)
            break
    # close() waited for the aborted turn to end: the agent idles, and said the run was aborted.
    assert stops == ["aborted"]
    assert not client.get_state().is_streaming
    assert client.prompt_and_wait("hello", timeout=GUARD).assistant_text == "pong"
    with client.stream("hello", timeout=GUARD) as stream:
        assert texts(list(stream)) == "pong"


def test_an_exception_in_the_block_aborts_the_turn_and_propagates(make_client: MakeClient) -> None:
    client = make_client()
    stops = stop_reasons(client)
    with pytest.raises(KeyError):
        with client.stream("stream until abort", timeout=GUARD) as stream:
            next(stream)
            raise KeyError("the host's own failure")
    assert stops == ["aborted"]
    assert client.stream("hello", timeout=GUARD).final_turn().text == "pong"


def test_a_stream_left_before_reading_anything_aborts_too(make_client: MakeClient) -> None:
    client = make_client()
    stops = stop_reasons(client)
    with client.stream("stream until abort", timeout=GUARD):
        pass
    assert stops == ["aborted"]
    assert client.prompt_and_wait("hello", timeout=GUARD).assistant_text == "pong"


def test_one_stream_at_a_time_per_client(make_client: MakeClient) -> None:
    client = make_client()
    with client.stream("stream until abort", timeout=GUARD) as first:
        assert isinstance(next(first), TextChunk)
        with pytest.raises(RpcConcurrencyError) as err:
            client.stream("hello")
        assert err.value.status_name == "CONCURRENCY"
    with client.stream("hello", timeout=GUARD) as second:
        assert second.final_turn().text == "pong"


def test_a_stream_read_to_its_end_without_a_block_frees_the_client(make_client: MakeClient) -> None:
    client = make_client()
    assert texts(list(client.stream("hello", timeout=GUARD))) == "pong"
    for item in client.stream("hello", timeout=GUARD):
        if isinstance(item, TurnComplete):
            break  # the turn is over: nothing to abort, the client is free
    assert client.stream("thinking", timeout=GUARD).final_turn().text == "visible"


def test_a_failed_prompt_raises_from_the_stream(make_client: MakeClient) -> None:
    client = make_client()
    with client.stream("late failure", timeout=GUARD) as stream:
        with pytest.raises(RpcCommandError):
            list(stream)
    assert client.stream("hello", timeout=GUARD).final_turn().text == "pong"


def test_an_agent_that_dies_mid_turn_raises_process_exit(make_client: MakeClient) -> None:
    client = make_client()
    with pytest.raises(RpcProcessExitError):
        with client.stream("crash", timeout=GUARD) as stream:
            list(stream)
    assert "fatal: crashed" in client.stderr


def test_stop_during_a_stream_ends_it_with_process_exit(make_client: MakeClient) -> None:
    client = make_client()
    with client.stream("stream until abort", timeout=GUARD) as stream:
        assert isinstance(next(stream), TextChunk)
        stopper = threading.Thread(target=client.stop)
        stopper.start()
        with pytest.raises(RpcProcessExitError):
            list(stream)
        stopper.join(GUARD)
    assert not stopper.is_alive()


def test_the_module_lists_its_items() -> None:
    assert set(omprpc.stream.__all__) >= {"TextChunk", "TurnComplete", "TurnStream", "StreamItem"}


# -- the README's sync examples, run against the fake agent --


def readme_block(marker: str) -> str:
    readme = (PACKAGE_ROOT / "README.md").read_text()
    return readme.split(f"<!-- {marker}:", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]


def test_the_top_readme_shows_this_readmes_stream_example() -> None:
    """The repository's README opens its examples with this README's stream example, verbatim."""
    top = (PACKAGE_ROOT.parents[1] / "README.md").read_text()
    copy = top.split("<!-- stream-example:", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    assert copy == readme_block("stream-example")


def run_example(code: str, replacements: dict[str, str]) -> list[str]:
    for old, new in replacements.items():
        assert code.count(old) == 1, old
        code = code.replace(old, new)
    env = dict(os.environ, PYTHONPATH=str(IMPORT_ROOT))
    out = subprocess.run([sys.executable, "-X", "dev", "-W", "error", "-c", code], env=env, capture_output=True,
                         text=True, timeout=GUARD)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def test_the_readmes_stream_example_runs(fake_agent: str) -> None:
    """The README's first example: the fake agent's "all events" turn answers "pong" and reads a
    file; only the text deltas are the answer."""
    lines = run_example(readme_block("stream-example"), {
        'model="anthropic/claude-sonnet-4-5", no_session=True': f"command=[{fake_agent!r}]",
        '"What does README.md say, in one sentence?"': '"all events"',
    })
    assert lines == ["pong", "[read {'path': 'README.md'}]", "[read: success]", "", "[1 tokens in, 1 out]"]


def test_the_readmes_listener_example_prints_only_text_deltas(fake_agent: str) -> None:
    """The callback example: on the "thinking" turn (a thinking_delta "hmm", then a text_delta
    "visible") only the text is printed as the answer."""
    lines = run_example(readme_block("listener-example"), {
        'model="anthropic/claude-sonnet-4-5", custom_tools=[tool], no_session=True':
            f"command=[{fake_agent!r}], custom_tools=[tool]",
        '"What is the value of key \'a\'?"': '"thinking"',
    })
    assert lines[:2] == ["visible", "visible"] and "hmm" not in "".join(lines), lines
