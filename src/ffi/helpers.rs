//! Exports that need no handle: what a caller prepares before (or instead of) a client — the
//! argv a start would spawn, the safe part of the environment, prompt content blocks, and a
//! custom-provider config.

use std::ffi::c_char;

use serde_json::Value;

use crate::client::options::{self, Options};
use crate::client::parse_value;
use crate::error::Status;

use super::strings::{give, opt_text, text};
use super::{boundary, out};

/// The argv `omprpc_client_start` would spawn for `options_json`, as a JSON array, exactly
/// (behind the `launcher` when there is one; system prompts included: `omprpc_client_info`
/// shows the redacted form). Starts nothing.
/// Ownership: the caller frees `*out_argv_json` with `omprpc_string_free`. Threads: any
/// thread. Statuses: OK, INVALID_ARGUMENT, INVALID_JSON, INVALID_UTF8, PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_build_argv(options_json: *const c_char, out_argv_json: *mut *mut c_char, out_error: *mut *mut c_char) -> Status {
    boundary(std::ptr::null(), out_error, || {
        let slot = out(out_argv_json, "out_argv_json")?;
        let map = options::parse_object(text(options_json, "options_json")?)?;
        let opts = Options::from_map(&map)?;
        *slot = give(Value::from(opts.launch_spec().argv).to_string());
        Ok(())
    })
}

/// The part of this process's environment an agent gets by default (a JSON object): the
/// allow-list of names a coding agent needs (PATH, HOME, locale, proxies, TLS, NODE_*, PI_*,
/// XDG_* …) and the model and search providers' API keys pi and omp read (ANTHROPIC_API_KEY,
/// OPENAI_API_KEY …; not cloud or code-host credentials), plus the exact names in
/// `options_json` `{"passthrough":["AWS_PROFILE"]}` (or NULL). Deny by default.
/// Ownership: the caller frees `*out_env_json` with `omprpc_string_free`. Threads: any thread
/// (reads the environment; do not call setenv concurrently). Statuses: OK, INVALID_ARGUMENT,
/// INVALID_JSON, INVALID_UTF8, PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_env_allowlisted(options_json: *const c_char, out_env_json: *mut *mut c_char, out_error: *mut *mut c_char) -> Status {
    boundary(std::ptr::null(), out_error, || {
        let slot = out(out_env_json, "out_env_json")?;
        let passthrough = match opt_text(options_json, "options_json")? {
            None => Vec::new(),
            Some(j) => {
                let map = options::parse_object(j)?;
                options::Opts::new(&map).str_list("passthrough")?.unwrap_or_default()
            }
        };
        *slot = give(serde_json::to_string(&crate::env::build(None, &passthrough)).expect("serialising a map"));
        Ok(())
    })
}

/// Prompt content blocks → `{"message","images"}` for `omprpc_client_prompt` (which also takes
/// them directly as the `content` option): `[{"type":"text","text"}, {"type":"image","path"|
/// "data_uri"}, {"type":"file","path"|"data_uri"|"text","name"?}]`. Images are checked from
/// their bytes; files must be UTF-8 text; an unknown block type is INVALID_ARGUMENT.
/// Ownership: the caller frees `*out_prompt_json` with `omprpc_string_free`. Threads: any
/// thread. Statuses: OK, INVALID_ARGUMENT (also for an unreadable file), INVALID_JSON,
/// INVALID_UTF8, PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_prompt_from_content(blocks_json: *const c_char, out_prompt_json: *mut *mut c_char, out_error: *mut *mut c_char) -> Status {
    boundary(std::ptr::null(), out_error, || {
        let slot = out(out_prompt_json, "out_prompt_json")?;
        let blocks = parse_value(text(blocks_json, "blocks_json")?, "blocks_json")?;
        *slot = give(crate::prompt::build(&blocks)?.to_string());
        Ok(())
    })
}

/// Writes a custom-provider config (pi: models.json, omp: models.yml) into a private agent
/// directory (0700; or `dir`) and returns `{"dir","file","env","model","envPassthrough"}`:
/// merge `env` into the start options' `env`, `envPassthrough` into `env_passthrough`, and use
/// `model` as the `model` option. The caller removes the directory when done.
/// Ownership: the caller frees `*out_result_json` with `omprpc_string_free` (and removes the
/// directory). Threads: any thread. Statuses: OK, INVALID_ARGUMENT, INVALID_JSON, INVALID_UTF8,
/// IO, PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_provider_config(options_json: *const c_char, out_result_json: *mut *mut c_char, out_error: *mut *mut c_char) -> Status {
    boundary(std::ptr::null(), out_error, || {
        let slot = out(out_result_json, "out_result_json")?;
        let opts = parse_value(text(options_json, "options_json")?, "options_json")?;
        *slot = give(crate::provider::write(&opts)?.to_string());
        Ok(())
    })
}

/// A tool-parameter JSON Schema made into the shape LLM providers accept (opt-in; see
/// docs/c-api.md "Schema sanitizer and skills filter"): local `$ref`s inlined (a recursive or
/// remote one is an error), `anyOf`/`oneOf` collapsed to the object branch (else the first
/// non-null typed one), `allOf` of objects merged, `examples`/`default`/`additionalProperties`/
/// `$schema`/`$id`/`$comment` removed, descriptions kept. Returns `{"schema", "dropped":[{"path","reason","value"}]}`:
/// everything taken out. `options_json`: NULL or `{"max_nodes": n}` (default 100000), the
/// bound on the output's size.
/// Ownership: the caller frees `*out_result_json` with `omprpc_string_free`. Threads: any
/// thread. Statuses: OK, INVALID_ARGUMENT (not an object, a recursive or unresolvable `$ref`),
/// INVALID_JSON, INVALID_UTF8, LIMIT_EXCEEDED, PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_sanitize_schema(schema_json: *const c_char, options_json: *const c_char, out_result_json: *mut *mut c_char, out_error: *mut *mut c_char) -> Status {
    boundary(std::ptr::null(), out_error, || {
        let slot = out(out_result_json, "out_result_json")?;
        let schema = parse_value(text(schema_json, "schema_json")?, "schema_json")?;
        let mut max_nodes = crate::protocol::schema::DEFAULT_MAX_NODES;
        if let Some(j) = opt_text(options_json, "options_json")? {
            let map = options::parse_object(j)?;
            if let Some(k) = map.keys().find(|k| *k != "max_nodes") {
                return Err(crate::error::Error::invalid(format!("unknown sanitize_schema option \"{k}\"")));
            }
            max_nodes = options::Opts::new(&map).bound("max_nodes", Some(max_nodes))?.unwrap_or(usize::MAX);
        }
        *slot = give(crate::protocol::schema::sanitize(&schema, max_nodes)?.to_json().to_string());
        Ok(())
    })
}

/// The flags that select skills for an agent: `options_json` `{"flavor":"omp"|"pi",
/// "agent_version"?: "X.Y.Z", "skills": "all"|"none"|[names or paths], "tools"?: [names]}` →
/// `{"flags":[…], "needs_read": bool, "tools": [names]|null}`. omp selects by name
/// (`--skills=`), pi from 0.50 by path (`--no-skills --skill <path>`…), older pi only all or
/// none (its `--skills` filters nothing); what the agent cannot express is INVALID_ARGUMENT.
/// `needs_read`: the agent lists skills only with `read` on; `tools` is the given allow-list
/// with `read` added then. The start option `skills` applies the same. Ownership: the caller frees `*out_result_json` with `omprpc_string_free`.
/// Threads: any thread. Statuses: OK, INVALID_ARGUMENT, INVALID_JSON, INVALID_UTF8, PANIC.
#[no_mangle]
pub unsafe extern "C" fn omprpc_skills_flags(options_json: *const c_char, out_result_json: *mut *mut c_char, out_error: *mut *mut c_char) -> Status {
    boundary(std::ptr::null(), out_error, || {
        let slot = out(out_result_json, "out_result_json")?;
        let map = options::parse_object(text(options_json, "options_json")?)?;
        *slot = give(crate::protocol::skills::for_options(&map)?.to_string());
        Ok(())
    })
}
