//! Custom-provider configuration: writes the agent's provider file (pi: `models.json`,
//! omp: `models.yml` — JSON text is valid YAML) into a private agent directory and returns
//! the environment and `--model` selector to use. API keys are best named by environment
//! variable (`apiKeyEnv`), which the agent resolves at run time, so no secret is written to
//! disk; those names are returned for the spawn allow-list.

use std::io::Write;
use std::path::PathBuf;

use serde_json::{json, Map, Value};

use crate::env::private_dir;
use crate::error::{Error, Result, Status};

const PROVIDER_KEYS: [&str; 8] = ["baseUrl", "api", "apiKey", "apiKeyEnv", "authHeader", "headers", "compat", "models"];

/// Options: `{"flavor":"pi"|"omp","dir"?,"providers":{name:{baseUrl,api,apiKeyEnv|apiKey,authHeader?,
/// headers?,compat?,models:[{id,…}]}},"model"?:"provider/id"}`. Returns `{"dir","file","env",
/// "model","envPassthrough"}`.
pub fn write(opts: &Value) -> Result<Value> {
    let o = opts.as_object().ok_or_else(|| Error::invalid_json("provider options must be a JSON object"))?;
    let file = match o.get("flavor").and_then(Value::as_str).unwrap_or("pi") {
        "pi" => "models.json",
        "omp" => "models.yml",
        other => return Err(Error::invalid(format!("provider flavor must be \"pi\" or \"omp\", not {other:?}"))),
    };
    let providers = o.get("providers").and_then(Value::as_object).filter(|p| !p.is_empty())
        .ok_or_else(|| Error::invalid("\"providers\" must be a non-empty object"))?;
    let mut out = Map::new();
    let mut passthrough = Vec::new();
    let mut first_model = None;
    for (name, p) in providers {
        let p = p.as_object().ok_or_else(|| Error::invalid(format!("provider {name:?} must be an object")))?;
        if let Some(k) = p.keys().find(|k| !PROVIDER_KEYS.contains(&k.as_str())) {
            return Err(Error::invalid(format!("provider {name:?}: unknown key {k:?}")));
        }
        for key in ["baseUrl", "api"] {
            if !p.get(key).is_some_and(Value::is_string) {
                return Err(Error::invalid(format!("provider {name:?} needs a string {key:?}")));
            }
        }
        let models = p.get("models").and_then(Value::as_array).filter(|m| !m.is_empty())
            .ok_or_else(|| Error::invalid(format!("provider {name:?} needs a non-empty \"models\" array")))?;
        let mut with_cost = Vec::with_capacity(models.len());
        for m in models {
            let id = m.get("id").and_then(Value::as_str).ok_or_else(|| Error::invalid(format!("provider {name:?}: every model needs a string \"id\"")))?;
            first_model.get_or_insert_with(|| format!("{name}/{id}"));
            // pi before 0.51 rejects a model without a cost object; zero prices are what a
            // newer pi assumes when it is absent.
            let mut m = m.clone();
            if let Value::Object(fields) = &mut m {
                fields.entry("cost").or_insert_with(|| json!({"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}));
            }
            with_cost.push(m);
        }
        let mut entry = p.clone();
        entry.insert("models".into(), Value::Array(with_cost));
        match (entry.remove("apiKeyEnv"), entry.get("apiKey")) {
            (Some(Value::String(var)), None) => {
                if var.is_empty() || !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    return Err(Error::invalid(format!("provider {name:?}: apiKeyEnv {var:?} is not an environment variable name")));
                }
                // The agent treats a key that names an environment variable as that variable.
                entry.insert("apiKey".into(), json!(var));
                passthrough.push(var);
            }
            (Some(_), Some(_)) => return Err(Error::invalid(format!("provider {name:?}: give apiKeyEnv or apiKey, not both"))),
            (Some(_), None) => return Err(Error::invalid(format!("provider {name:?}: apiKeyEnv must be a string"))),
            (None, _) => {}
        }
        out.insert(name.clone(), Value::Object(entry));
    }
    let model = match o.get("model") {
        None | Some(Value::Null) => first_model,
        Some(Value::String(m)) => Some(m.clone()),
        Some(_) => return Err(Error::invalid("\"model\" must be a string \"provider/id\"")),
    };
    let dir = match o.get("dir").and_then(Value::as_str) {
        Some(d) => PathBuf::from(d),
        None => private_dir("omprpc-agent").map_err(|e| Error::new(Status::Io, format!("creating the agent directory: {e}")))?,
    };
    let path = dir.join(file);
    let text = serde_json::to_string_pretty(&json!({"providers": out})).expect("serialising a map");
    let mut f = crate::env::private_file(&path, crate::env::Existing::Truncate)
        .map_err(|e| Error::new(Status::Io, format!("writing {}: {e}", path.display())))?;
    f.write_all(text.as_bytes()).map_err(|e| Error::new(Status::Io, format!("writing {}: {e}", path.display())))?;
    Ok(json!({
        "dir": dir, "file": path, "model": model, "envPassthrough": passthrough,
        "env": {"PI_CODING_AGENT_DIR": dir},
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_a_private_config_with_env_named_keys() {
        let r = write(&json!({"providers": {"fake": {"baseUrl": "http://127.0.0.1:1/v1", "api": "openai-completions",
            "apiKeyEnv": "FAKE_KEY", "models": [{"id": "fake-model", "contextWindow": 128000}, {"id": "priced", "cost": {"input": 3}}]}}})).unwrap();
        assert_eq!(r["model"], "fake/fake-model");
        assert_eq!(r["envPassthrough"], json!(["FAKE_KEY"]));
        let dir = r["dir"].as_str().unwrap();
        let file = r["file"].as_str().unwrap();
        assert!(file.ends_with("models.json"));
        // (What private means on Windows is src/env/windows.rs's to test.)
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(dir).unwrap().permissions().mode() & 0o777, 0o700);
            assert_eq!(std::fs::metadata(file).unwrap().permissions().mode() & 0o777, 0o600);
        }
        let written: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        assert_eq!(written["providers"]["fake"]["apiKey"], "FAKE_KEY");
        // Every model gets a cost object (pi before 0.51 needs one); a given one is kept.
        assert_eq!(written["providers"]["fake"]["models"][0]["cost"], json!({"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}));
        assert_eq!(written["providers"]["fake"]["models"][1]["cost"], json!({"input": 3}));
        assert!(written["providers"]["fake"].get("apiKeyEnv").is_none());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn omp_gets_yaml_and_bad_input_is_named() {
        let r = write(&json!({"flavor": "omp", "providers": {"p": {"baseUrl": "u", "api": "a", "models": [{"id": "m"}]}}, "model": "p/m"})).unwrap();
        assert!(r["file"].as_str().unwrap().ends_with("models.yml"));
        std::fs::remove_dir_all(r["dir"].as_str().unwrap()).unwrap();
        for bad in [
            json!({"providers": {}}),
            json!({"providers": {"p": {"api": "a", "models": [{"id": "m"}]}}}),
            json!({"providers": {"p": {"baseUrl": "u", "api": "a", "models": []}}}),
            json!({"providers": {"p": {"baseUrl": "u", "api": "a", "models": [{"id": "m"}], "apiKeyEnv": "BAD NAME"}}}),
            json!({"providers": {"p": {"baseUrl": "u", "api": "a", "models": [{"id": "m"}], "apiKeyEnv": "K", "apiKey": "x"}}}),
            json!({"providers": {"p": {"baseUrl": "u", "api": "a", "models": [{"id": "m"}], "typo": 1}}}),
            json!({"flavor": "vim", "providers": {"p": {}}}),
        ] {
            assert!(write(&bad).is_err(), "{bad}");
        }
    }
}
