"""Nested tool calls: real pi 1.6.0's codemode turn (a script ran bash, which sleeps first, and
read at once; read ended first), recorded by tests/real_pi.rs and replayed by the fake agent.
Each call's summary item holds its own result; the inner ones name the codemode call, which
lists them as its children; the streaming summarizer's tool items name it too."""

from __future__ import annotations

from conftest import REPO

from omprpc import Summarizer

FIXTURE = REPO / "tests" / "fixtures" / "recordings" / "pi-1.6.0-codemode.jsonl"


def test_codemode_inner_calls_pair_and_nest(make_client) -> None:
    # --mode rpc makes the client ask the replay its --version: the recorded pi's.
    client = make_client(flavor="pi", turn_summary=True, extra=("--replay", str(FIXTURE), "--mode", "rpc"))
    turn = client.prompt_and_wait("please run codemode", timeout=10)
    assert turn.summary is not None
    rows = [(t.tool_call_id, t.tool_name, t.parent_tool_call_id, t.outcome, t.result["content"][-1]["text"], t.children)
            for t in turn.summary.tool_calls]
    assert rows == [
        ("call_fake_2", "codemode", None, "success", "inner+from-note", ("call_fake_2/1", "call_fake_2/2")),
        ("call_fake_2/1", "bash", "call_fake_2", "success", "inner\n", ()),
        ("call_fake_2/2", "read", "call_fake_2", "success", "from-note\n", ()),
    ]

    with Summarizer() as sm:
        items = [i for e in turn.event_payloads for i in sm.feed(e) if str(i["kind"]).startswith("tool_")]
        assert sm.summary().tool_calls == turn.summary.tool_calls
    for i in items:
        want = None if i["toolCallId"] == "call_fake_2" else "call_fake_2"
        assert i["parentToolCallId"] == want, i
    assert [i["toolCallId"] for i in items if i["kind"] == "tool_end"] == ["call_fake_2/2", "call_fake_2/1", "call_fake_2"]
