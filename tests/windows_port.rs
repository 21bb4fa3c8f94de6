//! The Windows port (issue 25, docs/windows.md) is partial: what is not ported yet fails with an
//! error that says so — never a crash, a hang or a client that pretends to run. Built only for
//! Windows, run under Wine by `make windows-test`.
#![cfg(windows)]

use omprpc::{Client, Status};

#[test]
fn starting_an_agent_on_windows_says_the_port_is_not_done() {
    let err = match Client::start(r#"{"command": ["C:\\agents\\pi.exe", "--mode", "rpc"]}"#) {
        Ok(_) => panic!("a client started on Windows, which is not ported yet"),
        Err(e) => e,
    };
    assert_eq!(err.status, Status::Io, "{err}");
    assert!(err.message.contains("on Windows") && err.message.contains("not ported yet"), "{err}");
}
