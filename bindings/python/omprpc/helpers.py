"""Host-side helpers of the native library that need no client: the environment allow-list,
prompt content blocks, and custom-provider configuration (docs/c-api.md)."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence, cast

from . import _ffi
from ._ffi import lib
from .protocol import ImageContent, JsonObject

__all__ = ["ProviderConfig", "env_allowlisted", "prompt_from_content", "provider_config"]


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
