//! The JSON the C exports accept, through the exports themselves where they spawn nothing
//! (omprpc_build_argv, omprpc_summarize, the summarizer, omprpc_env_allowlisted,
//! omprpc_prompt_from_content, omprpc_sanitize_schema, omprpc_skills_flags, client exports
//! given a NULL client) and otherwise through the
//! Rust functions the client exports call (UI policy, host tool / URI scheme lists, tool
//! results, prompt options, request params).
//!
//! Every export call must keep the C conventions: a known status, never PANIC; on OK the
//! out-parameter holds valid JSON and out_error is untouched; on failure the out-parameter
//! is untouched and out_error is a JSON object whose code/status match the returned status.
//!
//! Input: [selector, flags, UTF-8-ish JSON text...].
#![no_main]

use std::ffi::{c_char, CStr, CString};
use std::ptr::null_mut;

use libfuzzer_sys::fuzz_target;
use omprpc::client::host::{normalize_tool_result, HostRegistry};
use omprpc::client::options::{parse_object, Options, UiPolicy};
use omprpc::client::parse_params;
use omprpc::ffi::*;
use omprpc::fuzzing::{all_statuses, prompt_params, request_line};
use omprpc::Status;
use serde_json::Value;

fn take(p: *mut c_char) -> String {
    assert!(!p.is_null());
    // SAFETY: a string this library returned, released exactly once here.
    let s = unsafe { CStr::from_ptr(p) }.to_str().expect("strings out are UTF-8").to_string();
    unsafe { omprpc_string_free(p) };
    s
}

/// Checks one export call's outcome against the C conventions; returns the JSON it produced.
fn outcome(status: Status, out: *mut c_char, err: *mut c_char) -> Option<Value> {
    assert!(all_statuses().contains(&status));
    assert_ne!(status, Status::Panic, "an export panicked: {}", if err.is_null() { String::new() } else { take(err) });
    if status == Status::Ok {
        assert!(err.is_null(), "out_error written on success");
        let v: Value = serde_json::from_str(&take(out)).expect("an export returned invalid JSON");
        Some(v)
    } else {
        assert!(out.is_null(), "out-parameter written on failure");
        let e: Value = serde_json::from_str(&take(err)).expect("error JSON");
        assert_eq!(e["status"].as_i64(), Some(status as i64));
        assert_eq!(e["code"].as_str(), Some(status.name()));
        assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()), "an error without a message");
        None
    }
}

/// The same check for a Rust-level call.
fn checked<T>(r: omprpc::error::Result<T>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) => {
            assert_ne!(e.status, Status::Panic);
            assert!(!e.message.is_empty());
            let v: Value = serde_json::from_str(&e.to_json()).unwrap();
            assert_eq!(v["status"].as_i64(), Some(e.status as i64));
            None
        }
    }
}

fuzz_target!(|input: &[u8]| {
    if input.len() < 2 {
        return;
    }
    let (sel, flags, body) = (input[0], input[1], &input[2..]);
    // A C string ends at the first NUL; invalid UTF-8 must come back as INVALID_UTF8.
    let cut = body.iter().position(|&b| b == 0).unwrap_or(body.len());
    let c = CString::new(&body[..cut]).unwrap();
    let text = std::str::from_utf8(&body[..cut]).ok();
    let (mut out, mut err): (*mut c_char, *mut c_char) = (null_mut(), null_mut());
    let opts = if flags & 1 == 0 { None } else { Some(CString::new(r#"{"model":"m"}"#).unwrap()) };
    let opts_ptr = opts.as_ref().map_or(std::ptr::null(), |o| o.as_ptr());
    unsafe {
        match sel % 14 {
            0 => {
                let st = omprpc_build_argv(c.as_ptr(), &mut out, &mut err);
                if let Some(v) = outcome(st, out, err) {
                    let argv = v.as_array().expect("argv is an array");
                    assert!(!argv.is_empty() && argv.iter().all(Value::is_string));
                    // The same options through the Rust path agree.
                    let map = parse_object(text.unwrap()).unwrap();
                    let o = Options::from_map(&map).expect("build_argv accepted these options");
                    assert_eq!(Value::from(o.launch_spec().argv), v);
                }
                if text.is_none() {
                    assert_eq!(st, Status::InvalidUtf8);
                }
            }
            1 => {
                let st = omprpc_summarize(c.as_ptr(), opts_ptr, &mut out, &mut err);
                if let Some(v) = outcome(st, out, err) {
                    assert!(v.is_object());
                }
            }
            2 => {
                let mut sm = null_mut();
                let st = omprpc_summarizer_new(opts_ptr, &mut sm, &mut err);
                assert_eq!(st, Status::Ok);
                for ev in body[..cut].split(|&b| b == b'\n') {
                    let ev = CString::new(ev).unwrap();
                    let (mut o, mut e) = (null_mut(), null_mut());
                    let st = omprpc_summarizer_feed(sm, ev.as_ptr(), &mut o, &mut e);
                    if let Some(v) = outcome(st, o, e) {
                        assert!(v.is_array());
                    }
                }
                let (mut o, mut e) = (null_mut(), null_mut());
                let st = omprpc_summarizer_summary(sm, &mut o, &mut e);
                assert!(outcome(st, o, e).is_some_and(|v| v.is_object()));
                omprpc_summarizer_free(sm);
            }
            3 => {
                let p = if flags & 2 == 0 { c.as_ptr() } else { std::ptr::null() };
                let st = omprpc_env_allowlisted(p, &mut out, &mut err);
                if let Some(v) = outcome(st, out, err) {
                    assert!(v.as_object().is_some_and(|m| m.values().all(Value::is_string)));
                }
            }
            4 => {
                // Blocks naming a file path would read the machine's files: left to the tests.
                if body.windows(4).any(|w| w.eq_ignore_ascii_case(b"path")) {
                    return;
                }
                let st = omprpc_prompt_from_content(c.as_ptr(), &mut out, &mut err);
                if let Some(v) = outcome(st, out, err) {
                    assert!(v["message"].is_string() && v["images"].is_array());
                }
            }
            5 => {
                // Client exports refuse a NULL client before looking at their JSON.
                let st = omprpc_client_request(std::ptr::null(), c.as_ptr(), c.as_ptr(), -2, &mut out, &mut err);
                assert_eq!(st, Status::InvalidArgument);
                outcome(st, out, err);
                let st = omprpc_client_set_ui_policy(std::ptr::null(), c.as_ptr(), null_mut());
                assert_eq!(st, Status::InvalidArgument);
            }
            6 => {
                if let Some(Ok(v)) = text.map(serde_json::from_str::<Value>) {
                    checked(UiPolicy::parse(&v));
                }
            }
            7 => {
                if let Some(Ok(v)) = text.map(serde_json::from_str::<Value>) {
                    if let Some(names) = checked(HostRegistry::check_tools(&v)) {
                        assert_eq!(names.len(), v.as_array().unwrap().len());
                        assert!(names.iter().all(|n| !n.trim().is_empty()));
                    }
                    if let Some(schemes) = checked(HostRegistry::check_schemes(&v)) {
                        for (s, _) in schemes {
                            assert!(s.starts_with(|c: char| c.is_ascii_lowercase()), "scheme {s:?}");
                        }
                    }
                }
            }
            8 => {
                if let Some(Ok(v)) = text.map(serde_json::from_str::<Value>) {
                    if let Some(r) = checked(normalize_tool_result(v)) {
                        assert!(r["content"].is_array());
                    }
                }
            }
            9 => {
                if let Some(t) = text {
                    if body.windows(4).any(|w| w.eq_ignore_ascii_case(b"path")) {
                        return;
                    }
                    let options = checked(parse_params(Some(t))).flatten();
                    let message = if flags & 2 == 0 { "" } else { "hello" };
                    if let Some((p, _)) = checked(prompt_params(message, options)) {
                        assert!(p["message"].is_string());
                        if let Some(line) = checked(request_line("req_1", "prompt", Some(&p))) {
                            let v: Value = serde_json::from_slice(&line).expect("a request line is JSON");
                            assert_eq!(v["id"], "req_1");
                            assert_eq!(v["type"], "prompt");
                            assert_eq!(*line.last().unwrap(), b'\n');
                        }
                    }
                }
            }
            10 => {
                if let Some(t) = text {
                    if let Some(params) = checked(parse_params(Some(t))) {
                        if let Some(line) = checked(request_line("req_7", "get_state", params.as_ref())) {
                            let v: Value = serde_json::from_slice(&line).expect("a request line is JSON");
                            assert_eq!(v["id"], "req_7");
                            assert_eq!(v["type"], "get_state");
                            assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1, "one line");
                        }
                    }
                }
            }
            11 => {
                // A hostile schema (deep, recursive, doubling $refs) ends in a status, never
                // in a crash or an unbounded output.
                let bound = CString::new(r#"{"max_nodes":5000}"#).unwrap();
                let o = if flags & 1 == 0 { std::ptr::null() } else { bound.as_ptr() };
                let st = omprpc_sanitize_schema(c.as_ptr(), o, &mut out, &mut err);
                if let Some(v) = outcome(st, out, err) {
                    assert!(v["schema"].is_object() && v["dropped"].is_array());
                }
            }
            12 => {
                let st = omprpc_skills_flags(c.as_ptr(), &mut out, &mut err);
                if let Some(v) = outcome(st, out, err) {
                    assert!(v["flags"].as_array().is_some_and(|f| f.iter().all(Value::is_string)));
                    assert!(v["needs_read"].is_boolean());
                }
            }
            _ => {
                let st = omprpc_status_name(i32::from(flags as i8));
                assert!(!st.is_null());
                let st = omprpc_provider_config(std::ptr::null(), &mut out, &mut err);
                assert_eq!(st, Status::InvalidArgument);
                outcome(st, out, err);
            }
        }
    }
});
