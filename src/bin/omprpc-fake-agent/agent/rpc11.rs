//! Protocol 1.1 (`--protocol 1.1`): the "omp-rpc" 1.1.0 server of the omp fork whose Python
//! client is `omp_rpc` (casepot/oh-my-pi, based on omp 15.8.1; no npm release speaks it). What
//! it sends is written down in `tests/support/OMP11-NOTES.md`, from that server's source; this
//! module reproduces it for the commands the library and its bindings cover:
//!
//! * `ready` carries the protocol info (`protocol`, `server`, `mode`, `capabilities`, `limits`,
//!   `resetProfile`, `security`); every frame, responses too, ends with `seq`, `timestamp`,
//!   `sessionId` (out.rs).
//! * Typed errors: every failure has `errorInfo {code, message, details?, retryable}`; an
//!   unknown command or a malformed line without an id is an id-less `protocol_error` frame.
//! * `get_protocol_info`, `ping` (a `pong` frame, then the response).
//! * Operations: `bash`, `compact`, `handoff`, `login` are acknowledged with `{ack:"accepted",
//!   operationId:"op_<n>",queued:false}` after an `operation_start`, and end with one
//!   `operation_end {data}` / `operation_error {status,error,errorInfo}`. `bash` "hang" runs
//!   until `cancel_operation` or `abort_bash` cancels it (`operation_error` status
//!   `cancelled`, code `operation_cancelled`); `cancel_operation` of anything else:
//!   `operation_not_found`. `login` of an unknown provider ends in `operation_error`
//!   (`invalid_arguments`); of "anthropic": an `open_url` UI request, then the end.
//! * `get_session_entries`, `get_session_tree`, `get_observable_sessions` over the session the
//!   fake keeps (model and thinking-level changes, then the turns' messages).
//! * `add_host_tools`/`remove_host_tools`, `add_`/`remove_host_uri_schemes` (answers: every
//!   name registered after the change; reserved schemes such as `omp`: `host_uri_denied`).
//! * `get_login_providers`.

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::Agent;
use crate::command::Cmd;
use crate::json::{arr, obj, J};

/// Schemes the 1.1 server keeps for itself.
const RESERVED_SCHEMES: [&str; 11] = ["omp", "agent", "artifact", "memory", "local", "vault", "skill", "rule", "mcp", "issue", "pr"];

const COMMANDS: [&str; 47] = [
    "get_protocol_info", "get_state", "ping", "cancel_operation", "shutdown", "shutdown_after", "prompt", "steer",
    "follow_up", "abort", "abort_and_prompt", "new_session", "set_todos", "set_host_tools", "add_host_tools",
    "remove_host_tools", "set_host_uri_schemes", "add_host_uri_schemes", "remove_host_uri_schemes", "set_model",
    "cycle_model", "get_available_models", "set_thinking_level", "cycle_thinking_level", "set_steering_mode",
    "set_follow_up_mode", "set_interrupt_mode", "compact", "set_auto_compaction", "set_auto_retry", "abort_retry",
    "bash", "abort_bash", "get_session_stats", "export_html", "switch_session", "branch", "get_branch_messages",
    "get_last_assistant_text", "set_session_name", "handoff", "get_messages", "get_session_entries",
    "get_session_tree", "get_observable_sessions", "get_login_providers", "login",
];

/// What protocol 1.1 keeps beyond the default server's state.
#[derive(Default)]
pub struct Rpc11 {
    next_op: u64,
    /// Operations still running ("bash" "hang"): id → (command, requestId).
    running: HashMap<String, (String, Option<J>)>,
    /// Host URI schemes by name, in registration order.
    schemes: Vec<String>,
}

/// An ISO-8601 UTC timestamp with milliseconds, as the 1.1 server writes them (the library's
/// recorder formats its timestamps the same way).
pub fn timestamp() -> String {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    omprpc::transport::record::iso_utc(now.as_secs() as i64, now.subsec_millis())
}

fn error_info(code: &str, message: &str, details: Option<J>) -> J {
    let info = obj! {"code": code, "message": message};
    let info = match details {
        Some(d) => info.with("details", d),
        None => info,
    };
    info.with("retryable", J::Bool(false))
}

/// The code the 1.1 server gives the failures this fake words its own way.
pub fn code_for(error: &str) -> &'static str {
    if error.starts_with("missing field") || error.starts_with("invalid field") {
        "invalid_arguments"
    } else if error.starts_with("Unknown command") {
        "unknown_command"
    } else {
        "internal_error"
    }
}

impl Agent {
    pub(super) fn protocol_info(&self) -> J {
        let events = arr![
            "protocol_error", "operation_start", "operation_end", "operation_error", "state_changed", "extension_ui_request",
            "extension_error", "host_tool_call", "host_tool_cancel", "host_uri_request", "host_uri_cancel", "pong", "shutdown",
            "agent_start", "agent_end", "turn_start", "turn_end", "message_start", "message_update", "message_end",
            "tool_execution_start", "tool_execution_update", "tool_execution_end"
        ];
        obj! {
            "protocol": obj! {"name": "omp-rpc", "version": "1.1.0", "schemaVersion": 1},
            "server": obj! {"packageName": "@oh-my-pi/pi-coding-agent", "packageVersion": "15.8.1", "pid": u64::from(std::process::id())},
            "mode": "rpc",
            "capabilities": obj! {
                "commands": J::Arr(COMMANDS.iter().map(|c| J::from(*c)).collect()),
                "events": events,
                "frameMetadata": true, "operationEvents": true, "typedErrors": true, "stateChanges": true,
                "sessionGraph": true, "taskEvents": true, "observableSessions": true, "extensionUi": true,
                "hostTools": true, "hostUris": true, "chunkedPayloads": false, "oneShot": true, "heartbeat": true,
            },
            "limits": obj! {
                "maxFrameBytes": 1048576, "maxPartialLineBytes": 1048576, "maxOutboundFrameBytes": 1048576,
                "maxHostToolResultBytes": 1032192, "maxHostToolUpdateBytes": 262144, "maxHostUriContentBytes": 1032192,
                "maxSessionEntryContentBytes": 262144, "maxUiPayloadBytes": 262144, "defaultOperationTimeoutMs": J::Null,
                "defaultHostToolTimeoutMs": J::Null, "defaultHostUriTimeoutMs": J::Null, "defaultExtensionUiTimeoutMs": 30000,
            },
            "resetProfile": obj! {"name": "rpc-defaults", "ambientUserConfigApplied": true, "settingOverrides": arr![]},
            "security": obj! {
                "enabledCommandCategories": arr!["protocol", "prompting", "state", "model", "thinking", "queue", "compaction", "retry", "bash", "session", "messages", "login"],
                "disabledTools": arr![],
                "hostToolPermissionMode": "host-owned",
                "hostUriAllowedSchemes": J::Arr(self.rpc11.schemes.iter().map(J::from).collect()),
                "hostUriReservedSchemes": J::Arr(RESERVED_SCHEMES.iter().map(|s| J::from(*s)).collect()),
                "sessionMutation": true,
                "loginProviders": arr!["anthropic"],
                "extensionsEnabled": true,
            },
        }
    }

    pub(super) fn ready_11(&mut self) {
        let info = self.protocol_info();
        let J::Obj(fields) = info else { unreachable!("protocol_info is an object") };
        let mut frame = vec![("type", J::from("ready"))];
        frame.extend(fields);
        self.out.frame(&J::Obj(frame));
        self.out.flush();
    }

    /// A failure with typed error info.
    pub(super) fn fail_typed(&mut self, id: &Option<J>, command: &str, code: &str, message: &str, details: Option<J>) {
        let mut fields: Vec<(&'static str, J)> = Vec::with_capacity(6);
        if let Some(id) = id {
            fields.push(("id", id.clone()));
        }
        fields.push(("type", J::from("response")));
        fields.push(("command", J::from(command)));
        fields.push(("success", J::Bool(false)));
        fields.push(("error", J::from(message)));
        fields.push(("errorInfo", error_info(code, message, details)));
        self.out.frame(&J::Obj(fields));
        self.out.flush();
    }

    /// An id-less fault: the 1.1 server reports it as a `protocol_error` frame.
    pub(super) fn protocol_error_11(&mut self, code: &str, message: &str) {
        self.out.frame(&obj! {"type": "protocol_error", "error": message, "errorInfo": error_info(code, message, None)});
        self.out.flush();
    }

    /// The commands only protocol 1.1 has (and those it answers differently); false: not one.
    pub(super) fn rpc11_command(&mut self, cmd: &Cmd<'_>) -> bool {
        let id = &cmd.id;
        let ty = cmd.ty.as_str();
        match ty {
            "get_protocol_info" => {
                let info = self.protocol_info();
                self.ok(id, ty, info);
            }
            "ping" => {
                let pong = obj! {"type": "pong"};
                let data = obj! {"pong": true};
                let (pong, data) = match cmd.raw("payload") {
                    Some(p) => (pong.with("payload", p.clone()), data.with("payload", p)),
                    None => (pong, data),
                };
                self.event(pong);
                self.ok(id, ty, data);
            }
            "cancel_operation" => match cmd.str("operationId") {
                Err(e) => self.fail(id, ty, &e),
                Ok(op) if self.rpc11.running.contains_key(&op) => {
                    self.cancel_op(&op);
                    self.ok(id, ty, obj! {"operationId": op});
                }
                Ok(op) => {
                    let message = format!("Operation not found: {op}");
                    self.fail_typed(id, ty, "operation_not_found", &message, None);
                }
            },
            "abort_bash" => {
                let bash: Vec<String> = self.rpc11.running.iter().filter(|(_, (c, _))| c == "bash").map(|(op, _)| op.clone()).collect();
                for op in bash {
                    self.cancel_op(&op);
                }
                self.ok(id, ty, obj! {});
            }
            "bash" => match cmd.str("command") {
                Err(e) => self.fail(id, ty, &e),
                Ok(command) if command == "hang" => {
                    let op = self.start_op(cmd);
                    self.rpc11.running.insert(op, (ty.to_owned(), id.clone()));
                }
                Ok(command) => {
                    let op = self.start_op(cmd);
                    let output = format!("{command}\n");
                    let n = output.len();
                    let data = obj! {
                        "output": output, "exitCode": 0, "cancelled": false, "truncated": false,
                        "totalLines": 1, "totalBytes": n, "outputLines": 1, "outputBytes": n,
                    };
                    self.end_op(&op, ty, id, Ok(data));
                }
            },
            "compact" => {
                let op = self.start_op(cmd);
                let data = obj! {"summary": "trimmed", "shortSummary": "trimmed", "firstKeptEntryId": "entry-1", "tokensBefore": 123};
                self.end_op(&op, ty, id, Ok(data));
            }
            "handoff" => {
                let op = self.start_op(cmd);
                self.end_op(&op, ty, id, Ok(obj! {"savedPath": "/tmp/fake-handoff.md"}));
            }
            "get_login_providers" => {
                let data = obj! {"providers": arr![
                    obj! {"id": "anthropic", "name": "Anthropic (Claude Pro/Max)", "available": true, "authenticated": false},
                    obj! {"id": "github-copilot", "name": "GitHub Copilot", "available": false, "authenticated": false},
                ]};
                self.ok(id, ty, data);
            }
            "login" => match cmd.str("providerId") {
                Err(e) => self.fail(id, ty, &e),
                Ok(provider) => {
                    let op = self.start_op(cmd);
                    if provider == "anthropic" {
                        self.event(obj! {
                            "type": "extension_ui_request", "id": format!("login-{op}"), "method": "open_url",
                            "url": "https://example.invalid/oauth", "instructions": "Open the URL to log in", "expectsResponse": false,
                        });
                        self.end_op(&op, ty, id, Ok(obj! {"providerId": provider}));
                    } else {
                        let message = format!("Unknown OAuth provider: {provider}");
                        let info = error_info("invalid_arguments", &message, Some(obj! {"providerId": provider}));
                        self.end_op(&op, ty, id, Err(("failed", message, info)));
                    }
                }
            },
            "get_session_entries" => self.session_entries(cmd),
            "get_session_tree" => {
                let include = cmd.get("includeEntries") == Some(&Value::Bool(true));
                let entries = self.entries();
                let leaf = entries.last().map(|e| J::from(e.id.clone())).unwrap_or(J::Null);
                // A linear session: one root, a chain of single children (built from the leaf up).
                let mut child: Option<J> = None;
                for e in entries.iter().rev() {
                    let node = obj! {
                        "id": e.id.clone(), "parentId": e.parent(), "type": e.ty, "timestamp": e.timestamp.clone(),
                        "children": J::Arr(child.take().into_iter().collect()),
                    };
                    child = Some(if include { node.with("entry", e.view(true)) } else { node });
                }
                self.ok(id, ty, obj! {"root": J::Arr(child.into_iter().collect()), "currentLeafId": leaf});
            }
            "get_observable_sessions" => {
                let data = obj! {"sessions": arr![obj! {"id": "main", "label": "Main Session", "status": "active", "updatedAt": timestamp()}]};
                self.ok(id, ty, data);
            }
            "add_host_tools" => match cmd.raw_array("tools") {
                Err(e) => self.fail(id, ty, &e),
                Ok(items) => {
                    for item in items {
                        let name = tool_name(item.get());
                        self.st.host_tools.retain(|t| tool_name(&raw_text(t)) != name);
                        self.st.host_tools.push(J::Raw(item.get().to_owned()));
                    }
                    let names = self.tool_names();
                    self.ok(id, ty, obj! {"toolNames": names});
                }
            },
            "remove_host_tools" => match cmd.raw_array("toolNames") {
                Err(e) => self.fail(id, ty, &e),
                Ok(items) => {
                    let gone: Vec<String> = items.iter().filter_map(|i| serde_json::from_str::<String>(i.get()).ok()).collect();
                    self.st.host_tools.retain(|t| !gone.contains(&tool_name(&raw_text(t))));
                    let names = self.tool_names();
                    self.ok(id, ty, obj! {"toolNames": names});
                }
            },
            "set_host_uri_schemes" | "add_host_uri_schemes" => self.register_schemes(cmd),
            "remove_host_uri_schemes" => match cmd.raw_array("schemes") {
                Err(e) => self.fail(id, ty, &e),
                Ok(items) => {
                    let gone: Vec<String> =
                        items.iter().filter_map(|i| serde_json::from_str::<String>(i.get()).ok()).map(|s| s.trim().to_lowercase()).collect();
                    self.rpc11.schemes.retain(|s| !gone.contains(s));
                    let schemes = J::Arr(self.rpc11.schemes.iter().map(J::from).collect());
                    self.ok(id, ty, obj! {"schemes": schemes});
                }
            },
            _ => return false,
        }
        true
    }

    fn tool_names(&self) -> J {
        J::Arr(self.st.host_tools.iter().map(|t| J::from(tool_name(&raw_text(t)))).collect())
    }

    fn register_schemes(&mut self, cmd: &Cmd<'_>) {
        let (id, ty) = (&cmd.id, cmd.ty.as_str());
        let items = match cmd.raw_array("schemes") {
            Ok(items) => items,
            Err(e) => return self.fail(id, ty, &e),
        };
        // The whole batch is checked before anything changes.
        let mut names = Vec::with_capacity(items.len());
        for item in &items {
            let v: Value = serde_json::from_str(item.get()).unwrap_or(Value::Null);
            let raw = v.get("scheme").and_then(Value::as_str).unwrap_or("");
            let scheme = raw.trim().to_lowercase();
            if scheme.is_empty() {
                return self.fail_typed(id, ty, "invalid_arguments", "Host URI scheme must be a non-empty string", None);
            }
            if RESERVED_SCHEMES.contains(&scheme.as_str()) {
                let message = format!("Host URI scheme is reserved by OMP: {scheme}");
                return self.fail_typed(id, ty, "host_uri_denied", &message, Some(obj! {"scheme": scheme}));
            }
            names.push(scheme);
        }
        if ty == "set_host_uri_schemes" {
            self.rpc11.schemes.clear();
        }
        for n in names {
            if !self.rpc11.schemes.contains(&n) {
                self.rpc11.schemes.push(n);
            }
        }
        let schemes = J::Arr(self.rpc11.schemes.iter().map(J::from).collect());
        self.ok(id, ty, obj! {"schemes": schemes});
    }

    /// `operation_start`, then the acknowledgement (the 1.1 server writes them in this order).
    fn start_op(&mut self, cmd: &Cmd<'_>) -> String {
        self.rpc11.next_op += 1;
        let op = format!("op_{:016x}", 0x5eed_0000_u64 + self.rpc11.next_op);
        let start = obj! {"type": "operation_start", "operationId": op.clone(), "command": cmd.ty.as_str()};
        let start = match &cmd.id {
            Some(id) => start.with("requestId", id.clone()),
            None => start,
        };
        self.event(start.with("startedAt", J::from(timestamp())));
        self.ok(&cmd.id, &cmd.ty, obj! {"ack": "accepted", "operationId": op.clone(), "queued": false});
        op
    }

    /// The one terminal frame of an operation.
    fn end_op(&mut self, op: &str, command: &str, request_id: &Option<J>, outcome: Result<J, (&str, String, J)>) {
        let frame = match &outcome {
            Ok(_) => obj! {"type": "operation_end", "operationId": op, "command": command, "status": "completed"},
            Err((status, ..)) => obj! {"type": "operation_error", "operationId": op, "command": command, "status": *status},
        };
        let frame = match request_id {
            Some(id) => frame.with("requestId", id.clone()),
            None => frame,
        };
        let frame = frame.with("startedAt", J::from(timestamp())).with("endedAt", J::from(timestamp()));
        let frame = match outcome {
            Ok(data) => frame.with("data", data),
            Err((_, message, info)) => frame.with("error", J::from(message)).with("errorInfo", info),
        };
        self.event(frame);
        self.out.flush();
    }

    fn cancel_op(&mut self, op: &str) {
        if let Some((command, request_id)) = self.rpc11.running.remove(op) {
            let message = format!("Operation cancelled: {op}");
            let info = error_info("operation_cancelled", &message, None);
            self.end_op(op, &command, &request_id, Err(("cancelled", message, info)));
        }
    }

    /// The session as the 1.1 server lists it: a model change, a thinking-level change, then
    /// one entry per message, each the child of the one before.
    fn entries(&self) -> Vec<Entry> {
        let mut out = vec![
            Entry::new(0, "model_change", obj! {"model": format!("{}/{}", self.st.model_provider, self.st.model_id)}, None),
            Entry::new(1, "thinking_level_change", obj! {"thinkingLevel": self.st.thinking_level.clone()}, None),
        ];
        for m in &self.st.messages {
            let text = raw_text(m);
            let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            let preview = match &v["content"] {
                Value::String(s) => Some(s.clone()),
                Value::Array(parts) => {
                    let texts: Vec<&str> = parts.iter().filter_map(|p| p["text"].as_str()).collect();
                    (!texts.is_empty()).then(|| texts.join("\n"))
                }
                _ => None,
            };
            out.push(Entry::new(out.len(), "message", obj! {"message": J::Raw(text)}, preview));
        }
        out
    }

    fn session_entries(&mut self, cmd: &Cmd<'_>) {
        let entries = self.entries();
        let types: Option<Vec<String>> = match cmd.get("entryTypes") {
            Some(Value::Array(list)) if !list.is_empty() => Some(list.iter().filter_map(|t| t.as_str().map(str::to_owned)).collect()),
            _ => None,
        };
        let kept: Vec<&Entry> = entries.iter().filter(|e| types.as_ref().map_or(true, |t| t.iter().any(|t| t == e.ty))).collect();
        let total = kept.len();
        let offset = cmd.get("offset").and_then(Value::as_u64).unwrap_or(0) as usize;
        let limit = cmd.get("limit").and_then(Value::as_u64).unwrap_or(100).clamp(1, 200) as usize;
        let content = cmd.get("includeContent") != Some(&Value::Bool(false));
        let page: Vec<J> = kept.iter().skip(offset).take(limit).map(|e| e.view(content)).collect();
        let shown = page.len();
        let leaf = entries.last().map(|e| J::from(e.id.clone())).unwrap_or(J::Null);
        let data = obj! {"entries": J::Arr(page), "total": total, "offset": offset, "limit": shown, "currentLeafId": leaf};
        let data = if offset + shown < total { data.with("nextOffset", J::from(offset + shown)) } else { data };
        self.ok(&cmd.id, &cmd.ty, data);
    }
}

/// One session entry as the 1.1 server shows it.
struct Entry {
    id: String,
    index: usize,
    ty: &'static str,
    timestamp: String,
    body: J,
    preview: Option<String>,
}

impl Entry {
    fn new(index: usize, ty: &'static str, body: J, preview: Option<String>) -> Entry {
        Entry { id: format!("{:08x}", 0xe000_0000_u32 + index as u32), index, ty, timestamp: timestamp(), body, preview }
    }

    fn parent(&self) -> J {
        match self.index {
            0 => J::Null,
            i => J::from(format!("{:08x}", 0xe000_0000_u32 + i as u32 - 1)),
        }
    }

    /// `{id, parentId, type, timestamp, preview?, entry?}` (entry: with content).
    fn view(&self, content: bool) -> J {
        let view = obj! {"id": self.id.clone(), "parentId": self.parent(), "type": self.ty, "timestamp": self.timestamp.clone()};
        let view = match &self.preview {
            Some(p) => view.with("preview", J::from(p.clone())),
            None => view,
        };
        if !content {
            return view;
        }
        let J::Obj(body) = &self.body else { return view };
        let mut entry = vec![
            ("type", J::from(self.ty)),
            ("id", J::from(self.id.clone())),
            ("parentId", self.parent()),
            ("timestamp", J::from(self.timestamp.clone())),
        ];
        entry.extend(body.iter().map(|(k, v)| (*k, J::from(v))));
        view.with("entry", J::Obj(entry))
    }
}

fn raw_text(j: &J) -> String {
    String::from_utf8_lossy(&j.to_bytes()).into_owned()
}

fn tool_name(text: &str) -> String {
    serde_json::from_str::<Value>(text).ok().and_then(|v| v.get("name").and_then(Value::as_str).map(str::to_owned)).unwrap_or_default()
}
