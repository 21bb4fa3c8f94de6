//! The tool-parameter schema sanitizer (opt-in; never applied unless asked for): a JSON Schema
//! made into the plain shape LLM providers accept for tool parameters, and an account of
//! everything it took out, so nothing is lost silently.
//!
//! What it does, and why:
//! - local `$ref`s (`#/$defs/X`, `#/definitions/X`, any `#/…` pointer, `#`) are inlined, and
//!   the `$ref`'s sibling keywords (a `description` next to it, as pydantic writes) override
//!   the target's: providers reject `$ref`, and dropping it (omnigent's sanitizer) loses the
//!   referenced type. A remote `$ref` cannot be fetched by a pure function: an error.
//! - a recursive schema (a `$ref` reached again inside its own expansion) has no finite inline
//!   form: an error naming the chain, never a silent cut.
//! - `anyOf` / `oneOf` become one branch, because several providers take one type per
//!   parameter: the first branch whose type is object (a structured argument must stay
//!   structured: a string branch chosen instead makes the model send JSON as a string), else
//!   the first branch with a `type` other than `null` (a `null` branch only marks the parameter
//!   optional), else the first typed one, else the first. `allOf` whose branches are all objects is
//!   merged (properties and required joined); any other `allOf` is chosen like a union. The
//!   union's sibling keywords (its `description`) are kept over the branch's.
//! - removed, as providers reject them: `examples`, `default`, `additionalProperties`,
//!   `$schema`, `$id`, `$comment`, and `$defs` / `definitions` once inlined.
//! - everything else is kept, descriptions and titles at every level included.
//!
//! Every branch not chosen and every keyword removed is reported as `{"path","reason","value"}`
//! (`path` a JSON pointer into the input).

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::error::{Error, Result, Status};

/// Keywords removed wherever they appear (providers reject them in tool parameters).
pub const REMOVED: [&str; 6] = ["examples", "default", "additionalProperties", "$schema", "$id", "$comment"];
/// Definition containers: inlined where referenced, then removed.
const DEFINITIONS: [&str; 2] = ["$defs", "definitions"];
/// Unions collapsed to one branch.
const UNIONS: [&str; 3] = ["allOf", "anyOf", "oneOf"];
/// The default bound on schema nodes produced: inlining shared definitions can multiply a
/// schema's size (each use is a copy), and a hostile schema could grow without end.
pub const DEFAULT_MAX_NODES: usize = 100_000;
/// The deepest nesting of the output: a chain of `$ref`s nests each target inside the last,
/// and the walk recurses once per level, so a long chain must stop before the stack does.
/// Parsed JSON is at most 128 deep (serde_json); real tool schemas are a handful.
pub const MAX_DEPTH: usize = 256;

/// A sanitized schema and what was taken out of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Sanitized {
    pub schema: Value,
    /// `{"path","reason","value"}` for each removed keyword or union branch not chosen.
    pub dropped: Vec<Value>,
}

impl Sanitized {
    pub fn to_json(&self) -> Value {
        serde_json::json!({"schema": self.schema, "dropped": self.dropped})
    }
}

/// Sanitizes `schema` (a JSON object). `max_nodes`: the bound on the output's schema nodes.
pub fn sanitize(schema: &Value, max_nodes: usize) -> Result<Sanitized> {
    if !schema.is_object() {
        return Err(Error::invalid(format!("a tool parameter schema must be a JSON object, not {}", kind(schema))));
    }
    let mut walk = Walk { root: schema, dropped: Vec::new(), seen: HashSet::new(), nodes: 0, max_nodes, depth: 0, refs: vec!["#".into()] };
    let out = walk.node(schema, "")?;
    Ok(Sanitized { schema: out, dropped: walk.dropped })
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A JSON pointer token: `~` → `~0`, `/` → `~1`.
fn token(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

struct Walk<'a> {
    root: &'a Value,
    dropped: Vec<Value>,
    /// (path, reason) already reported: a definition inlined twice is reported once.
    seen: HashSet<(String, String)>,
    nodes: usize,
    max_nodes: usize,
    /// Schema objects being walked, outermost first.
    depth: usize,
    /// The `$ref`s being expanded, outermost first (the root is `#`).
    refs: Vec<String>,
}

impl Walk<'_> {
    fn drop(&mut self, path: String, reason: &str, value: &Value) {
        if self.seen.insert((path.clone(), reason.to_string())) {
            self.dropped.push(serde_json::json!({"path": path, "reason": reason, "value": value}));
        }
    }

    fn node(&mut self, v: &Value, path: &str) -> Result<Value> {
        match v {
            Value::Object(m) => {
                if self.depth >= MAX_DEPTH {
                    return Err(Error::new(
                        Status::LimitExceeded,
                        format!("the sanitized schema would nest deeper than {MAX_DEPTH} levels (at \"{path}\", with $refs inlined)"),
                    ));
                }
                self.depth += 1;
                let done = self.object(m, path);
                self.depth -= 1;
                done
            }
            // `true` accepts anything: the empty schema says the same in the form providers take.
            Value::Bool(true) => {
                self.drop(path.to_string(), "the boolean schema true, written as {}", v);
                Ok(Value::Object(Map::new()))
            }
            Value::Bool(false) => Err(Error::invalid(format!(
                "schema at \"{path}\" is false (it accepts no value): a tool parameter cannot be satisfied"
            ))),
            other => Err(Error::invalid(format!("schema at \"{path}\" must be an object, not {}", kind(other)))),
        }
    }

    fn object(&mut self, m: &Map<String, Value>, path: &str) -> Result<Value> {
        self.nodes += 1;
        if self.nodes > self.max_nodes {
            return Err(Error::new(
                Status::LimitExceeded,
                format!("the sanitized schema would exceed {} nodes (inlined $refs copy their target at each use)", self.max_nodes),
            ));
        }
        let mut out = Map::new();
        for (k, v) in m {
            let at = format!("{path}/{}", token(k));
            match k.as_str() {
                "$ref" | "allOf" | "anyOf" | "oneOf" => {} // below, once the siblings are known
                k if REMOVED.contains(&k) => self.drop(at, "removed: providers reject it in tool parameters", v),
                k if DEFINITIONS.contains(&k) => {
                    self.drop(at, "definitions: inlined where referenced, then removed", &Value::Null)
                }
                "properties" | "patternProperties" => {
                    let Value::Object(props) = v else {
                        return Err(Error::invalid(format!("\"{at}\" must be an object of schemas")));
                    };
                    let mut done = Map::new();
                    for (name, s) in props {
                        done.insert(name.clone(), self.node(s, &format!("{at}/{}", token(name)))?);
                    }
                    out.insert(k.clone(), Value::Object(done));
                }
                "items" | "prefixItems" if v.is_array() => {
                    let list = v.as_array().expect("checked");
                    let done = list.iter().enumerate().map(|(i, s)| self.node(s, &format!("{at}/{i}"))).collect::<Result<Vec<_>>>()?;
                    out.insert(k.clone(), Value::Array(done));
                }
                "items" | "not" | "contains" | "additionalItems" | "propertyNames" => {
                    out.insert(k.clone(), self.node(v, &at)?);
                }
                _ => {
                    out.insert(k.clone(), v.clone());
                }
            }
        }
        // The node's own keywords win over what its $ref or union brings in.
        if let Some(r) = m.get("$ref") {
            let target = self.resolve(r, path)?;
            out = under(target, out);
        }
        for key in UNIONS {
            if let Some(branches) = m.get(key) {
                let chosen = self.union(key, branches, &format!("{path}/{key}"))?;
                out = under(chosen, out);
            }
        }
        Ok(Value::Object(out))
    }

    /// The sanitized target of a local `$ref`.
    fn resolve(&mut self, r: &Value, path: &str) -> Result<Map<String, Value>> {
        let at = format!("{path}/$ref");
        let Some(r) = r.as_str() else {
            return Err(Error::invalid(format!("\"{at}\" must be a string")));
        };
        let Some(pointer) = r.strip_prefix('#') else {
            return Err(Error::invalid(format!(
                "\"{at}\" is {r:?}: only local references (\"#/$defs/…\", \"#/definitions/…\", \"#/…\") can be inlined"
            )));
        };
        if self.refs.iter().any(|seen| seen == r) {
            let chain = self.refs[self.refs.iter().position(|s| s == r).expect("found")..].join(" → ");
            return Err(Error::invalid(format!(
                "the schema is recursive ({chain} → {r}, at \"{at}\"): it has no finite inline form; make the recursive \
                 part opaque (e.g. a JSON string) before sanitizing"
            )));
        }
        let target = self.root.pointer(pointer).ok_or_else(|| Error::invalid(format!("\"{at}\" is {r:?}, which points to nothing")))?;
        self.refs.push(r.to_string());
        let done = self.node(target, pointer);
        self.refs.pop();
        match done? {
            Value::Object(m) => Ok(m),
            _ => unreachable!("node returns an object or an error"),
        }
    }

    fn union(&mut self, key: &str, branches: &Value, at: &str) -> Result<Map<String, Value>> {
        let Some(list) = branches.as_array().filter(|l| !l.is_empty()) else {
            return Err(Error::invalid(format!("\"{at}\" must be a non-empty array of schemas")));
        };
        let done: Vec<Map<String, Value>> = list
            .iter()
            .enumerate()
            .map(|(i, b)| match self.node(b, &format!("{at}/{i}"))? {
                Value::Object(m) => Ok(m),
                _ => unreachable!("node returns an object or an error"),
            })
            .collect::<Result<_>>()?;
        if key == "allOf" && done.iter().all(is_object) {
            return Ok(merge_all(done));
        }
        // A `null` branch only says "optional" (pydantic's and zod's Optional): the typed
        // branch beside it is the parameter.
        let typed = |b: &Map<String, Value>| b.get("type").is_some_and(|t| t != "null");
        let pick = done
            .iter()
            .position(is_object)
            .or_else(|| done.iter().position(typed))
            .or_else(|| done.iter().position(|b| b.contains_key("type")))
            .unwrap_or(0);
        let reason = format!("{key} branch not chosen: providers take one type per parameter (kept: branch {pick})");
        for (i, b) in done.iter().enumerate() {
            if i != pick {
                self.drop(format!("{at}/{i}"), &reason, &Value::Object(b.clone()));
            }
        }
        Ok(done.into_iter().nth(pick).expect("pick is an index of done"))
    }
}

fn is_object(b: &Map<String, Value>) -> bool {
    match b.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
        None => b.contains_key("properties"),
        _ => false,
    }
}

/// `base` with `over`'s keywords on top.
fn under(mut base: Map<String, Value>, over: Map<String, Value>) -> Map<String, Value> {
    for (k, v) in over {
        base.insert(k, v);
    }
    base
}

/// Object branches that must all hold: one object with every branch's properties (a later
/// branch's definition of a name wins) and required names, other keywords first come first.
fn merge_all(branches: Vec<Map<String, Value>>) -> Map<String, Value> {
    let mut out = Map::new();
    let mut props = Map::new();
    let mut required: Vec<Value> = Vec::new();
    for b in branches {
        for (k, v) in b {
            match (k.as_str(), v) {
                ("properties", Value::Object(p)) => props.extend(p),
                ("required", Value::Array(r)) => {
                    for name in r {
                        if !required.contains(&name) {
                            required.push(name);
                        }
                    }
                }
                (_, v) => {
                    out.entry(k).or_insert(v);
                }
            }
        }
    }
    out.insert("type".into(), Value::String("object".into()));
    out.insert("properties".into(), Value::Object(props));
    if !required.is_empty() {
        out.insert("required".into(), Value::Array(required));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn clean(v: Value) -> Value {
        sanitize(&v, DEFAULT_MAX_NODES).unwrap().schema
    }

    #[test]
    fn unions_prefer_the_object_branch_else_the_first_typed_one() {
        for key in ["anyOf", "oneOf", "allOf"] {
            let object = json!({"type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"], "additionalProperties": false});
            let s = json!({key: [{"type": "string"}, object]});
            assert_eq!(clean(s), json!({"type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"]}), "{key}");
        }
        assert_eq!(clean(json!({"anyOf": [{"description": "untyped"}, {"type": "integer"}, {"type": "string"}]})), json!({"type": "integer"}));
        assert_eq!(clean(json!({"anyOf": [{"type": "string"}, {"type": "integer"}]})), json!({"type": "string"}));
        assert_eq!(clean(json!({"anyOf": [{"type": "null"}, {"type": "number"}]})), json!({"type": "number"}));
        assert_eq!(clean(json!({"oneOf": [{"type": "null"}, {"enum": [1]}]})), json!({"type": "null"}));
    }

    #[test]
    fn the_union_keeps_its_own_description_and_reports_the_branches_it_dropped() {
        let s = json!({"properties": {"args": {"description": "what to send", "anyOf": [{"type": "string", "description": "raw"}, {"type": "null"}]}}});
        let out = sanitize(&s, DEFAULT_MAX_NODES).unwrap();
        assert_eq!(out.schema, json!({"properties": {"args": {"type": "string", "description": "what to send"}}}));
        assert_eq!(out.dropped.len(), 1);
        assert_eq!(out.dropped[0]["path"], "/properties/args/anyOf/1");
        assert_eq!(out.dropped[0]["value"], json!({"type": "null"}));
    }

    #[test]
    fn all_of_objects_merge() {
        let s = json!({"allOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"properties": {"b": {"type": "integer"}}, "required": ["b", "a"]}
        ]});
        assert_eq!(
            clean(s),
            json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}, "required": ["a", "b"]})
        );
    }

    #[test]
    fn local_refs_are_inlined_with_their_siblings_on_top() {
        let s = json!({
            "type": "object",
            "$defs": {"Point": {"type": "object", "description": "a point", "properties": {"x": {"type": "number", "default": 0}}}},
            "definitions": {"Name": {"type": "string"}},
            "properties": {
                "at": {"$ref": "#/$defs/Point", "description": "where"},
                "from": {"$ref": "#/$defs/Point"},
                "name": {"$ref": "#/definitions/Name"},
                "list": {"type": "array", "items": {"$ref": "#/properties/name"}}
            }
        });
        let out = sanitize(&s, DEFAULT_MAX_NODES).unwrap();
        let point = |d: &str| json!({"type": "object", "description": d, "properties": {"x": {"type": "number"}}});
        assert_eq!(out.schema["properties"]["at"], point("where"));
        assert_eq!(out.schema["properties"]["from"], point("a point"));
        assert_eq!(out.schema["properties"]["name"], json!({"type": "string"}));
        assert_eq!(out.schema["properties"]["list"]["items"], json!({"type": "string"}));
        assert!(out.schema.get("$defs").is_none() && out.schema.get("definitions").is_none());
        // The default inside Point is reported once, though Point is inlined twice.
        assert_eq!(out.dropped.iter().filter(|d| d["path"] == "/$defs/Point/properties/x/default").count(), 1);
    }

    #[test]
    fn recursion_remote_refs_and_bad_shapes_are_errors() {
        let tree = json!({"$defs": {"Node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}}, "$ref": "#/$defs/Node"});
        let e = sanitize(&tree, DEFAULT_MAX_NODES).unwrap_err();
        assert!(e.message.contains("recursive") && e.message.contains("#/$defs/Node → #/$defs/Node"), "{}", e.message);
        let root = json!({"type": "object", "properties": {"self": {"$ref": "#"}}});
        assert!(sanitize(&root, DEFAULT_MAX_NODES).unwrap_err().message.contains("recursive"));
        let remote = json!({"properties": {"a": {"$ref": "https://example.com/s.json"}}});
        assert!(sanitize(&remote, DEFAULT_MAX_NODES).unwrap_err().message.contains("only local"));
        assert!(sanitize(&json!({"$ref": "#/$defs/Nope"}), DEFAULT_MAX_NODES).unwrap_err().message.contains("points to nothing"));
        assert!(sanitize(&json!("hello"), DEFAULT_MAX_NODES).unwrap_err().message.contains("not a string"));
        assert!(sanitize(&json!({"properties": {"a": false}}), DEFAULT_MAX_NODES).is_err());
        assert!(sanitize(&json!({"anyOf": []}), DEFAULT_MAX_NODES).is_err());
        assert_eq!(clean(json!({"properties": {"a": true}})), json!({"properties": {"a": {}}}));
    }

    #[test]
    fn inlining_is_bounded() {
        // Each level uses the one below twice: 2^(n+1) - 1 nodes when inlined whole.
        let doubling = |n: usize| {
            let mut defs = Map::new();
            defs.insert("L0".into(), json!({"type": "string"}));
            for i in 1..=n {
                let below = format!("#/$defs/L{}", i - 1);
                defs.insert(format!("L{i}"), json!({"type": "object", "properties": {"a": {"$ref": below}, "b": {"$ref": below}}}));
            }
            json!({"$defs": defs, "$ref": format!("#/$defs/L{n}")})
        };
        assert_eq!(sanitize(&doubling(40), DEFAULT_MAX_NODES).unwrap_err().status, Status::LimitExceeded);
        // More than 2^10 nodes (a referencing node and its target count apart).
        assert!(sanitize(&doubling(9), 10_000).is_ok());
        assert_eq!(sanitize(&doubling(9), 1_000).unwrap_err().status, Status::LimitExceeded);
        // A long chain of $refs, each inside the last: stopped by depth, not by the stack.
        let mut defs = Map::new();
        for i in 0..20_000 {
            defs.insert(format!("D{i}"), json!({"type": "object", "properties": {"next": {"$ref": format!("#/$defs/D{}", i + 1)}}}));
        }
        defs.insert("D20000".into(), json!({"type": "string"}));
        let e = sanitize(&json!({"$defs": defs, "$ref": "#/$defs/D0"}), usize::MAX).unwrap_err();
        assert_eq!(e.status, Status::LimitExceeded);
        assert!(e.message.contains("deeper than 256"), "{}", e.message);
    }
}
