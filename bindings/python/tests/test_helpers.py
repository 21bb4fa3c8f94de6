"""The embedder helpers through the binding: the tool-parameter schema sanitizer
(omprpc.sanitize_schema, the sanitize_tool_schemas option) and the skills filter
(omprpc.skills_flags, the skills option)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import omprpc
from omprpc import RpcClient, RpcError, host_tool, sanitize_schema, skills_flags

#: omnigent's sys_session_send `args`: a string or a structured object (the seed's real case).
SESSION_SEND = {
    "type": "object",
    "properties": {
        "args": {
            "description": "what to send",
            "anyOf": [
                {"type": "string"},
                {
                    "type": "object",
                    "properties": {
                        "input": {"type": "string", "description": "the message"},
                        "purpose": {"type": "string", "examples": ["triage"]},
                    },
                    "required": ["input"],
                    "additionalProperties": False,
                },
            ],
        },
        "other": {"type": "integer", "default": 3},
    },
    "required": ["args"],
}

#: What pydantic writes for a model with a nested model field.
PYDANTIC = {
    "$defs": {
        "Point": {
            "description": "A point.",
            "properties": {"x": {"title": "X", "type": "number"}, "y": {"default": 0, "title": "Y", "type": "number"}},
            "required": ["x"],
            "title": "Point",
            "type": "object",
        }
    },
    "properties": {"at": {"$ref": "#/$defs/Point", "description": "Where to click."}},
    "required": ["at"],
    "title": "Click",
    "type": "object",
}


def test_unions_keep_the_object_branch_and_report_what_was_dropped() -> None:
    out = sanitize_schema(SESSION_SEND)
    assert out.schema == {
        "type": "object",
        "properties": {
            "args": {
                "description": "what to send",
                "type": "object",
                "properties": {"input": {"type": "string", "description": "the message"}, "purpose": {"type": "string"}},
                "required": ["input"],
            },
            "other": {"type": "integer"},
        },
        "required": ["args"],
    }
    dropped = {d["path"]: d for d in out.dropped}
    assert dropped["/properties/args/anyOf/0"]["value"] == {"type": "string"}
    assert "not chosen" in dropped["/properties/args/anyOf/0"]["reason"]
    assert dropped["/properties/other/default"]["value"] == 3
    assert dropped["/properties/args/anyOf/1/additionalProperties"]["value"] is False
    assert dropped["/properties/args/anyOf/1/properties/purpose/examples"]["value"] == ["triage"]
    # The input is left as it was.
    assert SESSION_SEND["properties"]["args"]["anyOf"][1]["additionalProperties"] is False


def test_local_refs_are_inlined_not_dropped() -> None:
    out = sanitize_schema(PYDANTIC)
    at = out.schema["properties"]["at"]
    assert at["description"] == "Where to click."  # the $ref's sibling wins over the target's
    assert at["properties"] == {"x": {"title": "X", "type": "number"}, "y": {"title": "Y", "type": "number"}}
    assert at["required"] == ["x"]
    assert "$defs" not in out.schema and "$ref" not in json.dumps(out.schema)


def test_what_cannot_be_sanitized_is_a_clear_error() -> None:
    tree = {"$defs": {"Node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}},
            "$ref": "#/$defs/Node"}
    with pytest.raises(RpcError, match="recursive") as err:
        sanitize_schema(tree)
    assert err.value.status_name == "INVALID_ARGUMENT"
    with pytest.raises(RpcError, match="only local"):
        sanitize_schema({"properties": {"a": {"$ref": "other.json#/x"}}})
    with pytest.raises(RpcError) as err:
        sanitize_schema(SESSION_SEND, max_nodes=2)
    assert err.value.status_name == "LIMIT_EXCEEDED"
    with pytest.raises(TypeError):
        sanitize_schema("hello")  # type: ignore[arg-type]


def test_skills_flags_per_agent_and_version() -> None:
    assert skills_flags("none", flavor="pi").flags == ("--no-skills",)
    got = skills_flags(["/opt/skills/alpha"], flavor="pi", agent_version="0.73.1", tools=["echo"])
    assert got.flags == ("--no-skills", "--skill", "/opt/skills/alpha")
    assert got.needs_read and got.tools == ("echo", "read")
    assert skills_flags(["git-*", "docker"], flavor="omp").flags == ("--skills=git-*,docker",)
    assert skills_flags("none", flavor="pi", agent_version="0.37.2").flags == ("--no-skills",)
    assert skills_flags("all", flavor="pi", tools=["read"]).tools == ("read",)
    assert skills_flags("all", flavor="omp").tools is None
    with pytest.raises(RpcError, match="by path") as err:
        skills_flags(["alpha"], flavor="pi", agent_version="0.73.1")
    assert err.value.status_name == "INVALID_ARGUMENT"
    with pytest.raises(RpcError, match="cannot load a subset"):
        skills_flags(["alpha"], flavor="pi", agent_version="0.37.2")
    with pytest.raises(RpcError, match="no --skill <path>"):
        skills_flags(["/opt/skills/alpha"], flavor="omp")
    with pytest.raises(RpcError, match='"all", "none" or an array'):
        skills_flags("alpha,beta", flavor="omp")  # type: ignore[arg-type]
    with pytest.raises(RpcError, match="flavor"):
        skills_flags("all", flavor="vim")  # type: ignore[arg-type]


def test_the_skills_option_shapes_the_argv() -> None:
    client = RpcClient(executable="pi", flavor="pi", tools=["bash"], skills=["./skills/alpha"], no_session=True)
    assert client.command == ("pi", "--mode", "rpc", "--tools", "bash,read", "--no-session", "--no-skills", "--skill",
                              "./skills/alpha", "--no-approve", "--no-mcp")
    with pytest.raises(RpcError, match="contradict"):
        _ = RpcClient(executable="omp", skills=["a"], no_skills=True).command


def test_sanitize_tool_schemas_reaches_the_agent(make_client, tmp_path: Path) -> None:
    rec = tmp_path / "session.jsonl"
    tool = host_tool(name="click", description="Click", parameters=PYDANTIC, execute=lambda args, ctx: "ok")
    client = make_client(custom_tools=[tool], sanitize_tool_schemas=True, record_path=rec)
    client.stop()
    frames = [json.loads(line) for line in rec.read_text().splitlines()[1:]]
    sent: list[Any] = [f["frame"] for f in frames if f["dir"] == "out" and f["frame"].get("type") == "set_host_tools"]
    assert len(sent) == 1
    assert sent[0]["tools"][0]["parameters"] == sanitize_schema(PYDANTIC).schema


def test_a_recursive_tool_schema_fails_start() -> None:
    tool = host_tool(name="tree", description="Tree", parameters={"properties": {"me": {"$ref": "#"}}},
                     execute=lambda args, ctx: "ok")
    client = RpcClient(command=["true"], custom_tools=[tool], sanitize_tool_schemas=True)
    with pytest.raises(RpcError, match='host tool "tree": the schema is recursive'):
        client.start()
    assert omprpc.sanitize_schema({"type": "object"}).dropped == ()
