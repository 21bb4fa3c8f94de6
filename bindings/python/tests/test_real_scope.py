"""What the agent loads and reaches beyond what the host names, through the Python binding, on
the real pi (the newest, 1.6.0, and the previous one, 0.73.1, which has no project trust and no
MCP): a repository's extension stays out by default even when a saved decision trusts the
directory, and loads with ``trust_project=True``; ``tools=["bash"]`` starts no user-level MCP
server (the project's ``omprpc-fake-mcp``, ``OMPRPC_FAKE_MCP``) and reaches none of its tools;
an option the running pi cannot honour fails start naming the version."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator

import pytest

from omprpc import RpcClient, RpcError
from real_agents_support import GUARD, PI_NEWEST, PI_PREVIOUS, Workspace, note_agent, pi_command, result_text

HELLO = {"match": "hello", "replies": [{"text": "hi"}]}
SECRET = {"match": "secret", "replies": [{"tool_call": {"name": "mcp__fake__secret", "arguments": {}}}, {"text": "done"}]}


@pytest.fixture(params=[PI_NEWEST, PI_PREVIOUS])
def workspace(request: pytest.FixtureRequest) -> Iterator[Workspace]:
    ws = Workspace("pi", [HELLO, SECRET], pi=request.param)
    try:
        yield ws
    finally:
        ws.close()


def built_kwargs(ws: Workspace, **kwargs: Any) -> dict[str, Any]:
    """Client arguments that let the library build pi's argv (``executable``: a script that runs
    the pi under test), so ``tools`` and the scope options shape it."""
    launcher = ws.root / "pi.sh"
    launcher.write_text("#!/bin/sh\nexec " + " ".join(f"'{w}'" for w in pi_command(ws.pi)) + ' "$@"\n')
    launcher.chmod(0o755)
    options = ws.client_kwargs(**kwargs)
    options.pop("command")
    return {**options, "executable": str(launcher), "model": "fake/fake-model", "no_session": True}


def repository_with_an_extension(ws: Workspace) -> Path:
    """``.pi/extensions/marker.ts`` in the working directory writes the marker when it loads; the
    agent dir's ``trust.json`` trusts the directory (pi 0.79 on follows it unless told not to)."""
    marker = ws.root / "marker-loaded"
    ext = ws.work / ".pi" / "extensions"
    ext.mkdir(parents=True)
    (ext / "marker.ts").write_text(
        'import { writeFileSync } from "node:fs";\n'
        f"export default function () {{ writeFileSync({json.dumps(str(marker))}, \"loaded\"); }}\n")
    (ws.agent_dir / "trust.json").write_text(json.dumps({str(ws.work.resolve()): True}))
    return marker


def argv(client: RpcClient) -> list[str]:
    return list(client.info()["argv"])


def test_a_repositorys_extension_stays_out_by_default(workspace: Workspace) -> None:
    marker = repository_with_an_extension(workspace)
    with RpcClient(**built_kwargs(workspace)) as client:
        agent = note_agent(__name__, client.info())
        assert client.prompt_and_wait("hello", timeout=GUARD).assistant_text == "hi"
        want = "--no-approve" if workspace.pi == PI_NEWEST else "--no-extensions"
        assert want in argv(client), (agent, argv(client))
    assert not marker.exists(), f"{agent}: the repository's extension ran in the agent"


def test_a_repositorys_extension_loads_with_trust_project(workspace: Workspace) -> None:
    marker = repository_with_an_extension(workspace)
    with RpcClient(**built_kwargs(workspace, trust_project=True)) as client:
        assert client.prompt_and_wait("hello", timeout=GUARD).assistant_text == "hi"
    assert marker.read_text() == "loaded"


def test_tools_bash_starts_no_mcp_server_and_reaches_none_of_its_tools(workspace: Workspace) -> None:
    fake_mcp = os.environ.get("OMPRPC_FAKE_MCP")
    if not fake_mcp:
        pytest.skip("OMPRPC_FAKE_MCP is not set (make python-tests sets it)")
    log = workspace.root / "mcp.jsonl"
    (workspace.agent_dir / "mcp.json").write_text(json.dumps({"mcpServers": {"fake": {
        "command": fake_mcp, "args": ["--log", str(log)], "exposure": "direct"}}}))
    with RpcClient(**built_kwargs(workspace, tools=["bash"])) as client:
        turn = client.prompt_and_wait("tell me the secret", timeout=GUARD)
        assert turn.assistant_text == "done"
        ends = [p for p in turn.event_payloads if p["type"] == "tool_execution_end"]
        assert all("the secret is 42" not in result_text(e["result"]) for e in ends), ends
    tools = [t["function"]["name"] for t in workspace.llm_requests()[0]["tools"]]
    assert tools == ["bash"]
    assert not log.exists() or log.read_text() == "", f"pi started the MCP server: {log.read_text()}"


def test_mcp_on_a_pi_without_it_is_refused_naming_the_version(workspace: Workspace) -> None:
    if workspace.pi == PI_NEWEST:
        pytest.skip("pi 1.x has MCP")
    with pytest.raises(RpcError, match=r'option "mcp" cannot be honoured by pi 0\.73\.1'):
        RpcClient(**built_kwargs(workspace, mcp=True)).start()
