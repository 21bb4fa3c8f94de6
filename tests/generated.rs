//! The files generated from src/protocol/table.json must be exactly what the generators here
//! produce, as the header must be what cbindgen produces (tests/header.rs):
//!
//! * `cargo test --test generated` fails with "… is stale: run make generate" when a checked-in
//!   file differs from a fresh generation;
//! * `OMPRPC_UPDATE_GENERATED=1 cargo test --test generated` (`make generate`) rewrites them.
//!
//! Generated: `bindings/go/protocol_gen.go` (typed commands, events and UI requests);
//! `bindings/python/omprpc/_protocol_gen.py` (TypedDicts, the generated commands) and
//! `bindings/python/omprpc/_payloads_gen.py` (the named types: messages, events' payloads);
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
        let line = current.lines().zip(fresh.lines()).position(|(a, b)| a != b).unwrap_or_else(|| current.lines().count().min(fresh.lines().count())) + 1;
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
    check("bindings/python/omprpc/_payloads_gen.py", &gen_py::generate_payloads(&table()));
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
        assert_eq!(h.opaque, ["omprpc_client", "omprpc_event_batch", "omprpc_summarizer", "omprpc_turn"]);
        assert_eq!(h.statuses.first(), Some(&("OK".to_string(), 0)));
        let enums: Vec<(&str, Vec<&str>)> = h.enums.iter().map(|e| (e.name.as_str(), e.items.iter().map(|(n, _)| n.as_str()).collect())).collect();
        assert_eq!(enums, [("omprpc_turn_outcome", vec!["AGENT_END", "PROMPT_RESULT", "NOT_INVOKED", "AGENT_SETTLED", "ABORTED"])]);
        // Every struct with a body, each member (type, name) in header order.
        let structs: Vec<&str> = h.structs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(structs, ["omprpc_str", "omprpc_event_view", "omprpc_turn_info"]);
        let fields = |name: &str| -> Vec<(String, String)> {
            h.structs.iter().find(|s| s.name == name).unwrap().fields.iter().map(|f| (f.ty.clone(), f.name.clone())).collect()
        };
        let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> { v.iter().map(|(t, n)| (t.to_string(), n.to_string())).collect() };
        assert_eq!(fields("omprpc_str"), pairs(&[("const char *", "data"), ("size_t", "len")]));
        assert_eq!(fields("omprpc_event_view"), pairs(&[("omprpc_str", "event_type"), ("omprpc_str", "json")]));
        let info = fields("omprpc_turn_info");
        assert_eq!(info[..3], pairs(&[("omprpc_turn_outcome", "outcome"), ("bool", "agent_invoked"), ("size_t", "event_count")]));
        assert_eq!(info.len(), 17);
        assert!(info[3..13].iter().all(|(t, _)| t == "omprpc_str"));
        assert_eq!(info[12].1, "turn_json");
        assert_eq!(
            info[13..],
            pairs(&[("uint32_t", "attempts"), ("bool", "settled"), ("omprpc_str", "failed_attempts_json"), ("omprpc_str", "compactions_json")])
        );
        // The new parameter kinds, as normalised.
        let params = |f: &str| -> Vec<String> { h.functions.iter().find(|x| x.name == f).unwrap().params.iter().map(|p| p.ty.clone()).collect() };
        assert_eq!(params("omprpc_turn_events"), ["const omprpc_turn *", "const omprpc_event_view **", "size_t *", "char **"]);
        assert_eq!(params("omprpc_turn_get_info"), ["const omprpc_turn *", "omprpc_turn_info *", "char **"]);
        assert_eq!(params("omprpc_client_next_event_batch")[3], "omprpc_event_batch **");
    }

    /// What the parser does not read is a panic, never skipped.
    #[test]
    fn parser_fails_loudly() {
        let base = "typedef enum { OMPRPC_STATUS_OK = 0, } omprpc_status;\nvoid omprpc_f(void);\n";
        let fails = |extra: &str| std::panic::catch_unwind(|| gen_ffi::parse(&format!("{base}{extra}"))).is_err();
        assert!(!fails(""));
        assert!(!fails("typedef struct { const char *data; size_t len; } omprpc_str;\n"));
        assert!(fails("typedef struct { int a[4]; } omprpc_x;\n"), "an array member");
        assert!(fails("typedef struct { void (*cb)(int); } omprpc_x;\n"), "a function-pointer member");
        assert!(fails("typedef struct { unsigned a : 3; } omprpc_x;\n"), "a bit-field");
        assert!(fails("typedef struct { omprpc_later x; } omprpc_x;\n"), "a member of an undeclared type");
        assert!(fails("typedef struct omprpc_x { int a; } omprpc_x;\n"), "a tagged struct body");
        assert!(fails("typedef enum { OMPRPC_X_A, } omprpc_x;\n"), "an item without a value");
        assert!(fails("typedef enum { OTHER_A = 0, } omprpc_x;\n"), "an item without the enum's prefix");
        assert!(fails("typedef union { int a; } omprpc_x;\n"), "a union");
        assert!(fails("}\n"), "a stray brace");
        assert!(fails("int omprpc_g(void)\n"), "text after the last `;`");
    }

    /// A type no mapping knows stops the generation, in each binding.
    #[test]
    fn unknown_types_fail_loudly() {
        use gen_ffi::Pos;
        let h = gen_ffi::parse("typedef enum { OMPRPC_STATUS_OK = 0, } omprpc_status;\ntypedef struct { size_t len; } omprpc_s;\nvoid omprpc_f(void);\n");
        let fails = |pos: Pos, ty: &str| {
            let (h1, h2, t1, t2) = (h.clone(), h.clone(), ty.to_string(), ty.to_string());
            std::panic::catch_unwind(move || gen_ffi::py_type(&h1, pos, &t1, "test")).is_err()
                && std::panic::catch_unwind(move || gen_ffi::node_type(&h2, pos, &t2, "test")).is_err()
        };
        assert!(!fails(Pos::Param, "const omprpc_s **") && !fails(Pos::Member, "omprpc_s"));
        assert!(fails(Pos::Return, "double"));
        assert!(fails(Pos::Param, "float *"));
        assert!(fails(Pos::Return, "omprpc_s"), "a struct returned by value");
        assert!(fails(Pos::Param, "omprpc_s **"), "a struct array out-parameter without const");
        assert!(fails(Pos::Member, "char **"), "an out-parameter kind as a member");
    }
}
