"""RpcClient's hand-written typed commands (a mixin): omp_rpc's, with its names, signatures and
result classes, and those with logic beyond sending the command; each sends it through
``_request`` / ``_request_data`` and parses the answer into the protocol's types. The other
commands of the protocol table are generated (``_protocol_gen``: its ``HAND_WRITTEN`` lists the
commands here, each with the reason it is written by hand)."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from ._base import _ClientBase
from ._common import LIBRARY_DEFAULT
from ._todos import TodoPhaseSeed, TodoSeed, _normalize_todo_phases
from .errors import RpcCommandError, RpcError
from .protocol import (
    AgentMessage,
    BashResult,
    BranchMessage,
    BranchResult,
    CancellationResult,
    CompactionResult,
    FastModeResult,
    InterruptMode,
    JsonObject,
    JsonValue,
    MessagesPage,
    ModelCycleResult,
    ModelInfo,
    SessionState,
    SessionStats,
    SteeringMode,
    ThinkingLevel,
    ThinkingLevelCycleResult,
    TodoPhase,
    parse_agent_messages,
    parse_bash_result,
    parse_branch_messages,
    parse_branch_result,
    parse_cancellation_result,
    parse_compaction_result,
    parse_fast_mode_result,
    parse_model_cycle_result,
    parse_model_info,
    parse_session_state,
    parse_session_stats,
    parse_thinking_level_cycle_result,
    parse_todo_phases,
)


class _Commands(_ClientBase):
    """The commands of omp_rpc's RpcClient, of omp protocol 1.1, and of pi and omp where
    they are shaped as omp_rpc's or need logic of their own. Every one takes ``timeout=`` (seconds; LIBRARY_DEFAULT: ``request_timeout``)."""

    def get_state(self, *, timeout: float | None = LIBRARY_DEFAULT) -> SessionState:
        return parse_session_state(self._request("get_state", _timeout=timeout))

    def set_fast_mode(self, enabled: bool, *, timeout: float | None = LIBRARY_DEFAULT) -> FastModeResult:
        return parse_fast_mode_result(self._request("set_fast_mode", _timeout=timeout, enabled=enabled))

    def set_model(self, provider: str, model_id: str, *, timeout: float | None = LIBRARY_DEFAULT) -> ModelInfo:
        data = self._request("set_model", _timeout=timeout, provider=provider, modelId=model_id)
        model = parse_model_info(data or None)
        if model is None:
            raise RpcError("set_model returned an empty payload")
        return model

    def cycle_model(self, *, timeout: float | None = LIBRARY_DEFAULT) -> ModelCycleResult | None:
        """None when there is no other model (the agent answers null)."""
        return parse_model_cycle_result(self._request_data("cycle_model", _timeout=timeout))

    def get_available_models(self, *, timeout: float | None = LIBRARY_DEFAULT) -> tuple[ModelInfo, ...]:
        models = self._request("get_available_models", _timeout=timeout).get("models")
        if not isinstance(models, list):
            return ()
        return tuple(m for m in (parse_model_info(item) for item in models) if m is not None)

    def set_thinking_level(self, level: ThinkingLevel, *, timeout: float | None = LIBRARY_DEFAULT) -> None:
        self._request("set_thinking_level", _timeout=timeout, level=level)

    def cycle_thinking_level(self, *, timeout: float | None = LIBRARY_DEFAULT) -> ThinkingLevelCycleResult | None:
        return parse_thinking_level_cycle_result(self._request_data("cycle_thinking_level", _timeout=timeout))

    def set_steering_mode(self, mode: SteeringMode, *, timeout: float | None = LIBRARY_DEFAULT) -> None:
        self._request("set_steering_mode", _timeout=timeout, mode=mode)

    def set_follow_up_mode(self, mode: SteeringMode, *, timeout: float | None = LIBRARY_DEFAULT) -> None:
        self._request("set_follow_up_mode", _timeout=timeout, mode=mode)

    def set_interrupt_mode(self, mode: InterruptMode, *, timeout: float | None = LIBRARY_DEFAULT) -> None:
        self._request("set_interrupt_mode", _timeout=timeout, mode=mode)

    def compact(self, custom_instructions: str | None = None,
                *, timeout: float | None = 600.0) -> CompactionResult:
        data = self._request("compact", _timeout=timeout, customInstructions=custom_instructions)
        return parse_compaction_result(data)

    def set_auto_compaction(self, enabled: bool, *, timeout: float | None = LIBRARY_DEFAULT) -> None:
        self._request("set_auto_compaction", _timeout=timeout, enabled=enabled)

    def set_auto_retry(self, enabled: bool, *, timeout: float | None = LIBRARY_DEFAULT) -> None:
        self._request("set_auto_retry", _timeout=timeout, enabled=enabled)

    def abort_retry(self, *, timeout: float | None = LIBRARY_DEFAULT) -> None:
        self._request("abort_retry", _timeout=timeout)

    def bash(self, command: str, *, exclude_from_context: bool | None = None,
             timeout: float | None = LIBRARY_DEFAULT) -> BashResult:
        """Runs ``command`` in the agent's shell. ``exclude_from_context=True`` keeps its output
        out of what the model sees next (pi 0.76 on; on an older pi, which would ignore it, the
        library refuses the call with an :class:`RpcError` naming the version)."""
        return parse_bash_result(self._request("bash", _timeout=timeout, command=command,
                                               excludeFromContext=exclude_from_context))

    def abort_bash(self, *, timeout: float | None = LIBRARY_DEFAULT) -> None:
        self._request("abort_bash", _timeout=timeout)

    def get_session_stats(self, *, timeout: float | None = LIBRARY_DEFAULT) -> SessionStats:
        return parse_session_stats(self._request("get_session_stats", _timeout=timeout))

    def export_html(self, output_path: str | Path | None = None, *, timeout: float | None = LIBRARY_DEFAULT) -> Path:
        payload = self._request("export_html", _timeout=timeout,
                                outputPath=str(output_path) if output_path is not None else None)
        path = payload.get("path")
        if not isinstance(path, str):
            raise RpcError("export_html response did not include a path")
        return Path(path)

    def new_session(self, parent_session: str | None = None,
                    *, timeout: float | None = LIBRARY_DEFAULT) -> CancellationResult:
        return parse_cancellation_result(self._request("new_session", _timeout=timeout, parentSession=parent_session))

    def switch_session(self, session_path: str | Path,
                       *, timeout: float | None = LIBRARY_DEFAULT) -> CancellationResult:
        data = self._request("switch_session", _timeout=timeout, sessionPath=str(session_path))
        return parse_cancellation_result(data)

    def branch(self, entry_id: str, *, timeout: float | None = LIBRARY_DEFAULT) -> BranchResult:
        return parse_branch_result(self._request("branch", _timeout=timeout, entryId=entry_id))

    def get_branch_messages(self, *, timeout: float | None = LIBRARY_DEFAULT) -> tuple[BranchMessage, ...]:
        return parse_branch_messages(self._request("get_branch_messages", _timeout=timeout))

    def get_last_assistant_text(self, *, timeout: float | None = LIBRARY_DEFAULT) -> str | None:
        value = self._request("get_last_assistant_text", _timeout=timeout).get("text")
        return value if isinstance(value, str) else None

    def set_session_name(self, name: str, *, timeout: float | None = LIBRARY_DEFAULT) -> None:
        self._request("set_session_name", _timeout=timeout, name=name)

    def get_todos(self, *, timeout: float | None = LIBRARY_DEFAULT) -> tuple[TodoPhase, ...]:
        return self.get_state(timeout=timeout).todo_phases

    def set_todos(self, todos: Sequence[TodoSeed | TodoPhaseSeed],
                  *, timeout: float | None = LIBRARY_DEFAULT) -> tuple[TodoPhase, ...]:
        phases = _normalize_todo_phases(todos)
        return parse_todo_phases(self._request("set_todos", _timeout=timeout, phases=phases).get("todoPhases"))

    def clear_todos(self, *, timeout: float | None = LIBRARY_DEFAULT) -> tuple[TodoPhase, ...]:
        return self.set_todos((), timeout=timeout)

    def get_messages(self, *, timeout: float | None = LIBRARY_DEFAULT) -> tuple[AgentMessage, ...]:
        """The session's messages. Under protocol v2 the library walks the pages of
        ``get_messages_page`` (falling back to ``get_messages`` when the session is busy or a
        cursor goes stale); under v1 it sends ``get_messages``."""
        return parse_agent_messages(self._request("get_messages", _timeout=timeout).get("messages"))

    def get_messages_page(self, *, cursor: str | None = None, limit: int | None = None,
                          timeout: float | None = LIBRARY_DEFAULT) -> MessagesPage:
        payload = self._request("get_messages_page", _timeout=timeout, cursor=cursor, limit=limit)
        total = payload.get("totalMessages")
        if not isinstance(total, int) or isinstance(total, bool) or total < 0:
            raise RpcError("get_messages_page response has an invalid totalMessages")
        next_cursor = payload.get("nextCursor")
        if next_cursor is not None and not isinstance(next_cursor, str):
            raise RpcError("get_messages_page response has an invalid nextCursor")
        return MessagesPage(
            messages=parse_agent_messages(payload.get("messages")), total_messages=total, next_cursor=next_cursor
        )

    # -- omp protocol 1.1 (the omp_rpc surface; agents without it answer "Unknown command") --

    def get_protocol_info(self, *, timeout: float | None = LIBRARY_DEFAULT) -> JsonObject:
        """The agent's protocol description: ``protocol``, ``server``, ``capabilities``, ``limits`` …"""
        return self._request("get_protocol_info", _timeout=timeout)

    def cancel_operation(self, operation_id: str, *, timeout: float | None = LIBRARY_DEFAULT) -> JsonObject:
        """Cancels a running operation (its call then fails with code ``operation_cancelled``);
        an unknown one: RpcCommandError, code ``operation_not_found``."""
        return self._request("cancel_operation", _timeout=timeout, operationId=operation_id)

    def get_messages_response(self, *, timeout: float | None = LIBRARY_DEFAULT) -> JsonObject:
        """``get_messages``' whole ``data``, unparsed."""
        return self._request("get_messages", _timeout=timeout)

    def get_session_entries(self, *, offset: int | None = None, limit: int | None = None,
                            entry_types: Sequence[str] | None = None, include_content: bool | None = None,
                            timeout: float | None = LIBRARY_DEFAULT) -> JsonObject:
        """A page of the session's entries: ``{entries, total, offset, limit, currentLeafId,
        nextOffset?}`` as the agent sends it."""
        return self._request("get_session_entries", _timeout=timeout, offset=offset, limit=limit,
                             entryTypes=list(entry_types) if entry_types is not None else None,
                             includeContent=include_content)

    def get_session_tree(self, *, include_entries: bool = False,
                         timeout: float | None = LIBRARY_DEFAULT) -> JsonObject:
        """The session's entry tree: ``{root, currentLeafId}``."""
        return self._request("get_session_tree", _timeout=timeout, includeEntries=include_entries)

    def get_observable_sessions(self, *, timeout: float | None = LIBRARY_DEFAULT) -> tuple[JsonObject, ...]:
        return self._listed("get_observable_sessions", "sessions", timeout)

    def get_login_providers(self, *, timeout: float | None = LIBRARY_DEFAULT) -> tuple[JsonObject, ...]:
        return self._listed("get_login_providers", "providers", timeout)

    def login(self, provider_id: str, *, timeout: float | None = 600.0) -> JsonObject:
        """Logs in to an OAuth provider and returns the operation's result. The agent sends the
        URL to open as a passive ``open_url`` UI request (an ``on_ui_request`` listener sees
        it). ``timeout``: for the whole login, 600 s as ``omp_rpc``."""
        return self._request("login", _timeout=timeout, providerId=provider_id)

    def ping(self, payload: JsonValue = None, *, timeout: float | None = LIBRARY_DEFAULT) -> JsonObject:
        """omp protocol 1.1: ``{pong: true, payload?}`` (the agent also sends a ``pong`` frame)."""
        return self._request("ping", _timeout=timeout, payload=payload)

    # -- pi's own commands (pi's RpcClient, 0.73.1) --

    def fork(self, entry_id: str, *, timeout: float | None = LIBRARY_DEFAULT) -> BranchResult:
        """pi: a new session from the user message ``entry_id`` (see :meth:`get_fork_messages`)."""
        return parse_branch_result(self._request("fork", _timeout=timeout, entryId=entry_id))

    def clone(self, *, timeout: float | None = LIBRARY_DEFAULT) -> CancellationResult:
        """pi: the current branch copied into a new session."""
        return parse_cancellation_result(self._request("clone", _timeout=timeout))

    def get_fork_messages(self, *, timeout: float | None = LIBRARY_DEFAULT) -> tuple[BranchMessage, ...]:
        """pi: the user messages a fork can start from."""
        return parse_branch_messages(self._request("get_fork_messages", _timeout=timeout))

    # -- omp's commands beyond omp_rpc's --

    def handoff(self, custom_instructions: str | None = None, *,
                timeout: float | None = 600.0) -> JsonObject | None:
        """omp: summarizes the session into a handoff document and compacts in place;
        ``{savedPath}``, or None when nothing was saved."""
        data = self._request_data("handoff", {"customInstructions": custom_instructions}, _timeout=timeout)
        return dict(data) if isinstance(data, dict) else None
