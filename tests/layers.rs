//! The layers of ARCHITECTURE.md hold: every `crate::…` path in `src/` (tests included) points
//! to a leaf or to a layer above its own — never down, never sideways.
//!
//! ```text
//! transport → protocol → bridge, turn → client → ffi
//! leaves (any layer may use them; they use only each other): error wait env provider observe base64 prompt
//! ```

use std::collections::BTreeSet;
use std::path::Path;

/// A layer's rank: the agent's side is 0; a module may use only lower ranks (and leaves).
fn rank(module: &str) -> Option<u8> {
    Some(match module {
        "transport" => 0,
        "protocol" => 1,
        "bridge" | "turn" => 2,
        "client" => 3,
        // The C ABI, and the fuzzers' window onto the internals.
        "ffi" | "fuzzing" => 4,
        "lib" => 5,
        _ => return None,
    })
}

const LEAVES: [&str; 7] = ["error", "wait", "env", "provider", "observe", "base64", "prompt"];

/// The top-level module a file of `src/` belongs to (`src/client/reader.rs` → `client`).
fn module_of(rel: &Path) -> String {
    let first = rel.iter().next().unwrap().to_string_lossy().into_owned();
    first.strip_suffix(".rs").unwrap_or(&first).to_string()
}

fn allowed(from: &str, to: &str) -> bool {
    if from == to || LEAVES.contains(&to) {
        return true;
    }
    if LEAVES.contains(&from) {
        return false;
    }
    match (rank(from), rank(to)) {
        (Some(a), Some(b)) => b < a,
        _ => false,
    }
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn imports_point_only_to_leaves_and_the_layers_above() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut edges = BTreeSet::new();
    let mut wrong = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap();
        if rel.starts_with("bin") {
            continue; // the fake agent and fake LLM: programs of their own, not the library
        }
        let from = module_of(rel);
        assert!(rank(&from).is_some() || LEAVES.contains(&from.as_str()), "src/{}: module {from} is in no layer", rel.display());
        let text = std::fs::read_to_string(file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let mut rest = line;
            while let Some(at) = rest.find("crate::") {
                let after = &rest[at + "crate::".len()..];
                let to: String = after.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                rest = &after[to.len()..];
                if to.is_empty() || to == from {
                    continue;
                }
                edges.insert(format!("{from} -> {to}"));
                if !allowed(&from, &to) {
                    wrong.push(format!("src/{}:{}: {from} uses {to}: {}", rel.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(edges.len() >= 20, "the scan found only {} edges: it is broken", edges.len());
    assert!(wrong.is_empty(), "imports against the layers (ARCHITECTURE.md):\n{}", wrong.join("\n"));
}

#[test]
fn the_rule_itself() {
    assert!(allowed("client", "protocol") && allowed("turn", "protocol") && allowed("ffi", "client"));
    assert!(!allowed("protocol", "client") && !allowed("turn", "client") && !allowed("transport", "protocol"));
    assert!(!allowed("bridge", "turn"), "same rank: no sideways use");
    assert!(allowed("protocol", "base64") && !allowed("observe", "protocol"), "leaves use only leaves");
}
