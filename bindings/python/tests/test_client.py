"""RpcClient against the project's fake agent: commands, prompts, lifecycle, errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from omprpc import (
    AgentEndEvent,
    BashResult,
    HostToolContext,
    MessageUpdateEvent,
    PromptTurn,
    RpcClient,
    RpcClosedError,
    RpcCommandError,
    RpcConcurrencyError,
    RpcError,
    RpcProcessExitError,
    RpcTimeoutError,
    Status,
    TodoItem,
    TodoPhase,
    ToolExecutionEndEvent,
    TurnStartEvent,
    UnknownNotification,
    host_tool,
)

from conftest import agent_command, group_members


# --- command line ---------------------------------------------------------------------------


def test_command_builder_order_matches_omp_rpc() -> None:
    client = RpcClient(
        executable="omp",
        provider="anthropic",
        model="claude",
        session_dir="/tmp/sessions",
        cwd="/tmp/workspace",
        thinking="high",
        provider_session_id="provider-session-1",
        tools=("read", "edit"),
        no_session=True,
        no_skills=True,
        no_rules=True,
        extra_args=("--foo", "bar"),
    )
    assert client.command == (
        "omp", "--mode", "rpc", "--provider", "anthropic", "--model", "claude",
        "--session-dir", "/tmp/sessions", "--thinking", "high",
        "--provider-session-id", "provider-session-1", "--tools", "read,edit",
        "--no-session", "--no-skills", "--no-rules", "--no-title", "--foo", "bar",
    )


def test_command_builder_flags() -> None:
    assert RpcClient(tools=()).command == ("omp", "--mode", "rpc", "--no-tools", "--no-title")
    assert RpcClient(rpc_defaults=False).command == ("omp", "--mode", "rpc")
    assert RpcClient(rpc_defaults=False, no_title=True).command[-1] == "--no-title"
    assert RpcClient(no_title=False).command == ("omp", "--mode", "rpc")
    assert RpcClient(provider="", model="").command == ("omp", "--mode", "rpc", "--no-title")
    exact = ("python3", "-c", "print(1)")
    assert RpcClient(command=exact, model="ignored").command == exact


def test_command_keeps_the_system_prompt_but_info_redacts_it(make_client) -> None:
    client = RpcClient(append_system_prompt="extra instructions")
    assert client.command == ("omp", "--mode", "rpc", "--append-system-prompt", "extra instructions", "--no-title")
    running = make_client(extra=("--append-system-prompt", "secret"))
    assert "secret" not in running.info()["argv"]


def test_pi_flavor_defaults_its_executable() -> None:
    # pi (version unknown here: the newest) gets no project trust and no MCP by default.
    assert RpcClient(flavor="pi").command == ("pi", "--mode", "rpc", "--no-approve", "--no-mcp")
    assert RpcClient(flavor="pi", executable="/opt/pi").command == ("/opt/pi", "--mode", "rpc", "--no-approve", "--no-mcp")
    assert RpcClient(flavor="pi", trust_project=True, mcp=True).command == ("pi", "--mode", "rpc", "--approve")


def test_constructor_validation() -> None:
    with pytest.raises(ValueError, match="max_event_history"):
        RpcClient(max_event_history=0)
    with pytest.raises(ValueError, match="max_stderr_chunks"):
        RpcClient(max_stderr_chunks=-1)
    with pytest.raises(NotImplementedError):
        RpcClient(user="nobody")
    RpcClient(max_event_history=None, max_stderr_chunks=None)


def test_argv_env_and_cwd_reach_the_agent(fake_agent: str, tmp_path: Path) -> None:
    argv_file, env_file = tmp_path / "argv.json", tmp_path / "env.json"
    os.environ["OMPRPC_PY_TEST_INHERITED"] = "inherited"
    try:
        client = RpcClient(
            command=[fake_agent, "--model", "m"],
            cwd=tmp_path,
            env={"OMPRPC_FAKE_ARGV_FILE": str(argv_file), "OMPRPC_FAKE_ENV_FILE": str(env_file), "EXTRA": "x"},
            startup_timeout=10,
        )
        with client:
            state = client.get_state()
            assert state.session_id == "fake-session"
    finally:
        del os.environ["OMPRPC_PY_TEST_INHERITED"]
    assert json.loads(argv_file.read_text()) == ["--model", "m"]
    env = json.loads(env_file.read_text())
    assert env["EXTRA"] == "x"
    assert env["OMPRPC_PY_TEST_INHERITED"] == "inherited"  # merged over os.environ
    assert env.get("PWD", str(tmp_path)) in (str(tmp_path), os.environ.get("PWD"))


# --- commands ---------------------------------------------------------------------------------


def test_state_models_and_session_commands(make_client) -> None:
    client = make_client()
    state = client.get_state()
    assert state.session_id == "fake-session"
    assert state.model is not None and state.model.id == "claude-sonnet-4-5"
    assert state.model.context_window == 200000
    assert state.tokens_per_second == 7.25
    assert state.raw["sessionId"] == "fake-session"
    result = client.bash("echo hello")
    assert isinstance(result, BashResult)
    assert (result.output, result.exit_code, result.total_lines) == ("hello\n", 0, 1)
    assert client.set_model("anthropic", "claude-sonnet-4-6").id == "claude-sonnet-4-6"
    cycled = client.cycle_model()
    assert cycled is not None and cycled.model.id == "claude-sonnet-4-5" and cycled.is_scoped is False
    assert [m.id for m in client.get_available_models()] == ["claude-sonnet-4-5", "claude-sonnet-4-6"]
    client.set_thinking_level("high")
    assert client.get_state().thinking_level == "high"
    level = client.cycle_thinking_level()
    assert level is not None and level.level == "low"
    fast = client.set_fast_mode(True)
    assert (fast.enabled, fast.active) == (True, True)
    client.set_steering_mode("all")
    client.set_follow_up_mode("all")
    client.set_interrupt_mode("wait")
    client.set_auto_compaction(False)
    client.set_auto_retry(False)
    client.set_session_name("Renamed")
    state = client.get_state()
    assert (state.steering_mode, state.follow_up_mode, state.interrupt_mode) == ("all", "all", "wait")
    assert state.auto_compaction_enabled is False and state.session_name == "Renamed"
    compacted = client.compact("focus")
    assert (compacted.summary, compacted.first_kept_entry_id, compacted.tokens_before) == ("trimmed", "entry-1", 123)
    stats = client.get_session_stats()
    assert stats.session_id == "fake-session" and stats.tokens.total == 15
    assert str(client.export_html("/tmp/custom.html")) == "/tmp/custom.html"
    assert str(client.export_html()) == "/tmp/session.html"
    assert client.new_session().cancelled is False
    assert client.switch_session("/tmp/s.jsonl").cancelled is False
    assert client.branch("entry-9").text == "branch created"
    assert client.get_branch_messages()[0].entry_id == "entry-9"
    assert client.request_raw("get_available_commands") == {"commands": []}
    assert client.request_raw("handoff", customInstructions=None) == {}  # null data → {}


def test_unknown_command_raises_command_error(make_client) -> None:
    client = make_client()
    with pytest.raises(RpcCommandError) as info:
        client.request_raw("no_such_command")
    assert info.value.command == "no_such_command"
    assert info.value.error == "unsupported: no_such_command"
    assert str(info.value) == "no_such_command: unsupported: no_such_command"


def test_id_less_error_is_correlated(make_client) -> None:
    client = make_client("idless-error")
    with pytest.raises(RpcCommandError) as info:
        client.request_raw("unknown")
    assert (info.value.command, info.value.error) == ("unknown", "unsupported: unknown")


def test_todos_round_trip_and_blocked_status(make_client) -> None:
    client = make_client()
    phases = client.set_todos(["Map tools", {"content": "Wait", "status": "blocked", "blocker": "review"}])
    assert len(phases) == 1 and phases[0].name == "Todos"
    assert [t.id for t in phases[0].tasks] == ["task-1", "task-2"]
    assert phases[0].tasks[1].status == "blocked" and phases[0].tasks[1].blocker == "review"
    assert client.get_todos()[0].tasks[0].content == "Map tools"
    phases = client.set_todos([TodoPhase(id="", name="Build", tasks=(TodoItem(id="", content="compile", status="in_progress"),))])
    assert phases[0].id == "phase-1" and phases[0].tasks[0].status == "in_progress"
    assert client.clear_todos() == ()
    assert client.get_todos() == ()
    with pytest.raises(RpcError, match="Cannot mix"):
        client.set_todos(["flat", {"name": "phase", "tasks": []}])
    with pytest.raises(RpcError, match="Unsupported todo status"):
        client.set_todos([{"content": "x", "status": "someday"}])


def test_messages_and_control_commands(make_client) -> None:
    client = make_client()
    assert client.get_last_assistant_text() is None
    turn = client.prompt_and_wait("say hello", timeout=10)
    assert turn.require_assistant_text() == "pong"
    assert client.get_last_assistant_text() == "pong"
    messages = client.get_messages()
    assert len(messages) == 1 and messages[0]["role"] == "assistant"
    client.steer("nudge")
    client.follow_up("later")
    client.abort()
    client.abort_retry()
    client.abort_bash()
    rid = client.abort_and_prompt("say hello")
    assert rid.startswith("req_")
    client.wait_for_idle(timeout=10)


def test_widget_layout_frame(make_client) -> None:
    client = make_client()
    seen: list[dict] = []
    client.on_unknown_notification(lambda n: seen.append(n.payload))
    client.send_widget_layout("fake-widget", visible=True, available_width=80, visible_rows=3, hidden_blocks=["b1"])
    client.prompt_and_wait("say hello", timeout=10)  # a round trip later, the echo was dispatched
    client.stop()
    frames = [p["frame"] for p in seen if p.get("type") == "widget_layout_seen"]
    assert frames == [{"type": "widget_layout", "widgetKey": "fake-widget", "visible": True,
                       "availableWidth": 80, "visibleRows": 3, "hiddenBlocks": ["b1"]}]


def test_nul_in_message_is_refused(make_client) -> None:
    client = make_client()
    with pytest.raises(ValueError, match="NUL"):
        client.prompt("a\x00b")
    client.steer("a\x00b")  # JSON parameters carry NUL fine


def test_nan_is_refused(make_client) -> None:
    client = make_client()
    with pytest.raises(ValueError):
        client.request_raw("set_todos", phases=[{"x": float("nan")}])


# --- prompts ---------------------------------------------------------------------------------


def test_prompt_and_wait_turn(make_client) -> None:
    client = make_client()
    turn = client.prompt_and_wait("say hello")
    assert isinstance(turn, PromptTurn)
    assert turn.assistant_text == "pong" and turn.require_assistant_text() == "pong"
    assert turn.request_id is not None and turn.request_id.startswith("req_")
    assert turn.agent_invoked is True
    assert [m["role"] for m in turn.messages] == ["assistant"]
    assert turn.assistant_message is not None and turn.assistant_message["role"] == "assistant"
    types = [e.type for e in turn.events]
    assert types == ["agent_start", "turn_start", "message_start", "message_update", "message_end",
                     "turn_end", "agent_end"]
    assert isinstance(turn.events[3], MessageUpdateEvent)
    assert turn.events[3].assistant_message_event["delta"] == "pong"
    assert isinstance(turn.events[-1], AgentEndEvent)
    assert [p["type"] for p in turn.event_payloads] == types


def test_local_prompt_and_prompt_result_complete_without_agent_end(make_client) -> None:
    client = make_client()
    turn = client.prompt_and_wait("local", timeout=5)
    assert turn.agent_invoked is False and turn.assistant_text is None and turn.events == ()
    with pytest.raises(RpcError, match="without a text assistant message"):
        turn.require_assistant_text()
    turn = client.prompt_and_wait("prompt result", timeout=5)
    assert turn.agent_invoked is False
    assert turn.prompt_result is not None and turn.prompt_result["type"] == "prompt_result"
    client.wait_for_idle(timeout=5)  # nothing left running (spec §6.2)


def test_compacted_agent_end_is_rebuilt(make_client) -> None:
    client = make_client()
    turn = client.prompt_and_wait("compacted", timeout=10)
    assert [m["role"] for m in turn.messages] == ["assistant", "custom"]
    assert turn.assistant_text == "pong"


def test_thinking_is_not_assistant_text(make_client) -> None:
    turn = make_client().prompt_and_wait("thinking", timeout=10)
    assert turn.assistant_text == "visible"


def test_non_terminal_agent_end_does_not_end_the_turn(make_client) -> None:
    turn = make_client().prompt_and_wait("non-terminal", timeout=10)
    ends = [e for e in turn.events if isinstance(e, AgentEndEvent)]
    assert [e.is_terminal for e in ends] == [False, None]
    assert turn.assistant_text == "pong"


def test_collect_events_ends_at_agent_end(make_client) -> None:
    client = make_client()
    client.prompt("slow")
    events = client.collect_events(timeout=10)
    assert events[-1].type == "agent_end"
    # collection starts at the call: the pause of "slow" comes after message_update
    assert [e.type for e in events][-3:] == ["message_end", "turn_end", "agent_end"]


def test_timeout_none_means_no_deadline(make_client) -> None:
    # turn_timeout defaults to None: a turn longer than any short default still completes.
    client = make_client(request_timeout=0.1)
    turn = client.prompt_and_wait("slow", timeout=None)
    assert turn.assistant_text == "pong"


def test_turn_timeout_raises_and_client_stays_usable(make_client) -> None:
    client = make_client()
    t0 = time.monotonic()
    # The library's words (it waits for the agent to finish, not for one frame of its own).
    with pytest.raises(RpcTimeoutError, match="Timed out waiting for the agent"):
        client.prompt_and_wait("hang", timeout=0.3)
    assert time.monotonic() - t0 < 5
    assert client.get_state().session_id == "fake-session"
    default_turn = make_client(turn_timeout=0.3)
    with pytest.raises(RpcTimeoutError):
        default_turn.prompt_and_wait("hang")


def test_late_prompt_failure(make_client) -> None:
    client = make_client("late-failure")
    seen: list[str] = []
    client.on_protocol_error(lambda err: seen.append(str(err)))
    with pytest.raises(RpcCommandError) as info:
        client.prompt_and_wait("say hello", timeout=5)
    assert (info.value.command, info.value.error) == ("prompt", "late failure")
    assert len(client.protocol_errors) == 1
    err = client.protocol_errors[0]
    assert err.command == "prompt" and err.request_id is not None and err.remote_error == "late failure"
    assert "late failure" in str(err)
    client.prompt("again")
    with pytest.raises(RpcCommandError, match="late failure"):
        client.wait_for_idle(timeout=5)
    client.stop()
    assert len(seen) == 2 and "late failure" in seen[0]
    assert len(client.protocol_errors) == 2  # kept after stop


def test_late_failure_in_default_scenario(make_client) -> None:
    client = make_client()
    with pytest.raises(RpcCommandError, match="late failure"):
        client.prompt_and_wait("late failure", timeout=5)
    assert client.get_state().session_id == "fake-session"


def test_lifecycle_collectors_are_single_flight(make_client) -> None:
    # The host tool answers only once the test lets it, and the turn cannot end before: the
    # first collector surely still runs while the others are tried.
    called = threading.Event()
    release = threading.Event()

    def echo(args: dict, ctx: HostToolContext) -> str:
        called.set()
        release.wait(10)
        return "done"

    tool = host_tool(name="echo_host", description="Echo", parameters={"type": "object"}, execute=echo)
    client = make_client(custom_tools=(tool,))
    turns: list[PromptTurn] = []
    thread = threading.Thread(target=lambda: turns.append(client.prompt_and_wait("needs host tool", timeout=10)))
    thread.start()
    try:
        assert called.wait(10), "the agent's host tool call never came"
        assert client._prompt_lifecycle.active_operation == "prompt_and_wait"
        with pytest.raises(RpcConcurrencyError, match="Cannot start collect_events while prompt_and_wait"):
            client.collect_events(timeout=1)
        with pytest.raises(RpcConcurrencyError):
            client.wait_for_idle(timeout=1)
    finally:
        release.set()
        thread.join(10)
    assert len(turns) == 1 and turns[0].events[-1].type == "agent_end"
    ends = [e for e in turns[0].events if isinstance(e, ToolExecutionEndEvent)]
    assert [e.result["content"][0]["text"] for e in ends] == ["done"]
    assert client._prompt_lifecycle.active_operation is None


def test_event_history_limit(make_client) -> None:
    client = make_client(max_event_history=2)
    with pytest.raises(RpcError, match="max_event_history"):
        client.prompt_and_wait("say hello", timeout=10)
    client.wait_for_idle(timeout=5)  # the run itself goes on; the client stays usable
    assert client.prompt_and_wait("local", timeout=5).agent_invoked is False


def test_unbounded_history_and_a_burst(make_client) -> None:
    client = make_client(max_event_history=None)
    updates: list[int] = []
    client.on_message_update(lambda e: updates.append(1))
    turn = client.prompt_and_wait("burst 3000", timeout=60)
    assert turn.assistant_text == "pong"
    assert len(turn.event_payloads) == 3000 + 6
    # listeners have seen the whole turn when prompt_and_wait returns
    assert len(updates) == 3000


def test_large_frames_with_protocol_v2(make_client) -> None:
    client = make_client(v2=True)
    assert client.info()["protocolVersion"] == 2
    turn = client.prompt_and_wait("big 3000000", timeout=60)
    assert turn.assistant_text is not None and len(turn.assistant_text) == 3000000
    messages = client.get_messages()  # the v2 page walk
    assert len(messages) == 1 and len(messages[0]["content"][0]["text"]) == 3000000
    page = client.get_messages_page(limit=1)
    assert page.total_messages == 1 and page.next_cursor is None


def test_v2_negotiation_failure_falls_back(fake_agent: str) -> None:
    os.environ["OMPRPC_FAKE_V2_FAIL"] = "1"
    try:
        client = RpcClient(command=agent_command(fake_agent, v2=True), startup_timeout=10)
        with client:
            assert client.info()["protocolVersion"] == 1
            assert any("negotiation failed" in str(e) for e in client.protocol_errors)
            assert client.get_messages() == ()
    finally:
        del os.environ["OMPRPC_FAKE_V2_FAIL"]


# --- failures ------------------------------------------------------------------------------------


def test_broken_startup_frame(make_client) -> None:
    with pytest.raises(RpcError, match="Frame: 'not-json'"):
        make_client("broken-startup")


def test_early_exit_reports_exit_and_stderr(make_client) -> None:
    with pytest.raises(RpcProcessExitError, match="boom: no model configured"):
        make_client("exit-early")


def test_startup_timeout(make_client) -> None:
    t0 = time.monotonic()
    with pytest.raises(RpcTimeoutError, match="ready"):
        make_client("silent", startup_timeout=0.3)
    assert time.monotonic() - t0 < 5


def test_missing_executable(make_client, tmp_path: Path) -> None:
    client = RpcClient(command=[str(tmp_path / "no-such-agent")])
    with pytest.raises(RpcError):
        client.start()
    assert client.is_running is False


def test_crash_mid_turn(make_client) -> None:
    client = make_client()
    with pytest.raises(RpcProcessExitError, match="crashed"):
        client.prompt_and_wait("crash", timeout=10)
    with pytest.raises(RpcProcessExitError):
        client.get_state()


def test_garbage_frame_is_fatal_and_reported(make_client) -> None:
    client = make_client()
    with pytest.raises(RpcError, match="this is not json"):
        client.prompt_and_wait("garbage", timeout=10)


def test_stderr_is_bounded_and_kept_after_stop(make_client) -> None:
    client = make_client("stderr", max_stderr_chunks=1)
    client.stop()
    assert client.stderr == "second\n"
    client = make_client(max_stderr_chunks=3)
    client.prompt_and_wait("stderr 10", timeout=10)
    assert client.stderr == "stderr line 8\nstderr line 9\nstderr line 10\n"


def test_stop_during_prompt_unblocks_waiter(make_client) -> None:
    client = make_client("hanging")
    errors: list[BaseException] = []

    def run() -> None:
        try:
            client.prompt_and_wait("hang", timeout=30)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.time() + 5
    while client._prompt_lifecycle.active_operation != "prompt_and_wait" and time.time() < deadline:
        time.sleep(0.005)
    t0 = time.time()
    client.stop()
    thread.join(5)
    assert not thread.is_alive()
    assert time.time() - t0 < 2.5
    assert len(errors) == 1 and isinstance(errors[0], RpcProcessExitError)
    assert "stopped" in str(errors[0])
    client.stop()  # idempotent


def test_use_after_stop_and_restart(make_client) -> None:
    client = make_client(start=False)
    ready: list[str] = []
    client.on_ready(lambda e: ready.append(e.type))
    client.start()
    with pytest.raises(RpcError, match="already started"):
        client.start()
    client.stop()
    # omp_rpc's RpcError still catches it; the status says the host closed it.
    with pytest.raises(RpcClosedError, match="close\\(\\) stopped the agent") as closed:
        client.get_state()
    assert closed.value.status == Status.CLOSED
    with pytest.raises(RpcClosedError):
        client.next_ui_request(timeout=0)
    client.start()  # listeners are kept across restarts
    assert client.prompt_and_wait("say hello", timeout=10).assistant_text == "pong"
    client.stop()
    assert ready == ["ready", "ready"]


def test_concurrent_stop_calls(make_client) -> None:
    client = make_client()
    threads = [threading.Thread(target=client.stop) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert client.is_running is False


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover
        return True
    try:  # a zombie counts as gone
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except OSError:
        return True


def test_stop_kills_the_process_group(fake_agent: str, tmp_path: Path) -> None:
    base = tmp_path / "gc"
    os.environ["OMPRPC_FAKE_GRANDCHILD"] = str(base)
    try:
        client = RpcClient(command=agent_command(fake_agent, "grandchild"), startup_timeout=10,
                           core_options={"stop_grace_ms": 200, "kill_grace_ms": 500})
        client.start()
        pid_file = Path(str(base) + ".pid")
        deadline = time.time() + 5
        while not pid_file.exists() and time.time() < deadline:
            time.sleep(0.02)
        grandchild = int(pid_file.read_text())
        try:
            assert _pid_alive(grandchild)
            client.stop()
            deadline = time.time() + 3
            while _pid_alive(grandchild) and time.time() < deadline:
                time.sleep(0.02)
            assert not _pid_alive(grandchild)
        finally:
            try:
                os.kill(grandchild, signal.SIGKILL)
            except OSError:
                pass
    finally:
        del os.environ["OMPRPC_FAKE_GRANDCHILD"]


# The host is SIGKILLed: no close, no destructor, nothing of the library runs. The fake agent
# here sleeps 30 s after end of input and its grandchild never ends, so without the orphan
# watchdog both would outlive the host (the grandchild for good, reparented to init).
_HOST_SCRIPT = """
import sys
from omprpc import RpcClient
client = RpcClient(command=sys.argv[1:], startup_timeout=10)
client.start()
print(client.info()["pid"], flush=True)
sys.stdin.read()
"""


def test_a_killed_host_leaves_no_agent_and_no_grandchild(fake_agent: str, tmp_path: Path) -> None:
    base = tmp_path / "gc"
    env = dict(os.environ, OMPRPC_FAKE_GRANDCHILD=str(base),
               PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    agent = grandchild = -1
    with subprocess.Popen([sys.executable, "-c", _HOST_SCRIPT, *agent_command(fake_agent, "grandchild")],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True) as host:
        try:
            assert host.stdout is not None
            agent = int(host.stdout.readline())
            pid_file = Path(str(base) + ".pid")
            deadline = time.time() + 10
            while not pid_file.exists() and time.time() < deadline:
                time.sleep(0.02)
            grandchild = int(pid_file.read_text())
            assert _pid_alive(agent) and _pid_alive(grandchild)
            host.kill()
            host.wait()
            # SIGTERM to the group at once, SIGKILL 2 s later; 15 s only guards against a hang.
            deadline = time.time() + 15
            while group_members(agent, zombies=False) and time.time() < deadline:
                time.sleep(0.05)
            assert group_members(agent, zombies=False) == []
            assert not _pid_alive(agent) and not _pid_alive(grandchild)
        finally:
            host.kill()
            leftovers = [grandchild, *group_members(agent, zombies=False)] if agent > 0 else [grandchild]
            for pid in (p for p in leftovers if p > 0):  # never -1: kill(-1) signals everything
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass


def test_pi_flavor_probe_handshake(make_client) -> None:
    client = make_client(flavor="pi")
    assert client.info()["flavor"] == "pi"
    assert client.prompt_and_wait("say hello", timeout=10).assistant_text == "pong"


def test_unknown_event_types_stay_in_the_turn(make_client) -> None:
    turn = make_client().prompt_and_wait("notifications", timeout=10)
    unknown = [e for e in turn.events if isinstance(e, UnknownNotification)]
    assert [u.payload["type"] for u in unknown] == ["unknown_future_event"]


def test_many_threads_share_one_client(make_client) -> None:
    client = make_client()
    errors: list[BaseException] = []
    seen: list[int] = []

    def worker() -> None:
        try:
            for _ in range(20):
                assert client.get_state().session_id == "fake-session"
                seen.append(1)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    turn = client.prompt_and_wait("burst 2000", timeout=30)
    for t in threads:
        t.join(30)
    assert errors == [] and len(seen) == 160
    assert turn.assistant_text == "pong"


def test_ctrl_c_interrupts_a_waiting_main_thread(fake_agent: str) -> None:
    import subprocess
    import sys
    import textwrap

    from conftest import IMPORT_ROOT

    code = textwrap.dedent(f"""
        import os, signal, threading, time
        from omprpc import RpcClient
        # Ctrl-C as a terminal delivers it: a runner that started us in the background (a
        # non-interactive shell's `cmd &`) hands down SIGINT ignored, and Python keeps that.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        client = RpcClient(command=[{fake_agent!r}], startup_timeout=10)
        client.start()
        threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        t0 = time.monotonic()
        try:
            client.prompt_and_wait("hang")  # no deadline
        except KeyboardInterrupt:
            print("INTERRUPTED", round(time.monotonic() - t0, 1))
        client.stop()
        print("STOPPED")
    """)
    env = dict(os.environ, PYTHONPATH=str(IMPORT_ROOT))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert "INTERRUPTED" in out.stdout and "STOPPED" in out.stdout, out.stdout + out.stderr
