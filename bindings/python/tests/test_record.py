"""record_path: the session lands in a JSONL file that the fake agent's --replay plays back."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from conftest import REPO


def test_record_path_records_a_replayable_session(make_client, fake_agent: str, tmp_path: Path) -> None:
    rec = tmp_path / "session.jsonl"
    client = make_client(record_path=rec)
    live = client.prompt_and_wait("say hello", timeout=10)
    state = client.get_state()
    client.stop()

    lines = [json.loads(line) for line in rec.read_text().splitlines()]
    assert lines[0]["omprpc_recording"] == 1
    assert stat.S_IMODE(rec.stat().st_mode) == 0o600
    sent = [entry["frame"]["type"] for entry in lines[1:] if entry["dir"] == "out"]
    assert "prompt" in sent and "get_state" in sent

    replay = make_client(extra=("--replay", str(rec)))
    again = replay.prompt_and_wait("say hello", timeout=10)
    assert again.require_assistant_text() == live.require_assistant_text() == "pong"
    assert replay.get_state() == state


def test_committed_pi_recording_replays(make_client) -> None:
    fixture = REPO / "tests" / "fixtures" / "recordings" / "pi-text-turn.jsonl"
    # flavor="pi": no ready frame, the client probes with get_state as it did with the real pi.
    client = make_client(flavor="pi", extra=("--replay", str(fixture)))
    turn = client.prompt_and_wait("say hello", timeout=10)
    assert turn.require_assistant_text() == "Hello from the fake model"
    assert client.get_state().model.id == "fake-model"
