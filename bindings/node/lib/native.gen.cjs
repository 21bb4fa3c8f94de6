'use strict';
// The koffi declarations of the omprpc C ABI: its structs, functions, status codes and other
// enums' constants.
// GENERATED FILE: produced from include/omprpc.h by tests/support/gen_ffi.rs. Do not edit;
// run `make generate` to regenerate. native.cjs binds them; errors.cjs re-exports Status.

/**
 * Registers the header's structs with `koffi` under their C names (the declarations below use
 * them); once per koffi instance, before binding. Returns the struct types by name.
 */
function defineStructs(koffi) {
  const types = {};
  types.omprpc_str = koffi.struct('omprpc_str', {
    data: 'void *',
    len: 'size_t',
  });
  types.omprpc_event_view = koffi.struct('omprpc_event_view', {
    event_type: 'omprpc_str',
    json: 'omprpc_str',
  });
  types.omprpc_turn_info = koffi.struct('omprpc_turn_info', {
    outcome: 'int',
    agent_invoked: 'bool',
    event_count: 'size_t',
    request_id: 'omprpc_str',
    assistant_text: 'omprpc_str',
    stop_reason: 'omprpc_str',
    error_message: 'omprpc_str',
    usage_json: 'omprpc_str',
    messages_json: 'omprpc_str',
    assistant_message_json: 'omprpc_str',
    prompt_result_json: 'omprpc_str',
    summary_json: 'omprpc_str',
    turn_json: 'omprpc_str',
    attempts: 'uint32_t',
    settled: 'bool',
    failed_attempts_json: 'omprpc_str',
    compactions_json: 'omprpc_str',
  });
  return types;
}

/** Required: loading fails without them. */
const DECLS = {
  version: 'const char *omprpc_version(void)',
  abiVersion: 'uint32_t omprpc_abi_version(void)',
  statusName: 'const char *omprpc_status_name(int status)',
  stringFree: 'void omprpc_string_free(void *s)',
  buildArgv: 'int omprpc_build_argv(const char *options_json, _Out_ void **out_argv_json, _Out_ void **out_error)',
  start: 'int omprpc_client_start(const char *options_json, _Out_ void **out_client, _Out_ void **out_error)',
  request: 'int omprpc_client_request(void *client, const char *type_, const char *params_json, int64_t timeout_ms, _Out_ void **out_data_json, _Out_ void **out_error)',
  sendFrame: 'int omprpc_client_send_frame(void *client, const char *frame_json, _Out_ void **out_error)',
  prompt: 'int omprpc_client_prompt(void *client, const char *message, const char *options_json, int64_t timeout_ms, _Out_ void **out_request_id, _Out_ void **out_error)',
  abortAndPrompt: 'int omprpc_client_abort_and_prompt(void *client, const char *message, const char *options_json, int64_t timeout_ms, _Out_ void **out_request_id, _Out_ void **out_error)',
  promptAndWait: 'int omprpc_client_prompt_and_wait(void *client, const char *message, const char *options_json, int64_t timeout_ms, _Out_ void **out_turn_json, _Out_ void **out_error)',
  steer: 'int omprpc_client_steer(void *client, const char *message, const char *options_json, int64_t timeout_ms, _Out_ void **out_error)',
  followUp: 'int omprpc_client_follow_up(void *client, const char *message, const char *options_json, int64_t timeout_ms, _Out_ void **out_error)',
  abort: 'int omprpc_client_abort(void *client, int64_t timeout_ms, _Out_ void **out_error)',
  getState: 'int omprpc_client_get_state(void *client, int64_t timeout_ms, _Out_ void **out_state_json, _Out_ void **out_error)',
  bash: 'int omprpc_client_bash(void *client, const char *command, int64_t timeout_ms, _Out_ void **out_result_json, _Out_ void **out_error)',
  collectEvents: 'int omprpc_client_collect_events(void *client, int64_t timeout_ms, _Out_ void **out_events_json, _Out_ void **out_error)',
  waitForIdle: 'int omprpc_client_wait_for_idle(void *client, int64_t timeout_ms, _Out_ void **out_error)',
  nextEvent: 'int omprpc_client_next_event(void *client, int64_t timeout_ms, _Out_ void **out_event_json, _Out_ void **out_error)',
  nextEvents: 'int omprpc_client_next_events(void *client, size_t max_events, int64_t timeout_ms, _Out_ void **out_events_json, _Out_ void **out_error)',
  eventFd: 'int omprpc_client_event_fd(void *client, _Out_ int *out_fd, _Out_ void **out_error)',
  nextUiRequest: 'int omprpc_client_next_ui_request(void *client, int64_t timeout_ms, _Out_ void **out_request_json, _Out_ void **out_error)',
  uiSendValue: 'int omprpc_client_ui_send_value(void *client, const char *request_id, const char *value, _Out_ void **out_error)',
  uiSendConfirmation: 'int omprpc_client_ui_send_confirmation(void *client, const char *request_id, bool confirmed, _Out_ void **out_error)',
  uiCancel: 'int omprpc_client_ui_cancel(void *client, const char *request_id, bool timed_out, _Out_ void **out_error)',
  setUiPolicy: 'int omprpc_client_set_ui_policy(void *client, const char *policy_json, _Out_ void **out_error)',
  setHostTools: 'int omprpc_client_set_host_tools(void *client, const char *tools_json, int64_t timeout_ms, _Out_ void **out_data_json, _Out_ void **out_error)',
  setHostUriSchemes: 'int omprpc_client_set_host_uri_schemes(void *client, const char *schemes_json, int64_t timeout_ms, _Out_ void **out_data_json, _Out_ void **out_error)',
  hostToolUpdate: 'int omprpc_client_host_tool_update(void *client, const char *call_id, const char *partial_result_json, _Out_ void **out_error)',
  hostToolResult: 'int omprpc_client_host_tool_result(void *client, const char *call_id, const char *result_json, bool is_error, _Out_ void **out_error)',
  hostUriResult: 'int omprpc_client_host_uri_result(void *client, const char *request_id, const char *result_json, _Out_ void **out_error)',
  stderr: 'int omprpc_client_stderr(void *client, _Out_ void **out_text, _Out_ void **out_error)',
  protocolErrors: 'int omprpc_client_protocol_errors(void *client, _Out_ void **out_json, _Out_ void **out_error)',
  info: 'int omprpc_client_info(void *client, _Out_ void **out_json, _Out_ void **out_error)',
  close: 'int omprpc_client_close(void *client, _Out_ void **out_error)',
  free: 'void omprpc_client_free(void *client)',
};

/** Later additions (same ABI version): bound when present, an error on use otherwise. */
const OPTIONAL_DECLS = {
  envAllowlisted: 'int omprpc_env_allowlisted(const char *options_json, _Out_ void **out_env_json, _Out_ void **out_error)',
  promptFromContent: 'int omprpc_prompt_from_content(const char *blocks_json, _Out_ void **out_prompt_json, _Out_ void **out_error)',
  providerConfig: 'int omprpc_provider_config(const char *options_json, _Out_ void **out_result_json, _Out_ void **out_error)',
  sanitizeSchema: 'int omprpc_sanitize_schema(const char *schema_json, const char *options_json, _Out_ void **out_result_json, _Out_ void **out_error)',
  skillsFlags: 'int omprpc_skills_flags(const char *options_json, _Out_ void **out_result_json, _Out_ void **out_error)',
  nextEventsLines: 'int omprpc_client_next_events_lines(void *client, size_t max_events, int64_t timeout_ms, _Out_ void **out_events_jsonl, _Out_ void **out_error)',
  eventHandle: 'int omprpc_client_event_handle(void *client, _Out_ void **out_handle, _Out_ void **out_error)',
  setQueueResponses: 'int omprpc_client_set_queue_responses(void *client, bool on, _Out_ void **out_error)',
  addHostTools: 'int omprpc_client_add_host_tools(void *client, const char *tools_json, int64_t timeout_ms, _Out_ void **out_data_json, _Out_ void **out_error)',
  removeHostTools: 'int omprpc_client_remove_host_tools(void *client, const char *names_json, int64_t timeout_ms, _Out_ void **out_data_json, _Out_ void **out_error)',
  addHostUriSchemes: 'int omprpc_client_add_host_uri_schemes(void *client, const char *schemes_json, int64_t timeout_ms, _Out_ void **out_data_json, _Out_ void **out_error)',
  removeHostUriSchemes: 'int omprpc_client_remove_host_uri_schemes(void *client, const char *schemes_json, int64_t timeout_ms, _Out_ void **out_data_json, _Out_ void **out_error)',
  policyVerdict: 'int omprpc_client_policy_verdict(void *client, const char *request_id, bool allow, const char *reason, _Out_ void **out_error)',
  counters: 'int omprpc_client_counters(void *client, _Out_ void **out_json, _Out_ void **out_error)',
  nextLogs: 'int omprpc_client_next_logs(void *client, size_t max_records, int64_t timeout_ms, _Out_ void **out_logs_json, _Out_ void **out_error)',
  summarize: 'int omprpc_summarize(const char *events_json, const char *options_json, _Out_ void **out_summary_json, _Out_ void **out_error)',
  summarizerNew: 'int omprpc_summarizer_new(const char *options_json, _Out_ void **out_summarizer, _Out_ void **out_error)',
  summarizerFeed: 'int omprpc_summarizer_feed(void *summarizer, const char *event_json, _Out_ void **out_derived_json, _Out_ void **out_error)',
  summarizerSummary: 'int omprpc_summarizer_summary(void *summarizer, _Out_ void **out_summary_json, _Out_ void **out_error)',
  summarizerFree: 'void omprpc_summarizer_free(void *summarizer)',
  nextEventBatch: 'int omprpc_client_next_event_batch(void *client, size_t max_events, int64_t timeout_ms, _Out_ void **out_batch, _Out_ void **out_error)',
  collectEventBatch: 'int omprpc_client_collect_event_batch(void *client, int64_t timeout_ms, _Out_ void **out_batch, _Out_ void **out_error)',
  eventBatchEvents: 'int omprpc_event_batch_events(void *batch, _Out_ const omprpc_event_view **out_events, _Out_ size_t *out_count, _Out_ void **out_error)',
  eventBatchFree: 'void omprpc_event_batch_free(void *batch)',
  promptAndWaitTurn: 'int omprpc_client_prompt_and_wait_turn(void *client, const char *message, const char *options_json, int64_t timeout_ms, _Out_ void **out_turn, _Out_ void **out_error)',
  promptBegin: 'int omprpc_client_prompt_begin(void *client, const char *message, const char *options_json, int64_t timeout_ms, _Out_ void **out_request_id, _Out_ void **out_error)',
  takeTurn: 'int omprpc_client_take_turn(void *client, const char *request_id, _Out_ void **out_turn, _Out_ void **out_error)',
  releaseTurn: 'int omprpc_client_release_turn(void *client, const char *request_id, _Out_ void **out_error)',
  turnGetInfo: 'int omprpc_turn_get_info(void *turn, _Out_ omprpc_turn_info *out_info, _Out_ void **out_error)',
  turnEvents: 'int omprpc_turn_events(void *turn, _Out_ const omprpc_event_view **out_events, _Out_ size_t *out_count, _Out_ void **out_error)',
  turnMessages: 'int omprpc_turn_messages(void *turn, _Out_ const omprpc_str **out_messages, _Out_ size_t *out_count, _Out_ void **out_error)',
  turnFree: 'void omprpc_turn_free(void *turn)',
};

/** `omprpc_status`: the result of every fallible call (values never renumbered). */
const Status = Object.freeze({
  OK: 0,
  INVALID_ARGUMENT: 1,
  INVALID_JSON: 2,
  INVALID_UTF8: 3,
  TIMEOUT: 4,
  COMMAND_FAILED: 5,
  PROCESS_EXITED: 6,
  CLOSED: 7,
  CONCURRENCY: 8,
  PROTOCOL: 9,
  IO: 10,
  NOT_FOUND: 11,
  CANCELLED: 12,
  LIMIT_EXCEEDED: 13,
  PANIC: 14,
});

/** `omprpc_turn_outcome`. */
const TurnOutcome = Object.freeze({
  AGENT_END: 0,
  PROMPT_RESULT: 1,
  NOT_INVOKED: 2,
  AGENT_SETTLED: 3,
  ABORTED: 4,
});

module.exports = { defineStructs, DECLS, OPTIONAL_DECLS, Status, TurnOutcome };
