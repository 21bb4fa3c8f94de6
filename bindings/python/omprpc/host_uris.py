"""Host URIs: ``<scheme>://`` resources served by Python (the ``omp_rpc.host_uris`` surface)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Literal, Mapping, TypeVar, Union

from .protocol import JsonObject

from typing import TypeAlias, TypedDict

TPayload = TypeVar("TPayload")

__all__ = [
    "HostUri",
    "HostUriContentType",
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


class HostUriReadResult(TypedDict, total=False):
    """What a ``read`` handler may return instead of a plain string."""

    content: str
    content_type: HostUriContentType
    notes: list[str]
    immutable: bool


HostUriReadValue: TypeAlias = Union[HostUriReadResult, str, Mapping[str, Any]]


@dataclass(slots=True)
class HostUriContext:
    """Passed to URI handlers: the URL, the operation, and cancellation."""

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

    @property
    def writable(self) -> bool:
        return self.write is not None

    def to_wire(self) -> JsonObject:
        entry: JsonObject = {"scheme": self.scheme, "writable": self.writable, "immutable": self.immutable}
        if self.description is not None:
            entry["description"] = self.description
        return entry


def host_uri(
    *,
    scheme: str,
    read: HostUriReadHandler,
    write: HostUriWriteHandler | None = None,
    description: str | None = None,
    immutable: bool = False,
    **_ignored: Any,
) -> HostUri[None]:
    """Builds a :class:`HostUri`; the scheme is trimmed and lower-cased (empty → ValueError).
    Extra metadata keywords of later ``omp_rpc`` versions are accepted and ignored."""
    cleaned = (scheme or "").strip().lower()
    if not cleaned:
        raise ValueError("scheme must be a non-empty string")
    return HostUri(scheme=cleaned, read=read, write=write, description=description, immutable=immutable)


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
