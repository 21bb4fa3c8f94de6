//! Host calls: runs in which the agent asks the host to run one of its tools (`host_tool_call`)
//! or to read or write a URI (`host_uri_request`), and the host's answers (`host_tool_update`,
//! `host_tool_result`, `host_uri_result`: control frames, answered with events only).
//!
//! * "needs host tool": a call of `echo_host`; its update and result become that tool's
//!   `tool_execution_update` / `tool_execution_end`.
//! * "needs xd tool": the same call behind a `write` of `xd://echo_host`; the events name `write`.
//! * "needs host uri", "needs host uri write": a read (protocol 1.1: a ranged one) or a write of
//!   `memo://notes/today`.
//! * "cancel host tool": a call the agent cancels itself 100 ms later; its result is ignored.
//! * "bad host call" (arguments that are no object), "unknown host tool" (a tool the host never
//!   registered): the result is only echoed.

use serde_json::Value;

use crate::command::Cmd;
use crate::json::{arr, obj, J};

use super::{sleep_ms, Agent};

/// The host calls a prompt message can ask for.
#[derive(Debug)]
pub(super) enum Scenario {
    NeedsHostTool,
    NeedsXdTool,
    NeedsHostUri,
    NeedsHostUriWrite,
    CancelHostTool,
    BadHostCall,
    UnknownHostTool,
}

impl Scenario {
    /// None: not a keyword of this family.
    pub(super) fn parse(message: &str) -> Option<Scenario> {
        Some(match message {
            "needs host tool" => Scenario::NeedsHostTool,
            "needs xd tool" => Scenario::NeedsXdTool,
            "needs host uri" => Scenario::NeedsHostUri,
            "needs host uri write" => Scenario::NeedsHostUriWrite,
            "cancel host tool" => Scenario::CancelHostTool,
            "bad host call" => Scenario::BadHostCall,
            "unknown host tool" => Scenario::UnknownHostTool,
            _ => return None,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HostMode {
    /// Map update/result to tool_execution_update/end + agent_end.
    Execute,
    /// Echo the result as `host_result_seen`, then agent_end.
    Echo,
}

/// An open host call: what its update and result turn into.
#[derive(Clone, Debug)]
pub(super) struct HostCall {
    tool_call_id: String,
    event_tool_name: String,
    event_args: J,
    mode: HostMode,
}

impl Agent {
    pub(super) fn run_host(&mut self, scenario: Scenario) {
        match scenario {
            Scenario::NeedsHostTool => {
                self.event(obj! {"type": "agent_start"});
                self.host_call(
                    "host-call-1",
                    "toolu_host_1",
                    "echo_host",
                    obj! {"message": "hello"},
                    "echo_host",
                    obj! {"message": "hello"},
                    HostMode::Execute,
                );
            }
            Scenario::NeedsXdTool => {
                let write_args = obj! {
                    "path": "xd://echo_host",
                    "content": "{\"message\":\"hello\"}",
                };
                self.event(obj! {"type": "agent_start"});
                self.event(obj! {
                    "type": "tool_execution_start",
                    "toolCallId": "toolu_host_1",
                    "toolName": "write",
                    "args": write_args.clone(),
                });
                self.host_call(
                    "host-call-1",
                    "toolu_host_1",
                    "echo_host",
                    obj! {"message": "hello"},
                    "write",
                    write_args,
                    HostMode::Execute,
                );
            }
            Scenario::NeedsHostUri | Scenario::NeedsHostUriWrite => {
                self.event(obj! {"type": "agent_start"});
                self.uri_requests.insert("uri-1".to_owned());
                if matches!(scenario, Scenario::NeedsHostUri) && self.protocol11 {
                    // Protocol 1.1: a ranged read, as its server sends for `?range=` on a
                    // scheme registered with range:true.
                    self.event(obj! {
                        "type": "host_uri_request",
                        "id": "uri-1",
                        "operation": "read",
                        "url": "memo://notes/today?range=0-99",
                        "maxContentBytes": 1032192,
                        "acceptsBase64": false,
                        "range": obj! {"start": 0, "end": 99, "unit": "byte"},
                    });
                } else if matches!(scenario, Scenario::NeedsHostUri) {
                    self.event(obj! {
                        "type": "host_uri_request",
                        "id": "uri-1",
                        "operation": "read",
                        "url": "memo://notes/today",
                    });
                } else {
                    self.event(obj! {
                        "type": "host_uri_request",
                        "id": "uri-1",
                        "operation": "write",
                        "url": "memo://notes/today",
                        "content": "new text",
                    });
                }
            }
            Scenario::CancelHostTool => {
                self.event(obj! {"type": "agent_start"});
                self.host_calls.remove("host-call-1");
                self.event(host_tool_call_frame(
                    "host-call-1",
                    "toolu_host_1",
                    "echo_host",
                    obj! {"message": "hello"},
                ));
                self.out.flush();
                sleep_ms(100);
                self.event(obj! {
                    "type": "host_tool_cancel",
                    "id": "cancel-1",
                    "targetId": "host-call-1",
                });
                self.event(obj! {"type": "agent_end", "messages": arr![]});
            }
            Scenario::BadHostCall => {
                self.event(obj! {"type": "agent_start"});
                self.host_call(
                    "host-call-bad",
                    "t",
                    "echo_host",
                    J::from("not an object"),
                    "echo_host",
                    J::from("not an object"),
                    HostMode::Echo,
                );
            }
            Scenario::UnknownHostTool => {
                self.event(obj! {"type": "agent_start"});
                self.host_call(
                    "host-call-unknown",
                    "toolu_unknown",
                    "no_such_tool",
                    obj! {"message": "hello"},
                    "no_such_tool",
                    obj! {"message": "hello"},
                    HostMode::Echo,
                );
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn host_call(
        &mut self,
        call_id: &str,
        tool_call_id: &str,
        tool_name: &str,
        arguments: J,
        event_tool_name: &str,
        event_args: J,
        mode: HostMode,
    ) {
        self.host_calls.insert(
            call_id.to_owned(),
            HostCall {
                tool_call_id: tool_call_id.to_owned(),
                event_tool_name: event_tool_name.to_owned(),
                event_args,
                mode,
            },
        );
        self.event(host_tool_call_frame(call_id, tool_call_id, tool_name, arguments));
    }

    fn open_host_call(&mut self, call_id: &str) -> Option<HostCall> {
        self.host_calls.get(call_id).cloned()
    }

    pub(super) fn host_tool_update(&mut self, cmd: &Cmd<'_>) {
        let Some(call_id) = cmd.get("id").and_then(Value::as_str) else { return };
        let Some(call) = self.open_host_call(call_id) else { return };
        if call.mode != HostMode::Execute {
            return;
        }
        let partial = cmd.raw("partialResult").unwrap_or(J::Null);
        self.event(obj! {
            "type": "tool_execution_update",
            "toolCallId": call.tool_call_id,
            "toolName": call.event_tool_name,
            "args": call.event_args,
            "partialResult": partial,
        });
    }

    pub(super) fn host_tool_result(&mut self, cmd: &Cmd<'_>) {
        let Some(call_id) = cmd.get("id").and_then(Value::as_str) else { return };
        let Some(call) = self.host_calls.remove(call_id) else { return };
        match call.mode {
            HostMode::Execute => {
                let result = cmd.raw("result").unwrap_or(J::Null);
                let is_error = cmd.raw("isError").unwrap_or(J::Bool(false));
                self.event(obj! {
                    "type": "tool_execution_end",
                    "toolCallId": call.tool_call_id,
                    "toolName": call.event_tool_name,
                    "result": result,
                    "isError": is_error,
                });
            }
            HostMode::Echo => self.seen("host_result_seen", cmd.text),
        }
        self.event(obj! {"type": "agent_end", "messages": arr![]});
    }

    pub(super) fn host_uri_result(&mut self, cmd: &Cmd<'_>) {
        let Some(req_id) = cmd.get("id").and_then(Value::as_str) else { return };
        if !self.uri_requests.remove(req_id) {
            return;
        }
        self.seen("host_uri_result_seen", cmd.text);
        self.event(obj! {"type": "agent_end", "messages": arr![]});
    }
}

fn host_tool_call_frame(call_id: &str, tool_call_id: &str, tool_name: &str, arguments: J) -> J {
    obj! {
        "type": "host_tool_call",
        "id": call_id,
        "toolCallId": tool_call_id,
        "toolName": tool_name,
        "arguments": arguments,
    }
}
