"""Typed views of the agent's frames and command results (the ``omp_rpc.protocol`` surface).

Everything here converts JSON (already parsed) into Python objects; nothing here speaks the
protocol. Messages and assistant-message events stay plain dicts (TypedDicts), as in
``omp_rpc``. Unlike ``omp_rpc`` the parsers of command results are lenient: unknown roles,
unknown enum values and nulls pass through instead of raising (spec §6.10). Agent events
whose known enum fields hold unknown values become :class:`UnknownNotification` with a
``parse_error`` naming the field, as in ``omp_rpc``.
"""

from __future__ import annotations

import base64
import mimetypes
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, Mapping, TypeAlias, TypedDict, Union, cast

# Imported "as NotRequired" so that _protocol_gen may import it from here (mypy --strict
# re-exports only names imported that way).
if sys.version_info >= (3, 11):
    from typing import NotRequired as NotRequired
else:  # pragma: no cover - Python 3.10
    try:
        from typing_extensions import NotRequired as NotRequired
    except ImportError:

        class NotRequired:  # type: ignore[no-redef]
            """Stand-in: these annotations are never evaluated at run time."""

            def __class_getitem__(cls, item: Any) -> Any:
                return item

JsonPrimitive: TypeAlias = Union[str, int, float, bool, None]
JsonValue: TypeAlias = Any
JsonObject: TypeAlias = dict[str, Any]

Attribution: TypeAlias = Literal["user", "agent"]
Effort: TypeAlias = Literal["minimal", "low", "medium", "high", "xhigh", "max"]
ThinkingLevel: TypeAlias = Literal["off", "minimal", "low", "medium", "high", "xhigh", "max"]
StreamingBehavior: TypeAlias = Literal["steer", "followUp"]
SteeringMode: TypeAlias = Literal["all", "one-at-a-time"]
InterruptMode: TypeAlias = Literal["immediate", "wait"]
StopReason: TypeAlias = Literal["stop", "length", "toolUse", "error", "aborted"]
NotifyType: TypeAlias = Literal["info", "warning", "error"]
WidgetPlacement: TypeAlias = Literal["aboveEditor", "belowEditor", "rightEditor"]
WidgetAlignment: TypeAlias = Literal["top", "bottom"]
TodoStatus: TypeAlias = Literal["pending", "in_progress", "completed", "abandoned", "blocked"]
ExtensionUiMethod: TypeAlias = str

PASSIVE_EXTENSION_UI_METHODS: Final[frozenset[str]] = frozenset(
    {"notify", "setStatus", "setWidget", "setTitle", "set_editor_text", "open_url"}
)
INTERACTIVE_EXTENSION_UI_METHODS: Final[frozenset[str]] = frozenset(
    {"select", "confirm", "input", "editor"}
)
VALUE_EXTENSION_UI_METHODS: Final[frozenset[str]] = frozenset({"select", "input", "editor"})

_EFFORTS: Final = frozenset({"minimal", "low", "medium", "high", "xhigh", "max"})
_THINKING_LEVELS: Final = _EFFORTS | {"off"}
TODO_STATUSES: Final[frozenset[str]] = frozenset(
    {"pending", "in_progress", "completed", "abandoned", "blocked"}
)
_COMPACTION_REASONS: Final = frozenset({"threshold", "overflow", "idle", "incomplete"})
# `remote` and `prune` come from newer servers (spec §3.1).
_COMPACTION_ACTIONS: Final = frozenset(
    {"context-full", "handoff", "shake", "snapcompact", "remote", "prune"}
)


# --- message shapes (plain dicts) ---------------------------------------------------------


# The message shapes are the protocol table's (src/protocol/table.json, generated into
# _payloads_gen): one TypedDict per variant, unions told apart by ``role`` / ``type``
# (``if ev["type"] == "text_delta":`` narrows). Nothing validates them: a role or event type
# a newer agent adds arrives as the dict it sent, never an error.
from ._payloads_gen import (  # noqa: E402 (after NotRequired, which _payloads_gen imports)
    AgentMessage as AgentMessage,
    AgentToolResult as AgentToolResult,
    AssistantDoneEvent as AssistantDoneEvent,
    AssistantErrorEvent as AssistantErrorEvent,
    AssistantImageEndEvent as AssistantImageEndEvent,
    AssistantMessage as AssistantMessage,
    AssistantMessageEvent as AssistantMessageEvent,
    AssistantMessageStartEvent as AssistantMessageStartEvent,
    AssistantTextDeltaEvent as AssistantTextDeltaEvent,
    AssistantTextEndEvent as AssistantTextEndEvent,
    AssistantTextStartEvent as AssistantTextStartEvent,
    AssistantThinkingDeltaEvent as AssistantThinkingDeltaEvent,
    AssistantThinkingEndEvent as AssistantThinkingEndEvent,
    AssistantThinkingStartEvent as AssistantThinkingStartEvent,
    AssistantToolCallDeltaEvent as AssistantToolCallDeltaEvent,
    AssistantToolCallEndEvent as AssistantToolCallEndEvent,
    AssistantToolCallStartEvent as AssistantToolCallStartEvent,
    BashExecutionMessage as BashExecutionMessage,
    BranchSummaryMessage as BranchSummaryMessage,
    CompactionSummaryMessage as CompactionSummaryMessage,
    MessageContent as MessageContent,
    CustomMessage as CustomMessage,
    DeveloperMessage as DeveloperMessage,
    FileMentionItem as FileMentionItem,
    FileMentionMessage as FileMentionMessage,
    HookMessage as HookMessage,
    ImageContent as ImageContent,
    PythonExecutionMessage as PythonExecutionMessage,
    SystemMessage as SystemMessage,
    TextContent as TextContent,
    ThinkingContent as ThinkingContent,
    ToolCall as ToolCall,
    ToolResultMessage as ToolResultMessage,
    Usage as Usage,
    UsageCost as UsageCost,
    UserMessage as UserMessage,
)


class RedactedThinkingContent(TypedDict, total=False):
    """omp_rpc's name for a redacted thinking block (no agent of the table declares it)."""

    type: Literal["redactedThinking"]
    data: str


def assistant_text_delta(event: AssistantMessageEvent) -> str | None:
    """The text an assistant message event adds to the answer: a ``text_delta``'s ``delta``;
    None for every other event (a ``thinking_delta``'s reasoning and a ``toolcall_delta``'s
    argument JSON are not answer text)."""
    if event.get("type") == "text_delta":
        delta = event.get("delta")
        return delta if isinstance(delta, str) else None
    return None


# --- result objects -------------------------------------------------------------------------


@dataclass(slots=True, frozen=True)
class ModelCost:
    input: float
    output: float
    cache_read: float
    cache_write: float


@dataclass(slots=True, frozen=True)
class ThinkingConfig:
    mode: str
    efforts: tuple[str, ...]
    default_level: str | None = None
    effort_map: dict[str, str] | None = None
    supports_display: bool | None = None
    effort_routing: dict[str, str] | None = None
    suppress_when_off: bool | None = None
    requires_effort: bool | None = None


@dataclass(slots=True, frozen=True)
class ModelInfo:
    id: str
    name: str
    api: str
    provider: str
    base_url: str
    reasoning: bool
    input_modalities: tuple[str, ...]
    cost: ModelCost
    context_window: int
    max_tokens: int
    headers: dict[str, str] | None = None
    premium_multiplier: float | None = None
    prefer_websockets: bool | None = None
    context_promotion_target: str | None = None
    priority: int | None = None
    thinking: ThinkingConfig | None = None
    compat: JsonObject | None = None


@dataclass(slots=True, frozen=True)
class ToolDescriptor:
    name: str
    description: str
    parameters: JsonValue
    examples: JsonValue = None


@dataclass(slots=True, frozen=True)
class TodoItem:
    id: str
    content: str
    status: TodoStatus
    notes: str | None = None
    details: str | None = None
    #: What a ``blocked`` task waits on; None otherwise.
    blocker: str | None = None


@dataclass(slots=True, frozen=True)
class TodoPhase:
    id: str
    name: str
    tasks: tuple[TodoItem, ...]


@dataclass(slots=True, frozen=True)
class ContextUsage:
    tokens: int
    context_window: int
    percent: float


@dataclass(slots=True, frozen=True)
class SessionState:
    model: ModelInfo | None
    thinking_level: ThinkingLevel | None
    is_streaming: bool
    is_compacting: bool
    steering_mode: SteeringMode
    follow_up_mode: SteeringMode
    interrupt_mode: InterruptMode
    session_file: str | None
    session_id: str
    session_name: str | None
    auto_compaction_enabled: bool
    message_count: int
    queued_message_count: int
    todo_phases: tuple[TodoPhase, ...] = ()
    system_prompt: tuple[str, ...] = ()
    dump_tools: tuple[ToolDescriptor, ...] = ()
    fast_mode_enabled: bool = False
    fast_mode_active: bool = False
    tokens_per_second: float | None = None
    context_usage: ContextUsage | None = None
    #: The whole ``get_state`` payload, for fields this binding does not model.
    raw: JsonObject = field(default_factory=dict, compare=False, repr=False)


@dataclass(slots=True, frozen=True)
class BashResult:
    output: str
    exit_code: int | None
    cancelled: bool
    truncated: bool
    total_lines: int
    total_bytes: int
    output_lines: int
    output_bytes: int
    artifact_id: str | None = None


@dataclass(slots=True, frozen=True)
class FastModeResult:
    enabled: bool
    active: bool


@dataclass(slots=True, frozen=True)
class CompactionResult:
    summary: str
    first_kept_entry_id: str
    tokens_before: int
    short_summary: str | None = None
    details: JsonValue | None = None
    preserve_data: JsonObject | None = None


@dataclass(slots=True, frozen=True)
class ModelCycleResult:
    model: ModelInfo
    thinking_level: ThinkingLevel | None
    is_scoped: bool


#: Alias: the brief's name for :class:`ModelCycleResult`.
CycleModelResult = ModelCycleResult


@dataclass(slots=True, frozen=True)
class ThinkingLevelCycleResult:
    level: ThinkingLevel


ThinkingLevelResult = ThinkingLevelCycleResult


@dataclass(slots=True, frozen=True)
class CancellationResult:
    cancelled: bool


#: ``new_session`` / ``switch_session`` answer.
NewSessionResult = CancellationResult


@dataclass(slots=True, frozen=True)
class BranchMessage:
    entry_id: str
    text: str


@dataclass(slots=True, frozen=True)
class BranchResult:
    text: str
    cancelled: bool


@dataclass(slots=True, frozen=True)
class TokenUsage:
    input: int
    output: int
    cache_read: int
    cache_write: int
    total: int


@dataclass(slots=True, frozen=True)
class SessionStats:
    session_file: str | None
    session_id: str
    user_messages: int
    assistant_messages: int
    tool_calls: int
    tool_results: int
    total_messages: int
    tokens: TokenUsage
    premium_requests: int
    cost: float


@dataclass(slots=True, frozen=True)
class MessagesPage:
    messages: tuple[AgentMessage, ...]
    total_messages: int
    next_cursor: str | None


# --- notifications --------------------------------------------------------------------------


@dataclass(slots=True, frozen=True)
class ReadyEvent:
    """The agent's first frame. omp protocol 1.1 describes itself here (``protocol``
    ``{name, version, schemaVersion}``, ``server``, ``mode``, ``capabilities``, ``limits``,
    ``reset_profile``, ``security``, and the frame's ``seq`` / ``timestamp`` /
    ``session_id``); omp 18 offers protocol v2 (``protocol_version`` …). ``raw``: the whole
    frame. Every object is a copy of the frame's."""

    protocol: JsonObject | None = None
    server: JsonObject | None = None
    mode: str | None = None
    capabilities: JsonObject | None = None
    limits: JsonObject | None = None
    reset_profile: JsonObject | None = None
    security: JsonObject | None = None
    seq: int | None = None
    timestamp: str | None = None
    session_id: str | None = None
    raw: JsonObject | None = None
    protocol_version: int | None = None
    supported_protocol_versions: tuple[int, ...] | None = None
    max_frame_bytes: int | None = None
    max_reassembled_frame_bytes: int | None = None
    type: Literal["ready"] = "ready"


@dataclass(slots=True, frozen=True)
class ExtensionWidgetBlock:
    lines: tuple[str, ...]
    priority: float | None = None
    alignment: str | None = None
    id: str | None = None


@dataclass(slots=True, frozen=True)
class ExtensionUiRequest:
    id: str
    method: ExtensionUiMethod
    title: str | None = None
    options: tuple[str, ...] | None = None
    message: str | None = None
    option_details: tuple[JsonObject, ...] | None = field(default=None, kw_only=True)
    placeholder: str | None = None
    prefill: str | None = None
    timeout: int | None = None
    prompt_style: bool | None = None
    target_id: str | None = None
    notify_type: str | None = None
    status_key: str | None = None
    status_text: str | None = None
    widget_key: str | None = None
    widget_lines: tuple[str, ...] | None = None
    widget_blocks: tuple[ExtensionWidgetBlock, ...] | None = None
    widget_placement: str | None = None
    widget_priority: float | None = None
    widget_alignment: str | None = None
    text: str | None = None
    url: str | None = None
    launch_url: str | None = None
    instructions: str | None = None
    type: Literal["extension_ui_request"] = "extension_ui_request"
    #: omp protocol 1.1: the shape of the answer the request expects (``{"kind": "boolean"}``
    #: for a confirm, …), as sent.
    response_schema: JsonObject | None = field(default=None, kw_only=True)
    #: The frame as received (methods or fields this binding does not model).
    payload: JsonObject | None = field(default=None, kw_only=True, compare=False, repr=False)

    def is_passive(self) -> bool:
        return self.method in PASSIVE_EXTENSION_UI_METHODS

    def is_interactive(self) -> bool:
        return self.method in INTERACTIVE_EXTENSION_UI_METHODS

    def accepts_text(self) -> bool:
        return self.method in VALUE_EXTENSION_UI_METHODS

    def requires_response(self) -> bool:
        """True for select/confirm/input/editor and for unknown methods that are not passive
        (a later ``ask``, say): those may be waiting for an answer (spec §6.11)."""
        return self.method != "cancel" and not self.is_passive()


@dataclass(slots=True, frozen=True)
class ExtensionError:
    extension_path: str
    event: str
    error: str
    type: Literal["extension_error"] = "extension_error"


@dataclass(slots=True, frozen=True)
class AgentStartEvent:
    type: Literal["agent_start"] = "agent_start"


@dataclass(slots=True, frozen=True)
class AgentEndEvent:
    messages: tuple[AgentMessage, ...]
    type: Literal["agent_end"] = "agent_end"
    message_count: int | None = field(default=None, kw_only=True)
    is_terminal: bool | None = field(default=None, kw_only=True)


@dataclass(slots=True, frozen=True)
class TurnStartEvent:
    type: Literal["turn_start"] = "turn_start"


@dataclass(slots=True, frozen=True)
class TurnEndEvent:
    message: AgentMessage
    tool_results: tuple[ToolResultMessage, ...]
    type: Literal["turn_end"] = "turn_end"


@dataclass(slots=True, frozen=True)
class MessageStartEvent:
    message: AgentMessage
    type: Literal["message_start"] = "message_start"


@dataclass(slots=True, frozen=True)
class MessageUpdateEvent:
    message: AgentMessage
    assistant_message_event: AssistantMessageEvent
    type: Literal["message_update"] = "message_update"


@dataclass(slots=True, frozen=True)
class MessageEndEvent:
    message: AgentMessage
    type: Literal["message_end"] = "message_end"


@dataclass(slots=True, frozen=True)
class ToolExecutionStartEvent:
    tool_call_id: str
    tool_name: str
    args: JsonValue
    intent: str | None = None
    type: Literal["tool_execution_start"] = "tool_execution_start"


@dataclass(slots=True, frozen=True)
class ToolExecutionUpdateEvent:
    tool_call_id: str
    tool_name: str
    args: JsonValue
    partial_result: JsonValue
    type: Literal["tool_execution_update"] = "tool_execution_update"


@dataclass(slots=True, frozen=True)
class ToolExecutionEndEvent:
    tool_call_id: str
    tool_name: str
    result: JsonValue
    is_error: bool | None = None
    type: Literal["tool_execution_end"] = "tool_execution_end"


@dataclass(slots=True, frozen=True)
class AutoCompactionStartEvent:
    reason: str
    action: str
    type: Literal["auto_compaction_start"] = "auto_compaction_start"


@dataclass(slots=True, frozen=True)
class AutoCompactionEndEvent:
    action: str
    result: CompactionResult | None
    aborted: bool
    will_retry: bool
    error_message: str | None = None
    skipped: bool | None = None
    type: Literal["auto_compaction_end"] = "auto_compaction_end"


@dataclass(slots=True, frozen=True)
class AutoRetryStartEvent:
    attempt: int
    max_attempts: int
    delay_ms: int
    error_message: str
    type: Literal["auto_retry_start"] = "auto_retry_start"


@dataclass(slots=True, frozen=True)
class AutoRetryEndEvent:
    success: bool
    attempt: int
    final_error: str | None = None
    type: Literal["auto_retry_end"] = "auto_retry_end"


@dataclass(slots=True, frozen=True)
class RetryFallbackAppliedEvent:
    from_model: str
    to_model: str
    role: str
    type: Literal["retry_fallback_applied"] = "retry_fallback_applied"


@dataclass(slots=True, frozen=True)
class RetryFallbackSucceededEvent:
    model: str
    role: str
    type: Literal["retry_fallback_succeeded"] = "retry_fallback_succeeded"


@dataclass(slots=True, frozen=True)
class TtsrTriggeredEvent:
    rules: tuple[JsonObject, ...]
    type: Literal["ttsr_triggered"] = "ttsr_triggered"


@dataclass(slots=True, frozen=True)
class TodoReminderEvent:
    todos: tuple[TodoItem, ...]
    attempt: int
    max_attempts: int
    type: Literal["todo_reminder"] = "todo_reminder"


@dataclass(slots=True, frozen=True)
class TodoAutoClearEvent:
    type: Literal["todo_auto_clear"] = "todo_auto_clear"


@dataclass(slots=True, frozen=True)
class UnknownNotification:
    """A frame with a type this binding does not model, or one whose fields did not parse
    (``parse_error`` then says which)."""

    payload: JsonObject
    type: Literal["unknown"] = "unknown"
    parse_error: str | None = field(default=None, kw_only=True)


@dataclass(slots=True, frozen=True)
class EventOverflow:
    """omprpc's own notice: the event queue was full and ``dropped`` older events were lost
    for listeners (prompt_and_wait / collect_events are not affected)."""

    dropped: int
    type: Literal["event_overflow"] = "event_overflow"


@dataclass(slots=True, frozen=True)
class PolicyEvalEvent:
    """omprpc: the tool policy gate (``tool_policy`` in host mode) asks whether the agent may
    run one of its own tools. Answer with ``client.policy_verdict(event.id, allow, reason)``
    (or let a ``policy_handler`` answer); no answer within the gate's timeout blocks the tool
    unless the gate fails open."""

    id: str
    tool_name: str
    tool_call_id: str
    arguments: JsonObject = field(default_factory=dict)
    type: Literal["policy_eval"] = "policy_eval"
    #: The call that made this one (pi 0.99+: a ``codemode`` script's call); None for a call
    #: the model made.
    parent_tool_call_id: str | None = None


@dataclass(slots=True, frozen=True)
class ToolBlockedEvent:
    """omprpc: the tool policy gate blocked the agent's tool call ``tool_call_id``."""

    tool_call_id: str
    tool_name: str
    reason: str
    type: Literal["tool_blocked"] = "tool_blocked"


RpcAgentEvent: TypeAlias = Union[
    AgentStartEvent,
    AgentEndEvent,
    TurnStartEvent,
    TurnEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    MessageEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    ToolExecutionEndEvent,
    AutoCompactionStartEvent,
    AutoCompactionEndEvent,
    AutoRetryStartEvent,
    AutoRetryEndEvent,
    RetryFallbackAppliedEvent,
    RetryFallbackSucceededEvent,
    TtsrTriggeredEvent,
    TodoReminderEvent,
    TodoAutoClearEvent,
]

RpcNotification: TypeAlias = Union[
    ReadyEvent, ExtensionUiRequest, ExtensionError, RpcAgentEvent, UnknownNotification, EventOverflow,
    PolicyEvalEvent, ToolBlockedEvent,
]

AGENT_EVENT_TYPES: Final[frozenset[str]] = frozenset(
    {
        "agent_start", "agent_end", "turn_start", "turn_end", "message_start", "message_update",
        "message_end", "tool_execution_start", "tool_execution_update", "tool_execution_end",
        "auto_compaction_start", "auto_compaction_end", "auto_retry_start", "auto_retry_end",
        "retry_fallback_applied", "retry_fallback_succeeded", "ttsr_triggered", "todo_reminder",
        "todo_auto_clear",
    }
)


# --- small converters -----------------------------------------------------------------------


def _clone_json(value: Any) -> Any:
    """A deep copy of decoded JSON (dicts and lists are rebuilt, scalars are immutable)."""
    if isinstance(value, dict):
        return {k: _clone_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clone_json(v) for v in value]
    return value


def _obj(value: object, what: str) -> JsonObject:
    if not isinstance(value, dict):
        raise ValueError(f"{what} must be an object")
    return value


def _str(payload: Mapping[str, Any], key: str, default: str = "") -> str:
    value = payload.get(key)
    if value is None:
        return default
    return value if isinstance(value, str) else str(value)


def _opt_str(payload: Mapping[str, Any], key: str) -> str | None:
    value = payload.get(key)
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def _int(payload: Mapping[str, Any], key: str, default: int = 0) -> int:
    value = payload.get(key)
    if isinstance(value, bool) or value is None:
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return default


def _opt_int(payload: Mapping[str, Any], key: str) -> int | None:
    value = payload.get(key)
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _float(payload: Mapping[str, Any], key: str, default: float = 0.0) -> float:
    value = payload.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    return float(value)


def _opt_float(payload: Mapping[str, Any], key: str) -> float | None:
    value = payload.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _bool(payload: Mapping[str, Any], key: str, default: bool = False) -> bool:
    value = payload.get(key)
    return value if isinstance(value, bool) else default


def _opt_bool(payload: Mapping[str, Any], key: str) -> bool | None:
    value = payload.get(key)
    return value if isinstance(value, bool) else None


def _strs(value: object) -> tuple[str, ...] | None:
    if not isinstance(value, list):
        return None
    return tuple(item if isinstance(item, str) else str(item) for item in value)


def _objs(value: object) -> tuple[JsonObject, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(item for item in value if isinstance(item, dict))


def _literal(value: object, allowed: frozenset[str], what: str, default: str | None = None) -> str:
    if value is None and default is not None:
        return default
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{what} must be one of: {', '.join(sorted(allowed))} (got {value!r})")
    return value


# --- parsers of results (lenient) -------------------------------------------------------------


def _parse_thinking_config(payload: object) -> ThinkingConfig | None:
    if not isinstance(payload, dict):
        return None
    effort_map = payload.get("effortMap")
    routing = payload.get("effortRouting")
    return ThinkingConfig(
        mode=_str(payload, "mode"),
        efforts=_strs(payload.get("efforts")) or (),
        default_level=_opt_str(payload, "defaultLevel"),
        effort_map=effort_map if isinstance(effort_map, dict) else None,
        supports_display=_opt_bool(payload, "supportsDisplay"),
        effort_routing=routing if isinstance(routing, dict) else None,
        suppress_when_off=_opt_bool(payload, "suppressWhenOff"),
        requires_effort=_opt_bool(payload, "requiresEffort"),
    )


def parse_model_info(payload: object) -> ModelInfo | None:
    """A ``Model`` object; None for null / not an object. Null numbers become 0."""
    if not isinstance(payload, dict):
        return None
    raw_cost = payload.get("cost")
    cost: Mapping[str, Any] = raw_cost if isinstance(raw_cost, dict) else {}
    headers = payload.get("headers")
    compat = payload.get("compat")
    return ModelInfo(
        id=_str(payload, "id"),
        name=_str(payload, "name"),
        api=_str(payload, "api"),
        provider=_str(payload, "provider"),
        base_url=_str(payload, "baseUrl"),
        reasoning=_bool(payload, "reasoning"),
        input_modalities=_strs(payload.get("input")) or (),
        cost=ModelCost(
            input=_float(cost, "input"),
            output=_float(cost, "output"),
            cache_read=_float(cost, "cacheRead"),
            cache_write=_float(cost, "cacheWrite"),
        ),
        context_window=_int(payload, "contextWindow"),
        max_tokens=_int(payload, "maxTokens"),
        headers=headers if isinstance(headers, dict) else None,
        premium_multiplier=_opt_float(payload, "premiumMultiplier"),
        prefer_websockets=_opt_bool(payload, "preferWebsockets"),
        context_promotion_target=_opt_str(payload, "contextPromotionTarget"),
        priority=_opt_int(payload, "priority"),
        thinking=_parse_thinking_config(payload.get("thinking")),
        compat=compat if isinstance(compat, dict) else None,
    )


def parse_tool_descriptor(payload: Mapping[str, Any]) -> ToolDescriptor:
    return ToolDescriptor(
        name=_str(payload, "name"),
        description=_str(payload, "description"),
        parameters=payload.get("parameters"),
        examples=payload.get("examples"),
    )


def parse_todo_item(payload: Mapping[str, Any]) -> TodoItem:
    status = payload.get("status")
    return TodoItem(
        id=_str(payload, "id"),
        content=_str(payload, "content"),
        status=cast(TodoStatus, status if isinstance(status, str) else "pending"),
        notes=_opt_str(payload, "notes"),
        details=_opt_str(payload, "details"),
        blocker=_opt_str(payload, "blocker"),
    )


def parse_todo_phase(payload: Mapping[str, Any]) -> TodoPhase:
    tasks = payload.get("tasks")
    return TodoPhase(
        id=_str(payload, "id"),
        name=_str(payload, "name"),
        tasks=tuple(parse_todo_item(t) for t in tasks if isinstance(t, dict))
        if isinstance(tasks, list)
        else (),
    )


def parse_todo_phases(payload: object) -> tuple[TodoPhase, ...]:
    if not isinstance(payload, list):
        return ()
    return tuple(parse_todo_phase(p) for p in payload if isinstance(p, dict))


def parse_context_usage(payload: object) -> ContextUsage | None:
    if not isinstance(payload, dict):
        return None
    return ContextUsage(
        tokens=_int(payload, "tokens"),
        context_window=_int(payload, "contextWindow"),
        percent=_float(payload, "percent"),
    )


def _system_prompt(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list):
        return tuple(item for item in value if isinstance(item, str))
    return ()


def parse_session_state(payload: Mapping[str, Any]) -> SessionState:
    """``get_state``. Unknown mode / level values pass through as strings."""
    tools = payload.get("dumpTools")
    return SessionState(
        model=parse_model_info(payload.get("model")),
        thinking_level=cast(Any, _opt_str(payload, "thinkingLevel")),
        is_streaming=_bool(payload, "isStreaming"),
        is_compacting=_bool(payload, "isCompacting"),
        steering_mode=cast(Any, _str(payload, "steeringMode", "one-at-a-time")),
        follow_up_mode=cast(Any, _str(payload, "followUpMode", "one-at-a-time")),
        interrupt_mode=cast(Any, _str(payload, "interruptMode", "immediate")),
        session_file=_opt_str(payload, "sessionFile"),
        session_id=_str(payload, "sessionId"),
        session_name=_opt_str(payload, "sessionName"),
        auto_compaction_enabled=_bool(payload, "autoCompactionEnabled"),
        message_count=_int(payload, "messageCount"),
        queued_message_count=_int(payload, "queuedMessageCount"),
        todo_phases=parse_todo_phases(payload.get("todoPhases")),
        system_prompt=_system_prompt(payload.get("systemPrompt")),
        dump_tools=tuple(parse_tool_descriptor(t) for t in tools if isinstance(t, dict))
        if isinstance(tools, list)
        else (),
        fast_mode_enabled=_bool(payload, "fastModeEnabled"),
        fast_mode_active=_bool(payload, "fastModeActive"),
        tokens_per_second=_opt_float(payload, "tokensPerSecond"),
        context_usage=parse_context_usage(payload.get("contextUsage")),
        raw=dict(payload),
    )


def parse_bash_result(payload: Mapping[str, Any]) -> BashResult:
    return BashResult(
        output=_str(payload, "output"),
        exit_code=_opt_int(payload, "exitCode"),
        cancelled=_bool(payload, "cancelled"),
        truncated=_bool(payload, "truncated"),
        total_lines=_int(payload, "totalLines"),
        total_bytes=_int(payload, "totalBytes"),
        output_lines=_int(payload, "outputLines"),
        output_bytes=_int(payload, "outputBytes"),
        artifact_id=_opt_str(payload, "artifactId"),
    )


def parse_fast_mode_result(payload: Mapping[str, Any]) -> FastModeResult:
    return FastModeResult(enabled=_bool(payload, "enabled"), active=_bool(payload, "active"))


def parse_compaction_result(payload: Mapping[str, Any]) -> CompactionResult:
    preserve = payload.get("preserveData")
    return CompactionResult(
        summary=_str(payload, "summary"),
        short_summary=_opt_str(payload, "shortSummary"),
        first_kept_entry_id=_str(payload, "firstKeptEntryId"),
        tokens_before=_int(payload, "tokensBefore"),
        details=payload.get("details"),
        preserve_data=preserve if isinstance(preserve, dict) else None,
    )


def parse_model_cycle_result(payload: object) -> ModelCycleResult | None:
    """``cycle_model``: None when the agent answers null (no other model), spec §6.8."""
    if not isinstance(payload, dict):
        return None
    model = parse_model_info(payload.get("model"))
    if model is None:
        return None
    return ModelCycleResult(
        model=model,
        thinking_level=cast(Any, _opt_str(payload, "thinkingLevel")),
        is_scoped=_bool(payload, "isScoped"),
    )


def parse_thinking_level_cycle_result(payload: object) -> ThinkingLevelCycleResult | None:
    if not isinstance(payload, dict) or not isinstance(payload.get("level"), str):
        return None
    return ThinkingLevelCycleResult(level=cast(Any, payload["level"]))


def parse_cancellation_result(payload: object) -> CancellationResult:
    return CancellationResult(cancelled=_bool(payload if isinstance(payload, dict) else {}, "cancelled"))


def parse_branch_result(payload: object) -> BranchResult:
    p = payload if isinstance(payload, dict) else {}
    return BranchResult(text=_str(p, "text"), cancelled=_bool(p, "cancelled"))


def parse_branch_messages(payload: object) -> tuple[BranchMessage, ...]:
    p = payload if isinstance(payload, dict) else {}
    items = p.get("messages")
    if not isinstance(items, list):
        return ()
    return tuple(
        BranchMessage(entry_id=_str(m, "entryId"), text=_str(m, "text"))
        for m in items
        if isinstance(m, dict)
    )


def parse_session_stats(payload: Mapping[str, Any]) -> SessionStats:
    raw_tokens = payload.get("tokens")
    tokens: Mapping[str, Any] = raw_tokens if isinstance(raw_tokens, dict) else {}
    return SessionStats(
        session_file=_opt_str(payload, "sessionFile"),
        session_id=_str(payload, "sessionId"),
        user_messages=_int(payload, "userMessages"),
        assistant_messages=_int(payload, "assistantMessages"),
        tool_calls=_int(payload, "toolCalls"),
        tool_results=_int(payload, "toolResults"),
        total_messages=_int(payload, "totalMessages"),
        tokens=TokenUsage(
            input=_int(tokens, "input"),
            output=_int(tokens, "output"),
            cache_read=_int(tokens, "cacheRead"),
            cache_write=_int(tokens, "cacheWrite"),
            total=_int(tokens, "total"),
        ),
        premium_requests=_int(payload, "premiumRequests"),
        cost=_float(payload, "cost"),
    )


def parse_agent_messages(payload: object) -> tuple[AgentMessage, ...]:
    """Messages as the agent sent them (dicts); unknown roles pass through (spec §6.10)."""
    if not isinstance(payload, list):
        return ()
    return tuple(payload)


# --- parsers of notifications -------------------------------------------------------------------


def _widget_blocks(value: object) -> tuple[ExtensionWidgetBlock, ...] | None:
    if not isinstance(value, list):
        return None
    blocks = tuple(
        ExtensionWidgetBlock(
            lines=_strs(item.get("lines")) or (),
            priority=_opt_float(item, "priority"),
            alignment=_opt_str(item, "alignment"),
            id=_opt_str(item, "id"),
        )
        for item in value
        if isinstance(item, dict)
    )
    return blocks or None


def parse_extension_ui_request(payload: Mapping[str, Any]) -> ExtensionUiRequest:
    """An ``extension_ui_request``. Any method is accepted (unknown ones may need an answer)."""
    details = payload.get("optionDetails")
    return ExtensionUiRequest(
        id=_str(payload, "id"),
        method=_str(payload, "method"),
        title=_opt_str(payload, "title"),
        options=_strs(payload.get("options")),
        option_details=_objs(details) if isinstance(details, list) else None,
        message=_opt_str(payload, "message"),
        placeholder=_opt_str(payload, "placeholder"),
        prefill=_opt_str(payload, "prefill"),
        timeout=_opt_int(payload, "timeout"),
        prompt_style=_opt_bool(payload, "promptStyle"),
        target_id=_opt_str(payload, "targetId"),
        notify_type=_opt_str(payload, "notifyType"),
        status_key=_opt_str(payload, "statusKey"),
        status_text=_opt_str(payload, "statusText"),
        widget_key=_opt_str(payload, "widgetKey"),
        widget_lines=_strs(payload.get("widgetLines")),
        widget_blocks=_widget_blocks(payload.get("widgetBlocks")),
        widget_placement=_opt_str(payload, "widgetPlacement"),
        widget_priority=_opt_float(payload, "widgetPriority"),
        widget_alignment=_opt_str(payload, "widgetAlignment"),
        text=_opt_str(payload, "text"),
        url=_opt_str(payload, "url"),
        launch_url=_opt_str(payload, "launchUrl"),
        instructions=_opt_str(payload, "instructions"),
        response_schema=schema if isinstance(schema := payload.get("responseSchema"), dict) else None,
        payload=dict(payload),
    )


def _message(payload: Mapping[str, Any], key: str, what: str) -> AgentMessage:
    message = _obj(payload.get(key), f"{what}.{key}")
    if not isinstance(message.get("role"), str):
        raise ValueError(f"{what}.{key}.role must be a string")
    # Typed by its role; a role the table does not name passes through as the dict it is.
    return cast(AgentMessage, message)


def _todo_item_strict(item: object, what: str) -> TodoItem:
    data = _obj(item, what)
    _literal(data.get("status", "pending"), TODO_STATUSES, f"{what}.status")
    return parse_todo_item(data)


def parse_notification(payload: Mapping[str, Any]) -> RpcNotification:
    """A frame from the agent as a typed notification that shares nothing with the frame (a
    deep copy: changing the frame afterwards changes nothing in the event).

    Raises ValueError when a modelled field has a value this binding does not know (the
    client then delivers an :class:`UnknownNotification` with ``parse_error``). Frames of
    other types become :class:`UnknownNotification` without an error.
    """
    return _parse_notification(_clone_json(payload))


def _parse_notification(payload: Mapping[str, Any]) -> RpcNotification:
    """:func:`parse_notification` on a dict nobody else holds (no copy made)."""
    kind = payload.get("type")
    if kind == "ready":
        versions = payload.get("supportedProtocolVersions")

        def member(key: str) -> JsonObject | None:
            value = payload.get(key)
            return value if isinstance(value, dict) else None

        return ReadyEvent(
            protocol=member("protocol"),
            server=member("server"),
            mode=_opt_str(payload, "mode"),
            capabilities=member("capabilities"),
            limits=member("limits"),
            reset_profile=member("resetProfile"),
            security=member("security"),
            seq=_opt_int(payload, "seq"),
            timestamp=_opt_str(payload, "timestamp"),
            session_id=_opt_str(payload, "sessionId"),
            raw=_clone_json(payload),
            protocol_version=_opt_int(payload, "protocolVersion"),
            supported_protocol_versions=tuple(v for v in versions if isinstance(v, int))
            if isinstance(versions, list)
            else None,
            max_frame_bytes=_opt_int(payload, "maxFrameBytes"),
            max_reassembled_frame_bytes=_opt_int(payload, "maxReassembledFrameBytes"),
        )
    if kind == "extension_ui_request":
        return parse_extension_ui_request(payload)
    if kind == "extension_error":
        return ExtensionError(
            extension_path=_str(payload, "extensionPath"),
            event=_str(payload, "event"),
            error=_str(payload, "error"),
        )
    if kind == "agent_start":
        return AgentStartEvent()
    if kind == "agent_end":
        messages = payload.get("messages")
        if messages is not None and not isinstance(messages, list):
            raise ValueError("agent_end.messages must be a list")
        return AgentEndEvent(
            messages=tuple(messages or ()),
            message_count=_opt_int(payload, "messageCount"),
            is_terminal=_opt_bool(payload, "isTerminal"),
        )
    if kind == "turn_start":
        return TurnStartEvent()
    if kind == "turn_end":
        results = payload.get("toolResults")
        return TurnEndEvent(
            message=_message(payload, "message", "turn_end"),
            tool_results=_objs(results),  # type: ignore[arg-type]
        )
    if kind == "message_start":
        return MessageStartEvent(message=_message(payload, "message", "message_start"))
    if kind == "message_update":
        ame = _obj(payload.get("assistantMessageEvent"), "message_update.assistantMessageEvent")
        if not isinstance(ame.get("type"), str):
            raise ValueError("message_update.assistantMessageEvent.type must be a string")
        return MessageUpdateEvent(
            message=_message(payload, "message", "message_update"),
            # Typed by its type; a type the table does not name passes through as the dict it is.
            assistant_message_event=cast(AssistantMessageEvent, ame),
        )
    if kind == "message_end":
        return MessageEndEvent(message=_message(payload, "message", "message_end"))
    if kind == "tool_execution_start":
        return ToolExecutionStartEvent(
            tool_call_id=_str(payload, "toolCallId"),
            tool_name=_str(payload, "toolName"),
            args=payload.get("args"),
            intent=_opt_str(payload, "intent"),
        )
    if kind == "tool_execution_update":
        return ToolExecutionUpdateEvent(
            tool_call_id=_str(payload, "toolCallId"),
            tool_name=_str(payload, "toolName"),
            args=payload.get("args"),
            partial_result=payload.get("partialResult"),
        )
    if kind == "tool_execution_end":
        return ToolExecutionEndEvent(
            tool_call_id=_str(payload, "toolCallId"),
            tool_name=_str(payload, "toolName"),
            result=payload.get("result"),
            is_error=_opt_bool(payload, "isError"),
        )
    if kind == "auto_compaction_start":
        return AutoCompactionStartEvent(
            reason=_literal(payload.get("reason"), _COMPACTION_REASONS,
                            "auto_compaction_start.reason", "threshold"),
            action=_literal(payload.get("action"), _COMPACTION_ACTIONS,
                            "auto_compaction_start.action", "context-full"),
        )
    if kind == "auto_compaction_end":
        result = payload.get("result")
        return AutoCompactionEndEvent(
            action=_literal(payload.get("action"), _COMPACTION_ACTIONS,
                            "auto_compaction_end.action", "context-full"),
            result=parse_compaction_result(result) if isinstance(result, dict) else None,
            aborted=_bool(payload, "aborted"),
            will_retry=_bool(payload, "willRetry"),
            error_message=_opt_str(payload, "errorMessage"),
            skipped=_opt_bool(payload, "skipped"),
        )
    if kind == "auto_retry_start":
        return AutoRetryStartEvent(
            attempt=_int(payload, "attempt"),
            max_attempts=_int(payload, "maxAttempts"),
            delay_ms=_int(payload, "delayMs"),
            error_message=_str(payload, "errorMessage"),
        )
    if kind == "auto_retry_end":
        return AutoRetryEndEvent(
            success=_bool(payload, "success"),
            attempt=_int(payload, "attempt"),
            final_error=_opt_str(payload, "finalError"),
        )
    if kind == "retry_fallback_applied":
        return RetryFallbackAppliedEvent(
            from_model=_str(payload, "from"), to_model=_str(payload, "to"), role=_str(payload, "role")
        )
    if kind == "retry_fallback_succeeded":
        return RetryFallbackSucceededEvent(model=_str(payload, "model"), role=_str(payload, "role"))
    if kind == "ttsr_triggered":
        return TtsrTriggeredEvent(rules=_objs(payload.get("rules")))
    if kind == "todo_reminder":
        todos = payload.get("todos")
        return TodoReminderEvent(
            todos=tuple(
                _todo_item_strict(t, "todo_reminder.todos[]") for t in (todos if isinstance(todos, list) else ())
            ),
            attempt=_int(payload, "attempt"),
            max_attempts=_int(payload, "maxAttempts"),
        )
    if kind == "todo_auto_clear":
        return TodoAutoClearEvent()
    if kind == "policy_eval":
        args = payload.get("arguments")
        return PolicyEvalEvent(
            id=_str(payload, "id"),
            tool_name=_str(payload, "toolName"),
            tool_call_id=_str(payload, "toolCallId"),
            arguments=args if isinstance(args, dict) else {},
            parent_tool_call_id=_opt_str(payload, "parentToolCallId"),
        )
    if kind == "tool_blocked":
        return ToolBlockedEvent(
            tool_call_id=_str(payload, "toolCallId"),
            tool_name=_str(payload, "toolName"),
            reason=_str(payload, "reason"),
        )
    return UnknownNotification(payload=dict(payload))


def to_notification(payload: object, *, private: bool = False) -> RpcNotification:
    """:func:`parse_notification` that never raises: failures become UnknownNotification.
    ``private``: the dict was decoded for this call alone, so the event may keep its parts
    (no copy: what keeps decoding cheap)."""
    if not isinstance(payload, dict):
        return UnknownNotification(payload={"value": payload}, parse_error="frame is not an object")
    try:
        return _parse_notification(payload) if private else parse_notification(payload)
    except (TypeError, ValueError) as exc:
        return UnknownNotification(payload=payload, parse_error=str(exc))


# --- helpers ---------------------------------------------------------------------------------


def image_from_path(path: str | Path, mime_type: str | None = None) -> ImageContent:
    file_path = Path(path)
    resolved = mime_type or mimetypes.guess_type(file_path.name)[0] or "application/octet-stream"
    return {
        "type": "image",
        "mimeType": resolved,
        "data": base64.b64encode(file_path.read_bytes()).decode("ascii"),
    }


_TEXT_ROLES: Final = frozenset({"user", "developer", "assistant", "toolResult", "custom", "hookMessage"})


def message_text(message: Mapping[str, Any], *, include_thinking: bool = False) -> str | None:
    if message.get("role") not in _TEXT_ROLES:
        return None
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    parts: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif include_thinking and block.get("type") == "thinking" and isinstance(block.get("thinking"), str):
            parts.append(block["thinking"])
    return "".join(parts) or None


def message_text_with_thinking(message: Mapping[str, Any]) -> str | None:
    return message_text(message, include_thinking=True)


def assistant_text(message: Mapping[str, Any], *, include_thinking: bool = False) -> str | None:
    if message.get("role") != "assistant":
        return None
    return message_text(message, include_thinking=include_thinking)


def assistant_text_with_thinking(message: Mapping[str, Any]) -> str | None:
    return assistant_text(message, include_thinking=True)
