"""The base of RpcClient's mixins (``_events``, ``_ui``, ``_host``, ``_commands``, ``_prompts``):
the client state and request plumbing they use, declared for the type checker only. RpcClient
(``client.py``) sets the state in ``__init__`` and defines the methods."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable, Mapping, TypeVar

from ._common import LIBRARY_DEFAULT
from .protocol import JsonObject

if TYPE_CHECKING:
    from ._events import PolicyHandler, _Listeners
    from ._session import _Session
    from .host_tools import HostTool
    from .host_uris import HostUri

_T = TypeVar("_T")


class _ClientBase:
    """Annotations only: at run time this class adds nothing to RpcClient."""

    _session: _Session | None
    _listeners: _Listeners
    _lifecycle_lock: threading.RLock
    _headless: list[tuple[object, JsonObject]]
    _custom_tools: tuple[HostTool[Any, Any], ...]
    _host_uris: tuple[HostUri[Any], ...]
    _policy_handler: PolicyHandler | None

    if TYPE_CHECKING:
        # Under TYPE_CHECKING so that no stub shadows RpcClient's own definition at run time.
        def _require(self) -> _Session: ...

        @staticmethod
        def _synced(session: _Session, call: Callable[[], _T]) -> _T: ...

        def _request_data(self, command_type: str, payload: Mapping[str, Any] | None = None, *,
                          _timeout: float | None = LIBRARY_DEFAULT) -> Any: ...

        def _request(self, command_type: str, _timeout: float | None = LIBRARY_DEFAULT,
                     **payload: Any) -> JsonObject: ...

        def _listed(self, command: str, key: str, timeout: float | None) -> tuple[JsonObject, ...]: ...
