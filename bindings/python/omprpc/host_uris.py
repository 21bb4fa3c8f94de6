"""Host URIs: ``<scheme>://`` resources served by Python (the ``omp_rpc.host_uris`` surface)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Literal, Mapping, Sequence, TypeVar, Union

from .protocol import JsonObject

from typing import TypeAlias, TypedDict

TPayload = TypeVar("TPayload")

__all__ = [
    "HostUri",
    "HostUriContentType",
    "HostUriTrustClass",
    "HostUriContext",
    "HostUriReadHandler",
    "HostUriReadResult",
    "HostUriReadValue",
    "HostUriWriteHandler",
    "host_uri",
    "normalize_read_result",
]

HostUriContentType: TypeAlias = Literal["text/markdown", "application/json", "text/plain"]
_CONTENT_TYPES = ("text/markdown", "application/json", "text/plain")
#: How far the agent may trust what a scheme serves (omp protocol 1.1's ``trustClass``).
HostUriTrustClass: TypeAlias = Literal["host", "workspace", "user-approved", "untrusted"]


class HostUriReadResult(TypedDict, total=False):
    """What a ``read`` handler may return instead of a plain string."""

    content: str
    content_type: HostUriContentType
    notes: list[str]
    immutable: bool


HostUriReadValue: TypeAlias = Union[HostUriReadResult, str, Mapping[str, Any]]


@dataclass(slots=True)
class HostUriContext:
    """Passed to URI handlers: the URL, the operation, and cancellation. ``range``: the part
    of the resource asked for (``{"start": int, "end": int?, "unit": "byte"|"line"}``), sent by
    omp protocol 1.1 for reads of a scheme registered with ``range=True``."""

    url: str
    operation: Literal["read", "write"]
    range: dict[str, Any] | None = None
    _cancel_event: threading.Event = field(default_factory=threading.Event)

    @property
    def cancelled(self) -> bool:
        return self._cancel_event.is_set()


HostUriReadHandler: TypeAlias = Callable[[str, HostUriContext], HostUriReadValue]
HostUriWriteHandler: TypeAlias = Callable[[str, str, HostUriContext], None]


@dataclass(slots=True, frozen=True)
class HostUri(Generic[TPayload]):
    scheme: str
    read: HostUriReadHandler
    write: HostUriWriteHandler | None = None
    description: str | None = None
    immutable: bool = False
    trust_class: HostUriTrustClass = "host"
    default_timeout_ms: int | None = None
    max_content_bytes: int | None = None
    content_types: tuple[str, ...] = ()
    binary: bool = False
    range: bool = False

    @property
    def writable(self) -> bool:
        return self.write is not None

    def to_wire(self) -> JsonObject:
        """The scheme's definition as ``omp_rpc`` sends it (omp protocol 1.1 keys; an agent
        that does not know a key ignores it)."""
        entry: JsonObject = {"scheme": self.scheme, "writable": self.writable, "immutable": self.immutable,
                             "trustClass": self.trust_class}
        if self.description is not None:
            entry["description"] = self.description
        if self.default_timeout_ms is not None:
            entry["defaultTimeoutMs"] = self.default_timeout_ms
        if self.max_content_bytes is not None:
            entry["maxContentBytes"] = self.max_content_bytes
        if self.content_types:
            entry["contentTypes"] = list(self.content_types)
        if self.binary:
            entry["binary"] = True
        if self.range:
            entry["range"] = True
        return entry


def host_uri(
    *,
    scheme: str,
    read: HostUriReadHandler,
    write: HostUriWriteHandler | None = None,
    description: str | None = None,
    immutable: bool = False,
    trust_class: HostUriTrustClass = "host",
    default_timeout_ms: int | None = None,
    max_content_bytes: int | None = None,
    content_types: Sequence[str] = (),
    binary: bool = False,
    range: bool = False,
) -> HostUri[None]:
    """Builds a :class:`HostUri`; the scheme is trimmed and lower-cased (empty → ValueError).
    The metadata (``trust_class`` …) is sent with the definition (omp protocol 1.1)."""
    cleaned = (scheme or "").strip().lower()
    if not cleaned:
        raise ValueError("scheme must be a non-empty string")
    return HostUri(scheme=cleaned, read=read, write=write, description=description, immutable=immutable,
                   trust_class=trust_class, default_timeout_ms=default_timeout_ms,
                   max_content_bytes=max_content_bytes, content_types=tuple(content_types), binary=binary,
                   range=range)


def normalize_read_result(value: HostUriReadValue) -> JsonObject:
    """A ``read`` handler's value as the wire fields (``content``, ``contentType``, …)."""
    if isinstance(value, str):
        return {"content": value}
    if not isinstance(value, Mapping):
        raise TypeError("Host URI read handlers must return a string or a HostUriReadResult mapping")
    if "content" not in value:
        raise ValueError("HostUriReadResult requires a 'content' field")
    payload: JsonObject = {"content": str(value["content"])}
    content_type = value.get("content_type", value.get("contentType"))
    if content_type is not None:
        if content_type not in _CONTENT_TYPES:
            raise ValueError(f"Unsupported content_type: {content_type!r}")
        payload["contentType"] = content_type
    notes = value.get("notes")
    if notes is not None:
        payload["notes"] = [str(item) for item in notes]
    if "immutable" in value:
        payload["immutable"] = bool(value["immutable"])
    return payload
