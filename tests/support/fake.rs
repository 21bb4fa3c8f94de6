//! Helpers the fake-agent suites share (tests/client.rs, tests/observe.rs).

use std::time::{Duration, Instant};

use omprpc::client::deadline_after;
use omprpc::Client;
use serde_json::{json, Value};

pub const FAKE: &str = env!("CARGO_BIN_EXE_omprpc-fake-agent");

pub fn secs(n: u64) -> Option<Instant> {
    deadline_after(Some(Duration::from_secs(n)))
}

/// Starts the fake agent with generous timeouts plus `extra` on top.
pub fn start_with(extra: Value) -> Client {
    let mut opts = json!({"command": [FAKE], "startup_timeout_ms": 10000, "request_timeout_ms": 10000, "stop_grace_ms": 500});
    for (k, v) in extra.as_object().unwrap() {
        opts[k] = v.clone();
    }
    Client::start(&opts.to_string()).unwrap_or_else(|e| panic!("start failed: {e}"))
}

/// Whether this Windows program runs under Wine (its ntdll exports `wine_get_version`), for
/// the few cases Wine cannot show (docs/windows.md says which, and why).
#[cfg(windows)]
#[allow(dead_code)] // not every suite that includes this file has such a case
pub fn under_wine() -> bool {
    use std::ffi::c_void;
    #[link(name = "kernel32")]
    extern "system" {
        fn GetModuleHandleA(name: *const u8) -> *mut c_void;
        fn GetProcAddress(module: *mut c_void, name: *const u8) -> *mut c_void;
    }
    // SAFETY: NUL-terminated names; ntdll is loaded in every process and never unloaded.
    unsafe {
        let ntdll = GetModuleHandleA(b"ntdll.dll\0".as_ptr());
        !ntdll.is_null() && !GetProcAddress(ntdll, b"wine_get_version\0".as_ptr()).is_null()
    }
}
