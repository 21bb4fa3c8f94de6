//! Parsing one stdin line into a command.

use std::collections::HashMap;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::json::J;

/// One parsed command line.
pub struct Cmd<'a> {
    /// The trimmed line, valid JSON: echoed verbatim in `*_seen` events.
    pub text: &'a str,
    pub obj: Map<String, Value>,
    raw: HashMap<String, Box<RawValue>>,
    /// The request id as received (any JSON type except null), verbatim.
    pub id: Option<J>,
    pub ty: String,
}

/// The outcome of parsing one line.
pub enum Parsed<'a> {
    Blank,
    Cmd(Cmd<'a>),
    /// Not JSON, not UTF-8, or not an object: an id-less `parse` error.
    ParseError(String),
    /// A JSON object without a usable `type`.
    BadType { id: Option<J>, error: String },
}

pub fn parse(line: &[u8]) -> Parsed<'_> {
    let text = match std::str::from_utf8(line) {
        Ok(t) => t.trim_matches(|c: char| c.is_ascii_whitespace()),
        Err(e) => return Parsed::ParseError(format!("Failed to parse command: invalid UTF-8: {e}")),
    };
    if text.is_empty() {
        return Parsed::Blank;
    }
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return Parsed::ParseError(format!("Failed to parse command: {e}")),
    };
    let obj = match value {
        Value::Object(obj) => obj,
        _ => {
            return Parsed::ParseError(
                "Failed to parse command: expected a JSON object".to_owned(),
            )
        }
    };
    // Same text parsed again keeping each top-level value's raw text, so
    // nested objects are echoed with their original key order.
    let raw: HashMap<String, Box<RawValue>> = serde_json::from_str(text).unwrap_or_default();
    let id = match raw.get("id") {
        Some(r) if r.get() != "null" => Some(J::Raw(r.get().to_owned())),
        _ => None,
    };
    let ty = match obj.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(_) => {
            return Parsed::BadType {
                id,
                error: "invalid field: type (expected a string)".to_owned(),
            }
        }
        None => {
            return Parsed::BadType {
                id,
                error: "missing field: type".to_owned(),
            }
        }
    };
    Parsed::Cmd(Cmd {
        text,
        obj,
        raw,
        id,
        ty,
    })
}

impl Cmd<'_> {
    /// The raw JSON text of a top-level field, embedded verbatim.
    pub fn raw(&self, key: &str) -> Option<J> {
        self.raw.get(key).map(|r| J::Raw(r.get().to_owned()))
    }

    /// The raw JSON text of a top-level field.
    pub fn raw_text(&self, key: &str) -> Option<&str> {
        self.raw.get(key).map(|r| r.get())
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.obj.get(key)
    }

    /// A required string field.
    pub fn str(&self, key: &str) -> Result<String, String> {
        match self.obj.get(key) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(format!("invalid field: {key} (expected a string)")),
            None => Err(format!("missing field: {key}")),
        }
    }

    /// A required boolean field.
    pub fn bool(&self, key: &str) -> Result<bool, String> {
        match self.obj.get(key) {
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(format!("invalid field: {key} (expected a boolean)")),
            None => Err(format!("missing field: {key}")),
        }
    }

    /// A required field of any type, as raw JSON.
    pub fn required_raw(&self, key: &str) -> Result<J, String> {
        self.raw(key).ok_or_else(|| format!("missing field: {key}"))
    }

    /// An optional array field, as its raw items (`null` or absent → empty).
    pub fn raw_array(&self, key: &str) -> Result<Vec<Box<RawValue>>, String> {
        match self.raw_text(key) {
            None | Some("null") => Ok(Vec::new()),
            Some(text) => serde_json::from_str::<Vec<Box<RawValue>>>(text)
                .map_err(|_| format!("invalid field: {key} (expected an array)")),
        }
    }
}
