"""The Python binding against the REAL pi (the newest: 1.6.0) and omp 18.2.3, offline, with the project's
fake LLM (the scenarios of tests/real_pi.rs and tests/real_omp.rs, issue 11 §3: the full
set for both agents; C, Go and Node run omp's short set). Workspaces
and the environment contract: real_agents_support.py. Clients are shared per module where
the scenarios do not interfere (each start costs seconds); the tests run in file order."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from omprpc import HostToolContext, PolicyEvalEvent, RpcClient, RpcCommandError, host_tool
from real_agents_support import (GUARD, PI_NEWEST, PI_PREVIOUS, Workspace, group_gone, message_text, note_agent,
                                 result_text, settles)

ADD_SCHEMA = {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}
EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}

ASK_EXTENSION = """
export default function (pi) {
  pi.registerCommand("ask", {
    description: "Ask for a name",
    handler: async (args, ctx) => {
      const name = await ctx.ui.input("Your name?", "type it");
      ctx.ui.notify(`hello ${name}`, "info");
    },
  });
  pi.registerCommand("quiet", { description: "Does nothing", handler: async () => {} });
}
"""

HANG = {"match": "hang", "replies": [{"text": "thinking about it", "hang": True}]}
STEER = {"match": "steer me", "replies": [{"text": "steered ok"}]}
ADD = {"match": "add numbers", "replies": [
    {"tool_call": {"name": "host_add", "arguments": {"a": 2, "b": 3}}},
    {"text": "sum is {{last_tool_result}}"}]}
SAY_HELLO = {"match": "say hello", "replies": [{"text": "Hello from the fake model"}]}
# A slow stream (four chunks 250 ms apart), then the answer to a follow-up queued during it.
SLOW = {"match": "slow", "replies": [{"text": "one two three four", "chunk_delay_ms": 250}]}
FOLLOW = {"match": "follow me", "replies": [{"text": "followed ok"}]}
SILENT = {"match": "work silently", "replies": [
    {"tool_call": {"name": "host_silent", "arguments": {"a": 2, "b": 3}}},
    {"text": "silent sum is {{last_tool_result}}"}]}
#: How long the silent host tool works, longer than the clients' turn_idle_timeout (4 s).
SILENT_WORK = 5.0
IDLE_TIMEOUT = 4.0


class Recorder:
    """Every event payload the client's listeners see, with waits on them."""

    def __init__(self, client: RpcClient):
        self.items: list[dict[str, Any]] = []
        self.cond = threading.Condition()
        client.on_event_payload(self._add)

    def _add(self, payload: dict[str, Any]) -> None:
        with self.cond:
            self.items.append(payload)
            self.cond.notify_all()

    def mark(self) -> int:
        with self.cond:
            return len(self.items)

    def since(self, mark: int) -> list[dict[str, Any]]:
        with self.cond:
            return self.items[mark:]

    def wait(self, what: str, pred: Callable[[dict[str, Any]], bool], since: int = 0) -> dict[str, Any]:
        deadline = time.monotonic() + GUARD
        with self.cond:
            while True:
                for p in self.items[since:]:
                    if pred(p):
                        return p
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no {what} within {GUARD} s")
                self.cond.wait(left)


class Background:
    """Runs ``fn`` on a thread; ``result()`` joins it (hang guard) and re-raises."""

    def __init__(self, fn: Callable[[], Any]):
        self.value: Any = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(fn,), daemon=True)
        self.thread.start()

    def _run(self, fn: Callable[[], Any]) -> None:
        try:
            self.value = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in result()
            self.error = exc

    def result(self) -> Any:
        self.thread.join(GUARD)
        assert not self.thread.is_alive(), f"still running after {GUARD} s"
        if self.error is not None:
            raise self.error
        return self.value


def of_type(turn_or_payloads: Any, ty: str) -> list[dict[str, Any]]:
    payloads = getattr(turn_or_payloads, "event_payloads", turn_or_payloads)
    return [p for p in payloads if p.get("type") == ty]


def one(turn: Any, ty: str) -> dict[str, Any]:
    found = of_type(turn, ty)
    assert len(found) == 1, f"expected one {ty}, got {len(found)}: {[p.get('type') for p in turn.event_payloads]}"
    return found[0]


def tool_names(request: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools") or ()]


def start(ws: Workspace, **kwargs: Any) -> RpcClient:
    client = RpcClient(**ws.client_kwargs(**kwargs))
    t0 = time.monotonic()
    try:
        client.start()
    except BaseException:
        ws.close()
        raise
    print(f"{note_agent(__name__, client.info())} ready after {time.monotonic() - t0:.1f} s")
    return client


def silent_host_tool(calls: list[float], load_mode: str | None = None) -> Any:
    """host_silent: works for SILENT_WORK seconds without a word (no update), then adds."""

    def work(args: dict[str, Any], _ctx: HostToolContext[Any]) -> str:
        t0 = time.monotonic()
        time.sleep(SILENT_WORK)  # the scenario: the host's deliberate silent work
        calls.append(time.monotonic() - t0)
        return str(int(args["a"] + args["b"]))

    extra = {} if load_mode is None else {"load_mode": load_mode}
    return host_tool(name="host_silent", description="Add two numbers, slowly", parameters=ADD_SCHEMA,
                     execute=work, **extra)


def assert_follow_up_runs_before_idle(ws: Workspace, client: RpcClient, rec: Recorder) -> None:
    """A follow_up queued while the model streams runs in the same run, after the answer:
    wait_for_idle returns only after that run's agent_end."""
    before = len(ws.llm_requests())
    mark = rec.mark()
    client.prompt("slow please")
    rec.wait("the first text delta", lambda p: p.get("type") == "message_update"
             and p["assistantMessageEvent"].get("type") == "text_delta", mark)
    client.follow_up("follow me")
    client.wait_for_idle(timeout=GUARD)
    seen = rec.since(mark)
    ends = of_type(seen, "agent_end")
    assert ends, [p.get("type") for p in seen]
    assert message_text(ends[-1]["messages"][-1]) == "followed ok", ends[-1]
    assert len(ws.llm_requests()) == before + 2, "the answer, then the follow-up"
    assert client.get_state().is_streaming is False


def assert_silent_host_tool_outlasts_the_idle_timeout(client: RpcClient, calls: list[float]) -> None:
    """The idle clock stands still while a host call is open: the turn succeeds."""
    turn = client.prompt_and_wait("work silently", timeout=GUARD)
    assert len(calls) == 1 and calls[0] >= SILENT_WORK > IDLE_TIMEOUT, calls
    end = one(turn, "tool_execution_end")
    assert (end["toolName"], end["isError"], result_text(end["result"])) == ("host_silent", False, "5")
    assert turn.assistant_text == "silent sum is 5"


def assert_abort_during_host_tool(ws: Workspace, client: RpcClient, rec: Recorder, calls: HostCalls,
                                  tool_text: str) -> None:
    """abort while the host holds a tool call: the handler sees the cancellation, the agent
    sends host_tool_cancel, the tool ends with ``tool_text`` as an error, the turn is aborted
    and the model is not called again."""
    before = len(ws.llm_requests())
    mark = rec.mark()
    turn_call = Background(lambda: client.prompt_and_wait("wait for the host", timeout=GUARD))
    assert calls.wait_started.wait(GUARD), "host_wait was never called"
    client.abort()
    assert calls.wait_cancelled.wait(GUARD), "the host tool never saw the cancellation"
    turn = turn_call.result()
    cancel = rec.wait("host_tool_cancel", lambda p: p.get("type") == "host_tool_cancel", mark)
    call = rec.wait("host_tool_call", lambda p: p.get("type") == "host_tool_call", mark)
    assert cancel["targetId"] == call["id"]
    end = one(turn, "tool_execution_end")
    assert (end["toolName"], end["isError"], result_text(end["result"])) == ("host_wait", True, tool_text)
    assert turn.assistant_message is not None and turn.assistant_message["stopReason"] == "aborted"
    assert len(ws.llm_requests()) == before + 1, "the aborted run made no second LLM call"
    client.wait_for_idle(timeout=GUARD)


def assert_closes_cleanly(client: RpcClient) -> None:
    pid = client.info()["pid"]
    assert isinstance(pid, int) and pid > 0
    assert not group_gone(pid), "the agent is not running before close"
    client.stop()
    assert group_gone(pid), f"the agent (pid {pid}) or its process group outlived stop()"
    assert not client.is_running


# --- pi with the policy gate (rules mode): its bash is blocked -----------------------------
# The same client has turn_idle_timeout (4 s) and a bridged host tool that works silently for
# longer; its other turns are never that quiet.

SILENT_CALLS: list[float] = []


@pytest.fixture(scope="module")
def pi_gated() -> Iterator[tuple[Workspace, RpcClient, Recorder]]:
    ws = Workspace("pi", [
        {"match": "run forbidden", "replies": [
            {"tool_call": {"name": "bash", "arguments": {"command": "touch ran-forbidden"}}},
            {"text": "after: {{last_tool_result}}"}]},
        HANG, SLOW, FOLLOW, SILENT])
    SILENT_CALLS.clear()
    client = start(ws, tool_policy={"mode": "rules", "block": {"bash": "no shell for you"}, "default": "allow"},
                   custom_tools=[silent_host_tool(SILENT_CALLS)], turn_idle_timeout=IDLE_TIMEOUT)
    yield ws, client, Recorder(client)
    client.stop()
    ws.close()


def test_pi_policy_gate_blocks_bash(pi_gated: tuple[Workspace, RpcClient, Recorder]) -> None:
    ws, client, rec = pi_gated
    assert client.info()["bridgeLoaded"] is True
    turn = client.prompt_and_wait("run forbidden", timeout=GUARD)
    end = one(turn, "tool_execution_end")
    assert (end["toolName"], end["isError"], result_text(end["result"])) == ("bash", True, "no shell for you")
    assert turn.assistant_text == "after: no shell for you"
    assert not (ws.work / "ran-forbidden").exists(), "the blocked command ran"
    blocked = rec.wait("tool_blocked", lambda p: p.get("type") == "tool_blocked")
    assert (blocked["toolName"], blocked["reason"]) == ("bash", "no shell for you")


# Before the steer test: the steer it parks would reach the next prompt.
def test_pi_queued_follow_up_runs_before_idle(pi_gated: tuple[Workspace, RpcClient, Recorder]) -> None:
    assert_follow_up_runs_before_idle(*pi_gated)


def test_pi_silent_bridged_host_tool_outlasts_the_idle_timeout(pi_gated: tuple[Workspace, RpcClient, Recorder]) -> None:
    _, client, _ = pi_gated
    assert_silent_host_tool_outlasts_the_idle_timeout(client, SILENT_CALLS)


def test_pi_steer_then_abort_parks_the_steer(pi_gated: tuple[Workspace, RpcClient, Recorder]) -> None:
    ws, client, rec = pi_gated
    mark = rec.mark()
    client.prompt("hang please")
    rec.wait("the first text delta", lambda p: p.get("type") == "message_update"
             and p["assistantMessageEvent"].get("type") == "text_delta", mark)
    client.steer("steer me now")
    q = rec.wait("queue_update", lambda p: p.get("type") == "queue_update", mark)
    assert q["steering"] == ["steer me now"]
    client.abort()
    t0 = time.monotonic()
    client.wait_for_idle(timeout=GUARD)  # pi parks the steer: idle, not running it
    assert time.monotonic() - t0 < GUARD
    ends = of_type(rec.since(mark), "agent_end")
    assert len(ends) == 1, ends  # the aborted run's only
    assert ends[0]["messages"][-1]["stopReason"] == "aborted"
    state = client.get_state()
    assert state.is_streaming is False
    assert state.raw.get("pendingMessageCount") == 1
    assert not any("steer me" in message_text(m) for r in ws.llm_requests() for m in r["messages"][1:])


def test_pi_close_leaves_no_process(pi_gated: tuple[Workspace, RpcClient, Recorder]) -> None:
    _, client, _ = pi_gated
    assert_closes_cleanly(client)


# --- pi with bridged host tools and an extension, shared by the scenarios below ------------


class HostCalls:
    def __init__(self) -> None:
        self.add_args: list[dict[str, Any]] = []
        self.wait_started = threading.Event()
        self.wait_cancelled = threading.Event()

    def add(self, args: dict[str, Any], ctx: HostToolContext[Any]) -> str:
        self.add_args.append(dict(args))
        ctx.send_update("adding…")
        return str(int(args["a"] + args["b"]))

    def wait(self, _args: dict[str, Any], ctx: HostToolContext[Any]) -> str:
        self.wait_started.set()
        if ctx.wait_cancelled(GUARD):
            self.wait_cancelled.set()
        return "too late"


@pytest.fixture(scope="module")
def pi_main() -> Iterator[tuple[Workspace, RpcClient, Recorder, HostCalls]]:
    ws = Workspace("pi", [
        SAY_HELLO,
        {"match": "run bash", "replies": [
            {"text": "Running it. ", "tool_call": {"name": "bash", "arguments": {"command": "echo hi-from-bash"}}},
            {"text": "done: {{last_tool_result}}"}]},
        ADD,
        {"match": "wait for the host", "replies": [{"tool_call": {"name": "host_wait", "arguments": {}}}, {"text": "no"}]},
        {"match": "big output", "replies": [
            {"tool_call": {"name": "bash", "arguments": {"command": "head -c 3000000 /dev/zero | tr '\\0' x"}}},
            {"text": "big done"}]},
    ])
    ext = ws.write_file("ask.mjs", ASK_EXTENSION)
    calls = HostCalls()
    tools = [
        host_tool(name="host_add", description="Add two numbers", parameters=ADD_SCHEMA, execute=calls.add),
        host_tool(name="host_wait", description="Waits until cancelled", parameters=EMPTY_SCHEMA, execute=calls.wait),
    ]
    client = start(ws, extra_args=("--extension", str(ext)), custom_tools=tools)
    yield ws, client, Recorder(client), calls
    client.stop()
    ws.close()


def test_pi_text_turn(pi_main: tuple[Workspace, RpcClient, Recorder, HostCalls]) -> None:
    ws, client, _, _ = pi_main
    before = len(ws.llm_requests())
    turn = client.prompt_and_wait("say hello", timeout=GUARD)
    assert turn.assistant_text == "Hello from the fake model"
    assert turn.agent_invoked is True
    assert turn.assistant_message is not None and turn.assistant_message["stopReason"] == "stop"
    deltas = [p["assistantMessageEvent"]["delta"] for p in of_type(turn, "message_update")
              if p["assistantMessageEvent"].get("type") == "text_delta"]
    assert deltas == ["Hello ", "from ", "the ", "fake ", "model"]
    types = [p["type"] for p in turn.event_payloads]
    # pi 0.80.4 on ends a prompt with agent_settled (the turn's outcome), after the run's end.
    if settles(client.info()):
        assert (types[0], types[-2:], turn.outcome, turn.settled) == (
            "agent_start", ["agent_end", "agent_settled"], "agent_settled", True), types
    else:
        assert (types[0], types[-1], turn.outcome, turn.settled) == ("agent_start", "agent_end", "agent_end", False)
    assert (turn.attempts, turn.failed_attempts, turn.compactions) == (1, (), ())
    reqs = ws.llm_requests()
    assert len(reqs) == before + 1
    assert reqs[-1]["messages"][-1] == {"role": "user", "content": [{"type": "text", "text": "say hello"}]}
    # pi offers the bridged host tools next to its own.
    assert {"bash", "host_add", "host_wait"} <= set(tool_names(reqs[-1])), tool_names(reqs[-1])


def test_pi_native_bash_tool(pi_main: tuple[Workspace, RpcClient, Recorder, HostCalls]) -> None:
    _, client, _, _ = pi_main
    turn = client.prompt_and_wait("please run bash", timeout=GUARD)
    start_ev = one(turn, "tool_execution_start")
    assert (start_ev["toolName"], start_ev["args"]) == ("bash", {"command": "echo hi-from-bash"})
    end = one(turn, "tool_execution_end")
    assert end["toolCallId"] == start_ev["toolCallId"]
    assert (end["isError"], result_text(end["result"])) == (False, "hi-from-bash\n")
    assert turn.assistant_text == "done: hi-from-bash\n"
    assert [m["role"] for m in turn.messages] == ["user", "assistant", "toolResult", "assistant"]


def test_pi_bridged_host_tool(pi_main: tuple[Workspace, RpcClient, Recorder, HostCalls]) -> None:
    _, client, _, calls = pi_main
    turn = client.prompt_and_wait("add numbers", timeout=GUARD)
    assert calls.add_args == [{"a": 2, "b": 3}]
    update = one(turn, "tool_execution_update")
    assert result_text(update["partialResult"]) == "adding…"
    end = one(turn, "tool_execution_end")
    assert (end["toolName"], end["isError"], result_text(end["result"])) == ("host_add", False, "5")
    assert turn.assistant_text == "sum is 5"


def test_pi_extension_ui_round_trip(pi_main: tuple[Workspace, RpcClient, Recorder, HostCalls]) -> None:
    ws, client, rec, _ = pi_main
    before = len(ws.llm_requests())
    mark = rec.mark()
    # pi answers the /ask prompt only once the command's UI request is answered.
    prompt = Background(lambda: client.prompt("/ask"))
    req = client.next_ui_request(timeout=GUARD)
    assert (req.method, req.title, req.placeholder) == ("input", "Your name?", "type it")
    time.sleep(0.3)
    assert prompt.thread.is_alive(), "pi acknowledged /ask before its UI request was answered"
    client.send_ui_value(req.id, "Alice")
    prompt.result()
    note = rec.wait("notify", lambda p: p.get("type") == "extension_ui_request" and p.get("method") == "notify", mark)
    assert (note["message"], note["notifyType"]) == ("hello Alice", "info")
    client.wait_for_idle(timeout=GUARD)
    assert len(ws.llm_requests()) == before, "a command never reaches the model"


def assert_quiet_command_completes(ws: Workspace, client: RpcClient) -> None:
    """An extension command with no work (pi: acknowledged after its handler, no run; omp:
    acknowledged at once, ended by prompt_result) completes prompt_and_wait with
    agent_invoked False, leaves the agent idle and never reaches the model."""
    before = len(ws.llm_requests())
    turn = client.prompt_and_wait("/quiet", timeout=GUARD)
    assert turn.agent_invoked is False
    assert turn.assistant_message is None
    assert not of_type(turn, "agent_start")
    client.wait_for_idle(timeout=GUARD)
    assert len(ws.llm_requests()) == before, "a command never reaches the model"


def test_pi_command_without_answer_completes(pi_main: tuple[Workspace, RpcClient, Recorder, HostCalls]) -> None:
    ws, client, _, _ = pi_main
    assert_quiet_command_completes(ws, client)


def test_pi_abort_during_host_tool(pi_main: tuple[Workspace, RpcClient, Recorder, HostCalls]) -> None:
    assert_abort_during_host_tool(*pi_main, "cancelled")


def test_pi_three_megabytes_of_tool_output(pi_main: tuple[Workspace, RpcClient, Recorder, HostCalls]) -> None:
    ws, client, _, _ = pi_main
    turn = client.prompt_and_wait("big output please", timeout=GUARD)
    end = one(turn, "tool_execution_end")
    assert (end["toolName"], end["isError"]) == ("bash", False)
    # pi cuts what it sends to 50 KiB and keeps the whole output in a file.
    text = result_text(end["result"])
    assert set(text.split("\n")[0]) == {"x"} and len(text) > 50_000, text[:200]
    truncation = end["result"]["details"]["truncation"]
    assert (truncation["truncated"], truncation["totalBytes"]) == (True, 3_000_000), truncation
    full = Path(end["result"]["details"]["fullOutputPath"])
    assert full.is_relative_to(ws.tmp) and full.stat().st_size == 3_000_000
    assert turn.assistant_text == "big done"
    assert client.protocol_errors == ()


def test_pi_typed_commands(pi_main: tuple[Workspace, RpcClient, Recorder, HostCalls]) -> None:
    """pi's own commands (its RpcClient's) through typed methods; omp protocol 1.1's are unknown."""
    _, client, _, _ = pi_main
    commands = {c["name"]: c for c in client.get_commands()["commands"]}
    assert {"ask", "quiet"} <= set(commands) and commands["ask"]["source"] == "extension", commands
    assert "say hello" in [m.text for m in client.get_fork_messages()]
    for call in (client.get_protocol_info, client.get_session_entries, client.get_available_commands):
        with pytest.raises(RpcCommandError, match="Unknown command"):
            call()


def test_pi_main_close_leaves_no_process(pi_main: tuple[Workspace, RpcClient, Recorder, HostCalls]) -> None:
    _, client, _, _ = pi_main
    assert_closes_cleanly(client)


# --- omp: one client for most of the set (with turn_idle_timeout, 4 s) --------------------
# omp's full scenario set runs here (issue 11 §3: through one binding in full, the others
# run start, text turn, host tool, close and the activity cases).

OMP_SILENT_CALLS: list[float] = []
# 375,000 numbered lines, 3,000,000 bytes.
BIG_OUTPUT = {"match": "big output", "replies": [
    {"tool_call": {"name": "bash", "arguments": {"command": "seq 1000001 1375000"}}},
    {"text": "big done"}]}
RUN_BASH = {"match": "run bash", "replies": [
    {"text": "Running it. ", "tool_call": {"name": "bash", "arguments": {"command": "echo hi-from-bash"}}},
    {"text": "done: {{last_tool_result}}"}]}
RUN_FORBIDDEN = {"match": "run forbidden", "replies": [
    {"tool_call": {"name": "bash", "arguments": {"command": "touch ran-forbidden"}}},
    {"text": "after: {{last_tool_result}}"}]}


@pytest.fixture(scope="module")
def omp() -> Iterator[tuple[Workspace, RpcClient, Recorder, HostCalls]]:
    ws = Workspace("omp", [SAY_HELLO, ADD, HANG, STEER, SLOW, FOLLOW, SILENT, RUN_BASH, BIG_OUTPUT,
                           {"match": "wait for the host", "replies": [
                               {"tool_call": {"name": "host_wait", "arguments": {}}}, {"text": "no"}]}])
    calls = HostCalls()
    # loadMode "essential": omp offers the host tools to the model directly.
    tools = [
        host_tool(name="host_add", description="Add two numbers", parameters=ADD_SCHEMA, execute=calls.add,
                  load_mode="essential"),
        host_tool(name="host_wait", description="Waits until cancelled", parameters=EMPTY_SCHEMA,
                  execute=calls.wait, load_mode="essential"),
    ]
    OMP_SILENT_CALLS.clear()
    ext = ws.write_file("ask.mjs", ASK_EXTENSION)
    client = start(ws, extra_args=("--extension", str(ext)),
                   custom_tools=[*tools, silent_host_tool(OMP_SILENT_CALLS, "essential")],
                   turn_idle_timeout=IDLE_TIMEOUT)
    yield ws, client, Recorder(client), calls
    client.stop()
    ws.close()


def test_omp_text_turn(omp: tuple[Workspace, RpcClient, Recorder, HostCalls]) -> None:
    ws, client, _, _ = omp
    info = client.info()
    assert (info["flavor"], info["agentVersion"]) == ("omp", "18.2.3")
    turn = client.prompt_and_wait("say hello", timeout=GUARD)
    assert turn.assistant_text == "Hello from the fake model"
    assert turn.agent_invoked is True
    types = [p["type"] for p in turn.event_payloads]
    assert (types[0], types[-1]) == ("agent_start", "agent_end")
    assert (turn.outcome, turn.settled, turn.attempts, turn.failed_attempts) == ("agent_end", False, 1, ())
    assert len(ws.llm_requests()) == 1


def test_omp_native_host_tool(omp: tuple[Workspace, RpcClient, Recorder, HostCalls]) -> None:
    ws, client, rec, calls = omp
    # Only this test's extension: host tools are native on omp, no bridge.
    info = client.info()
    assert (info["argv"].count("--extension"), info["bridgeLoaded"]) == (1, False), info
    mark = rec.mark()
    turn = client.prompt_and_wait("add numbers", timeout=GUARD)
    assert calls.add_args == [{"a": 2, "b": 3}]
    call = rec.wait("host_tool_call", lambda p: p.get("type") == "host_tool_call", mark)
    assert "bridged" not in call
    end = one(turn, "tool_execution_end")
    assert (end["toolName"], end["isError"], result_text(end["result"])) == ("host_add", False, "5")
    assert turn.assistant_text == "sum is 5"
    assert "host_add" in tool_names(ws.llm_requests()[-2])


def test_omp_command_without_answer_completes(omp: tuple[Workspace, RpcClient, Recorder, HostCalls]) -> None:
    ws, client, _, _ = omp
    assert_quiet_command_completes(ws, client)


def test_omp_native_bash_tool(omp: tuple[Workspace, RpcClient, Recorder, HostCalls]) -> None:
    ws, client, _, _ = omp
    turn = client.prompt_and_wait("please run bash", timeout=GUARD)
    start_ev = one(turn, "tool_execution_start")
    assert (start_ev["toolName"], start_ev["args"]) == ("bash", {"command": "echo hi-from-bash"})
    end = one(turn, "tool_execution_end")
    assert end["toolCallId"] == start_ev["toolCallId"]
    # omp appends the wall time to bash output.
    text = result_text(end["result"])
    assert end["isError"] is False and text.startswith("hi-from-bash\n") and "Wall time: " in text, text
    assert turn.assistant_text == f"done: {text}"
    assert [m["role"] for m in turn.messages] == ["user", "assistant", "toolResult", "assistant"]
    assert ws.llm_requests()[-1]["messages"][-1]["content"] == text


def test_omp_abort_during_host_tool(omp: tuple[Workspace, RpcClient, Recorder, HostCalls]) -> None:
    assert_abort_during_host_tool(*omp, 'Host tool "host_wait" was aborted')


def test_omp_three_megabytes_of_tool_output(omp: tuple[Workspace, RpcClient, Recorder, HostCalls]) -> None:
    ws, client, _, _ = omp
    turn = client.prompt_and_wait("big output please", timeout=GUARD)
    end = one(turn, "tool_execution_end")
    assert (end["toolName"], end["isError"]) == ("bash", False)
    # omp keeps the first 500 lines and the last 500 and elides the middle with a note.
    text = result_text(end["result"])
    assert text.startswith("1000001\n1000002\n"), text[:64]
    assert "1374999\n1375000\n\n\nWall time: " in text, text[-300:]
    assert "elided. Read artifact://0 for full output]" in text, text[-300:]
    assert len(text) < 64 * 1024
    truncation = end["result"]["details"]["meta"]["truncation"]
    assert (truncation["direction"], truncation["headRange"]["start"]) == ("middle", 1), truncation
    assert all(len(result_text(u["partialResult"])) < 128 * 1024 for u in of_type(turn, "tool_execution_update"))
    assert turn.assistant_text == "big done"
    assert ws.llm_requests()[-1]["messages"][-1]["content"] == text
    assert client.protocol_errors == ()


def test_omp_steer_then_abort_waits_for_the_steer_run(omp: tuple[Workspace, RpcClient, Recorder, HostCalls]) -> None:
    _, client, rec, _ = omp
    mark = rec.mark()
    client.prompt("hang please")
    rec.wait("the first text delta", lambda p: p.get("type") == "message_update"
             and p["assistantMessageEvent"].get("type") == "text_delta", mark)
    client.steer("steer me now")
    client.abort()
    # omp runs the steer by itself after the abort: idle only once that run has ended.
    client.wait_for_idle(timeout=GUARD)
    seen = rec.since(mark)
    ends = of_type(seen, "agent_end")
    assert len(ends) == 2, [p.get("type") for p in seen]
    assert ends[0]["messages"][-1]["stopReason"] == "aborted"
    assert message_text(ends[1]["messages"][-1]) == "steered ok"
    steer = [p for p in of_type(seen, "message_end") if p["message"].get("steering") is True]
    assert len(steer) == 1 and message_text(steer[0]["message"]) == "steer me now"
    assert client.get_state().is_streaming is False


def test_omp_queued_follow_up_runs_before_idle(omp: tuple[Workspace, RpcClient, Recorder, HostCalls]) -> None:
    ws, client, rec, _ = omp
    assert_follow_up_runs_before_idle(ws, client, rec)


def test_omp_silent_native_host_tool_outlasts_the_idle_timeout(omp: tuple[Workspace, RpcClient, Recorder, HostCalls]) -> None:
    ws, client, rec, _ = omp
    mark = rec.mark()
    assert_silent_host_tool_outlasts_the_idle_timeout(client, OMP_SILENT_CALLS)
    call = rec.wait("host_tool_call", lambda p: p.get("type") == "host_tool_call", mark)
    assert call["toolName"] == "host_silent" and "bridged" not in call, call


def test_omp_typed_commands(omp: tuple[Workspace, RpcClient, Recorder, HostCalls]) -> None:
    """omp's own commands through typed methods. The omp_rpc commands of protocol 1.1 (session
    entries, operations, incremental registration) are not in omp 18.2.3: "Unknown command",
    and a refused add_custom_tools keeps nothing (tests/support/OMP11-NOTES.md)."""
    _, client, _, calls = omp
    commands = {c["name"]: c for c in client.get_available_commands()["commands"]}
    assert commands["quiet"]["source"] == "extension" and commands["compact"]["source"] == "builtin", commands
    assert client.set_subagent_subscription("progress") == {"level": "progress"}
    assert client.get_subagents() == {"subagents": []}
    with pytest.raises(RpcCommandError, match="Unknown subagent"):
        client.get_subagent_messages(subagent_id="nope")
    for name, call in (("get_protocol_info", client.get_protocol_info),
                       ("get_session_entries", client.get_session_entries),
                       ("get_session_tree", client.get_session_tree),
                       ("cancel_operation", lambda: client.cancel_operation("op_x"))):
        with pytest.raises(RpcCommandError, match=f"Unknown command: {name}") as caught:
            call()
        assert caught.value.code is None and caught.value.error_info is None
    extra = host_tool(name="host_more", description="More", parameters=EMPTY_SCHEMA, execute=lambda a, c: "x",
                      load_mode="essential")
    with pytest.raises(RpcCommandError, match="Unknown command: add_host_tools"):
        client.add_custom_tools([extra])
    assert "host_more" not in {t["name"] for t in client.get_state().raw.get("dumpTools", ())}


def test_omp_close_leaves_no_process(omp: tuple[Workspace, RpcClient, Recorder, HostCalls]) -> None:
    _, client, _, _ = omp
    assert_closes_cleanly(client)


# --- omp with the policy gate (rules mode): its bash is blocked ----------------------------


def test_omp_policy_gate_blocks_bash() -> None:
    ws = Workspace("omp", [RUN_FORBIDDEN])
    try:
        client = start(ws, tool_policy={"mode": "rules", "block": {"bash": "no shell for you"}, "default": "allow"})
        try:
            rec = Recorder(client)
            info = client.info()
            assert info["bridgeLoaded"] is True, info  # the gate's extension said hello
            turn = client.prompt_and_wait("run forbidden", timeout=GUARD)
            end = one(turn, "tool_execution_end")
            assert (end["toolName"], end["isError"], result_text(end["result"])) == ("bash", True, "no shell for you")
            assert turn.assistant_text == "after: no shell for you"
            assert not (ws.work / "ran-forbidden").exists(), "the blocked command ran"
            blocked = rec.wait("tool_blocked", lambda p: p.get("type") == "tool_blocked")
            assert (blocked["toolName"], blocked["reason"]) == ("bash", "no shell for you")
            assert_closes_cleanly(client)
        finally:
            client.stop()
    finally:
        ws.close()


# --- omp's own approval gate: the UI round trip (--approval-mode always-ask) ---------------


def test_omp_approval_ui_round_trip() -> None:
    ws = Workspace("omp", [
        {"match": "approve me", "replies": [
            {"tool_call": {"name": "bash", "arguments": {"command": "echo approved-ran"}}},
            {"text": "after: {{last_tool_result}}"}]},
        {"match": "deny me", "replies": [
            {"tool_call": {"name": "bash", "arguments": {"command": "touch ran-denied"}}},
            {"text": "after: {{last_tool_result}}"}]}])
    try:
        kwargs = ws.client_kwargs()
        client = RpcClient(**{**kwargs, "core_options": {**kwargs["core_options"], "approval_mode": "always-ask"}})
        client.start()
        try:
            assert client.info()["argv"][-2:] == ["--approval-mode", "always-ask"]
            for message, command, answer in (("approve me", "echo approved-ran", "Approve"),
                                             ("deny me", "touch ran-denied", "Deny")):
                turn_call = Background(lambda m=message: client.prompt_and_wait(m, timeout=GUARD))
                req = client.next_ui_request(timeout=GUARD)
                assert (req.method, req.title, req.options) == (
                    "select", f"Allow tool: bash\nCommand: {command}", ("Approve", "Deny"))
                client.send_ui_value(req.id, answer)
                turn = turn_call.result()
                end = one(turn, "tool_execution_end")
                text = result_text(end["result"])
                if answer == "Approve":
                    assert end["isError"] is False and text.startswith("approved-ran\n"), text
                else:
                    assert (end["isError"], text) == (True, "Tool call denied by user: bash")
                assert turn.assistant_text == f"after: {text}"
            assert not (ws.work / "ran-denied").exists(), "the denied command ran"
        finally:
            client.stop()
    finally:
        ws.close()


# --- omp: the compaction handoff (a client of its own: compaction changes the session) ----


def test_omp_compaction_handoff_ends_the_turn() -> None:
    # A prompt over the compaction threshold (~150k tokens by omp's estimate > the 128k
    # window): omp schedules a "handoff" compaction, the run ends with agent_end
    # {isTerminal:false} and nothing follows; the turn still completes.
    ws = Workspace("omp", [{"match": "big", "replies": [{"text": "got it"}]}])
    try:
        client = start(ws)
        try:
            turn = client.prompt_and_wait("big " + "x" * (600 * 1024), timeout=GUARD)
            types = [p.get("type") for p in turn.event_payloads]
            assert "auto_compaction_start" in types, types
            ends = of_type(turn, "agent_end")
            assert types[-1] == "agent_end" and ends[-1]["isTerminal"] is False, types
            assert turn.assistant_text == "got it"
            client.wait_for_idle(timeout=GUARD)
        finally:
            client.stop()
    finally:
        ws.close()


# --- pi 0.99+: the gate sees MCP tool calls and codemode's inner calls ---------------------
# The fake MCP server (OMPRPC_FAKE_MCP: tools echo and secret; it logs each call it gets) in
# the agent dir's mcp.json, exposure "direct": mcp__fake__secret is declared to the model and
# callable from codemode scripts. MCP is off unless the start option says so.

# A codemode script that tries bash, then the MCP tool, and returns how each went.
MCP_CODE = """const out = [];
try { await tools.bash({command: "touch ran-inner"}); out.push("bash ran"); }
catch (e) { out.push("bash rejected: " + e.message); }
try { const r = await tools.mcp__fake__secret({}); out.push("secret: " + r.content[0].text); }
catch (e) { out.push("secret rejected: " + e.message); }
return out.join(" | ");"""
MCP_SCRIPT = [
    {"match": "secret please", "replies": [
        {"tool_call": {"name": "mcp__fake__secret", "arguments": {}}},
        {"text": "after: {{last_tool_result}}"}]},
    {"match": "script please", "replies": [
        {"tool_call": {"name": "codemode", "arguments": {"code": MCP_CODE}}},
        {"text": "after: {{last_tool_result}}"}]}]


def fake_mcp_binary() -> str:
    path = os.environ.get("OMPRPC_FAKE_MCP")
    if not path:
        pytest.skip("OMPRPC_FAKE_MCP is not set (make python-tests sets it): MCP gate tests skipped")
    assert Path(path).is_file(), f"OMPRPC_FAKE_MCP={path} does not exist"
    return path


def mcp_calls(log: Path) -> list[dict[str, Any]]:
    """The tools/call lines the fake MCP server logged."""
    if not log.exists():
        return []
    events = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return [e for e in events if e["event"] == "call"]


def version_at_least(version: str, want: tuple[int, int, int]) -> bool:
    return tuple(int(p) for p in version.split(".")[:3]) >= want


def end_of(turn: Any, tool: str) -> dict[str, Any]:
    ends = [e for e in of_type(turn, "tool_execution_end") if e["toolName"] == tool]
    assert len(ends) == 1, f"expected one tool_execution_end of {tool}: {[p.get('type') for p in turn.event_payloads]}"
    return ends[0]


def test_pi_gate_sees_mcp_and_codemode_calls() -> None:
    mcp = fake_mcp_binary()
    ws = Workspace("pi", MCP_SCRIPT)
    try:
        log = ws.root / "mcp.jsonl"
        (ws.agent_dir / "mcp.json").write_text(json.dumps({"mcpServers": {"fake": {
            "command": mcp, "args": ["--log", str(log)], "exposure": "direct"}}}))
        asked: list[PolicyEvalEvent] = []
        allow_secret = threading.Event()

        def decide(q: PolicyEvalEvent) -> tuple[bool, str | None]:
            asked.append(q)
            if q.tool_name == "codemode":
                return True, None
            if q.tool_name == "mcp__fake__secret" and allow_secret.is_set():
                return True, None
            return False, f"no {q.tool_name} here"

        client = RpcClient(**ws.client_kwargs(("--tools", "+codemode"), tool_policy={"mode": "host"},
                                              policy_handler=decide, mcp=True))
        client.start()
        try:
            version = note_agent(__name__, client.info()).split()[-1]
            if not version_at_least(version, (0, 99, 0)):
                pytest.skip(f"pi {version} has neither MCP nor codemode (0.99.0 on)")
            # A direct MCP call, blocked: the server never gets it.
            turn = client.prompt_and_wait("secret please", timeout=GUARD)
            end = end_of(turn, "mcp__fake__secret")
            assert (end["isError"], result_text(end["result"])) == (True, "no mcp__fake__secret here")
            assert [(q.tool_name, q.parent_tool_call_id) for q in asked] == [("mcp__fake__secret", None)]
            assert mcp_calls(log) == []

            # A codemode script: its bash and MCP calls are asked about, each naming the
            # codemode call as its parent; both blocked, the script sees the reasons.
            asked.clear()
            turn = client.prompt_and_wait("script please", timeout=GUARD)
            assert [q.tool_name for q in asked] == ["codemode", "bash", "mcp__fake__secret"]
            parent = asked[0].tool_call_id
            assert asked[0].parent_tool_call_id is None
            for q in asked[1:]:
                assert q.parent_tool_call_id == parent and q.tool_call_id.startswith(parent + "/"), q
            out = result_text(end_of(turn, "codemode")["result"])
            assert "bash rejected: no bash here" in out and "secret rejected: no mcp__fake__secret here" in out, out
            assert not (ws.work / "ran-inner").exists(), "the blocked inner bash ran"
            assert mcp_calls(log) == []

            # Allowed: the call reaches the server.
            allow_secret.set()
            turn = client.prompt_and_wait("secret please", timeout=GUARD)
            end = end_of(turn, "mcp__fake__secret")
            assert (end["isError"], result_text(end["result"])) == (False, "the secret is 42")
            assert mcp_calls(log) == [{"event": "call", "tool": "secret", "arguments": {}}]
            assert_closes_cleanly(client)
        finally:
            client.stop()
    finally:
        ws.close()


@pytest.mark.parametrize("pi", [PI_NEWEST, PI_PREVIOUS])
def test_pi_gate_loads_despite_no_extensions(pi: str) -> None:
    # --no-extensions keeps out what pi discovers, not the library's --extension: the gate
    # says hello (start fails without it) and blocks.
    ws = Workspace("pi", [{"match": "run forbidden", "replies": [
        {"tool_call": {"name": "bash", "arguments": {"command": "touch ran-forbidden"}}},
        {"text": "after: {{last_tool_result}}"}]}], pi=pi)
    try:
        client = RpcClient(**ws.client_kwargs(("--no-extensions",), tool_policy={
            "mode": "rules", "block": {"bash": "no shell for you"}, "default": "allow"}))
        client.start()
        try:
            info = client.info()
            note_agent(__name__, info)
            assert info["bridgeLoaded"] is True, info
            turn = client.prompt_and_wait("run forbidden", timeout=GUARD)
            end = one(turn, "tool_execution_end")
            assert (end["toolName"], end["isError"], result_text(end["result"])) == ("bash", True, "no shell for you")
            assert not (ws.work / "ran-forbidden").exists(), "the blocked command ran"
        finally:
            client.stop()
    finally:
        ws.close()
