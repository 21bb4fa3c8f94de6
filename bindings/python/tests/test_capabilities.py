"""The library's capabilities beyond omp_rpc's surface: the tool bridge (pi's host tools), the
policy gate, turn summaries, the start options as keywords, and the helpers that need no
client (environment allow-list, prompt content, provider config). The bridge is exercised by
a test acting as the generated pi extension over its socket (and, when node is installed, by
the generated extension itself through tests/fixtures/bridge-harness.cjs)."""

from __future__ import annotations

import base64
import copy
import ctypes
import dataclasses
import json
import os
import pickle
import re
import shutil
import socket
import stat
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import omprpc
from omprpc import (
    MessageUpdateEvent,
    PolicyEvalEvent,
    RpcClient,
    RpcError,
    RpcTimeoutError,
    Summarizer,
    ToolBlockedEvent,
    TurnSummary,
    env_allowlisted,
    host_tool,
    prompt_from_content,
    provider_config,
    summarize,
)
from omprpc import _ffi, _lazy
from omprpc.protocol import to_notification

from conftest import REPO

HARNESS = REPO / "tests" / "fixtures" / "bridge-harness.cjs"
PNG_1X1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
ECHO_SCHEMA = {"type": "object", "properties": {"message": {"type": "string"}}}


# --- the bridge, seen from the extension's side -------------------------------------------------


class Extension:
    """A stand-in for the generated pi extension: connects to the client's bridge with the
    token and client id from the extension file the library generated."""

    def __init__(self, client: RpcClient):
        argv = client.info()["argv"]
        path = argv[argv.index("--extension") + 1]
        line = next(ln for ln in Path(path).read_text().splitlines() if ln.startswith("const CONFIG = "))
        self.config = json.loads(line[len("const CONFIG = "):].rstrip(";"))
        self.path = path
        if self.config.get("socket"):
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.connect(self.config["socket"])
        else:
            self.sock = socket.create_connection((self.config.get("host") or "127.0.0.1", self.config["port"]))
        self.sock.settimeout(10)
        self.reader = self.sock.makefile("rb")

    def send(self, frame: dict[str, Any]) -> None:
        frame = {**frame, "token": self.config["token"], "client": self.config["client"]}
        self.sock.sendall(json.dumps(frame).encode() + b"\n")

    def recv(self) -> dict[str, Any]:
        line = self.reader.readline()
        assert line, "the bridge closed the connection"
        return json.loads(line)

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


@pytest.fixture
def pi_client(make_client):
    """make_client on the fake agent as pi (no ready frame: the probe handshake)."""

    def factory(**kwargs: Any) -> RpcClient:
        kwargs.setdefault("core_options", {"stop_grace_ms": 300})
        return make_client(flavor="pi", **kwargs)

    return factory


def echo_tool(calls: list[Any] | None = None, *, block: threading.Event | None = None):
    def execute(args: dict[str, Any], ctx) -> str:
        if calls is not None:
            calls.append((args, ctx.tool_call_id))
        ctx.send_update(f"working on {args.get('message')}")
        if block is not None:
            ctx.wait_cancelled(10)
            return "cancelled"
        return f"echo: {args.get('message')}"

    return host_tool(name="echo_host", description="Echo", parameters=ECHO_SCHEMA, execute=execute)


@pytest.mark.parametrize("listening", [False, True])
def test_custom_tools_on_pi_are_served_through_the_bridge(pi_client, listening: bool) -> None:
    calls: list[Any] = []
    client = pi_client(custom_tools=[echo_tool(calls)])
    seen: list[Any] = []
    if listening:  # batches are then decoded whole; without listeners, line by line
        client.on_notification(seen.append)
    assert "--extension" in client.info()["argv"]
    ext = Extension(client)
    try:
        ext.send({"id": "call-1", "kind": "tool", "tool": "echo_host", "toolCallId": "toolu_1",
                  "args": {"message": "hi"}})
        update = ext.recv()
        assert update["id"] == "call-1" and update["update"]["content"][0]["text"] == "working on hi"
        result = ext.recv()
        assert result["id"] == "call-1" and result["isError"] is False
        assert result["result"]["content"][0]["text"] == "echo: hi"
        assert calls == [({"message": "hi"}, "toolu_1")]
    finally:
        ext.close()


def test_bridged_tools_are_fixed_at_start(pi_client) -> None:
    client = pi_client(custom_tools=[echo_tool()])
    with pytest.raises(RpcError, match="registered at start"):
        client.set_custom_tools([echo_tool()])
    ext = Extension(client)  # the bridged tool still works
    try:
        ext.send({"id": "f-1", "kind": "tool", "tool": "echo_host", "toolCallId": "t", "args": {"message": "ok"}})
        assert ext.recv()["id"] == "f-1"
        assert ext.recv()["result"]["content"][0]["text"] == "echo: ok"
    finally:
        ext.close()


def test_bridged_cancel_reaches_the_tool(pi_client) -> None:
    block = threading.Event()
    client = pi_client(custom_tools=[echo_tool(block=block)])
    ext = Extension(client)
    try:
        ext.send({"id": "c-1", "kind": "tool", "tool": "echo_host", "toolCallId": "t", "args": {"message": "x"}})
        assert ext.recv()["update"]["content"][0]["text"] == "working on x"
        # The host-facing id is unique per bridge connection (e.g. "bridge3:c-1").
        (call_id,) = client._session.calls  # type: ignore[union-attr]
        assert re.fullmatch(r"bridge\d+:c-1", call_id), call_id
        ext.send({"id": "c-1-cancel", "kind": "cancel", "target": "c-1"})
        # The tool saw the cancellation (wait_cancelled returned); its late result is dropped.
        deadline = time.monotonic() + 10
        while not client._session.calls == {} and time.monotonic() < deadline:  # type: ignore[union-attr]
            time.sleep(0.01)
        assert client._session.calls == {}  # type: ignore[union-attr]
    finally:
        ext.close()


def test_bridge_options_reach_the_extension(pi_client) -> None:
    client = pi_client(custom_tools=[echo_tool()], bridge_transport="tcp", host_tool_timeout=1.5)
    ext = Extension(client)
    try:
        assert ext.config["port"] > 0 and ext.config["socket"] is None
        assert ext.config["callTimeoutMs"] == 1500
        ext.send({"id": "t-1", "kind": "tool", "tool": "echo_host", "toolCallId": "t", "args": {"message": "tcp"}})
        assert ext.recv()["id"] == "t-1"
        assert ext.recv()["result"]["content"][0]["text"] == "echo: tcp"
    finally:
        ext.close()


def test_bridge_listens_on_one_address_and_advertises_another(pi_client) -> None:
    # Bound on every interface, dialled at 127.0.0.2 (a loopback address the bind covers): the
    # extension is told the advertised address, with the port the kernel picked.
    client = pi_client(custom_tools=[echo_tool()], bridge_listen="0.0.0.0:0", bridge_advertise="127.0.0.2:0")
    endpoint = client.info()["bridgeEndpoint"]
    assert endpoint["transport"] == "tcp" and endpoint["listen"].startswith("0.0.0.0:")
    port = int(endpoint["listen"].rsplit(":", 1)[1])
    assert endpoint["advertise"] == f"127.0.0.2:{port}"
    ext = Extension(client)
    try:
        assert (ext.config["host"], ext.config["port"], ext.config["socket"]) == ("127.0.0.2", port, None)
        ext.send({"id": "t-1", "kind": "tool", "tool": "echo_host", "toolCallId": "t", "args": {"message": "far"}})
        assert ext.recv()["id"] == "t-1"
        assert ext.recv()["result"]["content"][0]["text"] == "echo: far"
    finally:
        ext.close()
    with pytest.raises(RpcError, match="bridge_advertise"):
        pi_client(custom_tools=[echo_tool()], bridge_listen="0.0.0.0:0")  # nobody could dial 0.0.0.0


def test_bridge_always_and_never(make_client) -> None:
    always = make_client(custom_tools=[echo_tool()], bridge="always")  # omp, bridged anyway
    assert "--extension" in always.info()["argv"]
    never = make_client(custom_tools=[echo_tool()], bridge="never")
    assert "--extension" not in never.info()["argv"]
    with pytest.raises(ValueError):
        RpcClient(bridge="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        RpcClient(bridge_transport="udp")  # type: ignore[arg-type]


# --- the policy gate ----------------------------------------------------------------------------


def test_policy_eval_events_and_verdicts(pi_client) -> None:
    client = pi_client(tool_policy={"mode": "host", "timeout_ms": 5000})
    questions: list[PolicyEvalEvent] = []
    blocked: list[ToolBlockedEvent] = []
    asked = threading.Event()
    client.on_policy_eval(lambda q: (questions.append(q), asked.set()))
    client.on_tool_blocked(blocked.append)
    ext = Extension(client)
    try:
        ext.send({"id": "p-1", "kind": "policy_eval", "tool": "bash", "toolCallId": "tc-1", "args": {"command": "ls"}})
        assert asked.wait(10)
        q = questions[0]
        assert isinstance(q, PolicyEvalEvent) and q.type == "policy_eval"
        assert (q.tool_name, q.tool_call_id, q.arguments, q.parent_tool_call_id) == ("bash", "tc-1", {"command": "ls"}, None)
        client.policy_verdict(q.id, False, "not in tests")
        assert ext.recv()["verdict"] == {"block": True, "reason": "not in tests"}
        with pytest.raises(RpcError) as err:
            client.policy_verdict(q.id, True)  # answered already
        assert err.value.status_name == "NOT_FOUND"
        asked.clear()
        # A call another tool made (pi 0.99+: a codemode script's) names its parent.
        ext.send({"id": "p-2", "kind": "policy_eval", "tool": "read", "toolCallId": "tc-1/1", "parentToolCallId": "tc-1", "args": {}})
        assert asked.wait(10)
        assert (questions[1].tool_call_id, questions[1].parent_tool_call_id) == ("tc-1/1", "tc-1")
        client.policy_verdict(questions[1].id, True)
        assert ext.recv()["verdict"]["block"] is False
    finally:
        ext.close()
    # The block's note waits for its call's tool_execution_end: here no agent played that call
    # (this test spoke for the extension), so it comes when the client stops — not lost.
    assert not blocked
    client.stop()
    assert blocked and isinstance(blocked[0], ToolBlockedEvent)
    assert (blocked[0].tool_call_id, blocked[0].tool_name, blocked[0].reason) == ("tc-1", "bash", "not in tests")


def test_a_blocked_call_is_noted_right_before_its_end(pi_client) -> None:
    """The fake agent plays pi's gated call (tool_execution_start, the gate's question over the
    bridge, then the blocked end): the library's tool_blocked note sits right before that end."""
    client = pi_client(tool_policy={"mode": "host", "timeout_ms": 5000})
    client.set_policy_handler(lambda q: (False, "not in tests"))
    turn = client.prompt_and_wait('gated bash {"command":"ls"}', timeout=30)
    types = [e["type"] for e in turn.event_payloads]
    at = types.index("tool_blocked")
    assert types[at - 1:at + 2] == ["tool_execution_start", "tool_blocked", "tool_execution_end"], types


def test_policy_handler_answers_on_the_worker_pool(pi_client) -> None:
    threads: list[str] = []

    def decide(q: PolicyEvalEvent):
        threads.append(threading.current_thread().name)
        if q.tool_name == "read":
            return True
        if q.tool_name == "bash":
            return (False, f"no {q.tool_name} here")
        if q.tool_name == "write":
            raise RuntimeError("cannot decide")
        return "maybe"  # not a verdict: blocked

    client = pi_client(policy_handler=decide)  # no tool_policy: {"mode": "host"}
    ext = Extension(client)
    try:
        answers = {}
        for i, tool in enumerate(["read", "bash", "write", "edit"]):
            ext.send({"id": f"q-{i}", "kind": "policy_eval", "tool": tool, "toolCallId": f"t{i}", "args": {}})
            reply = ext.recv()
            answers[tool] = reply["verdict"]
    finally:
        ext.close()
    assert answers["read"]["block"] is False
    assert answers["bash"] == {"block": True, "reason": "no bash here"}
    assert answers["write"]["block"] is True and "cannot decide" in answers["write"]["reason"]
    assert answers["edit"]["block"] is True and "not a verdict" in answers["edit"]["reason"]
    assert all(name.startswith("omprpc-host") for name in threads)
    client.set_policy_handler(None)
    with pytest.raises(TypeError):
        client.set_policy_handler(42)  # type: ignore[arg-type]


def test_policy_rules_and_handler_conflict() -> None:
    with pytest.raises(ValueError):
        RpcClient(tool_policy={"mode": "rules", "allow": ["read"]}, policy_handler=lambda q: True)


def test_policy_rules_decide_in_the_library(pi_client) -> None:
    client = pi_client(tool_policy={"mode": "rules", "allow": ["read"], "block": {"bash": "no shell"}})
    ext = Extension(client)
    try:
        ext.send({"id": "r-1", "kind": "policy_eval", "tool": "bash", "toolCallId": "t", "args": {}})
        assert ext.recv()["verdict"] == {"block": True, "reason": "no shell"}
        ext.send({"id": "r-2", "kind": "policy_eval", "tool": "read", "toolCallId": "t2", "args": {}})
        assert ext.recv()["verdict"]["block"] is False
    finally:
        ext.close()


@pytest.mark.skipif(shutil.which("node") is None, reason="node runs the generated extension")
def test_generated_extension_end_to_end(pi_client) -> None:
    """The library's generated extension, loaded by node with a stand-in for pi's API: a host
    tool served by Python, and the gate answered by a policy handler."""
    client = pi_client(custom_tools=[echo_tool()],
                       policy_handler=lambda q: (False, "blocked by python") if q.tool_name == "bash" else True)
    argv = client.info()["argv"]
    ext = argv[argv.index("--extension") + 1]

    def harness(scenario: str) -> dict[str, Any]:
        out = subprocess.run(["node", str(HARNESS), ext, scenario], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    tool = harness("tool")
    assert tool["tools"] == ["echo_host"] and tool["gate"] is True
    assert tool["updates"][0]["content"][0]["text"] == "working on hello"
    assert tool["result"]["content"][0]["text"] == "echo: hello"
    gate = harness("gate")
    assert gate["bash"] == {"block": True, "reason": "blocked by python"}
    assert gate.get("read") is None and gate.get("bridged") is None  # allowed: no block (undefined)


# --- turn summaries -----------------------------------------------------------------------------


def test_turn_summary_keyword(make_client) -> None:
    client = make_client(turn_summary=True)
    turn = client.prompt_and_wait("thinking")
    s = turn.summary
    assert isinstance(s, TurnSummary)
    assert s.complete and s.final_text == "visible" and s.reasoning == "hmm" and s.text == "visible"
    assert [(c.kind, c.text) for c in s.chunks] == [("reasoning", "hmm"), ("text", "visible")]
    assert s.stop_reason == "stop" and s.stop_reasons == ()
    assert s.usage is not None and s.usage.input_tokens == 1 and s.usage.calls == 1
    assert s.raw["finalText"] == "visible"
    # The same from the events, in Python: a turn, its payloads, their JSON.
    assert summarize(turn).raw == s.raw
    assert summarize(turn.event_payloads).raw == s.raw
    assert summarize(json.dumps(list(turn.event_payloads))).raw == s.raw
    if isinstance(turn.events[0], _lazy.LazyEvent):
        assert summarize(turn.events).raw == s.raw  # lazy events carry their payload
    plain = make_client()
    assert plain.prompt_and_wait("hello").summary is None


def test_summarize_tools_and_model() -> None:
    events = [
        {"type": "tool_execution_start", "toolCallId": "t1", "toolName": "bash", "args": {"c": 1}},
        {"type": "tool_execution_end", "toolCallId": "t1", "toolName": "bash", "result": {"x": 1}},
        {"type": "tool_blocked", "toolCallId": "t2", "toolName": "rm", "reason": "nope"},
        {"type": "tool_execution_end", "toolCallId": "t2", "toolName": "rm", "result": {}, "isError": True},
        {"type": "message_end", "message": {"role": "assistant", "content": [{"type": "text", "text": "Done."}],
                                            "stopReason": "length", "usage": {"input": 10, "output": 5}}},
        {"type": "agent_end", "messages": []},
    ]
    s = summarize(events, model="configured/model")
    assert [(t.tool_call_id, t.outcome, t.reason) for t in s.tool_calls] == [("t1", "success", None),
                                                                              ("t2", "blocked", "nope")]
    assert s.stop_reasons[0].reason == "length"
    assert s.usage is not None and s.usage.model == "configured/model" and s.usage.total_tokens == 15
    assert s.message_usage[0].output_tokens == 5
    with pytest.raises(RpcError) as err:
        summarize("{}")
    assert err.value.status_name == "INVALID_JSON"
    with pytest.raises(TypeError):
        summarize([object()])


def test_streaming_summarizer_from_a_listener(make_client) -> None:
    client = make_client()
    derived: list[dict[str, Any]] = []
    with Summarizer(model="m") as summarizer:
        client.on_event_payload(lambda p: derived.extend(summarizer.feed(p)))
        turn = client.prompt_and_wait("thinking")  # returns once the listeners saw the turn
        kinds = [d["kind"] for d in derived]
        assert kinds == ["reasoning", "text", "message_end", "turn_end"], kinds
        assert {"kind": "text", "text": "visible"} in derived
        assert summarizer.summary().raw == summarize(turn, model="m").raw
        assert summarizer.summary().final_text == "visible"
        assert summarizer.feed(json.dumps({"type": "message_update"})) == []
    with pytest.raises(ValueError):
        summarizer.feed({"type": "agent_end"})  # closed
    summarizer.close()  # idempotent


# --- start options as keywords ------------------------------------------------------------------


def test_turn_idle_timeout(make_client) -> None:
    client = make_client(turn_idle_timeout=0.3)
    t0 = time.monotonic()
    with pytest.raises(RpcTimeoutError):
        client.prompt_and_wait("hang")
    assert time.monotonic() - t0 < 5
    assert client.get_state().session_id == "fake-session"  # still usable


def test_turn_events_and_byte_bounds(make_client) -> None:
    client = make_client(turn_events="no_updates", max_event_history=None, event_queue_max_bytes=1 << 20)
    turn = client.prompt_and_wait("burst 50")
    assert [e.type for e in turn.events] == ["agent_start", "turn_start", "message_start", "message_end",
                                             "turn_end", "agent_end"]
    assert turn.assistant_text == "pong"
    small = make_client(max_turn_bytes=4096, max_event_history=None)
    with pytest.raises(RpcError) as err:
        small.prompt_and_wait("burst 100")
    assert err.value.status_name == "LIMIT_EXCEEDED"
    make_client(max_turn_bytes=None, event_queue_max_bytes=None)  # None: no limit
    with pytest.raises(ValueError):
        RpcClient(turn_events="some")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        RpcClient(max_turn_bytes=0)


def test_inherit_env_allowlist_and_passthrough(fake_agent: str, tmp_path: Path) -> None:
    env_file = tmp_path / "env.json"
    os.environ["OMPRPC_PY_SECRET"] = "s3cret"
    os.environ["OMPRPC_PY_KEY"] = "k3y"
    try:
        for inherit, passthrough in (("allowlist", ["OMPRPC_PY_KEY"]), (False, ["OMPRPC_PY_KEY"]), (True, [])):
            with RpcClient(command=[fake_agent], env={"OMPRPC_FAKE_ENV_FILE": str(env_file)},
                           inherit_env=inherit, env_passthrough=passthrough, startup_timeout=10):
                pass
            env = json.loads(env_file.read_text())
            if inherit is True:
                assert env["OMPRPC_PY_SECRET"] == "s3cret"
                continue
            assert "OMPRPC_PY_SECRET" not in env
            assert env["OMPRPC_PY_KEY"] == "k3y"
            assert ("PATH" in env) == (inherit == "allowlist")
    finally:
        del os.environ["OMPRPC_PY_SECRET"], os.environ["OMPRPC_PY_KEY"]
    with pytest.raises(ValueError):
        RpcClient(inherit_env="some")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        RpcClient(env_passthrough="OMPRPC_PY_KEY")


def test_system_prompt_via_file(fake_agent: str, tmp_path: Path) -> None:
    argv_file = tmp_path / "argv.json"
    client = RpcClient(executable=fake_agent, flavor="omp", system_prompt="the secret system prompt",
                       system_prompt_via_file=True, env={"OMPRPC_FAKE_ARGV_FILE": str(argv_file)},
                       startup_timeout=10)
    with client:
        argv = json.loads(argv_file.read_text())
        assert "the secret system prompt" not in argv
        path = Path(argv[argv.index("--system-prompt") + 1])
        assert path.read_text() == "the secret system prompt"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not path.exists()  # removed at close


# --- helpers without a client ---------------------------------------------------------------


def test_env_allowlisted() -> None:
    os.environ["OMPRPC_PY_SECRET"] = "s3cret"
    try:
        env = env_allowlisted()
        assert env.get("PATH") == os.environ.get("PATH")
        assert "OMPRPC_PY_SECRET" not in env
        assert env_allowlisted(passthrough=["OMPRPC_PY_SECRET"])["OMPRPC_PY_SECRET"] == "s3cret"
    finally:
        del os.environ["OMPRPC_PY_SECRET"]
    with pytest.raises(TypeError):
        env_allowlisted("PATH")


def test_prompt_from_content(tmp_path: Path) -> None:
    png = tmp_path / "dot.png"
    png.write_bytes(PNG_1X1)
    notes = tmp_path / "notes.txt"
    notes.write_text("line one\n")
    built = prompt_from_content([
        {"type": "text", "text": "Look:"},
        {"type": "image", "path": str(png)},
        {"type": "file", "path": str(notes)},
        {"type": "image", "data_uri": "data:image/png;base64," + base64.b64encode(PNG_1X1).decode()},
    ])
    assert built["message"].startswith("Look:") and "notes.txt" in built["message"] and "line one" in built["message"]
    assert [i["mimeType"] for i in built["images"]] == ["image/png", "image/png"]
    assert built["images"][0]["data"] == base64.b64encode(PNG_1X1).decode()
    for bad in ([{"type": "video", "path": "x"}], [{"type": "image", "data_uri": "data:image/jpeg;base64,"
                                                     + base64.b64encode(PNG_1X1).decode()}]):
        with pytest.raises(RpcError) as err:
            prompt_from_content(bad)
        assert err.value.status_name == "INVALID_ARGUMENT"
    with pytest.raises(TypeError):
        prompt_from_content({"type": "text", "text": "x"})  # type: ignore[arg-type]


def test_prompts_take_content_blocks(make_client) -> None:
    client = make_client()
    # The fake agent answers the message "local" without a run: the text block became it.
    turn = client.prompt_and_wait(content=[{"type": "text", "text": "local"}])
    assert turn.agent_invoked is False
    assert client.prompt("", content=[{"type": "text", "text": "hello"}])
    client.wait_for_idle(timeout=10)
    client.steer("now", content=[{"type": "text", "text": "also this"}])
    client.follow_up(content=[{"type": "text", "text": "later"}])
    with pytest.raises(RpcError):
        client.steer("x", content=[{"type": "nope"}])
    with pytest.raises(TypeError):
        client.prompt("x", content="not blocks")  # type: ignore[arg-type]


def test_steer_content_becomes_message_and_images() -> None:
    message, images = RpcClient._with_content("first", None, [{"type": "text", "text": "second"}, {
        "type": "image", "data_uri": "data:image/png;base64," + base64.b64encode(PNG_1X1).decode()}])
    assert message == "first\n\nsecond"
    assert images is not None and images[0]["mimeType"] == "image/png"


def test_provider_config(tmp_path: Path) -> None:
    config = provider_config(
        {"local": {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKeyEnv": "LOCAL_KEY",
                   "models": [{"id": "tiny", "contextWindow": 8192}]}},
    )
    with config:
        assert config.model == "local/tiny" and config.env_passthrough == ("LOCAL_KEY",)
        assert config.file.name == "models.json" and config.file.parent == config.dir
        assert stat.S_IMODE(config.dir.stat().st_mode) == 0o700
        written = json.loads(config.file.read_text())
        assert written["providers"]["local"]["apiKey"] == "LOCAL_KEY"
        options = config.client_options(env={"A": "1"}, env_passthrough=["OTHER"])
        assert options["model"] == "local/tiny" and options["env"]["A"] == "1"
        assert options["env"]["PI_CODING_AGENT_DIR"] == str(config.dir)
        assert options["env_passthrough"] == ["OTHER", "LOCAL_KEY"]
        RpcClient(flavor="pi", **options)  # the keywords fit
    assert not config.dir.exists()
    omp = provider_config({"p": {"baseUrl": "u", "api": "a", "models": [{"id": "m"}]}}, flavor="omp",
                          dir=tmp_path, model="p/m")
    assert omp.file == tmp_path / "models.yml" and omp.model == "p/m"
    with pytest.raises(RpcError):
        provider_config({"p": {"api": "a", "models": [{"id": "m"}]}})


# --- lazily decoded turn events -----------------------------------------------------------------


def _frames() -> list[dict[str, Any]]:
    msg = {"role": "assistant", "content": [{"type": "text", "text": "a,\\nb"}], "stopReason": "stop"}
    return [
        {"type": "agent_start"},
        {"type": "message_update", "message": msg, "assistantMessageEvent": {"type": "text_delta", "delta": "a"}},
        {"message": msg, "type": "message_end"},  # "type" not first: decoded at once
        {"type": "something_new", "value": [1, {"type": "x"}]},
        {"type": "policy_eval", "id": "bridge1:q", "toolName": "bash", "toolCallId": "t", "arguments": {"c": 1}},
        {"type": "agent_end", "messages": [msg]},
    ]


def _source(frames: list[dict[str, Any]], region: bool = True) -> tuple[_lazy.EventSource, tuple[list[int], list[int]], Any]:
    """The frames as the library lends a turn's events: views (addresses, lengths, and each
    one's ``event_type``: its top-level type's text in the buffer, or 0, 0) into one buffer
    holding the JSON array; the buffer is returned to keep it alive."""
    parts = [json.dumps(f, separators=(",", ":")).encode() for f in frames]
    data = b"[" + b",\n".join(parts) + b"]"
    buf = ctypes.create_string_buffer(data)
    base = ctypes.addressof(buf)
    ptrs, tptrs, tlens, pos = [], [], [], 1
    for f, part in zip(frames, parts):
        ptrs.append(base + pos)
        ty = f.get("type")
        member = b'"type":' + json.dumps(ty).encode() if isinstance(ty, str) else None
        at = part.find(member) if member else -1
        tptrs.append(base + pos + at + len(b'"type":"') if at >= 0 else 0)
        tlens.append(len(ty.encode()) if at >= 0 else 0)
        pos += len(part) + 2
    src = _lazy.EventSource(_ffi.Owned(base, lambda _ptr: None), ptrs, [len(p) for p in parts],
                            (base, len(data)) if region else None)
    return src, (tptrs, tlens), buf


def test_lazy_events_match_eager_decoding() -> None:
    frames = _frames()
    src, types, _buf = _source(frames)
    events = _lazy.lazy_events(src, *types)
    assert len(events) == len(frames)
    eager = tuple(to_notification(f) for f in frames)
    assert [e.type for e in events] == [e.type for e in eager]
    assert isinstance(events[1], MessageUpdateEvent) and isinstance(events[1], _lazy.LazyEvent)
    assert isinstance(events[2], omprpc.MessageEndEvent) and isinstance(events[2], _lazy.LazyEvent)
    assert events == eager and eager == events
    assert hash(events[0]) == hash(eager[0])
    assert repr(events[1]) == repr(eager[1])
    assert events[1].assistant_message_event == {"type": "text_delta", "delta": "a"}
    assert events[3].payload == frames[3]
    assert isinstance(events[4], PolicyEvalEvent) and events[4].arguments == {"c": 1}
    assert type(pickle.loads(pickle.dumps(events[5]))) is omprpc.AgentEndEvent
    assert type(copy.copy(events[0])) is omprpc.AgentStartEvent
    assert copy.deepcopy(events[1]) == eager[1]
    assert dataclasses.replace(events[1], message={}).message == {}
    assert dataclasses.asdict(events[4])["tool_name"] == "bash"
    # Events of one type share one type view, as the library hands them: the same classes.
    update = frames[1]
    twice, (tptrs, tlens), _keep_twice = _source([frames[0], update, update, frames[5]])
    shared = [tptrs[0], tptrs[1], tptrs[1], tptrs[3]]
    assert [type(e) for e in _lazy.lazy_events(twice, shared, tlens)] == [type(e) for e in _lazy.lazy_events(twice, tptrs, tlens)]
    assert [e.type for e in _lazy.lazy_events(twice, shared, tlens)] == ["agent_start", "message_update", "message_update", "agent_end"]
    assert isinstance(events[3], omprpc.UnknownNotification) and isinstance(events[3], _lazy.LazyEvent)
    # The events as one array: the region's own text, or the events joined.
    assert json.loads(src.array_json()) == frames
    apart, _, _keep_apart = _source(frames, region=False)
    assert json.loads(apart.array_json()) == frames
    empty, _, _keep_empty = _source([])
    assert _lazy.lazy_events(empty, [], []) == () and empty.array_json() == b"[]"
    # An event without a type is decoded at once.
    untyped, untyped_types, _keep = _source([{"type": "agent_start"}, {"value": 1}])
    assert untyped_types == ([untyped._ptrs[0] + len('{"type":"'), 0], [len("agent_start"), 0])
    decoded = _lazy.lazy_events(untyped, *untyped_types)
    assert isinstance(decoded[0], _lazy.LazyEvent) and not isinstance(decoded[1], _lazy.LazyEvent)
    assert decoded[1] == omprpc.UnknownNotification(payload={"value": 1})


def test_lazy_event_that_does_not_parse_raises_on_access() -> None:
    src, types, _buf = _source([{"type": "agent_start"}, {"type": "message_update", "message": "not an object"}])
    events = _lazy.lazy_events(src, *types)
    assert events[1].type == "message_update"
    with pytest.raises(RpcError, match="does not parse"):
        events[1].message


def test_turn_metadata_from_the_library(make_client) -> None:
    client = make_client()
    turn = client.prompt_and_wait("say hello")
    assert turn.outcome == "agent_end" and turn.agent_invoked and turn.prompt_result is None
    assistant = turn.assistant_message
    assert assistant is not None and turn.assistant_text == "pong"
    assert turn.stop_reason == assistant.get("stopReason") == "stop" and turn.error_message is None
    assert turn.usage is not None and turn.usage == assistant.get("usage")
    assert turn.messages and turn.messages[-1] == assistant
    assert turn.request_id and turn.request_id.startswith("req_")
    payloads = turn.event_payloads
    assert [e.type for e in turn.events] == [p["type"] for p in payloads]
    assert payloads[0]["type"] == "agent_start" and payloads[-1]["type"] == "agent_end"
    local = client.prompt_and_wait("local")
    assert local.outcome == "not_invoked" and not local.agent_invoked and local.assistant_text is None
    assert local.stop_reason is None and local.usage is None and local.messages == ()
    assert local.events == () and local.event_payloads == ()
    result = client.prompt_and_wait("prompt result")
    assert result.outcome == "prompt_result" and result.prompt_result is not None
    assert result.prompt_result.get("type") == "prompt_result"
    # A turn built in Python derives the same from its assistant message.
    message = {"role": "assistant", "content": [], "stopReason": "error", "errorMessage": "boom"}
    built = omprpc.PromptTurn(messages=(message,), assistant_message=message)  # type: ignore[arg-type]
    assert (built.outcome, built.stop_reason, built.error_message, built.usage) == ("agent_end", "error", "boom", None)
    assert omprpc.PromptTurn(agent_invoked=False).outcome == "not_invoked"


def test_turn_payloads_before_events_and_after(make_client) -> None:
    client = make_client(max_event_history=None)
    first = client.prompt_and_wait("burst 300")
    payloads = first.event_payloads  # decoded in bulk; the typed events then from them
    assert len(payloads) == 306 and first.events == tuple(to_notification(p) for p in payloads)
    second = client.prompt_and_wait("burst 300")
    events = second.events  # lazy; the payloads after them
    assert events[-1].type == "agent_end" and len(second.event_payloads) == 306
    assert events == tuple(to_notification(p) for p in second.event_payloads)
    assert summarize(second).raw == summarize(second.event_payloads).raw


def test_turn_events_lazy_or_not_equal_their_payloads(make_client) -> None:
    client = make_client(max_event_history=None)
    turn = client.prompt_and_wait("all events")
    events = turn.events
    assert events == tuple(to_notification(p) for p in turn.event_payloads)
    assert turn.events is events  # built once
    big = client.prompt_and_wait("burst 2000")
    assert sum(1 for e in big.events if e.type == "message_update") == 2000
    assert isinstance(big.events[-1], omprpc.AgentEndEvent) and big.events[-1].messages
    collected_turn = client.prompt("slow")
    assert collected_turn
    assert [e.type for e in client.collect_events(timeout=10)][-1] == "agent_end"
