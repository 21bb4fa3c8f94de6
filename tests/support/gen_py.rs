//! The Python binding's typed protocol (`bindings/python/omprpc/_protocol_gen.py`), generated
//! from src/protocol/table.json: `TypedDict`s for the named types, command data, events and UI
//! requests, and `_GeneratedCommands`, the mixin with one method per command that no
//! hand-written method covers (`HAND_WRITTEN` below; `library` commands have their own entry
//! points). RpcClient lists the mixin after the hand-written ones.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::table::{pascal, who, Command, DataShape, Field, Frame, Table, Ty, TypeDef};

/// Commands with hand-written methods (`_commands.py`): omp_rpc's names, signatures and result
/// classes, or logic beyond sending the command. The generator leaves them out; the Python
/// drift test (tests/test_generated.py) checks each really is defined by hand.
pub const HAND_WRITTEN: &[(&str, &str)] = &[
    ("abort_bash", "omp_rpc's: returns None"),
    ("abort_retry", "omp_rpc's: returns None"),
    ("bash", "omp_rpc's: BashResult"),
    ("branch", "omp_rpc's: BranchResult"),
    ("clone", "pi's, shaped as omp_rpc's new_session: CancellationResult"),
    ("compact", "omp_rpc's: CompactionResult; 600 s default as omp_rpc"),
    ("cycle_model", "omp_rpc's: ModelCycleResult or None"),
    ("cycle_thinking_level", "omp_rpc's: ThinkingLevelCycleResult or None"),
    ("export_html", "omp_rpc's: accepts a Path, returns a Path, fails on a missing path"),
    ("fork", "pi's, shaped as omp_rpc's branch: BranchResult"),
    ("get_available_models", "omp_rpc's: a tuple of ModelInfo"),
    ("get_branch_messages", "omp_rpc's: a tuple of BranchMessage"),
    ("get_fork_messages", "pi's, shaped as omp_rpc's get_branch_messages: a tuple of BranchMessage"),
    ("get_last_assistant_text", "omp_rpc's: the text or None"),
    ("get_login_providers", "omp_rpc's: a tuple of provider objects"),
    ("get_messages", "omp_rpc's: walks get_messages_page under protocol v2, with fallbacks"),
    ("get_messages_page", "omp_rpc's MessagesPage, validated (get_messages pages with it)"),
    ("get_session_stats", "omp_rpc's: SessionStats"),
    ("get_state", "omp_rpc's: SessionState"),
    ("handoff", "None when nothing was saved; 600 s default as compact and login"),
    ("login", "omp_rpc's: 600 s default"),
    ("new_session", "omp_rpc's: CancellationResult"),
    ("set_auto_compaction", "omp_rpc's: returns None"),
    ("set_auto_retry", "omp_rpc's: returns None"),
    ("set_fast_mode", "omp_rpc's FastModeResult"),
    ("set_follow_up_mode", "omp_rpc's: returns None"),
    ("set_interrupt_mode", "omp_rpc's: returns None"),
    ("set_model", "omp_rpc's: positional model_id, ModelInfo, fails on an empty payload"),
    ("set_session_name", "omp_rpc's: returns None"),
    ("set_steering_mode", "omp_rpc's: returns None"),
    ("set_thinking_level", "omp_rpc's: its ThinkingLevel literal, returns None"),
    ("set_todos", "omp_rpc's: takes todo seeds and normalizes them, returns TodoPhase"),
    ("switch_session", "omp_rpc's: accepts a Path, CancellationResult"),
];

const KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del", "elif", "else", "except",
    "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try",
    "while", "with", "yield",
];

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_ascii_alphabetic()) && chars.all(|c| c == '_' || c.is_ascii_alphanumeric()) && !KEYWORDS.contains(&name)
}

/// A parameter name: `entryId` → `entry_id` (a keyword gets a trailing `_`).
fn snake(json_name: &str) -> String {
    let mut out = String::new();
    for c in json_name.chars() {
        if c.is_uppercase() {
            if !out.is_empty() {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(if c == '-' { '_' } else { c });
        }
    }
    if KEYWORDS.contains(&out.as_str()) {
        out.push('_');
    }
    out
}

fn literal(values: &[String]) -> String {
    format!("Literal[{}]", values.iter().map(|v| format!("{v:?}")).collect::<Vec<_>>().join(", "))
}

fn py_type(ty: &Ty) -> String {
    match ty {
        Ty::String => "str".into(),
        Ty::Integer => "int".into(),
        Ty::Number => "float".into(),
        Ty::Boolean => "bool".into(),
        Ty::Any => "Any".into(),
        Ty::Object => "dict[str, Any]".into(),
        Ty::Array(inner) => format!("list[{}]", py_type(inner)),
        Ty::Enum(values) => literal(values),
        Ty::Named(n) => n.clone(),
        Ty::OneOf(all) => all.iter().map(py_type).collect::<Vec<_>>().join(" | "),
    }
}

/// A field's annotation: `T | None` when nullable, `NotRequired[…]` when it may be missing.
fn field_type(f: &Field) -> String {
    let mut t = py_type(&f.ty);
    if f.nullable {
        t = format!("{t} | None");
    }
    if f.optional {
        t = format!("NotRequired[{t}]");
    }
    t
}


/// A `TypedDict`: the class form, or the functional one when a key is not an identifier (its
/// annotations then quoted, so that nothing is evaluated at import).
fn typed_dict(out: &mut String, name: &str, doc: &str, fields: &[(String, String)]) {
    if fields.iter().all(|(n, _)| is_identifier(n)) {
        let _ = writeln!(out, "\nclass {name}(TypedDict):\n    \"\"\"{doc}\"\"\"\n");
        for (n, t) in fields {
            let _ = writeln!(out, "    {n}: {t}");
        }
        out.push('\n');
    } else {
        let _ = writeln!(out, "\n#: {doc}\n{name} = TypedDict(\n    {name:?},\n    {{");
        for (n, t) in fields {
            let _ = writeln!(out, "        {n:?}: \"{}\",", t.replace('"', "'"));
        }
        let _ = writeln!(out, "    }},\n)\n");
    }
}

fn plain_fields(fields: &[Field]) -> Vec<(String, String)> {
    fields.iter().map(|f| (f.name.clone(), field_type(f))).collect()
}

/// The name and annotation of what a command's method returns, registering the `TypedDict` of
/// inline data.
fn result_type(c: &Command, types: &BTreeMap<String, TypeDef>) -> Option<(String, bool, bool)> {
    c.data.as_ref().map(|d| {
        let (ty, is_object) = match &d.shape {
            DataShape::Fields(_) => (format!("{}Result", pascal(&c.name)), true),
            DataShape::Type(ty) => (py_type(ty), matches!(ty, Ty::Named(n) if matches!(types.get(n), Some(TypeDef::Fields(_)) | Some(TypeDef::Variant { .. })))),
        };
        (ty, is_object, d.nullable || d.optional)
    })
}

fn command_method(out: &mut String, c: &Command, types: &BTreeMap<String, TypeDef>) {
    let required: Vec<&Field> = c.params.iter().filter(|f| !f.optional).collect();
    let optional: Vec<&Field> = c.params.iter().filter(|f| f.optional).collect();
    let mut args = vec!["self".to_string()];
    for f in &required {
        assert!(!f.nullable, "{}: a required nullable parameter ({}) cannot be sent: None is left out", c.name, f.name);
        args.push(format!("{}: {}", snake(&f.name), py_type(&f.ty)));
    }
    args.push("*".into());
    for f in &optional {
        args.push(format!("{}: {} | None = None", snake(&f.name), py_type(&f.ty)));
    }
    args.push("timeout: float | None = LIBRARY_DEFAULT".into());
    for f in &c.params {
        assert!(is_identifier(&f.name) && snake(&f.name) != "timeout" && !f.name.starts_with('_'), "{}: parameter {} needs another spelling", c.name, f.name);
    }
    let result = result_type(c, types);
    let returns = match &result {
        None => "None".to_string(),
        Some((ty, _, true)) => format!("{ty} | None"),
        Some((ty, _, false)) => ty.clone(),
    };
    let one_line = format!("    def {}({}) -> {returns}:", c.name, args.join(", "));
    if one_line.len() <= 120 {
        let _ = writeln!(out, "{one_line}");
    } else {
        let _ = writeln!(out, "    def {}(\n        {},\n    ) -> {returns}:", c.name, args.join(",\n        "));
    }
    let doc = match &result {
        None => "; returns nothing.".to_string(),
        Some((_, _, true)) => ": its data, None when the agent sends none.".to_string(),
        Some(_) => ": its data as the agent sent it.".to_string(),
    };
    let _ = writeln!(out, "        \"\"\"``{}`` ({}){doc}\"\"\"", c.name, who(&c.agents, &c.since));
    // Data that is an object (or none) goes through _request, which checks it is one (None: {});
    // other data through _request_data, as it came.
    let via_request = matches!(&result, None | Some((_, true, false)));
    let mut items = vec![format!("{:?}", c.name)];
    if via_request {
        items.push("_timeout=timeout".into());
        items.extend(c.params.iter().map(|f| format!("{}={}", f.name, snake(&f.name))));
    } else {
        if !c.params.is_empty() {
            items.push(format!("{{{}}}", c.params.iter().map(|f| format!("{:?}: {}", f.name, snake(&f.name))).collect::<Vec<_>>().join(", ")));
        }
        items.push("_timeout=timeout".into());
    }
    let function = if via_request { "_request" } else { "_request_data" };
    let mut send = format!("self.{function}({})", items.join(", "));
    if send.len() > 100 {
        send = format!("self.{function}(\n            {},\n        )", items.join(",\n            "));
    }
    match &result {
        None => {
            let _ = writeln!(out, "        {send}\n");
        }
        Some((ty, is_object, nullable)) => {
            let _ = writeln!(out, "        data = {send}");
            let value = if *is_object && *nullable { "data if isinstance(data, dict) else None" } else { "data" };
            let ty = if *nullable { format!("{ty} | None") } else { ty.clone() };
            let _ = writeln!(out, "        return cast({ty:?}, {value})\n");
        }
    }
}

fn frame_fields(head: Vec<(String, String)>, f: &Frame) -> Vec<(String, String)> {
    let mut fields = head;
    fields.extend(plain_fields(&f.fields));
    fields
}

fn union(out: &mut String, name: &str, doc: &str, members: &[String]) {
    let _ = writeln!(out, "#: {doc}\n{name}: TypeAlias = Union[\n{}]\n", members.iter().map(|m| format!("    {m},\n")).collect::<String>());
}

fn tuple(out: &mut String, name: &str, doc: &str, items: &[String]) {
    let _ = writeln!(out, "#: {doc}\n{name}: Final[tuple[str, ...]] = (\n{})\n", items.iter().map(|i| format!("    {i:?},\n")).collect::<String>());
}

pub fn generate(t: &Table) -> String {
    let types = &t.types;
    let commands: BTreeMap<&str, &Command> = t.commands.iter().map(|c| (c.name.as_str(), c)).collect();
    for (name, _) in HAND_WRITTEN {
        let c = commands.get(name).unwrap_or_else(|| panic!("HAND_WRITTEN names {name}, not a command of the table"));
        assert!(c.library.is_none(), "HAND_WRITTEN names {name}, a library command (the bindings' own entry points send it)");
    }
    let hand: BTreeSet<&str> = HAND_WRITTEN.iter().map(|(n, _)| *n).collect();
    assert_eq!(hand.len(), HAND_WRITTEN.len(), "HAND_WRITTEN names a command twice");
    let generated: Vec<&Command> = t.commands.iter().filter(|c| c.library.is_none() && !hand.contains(c.name.as_str())).collect();
    let mut names = BTreeSet::new();
    let mut claim = |n: String| {
        assert!(names.insert(n.clone()), "two generated Python names are {n}");
        n
    };

    let mut out = String::new();
    out.push_str(
        "# Code generated by tests/generated.rs (tests/support/gen_py.rs) from src/protocol/table.json; DO NOT EDIT.\n# Regenerate with `make generate`.\n",
    );
    let _ = writeln!(
        out,
        "\"\"\"The protocol table as Python types: a ``TypedDict`` per named type, command data, event\nand UI request, and :class:`_GeneratedCommands`, RpcClient's methods for the commands no\nhand-written method covers (:data:`HAND_WRITTEN`). Each returns the command's ``data`` as the\nagent sent it, typed by the table.\n\nThe table describes {}.\nA row an agent has only from some version on says since which.\"\"\"\n",
        t.agents
    );
    out.push_str(
        "from __future__ import annotations\n\nfrom typing import Any, Final, Literal, TypeAlias, TypedDict, Union, cast\n\nfrom ._base import _ClientBase\nfrom ._common import LIBRARY_DEFAULT\nfrom .protocol import NotRequired  # the one Python 3.10 fallback\n\n",
    );

    // The command lists.
    out.push_str("#: Commands with hand-written methods (omp_rpc's shapes, or logic of their own), and why.\nHAND_WRITTEN: Final[dict[str, str]] = {\n");
    for (name, why) in HAND_WRITTEN {
        let _ = writeln!(out, "    {name:?}: {why:?},");
    }
    out.push_str("}\n\n#: Commands the library sends or wraps itself (their own entry points), and why.\nLIBRARY: Final[dict[str, str]] = {\n");
    for c in &t.commands {
        if let Some(why) = &c.library {
            let _ = writeln!(out, "    {:?}: {why:?},", c.name);
        }
    }
    out.push_str("}\n\n");
    tuple(&mut out, "GENERATED", "Commands whose methods are generated (:class:`_GeneratedCommands`).", &generated.iter().map(|c| c.name.clone()).collect::<Vec<_>>());

    // The named types: their own module (_payloads_gen), which protocol.py re-exports without
    // importing the client classes this one needs.
    out.push_str("# --- named types (_payloads_gen) ----------------------------------------------------------\n\nfrom ._payloads_gen import *  # noqa: E402,F403\n\n");
    for name in types.keys() {
        claim(name.clone());
    }
    for (name, def) in types {
        if let TypeDef::Union { tag, .. } = def {
            claim(format!("{}_{}S", snake(name).to_uppercase(), tag.to_uppercase()));
        }
    }

    // Command data.
    out.push_str("\n# --- command data --------------------------------------------------------------------------\n");
    for c in &t.commands {
        if let Some(d) = &c.data {
            if let DataShape::Fields(fields) = &d.shape {
                let name = claim(format!("{}Result", pascal(&c.name)));
                typed_dict(&mut out, &name, &format!("The data of ``{}``'s response ({}).", c.name, who(&d.agents, &d.since)), &plain_fields(fields));
            }
        }
    }

    // Events.
    out.push_str("\n# --- events --------------------------------------------------------------------------------\n");
    let delivered: Vec<&Frame> = t.events.iter().filter(|e| !e.core).collect();
    let mut event_names = Vec::new();
    for e in &delivered {
        let name = claim(format!("{}Event", pascal(&e.name)));
        let head = vec![("type".to_string(), format!("Literal[{:?}]", e.name))];
        typed_dict(&mut out, &name, &format!("The ``{}`` event ({}).", e.name, who(&e.agents, &e.since)), &frame_fields(head, e));
        event_names.push(name);
    }
    out.push('\n');
    union(&mut out, &claim("ProtocolEvent".into()), "An event of the table, told apart by ``type`` (``on_event_payload`` delivers them).", &event_names);
    tuple(&mut out, &claim("PROTOCOL_EVENT_TYPES".into()), "The ``type`` of every event of the table the library delivers.", &delivered.iter().map(|e| e.name.clone()).collect::<Vec<_>>());

    // UI requests.
    out.push_str("# --- UI requests ---------------------------------------------------------------------------\n");
    let mut ui_names = Vec::new();
    for m in &t.ui_methods {
        let name = claim(format!("Ui{}Request", pascal(&m.name)));
        let head = vec![
            ("type".to_string(), "Literal[\"extension_ui_request\"]".to_string()),
            ("id".to_string(), "str".to_string()),
            ("method".to_string(), format!("Literal[{:?}]", m.name)),
        ];
        typed_dict(&mut out, &name, &format!("The ``{}`` UI request ({}).", m.name, who(&m.agents, &m.since)), &frame_fields(head, m));
        ui_names.push(name);
    }
    out.push('\n');
    union(&mut out, &claim("ProtocolUiRequest".into()), "A UI request of the table, told apart by ``method``.", &ui_names);
    tuple(&mut out, &claim("UI_METHODS".into()), "The ``method`` of every UI request of the table.", &t.ui_methods.iter().map(|m| m.name.clone()).collect::<Vec<_>>());

    // The mixin.
    out.push_str("# --- commands ------------------------------------------------------------------------------\n\n\n");
    let _ = writeln!(
        out,
        "class _GeneratedCommands(_ClientBase):\n    \"\"\"RpcClient's methods for the commands of :data:`GENERATED`: required parameters positional,\n    optional ones keyword-only (None: not sent), ``timeout=`` in seconds (LIBRARY_DEFAULT: the\n    client's ``request_timeout``; None: no deadline). An agent without the command refuses it:\n    RpcCommandError.\"\"\"\n"
    );
    for c in &generated {
        command_method(&mut out, c, types);
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

/// `bindings/python/omprpc/_payloads_gen.py`: the table's named types (aliases, a `TypedDict`
/// per fields type and per union variant, each union's alias and tag tuple). A module of its
/// own, importing nothing of the client, so that protocol.py can re-export the payload types.
pub fn generate_payloads(t: &Table) -> String {
    let types = &t.types;
    let claim = |n: String| n;
    let mut out = String::new();
    out.push_str("# Code generated by tests/generated.rs (tests/support/gen_py.rs) from src/protocol/table.json; DO NOT EDIT.\n# Regenerate with `make generate`.\n");
    out.push_str("\"\"\"The protocol table's named types: messages, content blocks, assistant message events, usage,\ntool results and the rest, as ``TypedDict``s (omprpc.protocol re-exports the payload ones).\"\"\"\n\n");
    out.push_str("from __future__ import annotations\n\nfrom typing import Any, Final, Literal, TypeAlias, TypedDict, Union\n\nfrom .protocol import NotRequired  # the one Python 3.10 fallback\n\n");
    for (name, def) in types {
        let (ty, doc) = match def {
            TypeDef::Fields(_) | TypeDef::Union { .. } | TypeDef::Variant { .. } => continue,
            TypeDef::Enum(values) => (literal(values), "One of these (a newer agent may send another)"),
            TypeDef::Str => ("str".to_string(), "A string with open-ended values"),
            TypeDef::Json => ("Any".to_string(), "JSON the table does not describe"),
        };
        let _ = writeln!(out, "#: {doc}.\n{}: TypeAlias = {ty}", claim(name.clone()));
    }
    for (name, def) in types {
        match def {
            TypeDef::Fields(fields) => typed_dict(&mut out, &claim(name.clone()), "A type of the protocol table.", &plain_fields(fields)),
            TypeDef::Variant { union, tag, value, fields } => {
                let mut all = vec![(tag.clone(), format!("Literal[{value:?}]"))];
                all.extend(plain_fields(fields));
                typed_dict(&mut out, &claim(name.clone()), &format!("The ``{value}`` {union}."), &all);
            }
            _ => {}
        }
    }
    // Unions: the TypedDicts of their variants, told apart by the tag (``if ev["type"] ==
    // "text_delta"`` narrows). A tag the table does not name arrives as the dict the agent sent:
    // nothing here validates, so a newer agent's variant passes through, never an error.
    for (name, def) in types {
        if let TypeDef::Union { tag, variants } = def {
            let members: Vec<String> = variants.iter().map(|v| v.name.clone()).collect();
            union(&mut out, &claim(name.clone()), &format!("One of the {name} variants, told apart by ``{tag}`` (another ``{tag}``: the dict as sent)."), &members);
            tuple(&mut out, &claim(format!("{}_{}S", snake(name).to_uppercase(), tag.to_uppercase())), &format!("The ``{tag}`` of every {name} variant of the table."), &variants.iter().map(|v| v.value.clone()).collect::<Vec<_>>());
        }
    }

    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}
