//! The C ABI. Conventions (docs/c-api.md): every fallible call returns an `omprpc_status`;
//! out-parameters are written only on success; on failure `out_error` (if non-NULL) receives
//! an owned JSON object `{"code","status","message",…}`; strings in are borrowed UTF-8 for the
//! call only; strings out are released with `omprpc_string_free`. Every export runs inside
//! `boundary`, which catches panics (a test checks that each export does).
//!
//! Threads: a client may be used from any thread, concurrently, `omprpc_client_close`
//! included. `omprpc_client_free` is the last call: none may start once it has begun; calls
//! already inside (woken by its close) are waited for (`omprpc_client::calls`).
//!
//! One module per C type, each with its exports: `client` (the `omprpc_client` handle),
//! `summarizer` (the `omprpc_summarizer` handle and `omprpc_summarize`), `structured` (events
//! and turns as structure: `omprpc_event_batch`, `omprpc_turn`), `strings` (C strings in and
//! out, `omprpc_string_free`) and `helpers` (exports that need no handle). This module
//! keeps what they all share: the ABI constants, the panic boundary, out-parameters, timeouts,
//! and the library's identity and status names.

#![allow(non_camel_case_types, clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use crate::client::Deadline;
use crate::error::{panic_message, Error, Result, Status};

// Declared in this order on purpose: cbindgen writes the exports into include/omprpc.h in the
// order it meets them (this file's items first, then each module in turn), so reordering these
// lines reorders the header.
mod strings;
mod helpers;
mod client;
mod summarizer;
mod structured;

// The exports and handle types stay reachable as `omprpc::ffi::…` (the fuzz targets use them).
pub use client::*;
pub use helpers::*;
pub use strings::omprpc_string_free;
pub use structured::*;
pub use summarizer::*;

use strings::give;

/// The C ABI version. Bumped on every incompatible change; bindings refuse a mismatch.
pub const OMPRPC_ABI_VERSION: u32 = 2;
/// Timeout value: wait without a deadline.
pub const OMPRPC_TIMEOUT_INFINITE: i64 = -1;
/// Timeout value: use the client's configured default for this kind of call.
pub const OMPRPC_TIMEOUT_DEFAULT: i64 = -2;

/// `omprpc_status`: see the `Status` values.
pub type omprpc_status = Status;

static VERSION_C: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");

/// Runs an export body: catches panics, writes `out_error` on failure, poisons the client
/// after a panic.
fn boundary(client: *const omprpc_client, out_error: *mut *mut c_char, body: impl FnOnce() -> Result<()>) -> Status {
    let outcome = catch_unwind(AssertUnwindSafe(body));
    let err = match outcome {
        Ok(Ok(())) => return Status::Ok,
        Ok(Err(e)) => e,
        Err(p) => {
            if !client.is_null() {
                // SAFETY: a non-NULL client passed to an export is a live handle (caller's contract).
                unsafe { (*client).poison() };
            }
            Error::new(Status::Panic, format!("omprpc panicked (a bug; please report it): {}", panic_message(&*p)))
        }
    };
    if !out_error.is_null() {
        // SAFETY: the caller passes either NULL or a writable char* slot.
        unsafe { *out_error = give(err.to_json()) };
    }
    err.status
}

fn out<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T> {
    // SAFETY: the caller passes NULL or a writable slot; NULL is rejected here.
    unsafe { p.as_mut() }.ok_or_else(|| Error::invalid(format!("{what} is NULL")))
}

fn deadline(ms: i64, default: Deadline) -> Result<Deadline> {
    match ms {
        OMPRPC_TIMEOUT_DEFAULT => Ok(default),
        OMPRPC_TIMEOUT_INFINITE => Ok(None),
        ms if ms >= 0 => Ok(Some(Instant::now() + Duration::from_millis(ms as u64))),
        other => Err(Error::invalid(format!("timeout_ms {other} is not valid (use >= 0, -1 for none, -2 for the default)"))),
    }
}

/// For the few exports with no status to return: a panic gives `fallback`.
fn guarded<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
}

/// The library version (static, never freed).
/// Ownership: a static string; never free it. Threads: any thread, any time.
#[no_mangle]
pub extern "C" fn omprpc_version() -> *const c_char {
    guarded(b"?\0".as_ptr().cast(), || VERSION_C.as_ptr().cast())
}

/// The C ABI version; equals `OMPRPC_ABI_VERSION` of the header the caller compiled against.
/// Threads: any thread, any time.
#[no_mangle]
pub extern "C" fn omprpc_abi_version() -> u32 {
    guarded(0, || OMPRPC_ABI_VERSION)
}

/// The name of a status ("OK", "TIMEOUT", …), static; "UNKNOWN" for other values.
/// Ownership: a static string; never free it. Threads: any thread, any time.
#[no_mangle]
pub extern "C" fn omprpc_status_name(status: c_int) -> *const c_char {
    guarded(b"UNKNOWN\0".as_ptr().cast(), || status_name(status).as_ptr().cast())
}

fn status_name(status: c_int) -> &'static [u8] {
    match Status::ALL.iter().find(|s| **s as c_int == status) {
        Some(s) => match s {
            Status::Ok => b"OK\0",
            Status::InvalidArgument => b"INVALID_ARGUMENT\0",
            Status::InvalidJson => b"INVALID_JSON\0",
            Status::InvalidUtf8 => b"INVALID_UTF8\0",
            Status::Timeout => b"TIMEOUT\0",
            Status::CommandFailed => b"COMMAND_FAILED\0",
            Status::ProcessExited => b"PROCESS_EXITED\0",
            Status::Closed => b"CLOSED\0",
            Status::Concurrency => b"CONCURRENCY\0",
            Status::Protocol => b"PROTOCOL\0",
            Status::Io => b"IO\0",
            Status::NotFound => b"NOT_FOUND\0",
            Status::Cancelled => b"CANCELLED\0",
            Status::LimitExceeded => b"LIMIT_EXCEEDED\0",
            Status::Panic => b"PANIC\0",
        },
        None => b"UNKNOWN\0",
    }
}

#[cfg(test)]
mod tests;
