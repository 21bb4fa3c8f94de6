//! The files generated from src/protocol/table.json must be exactly what the generators here
//! produce, as the header must be what cbindgen produces (tests/header.rs):
//!
//! * `cargo test --test generated` fails with "… is stale: run make generate" when a checked-in
//!   file differs from a fresh generation;
//! * `OMPRPC_UPDATE_GENERATED=1 cargo test --test generated` (`make generate`) rewrites them.
//!
//! Generated: `bindings/go/protocol_gen.go` (typed commands, events and UI requests);
//! `bindings/python/omprpc/_protocol_gen.py` (TypedDicts, the generated commands);
//! `bindings/node/lib/protocol.gen.cjs` (the typed command methods, the event types and UI
//! methods) and `bindings/node/protocol.gen.d.ts` (their TypeScript declarations).
//! Go's output is formatted by `gofmt` (`OMPRPC_GOFMT` names it, else `gofmt` on PATH): its
//! alignment is Go's to decide, and go-tests checks it.

#[path = "support/gen_go.rs"]
mod gen_go;
#[path = "support/table.rs"]
mod table;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn gofmt(src: &str) -> String {
    let program = std::env::var("OMPRPC_GOFMT").unwrap_or_else(|_| "gofmt".into());
    let mut child = Command::new(&program)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("running {program} (Go's formatter, needed to generate Go; set OMPRPC_GOFMT): {e}"));
    child.stdin.take().unwrap().write_all(src.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "gofmt rejected the generated Go:\n{}\n---\n{src}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn check(rel: &str, fresh: &str) {
    let path: PathBuf = root().join(rel);
    if std::env::var("OMPRPC_UPDATE_GENERATED").is_ok_and(|v| v == "1") {
        std::fs::write(&path, fresh).unwrap_or_else(|e| panic!("writing {rel}: {e}"));
        return;
    }
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    if current != fresh {
        let line = current.lines().zip(fresh.lines()).position(|(a, b)| a != b).map_or_else(|| current.lines().count().min(fresh.lines().count()), |i| i) + 1;
        panic!("{rel} is stale: run make generate (first difference at line {line})");
    }
}

fn table() -> table::Table {
    table::load(Path::new(env!("CARGO_MANIFEST_DIR")))
}

#[test]
fn go_protocol_is_up_to_date() {
    check("bindings/go/protocol_gen.go", &gofmt(&gen_go::generate(&table())));
}

// --- Python (bindings/python/omprpc/_protocol_gen.py) -----------------------------------------

#[path = "support/gen_py.rs"]
mod gen_py;

/// TypedDicts, the generated commands' mixin and HAND_WRITTEN; emitted formatted, no
/// formatter run.
#[test]
fn python_protocol_is_up_to_date() {
    check("bindings/python/omprpc/_protocol_gen.py", &gen_py::generate(&table()));
}

// --- Node (bindings/node/lib/protocol.gen.cjs, bindings/node/protocol.gen.d.ts) --------------

#[path = "support/gen_node.rs"]
mod gen_node;

#[test]
fn node_protocol_is_up_to_date() {
    let out = gen_node::generate(&table());
    check("bindings/node/lib/protocol.gen.cjs", &out.js);
    check("bindings/node/protocol.gen.d.ts", &out.dts);
}

// --- FFI declarations (issue 13) --------------------------------------------------------------
// Generated from include/omprpc.h (tests/support/gen_ffi.rs): Python's ctypes signature table
// and status constants (`bindings/python/omprpc/_ffi_gen.py`), Node's koffi declarations and
// Status enum (`bindings/node/lib/native.gen.cjs`) and the `Status` block of its
// `index.d.cts`, Go's Status constants (`bindings/go/status_gen.go`). A header that gains,
// loses or changes a function or a status makes these stale.

#[path = "support/gen_ffi.rs"]
mod gen_ffi;

mod ffi_declarations_are_up_to_date {
    use super::{check, gen_ffi, gofmt, root};

    fn header() -> gen_ffi::Header {
        let text = std::fs::read_to_string(root().join("include/omprpc.h")).expect("reading include/omprpc.h");
        gen_ffi::parse(&text)
    }

    #[test]
    fn python() {
        check("bindings/python/omprpc/_ffi_gen.py", &gen_ffi::python(&header()));
    }

    #[test]
    fn node() {
        check("bindings/node/lib/native.gen.cjs", &gen_ffi::node(&header()));
    }

    #[test]
    fn typescript_status() {
        let rel = "bindings/node/index.d.cts";
        let text = std::fs::read_to_string(root().join(rel)).expect("reading index.d.cts");
        check(rel, &gen_ffi::with_ts_status_block(&text, &header()));
    }

    #[test]
    fn go() {
        check("bindings/go/status_gen.go", &gofmt(&gen_ffi::go(&header())));
    }

    /// The parser reads every prototype of the header (a prototype it skipped would be missing
    /// from every binding without a stale file to say so).
    #[test]
    fn parser_reads_every_prototype() {
        let text = std::fs::read_to_string(root().join("include/omprpc.h")).unwrap();
        let h = gen_ffi::parse(&text);
        // A prototype opens at column 0 (comments, `#` lines and continuations do not).
        let opened = text
            .lines()
            .filter(|l| !l.starts_with(|c: char| c.is_whitespace() || c == '/' || c == '#') && l.contains("omprpc_") && l.contains('('))
            .count();
        assert_eq!(h.functions.len(), opened, "gen_ffi::parse read {} functions, the header opens {opened} prototypes", h.functions.len());
        assert_eq!(h.opaque, ["omprpc_client", "omprpc_summarizer"]);
        assert_eq!(h.statuses.first(), Some(&("OK".to_string(), 0)));
    }
}
