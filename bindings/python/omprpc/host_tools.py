"""Host tools: Python functions the agent can call (the ``omp_rpc.host_tools`` surface)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Generic, Mapping, TypeVar, Union, cast

from .protocol import ImageContent, JsonObject, JsonValue, TextContent

from typing import TypeAlias, TypedDict

TParams = TypeVar("TParams")
TDetails = TypeVar("TDetails")

__all__ = ["HostTool", "HostToolContext", "HostToolResultPayload", "HostToolResultValue", "host_tool"]


class HostToolResultPayload(TypedDict, total=False):
    content: list[Union[TextContent, ImageContent]]
    details: JsonValue


#: What ``execute`` returns: text, or ``{"content": [...], "details": ...}``.
HostToolResultValue: TypeAlias = Union[HostToolResultPayload, str, Mapping[str, Any]]


def normalize_result(result: object) -> JsonObject:
    """``"text"`` → one text block; a mapping is sent as is (it needs a ``content`` list)."""
    if isinstance(result, str):
        return {"content": [{"type": "text", "text": result}]}
    if isinstance(result, Mapping):
        return dict(result)
    raise TypeError("Host tool handlers must return a string or a result mapping")


@dataclass(slots=True)
class HostToolContext(Generic[TDetails]):
    """Passed to ``execute``: the model's tool call id, cancellation, progress updates."""

    tool_call_id: str
    _cancel_event: threading.Event
    _send_update: Callable[[JsonObject], None]

    @property
    def cancelled(self) -> bool:
        """True once the agent cancelled the call or the client stopped; the result of a
        cancelled call is dropped, so long-running tools should poll this."""
        return self._cancel_event.is_set()

    def wait_cancelled(self, timeout: float | None = None) -> bool:
        """Blocks until the call is cancelled (True) or ``timeout`` passes (False)."""
        return self._cancel_event.wait(timeout)

    def send_update(self, result: HostToolResultValue) -> None:
        """Streams a partial result (``tool_execution_update`` on the agent's side).
        Does nothing once the call is cancelled."""
        if self.cancelled:
            return
        self._send_update(normalize_result(result))


@dataclass(slots=True, frozen=True)
class HostTool(Generic[TParams, TDetails]):
    name: str
    description: str
    parameters: JsonObject
    execute: Callable[[TParams, HostToolContext[TDetails]], HostToolResultValue]
    label: str | None = None
    hidden: bool = False
    decode: Callable[[JsonObject], TParams] | None = None
    load_mode: str | None = None

    def parse_params(self, payload: JsonObject) -> TParams:
        if self.decode is not None:
            return self.decode(payload)
        return cast(TParams, payload)

    def normalize_result(self, result: HostToolResultValue) -> JsonObject:
        return normalize_result(result)

    def to_wire(self) -> JsonObject:
        """The ``set_host_tools`` entry: name, label, description, parameters, hidden."""
        entry: JsonObject = {
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
            "hidden": bool(self.hidden),
        }
        if self.label is not None:
            entry["label"] = self.label
        if self.load_mode is not None:
            entry["loadMode"] = self.load_mode
        return entry


def host_tool(
    *,
    name: str,
    description: str,
    parameters: JsonObject,
    execute: Callable[[TParams, HostToolContext[TDetails]], HostToolResultValue],
    label: str | None = None,
    hidden: bool = False,
    decode: Callable[[JsonObject], TParams] | None = None,
    load_mode: str | None = None,
    **_ignored: Any,
) -> HostTool[TParams, TDetails]:
    """Builds a :class:`HostTool`. ``execute(params, ctx)`` runs on the client's bounded
    host-tool worker pool, never on the event dispatcher. Extra metadata keywords of later
    ``omp_rpc`` versions (``side_effect_class``, ``trust_class``, …) are accepted and ignored."""
    return HostTool(
        name=name,
        description=description,
        parameters=dict(parameters),
        execute=execute,
        label=label,
        hidden=hidden,
        decode=decode,
        load_mode=load_mode,
    )
