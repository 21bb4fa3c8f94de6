//! The `omprpc_summarizer` handle and its exports, and `omprpc_summarize`, the same in one call:
//! a turn's raw events in, the derived items and the summary out.

use std::ffi::c_char;

use serde_json::Value;

use crate::client::options;
use crate::client::parse_value;
use crate::error::{Error, Result, Status};

use super::strings::{give, opt_text, text};
use super::{boundary, guarded, out};

/// A turn summarizer: feed it raw events in order; it returns the derived items each one
/// produces and, at any time, the summary so far (see `omprpc_summarize`). Opaque.
pub struct omprpc_summarizer {
    inner: std::sync::Mutex<crate::turn::summary::Summarizer>,
}

fn summary_model(options_json: *const c_char) -> Result<Option<String>> {
    // SAFETY: NULL or a C string, per the caller's contract.
    let Some(json) = (unsafe { opt_text(options_json, "options_json")? }) else { return Ok(None) };
    let map = options::parse_object(json)?;
    match map.get("model") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(m)) => Ok(Some(m.clone())),
        Some(_) => Err(Error::invalid("summary option \"model\" must be a string")),
    }
}

/// The summary of a JSON array of raw events (e.g. a turn's `events`): `{"complete","text",
/// "finalText","reasoning","chunks","toolCalls","stopReason","stopReasons","usage",
/// "messageUsage"}`. Options: `{"model":"…"}` — the configured model, for usage records whose
/// message names none. Thread-safe.
/// Ownership: the caller frees `*out_summary_json` with `omprpc_string_free`. Statuses: OK,
/// INVALID_ARGUMENT, INVALID_JSON, INVALID_UTF8, PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_summarize(
    events_json: *const c_char,
    options_json: *const c_char,
    out_summary_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> Status {
    boundary(std::ptr::null(), out_error, || {
        let slot = out(out_summary_json, "out_summary_json")?;
        let events = match parse_value(text(events_json, "events_json")?, "events_json")? {
            Value::Array(a) => a,
            _ => return Err(Error::invalid_json("events_json must be a JSON array")),
        };
        let model = summary_model(options_json)?;
        *slot = give(crate::turn::summary::summarize(&events, model).to_string());
        Ok(())
    })
}

/// A new summarizer (options as for `omprpc_summarize`); free it with `omprpc_summarizer_free`.
/// Ownership: `*out_summarizer` is the caller's until `omprpc_summarizer_free`. Threads: any
/// thread; the summarizer is thread-safe (calls on it are serialised). Statuses: OK,
/// INVALID_ARGUMENT, INVALID_JSON, INVALID_UTF8, PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_summarizer_new(
    options_json: *const c_char,
    out_summarizer: *mut *mut omprpc_summarizer,
    out_error: *mut *mut c_char,
) -> Status {
    boundary(std::ptr::null(), out_error, || {
        let slot = out(out_summarizer, "out_summarizer")?;
        let inner = crate::turn::summary::Summarizer::new(summary_model(options_json)?);
        *slot = Box::into_raw(Box::new(omprpc_summarizer { inner: std::sync::Mutex::new(inner) }));
        Ok(())
    })
}

/// Feeds one raw event; `out_derived_json` receives the derived items it produced, as a JSON
/// array: `{"kind":"text"|"reasoning_start"|"reasoning"|"tool_start"|"tool_update"|"tool_end"|
/// "message_end"|"stop"|"turn_end",…}`.
/// Ownership: the caller frees `*out_derived_json` with `omprpc_string_free`. Threads: any
/// thread (serialised per summarizer). Statuses: OK, INVALID_ARGUMENT, INVALID_JSON, INVALID_UTF8,
/// PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_summarizer_feed(
    summarizer: *const omprpc_summarizer,
    event_json: *const c_char,
    out_derived_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> Status {
    boundary(std::ptr::null(), out_error, || {
        let sm = summarizer.as_ref().ok_or_else(|| Error::invalid("summarizer is NULL"))?;
        let slot = out(out_derived_json, "out_derived_json")?;
        let ev = parse_value(text(event_json, "event_json")?, "event_json")?;
        let derived = sm.inner.lock().unwrap_or_else(|p| p.into_inner()).feed(&ev);
        *slot = give(Value::Array(derived).to_string());
        Ok(())
    })
}

/// The summary of everything fed so far.
/// Ownership: the caller frees `*out_summary_json` with `omprpc_string_free`. Threads: any
/// thread (serialised per summarizer). Statuses: OK, INVALID_ARGUMENT, PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_summarizer_summary(
    summarizer: *const omprpc_summarizer,
    out_summary_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> Status {
    boundary(std::ptr::null(), out_error, || {
        let sm = summarizer.as_ref().ok_or_else(|| Error::invalid("summarizer is NULL"))?;
        let slot = out(out_summary_json, "out_summary_json")?;
        *slot = give(sm.inner.lock().unwrap_or_else(|p| p.into_inner()).finish().to_string());
        Ok(())
    })
}

/// Frees a summarizer. NULL is a no-op.
/// Threads: the last call on the summarizer; never concurrent with another call on it.
#[no_mangle]
pub unsafe extern "C" fn omprpc_summarizer_free(summarizer: *mut omprpc_summarizer) {
    if !summarizer.is_null() {
        guarded((), || drop(Box::from_raw(summarizer)));
    }
}
