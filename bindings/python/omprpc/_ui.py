"""RpcClient's UI methods (a mixin): the headless UI policy, UI requests and their answers,
and raw frames to the agent."""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from . import _ffi
from ._base import _ClientBase
from ._common import _interruptible, _loads, _ms
from ._events import ListenerErrorEvent, UiRequestListener
from ._ffi import lib
from .errors import RpcProcessExitError
from .protocol import ExtensionUiRequest, JsonObject, parse_extension_ui_request


class _Ui(_ClientBase):
    """install_headless_ui, next_ui_request and the answers to UI requests, send_frame."""

    def install_headless_ui(
        self,
        *,
        on_request: UiRequestListener | None = None,
        confirm: bool = False,
        select_value: str | None = None,
        input_value: str | None = None,
        editor_value: str | None = None,
    ) -> Callable[[], None]:
        """Answers UI requests inside the library, with no round trip through Python: confirm
        → ``confirm``; select / input / editor → the given value, else cancelled; any other
        method that is not passive (e.g. a later ``ask``) → cancelled. ``on_request`` sees
        every UI request (passive ones too) on the dispatcher thread. The most recent active
        installation decides; the returned function uninstalls this one."""
        policy: JsonObject = {"confirm": bool(confirm), "select": select_value, "input": input_value,
                              "editor": editor_value}
        token = object()
        unsubscribe_listener: Callable[[], None] | None = None
        if on_request is not None:
            callback = on_request
            listeners = self._listeners

            def handle(request: ExtensionUiRequest) -> None:
                try:
                    callback(request)
                except Exception as exc:
                    listeners.record_error(ListenerErrorEvent("headless_ui_request", request.type, callback, exc))

            unsubscribe_listener = self._listeners.add("ui_request", handle)
        with self._lifecycle_lock:
            self._headless.append((token, policy))
            self._apply_ui_policy()

        def uninstall() -> None:
            if unsubscribe_listener is not None:
                unsubscribe_listener()
            with self._lifecycle_lock:
                before = len(self._headless)
                self._headless = [entry for entry in self._headless if entry[0] is not token]
                if len(self._headless) != before:
                    self._apply_ui_policy()

        return uninstall

    def _apply_ui_policy(self) -> None:
        session = self._session
        if session is None:
            return
        policy = _ffi.dumps(self._headless[-1][1]) if self._headless else None
        try:
            session.handle.call(lib.omprpc_client_set_ui_policy, policy)
        except RpcProcessExitError:
            pass

    def next_ui_request(self, timeout: float | None = None) -> ExtensionUiRequest:
        """The next UI request that needs an answer (select, confirm, input, editor, or an
        unknown non-passive method). ``timeout=None`` waits without a deadline; stop() wakes it
        (RpcProcessExitError)."""
        session = self._require()
        ms = _ms(timeout)
        data = _loads(self._synced(session, lambda: _interruptible(
            lambda: session.handle.call_out(lib.omprpc_client_next_ui_request, ms))))
        return parse_extension_ui_request(data if isinstance(data, dict) else {})

    def send_ui_value(self, request_id: str, value: str) -> None:
        self._require().handle.call(lib.omprpc_client_ui_send_value, _ffi.encode(request_id, "request_id"),
                                    _ffi.encode(value, "value"))

    def send_ui_confirmation(self, request_id: str, confirmed: bool) -> None:
        self._require().handle.call(lib.omprpc_client_ui_send_confirmation,
                                    _ffi.encode(request_id, "request_id"), bool(confirmed))

    def cancel_ui_request(self, request_id: str, *, timed_out: bool = False) -> None:
        self._require().handle.call(lib.omprpc_client_ui_cancel, _ffi.encode(request_id, "request_id"),
                                    bool(timed_out))

    def send_widget_layout(
        self,
        widget_key: str,
        *,
        visible: bool,
        available_width: int,
        visible_rows: int,
        hidden_blocks: Sequence[str] | None = None,
    ) -> None:
        frame: JsonObject = {
            "type": "widget_layout",
            "widgetKey": widget_key,
            "visible": visible,
            "availableWidth": available_width,
            "visibleRows": visible_rows,
        }
        if hidden_blocks is not None:
            frame["hiddenBlocks"] = list(hidden_blocks)
        self.send_frame(frame)

    def send_frame(self, frame: Mapping[str, Any]) -> None:
        """Writes one frame as is (no id, no response awaited)."""
        self._require().handle.call(lib.omprpc_client_send_frame, _ffi.dumps(dict(frame)))
