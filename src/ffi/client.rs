//! The `omprpc_client` handle and its exports: start, commands and prompts, the event and UI
//! queues, host tools, URI schemes and policy verdicts, the readouts that work after close
//! too (stderr, protocol errors, info, counters, logs), and close and free.

use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::client::options::UiPolicy;
use crate::client::{parse_params, parse_value, Client, Deadline};
use crate::error::{Error, Result, Status};

use super::strings::{give, give_json, opt_text, text};
use super::{boundary, deadline, guarded, out};

/// An omprpc client: one agent process and its RPC session. Opaque.
pub struct omprpc_client {
    client: Client,
    poisoned: AtomicBool,
    /// Calls currently inside the library on this handle. `omprpc_client_free` closes first
    /// (which wakes every blocked call) and then waits for this to reach zero, so a call
    /// that close woke but that has not returned yet never runs on freed memory.
    calls: AtomicUsize,
}

impl omprpc_client {
    /// After a panic inside a call on this handle (`boundary`): every later call fails.
    pub(super) fn poison(&self) {
        self.poisoned.store(true, Ordering::SeqCst);
    }
}

/// A call's hold on a live handle: counted in `calls` from entry until the call is done.
pub(super) struct Live<'a>(&'a omprpc_client);

impl Live<'_> {
    fn new(h: &omprpc_client) -> Live<'_> {
        h.calls.fetch_add(1, Ordering::SeqCst);
        Live(h)
    }
}

impl std::ops::Deref for Live<'_> {
    type Target = Client;
    fn deref(&self) -> &Client {
        &self.0.client
    }
}

impl Drop for Live<'_> {
    fn drop(&mut self) {
        self.0.calls.fetch_sub(1, Ordering::SeqCst);
    }
}

pub(super) unsafe fn client<'a>(p: *const omprpc_client) -> Result<Live<'a>> {
    if p.is_null() {
        return Err(Error::invalid("client is NULL"));
    }
    let h = Live::new(&*p);
    if h.0.poisoned.load(Ordering::SeqCst) {
        return Err(Error::new(Status::Panic, "this client is unusable after an internal panic"));
    }
    Ok(h)
}

/// Probes the agent's version (`--version`, once per executable), spawns the agent described by
/// `options_json` (docs/c-api.md lists the keys), waits for its handshake and, with host tools
/// bridged or a tool policy, for the bridge extension's hello; negotiates protocol v2 when
/// offered and registers configured host tools and URI schemes. On failure nothing is left
/// running. Statuses: INVALID_ARGUMENT, INVALID_JSON, IO (spawn), TIMEOUT, PROCESS_EXITED
/// (with exit code and stderr tail), PROTOCOL (also: an unsupported agent version, or no hello
/// from the bridge extension), COMMAND_FAILED. Free the client with `omprpc_client_free`.
/// Ownership: `*out_client` is the caller's until `omprpc_client_free`. Threads: any thread;
/// the new handle may then be shared between threads. Statuses: OK and those listed above,
/// INVALID_UTF8, PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_start(options_json: *const c_char, out_client: *mut *mut omprpc_client, out_error: *mut *mut c_char) -> Status {
    boundary(std::ptr::null(), out_error, || {
        let slot = out(out_client, "out_client")?;
        let c = Client::start(text(options_json, "options_json")?)?;
        *slot = Box::into_raw(Box::new(omprpc_client { client: c, poisoned: AtomicBool::new(false), calls: AtomicUsize::new(0) }));
        Ok(())
    })
}

/// Sends any command `{"type": type, …params}` (params: a JSON object or NULL) and waits for
/// its response. `out_data_json` receives the response's `data` verbatim, `null` when absent.
/// COMMAND_FAILED when the agent answers `success:false` (details in the error JSON).
/// Ownership: the caller frees `*out_data_json` with `omprpc_string_free`. Threads: any
/// thread, concurrently. Statuses: OK, COMMAND_FAILED, TIMEOUT, INVALID_ARGUMENT, INVALID_JSON,
/// INVALID_UTF8, CLOSED (or the close reason: PROCESS_EXITED, PROTOCOL, IO), PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_request(
    client: *const omprpc_client,
    type_: *const c_char,
    params_json: *const c_char,
    timeout_ms: i64,
    out_data_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> Status {
    boundary(client, out_error, || {
        let c = self::client(client)?;
        let slot = out(out_data_json, "out_data_json")?;
        let params = parse_params(opt_text(params_json, "params_json")?)?;
        let d = deadline(timeout_ms, c.default_request_deadline())?;
        *slot = give(c.request(text(type_, "type")?, params.as_ref(), d)?);
        Ok(())
    })
}

/// Writes one frame as is (a JSON object with a string `type`), with no id and no response
/// awaited — e.g. `widget_layout`.
/// Threads: any thread, concurrently. Statuses: OK, TIMEOUT (a write that cannot finish),
/// INVALID_ARGUMENT, INVALID_JSON, INVALID_UTF8, CLOSED (or the close reason: PROCESS_EXITED,
/// PROTOCOL, IO), PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_send_frame(client: *const omprpc_client, frame_json: *const c_char, out_error: *mut *mut c_char) -> Status {
    boundary(client, out_error, || {
        let c = self::client(client)?;
        let frame = parse_params(Some(text(frame_json, "frame_json")?))?.ok_or_else(|| Error::invalid_json("frame must be a JSON object"))?;
        c.send_frame(&frame)
    })
}

/// The message argument: a string, or NULL when the options carry `"message"`.
pub(super) unsafe fn prompt_message<'a>(message: *const c_char, opts: Option<&serde_json::Map<String, Value>>) -> Result<&'a str> {
    match opt_text(message, "message")? {
        Some(m) => Ok(m),
        None if opts.is_some_and(|o| o.contains_key("message")) => Ok(""),
        None => Err(Error::invalid("message is NULL and the options carry no \"message\"")),
    }
}

/// A call that sends a prompt (message and options as `omprpc_client_prompt`) and returns its
/// request id once the agent acknowledged it within `timeout_ms` (default: request_timeout_ms):
/// `send` is which (prompt, abort_and_prompt, prompt_begin).
pub unsafe fn prompt_like(
    client: *const omprpc_client,
    message: *const c_char,
    options_json: *const c_char,
    timeout_ms: i64,
    out_request_id: *mut *mut c_char,
    out_error: *mut *mut c_char,
    send: impl FnOnce(&Client, &str, Option<Map<String, Value>>, Deadline) -> Result<String>,
) -> Status {
    boundary(client, out_error, || {
        let c = self::client(client)?;
        let slot = out(out_request_id, "out_request_id")?;
        let opts = parse_params(opt_text(options_json, "options_json")?)?;
        let message = prompt_message(message, opts.as_ref())?;
        let d = deadline(timeout_ms, c.default_request_deadline())?;
        *slot = give(send(&c, message, opts, d)?);
        Ok(())
    })
}

/// Sends `prompt` (options: `{"images":[…],"streamingBehavior":"steer"|"followUp","content":[…]}`
/// or NULL; `message` may be NULL when the options carry `"message"`, e.g. text with a NUL)
/// and returns its request id once the agent acknowledged it. The run streams as events;
/// `omprpc_client_wait_for_idle` waits for it.
/// Ownership: the caller frees `*out_request_id` with `omprpc_string_free`. Threads: any
/// thread, concurrently. Statuses: OK, COMMAND_FAILED, TIMEOUT, INVALID_ARGUMENT, INVALID_JSON,
/// INVALID_UTF8, CLOSED (or the close reason: PROCESS_EXITED, PROTOCOL, IO), PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_prompt(
    client: *const omprpc_client,
    message: *const c_char,
    options_json: *const c_char,
    timeout_ms: i64,
    out_request_id: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> Status {
    prompt_like(client, message, options_json, timeout_ms, out_request_id, out_error, |c, m, o, d| c.prompt("prompt", m, o, d))
}

/// Sends `abort_and_prompt`; like `omprpc_client_prompt`.
/// Ownership: the caller frees `*out_request_id` with `omprpc_string_free`. Threads: any
/// thread, concurrently. Statuses: as `omprpc_client_prompt` (OK, COMMAND_FAILED, TIMEOUT, …).
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_abort_and_prompt(
    client: *const omprpc_client,
    message: *const c_char,
    options_json: *const c_char,
    timeout_ms: i64,
    out_request_id: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> Status {
    prompt_like(client, message, options_json, timeout_ms, out_request_id, out_error, |c, m, o, d| c.prompt("abort_and_prompt", m, o, d))
}

/// Prompts and waits until that prompt completes — where the agent says it will not go on:
/// `agent_settled` (pi 0.80.4 on), else the last run's terminal `agent_end` after the agent's own
/// retries and overflow recovery; or `prompt_result`, `agentInvoked:false`,
/// `disposition:"handled"` — and returns the turn JSON `{"events","requestId","outcome",
/// "agentInvoked","attempts","settled","failedAttempts","compactions","messages",
/// "assistantMessage","assistantText","promptResult","summary"?}` (docs/c-api.md). The timeout covers the whole
/// turn (OMPRPC_TIMEOUT_DEFAULT: the `turn_timeout_ms` option, no deadline unless set).
/// Single-flight with collect_events / wait_for_idle (CONCURRENCY). COMMAND_FAILED for a
/// rejected or late-failed prompt; LIMIT_EXCEEDED past `max_event_history`.
/// Ownership: the caller frees `*out_turn_json` with `omprpc_string_free`. Threads: any
/// thread (one collector at a time). Statuses: OK, COMMAND_FAILED, TIMEOUT, CONCURRENCY,
/// LIMIT_EXCEEDED, INVALID_ARGUMENT, INVALID_JSON, INVALID_UTF8, CLOSED (or the close reason:
/// PROCESS_EXITED, PROTOCOL, IO), PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_prompt_and_wait(
    client: *const omprpc_client,
    message: *const c_char,
    options_json: *const c_char,
    timeout_ms: i64,
    out_turn_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> Status {
    boundary(client, out_error, || {
        let c = self::client(client)?;
        let slot = out(out_turn_json, "out_turn_json")?;
        let opts = parse_params(opt_text(options_json, "options_json")?)?;
        let message = prompt_message(message, opts.as_ref())?;
        let d = deadline(timeout_ms, c.default_turn_deadline())?;
        *slot = give_json(c.prompt_and_wait_json(message, opts, d)?);
        Ok(())
    })
}

unsafe fn message_command(
    client: *const omprpc_client,
    command: &str,
    message: *const c_char,
    options_json: *const c_char,
    timeout_ms: i64,
    out_error: *mut *mut c_char,
) -> Status {
    boundary(client, out_error, || {
        let c = self::client(client)?;
        let opts = parse_params(opt_text(options_json, "options_json")?)?;
        let message = prompt_message(message, opts.as_ref())?;
        let d = deadline(timeout_ms, c.default_request_deadline())?;
        c.message_command(command, message, opts, d)
    })
}

/// Sends `steer` (options: `{"images":[…],"content":[…]}` or NULL; `message` may be NULL when
/// the options carry `"message"`).
/// Threads: any thread, concurrently. Statuses: OK, COMMAND_FAILED, TIMEOUT, INVALID_ARGUMENT,
/// INVALID_JSON, INVALID_UTF8, CLOSED (or the close reason: PROCESS_EXITED, PROTOCOL, IO), PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_steer(
    client: *const omprpc_client,
    message: *const c_char,
    options_json: *const c_char,
    timeout_ms: i64,
    out_error: *mut *mut c_char,
) -> Status {
    message_command(client, "steer", message, options_json, timeout_ms, out_error)
}

/// Sends `follow_up` (options: `{"images":[…],"content":[…]}` or NULL; `message` may be NULL
/// when the options carry `"message"`).
/// Threads: any thread, concurrently. Statuses: as `omprpc_client_steer` (OK, COMMAND_FAILED,
/// TIMEOUT, …).
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_follow_up(
    client: *const omprpc_client,
    message: *const c_char,
    options_json: *const c_char,
    timeout_ms: i64,
    out_error: *mut *mut c_char,
) -> Status {
    message_command(client, "follow_up", message, options_json, timeout_ms, out_error)
}

/// Sends `abort`.
/// Threads: any thread, concurrently. Statuses: OK, COMMAND_FAILED, TIMEOUT, INVALID_ARGUMENT,
/// CLOSED (or the close reason: PROCESS_EXITED, PROTOCOL, IO), PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_abort(client: *const omprpc_client, timeout_ms: i64, out_error: *mut *mut c_char) -> Status {
    boundary(client, out_error, || {
        let c = self::client(client)?;
        c.request("abort", None, deadline(timeout_ms, c.default_request_deadline())?).map(drop)
    })
}

/// Sends `get_state`; `out_state_json` receives the session state object.
/// Ownership: the caller frees `*out_state_json` with `omprpc_string_free`. Threads: any
/// thread, concurrently. Statuses: OK, COMMAND_FAILED, TIMEOUT, INVALID_ARGUMENT, CLOSED (or the
/// close reason: PROCESS_EXITED, PROTOCOL, IO), PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_get_state(
    client: *const omprpc_client,
    timeout_ms: i64,
    out_state_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> Status {
    boundary(client, out_error, || {
        let c = self::client(client)?;
        let slot = out(out_state_json, "out_state_json")?;
        *slot = give(c.request("get_state", None, deadline(timeout_ms, c.default_request_deadline())?)?);
        Ok(())
    })
}

/// Sends `bash` with `command`; `out_result_json` receives the BashResult object.
/// Ownership: the caller frees `*out_result_json` with `omprpc_string_free`. Threads: any
/// thread, concurrently. Statuses: OK, COMMAND_FAILED, TIMEOUT, INVALID_ARGUMENT, INVALID_UTF8,
/// CLOSED (or the close reason: PROCESS_EXITED, PROTOCOL, IO), PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_bash(
    client: *const omprpc_client,
    command: *const c_char,
    timeout_ms: i64,
    out_result_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> Status {
    boundary(client, out_error, || {
        let c = self::client(client)?;
        let slot = out(out_result_json, "out_result_json")?;
        let mut p = serde_json::Map::new();
        p.insert("command".into(), Value::String(text(command, "command")?.to_string()));
        *slot = give(c.request("bash", Some(&p), deadline(timeout_ms, c.default_request_deadline())?)?);
        Ok(())
    })
}

/// Waits until the agent's current work ends (as a prompt ends: `agent_settled`, else the last
/// run's terminal `agent_end` after its own retries and recovery) and returns every session
/// event from the call until then (JSON array). Single-flight (CONCURRENCY).
/// Ownership: the caller frees `*out_events_json` with `omprpc_string_free`. Threads: any
/// thread (one collector at a time). Statuses: OK, TIMEOUT, CONCURRENCY, LIMIT_EXCEEDED,
/// INVALID_ARGUMENT, CLOSED (or the close reason: PROCESS_EXITED, PROTOCOL, IO), PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_collect_events(
    client: *const omprpc_client,
    timeout_ms: i64,
    out_events_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> Status {
    boundary(client, out_error, || {
        let c = self::client(client)?;
        let slot = out(out_events_json, "out_events_json")?;
        *slot = give_json(c.collect_events_json(deadline(timeout_ms, c.default_turn_deadline())?)?);
        Ok(())
    })
}

/// Waits until the agent is idle by its own account: every accepted prompt completed (as
/// `omprpc_client_prompt_and_wait` completes one), no run open and none to follow (a retry, an
/// overflow recovery, queued messages), whoever started it. COMMAND_FAILED when a prompt failed
/// late since the last prompt was sent. Single-flight (CONCURRENCY).
/// Threads: any thread (one collector at a time). Statuses: OK, COMMAND_FAILED, TIMEOUT,
/// CONCURRENCY, INVALID_ARGUMENT, CLOSED (or the close reason: PROCESS_EXITED, PROTOCOL, IO),
/// PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_wait_for_idle(client: *const omprpc_client, timeout_ms: i64, out_error: *mut *mut c_char) -> Status {
    boundary(client, out_error, || {
        let c = self::client(client)?;
        c.wait_for_idle(deadline(timeout_ms, c.default_turn_deadline())?)
    })
}

/// Takes the next event (verbatim JSON). TIMEOUT when none arrived in time (0 polls);
/// CLOSED once the client is closed and every queued event was taken.
/// Ownership: the caller frees `*out_event_json` with `omprpc_string_free`. Threads: any
/// thread; each event goes to exactly one caller. Statuses: OK, TIMEOUT, CLOSED, INVALID_ARGUMENT,
/// PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_next_event(
    client: *const omprpc_client,
    timeout_ms: i64,
    out_event_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> Status {
    boundary(client, out_error, || {
        let c = self::client(client)?;
        let slot = out(out_event_json, "out_event_json")?;
        let mut evs = c.next_events(1, deadline(timeout_ms, None)?)?;
        *slot = give_json(evs.pop().expect("pop returns at least one event").into_vec());
        Ok(())
    })
}

/// The body of the batch polls: up to `max` events, each followed by `sep`, the whole
/// between `open` and `close` (the last separator dropped when `close` is given).
unsafe fn events_joined(
    client: *const omprpc_client,
    max: usize,
    timeout_ms: i64,
    out_events: *mut *mut c_char,
    out_error: *mut *mut c_char,
    (open, sep, close): (&[u8], u8, &[u8]),
) -> Status {
    boundary(client, out_error, || {
        let c = self::client(client)?;
        let slot = out(out_events, "out_events")?;
        let evs = c.next_events(max, deadline(timeout_ms, None)?)?;
        let mut buf = Vec::with_capacity(evs.iter().map(|e| e.len() + 1).sum::<usize>() + open.len() + close.len());
        buf.extend_from_slice(open);
        for e in &evs {
            buf.extend_from_slice(e);
            buf.push(sep);
        }
        if !close.is_empty() {
            buf.pop();
            buf.extend_from_slice(close);
        }
        *slot = give_json(buf);
        Ok(())
    })
}

/// Waits for one event, then takes up to `max_events` queued events as one JSON array.
/// Ownership: the caller frees `*out_events_json` with `omprpc_string_free`. Threads: any
/// thread; each event goes to exactly one caller. Statuses: OK, TIMEOUT, CLOSED, INVALID_ARGUMENT,
/// PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_next_events(
    client: *const omprpc_client,
    max_events: usize,
    timeout_ms: i64,
    out_events_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> Status {
    events_joined(client, max_events, timeout_ms, out_events_json, out_error, (b"[", b',', b"]"))
}

/// Like `omprpc_client_next_events`, but the events come as JSON lines (each event, then
/// `\n`): events never contain a raw newline, so a binding can split them with a byte search
/// instead of parsing an array.
/// Ownership: the caller frees `*out_events_jsonl` with `omprpc_string_free`. Threads: any
/// thread; each event goes to exactly one caller. Statuses: OK, TIMEOUT, CLOSED, INVALID_ARGUMENT,
/// PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_next_events_lines(
    client: *const omprpc_client,
    max_events: usize,
    timeout_ms: i64,
    out_events_jsonl: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> Status {
    events_joined(client, max_events, timeout_ms, out_events_jsonl, out_error, (b"", b'\n', b""))
}

/// A descriptor that polls readable while events are queued or the client is closed (for
/// epoll, libuv, asyncio, Go's poller). Owned by the client: do not read or close it; it is
/// valid until `omprpc_client_free`. Unix only: on Windows it fails with INVALID_ARGUMENT
/// (use `omprpc_client_event_handle`).
/// Threads: any thread. Statuses: OK, INVALID_ARGUMENT, PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_event_fd(client: *const omprpc_client, out_fd: *mut c_int, out_error: *mut *mut c_char) -> Status {
    boundary(client, out_error, || {
        let c = self::client(client)?;
        let fd = out(out_fd, "out_fd")?;
        #[cfg(unix)]
        {
            *fd = c.event_fd();
            Ok(())
        }
        #[cfg(windows)]
        {
            let _ = (c, fd);
            Err(Error::invalid("omprpc_client_event_fd: Windows has no event descriptor; use omprpc_client_event_handle"))
        }
    })
}

/// Windows' event descriptor: a manual-reset event `HANDLE` (as `void *`) that is set while
/// events are queued or the client is closed (for `WaitForSingleObject`,
/// `WaitForMultipleObjects`, `RegisterWaitForSingleObject`). Owned by the client: do not
/// reset, signal or close it; it is valid until `omprpc_client_free`. Windows only: elsewhere
/// it fails with INVALID_ARGUMENT (use `omprpc_client_event_fd`).
/// Threads: any thread. Statuses: OK, INVALID_ARGUMENT, PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_event_handle(client: *const omprpc_client, out_handle: *mut *mut c_void, out_error: *mut *mut c_char) -> Status {
    boundary(client, out_error, || {
        let c = self::client(client)?;
        let handle = out(out_handle, "out_handle")?;
        #[cfg(windows)]
        {
            *handle = c.event_handle();
            Ok(())
        }
        #[cfg(unix)]
        {
            let _ = (c, handle);
            Err(Error::invalid("omprpc_client_event_handle: there are no event handles off Windows; use omprpc_client_event_fd"))
        }
    })
}

/// Takes the next UI request that needs an answer (select, confirm, input, editor, or an
/// unknown method that is not passive). Woken by close (CLOSED).
/// Ownership: the caller frees `*out_request_json` with `omprpc_string_free`. Threads: any
/// thread; each request goes to exactly one caller. Statuses: OK, TIMEOUT, CLOSED,
/// INVALID_ARGUMENT, PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_next_ui_request(
    client: *const omprpc_client,
    timeout_ms: i64,
    out_request_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> Status {
    boundary(client, out_error, || {
        let c = self::client(client)?;
        let slot = out(out_request_json, "out_request_json")?;
        *slot = give_json(c.next_ui_request(deadline(timeout_ms, None)?)?);
        Ok(())
    })
}

/// Answers UI request `request_id` with a value (select, input, editor).
/// Threads: any thread, concurrently. Statuses: OK, NOT_FOUND, TIMEOUT (a write that cannot
/// finish), INVALID_ARGUMENT, INVALID_UTF8, CLOSED (or the close reason: PROCESS_EXITED, PROTOCOL,
/// IO), PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_ui_send_value(
    client: *const omprpc_client,
    request_id: *const c_char,
    value: *const c_char,
    out_error: *mut *mut c_char,
) -> Status {
    boundary(client, out_error, || self::client(client)?.ui_send_value(text(request_id, "request_id")?, text(value, "value")?))
}

/// Answers a confirm UI request.
/// Threads: any thread, concurrently. Statuses: OK, NOT_FOUND, TIMEOUT (a write that cannot
/// finish), INVALID_ARGUMENT, INVALID_UTF8, CLOSED (or the close reason: PROCESS_EXITED, PROTOCOL,
/// IO), PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_ui_send_confirmation(
    client: *const omprpc_client,
    request_id: *const c_char,
    confirmed: bool,
    out_error: *mut *mut c_char,
) -> Status {
    boundary(client, out_error, || self::client(client)?.ui_send_confirmation(text(request_id, "request_id")?, confirmed))
}

/// Cancels a UI request (`timed_out` tells the agent the host's own timeout fired).
/// Threads: any thread, concurrently. Statuses: OK, NOT_FOUND, TIMEOUT (a write that cannot
/// finish), INVALID_ARGUMENT, INVALID_UTF8, CLOSED (or the close reason: PROCESS_EXITED, PROTOCOL,
/// IO), PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_ui_cancel(
    client: *const omprpc_client,
    request_id: *const c_char,
    timed_out: bool,
    out_error: *mut *mut c_char,
) -> Status {
    boundary(client, out_error, || self::client(client)?.ui_cancel(text(request_id, "request_id")?, timed_out))
}

/// Switches the raw-frame tap (the start option `queue_responses`) at run time: from the next
/// response the library reads, responses are queued as events too (`on`) or reach only the
/// calls waiting for them. A binding taps only while someone listens to raw frames: each
/// tapped response wakes the host's event reader.
/// Threads: any thread, concurrently. Statuses: OK, INVALID_ARGUMENT, PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_set_queue_responses(client: *const omprpc_client, on: bool, out_error: *mut *mut c_char) -> Status {
    boundary(client, out_error, || {
        self::client(client)?.set_queue_responses(on);
        Ok(())
    })
}

/// Sets the headless UI policy: `{"confirm":false,"select":null,"input":null,"editor":null}`
/// (a null answer cancels; unknown interactive methods are cancelled; passive ones ignored).
/// NULL or "null" removes it. Requests already waiting are answered by the new policy.
/// Threads: any thread, concurrently. Statuses: OK, INVALID_ARGUMENT, INVALID_JSON, INVALID_UTF8,
/// PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_set_ui_policy(client: *const omprpc_client, policy_json: *const c_char, out_error: *mut *mut c_char) -> Status {
    boundary(client, out_error, || {
        let c = self::client(client)?;
        let policy = match opt_text(policy_json, "policy_json")? {
            None => None,
            Some(j) => UiPolicy::parse(&parse_value(j, "policy_json")?)?,
        };
        c.set_ui_policy(policy);
        Ok(())
    })
}

/// The body of the host registration calls (`set_`/`add_`/`remove_host_tools`, and the
/// same for URI schemes): a JSON list in, the agent's answer out.
///
/// # Safety
/// `client`, `list_json`, `out_data_json` and `out_error` as each registration export documents.
unsafe fn registration(
    client: *const omprpc_client,
    list_json: *const c_char,
    what: &str,
    timeout_ms: i64,
    out_data_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
    call: fn(&Client, Value, Deadline) -> Result<String>,
) -> Status {
    boundary(client, out_error, || {
        let c = self::client(client)?;
        let slot = out(out_data_json, "out_data_json")?;
        let list = parse_value(text(list_json, what)?, what)?;
        *slot = give(call(&c, list, deadline(timeout_ms, c.default_request_deadline())?)?);
        Ok(())
    })
}

/// Registers host tools (`[{name,description,parameters,label?,hidden?,loadMode?}]`, replacing
/// the set); `out_data_json` receives the agent's answer (`{"toolNames":[…]}`).
/// Ownership: the caller frees `*out_data_json` with `omprpc_string_free`. Threads: any
/// thread, concurrently. Statuses: OK, COMMAND_FAILED, TIMEOUT, INVALID_ARGUMENT, INVALID_JSON,
/// INVALID_UTF8, CLOSED (or the close reason: PROCESS_EXITED, PROTOCOL, IO), PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_set_host_tools(
    client: *const omprpc_client,
    tools_json: *const c_char,
    timeout_ms: i64,
    out_data_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> Status {
    // SAFETY: the caller's pointers, as documented above; checked inside.
    unsafe { registration(client, tools_json, "tools_json", timeout_ms, out_data_json, out_error, Client::set_host_tools) }
}

/// Registers host URI schemes (`[{scheme,description?,writable?,immutable?}]`, replacing the
/// set); `out_data_json` receives the agent's answer (`{"schemes":[…]}`).
/// Ownership: the caller frees `*out_data_json` with `omprpc_string_free`. Threads: any
/// thread, concurrently. Statuses: OK, COMMAND_FAILED, TIMEOUT, INVALID_ARGUMENT, INVALID_JSON,
/// INVALID_UTF8, CLOSED (or the close reason: PROCESS_EXITED, PROTOCOL, IO), PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_set_host_uri_schemes(
    client: *const omprpc_client,
    schemes_json: *const c_char,
    timeout_ms: i64,
    out_data_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> Status {
    // SAFETY: the caller's pointers, as documented above; checked inside.
    unsafe { registration(client, schemes_json, "schemes_json", timeout_ms, out_data_json, out_error, Client::set_host_uri_schemes) }
}

/// Registers more host tools (`add_host_tools`, omp protocol 1.1: the list as for
/// `omprpc_client_set_host_tools`; those registered stay); `out_data_json` receives the agent's
/// answer. A refusal leaves the library's registry as it was. pi: INVALID_ARGUMENT (its host
/// tools are fixed at start). Ownership: the caller frees `*out_data_json` with
/// `omprpc_string_free`. Threads: any thread, concurrently. Statuses: OK, COMMAND_FAILED (an
/// agent without the command: `Unknown command`), TIMEOUT, INVALID_ARGUMENT, INVALID_JSON,
/// INVALID_UTF8, CLOSED (or the close reason: PROCESS_EXITED, PROTOCOL, IO), PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_add_host_tools(
    client: *const omprpc_client,
    tools_json: *const c_char,
    timeout_ms: i64,
    out_data_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> Status {
    // SAFETY: the caller's pointers, as documented above; checked inside.
    unsafe { registration(client, tools_json, "tools_json", timeout_ms, out_data_json, out_error, Client::add_host_tools) }
}

/// Unregisters host tools by name (`remove_host_tools {toolNames}`, `names_json` a JSON array
/// of strings); they leave the library's registry once the agent agreed; `out_data_json`
/// receives the agent's answer. pi: INVALID_ARGUMENT. Ownership: the caller frees `*out_data_json` with `omprpc_string_free`. Threads: any thread,
/// concurrently. Statuses: OK, COMMAND_FAILED (an agent without the command: `Unknown
/// command`), TIMEOUT, INVALID_ARGUMENT, INVALID_JSON, INVALID_UTF8, CLOSED (or the close
/// reason: PROCESS_EXITED, PROTOCOL, IO), PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_remove_host_tools(
    client: *const omprpc_client,
    names_json: *const c_char,
    timeout_ms: i64,
    out_data_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> Status {
    // SAFETY: the caller's pointers, as documented above; checked inside.
    unsafe { registration(client, names_json, "names_json", timeout_ms, out_data_json, out_error, Client::remove_host_tools) }
}

/// Registers more host URI schemes (`add_host_uri_schemes`, omp protocol 1.1: the list as for
/// `omprpc_client_set_host_uri_schemes`; a scheme already registered is redefined, the others
/// stay); `out_data_json` receives the agent's answer. A refusal leaves the library's registry
/// as it was. Ownership: the caller frees `*out_data_json` with `omprpc_string_free`. Threads: any thread,
/// concurrently. Statuses: OK, COMMAND_FAILED (an agent without the command: `Unknown
/// command`), TIMEOUT, INVALID_ARGUMENT, INVALID_JSON, INVALID_UTF8, CLOSED (or the close
/// reason: PROCESS_EXITED, PROTOCOL, IO), PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_add_host_uri_schemes(
    client: *const omprpc_client,
    schemes_json: *const c_char,
    timeout_ms: i64,
    out_data_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> Status {
    // SAFETY: the caller's pointers, as documented above; checked inside.
    unsafe { registration(client, schemes_json, "schemes_json", timeout_ms, out_data_json, out_error, Client::add_host_uri_schemes) }
}

/// Unregisters host URI schemes by name (`remove_host_uri_schemes {schemes}`, `schemes_json` a
/// JSON array of strings); removed from the library's registry once the agent agreed;
/// `out_data_json` receives the agent's answer. Ownership: the caller frees `*out_data_json` with `omprpc_string_free`. Threads: any thread,
/// concurrently. Statuses: OK, COMMAND_FAILED (an agent without the command: `Unknown
/// command`), TIMEOUT, INVALID_ARGUMENT, INVALID_JSON, INVALID_UTF8, CLOSED (or the close
/// reason: PROCESS_EXITED, PROTOCOL, IO), PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_remove_host_uri_schemes(
    client: *const omprpc_client,
    schemes_json: *const c_char,
    timeout_ms: i64,
    out_data_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> Status {
    // SAFETY: the caller's pointers, as documented above; checked inside.
    unsafe { registration(client, schemes_json, "schemes_json", timeout_ms, out_data_json, out_error, Client::remove_host_uri_schemes) }
}

/// Streams a partial result for host tool call `call_id` (`"text"` or `{content,details?}`).
/// NOT_FOUND for an unknown call, CANCELLED if the agent cancelled it.
/// Threads: any thread, concurrently. Statuses: OK, NOT_FOUND, CANCELLED, TIMEOUT (a write that
/// cannot finish), INVALID_ARGUMENT, INVALID_JSON, INVALID_UTF8, CLOSED (or the close reason:
/// PROCESS_EXITED, PROTOCOL, IO), PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_host_tool_update(
    client: *const omprpc_client,
    call_id: *const c_char,
    partial_result_json: *const c_char,
    out_error: *mut *mut c_char,
) -> Status {
    boundary(client, out_error, || {
        let c = self::client(client)?;
        let v = parse_value(text(partial_result_json, "partial_result_json")?, "partial_result_json")?;
        c.host_tool_update(text(call_id, "call_id")?, v)
    })
}

/// Sends the final result of host tool call `call_id` (`"text"` or `{content,details?}`).
/// NOT_FOUND for an unknown call, CANCELLED if the agent cancelled it (the result is dropped).
/// Threads: any thread, concurrently. Statuses: OK, NOT_FOUND, CANCELLED, TIMEOUT (a write that
/// cannot finish), INVALID_ARGUMENT, INVALID_JSON, INVALID_UTF8, CLOSED (or the close reason:
/// PROCESS_EXITED, PROTOCOL, IO), PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_host_tool_result(
    client: *const omprpc_client,
    call_id: *const c_char,
    result_json: *const c_char,
    is_error: bool,
    out_error: *mut *mut c_char,
) -> Status {
    boundary(client, out_error, || {
        let c = self::client(client)?;
        let v = parse_value(text(result_json, "result_json")?, "result_json")?;
        c.host_tool_result(text(call_id, "call_id")?, v, is_error)
    })
}

/// Answers host URI request `request_id`: `{"content","contentType"?,"notes"?,"immutable"?}`
/// for a read, `{}` for a write, `{"error":"…"}` for a failure.
/// Threads: any thread, concurrently. Statuses: OK, NOT_FOUND, TIMEOUT (a write that cannot
/// finish), INVALID_ARGUMENT, INVALID_JSON, INVALID_UTF8, CLOSED (or the close reason:
/// PROCESS_EXITED, PROTOCOL, IO), PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_host_uri_result(
    client: *const omprpc_client,
    request_id: *const c_char,
    result_json: *const c_char,
    out_error: *mut *mut c_char,
) -> Status {
    boundary(client, out_error, || {
        let c = self::client(client)?;
        let v = parse_value(text(result_json, "result_json")?, "result_json")?;
        c.host_uri_result(text(request_id, "request_id")?, v)
    })
}

/// Answers a `policy_eval` event (the policy gate over the agent's own tools): allow, or
/// block with `reason` (NULL or empty: a default reason). NOT_FOUND for an unknown id. No
/// answer within the gate's `timeout_ms` blocks the tool (unless the gate fails open).
/// Threads: any thread, concurrently. Statuses: OK, NOT_FOUND, INVALID_ARGUMENT, INVALID_UTF8,
/// IO (the tool bridge's connection is gone), PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_policy_verdict(
    client: *const omprpc_client,
    request_id: *const c_char,
    allow: bool,
    reason: *const c_char,
    out_error: *mut *mut c_char,
) -> Status {
    boundary(client, out_error, || {
        let c = self::client(client)?;
        c.policy_verdict(text(request_id, "request_id")?, allow, opt_text(reason, "reason")?.unwrap_or(""))
    })
}

/// The body of an export that reads one string from the client.
unsafe fn client_string(
    client: *const omprpc_client,
    out_text: *mut *mut c_char,
    out_error: *mut *mut c_char,
    read: impl FnOnce(&Client) -> String,
) -> Status {
    boundary(client, out_error, || {
        let c = self::client(client)?;
        let slot = out(out_text, "out_text")?;
        *slot = give(read(&c));
        Ok(())
    })
}

/// The agent's last `max_stderr_lines` stderr lines, as text.
/// Ownership: the caller frees `*out_text` with `omprpc_string_free`. Threads: any thread,
/// concurrently, after close too. Statuses: OK, INVALID_ARGUMENT, PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_stderr(client: *const omprpc_client, out_text: *mut *mut c_char, out_error: *mut *mut c_char) -> Status {
    client_string(client, out_text, out_error, Client::stderr)
}

/// The recorded protocol errors (JSON array, the last 128).
/// Ownership: the caller frees `*out_json` with `omprpc_string_free`. Threads: any thread,
/// concurrently, after close too. Statuses: OK, INVALID_ARGUMENT, PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_protocol_errors(client: *const omprpc_client, out_json: *mut *mut c_char, out_error: *mut *mut c_char) -> Status {
    client_string(client, out_json, out_error, Client::protocol_errors)
}

/// `{"pid","argv"(redacted),"flavor","protocolVersion","ready","closed","closeReason",
/// "activeOperation","pendingRequests"}`.
/// Ownership: the caller frees `*out_json` with `omprpc_string_free`. Threads: any thread,
/// concurrently, after close too. Statuses: OK, INVALID_ARGUMENT, PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_info(client: *const omprpc_client, out_json: *mut *mut c_char, out_error: *mut *mut c_char) -> Status {
    client_string(client, out_json, out_error, Client::info)
}

/// The client's counters, one JSON object: `frames_in`, `bytes_in`, `frames_out`, `bytes_out`,
/// `requests_sent`, `responses`, `requests_pending`, `protocol_errors`, `ui_requests`,
/// `events_queued`, `events_delivered`, `events_dropped`, `events_held`, `events_held_bytes`,
/// `time_to_first_event_ms` and `last_prompt_first_event_ms` (null until known), `uptime_ms`,
/// `closed`. Readable at any time, after close too.
/// Ownership: the caller frees `*out_json` with `omprpc_string_free`. Threads: any thread,
/// concurrently. Statuses: OK, INVALID_ARGUMENT, PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_counters(client: *const omprpc_client, out_json: *mut *mut c_char, out_error: *mut *mut c_char) -> Status {
    client_string(client, out_json, out_error, Client::counters)
}

/// Waits up to `timeout_ms` for a log record, then takes up to `max_records` as one JSON
/// array of `{"level","target","message","t_ms","client",…}` objects. Logs are a queue of
/// their own, collected only when the client was started with `"log_level"` (else
/// INVALID_ARGUMENT). TIMEOUT when none arrived in time; CLOSED once the client is closed and
/// every record (teardown's included) was taken.
/// Ownership: the caller frees `*out_logs_json` with `omprpc_string_free`. Threads: any
/// thread; each record goes to exactly one caller. Statuses: OK, TIMEOUT, CLOSED,
/// INVALID_ARGUMENT, PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_next_logs(
    client: *const omprpc_client,
    max_records: usize,
    timeout_ms: i64,
    out_logs_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> Status {
    boundary(client, out_error, || {
        let c = self::client(client)?;
        let slot = out(out_logs_json, "out_logs_json")?;
        let records = c.next_logs(max_records, deadline(timeout_ms, None)?)?;
        *slot = give(format!("[{}]", records.join(",")));
        Ok(())
    })
}

/// Closes the client: every blocked call returns at once (CLOSED, or the earlier reason),
/// then the agent is stopped — stdin EOF, `stop_grace_ms`, SIGTERM to its process group,
/// `kill_grace_ms`, SIGKILL — and reaped with every process left in its group. Returns when it
/// is gone. Idempotent; callable from any thread, concurrently with any call but free.
/// Statuses: OK, INVALID_ARGUMENT (no client), PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_close(client: *const omprpc_client, out_error: *mut *mut c_char) -> Status {
    boundary(client, out_error, || {
        if client.is_null() {
            return Err(Error::invalid("client is NULL"));
        }
        // Close even a poisoned client: it must not leave the agent running.
        Live::new(&*client).close()
    })
}

/// Closes (if needed) and frees the client. The last call on a handle: no call may start
/// after it. Calls already inside the library (e.g. a poll on another thread) are woken by the
/// close and waited for before the memory is released. NULL is a no-op.
/// Threads: see above; `client` must not be used afterwards.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_free(client: *mut omprpc_client) {
    if client.is_null() {
        return;
    }
    guarded((), || {
        let h = &*client;
        // close wakes every blocked call at once; those still on their way out finish
        // within microseconds, so a short sleep loop is enough and costs nothing otherwise.
        let _ = h.client.close();
        while h.calls.load(Ordering::SeqCst) != 0 {
            std::thread::sleep(Duration::from_micros(200));
        }
        drop(Box::from_raw(client))
    });
}
