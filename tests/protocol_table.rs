//! `src/protocol/table.json` — the one description of the protocol the bindings' typed
//! commands and events are generated from — against the agents' own type declarations.
//!
//! pi ships its RPC types in its npm package (`dist/modes/rpc/rpc-types.d.ts`, the events in
//! `dist/core/agent-session.d.ts` and pi-agent-core's `dist/types.d.ts`); omp ships its
//! TypeScript sources (`src/modes/rpc/rpc-types.ts`, `src/session/agent-session-events.ts`,
//! pi-agent-core's `src/types.ts`). For the installed pi (`cargo test`) and omp
//! (`make test-omp`: opt-in, like tests/real_omp.rs) this test fails when the agent declares
//! a command, a parameter, a response `data`, an event, an event field or a UI method the table
//! does not have for that agent — or when the table claims one the agent does not declare —
//! and when a declared primitive type (string, number, boolean, a literal union) disagrees
//! with the table's.
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
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading the agent's declarations {}: {e}", path.display()))
}

fn without(fields: Vec<Field>, names: &[&str]) -> Vec<Field> {
    fields.into_iter().filter(|f| !names.contains(&f.name.as_str())).collect()
}

/// The object members of union `name` in `src`, keyed by their `key` literal; members that
/// are not object types are resolved through `resolve` (another alias, `Exclude<…>`, `Extract<…> & {…}`).
fn members(src: &str, name: &str, key: &str, resolve: &dyn Fn(&str) -> Vec<(String, Vec<Field>)>) -> Vec<(String, Vec<Field>)> {
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
/// the members of `A` (`base`), and a bare `A` to all of them.
fn resolve_event_member(member: &str, base_name: &str, base: &[(String, Vec<Field>)]) -> Vec<(String, Vec<Field>)> {
    let m = member.trim().trim_start_matches('(').trim_end_matches(')').trim();
    if m == base_name {
        return base.to_vec();
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

fn declared(agent: &str, cli: &Path) -> Declared {
    // `<package>/dist/cli.js`
    let pkg = cli.parent().and_then(Path::parent).expect("the agent's cli.js sits in <package>/dist");
    let (rpc_types, session_events, session_alias, core_types, rpc_sources) = match agent {
        "pi" => (
            pkg.join("dist/modes/rpc/rpc-types.d.ts"),
            pkg.join("dist/core/agent-session.d.ts"),
            "AgentSessionEvent",
            sibling_package(pkg, "@mariozechner", "pi-agent-core").join("dist/types.d.ts"),
            vec![pkg.join("dist/modes/rpc/rpc-mode.js")],
        ),
        _ => (
            pkg.join("src/modes/rpc/rpc-types.ts"),
            pkg.join("src/session/agent-session-events.ts"),
            "AgentSessionEvent",
            sibling_package(pkg, "@oh-my-pi", "pi-agent-core").join("src/types.ts"),
            std::fs::read_dir(pkg.join("src/modes/rpc")).unwrap().flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "ts")).collect(),
        ),
    };
    let rpc = read(&rpc_types);
    let none = |m: &str| -> Vec<(String, Vec<Field>)> { panic!("cannot read the union member {m}") };
    let mut d = Declared::default();
    for (name, fields) in members(&rpc, "RpcCommand", "type", &none) {
        d.commands.insert(name, without(fields, &["id", "type"]));
    }
    for (name, fields) in members(&rpc, "RpcResponse", "command", &none) {
        d.responses.insert(name, fields.into_iter().find(|f| f.name == "data"));
    }
    let core = members(&read(&core_types), "AgentEvent", "type", &none);
    for (ty, fields) in members(&read(&session_events), session_alias, "type", &|m| resolve_event_member(m, "AgentEvent", &core)) {
        d.events.insert(ty, without(fields, &["type"]));
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
    row.get("agents").and_then(Value::as_array).is_none_or(|a| a.iter().any(|x| x == agent))
}

/// The table's fields of a row for one agent: name → (type, optional).
fn table_fields(row: &Value, key: &str, agent: &str) -> BTreeMap<String, (String, bool)> {
    row.get(key)
        .and_then(Value::as_array)
        .map(|fs| {
            fs.iter()
                .filter(|f| has_agent(f, agent))
                .map(|f| {
                    let name = f["name"].as_str().unwrap().to_string();
                    (name, (f["type"].as_str().unwrap_or("any").to_string(), f["optional"].as_bool().unwrap_or(false)))
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

fn check(agent: &str, d: &Declared, t: &Value) -> Vec<String> {
    let types = &t["types"];
    let mut problems = Vec::new();
    let rows = |key: &str| -> BTreeMap<String, Value> {
        t[key].as_array().unwrap().iter().filter(|r| has_agent(r, agent)).map(|r| (r["name"].as_str().unwrap().to_string(), r.clone())).collect()
    };
    let commands = rows("commands");
    for (name, fields) in &d.commands {
        let Some(row) = commands.get(name) else {
            problems.push(format!("{agent}: the agent declares command `{name}`, the table does not have it for {agent}"));
            continue;
        };
        compare_fields(&format!("command {name}"), agent, fields, &table_fields(row, "params", agent), types, &mut problems);
        let data = d.responses.get(name);
        let table_data = row.get("data").filter(|v| !v.is_null()).filter(|v| has_agent(v, agent));
        match (data.and_then(Option::as_ref), table_data) {
            (None, None) => {}
            (Some(f), None) => problems.push(format!("{agent}: command {name}: the agent's response has `data: {}`, the table has none", f.ty)),
            (None, Some(_)) => problems.push(format!("{agent}: command {name}: the table has response data, the agent's response has none")),
            (Some(f), Some(td)) => {
                let optional = td["optional"].as_bool().unwrap_or(false);
                if optional != f.optional {
                    problems.push(format!("{agent}: command {name}: data optional is {} in the agent, {optional} in the table", f.optional));
                }
                // An inline object type's fields must match the table's.
                let ts = f.ty.trim_end_matches(" | null");
                if let Some(fields) = ts_decls::object_fields(ts) {
                    compare_fields(&format!("command {name} data"), agent, &fields, &table_fields(td, "fields", agent), types, &mut problems);
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
            problems.push(format!("{agent}: the table has command `{name}` for {agent}, the agent does not declare it"));
        }
    }
    // Agent → host frames and the host → agent frames declared next to them.
    let mut events = rows("events");
    events.extend(rows("host_frames"));
    for (ty, fields) in &d.events {
        let Some(row) = events.get(ty) else {
            problems.push(format!("{agent}: the agent declares event `{ty}`, the table does not have it for {agent}"));
            continue;
        };
        // Frames the agent writes as untyped literals carry no declared fields to compare.
        if !fields.is_empty() {
            compare_fields(&format!("event {ty}"), agent, fields, &table_fields(row, "fields", agent), types, &mut problems);
        }
    }
    for ty in events.keys() {
        if !d.events.contains_key(ty) {
            problems.push(format!("{agent}: the table has event `{ty}` for {agent}, the agent does not declare it"));
        }
    }
    let ui = rows("ui_methods");
    for (method, fields) in &d.ui {
        match ui.get(method) {
            None => problems.push(format!("{agent}: the agent declares UI method `{method}`, the table does not have it for {agent}")),
            Some(row) => compare_fields(&format!("UI method {method}"), agent, fields, &table_fields(row, "fields", agent), types, &mut problems),
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
        if !has_agent(ty, agent) {
            continue;
        }
        match d.interfaces.get(decl) {
            None => problems.push(format!("{agent}: table type {name} is declared as `{decl}`, the agent has no such interface")),
            Some(fields) => compare_fields(&format!("type {name}"), agent, fields, &table_fields(ty, "fields", agent), &t["types"], &mut problems),
        }
    }
    for decl in d.interfaces.keys() {
        if !types.values().any(|ty| ty["declared_as"] == decl.as_str() && has_agent(ty, agent)) {
            problems.push(format!("{agent}: the agent declares interface `{decl}`, no table type is declared as it for {agent}"));
        }
    }
    problems
}

fn assert_matches(agent: &str, cli: &Path) {
    let d = declared(agent, cli);
    dump(agent, &d);
    assert!(d.commands.len() > 20 && d.events.len() > 10 && d.ui.len() > 5, "{agent}: suspiciously few declarations read: {d:?}");
    let problems = check(agent, &d, &table());
    assert!(problems.is_empty(), "src/protocol/table.json disagrees with the installed {agent}'s declarations:\n  {}", problems.join("\n  "));
}

/// Every type a row names resolves; names are unique per section; agents are pi and omp.
#[test]
fn the_table_is_well_formed() {
    let t = table();
    let types = t["types"].as_object().expect("types is an object");
    let mut problems = Vec::new();
    let known = |ty: &str| -> bool {
        let base = ty.trim_end_matches("[]");
        matches!(base, "string" | "integer" | "number" | "boolean" | "any" | "object") || base.starts_with("enum(") || types.contains_key(base)
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
        }
    }
    for (name, ty) in types {
        let kinds = ["fields", "enum", "string", "json"].iter().filter(|k| ty.get(**k).is_some()).count();
        if kinds != 1 {
            problems.push(format!("types.{name}: exactly one of fields / enum / string / json"));
        }
        each_field(ty, &format!("types.{name}"), &mut |at, field| {
            let ty = field["type"].as_str().unwrap_or("");
            if !known(ty) {
                problems.push(format!("{at}: unknown type `{ty}`"));
            }
        });
    }
    // The versions the table was checked against are the ones the suites run (pi: the previous
    // one, see the_table_matches_the_installed_pi).
    if t["agents"]["pi"] != omprpc::protocol::version::PI_PREVIOUS.to_string().as_str() || t["agents"]["omp"] != omp::OMP_VERSION {
        problems.push(format!("agents: {} — the suites check pi {} and omp {}", t["agents"], omprpc::protocol::version::PI_PREVIOUS, omp::OMP_VERSION));
    }
    assert!(problems.is_empty(), "src/protocol/table.json:\n  {}", problems.join("\n  "));
}

/// The table holds pi 0.73.1's protocol (src/protocol/version.rs `PI_PREVIOUS`); what 1.x added
/// (its new commands, events and response fields) is not in it yet, so it is checked against
/// 0.73.1's declarations. The only pi of this test binary: the version is set before anything
/// reads it.
#[test]
fn the_table_matches_the_installed_pi() {
    std::env::set_var("OMPRPC_PI_VERSION", "previous");
    let Some(install) = pi::pi("the_table_matches_the_installed_pi") else { return };
    assert_matches("pi", &install.cli);
}

#[test]
fn the_table_matches_the_installed_omp() {
    let Some(install) = omp::omp("the_table_matches_the_installed_omp") else { return };
    assert_matches("omp", &install.cli);
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
    let problems = check("pi", &d, &table).join("\n");
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
    assert!(!check("omp", &d, &table).iter().any(|p| p.contains("gone")));
}
