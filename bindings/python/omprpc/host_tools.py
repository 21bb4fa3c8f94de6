"""Host tools: Python functions the agent can call (the ``omp_rpc.host_tools`` surface)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Generic, Mapping, TypeVar, Union, cast

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
    execute: Callable[[TParams, HostToolContext[TDetails]], HostToolResultValue | Awaitable[HostToolResultValue]]
    label: str | None = None
    hidden: bool = False
    decode: Callable[[JsonObject], TParams] | None = None
    # omp protocol 1.1's metadata (sent when set; an agent that does not know a key ignores it).
    side_effect_class: str | None = None
    trust_class: str | None = None
    display: JsonObject | None = None
    input_size_hint_bytes: int | None = None
    output_size_hint_bytes: int | None = None
    default_timeout_ms: int | None = None
    max_result_bytes: int | None = None
    max_update_bytes: int | None = None
    #: omp: "essential" offers the tool to the model directly (else it is discoverable).
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
        for key, value in (("sideEffectClass", self.side_effect_class), ("trustClass", self.trust_class),
                           ("display", self.display), ("inputSizeHintBytes", self.input_size_hint_bytes),
                           ("outputSizeHintBytes", self.output_size_hint_bytes),
                           ("defaultTimeoutMs", self.default_timeout_ms), ("maxResultBytes", self.max_result_bytes),
                           ("maxUpdateBytes", self.max_update_bytes), ("loadMode", self.load_mode)):
            if value is not None:
                entry[key] = value
        return entry


def host_tool(
    *,
    name: str,
    description: str,
    parameters: JsonObject,
    execute: Callable[[TParams, HostToolContext[TDetails]], HostToolResultValue | Awaitable[HostToolResultValue]],
    label: str | None = None,
    hidden: bool = False,
    decode: Callable[[JsonObject], TParams] | None = None,
    side_effect_class: str | None = None,
    trust_class: str | None = None,
    display: JsonObject | None = None,
    input_size_hint_bytes: int | None = None,
    output_size_hint_bytes: int | None = None,
    default_timeout_ms: int | None = None,
    max_result_bytes: int | None = None,
    max_update_bytes: int | None = None,
    load_mode: str | None = None,
) -> HostTool[TParams, TDetails]:
    """Builds a :class:`HostTool`. ``execute(params, ctx)`` runs on the client's bounded
    host-tool worker pool, never on the event dispatcher; an ``async def`` ``execute`` is for
    :class:`omprpc.aio.AsyncRpcClient`, which runs it on its event loop. The metadata (``side_effect_class``
    …) is sent with the definition (omp protocol 1.1; ``load_mode``: omp 18)."""
    return HostTool(
        name=name,
        description=description,
        parameters=dict(parameters),
        execute=execute,
        label=label,
        hidden=hidden,
        decode=decode,
        side_effect_class=side_effect_class,
        trust_class=trust_class,
        display=display,
        input_size_hint_bytes=input_size_hint_bytes,
        output_size_hint_bytes=output_size_hint_bytes,
        default_timeout_ms=default_timeout_ms,
        max_result_bytes=max_result_bytes,
        max_update_bytes=max_update_bytes,
        load_mode=load_mode,
    )
