//! Start options: a JSON object with snake_case keys (docs/c-api.md lists them). Every key is
//! checked for type, and an unknown key is an error, so a misspelt option never passes
//! silently.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::bridge::address::TcpAddresses;
use crate::bridge::{Gate, Plan, Rules, Transport};
use crate::error::{Error, Result};
use crate::protocol::argv::{self, Flavor, Launcher, LauncherEnv};
use crate::protocol::scope;
use crate::protocol::version::{self, Probed, Version};
use crate::transport::process::SpawnSpec;

const KNOWN: &[&str] = &[
    "command", "executable", "flavor", "provider", "model", "session_dir", "thinking", "system_prompt",
    "append_system_prompt", "provider_session_id", "tools", "no_session", "no_skills", "no_rules", "no_title",
    "rpc_defaults", "extra_args", "extensions", "cwd", "env", "inherit_env", "startup_timeout_ms",
    "request_timeout_ms", "turn_timeout_ms", "max_event_history", "max_stderr_lines", "max_frame_bytes",
    "max_outbound_frame_bytes", "event_queue_capacity", "stop_grace_ms", "kill_grace_ms", "negotiate_v2",
    "invalid_frames", "host_tools", "host_uri_schemes", "ui_policy", "handshake", "bridge", "bridge_transport",
    "bridge_listen", "bridge_advertise",
    "tool_policy", "host_tool_timeout_ms", "turn_summary", "turn_idle_timeout_ms", "env_passthrough",
    "system_prompt_via_file", "event_queue_max_bytes", "max_turn_bytes", "turn_events",
    "log_level", "log_queue_capacity",
    "record_path", "activity_probe_ms", "agent_version", "approval_mode", "queue_responses", "prompt_complete_events",
    "fault_panic",
    // The launcher: an argv prefix the agent runs through (protocol::argv::Launcher).
    "launcher", "launcher_env", "launcher_shell",
    // The embedder helpers as start options (protocol::skills, protocol::schema).
    "skills", "sanitize_tool_schemas",
    // What the agent may load and reach beyond what the host names (protocol::scope).
    "trust_project", "mcp", "context_files", "exclude_tools",
];

/// The bridge's transport: a Unix socket, or TCP — loopback by default; `bridge_listen` (what
/// to bind) and `bridge_advertise` (what the extension dials) each imply TCP. Unset, it is the
/// Unix socket on Unix and loopback TCP (with the token) on Windows (docs/windows.md).
fn bridge_transport(o: &Opts) -> Result<Transport> {
    let (listen, advertise) = (o.str("bridge_listen")?, o.str("bridge_advertise")?);
    match o.str("bridge_transport")? {
        None if listen.is_none() && advertise.is_none() && cfg!(unix) => Ok(Transport::Unix),
        None | Some("tcp") => Ok(Transport::Tcp(TcpAddresses::parse(listen, advertise)?)),
        Some("unix") if listen.is_none() && advertise.is_none() => Ok(Transport::Unix),
        Some("unix") => Err(Error::invalid(
            "options \"bridge_listen\" and \"bridge_advertise\" are TCP addresses: they cannot go with \"bridge_transport\":\"unix\"",
        )),
        Some(_) => Err(wrong("bridge_transport", "\"unix\" or \"tcp\"")),
    }
}

/// The library threads a debug build can be told to panic in (`fault_panic`, a test hook).
pub const FAULT_POINTS: [&str; 4] = ["reader", "writer", "bridge_accept", "bridge_conn"];

/// The quiet before an activity probe: a run's `agent_start` follows its prompt's response
/// within a millisecond on both agents, and a continuation follows a non-terminal `agent_end`
/// as fast, so a quarter second of silence already means nothing is coming.
pub const DEFAULT_ACTIVITY_PROBE: Duration = Duration::from_millis(250);

pub use crate::protocol::opts::Opts;
use crate::protocol::opts::wrong;
pub use crate::turn::TurnEvents;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handshake {
    /// Wait for the `ready` frame (omp).
    Ready,
    /// Send `get_state` and wait for its answer (pi, which has no ready frame).
    Probe,
    /// Consider the agent started once it is spawned.
    None,
}

/// A library-side answer to interactive UI requests ("headless UI").
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UiPolicy {
    /// None: cancel the confirm; Some(b): answer `confirmed: b`.
    pub confirm: Option<bool>,
    /// The answer to a `select` (None: cancel it).
    pub select: Option<String>,
    /// The answer to an `input` (None: cancel it).
    pub input: Option<String>,
    /// The answer to an `editor` (None: cancel it).
    pub editor: Option<String>,
}

impl UiPolicy {
    pub fn parse(v: &Value) -> Result<Option<UiPolicy>> {
        let map = match v {
            Value::Null => return Ok(None),
            Value::Object(m) => m,
            _ => return Err(Error::invalid_json("a UI policy must be a JSON object or null")),
        };
        let mut p = UiPolicy { confirm: Some(false), ..Default::default() };
        for (k, v) in map {
            let text = || match v {
                Value::Null => Ok(None),
                Value::String(s) => Ok(Some(s.clone())),
                _ => Err(Error::invalid(format!("UI policy \"{k}\" must be a string or null"))),
            };
            match k.as_str() {
                "confirm" => {
                    p.confirm = match v {
                        Value::Null => None,
                        Value::Bool(b) => Some(*b),
                        _ => return Err(Error::invalid("UI policy \"confirm\" must be true, false or null")),
                    }
                }
                "select" => p.select = text()?,
                "input" => p.input = text()?,
                "editor" => p.editor = text()?,
                _ => return Err(Error::invalid(format!("unknown UI policy key \"{k}\""))),
            }
        }
        Ok(Some(p))
    }
}

#[derive(Clone, Debug)]
pub struct Options {
    pub spawn: SpawnSpec,
    pub flavor: Flavor,
    pub handshake: Handshake,
    pub startup_timeout: Option<Duration>,
    pub request_timeout: Option<Duration>,
    pub turn_timeout: Option<Duration>,
    pub max_event_history: Option<usize>,
    pub max_stderr_lines: Option<usize>,
    pub max_frame_bytes: Option<usize>,
    pub max_outbound_frame_bytes: Option<usize>,
    pub event_queue_capacity: usize,
    pub event_queue_max_bytes: usize,
    /// Bytes of events one turn may retain before it fails with LIMIT_EXCEEDED.
    pub max_turn_bytes: Option<usize>,
    /// Which events a turn retains: all, all but `message_update`, or none.
    pub turn_events: TurnEvents,
    pub stop_grace: Duration,
    pub kill_grace: Duration,
    pub negotiate_v2: bool,
    pub skip_invalid_frames: bool,
    /// Host tools registered with `set_host_tools` during start (omp).
    pub host_tools: Option<Value>,
    pub host_uri_schemes: Option<Value>,
    pub ui_policy: Option<UiPolicy>,
    /// The tool bridge to set up before spawning (pi's host tools, the policy gate).
    pub bridge: Option<Plan>,
    /// Add a `summary` to prompt_and_wait's turn JSON.
    pub turn_summary: bool,
    /// Fail a waiting turn when no event arrives for this long (distinct from the agent's
    /// stdout ending, which is PROCESS_EXITED).
    pub turn_idle_timeout: Option<Duration>,
    /// How long the agent must be quiet before a waiter asks `get_state` whether it is idle,
    /// where its stream leaves that open (client::lifecycle). None: never ask.
    pub activity_probe: Option<Duration>,
    /// Response frames are queued too, verbatim, as events (a raw-frame tap: omp_rpc's
    /// `on_frame`); off, responses reach only the calls that wait for them.
    pub queue_responses: bool,
    /// Queue a `prompt_complete` event when a prompt completes (lifecycle::Completion): what a
    /// host streaming events watches for instead of deciding completion itself. Off by default:
    /// omp_rpc's listeners see only the agent's frames.
    pub prompt_complete_events: bool,
    /// Test hook (debug builds): the library thread that panics at its next unit of work
    /// (`FAULT_POINTS`), to test the panic boundary around library threads.
    pub fault_panic: Option<String>,
    /// The `model` option, named by usage records whose message does not name one.
    pub model: Option<String>,
    /// Pass system prompts as files in a private directory rather than in argv.
    pub system_prompt_via_file: bool,
    /// Record every frame, both directions, to this JSONL file (transport::record).
    pub record_path: Option<PathBuf>,
    /// The agent's version: `agent_version` when pinned, else what `--version` said (None:
    /// unknown; the argv is then the newest version's).
    pub agent_version: Option<Version>,
    /// `<launcher> --version` to run before spawning (start runs it, then `from_map_at`).
    pub version_probe: Option<SpawnSpec>,
    /// Collect log records at this level and above for `next_logs` (None: off).
    pub log_level: Option<crate::observe::Level>,
    pub log_queue_capacity: usize,
    /// The argv prefix the agent runs through (`launcher`); `spawn` stays the agent's own.
    pub launcher: Option<Launcher>,
}

/// `tool_policy`: `{"mode":"host"|"rules","allow":[…],"block":{name:reason},"default":"allow"|"block",
/// "fail_open":false,"timeout_ms":30000}`.
fn parse_gate(v: &Value) -> Result<Gate> {
    let m = v.as_object().ok_or_else(|| wrong("tool_policy", "an object"))?;
    let o = Opts::new(m);
    for k in m.keys() {
        if !["mode", "allow", "block", "default", "fail_open", "timeout_ms"].contains(&k.as_str()) {
            return Err(Error::invalid(format!("unknown tool_policy key \"{k}\"")));
        }
    }
    let rules = match o.str("mode")? {
        None | Some("host") => None,
        Some("rules") => {
            let block = match m.get("block") {
                None | Some(Value::Null) => Default::default(),
                Some(Value::Object(b)) => b
                    .iter()
                    .map(|(k, v)| v.as_str().map(|r| (k.clone(), r.to_string())).ok_or_else(|| wrong("tool_policy.block", "an object of reason strings")))
                    .collect::<Result<_>>()?,
                Some(_) => return Err(wrong("tool_policy.block", "an object of reason strings")),
            };
            let default_block = match o.str("default")? {
                None | Some("block") => true,
                Some("allow") => false,
                Some(_) => return Err(wrong("tool_policy.default", "\"allow\" or \"block\"")),
            };
            Some(Rules { allow: o.str_list("allow")?.unwrap_or_default().into_iter().collect(), block, default_block })
        }
        Some(_) => return Err(wrong("tool_policy.mode", "\"host\" or \"rules\"")),
    };
    let timeout_ms = match m.get("timeout_ms") {
        None | Some(Value::Null) => 30_000,
        Some(v) => v.as_u64().ok_or_else(|| wrong("tool_policy.timeout_ms", "a non-negative integer"))?,
    };
    Ok(Gate { rules, fail_open: o.bool("fail_open")?.unwrap_or(false), timeout_ms })
}

/// Host tools with each `parameters` schema sanitized; an error names the tool.
fn sanitized_tools(tools: Vec<Value>) -> Result<Vec<Value>> {
    use crate::protocol::schema;
    tools
        .into_iter()
        .map(|mut tool| {
            if let Some(params) = tool.get_mut("parameters") {
                let done = schema::sanitize(params, schema::DEFAULT_MAX_NODES).map_err(|e| {
                    let name = tool.get("name").and_then(Value::as_str).unwrap_or("?");
                    Error::new(e.status, format!("host tool \"{name}\": {}", e.message))
                })?;
                tool["parameters"] = done.schema;
            }
            Ok(tool)
        })
        .collect()
}

pub fn parse_object(json: &str) -> Result<Map<String, Value>> {
    match serde_json::from_str::<Value>(json) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(Error::invalid_json("options must be a JSON object")),
        Err(e) => Err(Error::invalid_json(format!("options are not valid JSON: {e}"))),
    }
}

/// The unsupported-version error: both versions named.
pub fn check_supported(flavor: Flavor, v: Version) -> Result<()> {
    let (oldest, newest) = version::supported(flavor);
    if v < oldest {
        return Err(Error::new(
            crate::error::Status::Protocol,
            format!(
                "{name} {v} is not supported: omprpc supports {name} {oldest} to {newest} (older {name} lacks what the \
                 library relies on, e.g. pi before 0.35 has no --extension); upgrade {name}",
                name = flavor.name()
            ),
        ));
    }
    Ok(())
}

/// `inherit_env`: which part of this process's environment the agent gets under `env`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Inherit {
    /// The allow-list (crate::env): the default.
    Allowlist,
    /// All of it (`true`).
    All,
    /// None of it (`false`): exactly `env` and `env_passthrough`.
    Nothing,
}

/// Env names whose values are treated as secrets (matched case-insensitively, as substrings).
const SECRET_NAME_PARTS: &[&str] = &["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "AUTH", "CREDENTIAL", "COOKIE", "SESSION"];

/// What the client's log records must never show (the logger scrubs what it is given): the
/// system prompts (as options and wherever argv carries them) and secret-looking env values
/// (the client's, and the parent's when it is inherited).
pub fn log_secrets(options: &Map<String, Value>, spawn: &SpawnSpec) -> Vec<String> {
    let mut out: Vec<String> = ["system_prompt", "append_system_prompt"]
        .iter()
        .filter_map(|k| options.get(*k).and_then(Value::as_str).map(str::to_string))
        .collect();
    // Whatever argv redaction hides (values after secret flags, `--flag=value` forms).
    for (raw, shown) in spawn.argv.iter().zip(argv::redact(&spawn.argv)) {
        if *raw != shown {
            out.push(raw.split_once('=').filter(|_| shown.contains('=')).map_or(raw.as_str(), |(_, v)| v).to_string());
        }
    }
    let secret_name = |k: &str| {
        let upper = k.to_ascii_uppercase();
        SECRET_NAME_PARTS.iter().any(|p| upper.contains(p))
    };
    out.extend(spawn.env.iter().filter(|(k, _)| secret_name(k)).map(|(_, v)| v.clone()));
    if spawn.inherit_env {
        out.extend(std::env::vars().filter(|(k, _)| secret_name(k)).map(|(_, v)| v));
    }
    out
}

impl Options {
    /// The options as given, with the version pinned by `agent_version` if any; when the
    /// version is left to a probe, `version_probe` says what to run.
    pub fn from_map(map: &Map<String, Value>) -> Result<Options> {
        Options::from_map_at(map, None)
    }

    /// The options for an agent whose `--version` said `probed`: its flavour (unless the
    /// `flavor` option pins one) and the argv for its version. Fails for an unsupported one.
    pub fn from_map_at(map: &Map<String, Value>, probed: Option<Probed>) -> Result<Options> {
        if let Some(k) = map.keys().find(|k| !KNOWN.contains(&k.as_str())) {
            return Err(Error::invalid(format!("unknown option \"{k}\"")));
        }
        let o = Opts::new(map);
        let pinned_flavor = matches!(o.str("flavor")?, Some("omp") | Some("pi"));
        let flavor = match probed {
            // omp prints `omp/X.Y.Z`, pi a bare version.
            Some(p) if !pinned_flavor => p.flavor.unwrap_or(Flavor::Pi),
            _ => argv::flavor(&o)?,
        };
        let (agent_version, probe_due) = match o.str("agent_version")? {
            None | Some("auto") => (probed.map(|p| p.version), probed.is_none()),
            // The host vouches for an agent outside the measured range (a fork, a build of its
            // own): neither probed nor checked; the argv is the newest version's.
            Some("unchecked") => (None, false),
            Some(text) => match Version::parse(text) {
                Some(v) => (Some(v), false),
                None => return Err(wrong("agent_version", "\"auto\", \"unchecked\" or a version \"X.Y.Z\"")),
            },
        };
        if let Some(v) = agent_version {
            check_supported(flavor, v)?;
        }
        let host_tools = match o.get("host_tools") {
            None => None,
            Some(v @ Value::Array(_)) => Some(v.clone()),
            Some(_) => return Err(wrong("host_tools", "an array")),
        };
        // `sanitize_tool_schemas`: the start's host tools' parameters through the schema
        // sanitizer (opt-in; what it drops is what `omprpc_sanitize_schema` reports).
        let host_tools = match (host_tools, o.bool("sanitize_tool_schemas")?.unwrap_or(false)) {
            (Some(Value::Array(tools)), true) => Some(Value::Array(sanitized_tools(tools)?)),
            (tools, _) => tools,
        };
        // pi has no host tools in its protocol: they go through the bridge ("auto"), and
        // "always" bridges them on omp too.
        let bridge_tools = match o.str("bridge")? {
            None | Some("auto") => flavor == Flavor::Pi,
            Some("always") => true,
            Some("never") => false,
            Some(_) => return Err(wrong("bridge", "\"auto\", \"always\" or \"never\"")),
        };
        let gate = o.get("tool_policy").map(parse_gate).transpose()?;
        let bridged: Vec<Value> = match (&host_tools, bridge_tools) {
            (Some(Value::Array(t)), true) => {
                crate::client::host::HostRegistry::check_tools(host_tools.as_ref().unwrap())?;
                t.clone()
            }
            _ => Vec::new(),
        };
        // Checked even when no bridge is needed, so a mistyped address never passes silently.
        let transport = bridge_transport(&o)?;
        let bridge = if !bridged.is_empty() || gate.is_some() {
            Some(Plan {
                flavor,
                transport,
                tools: bridged,
                gate,
                call_timeout_ms: match o.millis("host_tool_timeout_ms", None)? {
                    None => 0,
                    Some(d) => d.as_millis() as u64,
                },
            })
        } else {
            None
        };
        let names = bridge.as_ref().map(Plan::tool_names).unwrap_or_default();
        let argv = argv::build(&o, flavor, bridge.is_some().then_some(names.as_slice()), agent_version)?;
        let explicit: Vec<(String, String)> = match o.get("env") {
            None => Vec::new(),
            Some(Value::Object(m)) => m
                .iter()
                .map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())).ok_or_else(|| wrong("env", "an object of strings")))
                .collect::<Result<_>>()?,
            Some(_) => return Err(wrong("env", "an object of strings")),
        };
        // The agent's environment: the allow-list of ours — what an agent needs to run and the
        // provider keys it reads (crate::env) — by default or with "allowlist", so that an agent
        // started with nothing but a model reaches it on a user's machine; all of ours (true);
        // or nothing of ours (false: isolation). `env_passthrough` names come from ours in every
        // case; `env` goes on top.
        let passthrough = o.str_list("env_passthrough")?.unwrap_or_default();
        let inherit = match o.get("inherit_env") {
            None => Inherit::Allowlist,
            Some(Value::String(s)) if s == "allowlist" => Inherit::Allowlist,
            Some(Value::Bool(true)) => Inherit::All,
            Some(Value::Bool(false)) => Inherit::Nothing,
            Some(_) => return Err(wrong("inherit_env", "true, false or \"allowlist\"")),
        };
        // What the host asked the agent to get by name (all a far-side launcher carries over).
        let named: Vec<(String, String)> =
            passthrough.iter().filter_map(|n| std::env::var(n).ok().map(|v| (n.clone(), v))).chain(explicit.iter().cloned()).collect();
        let env: Vec<(String, String)> = match inherit {
            Inherit::Allowlist => crate::env::build(None, &passthrough).into_iter().chain(explicit).collect(),
            Inherit::All | Inherit::Nothing => named.clone(),
        };
        let inherit_all = inherit == Inherit::All;
        let handshake = match o.str("handshake")? {
            None => {
                if flavor == Flavor::Pi {
                    Handshake::Probe
                } else {
                    Handshake::Ready
                }
            }
            Some("ready") => Handshake::Ready,
            Some("probe") => Handshake::Probe,
            Some("none") => Handshake::None,
            Some(_) => return Err(wrong("handshake", "\"ready\", \"probe\" or \"none\"")),
        };
        let skip_invalid_frames = match o.str("invalid_frames")? {
            None | Some("fatal") => false,
            Some("skip") => true,
            Some(_) => return Err(wrong("invalid_frames", "\"fatal\" or \"skip\"")),
        };
        let host_uri_schemes = match o.get("host_uri_schemes") {
            None => None,
            Some(v @ Value::Array(_)) => Some(v.clone()),
            Some(_) => return Err(wrong("host_uri_schemes", "an array")),
        };
        let cwd = o.str("cwd")?;
        let launcher = Launcher::parse(&o, &named, cwd)?;
        let far_side = launcher.as_ref().is_some_and(|l| l.env == LauncherEnv::Command);
        if far_side && o.bool("system_prompt_via_file")? == Some(true) {
            // The files would be written here, and the agent on the far side given paths to
            // files it cannot open: its system prompt would be lost.
            return Err(Error::invalid(
                "option \"system_prompt_via_file\" writes files on this machine, which an agent behind a launcher \
                 with launcher_env \"command\" (ssh, docker, kubectl …) cannot read; leave it off there",
            ));
        }
        // What pi before project trust would load from the repository with no flag to keep it
        // out: refused rather than loaded behind the host's back (protocol::scope). Behind a
        // far-side launcher the directory is not on this machine to look at.
        let unkeepable = scope::unkeepable(flavor, agent_version, o.bool("trust_project")?.unwrap_or(false));
        if !far_side && !unkeepable.is_empty() {
            let dir = cwd.map(PathBuf::from).or_else(|| std::env::current_dir().ok()).unwrap_or_default();
            if let Some(found) = unkeepable.into_iter().find(|p| dir.join(p).exists()) {
                let v = agent_version.map_or_else(String::new, |v| format!(" {v}"));
                return Err(Error::invalid(format!(
                    "the working directory {} holds {found}, which pi{v} loads with no way to keep it out (project \
                     trust, --approve / --no-approve, came in pi 0.79.0): pass trust_project: true to accept the \
                     repository's own resources, or run pi 0.79.0 or later",
                    dir.display()
                )));
            }
        }
        // Through a far-side launcher `cwd` is the agent's (`env -C`), not the launcher's.
        let spawn = SpawnSpec { argv, cwd: cwd.filter(|_| !far_side).map(PathBuf::from), env, inherit_env: inherit_all };
        // The probe runs the agent's own words through the launcher: the agent is on its far side.
        let version_probe = probe_due.then(|| version::launcher(&spawn.argv)).flatten().map(|words| SpawnSpec {
            argv: launcher.as_ref().map_or_else(|| words.to_vec(), |l| l.wrap(words)),
            ..spawn.clone()
        });
        Ok(Options {
            agent_version,
            version_probe,
            spawn,
            flavor,
            handshake,
            startup_timeout: o.millis("startup_timeout_ms", Some(Duration::from_secs(30)))?,
            request_timeout: o.millis("request_timeout_ms", Some(Duration::from_secs(30)))?,
            turn_timeout: o.millis("turn_timeout_ms", None)?,
            max_event_history: o.bound("max_event_history", Some(10_000))?,
            max_stderr_lines: o.bound("max_stderr_lines", Some(512))?,
            max_frame_bytes: o.bound("max_frame_bytes", None)?,
            max_outbound_frame_bytes: o.bound("max_outbound_frame_bytes", None)?,
            event_queue_capacity: o.bound("event_queue_capacity", Some(65_536))?.unwrap_or(usize::MAX),
            event_queue_max_bytes: o.bound("event_queue_max_bytes", Some(64 << 20))?.unwrap_or(usize::MAX),
            max_turn_bytes: o.bound("max_turn_bytes", Some(1 << 30))?,
            turn_events: match o.str("turn_events")? {
                None | Some("all") => TurnEvents::All,
                Some("no_updates") => TurnEvents::NoUpdates,
                Some("none") => TurnEvents::None,
                Some(_) => return Err(wrong("turn_events", "\"all\", \"no_updates\" or \"none\"")),
            },
            stop_grace: o.millis("stop_grace_ms", Some(Duration::from_secs(2)))?.unwrap_or(Duration::from_secs(2)),
            kill_grace: o.millis("kill_grace_ms", Some(Duration::from_secs(1)))?.unwrap_or(Duration::from_secs(1)),
            negotiate_v2: o.bool("negotiate_v2")?.unwrap_or(true),
            skip_invalid_frames,
            host_tools: if bridge_tools { None } else { host_tools },
            host_uri_schemes,
            ui_policy: match o.get("ui_policy") {
                None => None,
                Some(v) => UiPolicy::parse(v)?,
            },
            bridge,
            turn_summary: o.bool("turn_summary")?.unwrap_or(false),
            turn_idle_timeout: o.millis("turn_idle_timeout_ms", None)?,
            activity_probe: o.millis("activity_probe_ms", Some(DEFAULT_ACTIVITY_PROBE))?,
            queue_responses: o.bool("queue_responses")?.unwrap_or(false),
            prompt_complete_events: o.bool("prompt_complete_events")?.unwrap_or(false),
            fault_panic: match o.str("fault_panic")? {
                None => None,
                Some(_) if !cfg!(debug_assertions) => {
                    return Err(Error::invalid("option \"fault_panic\" is a test hook of debug builds"))
                }
                Some(p) if FAULT_POINTS.contains(&p) => Some(p.to_string()),
                Some(_) => return Err(wrong("fault_panic", "\"reader\", \"writer\", \"bridge_accept\" or \"bridge_conn\"")),
            },
            model: o.str("model")?.map(str::to_string),
            system_prompt_via_file: o.bool("system_prompt_via_file")?.unwrap_or(false),
            record_path: match o.str("record_path")? {
                Some("") => return Err(wrong("record_path", "a file path (not empty)")),
                p => p.map(PathBuf::from),
            },
            log_level: match o.str("log_level")? {
                None => None,
                Some(l) => crate::observe::Level::parse(l).map_err(|e| Error::invalid(format!("option \"log_level\": {e}")))?,
            },
            log_queue_capacity: o.bound("log_queue_capacity", Some(crate::observe::DEFAULT_LOG_CAPACITY))?.unwrap_or(usize::MAX),
            launcher,
        })
    }

    /// What to spawn: the agent's spec, its argv behind the launcher when there is one.
    pub fn launch_spec(&self) -> SpawnSpec {
        match &self.launcher {
            None => self.spawn.clone(),
            Some(l) => SpawnSpec { argv: l.wrap(&self.spawn.argv), ..self.spawn.clone() },
        }
    }

    /// `launch_spec`'s argv as logs, records and `info` show it (system prompts and the
    /// launcher's `env` values redacted).
    pub fn launch_shown(&self) -> Vec<String> {
        match &self.launcher {
            None => argv::redact(&self.spawn.argv),
            Some(l) => l.wrap_shown(&self.spawn.argv),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn log_secrets_come_from_prompts_argv_and_secret_looking_env_names() {
        let opts = serde_json::json!({"system_prompt": "the prompt text", "append_system_prompt": "more text"});
        let spawn = SpawnSpec {
            argv: vec!["pi".into(), "--system-prompt=argv prompt".into(), "--model".into(), "m".into()],
            cwd: None,
            env: vec![("OPENAI_API_KEY".into(), "sk-1234567".into()), ("github_token".into(), "ghp-abcdef".into()), ("HOME".into(), "/home/u".into())],
            inherit_env: false,
        };
        let got = log_secrets(opts.as_object().unwrap(), &spawn);
        assert_eq!(got, ["the prompt text", "more text", "argv prompt", "sk-1234567", "ghp-abcdef"]);
    }

    use super::*;
    use serde_json::json;

    fn opts(v: Value) -> Result<Options> {
        Options::from_map(v.as_object().unwrap())
    }

    #[test]
    fn defaults() {
        let o = opts(json!({"command": ["/bin/true"]})).unwrap();
        assert_eq!(o.max_event_history, Some(10_000));
        assert_eq!(o.max_stderr_lines, Some(512));
        assert_eq!(o.turn_timeout, None);
        assert_eq!(o.request_timeout, Some(Duration::from_secs(30)));
        assert!(!o.spawn.inherit_env);
        assert_eq!(o.handshake, Handshake::Ready);
    }

    #[test]
    fn the_default_environment_is_the_allow_list_with_provider_keys() {
        // This process's own environment is what the options read: names no other test sets.
        std::env::set_var("ANTHROPIC_API_KEY", "sk-ant-options-test");
        std::env::set_var("OMPRPC_OPTIONS_TEST_SECRET", "hunter2");
        let names = |v: Value| -> (Vec<String>, bool) {
            let o = opts(v).unwrap();
            (o.spawn.env.iter().map(|(k, _)| k.clone()).collect(), o.spawn.inherit_env)
        };
        for default in [json!({"command": ["a"]}), json!({"command": ["a"], "inherit_env": "allowlist"})] {
            let (env, all) = names(default);
            assert!(!all);
            assert!(env.iter().any(|k| k == "PATH") && env.iter().any(|k| k == "ANTHROPIC_API_KEY"), "{env:?}");
            assert!(!env.iter().any(|k| k == "OMPRPC_OPTIONS_TEST_SECRET"), "an unlisted name passed: {env:?}");
        }
        let (env, all) = names(json!({"command": ["a"], "inherit_env": false, "env": {"A": "1"}}));
        assert_eq!((env, all), (vec!["A".to_string()], false), "false: nothing of ours");
        let (env, all) = names(json!({"command": ["a"], "inherit_env": true, "env": {"A": "1"}}));
        assert_eq!((env, all), (vec!["A".to_string()], true), "true: all of ours, under env");
        assert!(opts(json!({"inherit_env": "all"})).unwrap_err().message.contains("inherit_env"));
    }

    #[test]
    fn bad_values_are_named() {
        assert!(opts(json!({"max_event_history": 0})).unwrap_err().message.contains("max_event_history"));
        assert!(opts(json!({"max_event_history": -1})).is_err());
        assert_eq!(opts(json!({"max_event_history": null})).unwrap().max_event_history, None);
        assert!(opts(json!({"startup_timeout_ms": "5"})).unwrap_err().message.contains("startup_timeout_ms"));
        assert_eq!(opts(json!({"request_timeout_ms": -1})).unwrap().request_timeout, None);
        assert!(opts(json!({"env": {"A": 1}})).is_err());
        assert!(opts(json!({"no_such": 1})).unwrap_err().message.contains("no_such"));
        assert!(opts(json!({"handshake": "maybe"})).is_err());
    }

    #[test]
    fn a_far_side_launcher_carries_only_the_env_named_by_the_host() {
        let o = opts(json!({"launcher": ["ssh", "h"], "inherit_env": "allowlist", "env_passthrough": ["PATH"], "env": {"A": "1"}})).unwrap();
        let far: Vec<&str> = o.launcher.as_ref().unwrap().far_env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(far, ["PATH", "A"]);
        assert!(o.spawn.env.iter().any(|(k, _)| k == "PATH"), "the local launcher still gets the allow-list");
        let o = opts(json!({"launcher": ["bwrap"], "env": {"A": "1"}, "cwd": "/w"})).unwrap();
        assert!(o.launcher.as_ref().unwrap().far_env.is_empty());
        assert_eq!(o.spawn.cwd, Some(PathBuf::from("/w")), "a launcher on this machine starts in cwd");
        let o = opts(json!({"launcher": ["docker", "exec", "-i", "c"], "cwd": "/w"})).unwrap();
        assert_eq!((o.spawn.cwd, o.launcher.unwrap().far_cwd.as_deref()), (None, Some("/w")), "cwd is the far side's");
    }

    #[test]
    fn a_skills_selection_is_built_again_for_the_probed_version() {
        // Unknown yet: the newest pi's flags; the probe's answer decides.
        let map = json!({"executable": "pi", "flavor": "pi", "skills": ["./skills/alpha"]});
        let map = map.as_object().unwrap();
        let first = Options::from_map(map).unwrap();
        assert!(first.version_probe.is_some());
        assert_eq!(first.spawn.argv, ["pi", "--mode", "rpc", "--no-skills", "--skill", "./skills/alpha", "--no-approve", "--no-mcp"]);
        // 0.73.1 has no project trust: discovery goes off instead (the skills chosen stand).
        let new = Probed { flavor: None, version: Version::new(0, 73, 1) };
        assert_eq!(
            Options::from_map_at(map, Some(new)).unwrap().spawn.argv,
            ["pi", "--mode", "rpc", "--no-skills", "--skill", "./skills/alpha", "--no-extensions", "--no-prompt-templates"]
        );
        let old = Probed { flavor: None, version: Version::new(0, 37, 2) };
        assert!(Options::from_map_at(map, Some(old)).unwrap_err().message.contains("cannot load a subset"));
    }

    #[test]
    fn ui_policy_parses() {
        let p = UiPolicy::parse(&json!({"confirm": true, "input": "x"})).unwrap().unwrap();
        assert_eq!(p, UiPolicy { confirm: Some(true), input: Some("x".into()), ..Default::default() });
        assert_eq!(UiPolicy::parse(&json!({})).unwrap().unwrap().confirm, Some(false));
        assert!(UiPolicy::parse(&json!(null)).unwrap().is_none());
        assert!(UiPolicy::parse(&json!({"confirm": "yes"})).is_err());
        assert!(UiPolicy::parse(&json!([1])).is_err());
    }
}
