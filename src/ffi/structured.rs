//! Events and turns as structure, not as a JSON layout to re-scan: `omprpc_event_batch` (events
//! taken from the queue) and `omprpc_turn` (a completed prompt). Each owns its bytes and hands
//! out borrowed views into them — an event's `type` and its JSON, a turn's metadata and its
//! parts — valid until the object is freed. The JSON forms (`next_events`, `prompt_and_wait`)
//! stay for C callers who want them; the bindings build on these.

use std::borrow::Cow;
use std::ffi::c_char;
use std::ptr;

use crate::error::Result;
use crate::protocol::scan::Fields;
use crate::turn::{Span, Turn, TurnOutcome};

use super::client::{client, prompt_message};
use super::strings::{opt_text, text};
use super::{boundary, deadline, guarded, omprpc_client, out, omprpc_status};
use crate::client::parse_params;

/// Borrowed UTF-8 bytes (not NUL-terminated): `data` is NULL (and `len` 0) when absent.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct omprpc_str {
    pub data: *const c_char,
    pub len: usize,
}

impl omprpc_str {
    const NONE: omprpc_str = omprpc_str { data: ptr::null(), len: 0 };

    fn of(bytes: &[u8]) -> omprpc_str {
        omprpc_str { data: bytes.as_ptr().cast(), len: bytes.len() }
    }
}

/// One event: its `type` (absent when the event has none) and the event verbatim. Within one
/// batch or turn, events of the same type share one `event_type` (the same `data`; for the
/// first 32 distinct types written without escapes), so a binding can decode each distinct
/// type once and recognise it by its address.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct omprpc_event_view {
    pub event_type: omprpc_str,
    pub json: omprpc_str,
}

/// Views of events held in `bytes`-owning storage. An event's type is a slice of its JSON
/// (the first event's of that type) unless the string holds an escape (then a decoded copy
/// kept in `decoded`).
struct Views {
    views: Vec<omprpc_event_view>,
    /// Decoded types; a `Box<str>` does not move when the vector grows.
    _decoded: Vec<Box<str>>,
}

/// `events[i]` is a whole event; the views point into it (the caller keeps the bytes alive and
/// unmoved for as long as the views live).
fn views<'a>(events: impl Iterator<Item = &'a [u8]>) -> Views {
    /// Where an event's type is: in the event, in `decoded`, or nowhere.
    enum At<'a> {
        In(&'a [u8]),
        Decoded(usize),
        Absent,
    }
    let mut decoded: Vec<Box<str>> = Vec::new();
    let mut f = Fields::new();
    // The distinct types met so far (a turn has a handful): an equal type points to the first.
    let mut seen: Vec<&[u8]> = Vec::new();
    let mut shared = |t: &'a [u8]| -> &'a [u8] {
        if let Some(&first) = seen.iter().rev().find(|s| **s == t) {
            return first;
        }
        if seen.len() < SHARED_TYPES {
            seen.push(t);
        }
        t
    };
    // First every type, then the views: a view of a decoded type points into its Box only once
    // no Box moves any more.
    let found: Vec<(&[u8], At)> = events
        .map(|ev| {
            // Agents (and the library) write "type" first: read it without scanning the event.
            if let Some(t) = leading_type(ev) {
                return (ev, At::In(shared(t)));
            }
            let at = match f.scan(ev, 0..ev.len()).ok().and_then(|()| f.str(ev, "type")) {
                Some(Cow::Borrowed(t)) => At::In(shared(t.as_bytes())),
                Some(Cow::Owned(t)) => {
                    decoded.push(t.into_boxed_str());
                    At::Decoded(decoded.len() - 1)
                }
                None => At::Absent,
            };
            (ev, at)
        })
        .collect();
    let views = found
        .into_iter()
        .map(|(ev, at)| {
            let event_type = match at {
                At::In(t) => omprpc_str::of(t),
                At::Decoded(i) => omprpc_str::of(decoded[i].as_bytes()),
                At::Absent => omprpc_str::NONE,
            };
            omprpc_event_view { event_type, json: omprpc_str::of(ev) }
        })
        .collect();
    Views { views, _decoded: decoded }
}

/// The most distinct types whose events share one slice; past them (an agent inventing types)
/// a type is its own event's, and the search stays short.
const SHARED_TYPES: usize = 32;

/// The value of a leading `"type":"…"` member holding no escape, as a slice of `ev`: agents
/// (JSON.stringify) and the library write `type` first, and the reader refuses a frame with two
/// `type` members (client::reader::check_frame), so a leading one is the event's type — read
/// without scanning the event.
fn leading_type(ev: &[u8]) -> Option<&[u8]> {
    let rest = ev.strip_prefix(b"{\"type\":\"")?;
    let end = rest.iter().position(|&b| b == b'"' || b == b'\\')?;
    (rest[end] == b'"').then(|| &rest[..end])
}

/// Hands out a borrowed array: its first element and length.
fn lend<T>(items: &[T], out_items: *mut *const T, out_count: *mut usize, what: &str) -> Result<()> {
    let (first, count) = (out(out_items, what)?, out(out_count, "out_count")?);
    *first = items.as_ptr();
    *count = items.len();
    Ok(())
}

/// Events, each with its type: taken from a client's queue or collected through a run.
pub struct omprpc_event_batch {
    views: Views,
    /// The bytes the views point into: the queue's events, or one collected array.
    _storage: Storage,
}

// Held, never read: it keeps alive the bytes the views point into.
#[allow(dead_code)]
enum Storage {
    Events(Vec<crate::transport::bytes::FrameBytes>),
    Array(Vec<u8>),
}

/// Waits for one event, then takes up to `max_events` queued events as a batch: each event's
/// type and its JSON, borrowed from the batch (see `omprpc_event_batch_events`). The same
/// events, order and statuses as `omprpc_client_next_events`, without a JSON array to parse.
/// Ownership: the caller frees `*out_batch` with `omprpc_event_batch_free`. Threads: any
/// thread; each event goes to exactly one caller. Statuses: OK, TIMEOUT, CLOSED,
/// INVALID_ARGUMENT, PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_next_event_batch(
    client: *const omprpc_client,
    max_events: usize,
    timeout_ms: i64,
    out_batch: *mut *mut omprpc_event_batch,
    out_error: *mut *mut c_char,
) -> omprpc_status {
    boundary(client, out_error, || {
        let c = self::client(client)?;
        let slot = out(out_batch, "out_batch")?;
        let events = c.next_events(max_events, deadline(timeout_ms, None)?)?;
        let views = views(events.iter().map(|e| &e[..]));
        *slot = Box::into_raw(Box::new(omprpc_event_batch { views, _storage: Storage::Events(events) }));
        Ok(())
    })
}

/// `omprpc_client_collect_events` as a batch: every session event from the call through the
/// end of the agent's current work, each with its type (see `omprpc_event_batch_events`).
/// Ownership: the caller frees `*out_batch` with `omprpc_event_batch_free`. Threads: any
/// thread (one collector at a time). Statuses: those of `omprpc_client_collect_events`: OK,
/// TIMEOUT, CONCURRENCY, LIMIT_EXCEEDED, INVALID_ARGUMENT, CLOSED (or the close reason:
/// PROCESS_EXITED, PROTOCOL, IO), PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_collect_event_batch(
    client: *const omprpc_client,
    timeout_ms: i64,
    out_batch: *mut *mut omprpc_event_batch,
    out_error: *mut *mut c_char,
) -> omprpc_status {
    boundary(client, out_error, || {
        let c = self::client(client)?;
        let slot = out(out_batch, "out_batch")?;
        let (array, spans) = c.collect_events_located(deadline(timeout_ms, c.default_turn_deadline())?)?;
        // The views point into `array`'s heap buffer, which moving `array` does not move.
        let views = views(spans.iter().map(|&(start, end)| &array[start..end]));
        *slot = Box::into_raw(Box::new(omprpc_event_batch { views, _storage: Storage::Array(array) }));
        Ok(())
    })
}

/// The batch's events, in queue order: `*out_events` points to `*out_count` views, each
/// borrowing from the batch.
/// Ownership: borrowed; valid until `omprpc_event_batch_free(batch)`. Threads: any thread
/// (the batch is immutable). Statuses: OK, INVALID_ARGUMENT, PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_event_batch_events(
    batch: *const omprpc_event_batch,
    out_events: *mut *const omprpc_event_view,
    out_count: *mut usize,
    out_error: *mut *mut c_char,
) -> omprpc_status {
    boundary(ptr::null(), out_error, || {
        // SAFETY: NULL or a live batch from omprpc_client_next_event_batch (caller's contract).
        let batch = unsafe { batch.as_ref() }.ok_or_else(|| crate::error::Error::invalid("batch is NULL"))?;
        lend(&batch.views.views, out_events, out_count, "out_events")
    })
}

/// Releases a batch and everything borrowed from it; NULL is a no-op.
/// Ownership: takes `batch`. Threads: any thread, once, after the last use of its views.
#[no_mangle]
pub unsafe extern "C" fn omprpc_event_batch_free(batch: *mut omprpc_event_batch) {
    if !batch.is_null() {
        // SAFETY: a batch from omprpc_client_next_event_batch, freed once (caller's contract).
        guarded((), || drop(unsafe { Box::from_raw(batch) }));
    }
}

/// How a prompt completed (the turn JSON's `outcome`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum omprpc_turn_outcome {
    /// The last run's terminal `agent_end` ended it, and the agent did not go on by itself (an
    /// agent that does not announce settling: omp, pi before 0.80.4).
    AgentEnd = 0,
    /// omp's `prompt_result` answered it (a command that ran no agent loop).
    PromptResult = 1,
    /// Nothing ran: the prompt's response said `agentInvoked:false` or
    /// `disposition:"handled"`, or the agent proved idle with no run for it.
    NotInvoked = 2,
    /// The agent said it settled (`agent_settled`, pi 0.80.4 on) after the prompt's runs.
    AgentSettled = 3,
    /// It was aborted: `agent_settled {aborted:true}`, a retry the host aborted in its delay,
    /// or a last run that stopped `aborted`.
    Aborted = 4,
}

/// A completed turn's metadata. Every `omprpc_str` borrows from the turn (absent: `data` NULL);
/// the `…_json` members are JSON, the others plain UTF-8 text.
#[repr(C)]
pub struct omprpc_turn_info {
    pub outcome: omprpc_turn_outcome,
    pub agent_invoked: bool,
    /// How many events the turn retained (see `omprpc_turn_events`).
    pub event_count: usize,
    pub request_id: omprpc_str,
    /// The assistant message's visible text (its text blocks; thinking excluded).
    pub assistant_text: omprpc_str,
    /// The assistant message's `stopReason` ("stop", "toolUse", "error", "aborted", …) and,
    /// for an error, its `errorMessage`.
    pub stop_reason: omprpc_str,
    pub error_message: omprpc_str,
    /// The assistant message's `usage` object.
    pub usage_json: omprpc_str,
    /// The messages of every run of the turn, oldest first (each run's `agent_end` messages, a
    /// compacted `agent_end` rebuilt), a JSON array.
    pub messages_json: omprpc_str,
    pub assistant_message_json: omprpc_str,
    pub prompt_result_json: omprpc_str,
    /// The turn summary (clients started with `turn_summary`).
    pub summary_json: omprpc_str,
    /// The whole turn JSON, as `omprpc_client_prompt_and_wait` returns it.
    pub turn_json: omprpc_str,
    /// How many attempts the agent made at the prompt: 1, plus one per retry it made and per
    /// overflow compaction it retried after (0 when nothing ran).
    pub attempts: u32,
    /// The agent said it settled (`agent_settled`).
    pub settled: bool,
    /// The attempts that failed, oldest first, a JSON array of
    /// `{"attempt","error","then","delayMs"?}`; `then` is `retry`, `compaction`, `gave_up`,
    /// `cancelled` or `none`.
    pub failed_attempts_json: omprpc_str,
    /// The compactions inside the turn, a JSON array of
    /// `{"reason","aborted","willRetry","errorMessage"}`.
    pub compactions_json: omprpc_str,
}

/// A completed prompt: its metadata and its events, borrowed from it.
pub struct omprpc_turn {
    /// Built on first use: a caller that reads only the metadata (a large turn's text, say)
    /// pays nothing for its events.
    views: std::sync::OnceLock<Views>,
    messages: Vec<omprpc_str>,
    turn: Turn,
}

/// Prompts and waits until that prompt completes, like `omprpc_client_prompt_and_wait`, and
/// returns the turn as structure: its metadata (`omprpc_turn_get_info`), `omprpc_turn_events`
/// for its events — no JSON layout to scan.
/// Ownership: the caller frees `*out_turn` with `omprpc_turn_free`. Threads: any thread (one
/// collector at a time). Statuses: those of `omprpc_client_prompt_and_wait`: OK,
/// COMMAND_FAILED, TIMEOUT, CONCURRENCY, LIMIT_EXCEEDED, INVALID_ARGUMENT, INVALID_JSON,
/// INVALID_UTF8, CLOSED (or the close reason: PROCESS_EXITED, PROTOCOL, IO), PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_prompt_and_wait_turn(
    client: *const omprpc_client,
    message: *const c_char,
    options_json: *const c_char,
    timeout_ms: i64,
    out_turn: *mut *mut omprpc_turn,
    out_error: *mut *mut c_char,
) -> omprpc_status {
    boundary(client, out_error, || {
        let c = self::client(client)?;
        let slot = out(out_turn, "out_turn")?;
        let opts = parse_params(opt_text(options_json, "options_json")?)?;
        let message = prompt_message(message, opts.as_ref())?;
        let d = deadline(timeout_ms, c.default_turn_deadline())?;
        let turn = c.prompt_and_wait_turn(message, opts, d)?;
        *slot = Box::into_raw(turn_object(turn));
        Ok(())
    })
}

/// The first half of `omprpc_client_prompt_and_wait_turn`, for a host that waits on the event
/// fd rather than on a thread: sends `prompt` (message and options as `omprpc_client_prompt`)
/// and returns its request id once the agent acknowledged it, within `timeout_ms` (default: the
/// start option `request_timeout_ms`). The turn then holds the client's single collector slot:
/// `omprpc_client_prompt_and_wait(_turn)`, `omprpc_client_collect_events(_batch)` and
/// `omprpc_client_wait_for_idle` fail with CONCURRENCY until `omprpc_client_take_turn` took
/// it (or the client closed). Its completion is the `prompt_complete` event with this request
/// id (start option `prompt_complete_events`); take the turn once that event was read. To
/// abandon the turn, send `abort` (`omprpc_client_abort`) and still take it after its
/// `prompt_complete`; `omprpc_client_close` releases everything.
/// Ownership: the caller frees `*out_request_id` with `omprpc_string_free`. Threads: any
/// thread; blocks only until the acknowledgement. Statuses: OK, COMMAND_FAILED, TIMEOUT,
/// CONCURRENCY, INVALID_ARGUMENT, INVALID_JSON, INVALID_UTF8, CLOSED (or the close reason:
/// PROCESS_EXITED, PROTOCOL, IO), PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_prompt_begin(
    client: *const omprpc_client,
    message: *const c_char,
    options_json: *const c_char,
    timeout_ms: i64,
    out_request_id: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> omprpc_status {
    super::client::prompt_like(client, message, options_json, timeout_ms, out_request_id, out_error, |c, m, o, d| c.prompt_begin(m, o, d))
}

/// The turn of the prompt begun as `request_id` with `omprpc_client_prompt_begin`, once it
/// completed (its `prompt_complete` event was queued), as `omprpc_client_prompt_and_wait_turn`
/// returns it; releases the collector slot. Never blocks: OK with `*out_turn` NULL while the
/// turn has not completed (nothing changes; take it after its `prompt_complete`), NOT_FOUND
/// when `request_id` is not the begun turn (none begun, another id, already taken or
/// released). A turn that failed returns its failure, as `omprpc_client_prompt_and_wait_turn`
/// would (COMMAND_FAILED, LIMIT_EXCEEDED, CLOSED or the close reason, …), and releases the slot
/// too. Nobody waits in the library on a begun turn, so the take applies the start option
/// `turn_idle_timeout_ms`: once the agent sent no event for that long (not counting time it
/// waits on the host), the take fails with TIMEOUT, releases the slot and leaves the turn
/// running, as a blocking waiter's idle timeout does.
/// Ownership: the caller frees a non-NULL `*out_turn` with `omprpc_turn_free`. Threads: any
/// thread. Statuses: OK, TIMEOUT, NOT_FOUND, COMMAND_FAILED, LIMIT_EXCEEDED, INVALID_ARGUMENT,
/// INVALID_UTF8, CLOSED (or the close reason: PROCESS_EXITED, PROTOCOL, IO), PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_take_turn(
    client: *const omprpc_client,
    request_id: *const c_char,
    out_turn: *mut *mut omprpc_turn,
    out_error: *mut *mut c_char,
) -> omprpc_status {
    boundary(client, out_error, || {
        let c = self::client(client)?;
        let slot = out(out_turn, "out_turn")?;
        *slot = match c.take_turn(text(request_id, "request_id")?)? {
            Some(turn) => Box::into_raw(turn_object(turn)),
            None => std::ptr::null_mut(),
        };
        Ok(())
    })
}

/// Gives up the turn begun as `request_id` with `omprpc_client_prompt_begin` without waiting
/// for it: releases the collector slot and leaves the turn running, exactly as the timeout of
/// a blocking `omprpc_client_prompt_and_wait_turn` does (a host's own turn timeout). The next
/// prompt is then the agent's to accept or refuse while the turn still runs; send `abort`
/// first to stop it. A later take of `request_id` is NOT_FOUND.
/// Threads: any thread. Statuses: OK, NOT_FOUND (not the begun turn: none begun, another id,
/// already taken or released), INVALID_ARGUMENT, INVALID_UTF8, PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_client_release_turn(client: *const omprpc_client, request_id: *const c_char, out_error: *mut *mut c_char) -> omprpc_status {
    boundary(client, out_error, || {
        let c = self::client(client)?;
        c.release_turn(text(request_id, "request_id")?)
    })
}

fn turn_object(turn: Turn) -> Box<omprpc_turn> {
    // The views point into `turn.json`'s heap buffer, which moving `turn` does not move.
    let messages = turn.message_spans.iter().map(|&(start, end)| omprpc_str::of(&turn.json[start..end])).collect();
    Box::new(omprpc_turn { views: std::sync::OnceLock::new(), messages, turn })
}

/// Fills `*out_info` with the turn's metadata.
/// Ownership: every `omprpc_str` borrows from the turn; valid until `omprpc_turn_free(turn)`.
/// Threads: any thread (the turn is immutable). Statuses: OK, INVALID_ARGUMENT, PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_turn_get_info(turn: *const omprpc_turn, out_info: *mut omprpc_turn_info, out_error: *mut *mut c_char) -> omprpc_status {
    boundary(ptr::null(), out_error, || {
        let t = turn_ref(turn)?;
        *out(out_info, "out_info")? = info(t);
        Ok(())
    })
}

/// The turn's events, in arrival order: `*out_events` points to `*out_count` views, each
/// borrowing from the turn (built on the first call; later calls lend the same array).
/// Ownership: borrowed; valid until `omprpc_turn_free(turn)`. Threads: any thread. Statuses:
/// OK, INVALID_ARGUMENT, PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_turn_events(
    turn: *const omprpc_turn,
    out_events: *mut *const omprpc_event_view,
    out_count: *mut usize,
    out_error: *mut *mut c_char,
) -> omprpc_status {
    boundary(ptr::null(), out_error, || {
        let t = turn_ref(turn)?;
        let views = t.views.get_or_init(|| views(t.turn.events.iter().map(|&(start, end)| &t.turn.json[start..end])));
        lend(&views.views, out_events, out_count, "out_events")
    })
}

/// The turn's messages (those of `messages_json`), each a JSON object: `*out_messages` points
/// to `*out_count` slices borrowing from the turn.
/// Ownership: borrowed; valid until `omprpc_turn_free(turn)`. Threads: any thread. Statuses:
/// OK, INVALID_ARGUMENT, PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_turn_messages(
    turn: *const omprpc_turn,
    out_messages: *mut *const omprpc_str,
    out_count: *mut usize,
    out_error: *mut *mut c_char,
) -> omprpc_status {
    boundary(ptr::null(), out_error, || {
        lend(&turn_ref(turn)?.messages, out_messages, out_count, "out_messages")
    })
}

/// Releases a turn and everything borrowed from it; NULL is a no-op.
/// Ownership: takes `turn`. Threads: any thread, once, after the last use of its views.
#[no_mangle]
pub unsafe extern "C" fn omprpc_turn_free(turn: *mut omprpc_turn) {
    if !turn.is_null() {
        // SAFETY: a turn from omprpc_client_prompt_and_wait_turn, freed once (caller's contract).
        guarded((), || drop(unsafe { Box::from_raw(turn) }));
    }
}

fn turn_ref<'a>(turn: *const omprpc_turn) -> Result<&'a omprpc_turn> {
    // SAFETY: NULL or a live turn from omprpc_client_prompt_and_wait_turn (caller's contract).
    unsafe { turn.as_ref() }.ok_or_else(|| crate::error::Error::invalid("turn is NULL"))
}

fn info(t: &omprpc_turn) -> omprpc_turn_info {
    let turn = &t.turn;
    let span = |s: Option<Span>| s.map_or(omprpc_str::NONE, |(a, b)| omprpc_str::of(&turn.json[a..b]));
    let text = |s: &Option<String>| s.as_deref().map_or(omprpc_str::NONE, |s| omprpc_str::of(s.as_bytes()));
    omprpc_turn_info {
        outcome: match turn.outcome {
            TurnOutcome::AgentEnd => omprpc_turn_outcome::AgentEnd,
            TurnOutcome::PromptResult => omprpc_turn_outcome::PromptResult,
            TurnOutcome::NotInvoked => omprpc_turn_outcome::NotInvoked,
            TurnOutcome::AgentSettled => omprpc_turn_outcome::AgentSettled,
            TurnOutcome::Aborted => omprpc_turn_outcome::Aborted,
        },
        agent_invoked: turn.agent_invoked,
        event_count: turn.events.len(),
        request_id: omprpc_str::of(turn.request_id.as_bytes()),
        assistant_text: text(&turn.assistant_text),
        stop_reason: text(&turn.stop_reason),
        error_message: text(&turn.error_message),
        usage_json: span(turn.usage),
        messages_json: span(Some(turn.messages)),
        assistant_message_json: span(turn.assistant_message),
        prompt_result_json: span(turn.prompt_result),
        summary_json: span(turn.summary),
        turn_json: omprpc_str::of(&turn.json),
        attempts: turn.attempts,
        settled: turn.settled,
        failed_attempts_json: span(Some(turn.failed_attempts)),
        compactions_json: span(Some(turn.compactions)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: omprpc_str) -> Option<String> {
        // SAFETY: the view borrows from `events`/`decoded`, alive for the whole test.
        (!s.data.is_null()).then(|| String::from_utf8(unsafe { std::slice::from_raw_parts(s.data.cast::<u8>(), s.len) }.to_vec()).unwrap())
    }

    #[test]
    fn an_escaped_type_is_decoded_and_a_missing_one_is_absent() {
        let events: Vec<&[u8]> = vec![br#"{"type":"message_end","x":1}"#, br#"{"type":"a\u0062c"}"#, br#"{"no":"type"}"#];
        let v = views(events.iter().copied());
        let types: Vec<Option<String>> = v.views.iter().map(|e| text(e.event_type)).collect();
        assert_eq!(types, [Some("message_end".into()), Some("abc".into()), None]);
        // A plain type borrows from its event; only the escaped one is a copy.
        assert_eq!(v.views[0].event_type.data, events[0][9..].as_ptr().cast());
        assert_eq!(v._decoded.len(), 1);
        assert!(v.views.iter().zip(&events).all(|(e, ev)| text(e.json).unwrap().as_bytes() == *ev));
    }

    #[test]
    fn events_of_one_type_share_the_first_ones_type() {
        let events: Vec<&[u8]> = vec![
            br#"{"type":"message_update","a":1}"#,
            br#"{"type":"message_end"}"#,
            br#"{"x":1,"type":"message_update"}"#,
            br#"{"type":"message_update","a":2}"#,
            br#"{"type":"message_updat"}"#,
        ];
        let v = views(events.iter().copied());
        let data: Vec<*const c_char> = v.views.iter().map(|e| e.event_type.data).collect();
        // Wherever the type stands in its event, an equal one is the first event's slice.
        assert_eq!(data[2], data[0]);
        assert_eq!(data[3], data[0]);
        assert_eq!(data[0], events[0][9..].as_ptr().cast());
        assert_ne!(data[1], data[0]);
        // A prefix of a seen type is a type of its own.
        assert_eq!(data[4], events[4][9..].as_ptr().cast());
        let types: Vec<Option<String>> = v.views.iter().map(|e| text(e.event_type)).collect();
        assert_eq!(types, [Some("message_update".into()), Some("message_end".into()), Some("message_update".into()), Some("message_update".into()), Some("message_updat".into())]);
    }
}
