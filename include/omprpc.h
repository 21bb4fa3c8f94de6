/*
 * omprpc: native client for the omp / pi coding agents' RPC mode.
 *
 * GENERATED FILE: produced by cbindgen 0.29.4 from the omprpc Rust sources and
 * cbindgen.toml. Do not edit; run `make header` to regenerate.
 * The contract is documented in docs/c-api.md.
 *
 * Conventions of every function below (each one's comment adds what is specific to it):
 *  - Ownership: `const char *` arguments are borrowed UTF-8, for the call only. A `char **out_…`
 *    receives a string owned by the caller, released only with omprpc_string_free (never
 *    free()); out-parameters are written only on OMPRPC_STATUS_OK, `*out_error` (when non-NULL)
 *    only on failure, with a JSON object {"code","status","message",…}.
 *  - Threads: a client may be used from any thread, concurrently, omprpc_client_close
 *    included; omprpc_client_free is the last call on a handle.
 *  - Statuses: each comment lists what the function returns. Every call on a closed client
 *    that needs the agent fails with CLOSED, or with the reason the client closed
 *    (PROCESS_EXITED, PROTOCOL, IO); PANIC means a bug was caught and the client is unusable.
 */

#ifndef OMPRPC_H
#define OMPRPC_H

#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>

/**
 * The omprpc version this header belongs to (Cargo.toml's `version`; `omprpc_version()`
 * returns the library's). Compare OMPRPC_ABI_VERSION, not these, for compatibility.
 */
#define OMPRPC_VERSION_MAJOR 0
#define OMPRPC_VERSION_MINOR 1
#define OMPRPC_VERSION_PATCH 0
#define OMPRPC_VERSION_STRING "0.1.0"

/**
 * The C ABI version. Bumped on every incompatible change; bindings refuse a mismatch.
 */
#define OMPRPC_ABI_VERSION 2

/**
 * Timeout value: wait without a deadline.
 */
#define OMPRPC_TIMEOUT_INFINITE -1

/**
 * Timeout value: use the client's configured default for this kind of call.
 */
#define OMPRPC_TIMEOUT_DEFAULT -2

/**
 * Result of every fallible omprpc call.
 */
typedef enum {
    /**
     * Success (seen only across the C ABI: a Rust call returns `Ok(…)`).
     */
    OMPRPC_STATUS_OK = 0,
    /**
     * A bad argument: a NULL pointer, a bad option value, an unknown id, a command the agent's version lacks.
     */
    OMPRPC_STATUS_INVALID_ARGUMENT = 1,
    /**
     * An input string is not JSON, or not the JSON type the call takes.
     */
    OMPRPC_STATUS_INVALID_JSON = 2,
    /**
     * An input string is not UTF-8.
     */
    OMPRPC_STATUS_INVALID_UTF8 = 3,
    /**
     * The deadline passed (the client stays usable).
     */
    OMPRPC_STATUS_TIMEOUT = 4,
    /**
     * The agent answered `success:false` (also a late prompt failure).
     */
    OMPRPC_STATUS_COMMAND_FAILED = 5,
    /**
     * The agent exited, or closed its stdout.
     */
    OMPRPC_STATUS_PROCESS_EXITED = 6,
    /**
     * The client was closed (by close, or after a fatal fault).
     */
    OMPRPC_STATUS_CLOSED = 7,
    /**
     * A second prompt-lifecycle operation (turn, stream, wait) while one runs.
     */
    OMPRPC_STATUS_CONCURRENCY = 8,
    /**
     * The agent broke the protocol (a bad frame, a bad chunk, …).
     */
    OMPRPC_STATUS_PROTOCOL = 9,
    /**
     * Spawning, reading or writing failed at the OS level.
     */
    OMPRPC_STATUS_IO = 10,
    /**
     * No such host call, UI request or policy question is open.
     */
    OMPRPC_STATUS_NOT_FOUND = 11,
    /**
     * The agent cancelled that host call (the reply was dropped); in the Rust API, a `Cancel` handle cancelled the turn.
     */
    OMPRPC_STATUS_CANCELLED = 12,
    /**
     * A configured bound was exceeded (e.g. `max_event_history`).
     */
    OMPRPC_STATUS_LIMIT_EXCEEDED = 13,
    /**
     * A bug inside omprpc was caught; the client is closed.
     */
    OMPRPC_STATUS_PANIC = 14,
} omprpc_status;

/**
 * How a prompt completed (the turn JSON's `outcome`).
 */
typedef enum {
    /**
     * The last run's terminal `agent_end` ended it, and the agent did not go on by itself (an
     * agent that does not announce settling: omp, pi before 0.80.4).
     */
    OMPRPC_TURN_OUTCOME_AGENT_END = 0,
    /**
     * omp's `prompt_result` answered it (a command that ran no agent loop).
     */
    OMPRPC_TURN_OUTCOME_PROMPT_RESULT = 1,
    /**
     * Nothing ran: the prompt's response said `agentInvoked:false` or
     * `disposition:"handled"`, or the agent proved idle with no run for it.
     */
    OMPRPC_TURN_OUTCOME_NOT_INVOKED = 2,
    /**
     * The agent said it settled (`agent_settled`, pi 0.80.4 on) after the prompt's runs.
     */
    OMPRPC_TURN_OUTCOME_AGENT_SETTLED = 3,
    /**
     * It was aborted: `agent_settled {aborted:true}`, a retry the host aborted in its delay,
     * or a last run that stopped `aborted`.
     */
    OMPRPC_TURN_OUTCOME_ABORTED = 4,
} omprpc_turn_outcome;

/**
 * An omprpc client: one agent process and its RPC session. Opaque.
 */
typedef struct omprpc_client omprpc_client;

/**
 * Events, each with its type: taken from a client's queue or collected through a run.
 */
typedef struct omprpc_event_batch omprpc_event_batch;

/**
 * A turn summarizer: feed it raw events in order; it returns the derived items each one
 * produces and, at any time, the summary so far (see `omprpc_summarize`). Opaque.
 */
typedef struct omprpc_summarizer omprpc_summarizer;

/**
 * A completed prompt: its metadata and its events, borrowed from it.
 */
typedef struct omprpc_turn omprpc_turn;

/**
 * Borrowed UTF-8 bytes (not NUL-terminated): `data` is NULL (and `len` 0) when absent.
 */
typedef struct {
    const char *data;
    size_t len;
} omprpc_str;

/**
 * One event: its `type` (absent when the event has none) and the event verbatim. Within one
 * batch or turn, events of the same type share one `event_type` (the same `data`; for the
 * first 32 distinct types written without escapes), so a binding can decode each distinct
 * type once and recognise it by its address.
 */
typedef struct {
    omprpc_str event_type;
    omprpc_str json;
} omprpc_event_view;

/**
 * A completed turn's metadata. Every `omprpc_str` borrows from the turn (absent: `data` NULL);
 * the `…_json` members are JSON, the others plain UTF-8 text.
 */
typedef struct {
    omprpc_turn_outcome outcome;
    bool agent_invoked;
    /**
     * How many events the turn retained (see `omprpc_turn_events`).
     */
    size_t event_count;
    omprpc_str request_id;
    /**
     * The assistant message's visible text (its text blocks; thinking excluded).
     */
    omprpc_str assistant_text;
    /**
     * The assistant message's `stopReason` ("stop", "toolUse", "error", "aborted", …) and,
     * for an error, its `errorMessage`.
     */
    omprpc_str stop_reason;
    omprpc_str error_message;
    /**
     * The assistant message's `usage` object.
     */
    omprpc_str usage_json;
    /**
     * The messages of every run of the turn, oldest first (each run's `agent_end` messages, a
     * compacted `agent_end` rebuilt), a JSON array.
     */
    omprpc_str messages_json;
    omprpc_str assistant_message_json;
    omprpc_str prompt_result_json;
    /**
     * The turn summary (clients started with `turn_summary`).
     */
    omprpc_str summary_json;
    /**
     * The whole turn JSON, as `omprpc_client_prompt_and_wait` returns it.
     */
    omprpc_str turn_json;
    /**
     * How many attempts the agent made at the prompt: 1, plus one per retry it made and per
     * overflow compaction it retried after (0 when nothing ran).
     */
    uint32_t attempts;
    /**
     * The agent said it settled (`agent_settled`).
     */
    bool settled;
    /**
     * The attempts that failed, oldest first, a JSON array of
     * `{"attempt","error","then","delayMs"?}`; `then` is `retry`, `compaction`, `gave_up`,
     * `cancelled` or `none`.
     */
    omprpc_str failed_attempts_json;
    /**
     * The compactions inside the turn, a JSON array of
     * `{"reason","aborted","willRetry","errorMessage"}`.
     */
    omprpc_str compactions_json;
} omprpc_turn_info;

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

/**
 * The library version (static, never freed).
 * Ownership: a static string; never free it. Threads: any thread, any time.
 */
const char *omprpc_version(void);

/**
 * The C ABI version; equals `OMPRPC_ABI_VERSION` of the header the caller compiled against.
 * Threads: any thread, any time.
 */
uint32_t omprpc_abi_version(void);

/**
 * The name of a status ("OK", "TIMEOUT", …), static; "UNKNOWN" for other values.
 * Ownership: a static string; never free it. Threads: any thread, any time.
 */
const char *omprpc_status_name(int status);

/**
 * Frees a string returned by omprpc. NULL is a no-op. Never pass it memory from elsewhere.
 * Threads: any thread; each string is freed once, after its last use.
 */
void omprpc_string_free(char *s);

/**
 * The argv `omprpc_client_start` would spawn for `options_json`, as a JSON array, exactly
 * (behind the `launcher` when there is one; system prompts included: `omprpc_client_info`
 * shows the redacted form). Starts nothing.
 * Ownership: the caller frees `*out_argv_json` with `omprpc_string_free`. Threads: any
 * thread. Statuses: OK, INVALID_ARGUMENT, INVALID_JSON, INVALID_UTF8, PANIC.
 */
omprpc_status omprpc_build_argv(const char *options_json, char **out_argv_json, char **out_error);

/**
 * The part of this process's environment an agent gets by default (a JSON object): the
 * allow-list of names a coding agent needs (PATH, HOME, locale, proxies, TLS, NODE_*, PI_*,
 * XDG_* …) and the model and search providers' API keys pi and omp read (ANTHROPIC_API_KEY,
 * OPENAI_API_KEY …; not cloud or code-host credentials), plus the exact names in
 * `options_json` `{"passthrough":["AWS_PROFILE"]}` (or NULL). Deny by default.
 * Ownership: the caller frees `*out_env_json` with `omprpc_string_free`. Threads: any thread
 * (reads the environment; do not call setenv concurrently). Statuses: OK, INVALID_ARGUMENT,
 * INVALID_JSON, INVALID_UTF8, PANIC.
 */
omprpc_status omprpc_env_allowlisted(const char *options_json,
                                     char **out_env_json,
                                     char **out_error);

/**
 * Prompt content blocks → `{"message","images"}` for `omprpc_client_prompt` (which also takes
 * them directly as the `content` option): `[{"type":"text","text"}, {"type":"image","path"|
 * "data_uri"}, {"type":"file","path"|"data_uri"|"text","name"?}]`. Images are checked from
 * their bytes; files must be UTF-8 text; an unknown block type is INVALID_ARGUMENT.
 * Ownership: the caller frees `*out_prompt_json` with `omprpc_string_free`. Threads: any
 * thread. Statuses: OK, INVALID_ARGUMENT (also for an unreadable file), INVALID_JSON,
 * INVALID_UTF8, PANIC.
 */
omprpc_status omprpc_prompt_from_content(const char *blocks_json,
                                         char **out_prompt_json,
                                         char **out_error);

/**
 * Writes a custom-provider config (pi: models.json, omp: models.yml) into a private agent
 * directory (0700; or `dir`) and returns `{"dir","file","env","model","envPassthrough"}`:
 * merge `env` into the start options' `env`, `envPassthrough` into `env_passthrough`, and use
 * `model` as the `model` option. The caller removes the directory when done.
 * Ownership: the caller frees `*out_result_json` with `omprpc_string_free` (and removes the
 * directory). Threads: any thread. Statuses: OK, INVALID_ARGUMENT, INVALID_JSON, INVALID_UTF8,
 * IO, PANIC.
 */
omprpc_status omprpc_provider_config(const char *options_json,
                                     char **out_result_json,
                                     char **out_error);

/**
 * A tool-parameter JSON Schema made into the shape LLM providers accept (opt-in; see
 * docs/c-api.md "Schema sanitizer and skills filter"): local `$ref`s inlined (a recursive or
 * remote one is an error), `anyOf`/`oneOf` collapsed to the object branch (else the first
 * non-null typed one), `allOf` of objects merged, `examples`/`default`/`additionalProperties`/
 * `$schema`/`$id`/`$comment` removed, descriptions kept. Returns `{"schema", "dropped":[{"path","reason","value"}]}`:
 * everything taken out. `options_json`: NULL or `{"max_nodes": n}` (default 100000), the
 * bound on the output's size.
 * Ownership: the caller frees `*out_result_json` with `omprpc_string_free`. Threads: any
 * thread. Statuses: OK, INVALID_ARGUMENT (not an object, a recursive or unresolvable `$ref`),
 * INVALID_JSON, INVALID_UTF8, LIMIT_EXCEEDED, PANIC.
 */
omprpc_status omprpc_sanitize_schema(const char *schema_json,
                                     const char *options_json,
                                     char **out_result_json,
                                     char **out_error);

/**
 * The flags that select skills for an agent: `options_json` `{"flavor":"omp"|"pi",
 * "agent_version"?: "X.Y.Z", "skills": "all"|"none"|[names or paths], "tools"?: [names]}` →
 * `{"flags":[…], "needs_read": bool, "tools": [names]|null}`. omp selects by name
 * (`--skills=`), pi from 0.50 by path (`--no-skills --skill <path>`…), older pi only all or
 * none (its `--skills` filters nothing); what the agent cannot express is INVALID_ARGUMENT.
 * `needs_read`: the agent lists skills only with `read` on; `tools` is the given allow-list
 * with `read` added then. The start option `skills` applies the same. Ownership: the caller frees `*out_result_json` with `omprpc_string_free`.
 * Threads: any thread. Statuses: OK, INVALID_ARGUMENT, INVALID_JSON, INVALID_UTF8, PANIC.
 */
omprpc_status omprpc_skills_flags(const char *options_json,
                                  char **out_result_json,
                                  char **out_error);

/**
 * Probes the agent's version (`--version`, once per executable), spawns the agent described by
 * `options_json` (docs/c-api.md lists the keys), waits for its handshake and, with host tools
 * bridged or a tool policy, for the bridge extension's hello; negotiates protocol v2 when
 * offered and registers configured host tools and URI schemes. On failure nothing is left
 * running. Statuses: INVALID_ARGUMENT, INVALID_JSON, IO (spawn), TIMEOUT, PROCESS_EXITED
 * (with exit code and stderr tail), PROTOCOL (also: an unsupported agent version, or no hello
 * from the bridge extension), COMMAND_FAILED. Free the client with `omprpc_client_free`.
 * Ownership: `*out_client` is the caller's until `omprpc_client_free`. Threads: any thread;
 * the new handle may then be shared between threads. Statuses: OK and those listed above,
 * INVALID_UTF8, PANIC.
 */
omprpc_status omprpc_client_start(const char *options_json,
                                  omprpc_client **out_client,
                                  char **out_error);

/**
 * Sends any command `{"type": type, …params}` (params: a JSON object or NULL) and waits for
 * its response. `out_data_json` receives the response's `data` verbatim, `null` when absent.
 * COMMAND_FAILED when the agent answers `success:false` (details in the error JSON).
 * Ownership: the caller frees `*out_data_json` with `omprpc_string_free`. Threads: any
 * thread, concurrently. Statuses: OK, COMMAND_FAILED, TIMEOUT, INVALID_ARGUMENT, INVALID_JSON,
 * INVALID_UTF8, CLOSED (or the close reason: PROCESS_EXITED, PROTOCOL, IO), PANIC.
 */
omprpc_status omprpc_client_request(const omprpc_client *client,
                                    const char *type_,
                                    const char *params_json,
                                    int64_t timeout_ms,
                                    char **out_data_json,
                                    char **out_error);

/**
 * Writes one frame as is (a JSON object with a string `type`), with no id and no response
 * awaited — e.g. `widget_layout`.
 * Threads: any thread, concurrently. Statuses: OK, TIMEOUT (a write that cannot finish),
 * INVALID_ARGUMENT, INVALID_JSON, INVALID_UTF8, CLOSED (or the close reason: PROCESS_EXITED,
 * PROTOCOL, IO), PANIC.
 */
omprpc_status omprpc_client_send_frame(const omprpc_client *client,
                                       const char *frame_json,
                                       char **out_error);

/**
 * Sends `prompt` (options: `{"images":[…],"streamingBehavior":"steer"|"followUp","content":[…]}`
 * or NULL; `message` may be NULL when the options carry `"message"`, e.g. text with a NUL)
 * and returns its request id once the agent acknowledged it. The run streams as events;
 * `omprpc_client_wait_for_idle` waits for it.
 * Ownership: the caller frees `*out_request_id` with `omprpc_string_free`. Threads: any
 * thread, concurrently. Statuses: OK, COMMAND_FAILED, TIMEOUT, INVALID_ARGUMENT, INVALID_JSON,
 * INVALID_UTF8, CLOSED (or the close reason: PROCESS_EXITED, PROTOCOL, IO), PANIC.
 */
omprpc_status omprpc_client_prompt(const omprpc_client *client,
                                   const char *message,
                                   const char *options_json,
                                   int64_t timeout_ms,
                                   char **out_request_id,
                                   char **out_error);

/**
 * Sends `abort_and_prompt`; like `omprpc_client_prompt`.
 * Ownership: the caller frees `*out_request_id` with `omprpc_string_free`. Threads: any
 * thread, concurrently. Statuses: as `omprpc_client_prompt` (OK, COMMAND_FAILED, TIMEOUT, …).
 */
omprpc_status omprpc_client_abort_and_prompt(const omprpc_client *client,
                                             const char *message,
                                             const char *options_json,
                                             int64_t timeout_ms,
                                             char **out_request_id,
                                             char **out_error);

/**
 * Prompts and waits until that prompt completes — where the agent says it will not go on:
 * `agent_settled` (pi 0.80.4 on), else the last run's terminal `agent_end` after the agent's own
 * retries and overflow recovery; or `prompt_result`, `agentInvoked:false`,
 * `disposition:"handled"` — and returns the turn JSON `{"events","requestId","outcome",
 * "agentInvoked","attempts","settled","failedAttempts","compactions","messages",
 * "assistantMessage","assistantText","promptResult","summary"?}` (docs/c-api.md). The timeout covers the whole
 * turn (OMPRPC_TIMEOUT_DEFAULT: the `turn_timeout_ms` option, no deadline unless set).
 * Single-flight with collect_events / wait_for_idle (CONCURRENCY). COMMAND_FAILED for a
 * rejected or late-failed prompt; LIMIT_EXCEEDED past `max_event_history`.
 * Ownership: the caller frees `*out_turn_json` with `omprpc_string_free`. Threads: any
 * thread (one collector at a time). Statuses: OK, COMMAND_FAILED, TIMEOUT, CONCURRENCY,
 * LIMIT_EXCEEDED, INVALID_ARGUMENT, INVALID_JSON, INVALID_UTF8, CLOSED (or the close reason:
 * PROCESS_EXITED, PROTOCOL, IO), PANIC.
 */
omprpc_status omprpc_client_prompt_and_wait(const omprpc_client *client,
                                            const char *message,
                                            const char *options_json,
                                            int64_t timeout_ms,
                                            char **out_turn_json,
                                            char **out_error);

/**
 * Sends `steer` (options: `{"images":[…],"content":[…]}` or NULL; `message` may be NULL when
 * the options carry `"message"`).
 * Threads: any thread, concurrently. Statuses: OK, COMMAND_FAILED, TIMEOUT, INVALID_ARGUMENT,
 * INVALID_JSON, INVALID_UTF8, CLOSED (or the close reason: PROCESS_EXITED, PROTOCOL, IO), PANIC.
 */
omprpc_status omprpc_client_steer(const omprpc_client *client,
                                  const char *message,
                                  const char *options_json,
                                  int64_t timeout_ms,
                                  char **out_error);

/**
 * Sends `follow_up` (options: `{"images":[…],"content":[…]}` or NULL; `message` may be NULL
 * when the options carry `"message"`).
 * Threads: any thread, concurrently. Statuses: as `omprpc_client_steer` (OK, COMMAND_FAILED,
 * TIMEOUT, …).
 */
omprpc_status omprpc_client_follow_up(const omprpc_client *client,
                                      const char *message,
                                      const char *options_json,
                                      int64_t timeout_ms,
                                      char **out_error);

/**
 * Sends `abort`.
 * Threads: any thread, concurrently. Statuses: OK, COMMAND_FAILED, TIMEOUT, INVALID_ARGUMENT,
 * CLOSED (or the close reason: PROCESS_EXITED, PROTOCOL, IO), PANIC.
 */
omprpc_status omprpc_client_abort(const omprpc_client *client,
                                  int64_t timeout_ms,
                                  char **out_error);

/**
 * Sends `get_state`; `out_state_json` receives the session state object.
 * Ownership: the caller frees `*out_state_json` with `omprpc_string_free`. Threads: any
 * thread, concurrently. Statuses: OK, COMMAND_FAILED, TIMEOUT, INVALID_ARGUMENT, CLOSED (or the
 * close reason: PROCESS_EXITED, PROTOCOL, IO), PANIC.
 */
omprpc_status omprpc_client_get_state(const omprpc_client *client,
                                      int64_t timeout_ms,
                                      char **out_state_json,
                                      char **out_error);

/**
 * Sends `bash` with `command`; `out_result_json` receives the BashResult object.
 * Ownership: the caller frees `*out_result_json` with `omprpc_string_free`. Threads: any
 * thread, concurrently. Statuses: OK, COMMAND_FAILED, TIMEOUT, INVALID_ARGUMENT, INVALID_UTF8,
 * CLOSED (or the close reason: PROCESS_EXITED, PROTOCOL, IO), PANIC.
 */
omprpc_status omprpc_client_bash(const omprpc_client *client,
                                 const char *command,
                                 int64_t timeout_ms,
                                 char **out_result_json,
                                 char **out_error);

/**
 * Waits until the agent's current work ends (as a prompt ends: `agent_settled`, else the last
 * run's terminal `agent_end` after its own retries and recovery) and returns every session
 * event from the call until then (JSON array). Single-flight (CONCURRENCY).
 * Ownership: the caller frees `*out_events_json` with `omprpc_string_free`. Threads: any
 * thread (one collector at a time). Statuses: OK, TIMEOUT, CONCURRENCY, LIMIT_EXCEEDED,
 * INVALID_ARGUMENT, CLOSED (or the close reason: PROCESS_EXITED, PROTOCOL, IO), PANIC.
 */
omprpc_status omprpc_client_collect_events(const omprpc_client *client,
                                           int64_t timeout_ms,
                                           char **out_events_json,
                                           char **out_error);

/**
 * Waits until the agent is idle by its own account: every accepted prompt completed (as
 * `omprpc_client_prompt_and_wait` completes one), no run open and none to follow (a retry, an
 * overflow recovery, queued messages), whoever started it. COMMAND_FAILED when a prompt failed
 * late since the last prompt was sent. Single-flight (CONCURRENCY).
 * Threads: any thread (one collector at a time). Statuses: OK, COMMAND_FAILED, TIMEOUT,
 * CONCURRENCY, INVALID_ARGUMENT, CLOSED (or the close reason: PROCESS_EXITED, PROTOCOL, IO),
 * PANIC.
 */
omprpc_status omprpc_client_wait_for_idle(const omprpc_client *client,
                                          int64_t timeout_ms,
                                          char **out_error);

/**
 * Takes the next event (verbatim JSON). TIMEOUT when none arrived in time (0 polls);
 * CLOSED once the client is closed and every queued event was taken.
 * Ownership: the caller frees `*out_event_json` with `omprpc_string_free`. Threads: any
 * thread; each event goes to exactly one caller. Statuses: OK, TIMEOUT, CLOSED, INVALID_ARGUMENT,
 * PANIC.
 */
omprpc_status omprpc_client_next_event(const omprpc_client *client,
                                       int64_t timeout_ms,
                                       char **out_event_json,
                                       char **out_error);

/**
 * Waits for one event, then takes up to `max_events` queued events as one JSON array.
 * Ownership: the caller frees `*out_events_json` with `omprpc_string_free`. Threads: any
 * thread; each event goes to exactly one caller. Statuses: OK, TIMEOUT, CLOSED, INVALID_ARGUMENT,
 * PANIC.
 */
omprpc_status omprpc_client_next_events(const omprpc_client *client,
                                        size_t max_events,
                                        int64_t timeout_ms,
                                        char **out_events_json,
                                        char **out_error);

/**
 * Like `omprpc_client_next_events`, but the events come as JSON lines (each event, then
 * `\n`): events never contain a raw newline, so a binding can split them with a byte search
 * instead of parsing an array.
 * Ownership: the caller frees `*out_events_jsonl` with `omprpc_string_free`. Threads: any
 * thread; each event goes to exactly one caller. Statuses: OK, TIMEOUT, CLOSED, INVALID_ARGUMENT,
 * PANIC.
 */
omprpc_status omprpc_client_next_events_lines(const omprpc_client *client,
                                              size_t max_events,
                                              int64_t timeout_ms,
                                              char **out_events_jsonl,
                                              char **out_error);

/**
 * A descriptor that polls readable while events are queued or the client is closed (for
 * epoll, libuv, asyncio, Go's poller). Owned by the client: do not read or close it; it is
 * valid until `omprpc_client_free`. Unix only: on Windows it fails with INVALID_ARGUMENT
 * (use `omprpc_client_event_handle`).
 * Threads: any thread. Statuses: OK, INVALID_ARGUMENT, PANIC.
 */
omprpc_status omprpc_client_event_fd(const omprpc_client *client, int *out_fd, char **out_error);

/**
 * Windows' event descriptor: a manual-reset event `HANDLE` (as `void *`) that is set while
 * events are queued or the client is closed (for `WaitForSingleObject`,
 * `WaitForMultipleObjects`, `RegisterWaitForSingleObject`). Owned by the client: do not
 * reset, signal or close it; it is valid until `omprpc_client_free`. Windows only: elsewhere
 * it fails with INVALID_ARGUMENT (use `omprpc_client_event_fd`).
 * Threads: any thread. Statuses: OK, INVALID_ARGUMENT, PANIC.
 */
omprpc_status omprpc_client_event_handle(const omprpc_client *client,
                                         void **out_handle,
                                         char **out_error);

/**
 * Takes the next UI request that needs an answer (select, confirm, input, editor, or an
 * unknown method that is not passive). Woken by close (CLOSED).
 * Ownership: the caller frees `*out_request_json` with `omprpc_string_free`. Threads: any
 * thread; each request goes to exactly one caller. Statuses: OK, TIMEOUT, CLOSED,
 * INVALID_ARGUMENT, PANIC.
 */
omprpc_status omprpc_client_next_ui_request(const omprpc_client *client,
                                            int64_t timeout_ms,
                                            char **out_request_json,
                                            char **out_error);

/**
 * Answers UI request `request_id` with a value (select, input, editor).
 * Threads: any thread, concurrently. Statuses: OK, NOT_FOUND, TIMEOUT (a write that cannot
 * finish), INVALID_ARGUMENT, INVALID_UTF8, CLOSED (or the close reason: PROCESS_EXITED, PROTOCOL,
 * IO), PANIC.
 */
omprpc_status omprpc_client_ui_send_value(const omprpc_client *client,
                                          const char *request_id,
                                          const char *value,
                                          char **out_error);

/**
 * Answers a confirm UI request.
 * Threads: any thread, concurrently. Statuses: OK, NOT_FOUND, TIMEOUT (a write that cannot
 * finish), INVALID_ARGUMENT, INVALID_UTF8, CLOSED (or the close reason: PROCESS_EXITED, PROTOCOL,
 * IO), PANIC.
 */
omprpc_status omprpc_client_ui_send_confirmation(const omprpc_client *client,
                                                 const char *request_id,
                                                 bool confirmed,
                                                 char **out_error);

/**
 * Cancels a UI request (`timed_out` tells the agent the host's own timeout fired).
 * Threads: any thread, concurrently. Statuses: OK, NOT_FOUND, TIMEOUT (a write that cannot
 * finish), INVALID_ARGUMENT, INVALID_UTF8, CLOSED (or the close reason: PROCESS_EXITED, PROTOCOL,
 * IO), PANIC.
 */
omprpc_status omprpc_client_ui_cancel(const omprpc_client *client,
                                      const char *request_id,
                                      bool timed_out,
                                      char **out_error);

/**
 * Switches the raw-frame tap (the start option `queue_responses`) at run time: from the next
 * response the library reads, responses are queued as events too (`on`) or reach only the
 * calls waiting for them. A binding taps only while someone listens to raw frames: each
 * tapped response wakes the host's event reader.
 * Threads: any thread, concurrently. Statuses: OK, INVALID_ARGUMENT, PANIC.
 */
omprpc_status omprpc_client_set_queue_responses(const omprpc_client *client,
                                                bool on,
                                                char **out_error);

/**
 * Sets the headless UI policy: `{"confirm":false,"select":null,"input":null,"editor":null}`
 * (a null answer cancels; unknown interactive methods are cancelled; passive ones ignored).
 * NULL or "null" removes it. Requests already waiting are answered by the new policy.
 * Threads: any thread, concurrently. Statuses: OK, INVALID_ARGUMENT, INVALID_JSON, INVALID_UTF8,
 * PANIC.
 */
omprpc_status omprpc_client_set_ui_policy(const omprpc_client *client,
                                          const char *policy_json,
                                          char **out_error);

/**
 * Registers host tools (`[{name,description,parameters,label?,hidden?,loadMode?}]`, replacing
 * the set); `out_data_json` receives the agent's answer (`{"toolNames":[…]}`).
 * Ownership: the caller frees `*out_data_json` with `omprpc_string_free`. Threads: any
 * thread, concurrently. Statuses: OK, COMMAND_FAILED, TIMEOUT, INVALID_ARGUMENT, INVALID_JSON,
 * INVALID_UTF8, CLOSED (or the close reason: PROCESS_EXITED, PROTOCOL, IO), PANIC.
 */
omprpc_status omprpc_client_set_host_tools(const omprpc_client *client,
                                           const char *tools_json,
                                           int64_t timeout_ms,
                                           char **out_data_json,
                                           char **out_error);

/**
 * Registers host URI schemes (`[{scheme,description?,writable?,immutable?}]`, replacing the
 * set); `out_data_json` receives the agent's answer (`{"schemes":[…]}`).
 * Ownership: the caller frees `*out_data_json` with `omprpc_string_free`. Threads: any
 * thread, concurrently. Statuses: OK, COMMAND_FAILED, TIMEOUT, INVALID_ARGUMENT, INVALID_JSON,
 * INVALID_UTF8, CLOSED (or the close reason: PROCESS_EXITED, PROTOCOL, IO), PANIC.
 */
omprpc_status omprpc_client_set_host_uri_schemes(const omprpc_client *client,
                                                 const char *schemes_json,
                                                 int64_t timeout_ms,
                                                 char **out_data_json,
                                                 char **out_error);

/**
 * Registers more host tools (`add_host_tools`, omp protocol 1.1: the list as for
 * `omprpc_client_set_host_tools`; those registered stay); `out_data_json` receives the agent's
 * answer. A refusal leaves the library's registry as it was. pi: INVALID_ARGUMENT (its host
 * tools are fixed at start). Ownership: the caller frees `*out_data_json` with
 * `omprpc_string_free`. Threads: any thread, concurrently. Statuses: OK, COMMAND_FAILED (an
 * agent without the command: `Unknown command`), TIMEOUT, INVALID_ARGUMENT, INVALID_JSON,
 * INVALID_UTF8, CLOSED (or the close reason: PROCESS_EXITED, PROTOCOL, IO), PANIC.
 */
omprpc_status omprpc_client_add_host_tools(const omprpc_client *client,
                                           const char *tools_json,
                                           int64_t timeout_ms,
                                           char **out_data_json,
                                           char **out_error);

/**
 * Unregisters host tools by name (`remove_host_tools {toolNames}`, `names_json` a JSON array
 * of strings); they leave the library's registry once the agent agreed; `out_data_json`
 * receives the agent's answer. pi: INVALID_ARGUMENT. Ownership: the caller frees `*out_data_json` with `omprpc_string_free`. Threads: any thread,
 * concurrently. Statuses: OK, COMMAND_FAILED (an agent without the command: `Unknown
 * command`), TIMEOUT, INVALID_ARGUMENT, INVALID_JSON, INVALID_UTF8, CLOSED (or the close
 * reason: PROCESS_EXITED, PROTOCOL, IO), PANIC.
 */
omprpc_status omprpc_client_remove_host_tools(const omprpc_client *client,
                                              const char *names_json,
                                              int64_t timeout_ms,
                                              char **out_data_json,
                                              char **out_error);

/**
 * Registers more host URI schemes (`add_host_uri_schemes`, omp protocol 1.1: the list as for
 * `omprpc_client_set_host_uri_schemes`; a scheme already registered is redefined, the others
 * stay); `out_data_json` receives the agent's answer. A refusal leaves the library's registry
 * as it was. Ownership: the caller frees `*out_data_json` with `omprpc_string_free`. Threads: any thread,
 * concurrently. Statuses: OK, COMMAND_FAILED (an agent without the command: `Unknown
 * command`), TIMEOUT, INVALID_ARGUMENT, INVALID_JSON, INVALID_UTF8, CLOSED (or the close
 * reason: PROCESS_EXITED, PROTOCOL, IO), PANIC.
 */
omprpc_status omprpc_client_add_host_uri_schemes(const omprpc_client *client,
                                                 const char *schemes_json,
                                                 int64_t timeout_ms,
                                                 char **out_data_json,
                                                 char **out_error);

/**
 * Unregisters host URI schemes by name (`remove_host_uri_schemes {schemes}`, `schemes_json` a
 * JSON array of strings); removed from the library's registry once the agent agreed;
 * `out_data_json` receives the agent's answer. Ownership: the caller frees `*out_data_json` with `omprpc_string_free`. Threads: any thread,
 * concurrently. Statuses: OK, COMMAND_FAILED (an agent without the command: `Unknown
 * command`), TIMEOUT, INVALID_ARGUMENT, INVALID_JSON, INVALID_UTF8, CLOSED (or the close
 * reason: PROCESS_EXITED, PROTOCOL, IO), PANIC.
 */
omprpc_status omprpc_client_remove_host_uri_schemes(const omprpc_client *client,
                                                    const char *schemes_json,
                                                    int64_t timeout_ms,
                                                    char **out_data_json,
                                                    char **out_error);

/**
 * Streams a partial result for host tool call `call_id` (`"text"` or `{content,details?}`).
 * NOT_FOUND for an unknown call, CANCELLED if the agent cancelled it.
 * Threads: any thread, concurrently. Statuses: OK, NOT_FOUND, CANCELLED, TIMEOUT (a write that
 * cannot finish), INVALID_ARGUMENT, INVALID_JSON, INVALID_UTF8, CLOSED (or the close reason:
 * PROCESS_EXITED, PROTOCOL, IO), PANIC.
 */
omprpc_status omprpc_client_host_tool_update(const omprpc_client *client,
                                             const char *call_id,
                                             const char *partial_result_json,
                                             char **out_error);

/**
 * Sends the final result of host tool call `call_id` (`"text"` or `{content,details?}`).
 * NOT_FOUND for an unknown call, CANCELLED if the agent cancelled it (the result is dropped).
 * Threads: any thread, concurrently. Statuses: OK, NOT_FOUND, CANCELLED, TIMEOUT (a write that
 * cannot finish), INVALID_ARGUMENT, INVALID_JSON, INVALID_UTF8, CLOSED (or the close reason:
 * PROCESS_EXITED, PROTOCOL, IO), PANIC.
 */
omprpc_status omprpc_client_host_tool_result(const omprpc_client *client,
                                             const char *call_id,
                                             const char *result_json,
                                             bool is_error,
                                             char **out_error);

/**
 * Answers host URI request `request_id`: `{"content","contentType"?,"notes"?,"immutable"?}`
 * for a read, `{}` for a write, `{"error":"…"}` for a failure.
 * Threads: any thread, concurrently. Statuses: OK, NOT_FOUND, TIMEOUT (a write that cannot
 * finish), INVALID_ARGUMENT, INVALID_JSON, INVALID_UTF8, CLOSED (or the close reason:
 * PROCESS_EXITED, PROTOCOL, IO), PANIC.
 */
omprpc_status omprpc_client_host_uri_result(const omprpc_client *client,
                                            const char *request_id,
                                            const char *result_json,
                                            char **out_error);

/**
 * Answers a `policy_eval` event (the policy gate over the agent's own tools): allow, or
 * block with `reason` (NULL or empty: a default reason). NOT_FOUND for an unknown id. No
 * answer within the gate's `timeout_ms` blocks the tool (unless the gate fails open).
 * Threads: any thread, concurrently. Statuses: OK, NOT_FOUND, INVALID_ARGUMENT, INVALID_UTF8,
 * IO (the tool bridge's connection is gone), PANIC.
 */
omprpc_status omprpc_client_policy_verdict(const omprpc_client *client,
                                           const char *request_id,
                                           bool allow,
                                           const char *reason,
                                           char **out_error);

/**
 * The agent's last `max_stderr_lines` stderr lines, as text.
 * Ownership: the caller frees `*out_text` with `omprpc_string_free`. Threads: any thread,
 * concurrently, after close too. Statuses: OK, INVALID_ARGUMENT, PANIC.
 */
omprpc_status omprpc_client_stderr(const omprpc_client *client, char **out_text, char **out_error);

/**
 * The recorded protocol errors (JSON array, the last 128).
 * Ownership: the caller frees `*out_json` with `omprpc_string_free`. Threads: any thread,
 * concurrently, after close too. Statuses: OK, INVALID_ARGUMENT, PANIC.
 */
omprpc_status omprpc_client_protocol_errors(const omprpc_client *client,
                                            char **out_json,
                                            char **out_error);

/**
 * `{"pid","argv"(redacted),"flavor","protocolVersion","ready","closed","closeReason",
 * "activeOperation","pendingRequests"}`.
 * Ownership: the caller frees `*out_json` with `omprpc_string_free`. Threads: any thread,
 * concurrently, after close too. Statuses: OK, INVALID_ARGUMENT, PANIC.
 */
omprpc_status omprpc_client_info(const omprpc_client *client, char **out_json, char **out_error);

/**
 * The client's counters, one JSON object: `frames_in`, `bytes_in`, `frames_out`, `bytes_out`,
 * `requests_sent`, `responses`, `requests_pending`, `protocol_errors`, `ui_requests`,
 * `events_queued`, `events_delivered`, `events_dropped`, `events_held`, `events_held_bytes`,
 * `time_to_first_event_ms` and `last_prompt_first_event_ms` (null until known), `uptime_ms`,
 * `closed`. Readable at any time, after close too.
 * Ownership: the caller frees `*out_json` with `omprpc_string_free`. Threads: any thread,
 * concurrently. Statuses: OK, INVALID_ARGUMENT, PANIC.
 */
omprpc_status omprpc_client_counters(const omprpc_client *client,
                                     char **out_json,
                                     char **out_error);

/**
 * Waits up to `timeout_ms` for a log record, then takes up to `max_records` as one JSON
 * array of `{"level","target","message","t_ms","client",…}` objects. Logs are a queue of
 * their own, collected only when the client was started with `"log_level"` (else
 * INVALID_ARGUMENT). TIMEOUT when none arrived in time; CLOSED once the client is closed and
 * every record (teardown's included) was taken.
 * Ownership: the caller frees `*out_logs_json` with `omprpc_string_free`. Threads: any
 * thread; each record goes to exactly one caller. Statuses: OK, TIMEOUT, CLOSED,
 * INVALID_ARGUMENT, PANIC.
 */
omprpc_status omprpc_client_next_logs(const omprpc_client *client,
                                      size_t max_records,
                                      int64_t timeout_ms,
                                      char **out_logs_json,
                                      char **out_error);

/**
 * Closes the client: every blocked call returns at once (CLOSED, or the earlier reason),
 * then the agent is stopped — stdin EOF, `stop_grace_ms`, SIGTERM to its process group,
 * `kill_grace_ms`, SIGKILL — and reaped with every process left in its group. Returns when it
 * is gone. Idempotent; callable from any thread, concurrently with any call but free.
 * Statuses: OK, INVALID_ARGUMENT (no client), PANIC.
 */
omprpc_status omprpc_client_close(const omprpc_client *client, char **out_error);

/**
 * Closes (if needed) and frees the client. The last call on a handle: no call may start
 * after it. Calls already inside the library (e.g. a poll on another thread) are woken by the
 * close and waited for before the memory is released. NULL is a no-op.
 * Threads: see above; `client` must not be used afterwards.
 */
void omprpc_client_free(omprpc_client *client);

/**
 * The summary of a JSON array of raw events (e.g. a turn's `events`): `{"complete","text",
 * "finalText","reasoning","chunks","toolCalls","stopReason","stopReasons","usage",
 * "messageUsage"}`. Options: `{"model":"…"}` — the configured model, for usage records whose
 * message names none. Thread-safe.
 * Ownership: the caller frees `*out_summary_json` with `omprpc_string_free`. Statuses: OK,
 * INVALID_ARGUMENT, INVALID_JSON, INVALID_UTF8, PANIC.
 */
omprpc_status omprpc_summarize(const char *events_json,
                               const char *options_json,
                               char **out_summary_json,
                               char **out_error);

/**
 * A new summarizer (options as for `omprpc_summarize`); free it with `omprpc_summarizer_free`.
 * Ownership: `*out_summarizer` is the caller's until `omprpc_summarizer_free`. Threads: any
 * thread; the summarizer is thread-safe (calls on it are serialised). Statuses: OK,
 * INVALID_ARGUMENT, INVALID_JSON, INVALID_UTF8, PANIC.
 */
omprpc_status omprpc_summarizer_new(const char *options_json,
                                    omprpc_summarizer **out_summarizer,
                                    char **out_error);

/**
 * Feeds one raw event; `out_derived_json` receives the derived items it produced, as a JSON
 * array: `{"kind":"text"|"reasoning_start"|"reasoning"|"tool_start"|"tool_update"|"tool_end"|
 * "message_end"|"stop"|"turn_end",…}`.
 * Ownership: the caller frees `*out_derived_json` with `omprpc_string_free`. Threads: any
 * thread (serialised per summarizer). Statuses: OK, INVALID_ARGUMENT, INVALID_JSON, INVALID_UTF8,
 * PANIC.
 */
omprpc_status omprpc_summarizer_feed(const omprpc_summarizer *summarizer,
                                     const char *event_json,
                                     char **out_derived_json,
                                     char **out_error);

/**
 * The summary of everything fed so far.
 * Ownership: the caller frees `*out_summary_json` with `omprpc_string_free`. Threads: any
 * thread (serialised per summarizer). Statuses: OK, INVALID_ARGUMENT, PANIC.
 */
omprpc_status omprpc_summarizer_summary(const omprpc_summarizer *summarizer,
                                        char **out_summary_json,
                                        char **out_error);

/**
 * Frees a summarizer. NULL is a no-op.
 * Threads: the last call on the summarizer; never concurrent with another call on it.
 */
void omprpc_summarizer_free(omprpc_summarizer *summarizer);

/**
 * Waits for one event, then takes up to `max_events` queued events as a batch: each event's
 * type and its JSON, borrowed from the batch (see `omprpc_event_batch_events`). The same
 * events, order and statuses as `omprpc_client_next_events`, without a JSON array to parse.
 * Ownership: the caller frees `*out_batch` with `omprpc_event_batch_free`. Threads: any
 * thread; each event goes to exactly one caller. Statuses: OK, TIMEOUT, CLOSED,
 * INVALID_ARGUMENT, PANIC.
 */
omprpc_status omprpc_client_next_event_batch(const omprpc_client *client,
                                             size_t max_events,
                                             int64_t timeout_ms,
                                             omprpc_event_batch **out_batch,
                                             char **out_error);

/**
 * `omprpc_client_collect_events` as a batch: every session event from the call through the
 * end of the agent's current work, each with its type (see `omprpc_event_batch_events`).
 * Ownership: the caller frees `*out_batch` with `omprpc_event_batch_free`. Threads: any
 * thread (one collector at a time). Statuses: those of `omprpc_client_collect_events`: OK,
 * TIMEOUT, CONCURRENCY, LIMIT_EXCEEDED, INVALID_ARGUMENT, CLOSED (or the close reason:
 * PROCESS_EXITED, PROTOCOL, IO), PANIC.
 */
omprpc_status omprpc_client_collect_event_batch(const omprpc_client *client,
                                                int64_t timeout_ms,
                                                omprpc_event_batch **out_batch,
                                                char **out_error);

/**
 * The batch's events, in queue order: `*out_events` points to `*out_count` views, each
 * borrowing from the batch.
 * Ownership: borrowed; valid until `omprpc_event_batch_free(batch)`. Threads: any thread
 * (the batch is immutable). Statuses: OK, INVALID_ARGUMENT, PANIC.
 */
omprpc_status omprpc_event_batch_events(const omprpc_event_batch *batch,
                                        const omprpc_event_view **out_events,
                                        size_t *out_count,
                                        char **out_error);

/**
 * Releases a batch and everything borrowed from it; NULL is a no-op.
 * Ownership: takes `batch`. Threads: any thread, once, after the last use of its views.
 */
void omprpc_event_batch_free(omprpc_event_batch *batch);

/**
 * Prompts and waits until that prompt completes, like `omprpc_client_prompt_and_wait`, and
 * returns the turn as structure: its metadata (`omprpc_turn_get_info`), `omprpc_turn_events`
 * for its events — no JSON layout to scan.
 * Ownership: the caller frees `*out_turn` with `omprpc_turn_free`. Threads: any thread (one
 * collector at a time). Statuses: those of `omprpc_client_prompt_and_wait`: OK,
 * COMMAND_FAILED, TIMEOUT, CONCURRENCY, LIMIT_EXCEEDED, INVALID_ARGUMENT, INVALID_JSON,
 * INVALID_UTF8, CLOSED (or the close reason: PROCESS_EXITED, PROTOCOL, IO), PANIC.
 */
omprpc_status omprpc_client_prompt_and_wait_turn(const omprpc_client *client,
                                                 const char *message,
                                                 const char *options_json,
                                                 int64_t timeout_ms,
                                                 omprpc_turn **out_turn,
                                                 char **out_error);

/**
 * The first half of `omprpc_client_prompt_and_wait_turn`, for a host that waits on the event
 * fd rather than on a thread: sends `prompt` (message and options as `omprpc_client_prompt`)
 * and returns its request id once the agent acknowledged it, within `timeout_ms` (default: the
 * start option `request_timeout_ms`). The turn then holds the client's single collector slot:
 * `omprpc_client_prompt_and_wait(_turn)`, `omprpc_client_collect_events(_batch)` and
 * `omprpc_client_wait_for_idle` fail with CONCURRENCY until `omprpc_client_take_turn` took
 * it (or the client closed). Its completion is the `prompt_complete` event with this request
 * id (start option `prompt_complete_events`); take the turn once that event was read. To
 * abandon the turn, send `abort` (`omprpc_client_abort`) and still take it after its
 * `prompt_complete`; `omprpc_client_close` releases everything.
 * Ownership: the caller frees `*out_request_id` with `omprpc_string_free`. Threads: any
 * thread; blocks only until the acknowledgement. Statuses: OK, COMMAND_FAILED, TIMEOUT,
 * CONCURRENCY, INVALID_ARGUMENT, INVALID_JSON, INVALID_UTF8, CLOSED (or the close reason:
 * PROCESS_EXITED, PROTOCOL, IO), PANIC.
 */
omprpc_status omprpc_client_prompt_begin(const omprpc_client *client,
                                         const char *message,
                                         const char *options_json,
                                         int64_t timeout_ms,
                                         char **out_request_id,
                                         char **out_error);

/**
 * The turn of the prompt begun as `request_id` with `omprpc_client_prompt_begin`, once it
 * completed (its `prompt_complete` event was queued), as `omprpc_client_prompt_and_wait_turn`
 * returns it; releases the collector slot. Never blocks: OK with `*out_turn` NULL while the
 * turn has not completed (nothing changes; take it after its `prompt_complete`), NOT_FOUND
 * when `request_id` is not the begun turn (none begun, another id, already taken or
 * released). A turn that failed returns its failure, as `omprpc_client_prompt_and_wait_turn`
 * would (COMMAND_FAILED, LIMIT_EXCEEDED, CLOSED or the close reason, …), and releases the slot
 * too. Nobody waits in the library on a begun turn, so the take applies the start option
 * `turn_idle_timeout_ms`: once the agent sent no event for that long (not counting time it
 * waits on the host), the take fails with TIMEOUT, releases the slot and leaves the turn
 * running, as a blocking waiter's idle timeout does.
 * Ownership: the caller frees a non-NULL `*out_turn` with `omprpc_turn_free`. Threads: any
 * thread. Statuses: OK, TIMEOUT, NOT_FOUND, COMMAND_FAILED, LIMIT_EXCEEDED, INVALID_ARGUMENT,
 * INVALID_UTF8, CLOSED (or the close reason: PROCESS_EXITED, PROTOCOL, IO), PANIC.
 */
omprpc_status omprpc_client_take_turn(const omprpc_client *client,
                                      const char *request_id,
                                      omprpc_turn **out_turn,
                                      char **out_error);

/**
 * Gives up the turn begun as `request_id` with `omprpc_client_prompt_begin` without waiting
 * for it: releases the collector slot and leaves the turn running, exactly as the timeout of
 * a blocking `omprpc_client_prompt_and_wait_turn` does (a host's own turn timeout). The next
 * prompt is then the agent's to accept or refuse while the turn still runs; send `abort`
 * first to stop it. A later take of `request_id` is NOT_FOUND.
 * Threads: any thread. Statuses: OK, NOT_FOUND (not the begun turn: none begun, another id,
 * already taken or released), INVALID_ARGUMENT, INVALID_UTF8, PANIC.
 */
omprpc_status omprpc_client_release_turn(const omprpc_client *client,
                                         const char *request_id,
                                         char **out_error);

/**
 * Fills `*out_info` with the turn's metadata.
 * Ownership: every `omprpc_str` borrows from the turn; valid until `omprpc_turn_free(turn)`.
 * Threads: any thread (the turn is immutable). Statuses: OK, INVALID_ARGUMENT, PANIC.
 */
omprpc_status omprpc_turn_get_info(const omprpc_turn *turn,
                                   omprpc_turn_info *out_info,
                                   char **out_error);

/**
 * The turn's events, in arrival order: `*out_events` points to `*out_count` views, each
 * borrowing from the turn (built on the first call; later calls lend the same array).
 * Ownership: borrowed; valid until `omprpc_turn_free(turn)`. Threads: any thread. Statuses:
 * OK, INVALID_ARGUMENT, PANIC.
 */
omprpc_status omprpc_turn_events(const omprpc_turn *turn,
                                 const omprpc_event_view **out_events,
                                 size_t *out_count,
                                 char **out_error);

/**
 * The turn's messages (those of `messages_json`), each a JSON object: `*out_messages` points
 * to `*out_count` slices borrowing from the turn.
 * Ownership: borrowed; valid until `omprpc_turn_free(turn)`. Threads: any thread. Statuses:
 * OK, INVALID_ARGUMENT, PANIC.
 */
omprpc_status omprpc_turn_messages(const omprpc_turn *turn,
                                   const omprpc_str **out_messages,
                                   size_t *out_count,
                                   char **out_error);

/**
 * Releases a turn and everything borrowed from it; NULL is a no-op.
 * Ownership: takes `turn`. Threads: any thread, once, after the last use of its views.
 */
void omprpc_turn_free(omprpc_turn *turn);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* OMPRPC_H */
