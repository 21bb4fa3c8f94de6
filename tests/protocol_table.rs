//! `src/protocol/table.json` — the one description of the protocol the bindings' typed
//! commands and events are generated from — against the agents' own type declarations.
//!
//! pi ships its RPC types in its npm package (`dist/modes/rpc/rpc-types.d.ts`, the events in
//! `dist/core/agent-session.d.ts` and pi-agent-core's `dist/types.d.ts`, the package's scope
//! sibling: `@mariozechner/` before 0.74, `@earendil-works/` after); omp ships its TypeScript
//! sources (`src/modes/rpc/rpc-types.ts`, `src/session/agent-session-events.ts`,
//! pi-agent-core's `src/types.ts`). For every pi version the table names (its `agents.pi`:
//! 0.73.1 and 1.6.0, both in one `cargo test`) and for omp (`make test-omp`: opt-in, like
//! tests/real_omp.rs) this test fails when the agent declares a command, a parameter, a
//! response `data`, an event, an event field or a UI method the table does not have for that
//! agent at that version — or when the table claims one the agent does not declare — and when
//! a declared primitive type (string, number, boolean, a literal union) disagrees with the
//! table's. A row, field or data with `since: {"pi": V}` is held absent from every pi read
//! that is older than V and present in the others.
//!
//! `OMPRPC_TABLE_DUMP=1 cargo test --test protocol_table -- --nocapture` prints what each
//! agent declares, as JSON: the starting point for the table rows of a new agent version.

#[path = "support/omp.rs"]
mod omp;
#[path = "support/pi.rs"]
mod pi;
#[path = "support/ts_decls.rs"]
mod ts_decls;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use ts_decls::Field;

fn table() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/protocol/table.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("src/protocol/table.json is not JSON: {e}"))
}

/// What one agent's declaration files say.
#[derive(Default, Debug)]
struct Declared {
    /// command name → its fields (without `id` and `type`)
    commands: BTreeMap<String, Vec<Field>>,
    /// command name → the `data` field of its success response (`None`: no data)
    responses: BTreeMap<String, Option<Field>>,
    /// event type → its fields (without `type`)
    events: BTreeMap<String, Vec<Field>>,
    /// UI method → its fields (without `type`, `id`, `method`)
    ui: BTreeMap<String, Vec<Field>>,
    /// interface name → its fields: the named types of the RPC declarations
    interfaces: BTreeMap<String, Vec<Field>>,
    /// The payload declarations (pi-ai's types, pi-agent-core's, the agent's session messages),
    /// one text: what the table's `declared` types (messages, content blocks, usage, …) are read from.
    payloads: String,
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading the agent's declarations {}: {e}", path.display()))
}

fn without(fields: Vec<Field>, names: &[&str]) -> Vec<Field> {
    fields.into_iter().filter(|f| !names.contains(&f.name.as_str())).collect()
}

/// A union's object members: each variant's key literal and its fields.
type Members = Vec<(String, Vec<Field>)>;

/// The object members of union `name` in `src`, keyed by their `key` literal; members that
/// are not object types are resolved through `resolve` (another alias, `Exclude<…>`, `Extract<…> & {…}`).
fn members(src: &str, name: &str, key: &str, resolve: &dyn Fn(&str) -> Members) -> Members {
    let body = ts_decls::type_alias(src, name).unwrap_or_else(|| panic!("the agent no longer declares type {name}"));
    let mut out = Vec::new();
    for member in ts_decls::union_members(&body) {
        match ts_decls::object_fields(&member) {
            // The error response any command may get (`command: string; success: false`).
            Some(fields) if fields.iter().any(|f| f.name == "success" && f.ty == "false") => {}
            Some(fields) => {
                let lit = ts_decls::literal(&fields, key).unwrap_or_else(|| panic!("{name}: a member without a `{key}` literal: {member}"));
                out.push((lit, fields));
            }
            None => out.extend(resolve(&member)),
        }
    }
    out
}

/// Resolves `Exclude<A, { type: "x" }>` and `(Extract<A, { type: "x" }> & { … })` against
/// the members of `A` (`base`), and a bare `A` to all of them; `W<…>`, where `src` declares
/// `type W<E> = E extends { type: … } ? E & { … } : E` (pi 1.x's `WithParentToolCallId`), to
/// what it wraps with those fields added to the members it names.
fn resolve_event_member(member: &str, src: &str, base_name: &str, base: &[(String, Vec<Field>)]) -> Vec<(String, Vec<Field>)> {
    let m = member.trim().trim_start_matches('(').trim_end_matches(')').trim();
    if m == base_name {
        return base.to_vec();
    }
    let wrapper: String = m.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    if !wrapper.is_empty() && wrapper != "Exclude" && wrapper != "Extract" && m[wrapper.len()..].starts_with('<') && m.ends_with('>') {
        let (param, body) = ts_decls::generic_type_alias(src, &wrapper).unwrap_or_else(|| panic!("cannot read the event union member {member}: no type {wrapper}<…>"));
        let (types, extra) = ts_decls::member_extension(&param, &body).unwrap_or_else(|| panic!("cannot read type {wrapper}<{param}> = {body}"));
        let mut inner = resolve_event_member(&m[wrapper.len() + 1..m.len() - 1], src, base_name, base);
        for (ty, fields) in &mut inner {
            if types.contains(ty) {
                fields.extend(extra.iter().cloned());
            }
        }
        return inner;
    }
    let excluded_or_extracted = |prefix: &str| -> Option<String> {
        let rest = m.strip_prefix(prefix)?;
        let at = rest.find("type: \"")? + "type: \"".len();
        Some(rest[at..at + rest[at..].find('"')?].to_string())
    };
    if let Some(ty) = excluded_or_extracted(&format!("Exclude<{base_name},")) {
        return base.iter().filter(|(t, _)| *t != ty).cloned().collect();
    }
    if let Some(ty) = excluded_or_extracted(&format!("Extract<{base_name},")) {
        let extra = m.rfind("& {").and_then(|at| ts_decls::object_fields(&m[at + 2..])).unwrap_or_default();
        let mut fields = base.iter().find(|(t, _)| *t == ty).map(|(_, f)| f.clone()).unwrap_or_default();
        fields.extend(extra);
        return vec![(ty, fields)];
    }
    panic!("cannot read the event union member {member}")
}

/// A package under node_modules next to (or inside) the agent's package.
fn sibling_package(agent_pkg: &Path, scope: &str, name: &str) -> PathBuf {
    let nested = agent_pkg.join("node_modules").join(scope).join(name);
    if nested.is_dir() {
        return nested;
    }
    agent_pkg.parent().unwrap().join(name)
}

/// The agent's package directory and npm scope: the nearest directory above its CLI entry
/// (`dist/cli.js`; pi 1.x: `dist/bundle/cli.js`) whose package.json names a scoped package.
fn package_of(cli: &Path) -> (&Path, String) {
    for dir in cli.ancestors().skip(1) {
        let Ok(text) = std::fs::read_to_string(dir.join("package.json")) else { continue };
        let name = serde_json::from_str::<Value>(&text).ok().and_then(|v| v["name"].as_str().map(str::to_string)).unwrap_or_default();
        if let Some((scope, _)) = name.split_once('/') {
            return (dir, scope.to_string());
        }
    }
    panic!("no scoped package.json above the agent's CLI {}", cli.display())
}

/// Adds an event union member; a type declared by several members (pi 1.x's
/// `summarization_retry_attempt_start`, one per `source`) gets their fields merged: a field
/// some members lack is optional, differing types are joined into a union.
fn add_event(events: &mut BTreeMap<String, Vec<Field>>, ty: String, fields: Vec<Field>) {
    let Some(known) = events.get_mut(&ty) else {
        events.insert(ty, fields);
        return;
    };
    for f in known.iter_mut() {
        match fields.iter().find(|g| g.name == f.name) {
            None => f.optional = true,
            Some(g) => {
                f.optional |= g.optional;
                if g.ty != f.ty {
                    f.ty = format!("{} | {}", f.ty, g.ty);
                }
            }
        }
    }
    for g in fields {
        if !known.iter().any(|f| f.name == g.name) {
            known.push(Field { optional: true, ..g });
        }
    }
}

fn declared(agent: &str, cli: &Path) -> Declared {
    let (pkg, scope) = package_of(cli);
    let payload_files = match agent {
        "pi" => vec![sibling_package(pkg, &scope, "pi-ai").join("dist/types.d.ts"), sibling_package(pkg, &scope, "pi-agent-core").join("dist/types.d.ts"), pkg.join("dist/core/messages.d.ts")],
        _ => vec![sibling_package(pkg, &scope, "pi-ai").join("src/types.ts"), sibling_package(pkg, &scope, "pi-catalog").join("src/types.ts"), sibling_package(pkg, &scope, "pi-agent-core").join("src/types.ts"), sibling_package(pkg, &scope, "pi-agent-core").join("src/compaction/messages.ts"), pkg.join("src/session/messages.ts")],
    };
    let (rpc_types, session_events, session_alias, core_types, rpc_sources) = match agent {
        "pi" => (
            pkg.join("dist/modes/rpc/rpc-types.d.ts"),
            pkg.join("dist/core/agent-session.d.ts"),
            "AgentSessionEvent",
            sibling_package(pkg, &scope, "pi-agent-core").join("dist/types.d.ts"),
            vec![pkg.join("dist/modes/rpc/rpc-mode.js")],
        ),
        _ => (
            pkg.join("src/modes/rpc/rpc-types.ts"),
            pkg.join("src/session/agent-session-events.ts"),
            "AgentSessionEvent",
            sibling_package(pkg, &scope, "pi-agent-core").join("src/types.ts"),
            std::fs::read_dir(pkg.join("src/modes/rpc")).unwrap().flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "ts")).collect(),
        ),
    };
    let rpc = read(&rpc_types);
    let none = |m: &str| -> Vec<(String, Vec<Field>)> { panic!("cannot read the union member {m}") };
    let mut d = Declared { payloads: payload_files.iter().map(|p| ts_decls::strip_comments(&read(p))).collect::<Vec<_>>().join("\n"), ..Declared::default() };
    for (name, fields) in members(&rpc, "RpcCommand", "type", &none) {
        d.commands.insert(name, without(fields, &["id", "type"]));
    }
    for (name, fields) in members(&rpc, "RpcResponse", "command", &none) {
        d.responses.insert(name, fields.into_iter().find(|f| f.name == "data"));
    }
    let core = members(&read(&core_types), "AgentEvent", "type", &none);
    let session_src = read(&session_events);
    for (ty, fields) in members(&session_src, session_alias, "type", &|m| resolve_event_member(m, &session_src, "AgentEvent", &core)) {
        add_event(&mut d.events, ty, without(fields, &["type"]));
    }
    for (method, fields) in members(&rpc, "RpcExtensionUIRequest", "method", &none) {
        d.ui.insert(method, without(fields, &["type", "id", "method"]));
    }
    d.events.insert("extension_ui_request".into(), vec![]);
    // Frames declared as interfaces of their own (omp: ready, prompt_result, host tool calls, …).
    for (name, body) in ts_decls::interfaces(&rpc) {
        let Some(fields) = ts_decls::object_fields(&body) else { continue };
        match ts_decls::literal(&fields, "type") {
            Some(ty) => {
                d.events.insert(ty, without(fields, &["type"]));
            }
            None => {
                d.interfaces.insert(name, fields);
            }
        }
    }
    // Frames written straight into the output (extension_error, notice, command_output, …).
    for src in &rpc_sources {
        for ty in ts_decls::emitted_literals(&read(src), "output") {
            d.events.entry(ty).or_default();
        }
    }
    d
}

fn dump(agent: &str, d: &Declared) {
    if std::env::var("OMPRPC_TABLE_DUMP").is_err() {
        return;
    }
    let fields = |fs: &[Field]| -> Value { fs.iter().map(|f| json!({"name": f.name, "ty": f.ty, "optional": f.optional})).collect() };
    let out = json!({
        "agent": agent,
        "commands": d.commands.iter().map(|(n, f)| (n.clone(), fields(f))).collect::<serde_json::Map<_, _>>(),
        "responses": d.responses.iter().map(|(n, f)| (n.clone(), f.as_ref().map(|f| fields(std::slice::from_ref(f))).unwrap_or(Value::Null))).collect::<serde_json::Map<_, _>>(),
        "events": d.events.iter().map(|(n, f)| (n.clone(), fields(f))).collect::<serde_json::Map<_, _>>(),
        "ui": d.ui.iter().map(|(n, f)| (n.clone(), fields(f))).collect::<serde_json::Map<_, _>>(),
        "interfaces": d.interfaces.iter().map(|(n, f)| (n.clone(), fields(f))).collect::<serde_json::Map<_, _>>(),
    });
    println!("{}", serde_json::to_string_pretty(&out).unwrap());
}

// --- the table's side -----------------------------------------------------------------------

fn has_agent(row: &Value, agent: &str) -> bool {
    row.get("agents").and_then(Value::as_array).map_or(true, |a| a.iter().any(|x| x == agent))
}

/// `X.Y.Z` as numbers, for ordering.
fn version(v: &str) -> Vec<u32> {
    v.split('.').map(|p| p.parse().unwrap_or_else(|_| panic!("not a version: {v}"))).collect()
}

/// Whether a row, field or data exists for `agent` at `at`: it names the agent (or none) and
/// its `since` for the agent, if any, is not newer than `at`.
fn exists(row: &Value, agent: &str, at: &str) -> bool {
    has_agent(row, agent) && row.get("since").and_then(|s| s.get(agent)).and_then(Value::as_str).map_or(true, |since| version(since) <= version(at))
}

/// `optional`: `true`, or the agents for which it may be missing.
fn optional_for(v: &Value, agent: &str) -> bool {
    match v.get("optional") {
        Some(Value::Bool(b)) => *b,
        Some(Value::Array(agents)) => agents.iter().any(|a| a == agent),
        _ => false,
    }
}

/// The table's fields of a row for one agent at one version: name → (type, optional).
fn table_fields(row: &Value, key: &str, agent: &str, at: &str) -> BTreeMap<String, (String, bool)> {
    row.get(key)
        .and_then(Value::as_array)
        .map(|fs| {
            fs.iter()
                .filter(|f| exists(f, agent, at))
                .map(|f| {
                    let name = f["name"].as_str().unwrap().to_string();
                    (name, (f["type"].as_str().unwrap_or("any").to_string(), optional_for(f, agent)))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Whether a declared TypeScript type and a table type agree where the declaration is
/// primitive; a named or structural TypeScript type is the table's to describe.
fn types_agree(ts: &str, table_ty: &str, types: &Value) -> bool {
    let ts = ts.trim();
    let nullable_stripped = ts.trim_end_matches(" | undefined").trim_end_matches(" | null");
    let base = table_ty.trim_end_matches('?');
    if let Some(values) = ts_decls::literal_union(nullable_stripped) {
        if values.len() == 1 {
            return true; // a single literal (`true`, `"x"`) is a marker, not a choice
        }
        return match enum_values(base, types) {
            Some(mut table) => {
                let mut v = values.clone();
                v.sort();
                table.sort();
                v == table
            }
            None => base == "string",
        };
    }
    match nullable_stripped {
        "string" => base == "string" || enum_values(base, types).is_some(),
        "number" => base == "integer" || base == "number",
        "boolean" => base == "boolean",
        "string[]" | "readonly string[]" => base == "string[]",
        _ => true,
    }
}

/// The values of an enum type: `enum(a,b)` inline or a named `{"enum": [...]}` type.
fn enum_values(ty: &str, types: &Value) -> Option<Vec<String>> {
    if let Some(inner) = ty.strip_prefix("enum(").and_then(|r| r.strip_suffix(')')) {
        return Some(inner.split(',').map(str::to_string).collect());
    }
    types.get(ty)?.get("enum")?.as_array().map(|a| a.iter().map(|v| v.as_str().unwrap().to_string()).collect())
}

fn compare_fields(what: &str, agent: &str, declared: &[Field], table: &BTreeMap<String, (String, bool)>, types: &Value, problems: &mut Vec<String>) {
    for f in declared {
        match table.get(&f.name) {
            None => problems.push(format!("{agent}: {what}: the agent declares field `{}: {}`, the table does not have it", f.name, f.ty)),
            Some((ty, optional)) => {
                let ts_optional = f.optional;
                if *optional != ts_optional {
                    problems.push(format!("{agent}: {what}.{}: optional is {ts_optional} in the agent, {optional} in the table", f.name));
                }
                if !types_agree(&f.ty, ty, types) {
                    problems.push(format!("{agent}: {what}.{}: the agent says `{}`, the table `{ty}`", f.name, f.ty));
                }
            }
        }
    }
    for name in table.keys() {
        if !declared.iter().any(|f| &f.name == name) {
            problems.push(format!("{agent}: {what}: the table has field `{name}`, the agent does not declare it"));
        }
    }
}

/// The problems of table `t` against what `agent` version `at` declares (`d`). Each problem
/// names the agent; `at` is in it where a row's `since` decided.
fn check(agent: &str, at: &str, d: &Declared, t: &Value) -> Vec<String> {
    let types = &t["types"];
    let mut problems = Vec::new();
    let rows = |key: &str| -> BTreeMap<String, Value> {
        t[key].as_array().unwrap().iter().filter(|r| exists(r, agent, at)).map(|r| (r["name"].as_str().unwrap().to_string(), r.clone())).collect()
    };
    // Rows the agent has only from a later version than `at`: declaring one is a wrong `since`.
    let later = |key: &str, name: &str| -> Option<String> {
        t[key].as_array().unwrap().iter().find(|r| r["name"] == name && has_agent(r, agent) && !exists(r, agent, at)).map(|r| r["since"][agent].as_str().unwrap_or("?").to_string())
    };
    let commands = rows("commands");
    for (name, fields) in &d.commands {
        let Some(row) = commands.get(name) else {
            match later("commands", name) {
                Some(since) => problems.push(format!("{agent} {at}: the agent declares command `{name}`, the table has it since {since}")),
                None => problems.push(format!("{agent}: the agent declares command `{name}`, the table does not have it for {agent}")),
            }
            continue;
        };
        compare_fields(&format!("command {name}"), agent, fields, &table_fields(row, "params", agent, at), types, &mut problems);
        let data = d.responses.get(name);
        let table_data = row.get("data").filter(|v| !v.is_null()).filter(|v| exists(v, agent, at));
        match (data.and_then(Option::as_ref), table_data) {
            (None, None) => {}
            (Some(f), None) => problems.push(format!("{agent}: command {name}: the agent's response has `data: {}`, the table has none", f.ty)),
            (None, Some(_)) => problems.push(format!("{agent}: command {name}: the table has response data, the agent's response has none")),
            (Some(f), Some(td)) => {
                let optional = optional_for(td, agent);
                if optional != f.optional {
                    problems.push(format!("{agent}: command {name}: data optional is {} in the agent, {optional} in the table", f.optional));
                }
                // An inline object type's fields must match the table's.
                let ts = f.ty.trim_end_matches(" | null");
                if let Some(fields) = ts_decls::object_fields(ts) {
                    compare_fields(&format!("command {name} data"), agent, &fields, &table_fields(td, "fields", agent, at), types, &mut problems);
                }
                let nullable = f.ty.ends_with(" | null");
                if nullable != td["nullable"].as_bool().unwrap_or(false) {
                    problems.push(format!("{agent}: command {name}: data nullable is {nullable} in the agent, not in the table"));
                }
            }
        }
    }
    for name in commands.keys() {
        if !d.commands.contains_key(name) {
            problems.push(format!("{agent} {at}: the table has command `{name}` for {agent}, the agent does not declare it"));
        }
    }
    // Agent → host frames and the host → agent frames declared next to them.
    let mut events = rows("events");
    events.extend(rows("host_frames"));
    for (ty, fields) in &d.events {
        let Some(row) = events.get(ty) else {
            match later("events", ty).or_else(|| later("host_frames", ty)) {
                Some(since) => problems.push(format!("{agent} {at}: the agent declares event `{ty}`, the table has it since {since}")),
                None => problems.push(format!("{agent}: the agent declares event `{ty}`, the table does not have it for {agent}")),
            }
            continue;
        };
        // Frames the agent writes as untyped literals carry no declared fields to compare.
        if !fields.is_empty() {
            compare_fields(&format!("event {ty}"), agent, fields, &table_fields(row, "fields", agent, at), types, &mut problems);
        }
    }
    for ty in events.keys() {
        if !d.events.contains_key(ty) {
            problems.push(format!("{agent} {at}: the table has event `{ty}` for {agent}, the agent does not declare it"));
        }
    }
    let ui = rows("ui_methods");
    for (method, fields) in &d.ui {
        match ui.get(method) {
            None => problems.push(format!("{agent}: the agent declares UI method `{method}`, the table does not have it for {agent}")),
            Some(row) => compare_fields(&format!("UI method {method}"), agent, fields, &table_fields(row, "fields", agent, at), types, &mut problems),
        }
    }
    for method in ui.keys() {
        if !d.ui.contains_key(method) {
            problems.push(format!("{agent}: the table has UI method `{method}` for {agent}, the agent does not declare it"));
        }
    }
    let types = t["types"].as_object().unwrap();
    for (name, ty) in types {
        let Some(decl) = ty["declared_as"].as_str() else { continue };
        if !exists(ty, agent, at) {
            continue;
        }
        match d.interfaces.get(decl) {
            None => problems.push(format!("{agent}: table type {name} is declared as `{decl}`, the agent has no such interface")),
            Some(fields) => compare_fields(&format!("type {name}"), agent, fields, &table_fields(ty, "fields", agent, at), &t["types"], &mut problems),
        }
    }
    for decl in d.interfaces.keys() {
        if !types.values().any(|ty| ty["declared_as"] == decl.as_str() && exists(ty, agent, at)) {
            problems.push(format!("{agent}: the agent declares interface `{decl}`, no table type is declared as it for {agent}"));
        }
    }
    for (name, ty) in types {
        if exists(ty, agent, at) {
            check_payload_type(name, ty, agent, at, d, t, &mut problems);
        }
    }
    problems
}

/// A payload field the agent declares `T | undefined` may be missing from the JSON; a field typed `undefined` alone is never sent (omp's `start` says `contentIndex?: undefined`).
fn payload_fields(fields: Vec<Field>) -> Vec<Field> {
    fields
        .into_iter()
        .filter(|f| f.ty != "undefined")
        .map(|f| match f.ty.strip_suffix(" | undefined") {
            Some(ty) => Field { optional: true, ty: ty.to_string(), ..f },
            None => f,
        })
        .collect()
}

/// A table type with `declared` (messages, content blocks, usage, tool results: pi-ai's,
/// pi-agent-core's and the agent's session-message declarations) against those declarations:
/// a `fields` type against the one object its names stand for; a `union` variant by variant,
/// keyed by its tag's literal, each variant's fields against the member's.
fn check_payload_type(name: &str, ty: &Value, agent: &str, at: &str, d: &Declared, t: &Value, problems: &mut Vec<String>) {
    let Some(decls) = ty.get("declared").and_then(Value::as_array) else { return };
    let mut declared = Vec::new();
    for decl in decls.iter().filter_map(Value::as_str) {
        match ts_decls::object_members(&d.payloads, decl) {
            Some(members) => declared.extend(members),
            None => problems.push(format!("{agent}: type {name} is declared as `{decl}`, which the agent's payload declarations do not declare readably")),
        }
    }
    let Some(union) = ty.get("union") else {
        match declared.as_slice() {
            [fields] => {
                compare_fields(&format!("type {name}"), agent, &payload_fields(fields.clone()), &table_fields(ty, "fields", agent, at), &t["types"], problems);
                // A member declared as an inline object (Usage's `cost: { … }`) against the
                // table's named type for it.
                for f in fields {
                    let table_ty = table_fields(ty, "fields", agent, at).get(&f.name).map(|(ty, _)| ty.clone());
                    if let (Some(inner), Some(table_ty)) = (ts_decls::object_fields(&f.ty), table_ty) {
                        if let Some(named) = t["types"].get(&table_ty).filter(|n| n.get("fields").is_some()) {
                            compare_fields(&format!("type {name}.{} ({table_ty})", f.name), agent, &payload_fields(inner), &table_fields(named, "fields", agent, at), &t["types"], problems);
                        }
                    }
                }
            }
            _ => problems.push(format!("{agent}: type {name}: its declaration is {} objects, not one", declared.len())),
        }
        return;
    };
    let tag = union["tag"].as_str().unwrap_or("type");
    let variants = union["variants"].as_object().cloned().unwrap_or_default();
    let mut seen = std::collections::BTreeSet::new();
    for fields in declared {
        let Some(lit) = ts_decls::literal(&fields, tag) else {
            problems.push(format!("{agent}: type {name}: a declared member without a `{tag}` literal: {fields:?}"));
            continue;
        };
        if !seen.insert(lit.clone()) {
            continue; // one variant declared by several members (omp's `done` per reason)
        }
        if std::env::var("OMPRPC_TABLE_DUMP").is_ok() {
            let fields: Vec<Value> = fields.iter().map(|f| json!({"name": f.name, "ty": f.ty, "optional": f.optional})).collect();
            println!("{}", json!({"agent": agent, "type": name, "variant": lit, "fields": fields}));
        }
        match variants.get(&lit).filter(|v| exists(v, agent, at)) {
            Some(v) => compare_fields(&format!("type {name}.{lit}"), agent, &payload_fields(without(fields, &[tag])), &table_fields(v, "fields", agent, at), &t["types"], problems),
            None => problems.push(format!("{agent} {at}: the agent declares {name} variant `{lit}`, the table does not have it for {agent} at {at}")),
        }
    }
    for (lit, v) in &variants {
        if exists(v, agent, at) && !seen.contains(lit) {
            problems.push(format!("{agent} {at}: the table has {name} variant `{lit}` for {agent}, the agent does not declare it"));
        }
    }
}

/// What `agent` version `at` (installed at `cli`) declares against the table: the problems.
fn problems_of(agent: &str, at: &str, cli: &Path) -> Vec<String> {
    let d = declared(agent, cli);
    dump(&format!("{agent} {at}"), &d);
    assert!(d.commands.len() > 20 && d.events.len() > 10 && d.ui.len() > 5, "{agent} {at}: suspiciously few declarations read: {d:?}");
    check(agent, at, &d, &table())
}

/// The versions of `agent` the table describes (its `agents` member).
fn table_versions(agent: &str) -> Vec<String> {
    table()["agents"][agent].as_array().unwrap_or_else(|| panic!("table agents.{agent}: a list of versions")).iter().map(|v| v.as_str().unwrap().to_string()).collect()
}

/// Every type a row names resolves; names are unique per section; agents are pi and omp.
#[test]
fn the_table_is_well_formed() {
    let t = table();
    let types = t["types"].as_object().expect("types is an object");
    let mut problems = Vec::new();
    // A union's variants are types of their own (`AssistantMessage`, `TextContent`).
    let variant_types: std::collections::BTreeSet<String> = types
        .values()
        .filter_map(|ty| ty["union"]["variants"].as_object())
        .flat_map(|v| v.values().filter_map(|v| v["name"].as_str().map(str::to_string)))
        .collect();
    let mut variant_names = std::collections::BTreeSet::new();
    let known = |ty: &str| -> bool {
        ty.split('|').all(|one| {
            let base = one.trim_end_matches("[]");
            matches!(base, "string" | "integer" | "number" | "boolean" | "any" | "object") || base.starts_with("enum(") || types.contains_key(base) || variant_types.contains(base)
        })
    };
    fn each_field(v: &Value, at: &str, f: &mut dyn FnMut(&str, &Value)) {
        for key in ["params", "fields"] {
            for field in v.get(key).and_then(Value::as_array).into_iter().flatten() {
                f(&format!("{at}.{}", field["name"].as_str().unwrap_or("?")), field);
            }
        }
        if let Some(data) = v.get("data") {
            if data.get("type").is_some() {
                f(&format!("{at}.data"), data);
            }
            each_field(data, &format!("{at}.data"), f);
        }
    }
    for section in ["commands", "events", "host_frames", "ui_methods"] {
        let rows = t[section].as_array().unwrap_or_else(|| panic!("{section} is an array"));
        let mut seen = std::collections::BTreeSet::new();
        for row in rows {
            let name = row["name"].as_str().unwrap_or_else(|| panic!("{section}: a row without a name: {row}"));
            if !seen.insert(name) {
                problems.push(format!("{section}: {name} twice"));
            }
            each_field(row, &format!("{section}.{name}"), &mut |at, field| {
                let ty = field["type"].as_str().unwrap_or("");
                if !known(ty) {
                    problems.push(format!("{at}: unknown type `{ty}`"));
                }
            });
            for a in row["agents"].as_array().into_iter().flatten() {
                if a != "pi" && a != "omp" {
                    problems.push(format!("{section}.{name}: unknown agent {a}"));
                }
            }
            each_versioned(row, &format!("{section}.{name}"), &mut |at, v| check_since(at, v, &t, &mut problems));
        }
    }
    for (name, ty) in types {
        each_versioned(ty, &format!("types.{name}"), &mut |at, v| check_since(at, v, &t, &mut problems));
        let kinds = ["fields", "enum", "string", "json", "union"].iter().filter(|k| ty.get(**k).is_some()).count();
        if kinds != 1 {
            problems.push(format!("types.{name}: exactly one of fields / enum / string / json / union"));
        }
        if let Some(u) = ty.get("union") {
            if u["tag"].as_str().is_none() || u["variants"].as_object().map_or(true, |v| v.is_empty()) {
                problems.push(format!("types.{name}.union: a tag (the member naming the variant) and variants {{tag value: {{name, fields}}}}"));
            }
            for (tag, v) in u["variants"].as_object().into_iter().flatten() {
                let at = format!("types.{name}.{tag}");
                match v["name"].as_str() {
                    Some(n) if types.contains_key(n) => problems.push(format!("{at}: its name {n} is a type's too")),
                    Some(n) if !variant_names.insert(n.to_string()) => problems.push(format!("{at}: its name {n} is another variant's too")),
                    Some(_) => {}
                    None => problems.push(format!("{at}: a variant without a name")),
                }
                each_versioned(v, &at, &mut |at, v| check_since(at, v, &t, &mut problems));
                each_field(v, &at, &mut |at, field| {
                    let ty = field["type"].as_str().unwrap_or("");
                    if !known(ty) {
                        problems.push(format!("{at}: unknown type `{ty}`"));
                    }
                });
            }
        }
        each_field(ty, &format!("types.{name}"), &mut |at, field| {
            let ty = field["type"].as_str().unwrap_or("");
            if !known(ty) {
                problems.push(format!("{at}: unknown type `{ty}`"));
            }
        });
    }
    // The versions the table is checked against are the ones the suites run: pi's previous
    // and newest (src/protocol/version.rs), omp's.
    use omprpc::protocol::version::{PI_NEWEST, PI_PREVIOUS};
    if t["agents"] != json!({"pi": [PI_PREVIOUS.to_string(), PI_NEWEST.to_string()], "omp": [omp::OMP_VERSION]}) {
        problems.push(format!("agents: {} — the suites run pi {PI_PREVIOUS} and {PI_NEWEST}, omp {}", t["agents"], omp::OMP_VERSION));
    }
    assert!(problems.is_empty(), "src/protocol/table.json:\n  {}", problems.join("\n  "));
}

/// `f` on a row (or type) and each of its fields and its data: what may carry `since` and `optional`.
fn each_versioned(v: &Value, at: &str, f: &mut dyn FnMut(&str, &Value)) {
    f(at, v);
    for key in ["params", "fields"] {
        for field in v.get(key).and_then(Value::as_array).into_iter().flatten() {
            f(&format!("{at}.{}", field["name"].as_str().unwrap_or("?")), field);
        }
    }
    if let Some(data) = v.get("data") {
        each_versioned(data, &format!("{at}.data"), f);
    }
}

/// `since` is `{agent: "X.Y.Z"}`, each version after the oldest the table is checked against
/// (which has every row without one) and not after the newest (or nothing would have the row);
/// `optional` is a boolean or a list of agents.
fn check_since(at: &str, v: &Value, t: &Value, problems: &mut Vec<String>) {
    match v.get("optional") {
        None | Some(Value::Bool(_)) => {}
        Some(Value::Array(a)) if a.iter().all(|x| x == "pi" || x == "omp") => {}
        Some(other) => problems.push(format!("{at}: optional is true, false or a list of agents, not {other}")),
    }
    let Some(since) = v.get("since") else { return };
    let Some(map) = since.as_object().filter(|m| !m.is_empty()) else {
        problems.push(format!("{at}: since is an object {{agent: version}}, not {since}"));
        return;
    };
    for (agent, ver) in map {
        let checked: Vec<Vec<u32>> = t["agents"][agent.as_str()].as_array().into_iter().flatten().filter_map(Value::as_str).map(version).collect();
        let Some(ver) = ver.as_str().filter(|s| s.split('.').count() == 3 && s.split('.').all(|p| p.parse::<u32>().is_ok())) else {
            problems.push(format!("{at}: since.{agent} is not a version X.Y.Z: {ver}"));
            continue;
        };
        match (checked.first(), checked.last()) {
            (Some(oldest), Some(newest)) if version(ver) > *oldest && version(ver) <= *newest => {}
            _ => problems.push(format!("{at}: since.{agent} {ver} is not after the oldest and up to the newest {agent} the table is checked against ({})", t["agents"][agent.as_str()])),
        }
    }
}

/// Every pi the table describes (0.73.1 and 1.6.0: src/protocol/version.rs `PI_PREVIOUS` and
/// `PI_NEWEST`, installed into the same cache as the real-pi suites), each against the rows it
/// has at its version: what 1.x added (`since`) must be absent from 0.73.1 and present in 1.6.0.
#[test]
fn the_table_matches_each_pi() {
    let mut problems = Vec::new();
    for v in table_versions("pi") {
        let Some(install) = pi::pi_at("the_table_matches_each_pi", &v) else { return };
        problems.extend(problems_of("pi", &v, &install.cli));
    }
    assert!(problems.is_empty(), "src/protocol/table.json disagrees with pi's declarations:\n  {}", problems.join("\n  "));
}

#[test]
fn the_table_matches_the_installed_omp() {
    let Some(install) = omp::omp("the_table_matches_the_installed_omp") else { return };
    let problems = problems_of("omp", omp::OMP_VERSION, &install.cli);
    assert!(problems.is_empty(), "src/protocol/table.json disagrees with omp's declarations:\n  {}", problems.join("\n  "));
}

/// The comparison itself: what a drifted table looks like is reported, field by field.
#[test]
fn drift_between_the_table_and_an_agent_is_reported() {
    let field = |name: &str, ty: &str, optional: bool| Field { name: name.into(), optional, ty: ty.into() };
    let mut d = Declared::default();
    d.commands.insert("set_mode".into(), vec![field("mode", "\"a\" | \"b\"", false), field("force", "boolean", true)]);
    d.responses.insert("set_mode".into(), Some(field("data", "{ mode: string } | null", false)));
    d.commands.insert("brand_new".into(), vec![]);
    d.events.insert("tick".into(), vec![field("count", "number", false)]);
    d.ui.insert("select".into(), vec![field("title", "string", false)]);
    let table = json!({
        "types": {},
        "commands": [{"name": "set_mode", "params": [{"name": "mode", "type": "enum(a,c)"}, {"name": "force", "type": "string"}],
                      "data": {"fields": [{"name": "mode", "type": "string"}]}},
                     {"name": "gone", "agents": ["pi"]}],
        "events": [{"name": "tick", "fields": [{"name": "count", "type": "integer", "optional": true}]}],
        "host_frames": [],
        "ui_methods": [{"name": "select", "agents": ["omp"]}]
    });
    let problems = check("pi", "1.0.0", &d, &table).join("\n");
    for expected in [
        "command set_mode.mode: the agent says `\"a\" | \"b\"`, the table `enum(a,c)`",
        "command set_mode.force: optional is true in the agent, false in the table",
        "command set_mode.force: the agent says `boolean`, the table `string`",
        "command set_mode: data nullable is true in the agent, not in the table",
        "the agent declares command `brand_new`, the table does not have it",
        "the table has command `gone` for pi, the agent does not declare it",
        "event tick.count: optional is false in the agent, true in the table",
        "the agent declares UI method `select`, the table does not have it for pi",
    ] {
        assert!(problems.contains(expected), "missing {expected:?} in:\n{problems}");
    }
    // The same table for omp: only the omp-only UI row and the shared rows count.
    assert!(!check("omp", "1.0.0", &d, &table).iter().any(|p| p.contains("gone")));
}

/// A `since` row, field or data is held absent from an older version and present in the others.
#[test]
fn a_since_is_held_against_each_version() {
    let field = |name: &str, ty: &str, optional: bool| Field { name: name.into(), optional, ty: ty.into() };
    let table = json!({
        "types": {},
        "commands": [{"name": "ping"},
                     {"name": "clear", "agents": ["pi"], "since": {"pi": "0.84.4"}},
                     {"name": "say", "params": [{"name": "quiet", "type": "boolean", "optional": true, "since": {"pi": "0.76.0"}}],
                      "data": {"since": {"pi": "0.99.0"}, "fields": [{"name": "disposition", "type": "string"}]}}],
        "events": [{"name": "settled", "agents": ["pi"], "since": {"pi": "0.80.4"}, "fields": [{"name": "aborted", "type": "boolean", "since": {"pi": "1.1.0"}}]}],
        "host_frames": [],
        "ui_methods": []
    });
    let old = |d: &mut Declared| {
        d.commands.insert("ping".into(), vec![]);
        d.commands.insert("say".into(), vec![]);
    };
    // 0.73.1 declares none of the later rows: no problem.
    let mut d = Declared::default();
    old(&mut d);
    assert_eq!(check("pi", "0.73.1", &d, &table), Vec::<String>::new());
    // 1.6.0 declares them all: no problem.
    let mut new = Declared::default();
    old(&mut new);
    new.commands.insert("clear".into(), vec![]);
    new.commands.insert("say".into(), vec![field("quiet", "boolean", true)]);
    new.responses.insert("say".into(), Some(field("data", "{ disposition: string }", false)));
    new.events.insert("settled".into(), vec![field("aborted", "boolean", false)]);
    assert_eq!(check("pi", "1.6.0", &new, &table), Vec::<String>::new());
    // 1.6.0's declarations read as 0.73.1's: every later row is reported, with its version.
    let problems = check("pi", "0.73.1", &new, &table).join("\n");
    for expected in [
        "pi 0.73.1: the agent declares command `clear`, the table has it since 0.84.4",
        "command say: the agent declares field `quiet: boolean`, the table does not have it",
        "command say: the agent's response has `data: { disposition: string }`, the table has none",
        "pi 0.73.1: the agent declares event `settled`, the table has it since 0.80.4",
    ] {
        assert!(problems.contains(expected), "missing {expected:?} in:\n{problems}");
    }
    // 0.73.1's read as 1.6.0's: every later row is missing.
    let problems = check("pi", "1.6.0", &d, &table).join("\n");
    for expected in ["pi 1.6.0: the table has command `clear` for pi, the agent does not declare it", "command say: the table has response data, the agent's response has none"] {
        assert!(problems.contains(expected), "missing {expected:?} in:\n{problems}");
    }
    // Between: the event without its later field.
    let mut mid = Declared::default();
    old(&mut mid);
    mid.commands.insert("clear".into(), vec![]);
    mid.events.insert("settled".into(), vec![]);
    mid.events.insert("settled".into(), vec![field("other", "string", false)]);
    let problems = check("pi", "1.0.4", &mid, &table).join("\n");
    assert!(problems.contains("event settled: the agent declares field `other: string`"), "{problems}");
    assert!(!problems.contains("aborted"), "aborted is since 1.1.0: {problems}");
}

/// A union held against the agent's payload declarations: a variant, a variant's field or a
/// fields type that drifted is reported.
#[test]
fn drift_in_a_payload_union_is_reported() {
    let d = Declared {
        payloads: "export type Ev = { type: \"a\"; delta: string } | { type: \"b\"; n?: number } | { type: \"new\" };\n\
                   export interface U { input: number; extra: string; cost: { total: number; more: number } }"
            .into(),
        ..Default::default()
    };
    let table = json!({
        "types": {
            "Ev": {"declared": ["Ev"], "union": {"tag": "type", "variants": {
                "a": {"name": "EvA", "fields": [{"name": "delta", "type": "integer"}]},
                "b": {"name": "EvB", "fields": [{"name": "n", "type": "integer"}]},
                "gone": {"name": "EvGone", "fields": []}
            }}},
            "U": {"declared": ["U"], "fields": [{"name": "input", "type": "integer"}, {"name": "cost", "type": "UCost"}]},
            "UCost": {"fields": [{"name": "total", "type": "number"}]},
            "Missing": {"declared": ["Nowhere"], "fields": []}
        },
        "commands": [], "events": [], "host_frames": [], "ui_methods": []
    });
    let problems = check("pi", "1.0.0", &d, &table).join("\n");
    for expected in [
        "type Ev.a.delta: the agent says `string`, the table `integer`",
        "type Ev.b.n: optional is true in the agent, false in the table",
        "the agent declares Ev variant `new`, the table does not have it",
        "the table has Ev variant `gone` for pi, the agent does not declare it",
        "type U: the agent declares field `extra: string`, the table does not have it",
        "type U.cost (UCost): the agent declares field `more: number`, the table does not have it",
        "type Missing is declared as `Nowhere`",
    ] {
        assert!(problems.contains(expected), "missing {expected:?} in:\n{problems}");
    }
}
