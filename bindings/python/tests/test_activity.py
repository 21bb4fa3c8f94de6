"""The activity model against the fake agent's reproductions of real agents: a steer that
outlives an abort (omp runs it by itself, pi parks it), a follow_up queued during a stream (run
in the same run), omp's compaction handoff, an extension /command that starts no run, and
turn_idle_timeout standing still while a host tool runs."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from omprpc import AgentEndEvent, HostToolContext, RpcTimeoutError, ToolExecutionEndEvent, host_tool

ECHO_SCHEMA = {
    "type": "object",
    "properties": {"message": {"type": "string"}},
    "required": ["message"],
    "additionalProperties": False,
}

#: A hang guard for waits that must return on their own.
GUARD = 10.0
#: A generous hang guard (the machine may be loaded).
LONG_GUARD = 60.0


def _texts(message: Any) -> list[str]:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [content]
    return [c.get("text") for c in content or () if isinstance(c, dict) and isinstance(c.get("text"), str)]


def _recorded(client) -> list[dict]:
    payloads: list[dict] = []
    lock = threading.Lock()

    def record(p: dict) -> None:
        with lock:
            payloads.append(p)

    client.on_event_payload(record)
    return payloads


class _Waitable:
    """Every event payload, with a wait for the first one a predicate accepts."""

    def __init__(self, client) -> None:
        self.items: list[dict] = []
        self.cond = threading.Condition()
        client.on_event_payload(self._add)

    def _add(self, p: dict) -> None:
        with self.cond:
            self.items.append(p)
            self.cond.notify_all()

    def wait(self, what: str, pred) -> dict:
        with self.cond:
            found = self.cond.wait_for(lambda: next((p for p in self.items if pred(p)), None), LONG_GUARD)
        assert found is not None, f"no {what} within {LONG_GUARD} s"
        return found

    def snapshot(self) -> list[dict]:
        with self.cond:
            return list(self.items)


def _steer_then_abort(client) -> None:
    client.prompt("stream until abort")
    client.steer("steer me now")
    client.abort()


def test_omp_steer_after_abort_runs_before_idle(make_client) -> None:
    client = make_client()
    payloads = _recorded(client)
    _steer_then_abort(client)
    t0 = time.monotonic()
    client.wait_for_idle(timeout=GUARD)
    assert time.monotonic() - t0 < GUARD
    ends = [p for p in list(payloads) if p.get("type") == "agent_end"]
    assert any("steered ok" in t for e in ends for m in e.get("messages", ()) for t in _texts(m)), ends
    assert len(ends) == 2  # the abort's and the steer's run
    assert any(p.get("type") == "message_end" and p["message"].get("steering") is True
               and "steer me now" in _texts(p["message"]) for p in list(payloads))
    client.wait_for_idle(timeout=GUARD)
    assert client.prompt_and_wait("say hello", timeout=GUARD).assistant_text == "pong"


def test_pi_parked_steer_is_idle(make_client) -> None:
    client = make_client(flavor="pi")
    payloads = _recorded(client)
    _steer_then_abort(client)
    t0 = time.monotonic()
    client.wait_for_idle(timeout=GUARD)
    assert time.monotonic() - t0 < GUARD
    state = client.get_state()
    assert state.raw.get("pendingMessageCount") == 1 and state.is_streaming is False
    ends = [p for p in list(payloads) if p.get("type") == "agent_end"]
    assert len(ends) == 1  # the abort's only: pi keeps the steer for the next prompt
    assert not any("steered ok" in t for e in ends for m in e.get("messages", ()) for t in _texts(m))


@pytest.mark.parametrize("flavor", ["omp", "pi"])
def test_queued_follow_up_runs_before_idle(make_client, flavor: str) -> None:
    # Both agents finish the answer, then run the follow-up in the same run: busy until its
    # terminal agent_end, which wait_for_idle waits for.
    client = make_client(flavor=flavor)
    seen = _Waitable(client)
    client.prompt("stream until abort")
    seen.wait("the first text delta", lambda p: p.get("type") == "message_update"
              and p["assistantMessageEvent"].get("type") == "text_delta")
    client.follow_up("follow me")
    client.wait_for_idle(timeout=LONG_GUARD)
    payloads = seen.snapshot()
    ends = [p for p in payloads if p.get("type") == "agent_end"]
    assert ends, f"{flavor}: no agent_end before wait_for_idle returned"
    assert _texts(ends[-1]["messages"][1]) == ["followed ok"], ends[-1]
    assert any(p.get("type") == "message_end" and _texts(p["message"]) == ["follow me"] for p in payloads)


def test_omp_handoff_completes(make_client) -> None:
    client = make_client()
    turn = client.prompt_and_wait("handoff", timeout=GUARD)
    types = [e.type for e in turn.events]
    assert "auto_compaction_start" in types
    ends = [e for e in turn.events if isinstance(e, AgentEndEvent)]
    assert [e.is_terminal for e in ends] == [False]
    assert turn.assistant_text == "got it"
    client.wait_for_idle(timeout=GUARD)


@pytest.mark.parametrize("flavor", ["omp", "pi"])
def test_noop_command_completes(make_client, flavor: str) -> None:
    client = make_client(flavor=flavor)
    turn = client.prompt_and_wait("/noop", timeout=GUARD)
    assert turn.agent_invoked is False
    assert "agent_start" not in [e.type for e in turn.events]
    client.wait_for_idle(timeout=GUARD)


def test_idle_timeout_stands_still_for_a_slow_host_tool(make_client) -> None:
    calls: list[str] = []

    def slow_echo(args: dict, ctx: HostToolContext) -> str:
        calls.append(ctx.tool_call_id)
        time.sleep(1.5)  # the scenario: the host answers after turn_idle_timeout (1 s)
        return "late answer"

    tool = host_tool(name="echo_host", description="Echo, slowly", parameters=ECHO_SCHEMA, execute=slow_echo)
    client = make_client(custom_tools=(tool,), turn_idle_timeout=1.0)
    turn = client.prompt_and_wait("needs host tool", timeout=GUARD)
    ends = [e for e in turn.events if isinstance(e, ToolExecutionEndEvent)]
    assert [e.result["content"][0]["text"] for e in ends] == ["late answer"]
    assert calls == ["toolu_host_1"]


def test_idle_timeout_still_fails_a_hang(make_client) -> None:
    client = make_client(turn_idle_timeout=0.3)
    t0 = time.monotonic()
    with pytest.raises(RpcTimeoutError):
        client.prompt_and_wait("hang", timeout=GUARD)
    assert time.monotonic() - t0 < GUARD
