"""The commands generated from src/protocol/table.json (``omprpc._protocol_gen``): every command
of the table is a method of RpcClient, each either hand-written (``HAND_WRITTEN``, with its
reason) or generated, never both; the generated methods against the fake agent; and events
still reach the typed listeners as before."""

from __future__ import annotations

import inspect
import json
import typing
from typing import Any

import pytest

from conftest import REPO, MakeClient
from omprpc import LIBRARY_DEFAULT, AgentStartEvent, RpcClient, RpcCommandError, RpcError, parse_notification
from omprpc import _protocol_gen as gen
from omprpc._commands import _Commands

TABLE = json.loads((REPO / "src" / "protocol" / "table.json").read_text())
COMMANDS = {c["name"]: c for c in TABLE["commands"]}
NOT_LIBRARY = sorted(name for name, c in COMMANDS.items() if "library" not in c)


def defined_by(name: str) -> type:
    """The class of RpcClient's MRO whose method ``name`` RpcClient calls."""
    return next(cls for cls in RpcClient.__mro__ if name in vars(cls))


def test_every_command_of_the_table_is_a_method() -> None:
    missing = [name for name in NOT_LIBRARY if not callable(getattr(RpcClient, name, None))]
    assert missing == [], f"commands of the table without an RpcClient method: {missing}"
    # The lists partition the table: hand-written, generated, the library's own.
    assert sorted([*gen.HAND_WRITTEN, *gen.GENERATED]) == NOT_LIBRARY
    assert not set(gen.HAND_WRITTEN) & set(gen.GENERATED)
    assert sorted(gen.LIBRARY) == sorted(name for name, c in COMMANDS.items() if "library" in c)


def test_hand_written_commands_are_written_by_hand() -> None:
    for name, reason in gen.HAND_WRITTEN.items():
        assert reason, name
        assert name not in vars(gen._GeneratedCommands), f"{name} is hand-written yet generated"
        owner = defined_by(name)
        assert owner is not gen._GeneratedCommands and owner.__module__.startswith("omprpc."), (name, owner)


def test_generated_commands_are_not_shadowed() -> None:
    """A generated method RpcClient does not call (a hand-written one first in the MRO) would be
    a stale generation: such a command belongs in HAND_WRITTEN."""
    assert RpcClient.__mro__.index(gen._GeneratedCommands) > RpcClient.__mro__.index(_Commands)
    for name in gen.GENERATED:
        assert defined_by(name) is gen._GeneratedCommands, name


def test_generated_signatures_follow_the_table() -> None:
    """Required parameters positional, optional ones keyword-only defaulting to None, and the
    ``timeout=`` keyword of every typed command."""
    for name in gen.GENERATED:
        params = list(inspect.signature(getattr(RpcClient, name)).parameters.values())[1:]
        table = COMMANDS[name].get("params", [])
        required = [p for p in table if not p.get("optional")]
        assert [p.kind for p in params[:len(required)]] == [inspect.Parameter.POSITIONAL_OR_KEYWORD] * len(required)
        rest = params[len(required):]
        assert [p.kind for p in rest] == [inspect.Parameter.KEYWORD_ONLY] * len(rest), name
        assert rest[-1].name == "timeout" and rest[-1].default is LIBRARY_DEFAULT, name
        assert all(p.default is None for p in rest[:-1]), name
        assert len(params) == len(table) + 1, name


def test_the_event_and_ui_unions_name_the_table() -> None:
    events = [typing.get_type_hints(t)["type"] for t in typing.get_args(gen.ProtocolEvent)]
    assert [typing.get_args(t)[0] for t in events] == list(gen.PROTOCOL_EVENT_TYPES)
    delivered = [e["name"] for e in TABLE["events"] if "core" not in e]
    assert list(gen.PROTOCOL_EVENT_TYPES) == delivered
    methods = [typing.get_type_hints(t)["method"] for t in typing.get_args(gen.ProtocolUiRequest)]
    assert [typing.get_args(t)[0] for t in methods] == list(gen.UI_METHODS)
    assert list(gen.UI_METHODS) == [m["name"] for m in TABLE["ui_methods"]]
    # A key that is not an identifier (a keyword) is kept by the functional form.
    assert "from" in gen.RetryFallbackAppliedEvent.__annotations__


def test_pi_commands_generated(make_client: MakeClient) -> None:
    pi = make_client(flavor="pi")
    commands: gen.GetCommandsResult = pi.get_commands()
    assert commands == {"commands": [{"name": "quiet", "description": "Does nothing", "source": "extension"}]}
    # The hand-written neighbours keep omp_rpc's result classes.
    assert pi.clone().cancelled is False
    assert pi.fork("5681c403").text == "say hello"
    assert [m.text for m in pi.get_fork_messages()] == ["say hello"]
    # omp's commands on pi: refused as the real pi refuses them.
    for call in (pi.get_subagents, pi.get_available_commands, lambda: pi.set_subagent_subscription("off")):
        with pytest.raises(RpcCommandError, match="Unknown command"):
            call()


@pytest.mark.parametrize("version", ["0.73.1", "1.6.0"])
def test_a_command_newer_than_the_agent_is_refused_unsent(make_client: MakeClient, version: str) -> None:
    """clear_queue (pi 0.84.4 on, the table's ``since``) on a pi whose version the client probed
    at start (``--mode`` in the argv): 1.6.0 answers it; on 0.73.1 the library refuses it at once,
    naming the command and the version, and writes nothing."""
    pi = make_client(flavor="pi", extra=("--mode", "rpc"), env={"OMPRPC_FAKE_VERSION": version})
    assert pi.info()["agentVersion"] == version
    sent = pi.counters()["requests_sent"]
    if version == "1.6.0":
        cleared: gen.ClearQueueResult = pi.clear_queue()
        assert cleared == {"steering": [], "followUp": []}
        assert pi.counters()["requests_sent"] == sent + 1
        return
    with pytest.raises(RpcError) as refused:
        pi.clear_queue()
    assert not isinstance(refused.value, RpcCommandError)
    assert refused.value.status_name == "INVALID_ARGUMENT"
    assert "clear_queue" in str(refused.value) and "0.73.1" in str(refused.value) and "0.84.4" in str(refused.value)
    assert pi.counters()["requests_sent"] == sent
    # Nothing was left pending: the next command goes out and is answered.
    assert pi.get_commands()["commands"][0]["name"] == "quiet"


@pytest.mark.parametrize("version", ["0.73.1", "1.6.0"])
def test_a_parameter_newer_than_the_agent_is_refused_unsent(make_client: MakeClient, version: str) -> None:
    """bash's excludeFromContext (pi 0.76.0 on): an older pi would ignore it and hand the output
    to the model, so the library refuses the call there, naming the parameter and the version."""
    pi = make_client(flavor="pi", extra=("--mode", "rpc"), env={"OMPRPC_FAKE_VERSION": version})
    sent = pi.counters()["requests_sent"]
    if version == "1.6.0":
        assert pi.bash("echo hi", exclude_from_context=True).exit_code == 0
        assert pi.counters()["requests_sent"] == sent + 1
        return
    with pytest.raises(RpcError, match=r'"excludeFromContext" of command "bash" needs pi 0\.76\.0 .* pi 0\.73\.1'):
        pi.bash("echo hi", exclude_from_context=True)
    assert pi.counters()["requests_sent"] == sent
    assert pi.bash("echo hi").exit_code == 0


def test_omp_commands_generated(make_client: MakeClient) -> None:
    omp = make_client()
    assert omp.get_subagents(timeout=5) == {"subagents": []}
    assert omp.get_available_commands(timeout=None) == {"commands": []}
    level: gen.SetSubagentSubscriptionResult = omp.set_subagent_subscription("events")
    assert level == {"level": "events"}
    with pytest.raises(RpcCommandError, match="Invalid subagent subscription level") as bad:
        omp.set_subagent_subscription("loud")  # type: ignore[arg-type]
    assert bad.value.command == "set_subagent_subscription"
    # Optional parameters are sent by their JSON names (the fake echoes subagentId).
    with pytest.raises(RpcCommandError, match="Unknown subagent or session file unavailable: sub-1"):
        omp.get_subagent_messages(subagent_id="sub-1", from_byte=0)
    # A pi-only command on omp: refused, RpcCommandError naming it.
    with pytest.raises(RpcCommandError) as refused:
        omp.get_commands()
    assert refused.value.command == "get_commands"


def test_events_reach_listeners_as_before(make_client: MakeClient) -> None:
    """No behaviour change in events: typed listeners get omp_rpc's classes, on_event_payload
    the dicts the generated ProtocolEvent describes, parse_notification the same classes."""
    client = make_client(start=False)
    starts: list[AgentStartEvent] = []
    payloads: list[dict[str, Any]] = []
    client.on_agent_start(starts.append)
    client.on_event_payload(payloads.append)
    client.start()
    turn = client.prompt_and_wait("hello", timeout=10)
    assert turn.assistant_text
    assert len(starts) == 1 and isinstance(starts[0], AgentStartEvent)
    kinds = [p["type"] for p in payloads]
    assert {"agent_start", "message_update", "agent_end"} <= set(kinds), kinds
    assert set(kinds) <= set(gen.PROTOCOL_EVENT_TYPES) | {"ready"}, kinds
    first: gen.ProtocolEvent = typing.cast(gen.ProtocolEvent, payloads[kinds.index("agent_start")])
    assert isinstance(parse_notification(dict(first)), AgentStartEvent)
