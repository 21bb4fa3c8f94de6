"""``AsyncRpcClient``'s commands, written out (a mixin): every call of the sync
:class:`omprpc.RpcClient` that talks to the agent or the library, as a coroutine with the same
parameters and result, so type checkers and editors see them. Listener registration
(``on_*``) is not among them: the async client's events are ``AsyncRpcClient.events()``.

How each runs (the helpers are ``AsyncRpcClient``'s, in aio.py):

* ``_command``: on the command pool, for one request's round trip. Cancelled, the awaiting
  task gets CancelledError at once; the request ends in its thread and its result is dropped.
* ``_long_wait``: the waits on the agent's work (``collect_events``, ``wait_for_idle``,
  ``next_ui_request``), on the waits' pool; cancelled, likewise (the thread is held until the
  agent's work ends, or close()).
* ``_turn_wait``: ``prompt_and_wait``; cancelled, it also sends ``abort``, and the client's
  next prompt waits until the aborted turn completed.
* the answers and reads that never wait for the agent run on the loop itself.

tests/test_aio.py checks that every public method of the sync client has its twin here (or
in aio.py) with the same parameters.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Mapping, Sequence, TypeVar

from ._common import LIBRARY_DEFAULT

if TYPE_CHECKING:
    from ._protocol_gen import (
        ClearQueueResult,
        GetAvailableCommandsResult,
        GetAvailableThinkingLevelsResult,
        GetCommandsResult,
        GetEntriesResult,
        GetSubagentsResult,
        GetTreeResult,
        SetSubagentSubscriptionResult,
        SubagentMessagesResult,
        SubagentSubscriptionLevel,
    )
    from ._todos import TodoPhaseSeed, TodoSeed
    from ._turn import PromptTurn
    from .client import RpcClient
    from .host_tools import HostTool
    from .host_uris import HostUri
    from .protocol import (
        AgentMessage,
        BashResult,
        BranchMessage,
        BranchResult,
        CancellationResult,
        CompactionResult,
        ExtensionUiRequest,
        FastModeResult,
        ImageContent,
        InterruptMode,
        JsonObject,
        JsonValue,
        MessagesPage,
        ModelCycleResult,
        ModelInfo,
        RpcNotification,
        SessionState,
        SessionStats,
        SteeringMode,
        StreamingBehavior,
        ThinkingLevel,
        ThinkingLevelCycleResult,
        TodoPhase,
    )

_T = TypeVar("_T")


class _AsyncCommands:
    """The sync client's calls as coroutines (see the module's doc)."""

    _core: RpcClient

    def _command(self, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> Awaitable[_T]:
        raise NotImplementedError

    def _long_wait(self, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> Awaitable[_T]:
        raise NotImplementedError

    def _turn_wait(self, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> Awaitable[_T]:
        raise NotImplementedError

    async def _settled(self) -> None:
        raise NotImplementedError

    async def abort(self, *, timeout: float | None = LIBRARY_DEFAULT) -> None:
        """:meth:`omprpc.RpcClient.abort`, awaited (on the command pool)."""
        await self._command(self._core.abort, timeout=timeout)

    async def abort_and_prompt(
        self,
        message: str = "",
        *,
        images: Sequence[ImageContent] | None = None,
        content: Sequence[Mapping[str, Any]] | None = None,
        timeout: float | None = LIBRARY_DEFAULT,
    ) -> str:
        """:meth:`omprpc.RpcClient.abort_and_prompt`, awaited (after a turn abandoned by cancellation completed)."""
        await self._settled()
        return await self._command(
            self._core.abort_and_prompt, message, images=images, content=content, timeout=timeout)

    async def abort_bash(self, *, timeout: float | None = LIBRARY_DEFAULT) -> None:
        """:meth:`omprpc.RpcClient.abort_bash`, awaited (on the command pool)."""
        await self._command(self._core.abort_bash, timeout=timeout)

    async def abort_retry(self, *, timeout: float | None = LIBRARY_DEFAULT) -> None:
        """:meth:`omprpc.RpcClient.abort_retry`, awaited (on the command pool)."""
        await self._command(self._core.abort_retry, timeout=timeout)

    async def add_custom_tools(
        self,
        tools: Sequence[HostTool[Any, Any]],
        *,
        timeout: float | None = LIBRARY_DEFAULT,
    ) -> tuple[str, ...]:
        """:meth:`omprpc.RpcClient.add_custom_tools`, awaited (on the command pool)."""
        return await self._command(self._core.add_custom_tools, tools, timeout=timeout)

    async def add_host_uris(
        self,
        host_uris: Sequence[HostUri[Any]],
        *,
        timeout: float | None = LIBRARY_DEFAULT,
    ) -> tuple[str, ...]:
        """:meth:`omprpc.RpcClient.add_host_uris`, awaited (on the command pool)."""
        return await self._command(self._core.add_host_uris, host_uris, timeout=timeout)

    async def bash(
        self,
        command: str,
        *,
        exclude_from_context: bool | None = None,
        timeout: float | None = LIBRARY_DEFAULT,
    ) -> BashResult:
        """:meth:`omprpc.RpcClient.bash`, awaited (on the command pool)."""
        return await self._command(self._core.bash, command, exclude_from_context=exclude_from_context, timeout=timeout)

    async def branch(self, entry_id: str, *, timeout: float | None = LIBRARY_DEFAULT) -> BranchResult:
        """:meth:`omprpc.RpcClient.branch`, awaited (on the command pool)."""
        return await self._command(self._core.branch, entry_id, timeout=timeout)

    async def cancel_operation(self, operation_id: str, *, timeout: float | None = LIBRARY_DEFAULT) -> JsonObject:
        """:meth:`omprpc.RpcClient.cancel_operation`, awaited (on the command pool)."""
        return await self._command(self._core.cancel_operation, operation_id, timeout=timeout)

    async def cancel_ui_request(self, request_id: str, *, timed_out: bool = False) -> None:
        """Runs :meth:`omprpc.RpcClient.cancel_ui_request` on the loop (it never waits for the agent)."""
        self._core.cancel_ui_request(request_id, timed_out=timed_out)

    async def clear_queue(self, *, timeout: float | None = LIBRARY_DEFAULT) -> ClearQueueResult:
        """:meth:`omprpc.RpcClient.clear_queue`, awaited (on the command pool)."""
        return await self._command(self._core.clear_queue, timeout=timeout)

    async def clear_todos(self, *, timeout: float | None = LIBRARY_DEFAULT) -> tuple[TodoPhase, ...]:
        """:meth:`omprpc.RpcClient.clear_todos`, awaited (on the command pool)."""
        return await self._command(self._core.clear_todos, timeout=timeout)

    async def clone(self, *, timeout: float | None = LIBRARY_DEFAULT) -> CancellationResult:
        """:meth:`omprpc.RpcClient.clone`, awaited (on the command pool)."""
        return await self._command(self._core.clone, timeout=timeout)

    async def collect_events(self, timeout: float | None = None) -> tuple[RpcNotification, ...]:
        """:meth:`omprpc.RpcClient.collect_events`, awaited (on the waits' pool). Cancelled, it raises at once;
        the library's wait ends in its thread when the agent's work does."""
        return await self._long_wait(self._core.collect_events, timeout)

    async def compact(
        self,
        custom_instructions: str | None = None,
        *,
        timeout: float | None = 600.0,
    ) -> CompactionResult:
        """:meth:`omprpc.RpcClient.compact`, awaited (on the command pool)."""
        return await self._command(self._core.compact, custom_instructions, timeout=timeout)

    async def counters(self) -> dict[str, Any]:
        """Runs :meth:`omprpc.RpcClient.counters` on the loop (it never waits for the agent)."""
        return self._core.counters()

    async def cycle_model(self, *, timeout: float | None = LIBRARY_DEFAULT) -> ModelCycleResult | None:
        """:meth:`omprpc.RpcClient.cycle_model`, awaited (on the command pool)."""
        return await self._command(self._core.cycle_model, timeout=timeout)

    async def cycle_thinking_level(self, *, timeout: float | None = LIBRARY_DEFAULT) -> ThinkingLevelCycleResult | None:
        """:meth:`omprpc.RpcClient.cycle_thinking_level`, awaited (on the command pool)."""
        return await self._command(self._core.cycle_thinking_level, timeout=timeout)

    async def export_html(
        self,
        output_path: str | Path | None = None,
        *,
        timeout: float | None = LIBRARY_DEFAULT,
    ) -> Path:
        """:meth:`omprpc.RpcClient.export_html`, awaited (on the command pool)."""
        return await self._command(self._core.export_html, output_path, timeout=timeout)

    async def follow_up(
        self,
        message: str = "",
        *,
        images: Sequence[ImageContent] | None = None,
        content: Sequence[Mapping[str, Any]] | None = None,
        timeout: float | None = LIBRARY_DEFAULT,
    ) -> JsonObject:
        """:meth:`omprpc.RpcClient.follow_up`, awaited (on the command pool)."""
        return await self._command(self._core.follow_up, message, images=images, content=content, timeout=timeout)

    async def fork(self, entry_id: str, *, timeout: float | None = LIBRARY_DEFAULT) -> BranchResult:
        """:meth:`omprpc.RpcClient.fork`, awaited (on the command pool)."""
        return await self._command(self._core.fork, entry_id, timeout=timeout)

    async def get_available_commands(self, *, timeout: float | None = LIBRARY_DEFAULT) -> GetAvailableCommandsResult:
        """:meth:`omprpc.RpcClient.get_available_commands`, awaited (on the command pool)."""
        return await self._command(self._core.get_available_commands, timeout=timeout)

    async def get_available_models(self, *, timeout: float | None = LIBRARY_DEFAULT) -> tuple[ModelInfo, ...]:
        """:meth:`omprpc.RpcClient.get_available_models`, awaited (on the command pool)."""
        return await self._command(self._core.get_available_models, timeout=timeout)

    async def get_available_thinking_levels(
        self,
        *,
        timeout: float | None = LIBRARY_DEFAULT,
    ) -> GetAvailableThinkingLevelsResult:
        """:meth:`omprpc.RpcClient.get_available_thinking_levels`, awaited (on the command pool)."""
        return await self._command(self._core.get_available_thinking_levels, timeout=timeout)

    async def get_branch_messages(self, *, timeout: float | None = LIBRARY_DEFAULT) -> tuple[BranchMessage, ...]:
        """:meth:`omprpc.RpcClient.get_branch_messages`, awaited (on the command pool)."""
        return await self._command(self._core.get_branch_messages, timeout=timeout)

    async def get_commands(self, *, timeout: float | None = LIBRARY_DEFAULT) -> GetCommandsResult:
        """:meth:`omprpc.RpcClient.get_commands`, awaited (on the command pool)."""
        return await self._command(self._core.get_commands, timeout=timeout)

    async def get_entries(
        self,
        *,
        since: str | None = None,
        timeout: float | None = LIBRARY_DEFAULT,
    ) -> GetEntriesResult:
        """:meth:`omprpc.RpcClient.get_entries`, awaited (on the command pool)."""
        return await self._command(self._core.get_entries, since=since, timeout=timeout)

    async def get_fork_messages(self, *, timeout: float | None = LIBRARY_DEFAULT) -> tuple[BranchMessage, ...]:
        """:meth:`omprpc.RpcClient.get_fork_messages`, awaited (on the command pool)."""
        return await self._command(self._core.get_fork_messages, timeout=timeout)

    async def get_last_assistant_text(self, *, timeout: float | None = LIBRARY_DEFAULT) -> str | None:
        """:meth:`omprpc.RpcClient.get_last_assistant_text`, awaited (on the command pool)."""
        return await self._command(self._core.get_last_assistant_text, timeout=timeout)

    async def get_login_providers(self, *, timeout: float | None = LIBRARY_DEFAULT) -> tuple[JsonObject, ...]:
        """:meth:`omprpc.RpcClient.get_login_providers`, awaited (on the command pool)."""
        return await self._command(self._core.get_login_providers, timeout=timeout)

    async def get_messages(self, *, timeout: float | None = LIBRARY_DEFAULT) -> tuple[AgentMessage, ...]:
        """:meth:`omprpc.RpcClient.get_messages`, awaited (on the command pool)."""
        return await self._command(self._core.get_messages, timeout=timeout)

    async def get_messages_page(
        self,
        *,
        cursor: str | None = None,
        limit: int | None = None,
        timeout: float | None = LIBRARY_DEFAULT,
    ) -> MessagesPage:
        """:meth:`omprpc.RpcClient.get_messages_page`, awaited (on the command pool)."""
        return await self._command(self._core.get_messages_page, cursor=cursor, limit=limit, timeout=timeout)

    async def get_messages_response(self, *, timeout: float | None = LIBRARY_DEFAULT) -> JsonObject:
        """:meth:`omprpc.RpcClient.get_messages_response`, awaited (on the command pool)."""
        return await self._command(self._core.get_messages_response, timeout=timeout)

    async def get_observable_sessions(self, *, timeout: float | None = LIBRARY_DEFAULT) -> tuple[JsonObject, ...]:
        """:meth:`omprpc.RpcClient.get_observable_sessions`, awaited (on the command pool)."""
        return await self._command(self._core.get_observable_sessions, timeout=timeout)

    async def get_protocol_info(self, *, timeout: float | None = LIBRARY_DEFAULT) -> JsonObject:
        """:meth:`omprpc.RpcClient.get_protocol_info`, awaited (on the command pool)."""
        return await self._command(self._core.get_protocol_info, timeout=timeout)

    async def get_session_entries(
        self,
        *,
        offset: int | None = None,
        limit: int | None = None,
        entry_types: Sequence[str] | None = None,
        include_content: bool | None = None,
        timeout: float | None = LIBRARY_DEFAULT,
    ) -> JsonObject:
        """:meth:`omprpc.RpcClient.get_session_entries`, awaited (on the command pool)."""
        return await self._command(
            self._core.get_session_entries, offset=offset, limit=limit, entry_types=entry_types,
            include_content=include_content, timeout=timeout)

    async def get_session_stats(self, *, timeout: float | None = LIBRARY_DEFAULT) -> SessionStats:
        """:meth:`omprpc.RpcClient.get_session_stats`, awaited (on the command pool)."""
        return await self._command(self._core.get_session_stats, timeout=timeout)

    async def get_session_tree(
        self,
        *,
        include_entries: bool = False,
        timeout: float | None = LIBRARY_DEFAULT,
    ) -> JsonObject:
        """:meth:`omprpc.RpcClient.get_session_tree`, awaited (on the command pool)."""
        return await self._command(self._core.get_session_tree, include_entries=include_entries, timeout=timeout)

    async def get_state(self, *, timeout: float | None = LIBRARY_DEFAULT) -> SessionState:
        """:meth:`omprpc.RpcClient.get_state`, awaited (on the command pool)."""
        return await self._command(self._core.get_state, timeout=timeout)

    async def get_subagent_messages(
        self,
        *,
        subagent_id: str | None = None,
        session_file: str | None = None,
        from_byte: int | None = None,
        timeout: float | None = LIBRARY_DEFAULT,
    ) -> SubagentMessagesResult:
        """:meth:`omprpc.RpcClient.get_subagent_messages`, awaited (on the command pool)."""
        return await self._command(
            self._core.get_subagent_messages, subagent_id=subagent_id, session_file=session_file,
            from_byte=from_byte, timeout=timeout)

    async def get_subagents(self, *, timeout: float | None = LIBRARY_DEFAULT) -> GetSubagentsResult:
        """:meth:`omprpc.RpcClient.get_subagents`, awaited (on the command pool)."""
        return await self._command(self._core.get_subagents, timeout=timeout)

    async def get_todos(self, *, timeout: float | None = LIBRARY_DEFAULT) -> tuple[TodoPhase, ...]:
        """:meth:`omprpc.RpcClient.get_todos`, awaited (on the command pool)."""
        return await self._command(self._core.get_todos, timeout=timeout)

    async def get_tree(self, *, timeout: float | None = LIBRARY_DEFAULT) -> GetTreeResult:
        """:meth:`omprpc.RpcClient.get_tree`, awaited (on the command pool)."""
        return await self._command(self._core.get_tree, timeout=timeout)

    async def handoff(
        self,
        custom_instructions: str | None = None,
        *,
        timeout: float | None = 600.0,
    ) -> JsonObject | None:
        """:meth:`omprpc.RpcClient.handoff`, awaited (on the command pool)."""
        return await self._command(self._core.handoff, custom_instructions, timeout=timeout)

    async def info(self) -> dict[str, Any]:
        """Runs :meth:`omprpc.RpcClient.info` on the loop (it never waits for the agent)."""
        return self._core.info()

    async def login(self, provider_id: str, *, timeout: float | None = 600.0) -> JsonObject:
        """:meth:`omprpc.RpcClient.login`, awaited (on the command pool)."""
        return await self._command(self._core.login, provider_id, timeout=timeout)

    async def new_session(
        self,
        parent_session: str | None = None,
        *,
        timeout: float | None = LIBRARY_DEFAULT,
    ) -> CancellationResult:
        """:meth:`omprpc.RpcClient.new_session`, awaited (on the command pool)."""
        return await self._command(self._core.new_session, parent_session, timeout=timeout)

    async def next_logs(self, max_records: int = 256, timeout: float | None = 0.0) -> list[dict[str, Any]]:
        """:meth:`omprpc.RpcClient.next_logs`, awaited (on the command pool)."""
        return await self._command(self._core.next_logs, max_records, timeout)

    async def next_ui_request(self, timeout: float | None = None) -> ExtensionUiRequest:
        """:meth:`omprpc.RpcClient.next_ui_request`, awaited (on the waits' pool). Cancelled, it raises at once;
        the library's wait ends in its thread when the agent's work does."""
        return await self._long_wait(self._core.next_ui_request, timeout)

    async def ping(self, payload: JsonValue = None, *, timeout: float | None = LIBRARY_DEFAULT) -> JsonObject:
        """:meth:`omprpc.RpcClient.ping`, awaited (on the command pool)."""
        return await self._command(self._core.ping, payload, timeout=timeout)

    async def policy_verdict(self, request_id: str, allow: bool, reason: str | None = None) -> None:
        """Runs :meth:`omprpc.RpcClient.policy_verdict` on the loop (it never waits for the agent)."""
        self._core.policy_verdict(request_id, allow, reason)

    async def prompt(
        self,
        message: str = "",
        *,
        images: Sequence[ImageContent] | None = None,
        streaming_behavior: StreamingBehavior | None = None,
        content: Sequence[Mapping[str, Any]] | None = None,
        timeout: float | None = LIBRARY_DEFAULT,
    ) -> str:
        """:meth:`omprpc.RpcClient.prompt`, awaited (after a turn abandoned by cancellation completed)."""
        await self._settled()
        return await self._command(
            self._core.prompt, message, images=images, streaming_behavior=streaming_behavior, content=content,
            timeout=timeout)

    async def prompt_and_wait(
        self,
        message: str = "",
        *,
        images: Sequence[ImageContent] | None = None,
        streaming_behavior: StreamingBehavior | None = None,
        timeout: float | None = None,
        content: Sequence[Mapping[str, Any]] | None = None,
    ) -> PromptTurn:
        """:meth:`omprpc.RpcClient.prompt_and_wait`, awaited (on the waits' pool). Cancelled, it sends ``abort``;
        the client's next prompt waits until the aborted turn completed."""
        return await self._turn_wait(
            self._core.prompt_and_wait, message, images=images, streaming_behavior=streaming_behavior,
            timeout=timeout, content=content)

    async def remove_custom_tools(
        self,
        tool_names: Sequence[str],
        *,
        timeout: float | None = LIBRARY_DEFAULT,
    ) -> tuple[str, ...]:
        """:meth:`omprpc.RpcClient.remove_custom_tools`, awaited (on the command pool)."""
        return await self._command(self._core.remove_custom_tools, tool_names, timeout=timeout)

    async def remove_host_uris(
        self,
        schemes: Sequence[str],
        *,
        timeout: float | None = LIBRARY_DEFAULT,
    ) -> tuple[str, ...]:
        """:meth:`omprpc.RpcClient.remove_host_uris`, awaited (on the command pool)."""
        return await self._command(self._core.remove_host_uris, schemes, timeout=timeout)

    async def request_raw(self, command_type: str, **payload: JsonValue) -> JsonObject:
        """:meth:`omprpc.RpcClient.request_raw`, awaited (on the command pool)."""
        return await self._command(self._core.request_raw, command_type, **payload)

    async def send_frame(self, frame: Mapping[str, Any]) -> None:
        """Runs :meth:`omprpc.RpcClient.send_frame` on the loop (it never waits for the agent)."""
        self._core.send_frame(frame)

    async def send_ui_confirmation(self, request_id: str, confirmed: bool) -> None:
        """Runs :meth:`omprpc.RpcClient.send_ui_confirmation` on the loop (it never waits for the agent)."""
        self._core.send_ui_confirmation(request_id, confirmed)

    async def send_ui_value(self, request_id: str, value: str) -> None:
        """Runs :meth:`omprpc.RpcClient.send_ui_value` on the loop (it never waits for the agent)."""
        self._core.send_ui_value(request_id, value)

    async def send_widget_layout(
        self,
        widget_key: str,
        *,
        visible: bool,
        available_width: int,
        visible_rows: int,
        hidden_blocks: Sequence[str] | None = None,
    ) -> None:
        """Runs :meth:`omprpc.RpcClient.send_widget_layout` on the loop (it never waits for the agent)."""
        self._core.send_widget_layout(
            widget_key, visible=visible, available_width=available_width, visible_rows=visible_rows,
            hidden_blocks=hidden_blocks)

    async def set_auto_compaction(self, enabled: bool, *, timeout: float | None = LIBRARY_DEFAULT) -> None:
        """:meth:`omprpc.RpcClient.set_auto_compaction`, awaited (on the command pool)."""
        await self._command(self._core.set_auto_compaction, enabled, timeout=timeout)

    async def set_auto_retry(self, enabled: bool, *, timeout: float | None = LIBRARY_DEFAULT) -> None:
        """:meth:`omprpc.RpcClient.set_auto_retry`, awaited (on the command pool)."""
        await self._command(self._core.set_auto_retry, enabled, timeout=timeout)

    async def set_custom_tools(
        self,
        tools: Sequence[HostTool[Any, Any]],
        *,
        timeout: float | None = LIBRARY_DEFAULT,
    ) -> tuple[str, ...]:
        """:meth:`omprpc.RpcClient.set_custom_tools`, awaited (on the command pool)."""
        return await self._command(self._core.set_custom_tools, tools, timeout=timeout)

    async def set_fast_mode(self, enabled: bool, *, timeout: float | None = LIBRARY_DEFAULT) -> FastModeResult:
        """:meth:`omprpc.RpcClient.set_fast_mode`, awaited (on the command pool)."""
        return await self._command(self._core.set_fast_mode, enabled, timeout=timeout)

    async def set_follow_up_mode(self, mode: SteeringMode, *, timeout: float | None = LIBRARY_DEFAULT) -> None:
        """:meth:`omprpc.RpcClient.set_follow_up_mode`, awaited (on the command pool)."""
        await self._command(self._core.set_follow_up_mode, mode, timeout=timeout)

    async def set_host_uris(
        self,
        host_uris: Sequence[HostUri[Any]],
        *,
        timeout: float | None = LIBRARY_DEFAULT,
    ) -> tuple[str, ...]:
        """:meth:`omprpc.RpcClient.set_host_uris`, awaited (on the command pool)."""
        return await self._command(self._core.set_host_uris, host_uris, timeout=timeout)

    async def set_interrupt_mode(self, mode: InterruptMode, *, timeout: float | None = LIBRARY_DEFAULT) -> None:
        """:meth:`omprpc.RpcClient.set_interrupt_mode`, awaited (on the command pool)."""
        await self._command(self._core.set_interrupt_mode, mode, timeout=timeout)

    async def set_model(self, provider: str, model_id: str, *, timeout: float | None = LIBRARY_DEFAULT) -> ModelInfo:
        """:meth:`omprpc.RpcClient.set_model`, awaited (on the command pool)."""
        return await self._command(self._core.set_model, provider, model_id, timeout=timeout)

    async def set_session_name(self, name: str, *, timeout: float | None = LIBRARY_DEFAULT) -> None:
        """:meth:`omprpc.RpcClient.set_session_name`, awaited (on the command pool)."""
        await self._command(self._core.set_session_name, name, timeout=timeout)

    async def set_steering_mode(self, mode: SteeringMode, *, timeout: float | None = LIBRARY_DEFAULT) -> None:
        """:meth:`omprpc.RpcClient.set_steering_mode`, awaited (on the command pool)."""
        await self._command(self._core.set_steering_mode, mode, timeout=timeout)

    async def set_subagent_subscription(
        self,
        level: SubagentSubscriptionLevel,
        *,
        timeout: float | None = LIBRARY_DEFAULT,
    ) -> SetSubagentSubscriptionResult:
        """:meth:`omprpc.RpcClient.set_subagent_subscription`, awaited (on the command pool)."""
        return await self._command(self._core.set_subagent_subscription, level, timeout=timeout)

    async def set_thinking_level(self, level: ThinkingLevel, *, timeout: float | None = LIBRARY_DEFAULT) -> None:
        """:meth:`omprpc.RpcClient.set_thinking_level`, awaited (on the command pool)."""
        await self._command(self._core.set_thinking_level, level, timeout=timeout)

    async def set_todos(
        self,
        todos: Sequence[TodoSeed | TodoPhaseSeed],
        *,
        timeout: float | None = LIBRARY_DEFAULT,
    ) -> tuple[TodoPhase, ...]:
        """:meth:`omprpc.RpcClient.set_todos`, awaited (on the command pool)."""
        return await self._command(self._core.set_todos, todos, timeout=timeout)

    async def steer(
        self,
        message: str = "",
        *,
        images: Sequence[ImageContent] | None = None,
        content: Sequence[Mapping[str, Any]] | None = None,
        timeout: float | None = LIBRARY_DEFAULT,
    ) -> None:
        """:meth:`omprpc.RpcClient.steer`, awaited (on the command pool)."""
        await self._command(self._core.steer, message, images=images, content=content, timeout=timeout)

    async def switch_session(
        self,
        session_path: str | Path,
        *,
        timeout: float | None = LIBRARY_DEFAULT,
    ) -> CancellationResult:
        """:meth:`omprpc.RpcClient.switch_session`, awaited (on the command pool)."""
        return await self._command(self._core.switch_session, session_path, timeout=timeout)

    async def wait_for_idle(self, timeout: float | None = None) -> None:
        """:meth:`omprpc.RpcClient.wait_for_idle`, awaited (on the waits' pool). Cancelled, it raises at once;
        the library's wait ends in its thread when the agent's work does."""
        await self._long_wait(self._core.wait_for_idle, timeout)
