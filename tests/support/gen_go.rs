//! The Go binding's typed commands, events and UI requests (`bindings/go/protocol_gen.go`),
//! generated from src/protocol/table.json. The output goes through `gofmt` (Go's own
//! formatter fixes the alignment the drift test compares).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::table::{pascal, reach, who, Command, DataShape, Field, Frame, Table, Ty, TypeDef};

/// Go names for JSON member names: `modelId` → `ModelID`, `launchUrl` → `LaunchURL`.
fn go_name(json_name: &str) -> String {
    let mut p = pascal(json_name);
    for (from, to) in [("Id", "ID"), ("Url", "URL"), ("Uri", "URI"), ("Html", "HTML"), ("Ui", "UI")] {
        let mut out = String::new();
        let mut rest = p.as_str();
        while let Some(at) = rest.find(from) {
            let after = &rest[at + from.len()..];
            let boundary = after.is_empty() || after.starts_with(|c: char| c.is_uppercase() || c.is_ascii_digit());
            out.push_str(&rest[..at]);
            out.push_str(if boundary { to } else { from });
            rest = after;
        }
        out.push_str(rest);
        p = out;
    }
    p
}

/// Go names of table types that a hand-written Go type already has (helpers.go's Usage is
/// the summary's usage).
const GO_RENAMES: &[(&str, &str)] = &[("Usage", "MessageUsage"), ("UsageCost", "MessageUsageCost")];

fn go_type_name(name: &str) -> String {
    GO_RENAMES.iter().find(|(from, _)| *from == name).map_or_else(|| name.to_string(), |(_, to)| to.to_string())
}

fn go_type(ty: &Ty, types: &BTreeMap<String, TypeDef>) -> String {
    match ty {
        Ty::OneOf(_) => "json.RawMessage".into(),
        Ty::String | Ty::Enum(_) => "string".into(),
        Ty::Integer => "int64".into(),
        Ty::Number => "float64".into(),
        Ty::Boolean => "bool".into(),
        Ty::Any | Ty::Object => "json.RawMessage".into(),
        Ty::Array(inner) => format!("[]{}", go_type(inner, types)),
        Ty::Named(n) => match types.get(n) {
            Some(TypeDef::Json) => "json.RawMessage".into(),
            // A union is held by its …Value (the interface alone cannot be decoded into).
            Some(TypeDef::Union { .. }) => format!("{}Value", go_type_name(n)),
            _ => go_type_name(n),
        },
    }
}

/// A struct field: pointers for nullable values and for optional structs (nil: absent).
fn field_type(f: &Field, types: &BTreeMap<String, TypeDef>) -> String {
    let base = go_type(&f.ty, types);
    let is_struct = matches!(&f.ty, Ty::Named(n) if matches!(types.get(n), Some(TypeDef::Fields(_)) | Some(TypeDef::Variant { .. })));
    let is_raw = base == "json.RawMessage" || base.starts_with("[]");
    if !is_raw && (f.nullable || (f.optional && is_struct)) {
        format!("*{base}")
    } else {
        base
    }
}

fn struct_fields(out: &mut String, fields: &[Field], types: &BTreeMap<String, TypeDef>) {
    for f in fields {
        let omit = if f.optional { ",omitempty" } else { "" };
        let _ = writeln!(out, "\t{} {} `json:\"{}{omit}\"`", go_name(&f.name), field_type(f, types), f.name);
    }
}


/// A struct that keeps the object it was decoded from in Raw.
fn raw_keeping_struct(out: &mut String, name: &str, doc: &str, fields: &[Field], types: &BTreeMap<String, TypeDef>) {
    let _ = writeln!(out, "// {name} {doc}\ntype {name} struct {{");
    struct_fields(out, fields, types);
    let _ = writeln!(out, "\t// Raw is the object as the agent sent it, members the table does not name included.\n\tRaw json.RawMessage `json:\"-\"`\n}}\n");
    let _ = writeln!(
        out,
        "// UnmarshalJSON decodes the named members and keeps the object in Raw.\nfunc (v *{name}) UnmarshalJSON(b []byte) error {{\n\ttype plain {name}\n\tif err := json.Unmarshal(b, (*plain)(v)); err != nil {{\n\t\treturn err\n\t}}\n\tv.Raw = append(json.RawMessage(nil), b...)\n\treturn nil\n}}\n"
    );
}

fn command_method(out: &mut String, c: &Command, types: &BTreeMap<String, TypeDef>, result_types: &mut Vec<(String, Vec<Field>, String)>) {
    let name = go_name(&c.name);
    let required: Vec<&Field> = c.params.iter().filter(|f| !f.optional).collect();
    let optional: Vec<&Field> = c.params.iter().filter(|f| f.optional).collect();
    let mut args = vec!["ctx context.Context".to_string()];
    for f in &required {
        args.push(format!("{} {}", arg_name(&f.name), field_type(f, types)));
    }
    if !optional.is_empty() {
        args.push(format!("opts *{name}Options"));
    }
    let result = c.data.as_ref().map(|d| {
        let ty = match &d.shape {
            DataShape::Fields(fields) => {
                let rname = format!("{name}Result");
                result_types.push((rname.clone(), fields.clone(), format!("is the data of {}'s response ({}).", c.name, who(&d.agents, &d.since))));
                format!("*{rname}")
            }
            DataShape::Type(ty) => {
                let base = go_type(ty, types);
                let is_struct = matches!(ty, Ty::Named(n) if matches!(types.get(n), Some(TypeDef::Fields(_))));
                if is_struct {
                    format!("*{base}")
                } else {
                    base
                }
            }
        };
        (ty, d.nullable || d.optional)
    });
    let returns = match &result {
        Some((ty, _)) => format!("({ty}, error)"),
        None => "error".into(),
    };
    let mut doc = format!("// {name} sends {} ({})", c.name, who(&c.agents, &c.since));
    match &result {
        Some((_, true)) => doc.push_str(" and returns its data: nil (or JSON null) when the agent sends none."),
        Some(_) => doc.push_str(" and returns its data."),
        None => doc.push('.'),
    }
    // Optional params that all came later than the command (`since` on each: bash's
    // excludeFromContext) keep the method's signature: they go through {name}WithOptions.
    let later_options = c.since.is_empty() && !optional.is_empty() && optional.iter().all(|f| !f.since.is_empty());
    if later_options {
        let mut plain_args = args.clone();
        plain_args.pop();
        let names: Vec<String> = required.iter().map(|f| arg_name(&f.name)).collect();
        let call = format!("c.{name}WithOptions({})", ["ctx".to_string()].into_iter().chain(names).chain(["nil".to_string()]).collect::<Vec<_>>().join(", "));
        let _ = writeln!(out, "{doc}\nfunc (c *Client) {name}({}) {returns} {{\n\treturn {call}\n}}\n", plain_args.join(", "));
        let added: Vec<String> = optional.iter().map(|f| format!("{}: {}", f.name, crate::table::since_text(&f.since).unwrap_or_default())).collect();
        let _ = writeln!(out, "// {name}WithOptions sends {} with its optional parameters ({}); nil opts sends none.", c.name, added.join("; "));
        let _ = writeln!(out, "func (c *Client) {name}WithOptions({}) {returns} {{", args.join(", "));
    } else {
        let _ = writeln!(out, "{doc}\nfunc (c *Client) {name}({}) {returns} {{", args.join(", "));
    }
    let params = if c.params.is_empty() {
        "nil".to_string()
    } else {
        let _ = writeln!(out, "\tparams := struct {{");
        for f in &required {
            let _ = writeln!(out, "\t\t{} {} `json:\"{}\"`", go_name(&f.name), field_type(f, types), f.name);
        }
        if !optional.is_empty() {
            let _ = writeln!(out, "\t\t*{name}Options");
        }
        let _ = write!(out, "\t}}{{");
        let mut inits: Vec<String> = required.iter().map(|f| arg_name(&f.name)).collect();
        if !optional.is_empty() {
            inits.push("opts".into());
        }
        let _ = writeln!(out, "{}}}", inits.join(", "));
        "params".to_string()
    };
    match &result {
        Some((ty, _)) => {
            let _ = writeln!(out, "\tvar out {ty}\n\terr := c.command(ctx, {:?}, {params}, &out)\n\treturn out, err\n}}\n", c.name);
        }
        None => {
            let _ = writeln!(out, "\treturn c.command(ctx, {:?}, {params}, nil)\n}}\n", c.name);
        }
    }
    if !optional.is_empty() {
        let fields: Vec<Field> = optional.iter().map(|f| (*f).clone()).collect();
        let _ = writeln!(out, "// {name}Options are {}'s optional parameters.\ntype {name}Options struct {{", c.name);
        struct_fields(out, &fields, types);
        let _ = writeln!(out, "}}\n");
    }
}

/// A parameter name: the JSON name in lowerCamel with Go initialisms (`modelID`).
fn arg_name(json_name: &str) -> String {
    let g = go_name(json_name);
    let lower: String = match g.chars().next() {
        Some(first) if first.is_uppercase() => first.to_lowercase().chain(g[first.len_utf8()..].chars()).collect(),
        _ => g,
    };
    match lower.as_str() {
        "type" | "range" | "func" | "interface" | "map" | "chan" | "go" | "select" | "default" => format!("{lower}_"),
        _ => lower,
    }
}

fn frame_struct(out: &mut String, suffix: &str, f: &Frame, types: &BTreeMap<String, TypeDef>, doc: &str) -> String {
    let name = format!("{}{suffix}", go_name(&f.name));
    let _ = writeln!(out, "// {name} {doc} ({}).\ntype {name} struct {{", who(&f.agents, &f.since));
    struct_fields(out, &f.fields, types);
    let _ = writeln!(out, "\t// Raw is the frame verbatim.\n\tRaw json.RawMessage `json:\"-\"`\n}}\n");
    name
}

pub fn generate(t: &Table) -> String {
    let types = &t.types;
    let mut out = String::new();
    out.push_str("// Code generated by tests/generated.rs from src/protocol/table.json; DO NOT EDIT.\n// Regenerate with `make generate`.\n\npackage omprpc\n\nimport (\n\t\"context\"\n\t\"encoding/json\"\n)\n\n");

    // Commands.
    out.push_str("// --- commands ---------------------------------------------------------------------------\n\n");
    let mut result_types = Vec::new();
    let mut reached = Vec::new();
    for c in t.commands.iter().filter(|c| c.library.is_none()) {
        command_method(&mut out, c, types, &mut result_types);
        for f in &c.params {
            reach(&f.ty, types, &mut reached);
        }
        if let Some(d) = &c.data {
            match &d.shape {
                DataShape::Type(ty) => reach(ty, types, &mut reached),
                DataShape::Fields(fs) => fs.iter().for_each(|f| reach(&f.ty, types, &mut reached)),
            }
        }
    }
    for (name, fields, doc) in &result_types {
        raw_keeping_struct(&mut out, name, doc, fields, types);
    }

    // Events.
    out.push_str("// --- events -----------------------------------------------------------------------------\n\n");
    out.push_str("// TypedEvent is an event decoded by its type: one of the *…Event types of this file, or\n// *UnknownEvent for a type the table does not name (a newer agent's, or the library's own).\ntype TypedEvent interface {\n\t// Type is the event's \"type\".\n\tType() string\n\t// RawJSON is the event verbatim.\n\tRawJSON() json.RawMessage\n}\n\n");
    out.push_str("// UnknownEvent is an event of a type the protocol table does not name.\ntype UnknownEvent struct {\n\tEventType string\n\tRaw       json.RawMessage\n}\n\n// Type is the event's \"type\".\nfunc (e *UnknownEvent) Type() string { return e.EventType }\n\n// RawJSON is the event verbatim.\nfunc (e *UnknownEvent) RawJSON() json.RawMessage { return e.Raw }\n\n");
    let delivered: Vec<&Frame> = t.events.iter().filter(|e| !e.core).collect();
    let mut cases = String::new();
    for e in &delivered {
        let name = frame_struct(&mut out, "Event", e, types, &format!("is the {} event", e.name));
        let _ = writeln!(out, "// Type is {:?}.\nfunc (e *{name}) Type() string {{ return {:?} }}\n\n// RawJSON is the event verbatim.\nfunc (e *{name}) RawJSON() json.RawMessage {{ return e.Raw }}\n", e.name, e.name);
        let _ = writeln!(cases, "\tcase {:?}:\n\t\tv := &{name}{{Raw: e.Raw}}\n\t\treturn v, decodeEvent(e, v)", e.name);
        e.fields.iter().for_each(|f| reach(&f.ty, types, &mut reached));
    }
    let _ = writeln!(
        out,
        "// Typed decodes the event by its type. An event of a type the table does not name is an\n// *UnknownEvent (no error); an error means the JSON does not fit the declared type.\nfunc (e Event) Typed() (TypedEvent, error) {{\n\tswitch e.Type {{\n{cases}\tdefault:\n\t\treturn &UnknownEvent{{EventType: e.Type, Raw: e.Raw}}, nil\n\t}}\n}}\n"
    );

    // UI requests.
    out.push_str("// --- UI requests ------------------------------------------------------------------------\n\n");
    out.push_str("// TypedUIRequest is an extension_ui_request decoded by its method: one of the UI…Request\n// types of this file, or *UnknownUIRequest.\ntype TypedUIRequest interface {\n\t// Method is the request's \"method\".\n\tMethod() string\n\t// RequestID is the request's \"id\", the one an answer names.\n\tRequestID() string\n}\n\n");
    out.push_str("// UnknownUIRequest is a UI request of a method the protocol table does not name.\ntype UnknownUIRequest struct {\n\tID         string `json:\"id\"`\n\tMethodName string `json:\"method\"`\n\tRaw        json.RawMessage `json:\"-\"`\n}\n\n// Method is the request's \"method\".\nfunc (r *UnknownUIRequest) Method() string { return r.MethodName }\n\n// RequestID is the request's \"id\".\nfunc (r *UnknownUIRequest) RequestID() string { return r.ID }\n\n");
    let mut ui_cases = String::new();
    for m in &t.ui_methods {
        let mut with_id = m.clone();
        with_id.fields.insert(0, Field { name: "id".into(), ty: Ty::String, optional: false, nullable: false, since: Vec::new() });
        let name = frame_struct(&mut out, "", &Frame { name: format!("ui_{}_request", m.name), ..with_id }, types, &format!("is the {:?} UI request", m.name));
        let _ = writeln!(out, "// Method is {:?}.\nfunc (r *{name}) Method() string {{ return {:?} }}\n\n// RequestID is the request's \"id\".\nfunc (r *{name}) RequestID() string {{ return r.ID }}\n", m.name, m.name);
        let _ = writeln!(ui_cases, "\tcase {:?}:\n\t\tv := &{name}{{Raw: raw}}\n\t\treturn v, unmarshal(\"ui_request\", raw, v)", m.name);
        m.fields.iter().for_each(|f| reach(&f.ty, types, &mut reached));
    }
    let _ = writeln!(
        out,
        "// Typed decodes the request by its method.\nfunc (r *UIRequest) Typed() (TypedUIRequest, error) {{ return decodeUIRequest(r.Raw) }}\n\nfunc decodeUIRequest(raw json.RawMessage) (TypedUIRequest, error) {{\n\tvar head struct {{\n\t\tMethod string `json:\"method\"`\n\t}}\n\tif err := unmarshal(\"ui_request\", raw, &head); err != nil {{\n\t\treturn nil, err\n\t}}\n\tswitch head.Method {{\n{ui_cases}\tdefault:\n\t\tv := &UnknownUIRequest{{Raw: raw}}\n\t\treturn v, unmarshal(\"ui_request\", raw, v)\n\t}}\n}}\n"
    );

    // Named types, in the order first reached.
    out.push_str("// --- types ------------------------------------------------------------------------------\n\n");
    for name in &reached {
        match types.get(name) {
            Some(TypeDef::Fields(fields)) => raw_keeping_struct(&mut out, &go_type_name(name), "is a type of the protocol table.", fields, types),
            Some(TypeDef::Enum(values)) => {
                let _ = writeln!(out, "// {name} is one of the constants below (a newer agent may send another).\ntype {name} string\n\n// The {name} values.\nconst (");
                for v in values {
                    let _ = writeln!(out, "\t{name}{} {name} = {v:?}", go_name(v));
                }
                let _ = writeln!(out, ")\n");
            }
            Some(TypeDef::Str) => {
                let _ = writeln!(out, "// {name} is a string of the protocol with open-ended values.\ntype {name} string\n");
            }
            Some(TypeDef::Union { tag, variants }) => union_types(&mut out, name, tag, variants, types),
            Some(TypeDef::Variant { union, tag, value, fields }) => {
                let go = go_type_name(name);
                let _ = writeln!(out, "// {go} is the {value:?} {union} (its {tag:?} member).\ntype {go} struct {{");
                struct_fields(&mut out, fields, types);
                let iface = go_type_name(union);
                let method = pascal(tag);
                let _ = writeln!(
                    out,
                    "}}\n\nfunc ({go}) is{iface}() {{}}\n\n// {method} is {value:?}.\nfunc ({go}) {method}() string {{ return {value:?} }}\n\n// MarshalJSON writes the object with its {tag:?} member.\nfunc (v {go}) MarshalJSON() ([]byte, error) {{\n\ttype plain {go}\n\treturn json.Marshal(struct {{\n\t\t{method} string `json:\"{tag}\"`\n\t\tplain\n\t}}{{{value:?}, plain(v)}})\n}}\n"
                );
            }
            Some(TypeDef::Json) | None => {}
        }
    }
    out
}

/// A union: the sealed interface, the Unknown… variant and the …Value holder that decodes
/// one by its tag (a tag the table does not name: Unknown…, never an error).
fn union_types(out: &mut String, name: &str, tag: &str, variants: &[crate::table::Variant], types: &BTreeMap<String, TypeDef>) {
    let _ = types;
    let go = go_type_name(name);
    let method = pascal(tag);
    let names: Vec<String> = variants.iter().map(|v| format!("*{}", go_type_name(&v.name))).collect();
    let _ = writeln!(
        out,
        "// {go} is one of {}, or *Unknown{go} for a {tag:?} the table does not name.\ntype {go} interface {{\n\t// {method} is its {tag:?} member.\n\t{method}() string\n\tis{go}()\n}}\n",
        names.join(", ")
    );
    let _ = writeln!(
        out,
        "// Unknown{go} is a {go} of a {tag:?} the table does not name (a newer agent's).\ntype Unknown{go} struct {{\n\t{method}Value string\n\t// Raw is the object as the agent sent it.\n\tRaw json.RawMessage\n}}\n\nfunc (*Unknown{go}) is{go}() {{}}\n\n// {method} is its {tag:?} member.\nfunc (v *Unknown{go}) {method}() string {{ return v.{method}Value }}\n\n// MarshalJSON writes the object as it was sent.\nfunc (v *Unknown{go}) MarshalJSON() ([]byte, error) {{ return v.Raw, nil }}\n"
    );
    let mut cases = String::new();
    for v in variants {
        let _ = writeln!(cases, "\tcase {:?}:\n\t\tv := &{}{{}}\n\t\tif err := json.Unmarshal(b, v); err != nil {{\n\t\t\treturn err\n\t\t}}\n\t\th.Value = v", v.value, go_type_name(&v.name));
    }
    let _ = writeln!(
        out,
        "// {go}Value holds a {go}: a field or element of that type decodes into it by its {tag:?}\n// (`switch v := x.Value.(type)`); Value is nil for JSON null.\ntype {go}Value struct {{\n\tValue {go}\n}}\n\n// UnmarshalJSON decodes the variant its {tag:?} names; another {tag:?} is an *Unknown{go}.\nfunc (h *{go}Value) UnmarshalJSON(b []byte) error {{\n\tif string(b) == \"null\" {{\n\t\th.Value = nil\n\t\treturn nil\n\t}}\n\tvar head struct {{\n\t\tTag string `json:\"{tag}\"`\n\t}}\n\tif err := json.Unmarshal(b, &head); err != nil {{\n\t\treturn err\n\t}}\n\tswitch head.Tag {{\n{cases}\tdefault:\n\t\th.Value = &Unknown{go}{{{method}Value: head.Tag, Raw: append(json.RawMessage(nil), b...)}}\n\t}}\n\treturn nil\n}}\n\n// MarshalJSON writes the held variant (null when none).\nfunc (h {go}Value) MarshalJSON() ([]byte, error) {{\n\tif h.Value == nil {{\n\t\treturn []byte(\"null\"), nil\n\t}}\n\treturn json.Marshal(h.Value)\n}}\n"
    );
}
