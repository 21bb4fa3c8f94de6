"""The error table (tests/fixtures/error-table.json, issue 23 §4) through the Python API: every
row's failure caused on the fake agent, and the exception checked (its class for the status,
``status``, ``status_name`` and the core's message as ``str(exc)``), as the C, Go and Node
suites check theirs."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from omprpc import RpcClient, Status
from omprpc.errors import STATUS_CLASSES, RpcCommandError, RpcError, RpcProtocolError

TABLE = json.loads((Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "error-table.json").read_text())
ROWS = TABLE["rows"]

#: The class of each status (errors.py's table, and the two classes that carry more).
CLASSES = {**STATUS_CLASSES, Status.COMMAND_FAILED: RpcCommandError, Status.PROTOCOL: RpcProtocolError}


def test_the_table_has_its_rows() -> None:
    assert len(ROWS) >= 10


def _client(row: dict[str, Any], fake_agent: str) -> RpcClient:
    """The row's client: the fake agent with its arguments and environment, the row's options
    as core options (a "command" there replaces the fake's)."""
    return RpcClient(command=[fake_agent, *row.get("agent_args", [])], env=row.get("agent_env", {}),
                     core_options=row.get("options", {}), startup_timeout=30)


def _collect_while_prompting(client: RpcClient, message: str) -> None:
    """prompt_and_wait on another thread; once the agent streams, its prompt was sent and its
    wait holds the prompt lifecycle, and collect_events meets it. Then abort, which ends it."""
    def wait() -> None:
        try:
            client.prompt_and_wait(message, timeout=30)
        except RpcError:
            pass  # ended by the abort below; how is not the row's business

    waiter = threading.Thread(target=wait)
    waiter.start()
    try:
        for _ in range(100_000):  # a hang guard: each get_state is a round trip
            if client.request_raw("get_state").get("isStreaming"):
                break
        client.collect_events(timeout=30)
    finally:
        client.abort()
        waiter.join(30)


def _make_call(client: RpcClient, call: dict[str, Any]) -> None:
    op = call["op"]
    if op == "request_after_close":
        client.stop()
        client.request_raw(call["type"])
    elif op == "request":
        client.request_raw(call["type"], **call.get("params", {}))
    elif op == "prompt_and_wait":
        client.prompt_and_wait(call["message"], timeout=30)
    elif op == "collect_while_prompting":
        _collect_while_prompting(client, call["message"])
    else:
        raise AssertionError(f"unknown op {op} in the error table (or not offered: not_in)")


def _problems(row: dict[str, Any], exc: BaseException | None) -> list[str]:
    if not isinstance(exc, RpcError):
        return [f"got {exc!r}, want an RpcError with status {row['status']}"]
    problems = []
    status = Status(row["code"])
    if exc.status != status or exc.status_name != row["status"] or status.name != row["status"]:
        problems.append(f"status {exc.status!r} {exc.status_name}, the table says {row['code']} {row['status']}")
    if type(exc) is not CLASSES[status]:
        problems.append(f"class {type(exc).__name__}, the status's is {CLASSES[status].__name__}")
    message = str(exc)
    if "message" in row and message != row["message"]:
        problems.append(f"message {message!r}, the table says {row['message']!r}")
    if "message" not in row and not message.startswith(row["message_prefix"]):
        problems.append(f"message {message!r} does not start {row['message_prefix']!r}")
    return problems


@pytest.mark.parametrize("row", ROWS, ids=[r["name"] for r in ROWS])
def test_error_table(row: dict[str, Any], fake_agent: str) -> None:
    if "python" in row.get("not_in", {}):
        pytest.skip(row["not_in"]["python"])
    client = _client(row, fake_agent)
    exc: BaseException | None = None
    started = False
    try:
        client.start()
        started = True
        if "call" in row:
            _make_call(client, row["call"])
    except RpcError as e:
        exc = e
    finally:
        client.stop()
    if "call" in row:
        assert started, f"start failed: {exc!r}"
    problems = _problems(row, exc)
    assert problems == []
