"""The ctypes declarations of the omprpc C ABI: its status codes, its other enums' constants, its
structs and every function's signature.

GENERATED FILE: produced from include/omprpc.h by tests/support/gen_ffi.rs. Do not edit; run
``make generate`` to regenerate. ``_ffi.py`` binds the functions: those of ``REQUIRED`` must be
exported (an ImportError otherwise), the others are bound when present (an error on use
otherwise). The structs keep their C names (``omprpc_str`` …), as in the header, koffi and cgo.
"""

from __future__ import annotations

from ctypes import POINTER, Structure, c_bool, c_char_p, c_int, c_int64, c_size_t, c_uint32, c_void_p
from enum import IntEnum
from typing import Any

__all__ = [
    "Status",
    "OK",
    "INVALID_ARGUMENT",
    "INVALID_JSON",
    "INVALID_UTF8",
    "TIMEOUT",
    "COMMAND_FAILED",
    "PROCESS_EXITED",
    "CLOSED",
    "CONCURRENCY",
    "PROTOCOL",
    "IO",
    "NOT_FOUND",
    "CANCELLED",
    "LIMIT_EXCEEDED",
    "PANIC",
    "TURN_OUTCOME_AGENT_END",
    "TURN_OUTCOME_PROMPT_RESULT",
    "TURN_OUTCOME_NOT_INVOKED",
    "TURN_OUTCOME_AGENT_SETTLED",
    "TURN_OUTCOME_ABORTED",
    "omprpc_str",
    "omprpc_event_view",
    "omprpc_turn_info",
]

# omprpc_status: the result of every fallible call (values never renumbered).
OK = 0
INVALID_ARGUMENT = 1
INVALID_JSON = 2
INVALID_UTF8 = 3
TIMEOUT = 4
COMMAND_FAILED = 5
PROCESS_EXITED = 6
CLOSED = 7
CONCURRENCY = 8
PROTOCOL = 9
IO = 10
NOT_FOUND = 11
CANCELLED = 12
LIMIT_EXCEEDED = 13
PANIC = 14


class Status(IntEnum):
    """``omprpc_status`` as an enum: every ``RpcError`` raised from the library carries one."""

    OK = 0
    INVALID_ARGUMENT = 1
    INVALID_JSON = 2
    INVALID_UTF8 = 3
    TIMEOUT = 4
    COMMAND_FAILED = 5
    PROCESS_EXITED = 6
    CLOSED = 7
    CONCURRENCY = 8
    PROTOCOL = 9
    IO = 10
    NOT_FOUND = 11
    CANCELLED = 12
    LIMIT_EXCEEDED = 13
    PANIC = 14


# omprpc_turn_outcome
TURN_OUTCOME_AGENT_END = 0
TURN_OUTCOME_PROMPT_RESULT = 1
TURN_OUTCOME_NOT_INVOKED = 2
TURN_OUTCOME_AGENT_SETTLED = 3
TURN_OUTCOME_ABORTED = 4


class omprpc_str(Structure):
    _fields_ = [
        ("data", c_void_p),
        ("len", c_size_t),
    ]


class omprpc_event_view(Structure):
    _fields_ = [
        ("event_type", omprpc_str),
        ("json", omprpc_str),
    ]


class omprpc_turn_info(Structure):
    _fields_ = [
        ("outcome", c_int),
        ("agent_invoked", c_bool),
        ("event_count", c_size_t),
        ("request_id", omprpc_str),
        ("assistant_text", omprpc_str),
        ("stop_reason", omprpc_str),
        ("error_message", omprpc_str),
        ("usage_json", omprpc_str),
        ("messages_json", omprpc_str),
        ("assistant_message_json", omprpc_str),
        ("prompt_result_json", omprpc_str),
        ("summary_json", omprpc_str),
        ("turn_json", omprpc_str),
        ("attempts", c_uint32),
        ("settled", c_bool),
        ("failed_attempts_json", omprpc_str),
        ("compactions_json", omprpc_str),
    ]


_PP = POINTER(c_void_p)

# name: (restype, argtypes)
SIGNATURES: dict[str, tuple[Any, list[Any]]] = {
    "omprpc_version": (c_void_p, []),
    "omprpc_abi_version": (c_uint32, []),
    "omprpc_status_name": (c_void_p, [c_int]),
    "omprpc_string_free": (None, [c_void_p]),
    "omprpc_build_argv": (c_int, [c_char_p, _PP, _PP]),
    "omprpc_env_allowlisted": (c_int, [c_char_p, _PP, _PP]),
    "omprpc_prompt_from_content": (c_int, [c_char_p, _PP, _PP]),
    "omprpc_provider_config": (c_int, [c_char_p, _PP, _PP]),
    "omprpc_sanitize_schema": (c_int, [c_char_p, c_char_p, _PP, _PP]),
    "omprpc_skills_flags": (c_int, [c_char_p, _PP, _PP]),
    "omprpc_client_start": (c_int, [c_char_p, _PP, _PP]),
    "omprpc_client_request": (c_int, [c_void_p, c_char_p, c_char_p, c_int64, _PP, _PP]),
    "omprpc_client_send_frame": (c_int, [c_void_p, c_char_p, _PP]),
    "omprpc_client_prompt": (c_int, [c_void_p, c_char_p, c_char_p, c_int64, _PP, _PP]),
    "omprpc_client_abort_and_prompt": (c_int, [c_void_p, c_char_p, c_char_p, c_int64, _PP, _PP]),
    "omprpc_client_prompt_and_wait": (c_int, [c_void_p, c_char_p, c_char_p, c_int64, _PP, _PP]),
    "omprpc_client_steer": (c_int, [c_void_p, c_char_p, c_char_p, c_int64, _PP]),
    "omprpc_client_follow_up": (c_int, [c_void_p, c_char_p, c_char_p, c_int64, _PP]),
    "omprpc_client_abort": (c_int, [c_void_p, c_int64, _PP]),
    "omprpc_client_get_state": (c_int, [c_void_p, c_int64, _PP, _PP]),
    "omprpc_client_bash": (c_int, [c_void_p, c_char_p, c_int64, _PP, _PP]),
    "omprpc_client_collect_events": (c_int, [c_void_p, c_int64, _PP, _PP]),
    "omprpc_client_wait_for_idle": (c_int, [c_void_p, c_int64, _PP]),
    "omprpc_client_next_event": (c_int, [c_void_p, c_int64, _PP, _PP]),
    "omprpc_client_next_events": (c_int, [c_void_p, c_size_t, c_int64, _PP, _PP]),
    "omprpc_client_next_events_lines": (c_int, [c_void_p, c_size_t, c_int64, _PP, _PP]),
    "omprpc_client_event_fd": (c_int, [c_void_p, POINTER(c_int), _PP]),
    "omprpc_client_event_handle": (c_int, [c_void_p, _PP, _PP]),
    "omprpc_client_next_ui_request": (c_int, [c_void_p, c_int64, _PP, _PP]),
    "omprpc_client_ui_send_value": (c_int, [c_void_p, c_char_p, c_char_p, _PP]),
    "omprpc_client_ui_send_confirmation": (c_int, [c_void_p, c_char_p, c_bool, _PP]),
    "omprpc_client_ui_cancel": (c_int, [c_void_p, c_char_p, c_bool, _PP]),
    "omprpc_client_set_queue_responses": (c_int, [c_void_p, c_bool, _PP]),
    "omprpc_client_set_ui_policy": (c_int, [c_void_p, c_char_p, _PP]),
    "omprpc_client_set_host_tools": (c_int, [c_void_p, c_char_p, c_int64, _PP, _PP]),
    "omprpc_client_set_host_uri_schemes": (c_int, [c_void_p, c_char_p, c_int64, _PP, _PP]),
    "omprpc_client_add_host_tools": (c_int, [c_void_p, c_char_p, c_int64, _PP, _PP]),
    "omprpc_client_remove_host_tools": (c_int, [c_void_p, c_char_p, c_int64, _PP, _PP]),
    "omprpc_client_add_host_uri_schemes": (c_int, [c_void_p, c_char_p, c_int64, _PP, _PP]),
    "omprpc_client_remove_host_uri_schemes": (c_int, [c_void_p, c_char_p, c_int64, _PP, _PP]),
    "omprpc_client_host_tool_update": (c_int, [c_void_p, c_char_p, c_char_p, _PP]),
    "omprpc_client_host_tool_result": (c_int, [c_void_p, c_char_p, c_char_p, c_bool, _PP]),
    "omprpc_client_host_uri_result": (c_int, [c_void_p, c_char_p, c_char_p, _PP]),
    "omprpc_client_policy_verdict": (c_int, [c_void_p, c_char_p, c_bool, c_char_p, _PP]),
    "omprpc_client_stderr": (c_int, [c_void_p, _PP, _PP]),
    "omprpc_client_protocol_errors": (c_int, [c_void_p, _PP, _PP]),
    "omprpc_client_info": (c_int, [c_void_p, _PP, _PP]),
    "omprpc_client_counters": (c_int, [c_void_p, _PP, _PP]),
    "omprpc_client_next_logs": (c_int, [c_void_p, c_size_t, c_int64, _PP, _PP]),
    "omprpc_client_close": (c_int, [c_void_p, _PP]),
    "omprpc_client_free": (None, [c_void_p]),
    "omprpc_summarize": (c_int, [c_char_p, c_char_p, _PP, _PP]),
    "omprpc_summarizer_new": (c_int, [c_char_p, _PP, _PP]),
    "omprpc_summarizer_feed": (c_int, [c_void_p, c_char_p, _PP, _PP]),
    "omprpc_summarizer_summary": (c_int, [c_void_p, _PP, _PP]),
    "omprpc_summarizer_free": (None, [c_void_p]),
    "omprpc_client_next_event_batch": (c_int, [c_void_p, c_size_t, c_int64, _PP, _PP]),
    "omprpc_client_collect_event_batch": (c_int, [c_void_p, c_int64, _PP, _PP]),
    "omprpc_event_batch_events": (c_int, [c_void_p, POINTER(POINTER(omprpc_event_view)), POINTER(c_size_t), _PP]),
    "omprpc_event_batch_free": (None, [c_void_p]),
    "omprpc_client_prompt_and_wait_turn": (c_int, [c_void_p, c_char_p, c_char_p, c_int64, _PP, _PP]),
    "omprpc_client_prompt_begin": (c_int, [c_void_p, c_char_p, c_char_p, c_int64, _PP, _PP]),
    "omprpc_client_take_turn": (c_int, [c_void_p, c_char_p, _PP, _PP]),
    "omprpc_client_release_turn": (c_int, [c_void_p, c_char_p, _PP]),
    "omprpc_turn_get_info": (c_int, [c_void_p, POINTER(omprpc_turn_info), _PP]),
    "omprpc_turn_events": (c_int, [c_void_p, POINTER(POINTER(omprpc_event_view)), POINTER(c_size_t), _PP]),
    "omprpc_turn_messages": (c_int, [c_void_p, POINTER(POINTER(omprpc_str)), POINTER(c_size_t), _PP]),
    "omprpc_turn_free": (None, [c_void_p]),
}

# The functions the binding cannot load without; every other one is optional.
REQUIRED: frozenset[str] = frozenset({
    "omprpc_version",
    "omprpc_abi_version",
    "omprpc_status_name",
    "omprpc_string_free",
    "omprpc_build_argv",
    "omprpc_client_start",
    "omprpc_client_request",
    "omprpc_client_send_frame",
    "omprpc_client_prompt",
    "omprpc_client_abort_and_prompt",
    "omprpc_client_prompt_and_wait",
    "omprpc_client_steer",
    "omprpc_client_follow_up",
    "omprpc_client_abort",
    "omprpc_client_get_state",
    "omprpc_client_bash",
    "omprpc_client_collect_events",
    "omprpc_client_wait_for_idle",
    "omprpc_client_next_event",
    "omprpc_client_next_events",
    "omprpc_client_event_fd",
    "omprpc_client_next_ui_request",
    "omprpc_client_ui_send_value",
    "omprpc_client_ui_send_confirmation",
    "omprpc_client_ui_cancel",
    "omprpc_client_set_ui_policy",
    "omprpc_client_set_host_tools",
    "omprpc_client_set_host_uri_schemes",
    "omprpc_client_host_tool_update",
    "omprpc_client_host_tool_result",
    "omprpc_client_host_uri_result",
    "omprpc_client_stderr",
    "omprpc_client_protocol_errors",
    "omprpc_client_info",
    "omprpc_client_close",
    "omprpc_client_free",
})
