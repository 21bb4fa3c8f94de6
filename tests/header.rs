//! The checked-in C header `include/omprpc.h` must be exactly what the pinned cbindgen
//! (the `=0.29.4` dev-dependency) generates from the crate sources and `cbindgen.toml`.
//!
//! * `cargo test --test header` fails with "include/omprpc.h is stale: run make header"
//!   when the file differs from a fresh generation.
//! * `OMPRPC_UPDATE_HEADER=1 cargo test --test header` (what `make header` runs) rewrites the
//!   file instead.
//!
//! The other tests pin the parts of the header the C API contract (docs/c-api.md) fixes:
//! the ABI and version macros agree with `Cargo.toml` and with the library's own answers,
//! status codes are never renumbered, every exported name carries the `omprpc_` prefix, and
//! every function's doc comment states ownership, thread-safety and the statuses it returns.
//! The OMPRPC_VERSION_* macros are generated here from Cargo.toml (see `version_macros`).

// Integration tests only link the library if they name it; the `extern "C"` declarations
// below resolve against its `#[no_mangle]` exports.
extern crate omprpc;

use std::collections::BTreeSet;
use std::ffi::CStr;
use std::os::raw::c_char;
use std::path::{Path, PathBuf};

extern "C" {
    fn omprpc_version() -> *const c_char;
    fn omprpc_abi_version() -> u32;
    // Declared with an integer parameter on purpose: the contract allows any value
    // ("UNKNOWN" for values outside the enum), and `omprpc_status` is an int-sized enum.
    fn omprpc_status_name(status: i32) -> *const c_char;
}

/// The status table of docs/c-api.md: values are never renumbered.
const STATUSES: &[(&str, i64)] = &[
    ("OK", 0),
    ("INVALID_ARGUMENT", 1),
    ("INVALID_JSON", 2),
    ("INVALID_UTF8", 3),
    ("TIMEOUT", 4),
    ("COMMAND_FAILED", 5),
    ("PROCESS_EXITED", 6),
    ("CLOSED", 7),
    ("CONCURRENCY", 8),
    ("PROTOCOL", 9),
    ("IO", 10),
    ("NOT_FOUND", 11),
    ("CANCELLED", 12),
    ("LIMIT_EXCEEDED", 13),
    ("PANIC", 14),
];

const STALE: &str = "include/omprpc.h is stale: run make header";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn header_path() -> PathBuf {
    root().join("include").join("omprpc.h")
}

/// Runs cbindgen exactly as the header was produced: the crate at the manifest directory,
/// configured by `cbindgen.toml`.
fn generate() -> String {
    let root = root();
    let mut config = cbindgen::Config::from_file(root.join("cbindgen.toml"))
        .unwrap_or_else(|e| panic!("cannot read cbindgen.toml: {e}"));
    // The version macros come from Cargo.toml (the one place the version is written), not
    // from a copy in cbindgen.toml or the sources; cbindgen cannot export string constants.
    config.after_includes = Some(version_macros());
    let bindings = cbindgen::Builder::new()
        .with_crate(&root)
        .with_config(config)
        .generate()
        .unwrap_or_else(|e| panic!("cbindgen could not generate the header: {e}"));
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).expect("cbindgen produced UTF-8")
}

/// `OMPRPC_VERSION_MAJOR/MINOR/PATCH/STRING`, placed right after the `#include`s.
fn version_macros() -> String {
    format!(
        "\n/**\n * The omprpc version this header belongs to (Cargo.toml's `version`; `omprpc_version()`\n \
         * returns the library's). Compare OMPRPC_ABI_VERSION, not these, for compatibility.\n */\n\
         #define OMPRPC_VERSION_MAJOR {}\n#define OMPRPC_VERSION_MINOR {}\n#define OMPRPC_VERSION_PATCH {}\n\
         #define OMPRPC_VERSION_STRING \"{}\"",
        env!("CARGO_PKG_VERSION_MAJOR"),
        env!("CARGO_PKG_VERSION_MINOR"),
        env!("CARGO_PKG_VERSION_PATCH"),
        env!("CARGO_PKG_VERSION"),
    )
}

fn read_header() -> String {
    std::fs::read_to_string(header_path())
        .unwrap_or_else(|e| panic!("{STALE} (cannot read {}: {e})", header_path().display()))
}

/// Writes through a temporary file so a concurrent reader never sees half a header.
fn write_atomically(path: &Path, text: &str) {
    let dir = path.parent().expect("header has a parent directory");
    std::fs::create_dir_all(dir).expect("create include/");
    let tmp = dir.join(".omprpc.h.tmp");
    std::fs::write(&tmp, text).expect("write the temporary header");
    std::fs::rename(&tmp, path).expect("move the header into place");
}

/// A short, readable description of the first difference.
fn first_difference(current: &str, generated: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (current.lines().collect(), generated.lines().collect());
    for i in 0..a.len().max(b.len()) {
        let (x, y) = (a.get(i).copied(), b.get(i).copied());
        if x != y {
            return format!(
                "first difference at line {}:\n  checked in: {}\n  generated:  {}",
                i + 1,
                x.map_or("<end of file>".to_string(), |s| format!("{s:?}")),
                y.map_or("<end of file>".to_string(), |s| format!("{s:?}")),
            );
        }
    }
    "the files differ only in their final newline".to_string()
}

#[test]
fn header_is_up_to_date() {
    let generated = generate();
    let path = header_path();
    if std::env::var("OMPRPC_UPDATE_HEADER").as_deref() == Ok("1") {
        if std::fs::read_to_string(&path).ok().as_deref() != Some(generated.as_str()) {
            write_atomically(&path, &generated);
            eprintln!("wrote {}", path.display());
        }
        return;
    }
    let current = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) => panic!("{STALE} (cannot read {}: {e})", path.display()),
    };
    if current != generated {
        panic!("{STALE}\n{}", first_difference(&current, &generated));
    }
}

/// `#define NAME VALUE` lines of the header (value with surrounding whitespace trimmed).
fn defines(header: &str) -> Vec<(String, String)> {
    header
        .lines()
        .filter_map(|line| {
            let rest = line.trim_start().strip_prefix("#define ")?;
            let mut parts = rest.trim().splitn(2, char::is_whitespace);
            let name = parts.next()?.to_string();
            let value = parts.next().unwrap_or("").trim().to_string();
            Some((name, value))
        })
        .collect()
}

fn define(header: &str, name: &str) -> Option<String> {
    defines(header).into_iter().find(|(n, _)| n == name).map(|(_, v)| v)
}

/// Parses a C integer literal as cbindgen writes it: `1`, `1u`, `-2`, `(1 << 20)` is not
/// accepted (the ABI macros are plain literals).
fn c_int(value: &str) -> Option<i64> {
    let v = value.trim().trim_start_matches('(').trim_end_matches(')').trim();
    let v = v.trim_end_matches(['u', 'U', 'l', 'L']);
    v.parse().ok()
}

fn c_str(p: *const c_char) -> String {
    assert!(!p.is_null(), "the library returned a NULL string");
    unsafe { CStr::from_ptr(p) }.to_str().expect("UTF-8").to_string()
}

#[test]
fn abi_version_macro_matches_library() {
    let header = read_header();
    let value = define(&header, "OMPRPC_ABI_VERSION")
        .unwrap_or_else(|| panic!("{STALE}: no `#define OMPRPC_ABI_VERSION` in the header"));
    let from_header = c_int(&value)
        .unwrap_or_else(|| panic!("OMPRPC_ABI_VERSION is not an integer literal: {value:?}"));
    let from_library = unsafe { omprpc_abi_version() };
    assert!(from_library >= 1, "omprpc_abi_version() must start at 1, got {from_library}");
    assert_eq!(
        from_header,
        i64::from(from_library),
        "OMPRPC_ABI_VERSION in include/omprpc.h disagrees with omprpc_abi_version()"
    );
}

#[test]
fn version_matches_cargo_toml() {
    let cargo_version = env!("CARGO_PKG_VERSION");
    let runtime = c_str(unsafe { omprpc_version() });
    assert!(
        runtime.contains(cargo_version),
        "omprpc_version() = {runtime:?} does not mention the crate version {cargo_version}"
    );
    // The same static string every time (never freed, never rebuilt).
    assert_eq!(unsafe { omprpc_version() }, unsafe { omprpc_version() });

    // The version macros must be there and match Cargo.toml.
    let header = read_header();
    let v = define(&header, "OMPRPC_VERSION_STRING")
        .unwrap_or_else(|| panic!("{STALE}: no `#define OMPRPC_VERSION_STRING` in the header"));
    assert_eq!(v, format!("\"{cargo_version}\""), "OMPRPC_VERSION_STRING in the header != Cargo.toml version");
    assert_eq!(runtime, cargo_version, "omprpc_version() != Cargo.toml version");
    for (name, expected) in [
        ("OMPRPC_VERSION_MAJOR", env!("CARGO_PKG_VERSION_MAJOR")),
        ("OMPRPC_VERSION_MINOR", env!("CARGO_PKG_VERSION_MINOR")),
        ("OMPRPC_VERSION_PATCH", env!("CARGO_PKG_VERSION_PATCH")),
    ] {
        let v = define(&header, name).unwrap_or_else(|| panic!("{STALE}: no `#define {name}` in the header"));
        assert_eq!(c_int(&v), expected.parse::<i64>().ok(), "{name} in the header ({v}) != Cargo.toml ({expected})");
    }
}

#[test]
fn timeout_macros_match_contract() {
    let header = read_header();
    for (name, expected) in [("OMPRPC_TIMEOUT_INFINITE", -1), ("OMPRPC_TIMEOUT_DEFAULT", -2)] {
        let v = define(&header, name).unwrap_or_else(|| panic!("no `#define {name}` in the header"));
        assert_eq!(c_int(&v), Some(expected), "{name} must be {expected}, header says {v}");
    }
}

/// `OMPRPC_STATUS_<NAME> = <value>` inside the header's enum body.
fn enum_constants(header: &str) -> Vec<(String, i64)> {
    header
        .lines()
        .filter_map(|line| {
            let line = line.trim().trim_end_matches(',');
            let (name, value) = line.split_once('=')?;
            let name = name.trim();
            if !name.starts_with("OMPRPC_STATUS_") {
                return None;
            }
            Some((name.to_string(), c_int(value)?))
        })
        .collect()
}

#[test]
fn status_codes_are_never_renumbered() {
    let header = read_header();
    assert!(
        header.contains("omprpc_status;") || header.contains("} omprpc_status"),
        "the header does not define the type omprpc_status"
    );
    let constants = enum_constants(&header);
    for (name, value) in STATUSES {
        let c_name = format!("OMPRPC_STATUS_{name}");
        let found = constants.iter().find(|(n, _)| *n == c_name);
        assert_eq!(
            found.map(|(_, v)| *v),
            Some(*value),
            "{c_name} must be {value} in include/omprpc.h (docs/c-api.md)"
        );
        let reported = c_str(unsafe { omprpc_status_name(*value as i32) });
        assert_eq!(reported, *name, "omprpc_status_name({value})");
    }
    for other in [-1, 999, i32::MAX] {
        assert_eq!(c_str(unsafe { omprpc_status_name(other) }), "UNKNOWN", "status_name({other})");
    }
}

/// Every name the header introduces (macros, types, enum constants, functions) carries the
/// project prefix. cbindgen exports every `pub const` of the crate, so this is what catches
/// an internal constant leaking into the C API.
#[test]
fn every_exported_name_is_prefixed() {
    let header = read_header();
    let mut names = BTreeSet::new();
    let mut in_comment = false;
    for raw in header.lines() {
        let mut line = raw.trim().to_string();
        // Drop comments (cbindgen writes `/** … */` blocks and `// …` after #endif).
        if in_comment {
            match line.find("*/") {
                Some(i) => {
                    line = line[i + 2..].to_string();
                    in_comment = false;
                }
                None => continue,
            }
        }
        if let Some(i) = line.find("/*") {
            if let Some(j) = line[i..].find("*/") {
                line = format!("{}{}", &line[..i], &line[i + j + 2..]);
            } else {
                line.truncate(i);
                in_comment = true;
            }
        }
        if let Some(i) = line.find("//") {
            line.truncate(i);
        }
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("#define ") {
            names.insert(rest.split_whitespace().next().unwrap_or("").to_string());
            continue;
        }
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let tokens: Vec<&str> = line
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|t| !t.is_empty())
            .collect();
        // enum/struct/union tags and typedef names
        for w in tokens.windows(2) {
            if matches!(w[0], "enum" | "struct" | "union") {
                names.insert(w[1].to_string());
            }
        }
        // typedef names: `typedef … name;` and the `} name;` closing a typedef'd body
        if line.ends_with(';') && (line.starts_with("typedef") || line.starts_with('}')) {
            if let Some(last) = tokens.last() {
                names.insert(last.to_string());
            }
        }
        // enum constants: `NAME = value,` or `NAME,`
        if let Some((lhs, _)) = line.split_once('=') {
            let lhs = lhs.trim();
            if !lhs.is_empty() && lhs.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                names.insert(lhs.to_string());
            }
        }
        // function names: the identifier right before the first `(` of a prototype
        if !line.starts_with("typedef") {
            if let Some(i) = line.find('(') {
                let before = line[..i].trim_end();
                let ident: String = before
                    .chars()
                    .rev()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                if !ident.is_empty() && !matches!(ident.as_str(), "defined") {
                    names.insert(ident);
                }
            }
        }
    }
    let allowed_foreign = ["int32_t", "uint32_t", "int64_t", "uint64_t", "size_t"];
    let bad: Vec<&String> = names
        .iter()
        .filter(|n| {
            !(n.starts_with("omprpc_") || n.starts_with("OMPRPC_") || allowed_foreign.contains(&n.as_str()))
        })
        .collect();
    assert!(
        bad.is_empty(),
        "names without the omprpc_/OMPRPC_ prefix in include/omprpc.h: {bad:?} \
         (make internal constants pub(crate) or mark their module `/// cbindgen:ignore`)"
    );
    // The scan itself must have seen the API, or an empty result would prove nothing.
    for expected in ["omprpc_client", "omprpc_status", "omprpc_client_start", "OMPRPC_STATUS_OK", "OMPRPC_ABI_VERSION"] {
        assert!(names.contains(expected), "{expected} not found in include/omprpc.h (scanned: {names:?})");
    }
}

/// Each prototype of the header: (name, prototype on one line, the doc comment right above it,
/// its `*` margins stripped and lines joined; empty when there is none).
fn documented_functions(header: &str) -> Vec<(String, String, String)> {
    let lines: Vec<&str> = header.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let is_prototype = !line.starts_with([' ', '#', '/', '}', '*'])
            && !line.starts_with("typedef")
            && !line.starts_with("extern")
            && line.contains("omprpc_")
            && line.contains('(');
        if !is_prototype {
            i += 1;
            continue;
        }
        let first = i;
        let mut proto = line.to_string();
        while !proto.trim_end().ends_with(';') && i + 1 < lines.len() {
            i += 1;
            proto.push(' ');
            proto.push_str(lines[i].trim());
        }
        let before_paren = &proto[..proto.find('(').expect("a prototype has a '('")];
        let name = before_paren.rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).next().unwrap_or("").to_string();
        let mut doc = String::new();
        if first > 0 && lines[first - 1].trim() == "*/" {
            if let Some(open) = lines[..first - 1].iter().rposition(|l| l.trim() == "/**") {
                doc = lines[open + 1..first - 1]
                    .iter()
                    .map(|l| l.trim().trim_start_matches('*').trim())
                    .collect::<Vec<_>>()
                    .join(" ");
            }
        }
        out.push((name, proto, doc));
        i += 1;
    }
    out
}

/// The status names in the sentence that starts with "Statuses:" (up to the next ". ").
fn statuses_sentence(doc: &str) -> Option<Vec<String>> {
    let rest = &doc[doc.find("Statuses:")? + "Statuses:".len()..];
    let sentence = rest.split(". ").next().unwrap_or(rest);
    Some(
        sentence
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| w.len() >= 2 && w.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
            .map(str::to_string)
            .collect(),
    )
}

/// Every exported function carries a doc comment that states its contract: who owns what it
/// returns, whether it may be called from any thread, and which statuses it returns (issue 8).
/// The comments come from the `///` lines on the exports in src/ffi/.
#[test]
fn every_function_documents_its_contract() {
    let header = read_header();
    let functions = documented_functions(&header);
    assert!(functions.len() >= 40, "found only {} prototypes in include/omprpc.h: the scan is broken", functions.len());
    let mut problems = Vec::new();
    for (name, proto, doc) in &functions {
        let mut lacks = Vec::new();
        if doc.is_empty() {
            problems.push(format!("{name}: no doc comment"));
            continue;
        }
        if !doc.to_lowercase().contains("thread") {
            lacks.push("thread-safety (\"Threads: …\")".to_string());
        }
        let ret = proto[..proto.find(name.as_str()).unwrap_or(0)].trim();
        if ret == "omprpc_status" {
            match statuses_sentence(doc) {
                None => lacks.push("the statuses it returns (\"Statuses: OK, …\")".to_string()),
                Some(names) => {
                    let unknown: Vec<&String> =
                        names.iter().filter(|n| !STATUSES.iter().any(|(s, _)| s == n)).collect();
                    if names.is_empty() || !unknown.is_empty() {
                        lacks.push(format!("a list of real status names after \"Statuses:\" (unknown: {unknown:?})"));
                    }
                }
            }
        }
        // Ownership of what comes out: strings, handles, static strings.
        let params = &proto[proto.find('(').unwrap_or(0)..];
        let owned_string_out = params.split(',').any(|p| p.contains("char **") && !p.contains("out_error"));
        if (owned_string_out || ret == "char *") && !doc.contains("omprpc_string_free") {
            lacks.push("ownership of the returned string (omprpc_string_free)".to_string());
        }
        if ret == "const char *" && !doc.contains("static") {
            lacks.push("ownership of the returned string (static)".to_string());
        }
        for handle in ["omprpc_client", "omprpc_summarizer"] {
            if params.contains(&format!("{handle} **")) && !doc.contains(&format!("{handle}_free")) {
                lacks.push(format!("ownership of the new handle ({handle}_free)"));
            }
        }
        if !lacks.is_empty() {
            problems.push(format!("{name}: the doc comment does not state {}", lacks.join(", ")));
        }
    }
    assert!(
        problems.is_empty(),
        "functions in include/omprpc.h without a complete contract comment (add `///` lines on the \
         export in src/ffi/, then `make header`):\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn the_contract_scan_finds_what_it_checks() {
    let sample = "/**\n * Does x. Threads: any. Statuses: OK, TIMEOUT. More.\n */\nomprpc_status omprpc_x(const char *a,\n                       char **out_json);\n\n/**\n * Nothing.\n */\nvoid omprpc_y(void);\n";
    let f = documented_functions(sample);
    assert_eq!(f.len(), 2);
    assert_eq!(f[0].0, "omprpc_x");
    assert_eq!(f[0].1, "omprpc_status omprpc_x(const char *a, char **out_json);");
    assert_eq!(f[0].2, "Does x. Threads: any. Statuses: OK, TIMEOUT. More.");
    assert_eq!(statuses_sentence(&f[0].2), Some(vec!["OK".to_string(), "TIMEOUT".to_string()]));
    assert_eq!(f[1].2, "Nothing.");
    assert_eq!(statuses_sentence("no list"), None);
}
