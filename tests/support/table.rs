//! `src/protocol/table.json` read into the shape the binding generators walk (tests/generated.rs).
//! The table's grammar is written at its top; `tests/protocol_table.rs` checks it is well formed.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

/// A field of a command's params, a response's data, an event or a named type.
#[derive(Clone, Debug)]
pub struct Field {
    pub name: String,
    pub ty: Ty,
    /// May be missing — also when only some agents send it, or only from some version on.
    pub optional: bool,
    pub nullable: bool,
    /// From which version each agent has it (`since`; empty: every version).
    pub since: Since,
}

/// A row's `since`: (agent, first version), e.g. `[("pi", "0.84.4")]`.
pub type Since = Vec<(String, String)>;

/// `since pi 0.84.4` for doc comments; `None` when the row has no `since`.
pub fn since_text(since: &Since) -> Option<String> {
    (!since.is_empty()).then(|| format!("since {}", since.iter().map(|(a, v)| format!("{a} {v}")).collect::<Vec<_>>().join(", ")))
}

/// A table type: `string`, `integer`, …, `T[]`, `enum(a,b)` or a name of `types`.
#[derive(Clone, Debug, PartialEq)]
pub enum Ty {
    String,
    Integer,
    Number,
    Boolean,
    Any,
    Object,
    Array(Box<Ty>),
    Enum(Vec<String>),
    Named(String),
    /// `A|B`: either (a message's content: `string|MessageContent[]`).
    OneOf(Vec<Ty>),
}

impl Ty {
    pub fn parse(s: &str) -> Ty {
        if s.contains('|') && !s.starts_with("enum(") {
            return Ty::OneOf(s.split('|').map(Ty::parse).collect());
        }
        if let Some(inner) = s.strip_suffix("[]") {
            return Ty::Array(Box::new(Ty::parse(inner)));
        }
        if let Some(values) = s.strip_prefix("enum(").and_then(|r| r.strip_suffix(')')) {
            return Ty::Enum(values.split(',').map(str::to_string).collect());
        }
        match s {
            "string" => Ty::String,
            "integer" => Ty::Integer,
            "number" => Ty::Number,
            "boolean" => Ty::Boolean,
            "any" => Ty::Any,
            "object" => Ty::Object,
            name => Ty::Named(name.to_string()),
        }
    }
}

#[derive(Clone, Debug)]
pub enum TypeDef {
    Fields(Vec<Field>),
    Enum(Vec<String>),
    /// A string with open-ended values.
    Str,
    /// Carried as raw JSON.
    Json,
    /// Objects told apart by their `tag` member; a tag no variant names is the binding's
    /// Unknown… variant.
    Union { tag: String, variants: Vec<Variant> },
    /// A union's variant, a type of its own (its `name`): `AssistantMessage`, `TextContent`.
    Variant { union: String, tag: String, value: String, fields: Vec<Field> },
}

/// One variant of a union: its tag's value, its type name, its fields (the tag left out).
#[derive(Clone, Debug)]
pub struct Variant {
    pub value: String,
    pub name: String,
    pub fields: Vec<Field>,
    pub agents: Vec<String>,
    pub since: Since,
}

#[derive(Clone, Debug)]
pub struct Data {
    /// May be missing (for some agent, or before its `since`).
    pub optional: bool,
    pub nullable: bool,
    /// Inline fields, or a named type.
    pub shape: DataShape,
    /// The agents that send it (a command's data may be one agent's only) and since when.
    pub agents: Vec<String>,
    pub since: Since,
}

#[derive(Clone, Debug)]
pub enum DataShape {
    Fields(Vec<Field>),
    Type(Ty),
}

#[derive(Clone, Debug)]
pub struct Command {
    pub name: String,
    pub agents: Vec<String>,
    /// Why the library sends or wraps it itself (the generators skip these).
    pub library: Option<String>,
    pub params: Vec<Field>,
    pub data: Option<Data>,
    pub since: Since,
}

#[derive(Clone, Debug)]
pub struct Frame {
    pub name: String,
    pub agents: Vec<String>,
    pub fields: Vec<Field>,
    /// Consumed by the library, never delivered.
    pub core: bool,
    pub since: Since,
}

pub struct Table {
    /// The versions each agent's declarations are read from: `pi 0.73.1, 1.6.0; omp 18.2.3`.
    pub agents: String,
    pub commands: Vec<Command>,
    pub events: Vec<Frame>,
    pub ui_methods: Vec<Frame>,
    pub types: BTreeMap<String, TypeDef>,
}

fn since(row: &Value) -> Since {
    row.get("since").and_then(Value::as_object).map(|m| m.iter().map(|(a, v)| (a.clone(), v.as_str().unwrap().to_string())).collect()).unwrap_or_default()
}

/// `optional`: `true`, or a non-empty list of the agents that may leave it out.
fn optional(row: &Value) -> bool {
    match row.get("optional") {
        Some(Value::Bool(b)) => *b,
        Some(Value::Array(a)) => !a.is_empty(),
        _ => false,
    }
}

fn agents(row: &Value) -> Vec<String> {
    row.get("agents").and_then(Value::as_array).map(|a| a.iter().map(|v| v.as_str().unwrap().to_string()).collect()).unwrap_or_else(|| vec!["omp".into(), "pi".into()])
}

/// A row's fields, one per name: a field some agents lack (or have optional), or that an
/// agent has only from some version on, is optional.
fn fields(v: &Value, row_agents: &[String]) -> Vec<Field> {
    let mut out: Vec<Field> = Vec::new();
    for f in v.as_array().into_iter().flatten() {
        let name = f["name"].as_str().unwrap().to_string();
        let partial = agents(f).len() < row_agents.len();
        let field = Field {
            ty: Ty::parse(f["type"].as_str().unwrap()),
            optional: optional(f) || partial || f.get("since").is_some(),
            nullable: f["nullable"].as_bool().unwrap_or(false),
            since: since(f),
            name,
        };
        match out.iter_mut().find(|o| o.name == field.name) {
            Some(o) => {
                o.optional |= field.optional;
                o.nullable |= field.nullable;
            }
            None => out.push(field),
        }
    }
    out
}

pub fn load(root: &Path) -> Table {
    let text = std::fs::read_to_string(root.join("src/protocol/table.json")).expect("src/protocol/table.json");
    let t: Value = serde_json::from_str(&text).expect("the table is JSON");
    let commands = t["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let a = agents(r);
            let data = r.get("data").map(|d| {
                let da = agents(d);
                Data {
                    optional: optional(d) || da.len() < a.len() || d.get("since").is_some(),
                    nullable: d["nullable"].as_bool().unwrap_or(false),
                    shape: match d.get("type") {
                        Some(ty) => DataShape::Type(Ty::parse(ty.as_str().unwrap())),
                        None => DataShape::Fields(fields(&d["fields"], &a)),
                    },
                    since: if d.get("since").is_some() { since(d) } else { since(r) },
                    agents: if d.get("agents").is_some() { da } else { a.clone() },
                }
            });
            Command {
                name: r["name"].as_str().unwrap().to_string(),
                library: r.get("library").map(|l| l.as_str().unwrap().to_string()),
                params: fields(&r["params"], &a),
                data,
                since: since(r),
                agents: a,
            }
        })
        .collect();
    let frames = |key: &str| -> Vec<Frame> {
        t[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let a = agents(r);
                Frame { name: r["name"].as_str().unwrap().to_string(), fields: fields(&r["fields"], &a), core: r.get("core").is_some(), since: since(r), agents: a }
            })
            .collect()
    };
    let mut types: BTreeMap<String, TypeDef> = t["types"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, d)| {
            let def = if let Some(u) = d.get("union") {
                let all = agents(d);
                let variants = u["variants"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(value, v)| Variant { value: value.clone(), name: v["name"].as_str().unwrap().to_string(), fields: fields(&v["fields"], &all), agents: agents(v), since: since(v) })
                    .collect();
                TypeDef::Union { tag: u["tag"].as_str().unwrap().to_string(), variants }
            } else if let Some(f) = d.get("fields") {
                TypeDef::Fields(fields(f, &agents(d)))
            } else if let Some(e) = d.get("enum") {
                TypeDef::Enum(e.as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect())
            } else if d.get("string").is_some() {
                TypeDef::Str
            } else {
                TypeDef::Json
            };
            (name.clone(), def)
        })
        .collect();
    let variants: Vec<(String, TypeDef)> = types
        .iter()
        .filter_map(|(union, d)| match d {
            TypeDef::Union { tag, variants } => Some(variants.iter().map(|v| (v.name.clone(), TypeDef::Variant { union: union.clone(), tag: tag.clone(), value: v.value.clone(), fields: v.fields.clone() })).collect::<Vec<_>>()),
            _ => None,
        })
        .flatten()
        .collect();
    types.extend(variants);
    let agents = t["agents"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(a, vs)| format!("{a} {}", vs.as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect::<Vec<_>>().join(", ")))
        .collect::<Vec<_>>()
        .join("; ");
    Table { agents, commands, events: frames("events"), ui_methods: frames("ui_methods"), types }
}

/// `get_available_models` → `GetAvailableModels`; `setStatus` → `SetStatus`.
pub fn pascal(name: &str) -> String {
    let mut out = String::new();
    let mut upper = true;
    for c in name.chars() {
        if c == '_' || c == '-' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// `get_available_models` → `getAvailableModels`.
pub fn camel(name: &str) -> String {
    let p = pascal(name);
    let mut c = p.chars();
    c.next().map(|f| f.to_lowercase().chain(c).collect()).unwrap_or_default()
}

/// The named types `ty` reaches (itself and through fields), in the order first met: a union
/// reaches its variants, a variant its union.
pub fn reach(ty: &Ty, types: &BTreeMap<String, TypeDef>, out: &mut Vec<String>) {
    match ty {
        Ty::Array(inner) => reach(inner, types, out),
        Ty::OneOf(all) => all.iter().for_each(|t| reach(t, types, out)),
        Ty::Named(n) if !out.contains(n) => {
            out.push(n.clone());
            match types.get(n) {
                Some(TypeDef::Fields(fs)) => fs.iter().for_each(|f| reach(&f.ty, types, out)),
                Some(TypeDef::Union { variants, .. }) => variants.iter().for_each(|v| reach(&Ty::Named(v.name.clone()), types, out)),
                Some(TypeDef::Variant { union, fields, .. }) => {
                    reach(&Ty::Named(union.clone()), types, out);
                    fields.iter().for_each(|f| reach(&f.ty, types, out));
                }
                _ => {}
            }
        }
        _ => {}
    }
}

/// Who has a row, for doc comments: `omp, pi`, or `pi; since pi 0.84.4` for a versioned one.
pub fn who(agents: &[String], since: &Since) -> String {
    match since_text(since) {
        Some(s) => format!("{}; {s}", agents.join(", ")),
        None => agents.join(", "),
    }
}
