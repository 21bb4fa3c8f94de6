"""The public surface: every name of omp_rpc (casepot/oh-my-pi db252a287c3d, python/omp-rpc)
exists here, the README's tables cover omp_rpc's methods, and docs/names.md every C export."""

from __future__ import annotations

import inspect
import re

from conftest import REPO
from omprpc import RpcClient

README = (REPO / "bindings" / "python" / "README.md").read_text()
HEADER = (REPO / "include" / "omprpc.h").read_text()

def test_the_omp_rpc_surface_is_complete() -> None:
    """Every public name of omp_rpc exists here (its __all__, and RpcClient's methods)."""
    import omprpc

    exported = (
        "AgentEventListener ExtensionErrorListener ListenerErrorEvent ListenerErrorListener NotificationListener "
        "PromptTurn ReadyListener RpcClient RpcCommandError RpcConcurrencyError RpcError RpcProcessExitError "
        "RpcProtocolError RpcTimeoutError ProtocolErrorListener UiRequestListener HostTool HostToolContext "
        "HostToolResultPayload HostToolResultValue host_tool HostUri HostUriContentType HostUriTrustClass "
        "HostUriContext HostUriReadHandler HostUriReadResult HostUriReadValue HostUriWriteHandler host_uri "
        "AgentEndEvent AgentMessage AssistantMessage AssistantMessageEvent AutoCompactionEndEvent "
        "AutoCompactionStartEvent AutoRetryEndEvent AutoRetryStartEvent BashResult BranchMessage BranchResult "
        "CancellationResult CompactionResult CompactionSummaryMessage CustomMessage DeveloperMessage ExtensionError "
        "ExtensionUiRequest FileMentionMessage HookMessage ImageContent MessageEndEvent MessageStartEvent "
        "MessageUpdateEvent ModelCycleResult ModelInfo ModelCost PythonExecutionMessage ReadyEvent "
        "RetryFallbackAppliedEvent RetryFallbackSucceededEvent RpcAgentEvent RpcNotification SessionState "
        "SessionStats ThinkingConfig ThinkingLevel ThinkingLevelCycleResult TodoAutoClearEvent TodoItem TodoPhase "
        "TodoReminderEvent TodoStatus ToolDescriptor ToolExecutionEndEvent ToolExecutionStartEvent "
        "ToolExecutionUpdateEvent ToolResultMessage TurnEndEvent TurnStartEvent UnknownNotification UserMessage "
        "assistant_text assistant_text_with_thinking image_from_path message_text message_text_with_thinking "
        "parse_notification parse_session_state parse_todo_phases"
    ).split()
    methods = (
        "get_protocol_info get_state set_model cycle_model get_available_models set_thinking_level "
        "cycle_thinking_level set_steering_mode set_follow_up_mode set_interrupt_mode cancel_operation compact "
        "set_auto_compaction set_auto_retry abort_retry bash abort_bash get_session_stats export_html new_session "
        "switch_session branch get_branch_messages get_last_assistant_text get_login_providers login "
        "set_session_name get_todos set_todos clear_todos get_messages_response get_messages get_session_entries "
        "get_session_tree get_observable_sessions set_custom_tools add_custom_tools remove_custom_tools "
        "set_host_uris add_host_uris remove_host_uris prompt steer follow_up abort abort_and_prompt "
        "prompt_and_wait wait_for_idle collect_events request_raw on_event on_notification on_ready "
        "on_ui_request on_extension_error on_protocol_error on_listener_error on_unknown_notification "
        "install_headless_ui next_ui_request send_ui_value send_ui_confirmation cancel_ui_request start stop "
        "on_agent_start on_agent_end on_turn_start on_turn_end on_message_start on_message_update on_message_end "
        "on_tool_execution_start on_tool_execution_update on_tool_execution_end on_auto_compaction_start "
        "on_auto_compaction_end on_auto_retry_start on_auto_retry_end on_retry_fallback_applied "
        "on_retry_fallback_succeeded on_ttsr_triggered on_todo_reminder on_todo_auto_clear"
    ).split()
    missing = [n for n in exported if not hasattr(omprpc, n)]
    missing += [f"RpcClient.{m}" for m in methods + ["on_frame"] if not hasattr(RpcClient, m)]
    assert missing == [], missing
    # The typed commands all take timeout= (keyword).
    for name in ("get_state", "bash", "compact", "cancel_operation", "get_session_entries", "add_custom_tools",
                 "remove_host_uris", "login", "prompt", "steer", "follow_up", "abort", "set_todos", "get_messages"):
        assert "timeout" in inspect.signature(getattr(RpcClient, name)).parameters, name




def test_the_readme_points_to_the_name_map() -> None:
    """The export-by-export table lives in docs/names.md (one source for all bindings;
    tests/names.rs checks it against the header and the bindings' declarations)."""
    section = README[README.index("## The C API, export by export"):]
    section = section[:section.index("\n## ")]
    assert "docs/names.md" in section
    names = (REPO / "docs" / "names.md").read_text()
    exports = set(re.findall(r"\b(omprpc_[a-z_]+)\(", HEADER))
    assert len(exports) >= 50, "the header scan found too few exports"
    missing = sorted(e for e in exports if f"`{e}`" not in names)
    assert missing == [], f"add these to docs/names.md: {missing}"


def test_the_readme_names_the_omp_rpc_methods_that_differ() -> None:
    section = README[README.index("## omp_rpc, name by name"):]
    section = section[:section.index("\n## ")]
    for name in ("prompt", "follow_up", "cancel_operation", "add_custom_tools", "on_frame", "request_raw",
                 "RpcCommandError", "ReadyEvent", "HostUriContext.range"):
        assert f"`{name}" in section, name
    # Every method the README names exists.
    for name in re.findall(r"`([a-z_]+)\(", section):
        assert hasattr(RpcClient, name), name


#: omp_rpc's RpcClient signatures (db252a287c3d): parameter names in order, "*" keyword-only,
#: "**" var-keyword. omprpc may add keyword-only parameters (timeout=, content=, …).
OMP_RPC_SIGNATURES = {
    "__init__": "*command *executable *provider *model *session_dir *cwd *env *user *group *extra_groups *thinking "
                "*append_system_prompt *provider_session_id *tools *custom_tools *host_uris *no_session *no_skills "
                "*no_rules *no_title *rpc_defaults *extra_args *startup_timeout *request_timeout *max_event_history "
                "*max_stderr_chunks",
    "start": "", "stop": "",
    "install_headless_ui": "*on_request *confirm *select_value *input_value *editor_value",
    "next_ui_request": "timeout", "send_ui_value": "request_id value", "send_ui_confirmation": "request_id confirmed",
    "cancel_ui_request": "request_id *timed_out",
    "get_protocol_info": "", "get_state": "", "set_model": "provider model_id", "cycle_model": "",
    "get_available_models": "", "set_thinking_level": "level", "cycle_thinking_level": "",
    "set_steering_mode": "mode", "set_follow_up_mode": "mode", "set_interrupt_mode": "mode",
    "cancel_operation": "operation_id", "compact": "custom_instructions", "set_auto_compaction": "enabled",
    "set_auto_retry": "enabled", "abort_retry": "", "bash": "command", "abort_bash": "", "get_session_stats": "",
    "export_html": "output_path", "new_session": "parent_session", "switch_session": "session_path",
    "branch": "entry_id", "get_branch_messages": "", "get_last_assistant_text": "", "get_login_providers": "",
    "login": "provider_id", "set_session_name": "name", "get_todos": "", "set_todos": "todos", "clear_todos": "",
    "get_messages_response": "", "get_messages": "",
    "get_session_entries": "*offset *limit *entry_types *include_content", "get_session_tree": "*include_entries",
    "get_observable_sessions": "", "set_custom_tools": "tools", "add_custom_tools": "tools",
    "remove_custom_tools": "tool_names", "set_host_uris": "host_uris", "add_host_uris": "host_uris",
    "remove_host_uris": "schemes", "prompt": "message *images *streaming_behavior", "steer": "message *images",
    "follow_up": "message *images", "abort": "", "abort_and_prompt": "message *images",
    "prompt_and_wait": "message *images *streaming_behavior *timeout", "wait_for_idle": "timeout",
    "collect_events": "timeout", "request_raw": "command_type **payload", "on_frame": "listener",
}


def test_every_omp_rpc_method_has_its_parameters() -> None:
    kinds = {inspect.Parameter.KEYWORD_ONLY: "*", inspect.Parameter.VAR_KEYWORD: "**"}
    for name, want in OMP_RPC_SIGNATURES.items():
        params = list(inspect.signature(getattr(RpcClient, name)).parameters.values())[1:]
        got = [kinds.get(p.kind, "") + p.name for p in params]
        ours = [g for g in got if g in want.split()]
        assert ours == want.split(), (name, got)
        # What omprpc adds is keyword-only (or a defaulted positional after omp_rpc's), so every
        # call written for omp_rpc binds the same way.
        extra = [p for p in params if kinds.get(p.kind, "") + p.name not in want.split()]
        assert all(p.kind is inspect.Parameter.KEYWORD_ONLY or p.default is not p.empty for p in extra), (name, got)
    for prop in ("stderr", "command", "protocol_errors", "listener_errors"):
        assert isinstance(getattr(RpcClient, prop), property), prop
    assert inspect.signature(RpcClient.get_session_tree).parameters["include_entries"].default is False
