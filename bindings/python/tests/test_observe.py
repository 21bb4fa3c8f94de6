"""Observability through the binding: counters(), the log channel forwarded to the
``omprpc`` logger, next_logs() polling, and that no record carries a secret."""

from __future__ import annotations

import logging

import pytest

from omprpc import RpcClient, RpcError

SECRET = "python-secret-system-prompt-5150"
API_KEY = "sk-python-test-key-abcdef123456"


def test_counters_follow_the_session(make_client) -> None:
    client = make_client()
    first = client.counters()
    assert first["frames_in"] == 1  # the ready frame
    assert first["time_to_first_event_ms"] is not None
    assert first["last_prompt_first_event_ms"] is None
    client.get_state()
    turn = client.prompt_and_wait("say hello", timeout=10)
    assert turn.assistant_text == "pong"
    k = client.counters()
    assert k["requests_sent"] == 2 and k["frames_out"] == 2 and k["responses"] == 2
    assert k["requests_pending"] == 0
    assert k["bytes_in"] > k["frames_in"] > 5
    assert k["events_dropped"] == 0
    assert k["last_prompt_first_event_ms"] >= 0
    assert k["closed"] is False
    client.stop()
    after = client.counters()  # the values read at stop
    assert after["closed"] is True
    assert after["requests_sent"] == 2


def test_logs_reach_the_logging_module_without_secrets(fake_agent, caplog) -> None:
    caplog.set_level(5, logger="omprpc")
    # The fake agent as the executable (not a command), so the system prompt is in its argv.
    client = RpcClient(executable=fake_agent, system_prompt=SECRET, env={"ANTHROPIC_API_KEY": API_KEY},
                       log_level="trace", startup_timeout=10, request_timeout=10,
                       core_options={"stop_grace_ms": 2000})
    try:
        client.start()
        client.get_state()
        client.bash("echo python-private-words")
    finally:
        client.stop()  # joins the forwarding thread: teardown's records are in
    records = [r for r in caplog.records if r.name.startswith("omprpc")]
    messages = [r.getMessage() for r in records]
    assert "agent spawned" in messages and "teardown complete" in messages, messages
    spawn = next(r for r in records if r.getMessage() == "agent spawned")
    assert spawn.name == "omprpc.spawn" and spawn.levelno == logging.INFO
    assert "<redacted>" in spawn.omprpc["argv"]  # type: ignore[attr-defined]
    sent = [r for r in records if r.getMessage() == "request sent"]
    assert [r.omprpc["type"] for r in sent] == ["get_state", "bash"]  # type: ignore[attr-defined]
    assert all(r.levelno == logging.DEBUG for r in sent)
    text = repr([r.omprpc for r in records])  # type: ignore[attr-defined]
    for secret in (SECRET, API_KEY, "python-private-words"):
        assert secret not in text


def test_next_logs_polls_when_not_forwarded(make_client) -> None:
    client = make_client(log_level="info", forward_logs=False)
    records = client.next_logs(100, timeout=5)
    assert [r["message"] for r in records] == ["agent spawned", "handshake done"]
    assert all(r["level"] == "info" and r["t_ms"] > 0 for r in records)
    assert client.next_logs(timeout=0.05) == []
    client.get_state()
    client.stop()
    # What was left at stop (info: no request records) is kept: close's and teardown's.
    left = client.next_logs(1000)
    messages = [r["message"] for r in left]
    assert messages[0] == "the client is closing" and "agent stopped" in messages, messages
    assert all(r["level"] == "info" for r in left)
    assert client.next_logs() == []


def test_logs_off_and_bad_levels() -> None:
    with pytest.raises(ValueError, match="log_level"):
        RpcClient(log_level="loud")  # type: ignore[arg-type]


def test_next_logs_without_log_level_is_refused(make_client) -> None:
    client = make_client()
    with pytest.raises(RpcError, match="log_level"):
        client.next_logs()


def test_forwarded_logs_cannot_be_polled(make_client) -> None:
    client = make_client(log_level="warn")
    with pytest.raises(RpcError, match="forward"):
        client.next_logs()
