//! One version number, written once (Cargo.toml's `[package] version`): every other file that
//! carries it must agree. `make set-version V=x.y.z` rewrites them all (then `make header`).
//!
//! Checked here: the header's OMPRPC_VERSION_* macros (generated from Cargo.toml by
//! tests/header.rs), `omprpc_version()`, Cargo.lock, the Python package (pyproject.toml), the
//! Go package (`BindingVersion`), the Node package (package.json and package-lock.json). The
//! values the installed bindings report at run time (`omprpc.__version__`, Go `Version()`,
//! Node `version()`) are checked by `make install-test`.

extern crate omprpc;

use std::ffi::CStr;
use std::os::raw::c_char;
use std::path::PathBuf;

extern "C" {
    fn omprpc_version() -> *const c_char;
}

const VERSION: &str = env!("CARGO_PKG_VERSION");

fn read(rel: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
}

/// The quoted value of the first line starting with `prefix` (after leading whitespace).
fn quoted_after(text: &str, prefix: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let rest = l.trim_start().strip_prefix(prefix)?;
        let rest = rest.trim_start().strip_prefix('"')?;
        Some(rest[..rest.find('"')?].to_string())
    })
}

fn json(rel: &str) -> serde_json::Value {
    serde_json::from_str(&read(rel)).unwrap_or_else(|e| panic!("{rel} is not JSON: {e}"))
}

#[test]
fn every_copy_of_the_version_matches_cargo_toml() {
    let hint = "run `make set-version V=<Cargo.toml's version>`";
    let runtime = unsafe { CStr::from_ptr(omprpc_version()) }.to_str().expect("UTF-8").to_string();
    let header = read("include/omprpc.h");
    let cargo_lock = read("Cargo.lock");
    let lock_entry = cargo_lock
        .split("[[package]]")
        .find(|block| block.lines().any(|l| l.trim() == "name = \"omprpc\""))
        .and_then(|block| quoted_after(block, "version ="));
    let node = json("bindings/node/package.json");
    let node_lock = json("bindings/node/package-lock.json");

    let copies: Vec<(&str, Option<String>)> = vec![
        ("omprpc_version()", Some(runtime)),
        ("include/omprpc.h OMPRPC_VERSION_STRING", quoted_after(&header, "#define OMPRPC_VERSION_STRING")),
        ("Cargo.lock (omprpc)", lock_entry),
        ("bindings/python/pyproject.toml", quoted_after(&read("bindings/python/pyproject.toml"), "version =")),
        ("bindings/go/version.go BindingVersion", quoted_after(&read("bindings/go/version.go"), "const BindingVersion =")),
        ("bindings/node/package.json", node["version"].as_str().map(str::to_string)),
        ("bindings/node/package-lock.json", node_lock["version"].as_str().map(str::to_string)),
        ("bindings/node/package-lock.json packages[\"\"]", node_lock["packages"][""]["version"].as_str().map(str::to_string)),
    ];
    let wrong: Vec<String> = copies
        .iter()
        .filter(|(_, v)| v.as_deref() != Some(VERSION))
        .map(|(what, v)| format!("{what}: {}", v.as_deref().unwrap_or("<not found>")))
        .collect();
    assert!(wrong.is_empty(), "Cargo.toml says {VERSION}, but\n  {}\n{hint}", wrong.join("\n  "));

    // The numeric macros too (the header test checks them in detail; this names the fix).
    for (name, part) in [
        ("OMPRPC_VERSION_MAJOR", env!("CARGO_PKG_VERSION_MAJOR")),
        ("OMPRPC_VERSION_MINOR", env!("CARGO_PKG_VERSION_MINOR")),
        ("OMPRPC_VERSION_PATCH", env!("CARGO_PKG_VERSION_PATCH")),
    ] {
        let line = format!("#define {name} {part}");
        assert!(header.lines().any(|l| l.trim() == line), "include/omprpc.h lacks `{line}`: run `make header`");
    }
}

/// The parser above must find what it looks for, or a missing copy would pass as "<not found>"
/// only by luck of the comparison; this pins the formats it relies on.
#[test]
fn quoted_after_reads_the_formats_used() {
    assert_eq!(quoted_after("x\n  version = \"1.2.3\"\n", "version =").as_deref(), Some("1.2.3"));
    assert_eq!(quoted_after("const BindingVersion = \"0.1.0\"", "const BindingVersion =").as_deref(), Some("0.1.0"));
    assert_eq!(quoted_after("#define OMPRPC_VERSION_STRING \"9.8.7\"", "#define OMPRPC_VERSION_STRING").as_deref(), Some("9.8.7"));
    assert_eq!(quoted_after("version = 1", "version ="), None);
}
