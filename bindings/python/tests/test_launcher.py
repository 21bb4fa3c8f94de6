"""launcher=: the agent runs behind an argv prefix (a wrapper script, bwrap). The fake agent as
omp, its host tool answered by a Python handler across the launcher; close leaves nothing of
the launcher's process group. What close means through each launcher: docs/launcher.md."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from omprpc import RpcClient, RpcError, host_tool

from conftest import group_members

ECHO_SCHEMA = {"type": "object", "properties": {"message": {"type": "string"}}}


def wait_group_gone(pgid: int) -> list[int]:
    deadline = time.monotonic() + 10  # only to catch a hang
    while group_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return group_members(pgid)


def echo_tool() -> Any:
    return host_tool(name="echo_host", description="Echo", parameters=ECHO_SCHEMA,
                     execute=lambda args, ctx: f"echo: {args.get('message')}")


def test_a_wrapper_launcher_runs_the_agent_and_its_host_tool(make_client, tmp_path: Path) -> None:
    log = tmp_path / "launcher.log"
    wrapper = tmp_path / "wrap"
    # Records its words, then runs them as its child: the launcher stays the group's leader.
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\n"$@"\n')
    wrapper.chmod(0o755)
    client = make_client(launcher=[str(wrapper)], custom_tools=[echo_tool()])
    info = client.info()
    assert info["launcher"] == [str(wrapper)]
    assert info["argv"][0] == str(wrapper) and info["flavor"] == "omp"
    turn = client.prompt_and_wait("needs host tool", timeout=10)
    end = [e for e in turn.events if e.type == "tool_execution_end"]
    assert [e.result["content"][0]["text"] for e in end] == ["echo: hello"]
    assert log.read_text().splitlines() == [" ".join(info["argv"][1:])]
    pid = info["pid"]
    # The wrapper, the agent it runs as a child, and the library's orphan watchdog (a /bin/sh
    # that ends the group if this process dies without closing).
    programs = sorted(Path("/proc", str(p), "cmdline").read_bytes().split(b"\0")[0].decode() for p in group_members(pid))
    assert len(programs) == 3 and "/bin/sh" in programs, programs
    client.stop()
    assert wait_group_gone(pid) == []


def test_bwrap_launcher(make_client) -> None:
    # bwrap: the Debian package bubblewrap, which .ci/run installs.
    client = make_client(launcher=["bwrap", "--dev-bind", "/", "/", "--unshare-pid", "--die-with-parent", "--"])
    assert client.prompt_and_wait("hello", timeout=10).require_assistant_text() == "pong"
    pid = client.info()["pid"]
    client.stop()
    assert wait_group_gone(pid) == []


def test_bad_launchers_are_refused_clearly(make_client) -> None:
    with pytest.raises(TypeError, match="sequence of argv words"):
        RpcClient(command=["x"], launcher="bwrap")
    with pytest.raises(RpcError, match="non-empty array of non-empty strings"):
        make_client(launcher=[])
    with pytest.raises(RpcError, match="not found"):
        make_client(launcher=["no-such-launcher-omprpc"])
