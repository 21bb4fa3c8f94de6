//! Unit tests of the C glue that need no agent process: NULL handling, strings handed out and
//! freed, status names, the error JSON, and the exports that spawn nothing. They are the
//! suite `make miri` runs under Miri (docs/testing.md says what Miri cannot run and why).

use super::strings::{give, give_json};
use super::*;
use serde_json::Value;
use std::ffi::{CStr, CString};
use std::ptr::{null, null_mut};

fn c(s: &str) -> CString {
    CString::new(s).unwrap()
}

/// Takes ownership of a string the library returned, as a C caller would free it.
unsafe fn take(p: *mut c_char) -> String {
    assert!(!p.is_null());
    let s = CStr::from_ptr(p).to_str().unwrap().to_string();
    omprpc_string_free(p);
    s
}

fn json(s: &str) -> Value {
    serde_json::from_str(s).unwrap()
}

/// A failed call: its status, out_error an owned JSON object naming it, out untouched.
unsafe fn failure(status: Status, out: *mut c_char, err: *mut c_char) -> Value {
    assert!(out.is_null(), "out-parameter written on failure");
    let e = json(&take(err));
    assert_eq!(e["status"], status as i32);
    assert_eq!(e["code"], status.name());
    e
}

#[test]
fn version_abi_and_status_names() {
    unsafe {
        assert_eq!(CStr::from_ptr(omprpc_version()).to_str().unwrap(), env!("CARGO_PKG_VERSION"));
        assert_eq!(omprpc_abi_version(), OMPRPC_ABI_VERSION);
        for s in Status::ALL {
            assert_eq!(CStr::from_ptr(omprpc_status_name(s as c_int)).to_str().unwrap(), s.name());
        }
        for bad in [-1, 15, 1000, c_int::MIN, c_int::MAX] {
            assert_eq!(CStr::from_ptr(omprpc_status_name(bad)).to_bytes(), b"UNKNOWN");
        }
    }
}

#[test]
fn strings_out_round_trip_and_free() {
    unsafe {
        omprpc_string_free(null_mut());
        assert_eq!(take(give("plain".into())), "plain");
        // A NUL inside (stderr text can hold one) becomes U+FFFD instead of cutting the string.
        assert_eq!(take(give("a\0b".into())), "a\u{fffd}b");
        assert_eq!(take(give_json(b"{\"a\":[1]}".to_vec())), "{\"a\":[1]}");
        assert_eq!(take(give(String::new())), "");
    }
}

#[test]
fn build_argv_and_its_errors() {
    unsafe {
        let (mut out, mut err) = (null_mut(), null_mut());
        let opts = c(r#"{"model":"m","extra_args":["--x"]}"#);
        assert_eq!(omprpc_build_argv(opts.as_ptr(), &mut out, &mut err), Status::Ok);
        assert!(err.is_null());
        let argv = json(&take(out));
        assert!(argv[0].as_str().is_some_and(|a| !a.is_empty()), "{argv}");
        assert_eq!(argv.as_array().unwrap().last().unwrap(), "--x");
        assert!(argv.as_array().unwrap().iter().any(|a| a == "m"), "{argv}");

        let mut out = null_mut();
        assert_eq!(omprpc_build_argv(c("{").as_ptr(), &mut out, &mut err), Status::InvalidJson);
        failure(Status::InvalidJson, out, err);
        let mut err = null_mut();
        assert_eq!(omprpc_build_argv(c(r#"{"comand":1}"#).as_ptr(), &mut out, &mut err), Status::InvalidArgument);
        assert!(failure(Status::InvalidArgument, out, err)["message"].as_str().unwrap().contains("comand"));
        let mut err = null_mut();
        assert_eq!(omprpc_build_argv(null(), &mut out, &mut err), Status::InvalidArgument);
        failure(Status::InvalidArgument, out, err);
        // Invalid UTF-8 is its own status; a NULL out_error is allowed.
        let bad = CString::new(vec![b'"', 0xff, b'"']).unwrap();
        assert_eq!(omprpc_build_argv(bad.as_ptr(), &mut out, null_mut()), Status::InvalidUtf8);
        assert!(out.is_null());
        assert_eq!(omprpc_build_argv(opts.as_ptr(), null_mut(), null_mut()), Status::InvalidArgument);
    }
}

#[test]
fn summarize_and_the_summarizer() {
    unsafe {
        let events = c(r#"[{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"Hi"}},{"type":"agent_end","messages":[]}]"#);
        let (mut out, mut err) = (null_mut(), null_mut());
        assert_eq!(omprpc_summarize(events.as_ptr(), null(), &mut out, &mut err), Status::Ok);
        assert_eq!(json(&take(out))["text"], "Hi");
        let mut out = null_mut();
        assert_eq!(omprpc_summarize(c("{}").as_ptr(), null(), &mut out, &mut err), Status::InvalidJson);
        failure(Status::InvalidJson, out, err);
        let mut err = null_mut();
        assert_eq!(omprpc_summarize(events.as_ptr(), c(r#"{"model":1}"#).as_ptr(), &mut out, &mut err), Status::InvalidArgument);
        failure(Status::InvalidArgument, out, err);

        let mut sm = null_mut();
        assert_eq!(omprpc_summarizer_new(c(r#"{"model":"m"}"#).as_ptr(), &mut sm, null_mut()), Status::Ok);
        let ev = c(r#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"Yo"}}"#);
        assert_eq!(omprpc_summarizer_feed(sm, ev.as_ptr(), &mut out, null_mut()), Status::Ok);
        assert_eq!(json(&take(out))[0]["kind"], "text");
        let (mut out, mut err) = (null_mut(), null_mut());
        assert_eq!(omprpc_summarizer_feed(sm, c("[").as_ptr(), &mut out, &mut err), Status::InvalidJson);
        failure(Status::InvalidJson, out, err);
        assert_eq!(omprpc_summarizer_summary(sm, &mut out, null_mut()), Status::Ok);
        assert_eq!(json(&take(out))["text"], "Yo");
        omprpc_summarizer_free(sm);
        omprpc_summarizer_free(null_mut());
        let (mut out, mut err) = (null_mut(), null_mut());
        assert_eq!(omprpc_summarizer_summary(null(), &mut out, &mut err), Status::InvalidArgument);
        failure(Status::InvalidArgument, out, err);
    }
}

#[test]
fn prompt_from_content_and_env_allowlist() {
    unsafe {
        let blocks = c(r#"[{"type":"text","text":"a"},{"type":"file","text":"b","name":"b.txt"},{"type":"image","data_uri":"data:image/png;base64,iVBORw0KGgoAAAANSUhEUg=="}]"#);
        let (mut out, mut err) = (null_mut(), null_mut());
        assert_eq!(omprpc_prompt_from_content(blocks.as_ptr(), &mut out, &mut err), Status::Ok);
        let p = json(&take(out));
        assert!(p["message"].as_str().unwrap().starts_with("a\n\n"));
        assert_eq!(p["images"][0]["mimeType"], "image/png");
        let mut out = null_mut();
        assert_eq!(omprpc_prompt_from_content(c(r#"[{"type":"video"}]"#).as_ptr(), &mut out, &mut err), Status::InvalidArgument);
        failure(Status::InvalidArgument, out, err);

        let (mut out, mut err) = (null_mut(), null_mut());
        assert_eq!(omprpc_env_allowlisted(c(r#"{"passthrough":"X"}"#).as_ptr(), &mut out, &mut err), Status::InvalidArgument);
        failure(Status::InvalidArgument, out, err);
        assert_eq!(omprpc_env_allowlisted(null(), &mut out, null_mut()), Status::Ok);
        assert!(json(&take(out)).is_object());
    }
}

#[test]
fn client_exports_refuse_a_null_client() {
    unsafe {
        let s = c("x");
        let mut out = null_mut();
        let mut fd: c_int = -7;
        let mut n = 0usize;
        type Call<'a> = Box<dyn Fn(*mut *mut c_char) -> Status + 'a>;
        // Raw pointers, so every closure may write them (none should).
        let mut turn: *mut omprpc_turn = null_mut();
        let mut handle: *mut std::ffi::c_void = null_mut();
        let (o, f, t, h): (*mut *mut c_char, *mut c_int, *mut *mut omprpc_turn, *mut *mut std::ffi::c_void) = (&mut out, &mut fd, &mut turn, &mut handle);
        let calls: Vec<(&str, Call)> = vec![
            ("request", Box::new(|e| omprpc_client_request(null(), s.as_ptr(), null(), -2, o, e))),
            ("send_frame", Box::new(|e| omprpc_client_send_frame(null(), s.as_ptr(), e))),
            ("prompt", Box::new(|e| omprpc_client_prompt(null(), s.as_ptr(), null(), -2, o, e))),
            ("prompt_begin", Box::new(|e| omprpc_client_prompt_begin(null(), s.as_ptr(), null(), -2, o, e))),
            ("take_turn", Box::new(|e| omprpc_client_take_turn(null(), s.as_ptr(), t, e))),
            ("release_turn", Box::new(|e| omprpc_client_release_turn(null(), s.as_ptr(), e))),
            ("steer", Box::new(|e| omprpc_client_steer(null(), s.as_ptr(), null(), -2, e))),
            ("abort", Box::new(|e| omprpc_client_abort(null(), -2, e))),
            ("get_state", Box::new(|e| omprpc_client_get_state(null(), -2, o, e))),
            ("wait_for_idle", Box::new(|e| omprpc_client_wait_for_idle(null(), -2, e))),
            ("next_event", Box::new(|e| omprpc_client_next_event(null(), 0, o, e))),
            ("event_fd", Box::new(|e| omprpc_client_event_fd(null(), f, e))),
            ("event_handle", Box::new(|e| omprpc_client_event_handle(null(), h, e))),
            ("ui_cancel", Box::new(|e| omprpc_client_ui_cancel(null(), s.as_ptr(), false, e))),
            ("set_ui_policy", Box::new(|e| omprpc_client_set_ui_policy(null(), null(), e))),
            ("host_tool_result", Box::new(|e| omprpc_client_host_tool_result(null(), s.as_ptr(), s.as_ptr(), false, e))),
            ("policy_verdict", Box::new(|e| omprpc_client_policy_verdict(null(), s.as_ptr(), true, null(), e))),
            ("stderr", Box::new(|e| omprpc_client_stderr(null(), o, e))),
            ("info", Box::new(|e| omprpc_client_info(null(), o, e))),
            ("close", Box::new(|e| omprpc_client_close(null(), e))),
        ];
        for (name, call) in &calls {
            let mut err = null_mut();
            assert_eq!(call(&mut err), Status::InvalidArgument, "{name}");
            let e = json(&take(err));
            assert!(e["message"].as_str().unwrap().contains("client is NULL"), "{name}: {e}");
            assert_eq!(call(null_mut()), Status::InvalidArgument, "{name} with a NULL out_error");
            n += 1;
        }
        drop(calls);
        assert!(out.is_null() && turn.is_null(), "no out-parameter written");
        assert_eq!(fd, -7);
        assert!(handle.is_null(), "no event handle written");
        assert_eq!(n, 20);
        omprpc_client_free(null_mut());
    }
}

#[test]
fn timeouts_convert_or_are_refused() {
    assert!(deadline(OMPRPC_TIMEOUT_INFINITE, None).unwrap().is_none());
    let d = Some(Instant::now());
    assert_eq!(deadline(OMPRPC_TIMEOUT_DEFAULT, d).unwrap(), d);
    assert!(deadline(0, None).unwrap().is_some());
    assert_eq!(deadline(-3, None).unwrap_err().status, Status::InvalidArgument);
}

#[test]
fn a_panic_becomes_a_status_and_an_error() {
    let mut err = null_mut();
    let st = boundary(null(), &mut err, || panic!("boom"));
    assert_eq!(st, Status::Panic);
    let e = unsafe { json(&take(err)) };
    assert!(e["message"].as_str().unwrap().contains("boom"));
    assert_eq!(guarded(7, || panic!("x")), 7);
}
