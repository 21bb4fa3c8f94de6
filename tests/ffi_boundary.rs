//! Every C export runs inside the panic boundary (rustls-ffi issue #286 was one that did not):
//! this reads the FFI sources, finds each `#[no_mangle]` function and checks that its body
//! goes through `boundary` or `guarded`, directly or through a helper that does. It also
//! checks that the shared library exports exactly the functions the header declares.

use std::collections::BTreeSet;

fn ffi_sources() -> String {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/ffi");
    let mut all = String::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        all.push_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap());
    }
    all
}

/// (name, body) of every top-level fn in `src`, exported or not.
fn functions(src: &str) -> Vec<(String, bool, String)> {
    let mut out = Vec::new();
    let lines: Vec<&str> = src.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let is_fn = (line.starts_with("pub ") || line.starts_with("fn ") || line.starts_with("unsafe fn"))
            && line.contains("fn ")
            && !line.trim_end().ends_with(';');
        if is_fn {
            let exported = i > 0 && lines[i - 1].trim() == "#[no_mangle]";
            let name = line.split("fn ").nth(1).unwrap().split(['(', '<']).next().unwrap().trim().to_string();
            let mut body = String::new();
            let mut j = i;
            while j < lines.len() {
                body.push_str(lines[j]);
                body.push('\n');
                if lines[j] == "}" {
                    break;
                }
                j += 1;
            }
            out.push((name, exported, body));
            i = j;
        }
        i += 1;
    }
    out
}

#[test]
fn every_export_is_inside_the_panic_boundary() {
    let src = ffi_sources();
    let fns = functions(&src);
    let guarded_helpers: BTreeSet<String> = fns
        .iter()
        .filter(|(n, exported, body)| !exported && n != "boundary" && n != "guarded" && (body.contains("boundary(") || body.contains("guarded(")))
        .map(|(n, _, _)| n.clone())
        .collect();
    let exports: Vec<_> = fns.iter().filter(|(_, e, _)| *e).collect();
    assert!(exports.len() >= 30, "found only {} exports: the scan is broken", exports.len());
    for (name, _, body) in exports {
        assert!(name.starts_with("omprpc_"), "export {name} lacks the omprpc_ prefix");
        let direct = body.contains("boundary(") || body.contains("guarded(");
        let via_helper = guarded_helpers.iter().any(|h| body.contains(&format!("{h}(")));
        assert!(direct || via_helper, "export {name} does not run inside the panic boundary");
    }
}

#[test]
fn library_exports_match_the_header() {
    let header = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/omprpc.h")).unwrap();
    let declared: BTreeSet<String> = header
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("omprpc_") && header.contains(&format!("{w}(")))
        .map(str::to_string)
        .collect();
    let exported: BTreeSet<String> = functions(&ffi_sources()).into_iter().filter(|(_, e, _)| *e).map(|(n, _, _)| n).collect();
    assert_eq!(declared, exported, "header declarations and #[no_mangle] exports differ: run make header");
}
