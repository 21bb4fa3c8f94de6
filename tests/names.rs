//! docs/names.md maps every C export of `include/omprpc.h` to its Python, Go and Node name.
//! These tests fail when the map drifts from the header or from the bindings.
//!
//! The parsing is deliberately simple (plain string scanning, no dependencies):
//!
//! * **Header exports**: on every line of `include/omprpc.h` that starts in column 0 and is
//!   not a comment or preprocessor line, each `omprpc_…` identifier directly followed by `(`.
//! * **The table**: the lines of docs/names.md from the header row `| C export | Python | Go |
//!   Node |` to the first line that does not start with `|`; the `|---|` line is skipped.
//!   Cells are split on `|`, so a cell must not contain one.
//! * **Names in a cell**: its code spans (`` `…` ``) that are outside parentheses (parentheses
//!   are counted outside code spans only). So `—`, `(internal: …)` and remarks such as
//!   `(sent with `omprpc_client_request`)` name nothing to check. A name is cut into
//!   segments: a leading `new ` and a trailing `()` are dropped, then it is split on `.`.
//! * **C column**: every code span is an export; each must be in the header, and each export
//!   must be in exactly one row.
//! * **Go**: `Type.Method` must be declared as `func (r *Type) Method(` (or `(r Type)`) and
//!   `Name` as `func Name(` in a non-test `bindings/go/*.go` file.
//! * **Python**: every segment except a lowercase first one (`omprpc.`, a module) must be
//!   declared in some `.py` file under `bindings/python/omprpc/` (any file, any depth, so code
//!   may move between modules): a line starting `def NAME`, `async def NAME`, `class NAME`,
//!   or `NAME` / `self.NAME` followed by `:` or `=` (an attribute or annotated constant).
//! * **Node**: every segment except a lowercase first one (`client.`, `summarizer.`, an
//!   instance) must occur as an identifier in some `.cjs` / `.mjs` / `.js` file under
//!   `bindings/node/` outside `node_modules/` and `test/` (a presence check, not a
//!   declaration check).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$'
}

/// The exported function names of include/omprpc.h.
fn header_exports() -> BTreeSet<String> {
    let header = read(&root().join("include").join("omprpc.h"));
    let mut out = BTreeSet::new();
    for line in header.lines() {
        let starts_code = line
            .chars()
            .next()
            .is_some_and(|c| !c.is_whitespace() && c != '*' && c != '/' && c != '#');
        if !starts_code {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("omprpc_") {
            let before_ok = !rest[..at].chars().next_back().is_some_and(is_ident);
            let tail = &rest[at..];
            let len = tail.find(|c: char| !is_ident(c)).unwrap_or(tail.len());
            if before_ok && tail[len..].starts_with('(') {
                out.insert(tail[..len].to_string());
            }
            rest = &tail[len..];
        }
    }
    assert!(
        out.len() >= 50,
        "the header scan found only {} exports: {out:?}",
        out.len()
    );
    out
}

/// One table row: the exports of its C column and the checked names of each binding.
struct Row {
    line: usize,
    exports: Vec<String>,
    python: Vec<String>,
    go: Vec<String>,
    node: Vec<String>,
}

/// Code spans of `cell` outside parentheses (`all`: every code span).
fn code_spans(cell: &str, all: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut span: Option<String> = None;
    for c in cell.chars() {
        match (&mut span, c) {
            (Some(s), '`') => {
                if all || depth == 0 {
                    out.push(std::mem::take(s));
                }
                span = None;
            }
            (Some(s), c) => s.push(c),
            (None, '`') => span = Some(String::new()),
            (None, '(') => depth += 1,
            (None, ')') => depth = depth.saturating_sub(1),
            (None, _) => {}
        }
    }
    out
}

fn table() -> Vec<Row> {
    let doc = read(&root().join("docs").join("names.md"));
    let mut rows = Vec::new();
    let mut in_table = false;
    for (i, line) in doc.lines().enumerate() {
        let compact: String = line.chars().filter(|c| !c.is_whitespace()).collect();
        if !in_table {
            in_table = compact == "|Cexport|Python|Go|Node|";
            continue;
        }
        if !line.starts_with('|') {
            break;
        }
        if compact.starts_with("|---") {
            continue;
        }
        let cells: Vec<&str> = line
            .trim()
            .trim_matches('|')
            .split('|')
            .map(str::trim)
            .collect();
        assert_eq!(
            cells.len(),
            4,
            "docs/names.md line {}: want 4 cells, found {}: {line}",
            i + 1,
            cells.len()
        );
        for (cell, what) in cells[1..].iter().zip(["Python", "Go", "Node"]) {
            assert!(
                !cell.is_empty(),
                "docs/names.md line {}: empty {what} cell (write — or (internal: …))",
                i + 1
            );
        }
        rows.push(Row {
            line: i + 1,
            exports: code_spans(cells[0], true),
            python: code_spans(cells[1], false),
            go: code_spans(cells[2], false),
            node: code_spans(cells[3], false),
        });
    }
    assert!(
        !rows.is_empty(),
        "docs/names.md has no `| C export | Python | Go | Node |` table"
    );
    rows
}

/// `new Summarizer` → [Summarizer]; `client.getState()` → [client, getState].
fn segments(name: &str) -> Vec<String> {
    let name = name.trim();
    let name = name.strip_prefix("new ").unwrap_or(name);
    let name = name.strip_suffix("()").unwrap_or(name);
    name.split('.').map(str::to_string).collect()
}

/// The segments to look up: a lowercase first segment of a dotted name is a module or an
/// instance (`omprpc.`, `client.`), not a declared name.
fn checked_segments(name: &str) -> Vec<String> {
    let mut segs = segments(name);
    if segs.len() > 1 && segs[0].starts_with(|c: char| c.is_ascii_lowercase()) {
        segs.remove(0);
    }
    segs
}

/// Files under `dir` (recursively) with one of `exts`, skipping directories named in `skip`.
fn files(dir: &Path, exts: &[&str], skip: &[&str], recurse: bool, out: &mut Vec<PathBuf>) {
    let entries =
        fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string();
        if path.is_dir() {
            if recurse && !skip.contains(&name.as_str()) {
                files(&path, exts, skip, recurse, out);
            }
        } else if exts.iter().any(|e| name.ends_with(e)) {
            out.push(path);
        }
    }
}

fn report(problems: Vec<String>, what: &str) {
    assert!(
        problems.is_empty(),
        "docs/names.md {what}:\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn every_export_has_exactly_one_row_and_every_row_names_an_export() {
    let exports = header_exports();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut problems = Vec::new();
    for row in table() {
        if row.exports.is_empty() {
            problems.push(format!(
                "line {}: the C export cell names no export",
                row.line
            ));
        }
        for e in &row.exports {
            if !exports.contains(e) {
                problems.push(format!(
                    "line {}: `{e}` is not exported by include/omprpc.h",
                    row.line
                ));
            }
            if let Some(first) = seen.insert(e.clone(), row.line) {
                problems.push(format!(
                    "line {}: `{e}` already has a row (line {first})",
                    row.line
                ));
            }
        }
    }
    for e in exports.iter().filter(|e| !seen.contains_key(*e)) {
        problems.push(format!("`{e}` has no row"));
    }
    report(problems, "does not match include/omprpc.h");
}

/// `Type.Method` and plain `Name` of every `func` line in the non-test Go files.
fn go_declarations() -> BTreeSet<String> {
    let mut paths = Vec::new();
    files(
        &root().join("bindings").join("go"),
        &[".go"],
        &[],
        false,
        &mut paths,
    );
    let mut out = BTreeSet::new();
    for path in paths
        .iter()
        .filter(|p| !p.to_string_lossy().ends_with("_test.go"))
    {
        for line in read(path).lines() {
            let Some(rest) = line.strip_prefix("func ") else {
                continue;
            };
            let (receiver, rest) = match rest.strip_prefix('(') {
                Some(r) => {
                    let Some(close) = r.find(')') else { continue };
                    // `c *Client` / `*Client` / `s Summarizer[T]` → Client / Summarizer.
                    let ty = r[..close].split_whitespace().last().unwrap_or("");
                    let ty = ty.trim_start_matches('*');
                    let ty = ty.split('[').next().unwrap_or(ty);
                    (Some(ty.to_string()), r[close + 1..].trim_start())
                }
                None => (None, rest),
            };
            let name: String = rest.chars().take_while(|&c| is_ident(c)).collect();
            if name.is_empty() {
                continue;
            }
            out.insert(match receiver {
                Some(ty) => format!("{ty}.{name}"),
                None => name,
            });
        }
    }
    out
}

#[test]
fn go_names_are_declared() {
    let declared = go_declarations();
    let mut problems = Vec::new();
    for row in table() {
        for name in &row.go {
            let segs = segments(name);
            if segs.len() > 2 || !declared.contains(&segs.join(".")) {
                problems.push(format!(
                    "line {}: Go `{name}` is not declared (func {}) in bindings/go/*.go",
                    row.line,
                    if segs.len() == 2 {
                        format!("(… *{}) {}", segs[0], segs[1])
                    } else {
                        segs.join(".")
                    }
                ));
            }
        }
    }
    report(problems, "names Go functions the binding does not declare");
}

/// Names a Python line declares: `def NAME`, `async def NAME`, `class NAME`, `NAME =`,
/// `NAME:`, `self.NAME =`, `self.NAME:`.
fn python_declared(line: &str) -> Option<String> {
    let t = line.trim_start();
    let ident = |s: &str| -> String { s.chars().take_while(|&c| is_ident(c)).collect() };
    for kw in ["def ", "async def ", "class "] {
        if let Some(rest) = t.strip_prefix(kw) {
            let name = ident(rest);
            return (!name.is_empty()).then_some(name);
        }
    }
    let t = t.strip_prefix("self.").unwrap_or(t);
    let name = ident(t);
    let after = t[name.len()..].trim_start();
    let assigns = (after.starts_with('=') && !after.starts_with("==")) || after.starts_with(':');
    (!name.is_empty() && assigns).then_some(name)
}

#[test]
fn python_names_are_declared() {
    let mut paths = Vec::new();
    files(
        &root().join("bindings").join("python").join("omprpc"),
        &[".py"],
        &["__pycache__"],
        true,
        &mut paths,
    );
    let declared: BTreeSet<String> = paths
        .iter()
        .flat_map(|p| {
            read(p)
                .lines()
                .filter_map(python_declared)
                .collect::<Vec<_>>()
        })
        .collect();
    let mut problems = Vec::new();
    for row in table() {
        for name in &row.python {
            for seg in checked_segments(name) {
                if !declared.contains(&seg) {
                    problems.push(format!(
                        "line {}: Python `{name}`: no def/class/attribute `{seg}` under bindings/python/omprpc/",
                        row.line
                    ));
                }
            }
        }
    }
    report(problems, "names Python names the binding does not declare");
}

#[test]
fn node_names_are_present() {
    let mut paths = Vec::new();
    files(
        &root().join("bindings").join("node"),
        &[".cjs", ".mjs", ".js"],
        &["node_modules", "test"],
        true,
        &mut paths,
    );
    let mut identifiers = BTreeSet::new();
    for path in &paths {
        for word in read(path).split(|c: char| !is_ident(c)) {
            if word.starts_with(|c: char| !c.is_ascii_digit()) {
                identifiers.insert(word.to_string());
            }
        }
    }
    let mut problems = Vec::new();
    for row in table() {
        for name in &row.node {
            for seg in checked_segments(name) {
                if !identifiers.contains(&seg) {
                    problems.push(format!(
                        "line {}: Node `{name}`: `{seg}` occurs in no file of bindings/node/",
                        row.line
                    ));
                }
            }
        }
    }
    report(problems, "names Node names the binding does not have");
}
