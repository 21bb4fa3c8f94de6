"""Host-side helpers of the native library that need no client: the environment allow-list,
prompt content blocks, custom-provider configuration, the tool-parameter schema sanitizer and
the skills filter (docs/c-api.md)."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping, Sequence, cast

from . import _ffi
from ._ffi import lib
from .protocol import ImageContent, JsonObject

__all__ = [
    "ProviderConfig",
    "SanitizedSchema",
    "SkillsFlags",
    "env_allowlisted",
    "prompt_from_content",
    "provider_config",
    "sanitize_schema",
    "skills_flags",
]


def _names(passthrough: Iterable[str], what: str) -> list[str]:
    if isinstance(passthrough, (str, bytes)):
        raise TypeError(f"{what} must be a sequence of names, not a string")
    names = list(passthrough)
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"{what} must contain strings")
    return names


def env_allowlisted(passthrough: Iterable[str] = ()) -> dict[str, str]:
    """This process's environment through the library's allow-list: only the names a coding
    agent needs (PATH, HOME, locale, proxies, TLS, NODE_*, PI_*, XDG_* …), plus the exact
    names in ``passthrough`` (e.g. one API key). Deny by default. (To give the agent exactly
    this, start the client with ``inherit_env="allowlist"``, ``env_passthrough=…``.)"""
    names = _names(passthrough, "passthrough")
    options = _ffi.dumps({"passthrough": names}) if names else None
    env = json.loads(_ffi.call_static(lib.omprpc_env_allowlisted, options))
    return {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {}


def prompt_from_content(blocks: Sequence[Mapping[str, Any]]) -> JsonObject:
    """Content blocks → ``{"message": str, "images": [ImageContent, …]}``. Blocks:
    ``{"type": "text", "text"}``, ``{"type": "image", "path" | "data_uri"}`` (the type is
    checked from the bytes: PNG, JPEG, GIF, WebP), ``{"type": "file", "path" | "data_uri" |
    "text", "name"?}`` (UTF-8 text, inlined into the message). An unknown block type, an
    unreadable file or a mislabelled image raises ``RpcError`` (status INVALID_ARGUMENT). The
    prompt methods take the same blocks directly: ``client.prompt("…", content=blocks)``."""
    if isinstance(blocks, (str, bytes)) or isinstance(blocks, Mapping):
        raise TypeError("blocks must be a sequence of content block mappings")
    data = json.loads(_ffi.call_static(lib.omprpc_prompt_from_content, _ffi.dumps(list(blocks))))
    if not isinstance(data, dict):
        return {"message": "", "images": []}
    images = data.get("images")
    data["images"] = [cast(ImageContent, i) for i in images] if isinstance(images, list) else []
    return data


@dataclass(slots=True, frozen=True)
class ProviderConfig:
    """A custom-provider configuration written by :func:`provider_config`: ``file`` (pi:
    models.json, omp: models.yml) in the private agent directory ``dir``. Start the agent with
    :meth:`client_options` (``env``, ``env_passthrough``, ``model``), and :meth:`remove` the
    directory when done (or use the config as a context manager)."""

    dir: Path
    file: Path
    env: dict[str, str]
    model: str | None
    env_passthrough: tuple[str, ...]
    raw: JsonObject = field(compare=False, repr=False)

    def client_options(self, *, env: Mapping[str, str] | None = None,
                       env_passthrough: Iterable[str] = ()) -> dict[str, Any]:
        """Keyword arguments for :class:`~omprpc.RpcClient`: this config's environment (on top
        of ``env``), its API-key variable names (plus ``env_passthrough``) and its model."""
        merged = dict(env or {})
        merged.update(self.env)
        names = list(dict.fromkeys([*_names(env_passthrough, "env_passthrough"), *self.env_passthrough]))
        options: dict[str, Any] = {"env": merged, "env_passthrough": names}
        if self.model is not None:
            options["model"] = self.model
        return options

    def remove(self) -> None:
        """Removes the agent directory (and the config in it). Idempotent."""
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> ProviderConfig:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.remove()


def provider_config(
    providers: Mapping[str, Mapping[str, Any]],
    *,
    flavor: str = "pi",
    model: str | None = None,
    dir: str | Path | None = None,  # noqa: A002 - the library's name
) -> ProviderConfig:
    """Writes a custom-provider config for the agent (``flavor`` "pi": models.json, "omp":
    models.yml) into a new private directory (0700; or ``dir``). ``providers`` maps a provider
    name to ``{"baseUrl", "api", "apiKeyEnv" | "apiKey", "authHeader"?, "headers"?,
    "compat"?, "models": [{"id", …}]}``; name API keys by environment variable
    (``apiKeyEnv``): the agent reads the variable, nothing secret is written to disk, and the
    name is returned for ``env_passthrough``. ``model`` ("provider/id") defaults to the first
    model listed."""
    if not isinstance(providers, Mapping):
        raise TypeError("providers must be a mapping of provider name → provider settings")
    options: JsonObject = {"flavor": flavor, "providers": {str(k): dict(v) for k, v in providers.items()}}
    if model is not None:
        options["model"] = model
    if dir is not None:
        options["dir"] = str(dir)
    data = json.loads(_ffi.call_static(lib.omprpc_provider_config, _ffi.dumps(options)))
    if not isinstance(data, dict):
        raise ValueError("the library returned a provider config that is not an object")
    env = data.get("env")
    passthrough = data.get("envPassthrough")
    chosen = data.get("model")
    return ProviderConfig(
        dir=Path(str(data.get("dir"))),
        file=Path(str(data.get("file"))),
        env={str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {},
        model=chosen if isinstance(chosen, str) else None,
        env_passthrough=tuple(str(n) for n in passthrough) if isinstance(passthrough, list) else (),
        raw=data,
    )


@dataclass(slots=True, frozen=True)
class SanitizedSchema:
    """A tool-parameter schema from :func:`sanitize_schema`, and what was taken out of it:
    ``dropped`` holds ``{"path", "reason", "value"}`` for each removed keyword and each union
    branch not chosen (``path`` a JSON pointer into the input)."""

    schema: JsonObject
    dropped: tuple[JsonObject, ...]


def sanitize_schema(schema: Mapping[str, Any], *, max_nodes: int | None = None) -> SanitizedSchema:
    """A JSON Schema for tool parameters made into the shape LLM providers accept (opt-in):
    local ``$ref`` references (``#/$defs/X``, ``#/definitions/X``) inlined, their sibling keywords on
    top; ``anyOf``/``oneOf`` collapsed to the object branch, else the first non-null typed one (the
    union's own ``description`` kept); ``allOf`` of objects merged; ``examples``, ``default``,
    ``additionalProperties``, ``$schema``, ``$id``, ``$comment`` removed; descriptions kept.
    A recursive or non-local ``$ref`` raises ``RpcError`` (INVALID_ARGUMENT); an output over
    ``max_nodes`` schema nodes (default 100000) raises LIMIT_EXCEEDED. The start option
    ``core_options={"sanitize_tool_schemas": True}`` applies it to the custom tools."""
    if not isinstance(schema, Mapping):
        raise TypeError("schema must be a mapping (a JSON Schema object)")
    options = _ffi.dumps({"max_nodes": max_nodes}) if max_nodes is not None else None
    data = json.loads(_ffi.call_static(lib.omprpc_sanitize_schema, _ffi.dumps(dict(schema)), options))
    dropped = data.get("dropped") if isinstance(data, dict) else None
    return SanitizedSchema(
        schema=cast(JsonObject, data.get("schema")) if isinstance(data, dict) else {},
        dropped=tuple(cast(JsonObject, d) for d in dropped) if isinstance(dropped, list) else (),
    )


@dataclass(slots=True, frozen=True)
class SkillsFlags:
    """The argv flags that select skills for one agent (:func:`skills_flags`). ``needs_read``:
    the agent lists skills in its prompt only with the ``read`` tool on; ``tools`` is the
    allow-list given, with ``read`` added then (None when none was given)."""

    flags: tuple[str, ...]
    needs_read: bool
    tools: tuple[str, ...] | None


def skills_flags(
    skills: Literal["all", "none"] | Sequence[str],
    *,
    flavor: Literal["omp", "pi"],
    agent_version: str | None = None,
    tools: Sequence[str] | None = None,
) -> SkillsFlags:
    """The flags that select ``skills`` ("all": the agent's own discovery, "none", or a list)
    for ``flavor`` at ``agent_version`` (default: the newest supported). omp selects by name
    (glob patterns: ``--skills=``); pi from 0.50 by path (``--no-skills`` then ``--skill
    <path>`` each: an entry with a ``/``); older pi only "all" or "none" (its ``--skills``
    filters nothing). What the agent cannot express raises ``RpcError`` (INVALID_ARGUMENT). The start option ``core_options={"skills": …}`` applies
    the same to the argv the client builds."""
    if isinstance(skills, str):
        selection: Any = skills
    else:
        selection = _names(skills, "skills")
    options: JsonObject = {"flavor": flavor, "skills": selection}
    if agent_version is not None:
        options["agent_version"] = agent_version
    if tools is not None:
        options["tools"] = _names(tools, "tools")
    data = json.loads(_ffi.call_static(lib.omprpc_skills_flags, _ffi.dumps(options)))
    allow = data.get("tools")
    return SkillsFlags(
        flags=tuple(str(f) for f in data.get("flags", [])),
        needs_read=bool(data.get("needs_read")),
        tools=tuple(str(t) for t in allow) if isinstance(allow, list) else None,
    )
