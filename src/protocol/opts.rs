//! The start options as the launch settings are read from them: typed, error-reporting access
//! to the JSON object a host passes to `start` (and to `omprpc_build_argv`). It lives with the
//! protocol because the agent's command line is built from it (`argv`); the client reads the
//! rest of its options through the same accessor.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// Typed, error-reporting access to an options object.
pub struct Opts<'a> {
    map: &'a Map<String, Value>,
}

/// The error for an option of the wrong type or value: `option "key" must be …`.
pub fn wrong(key: &str, what: &str) -> Error {
    Error::invalid(format!("option \"{key}\" must be {what}"))
}

impl<'a> Opts<'a> {
    pub fn new(map: &'a Map<String, Value>) -> Self {
        Opts { map }
    }

    /// The value of `key`; JSON null counts as absent.
    pub fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    pub fn str(&self, key: &str) -> Result<Option<&'a str>> {
        self.get(key).map(|v| v.as_str().ok_or_else(|| wrong(key, "a string"))).transpose()
    }

    pub fn bool(&self, key: &str) -> Result<Option<bool>> {
        self.get(key).map(|v| v.as_bool().ok_or_else(|| wrong(key, "true or false"))).transpose()
    }

    pub fn str_list(&self, key: &str) -> Result<Option<Vec<String>>> {
        self.get(key)
            .map(|v| {
                v.as_array()
                    .and_then(|a| a.iter().map(|s| s.as_str().map(str::to_string)).collect::<Option<Vec<_>>>())
                    .ok_or_else(|| wrong(key, "an array of strings"))
            })
            .transpose()
    }

    /// Milliseconds; a negative value means "no deadline".
    pub fn millis(&self, key: &str, default: Option<Duration>) -> Result<Option<Duration>> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => match v.as_i64() {
                Some(ms) if ms < 0 => Ok(None),
                Some(ms) => Ok(Some(Duration::from_millis(ms as u64))),
                None => Err(wrong(key, "an integer number of milliseconds (negative: no deadline)")),
            },
        }
    }

    /// A positive bound, or null / absent for the default (`default` None = unbounded).
    pub fn bound(&self, key: &str, default: Option<usize>) -> Result<Option<usize>> {
        match self.map.get(key) {
            None => Ok(default),
            Some(Value::Null) => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) if n > 0 => Ok(Some(n as usize)),
                _ => Err(wrong(key, "a positive integer, or null for no limit")),
            },
        }
    }
}

