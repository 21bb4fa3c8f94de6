//! A tool call through the policy gate, as pi runs one of its own tools (recorded from pi
//! 0.73.1 with the bridge's gate on: tests/support/PI-NOTES.md, "The gate, step by step").
//!
//! * "gated TOOL JSON-ARGS" (e.g. `gated bash {"command":"echo hi"}`; no JSON: `{}`; JSON that is
//!   no object: not this keyword): the model calls TOOL once, then answers. The frames:
//!   `agent_start`, `turn_start`, the user message (`message_start`/`message_end`), the
//!   assistant message (`message_start` empty; `message_update` `toolcall_start`,
//!   `toolcall_delta` (the arguments' JSON), `toolcall_end {toolCall}`; `message_end` with the
//!   `{type:"toolCall",id:"toolu_gated_<n>",name,arguments}` block and `stopReason:"toolUse"`),
//!   `tool_execution_start {toolCallId,toolName,args}`; then pi's `tool_call` hook: the loaded
//!   extension asks the library (`policy_eval` over its bridge connection, extension.rs) and
//!   the fake waits for the verdict (stdin is not read meanwhile: answer over the bridge).
//!   - blocked: `tool_execution_end {isError:true, result:{content:[{type:"text",text:REASON}],
//!     details:{}}}` with no update; REASON is the verdict's reason verbatim (the extension's
//!     own texts when it got none: "blocked by the host's policy", or "blocked: the host's
//!     policy gave no verdict (…)" after its timeout).
//!   - allowed, or no gate (no extension loaded, gate off, a tool the extension bridges): the
//!     tool "runs". `bash`: `tool_execution_update` `{content:[]}`, then `{content:[TEXT],
//!     details:{}}`, then `tool_execution_end {isError:false, result:{content:[TEXT]}}` where
//!     TEXT is `X\n` for `echo X` and `hello\n` for any other command (nothing is executed);
//!     any other tool: only the end, text `ran TOOL`.
//!
//!   Then the toolResult message (`message_start`/`message_end` `{role:"toolResult",
//!   toolCallId,toolName,content,details?,isError}`), `turn_end {message, toolResults}`,
//!   `turn_start`, the answer "after: <result text>" (`text_start`, `text_delta`, `text_end`),
//!   `turn_end`, `agent_end` with the run's four messages. Both flavours send pi's frames.

use serde_json::Value;

use crate::extension;
use crate::json::{arr, obj, J};

use super::turns::{message_update, text_block};
use super::Agent;

/// The gated tool calls a prompt message can ask for.
#[derive(Debug)]
pub(super) enum Scenario {
    Gated { tool: String, args: Value },
}

impl Scenario {
    /// None: not a keyword of this family.
    pub(super) fn parse(message: &str) -> Option<Scenario> {
        let rest = message.strip_prefix("gated ")?.trim_start();
        let (tool, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        let args = match args.trim() {
            "" => Value::Object(Default::default()),
            text => serde_json::from_str::<Value>(text).ok().filter(Value::is_object)?,
        };
        (!tool.is_empty()).then(|| Scenario::Gated { tool: tool.to_owned(), args })
    }
}

/// What the fake's tools "output" (nothing is executed).
fn tool_output(tool: &str, args: &Value) -> String {
    match (tool, args["command"].as_str()) {
        ("bash", Some(command)) => match command.strip_prefix("echo ") {
            Some(text) => format!("{text}\n"),
            None => "hello\n".to_owned(),
        },
        ("bash", None) => "hello\n".to_owned(),
        _ => format!("ran {tool}"),
    }
}

impl Agent {
    pub(super) fn run_gate(&mut self, scenario: Scenario, prompt: &str) {
        let Scenario::Gated { tool, args } = scenario;
        self.gated_calls += 1;
        let call_id = format!("toolu_gated_{}", self.gated_calls);
        let args_json = args.to_string();
        let args_j = J::Raw(args_json.clone());

        self.event(obj! {"type": "agent_start"});
        let user = self.user_turn_start(prompt, false);
        let tool_call = obj! {"type": "toolCall", "id": call_id.as_str(), "name": tool.as_str(), "arguments": args_j.clone()};
        let asking = self.assistant_with_content(vec![tool_call.clone()]).with("stopReason", J::from("toolUse"));
        let empty = self.assistant_with_content(vec![]);
        self.event(obj! {"type": "message_start", "message": empty.clone()});
        self.event(message_update(&empty, "toolcall_start", 0, ""));
        self.event(message_update(&empty, "toolcall_delta", 0, &args_json));
        self.event(obj! {
            "type": "message_update",
            "message": asking.clone(),
            "assistantMessageEvent": obj! {"type": "toolcall_end", "contentIndex": 0, "toolCall": tool_call, "partial": asking.clone()},
        });
        self.event(obj! {"type": "message_end", "message": asking.clone()});
        self.event(obj! {"type": "tool_execution_start", "toolCallId": call_id.as_str(), "toolName": tool.as_str(), "args": args_j.clone()});
        // The client sees the start before the gate's question, as from pi.
        self.out.flush();

        let (content, is_error, with_details) = match extension::tool_call_hook(&tool, &call_id, &args) {
            Some(reason) => (reason, true, true),
            None => {
                let text = tool_output(&tool, &args);
                if tool == "bash" {
                    for partial in [obj! {"content": arr![]}, obj! {"content": arr![text_block(&text)], "details": obj! {}}] {
                        self.event(obj! {"type": "tool_execution_update", "toolCallId": call_id.as_str(), "toolName": tool.as_str(), "args": args_j.clone(), "partialResult": partial});
                    }
                }
                (text, false, false)
            }
        };
        let mut result = obj! {"content": arr![text_block(&content)]};
        let mut tool_result = obj! {"role": "toolResult", "toolCallId": call_id.as_str(), "toolName": tool.as_str(), "content": arr![text_block(&content)]};
        if with_details {
            result = result.with("details", obj! {});
            tool_result = tool_result.with("details", obj! {});
        }
        let tool_result = tool_result.with("isError", J::Bool(is_error)).with("timestamp", J::from(1));
        self.event(obj! {"type": "tool_execution_end", "toolCallId": call_id.as_str(), "toolName": tool.as_str(), "result": result, "isError": is_error});
        self.event(obj! {"type": "message_start", "message": tool_result.clone()});
        self.event(obj! {"type": "message_end", "message": tool_result.clone()});
        self.event(obj! {"type": "turn_end", "message": asking.clone(), "toolResults": arr![tool_result.clone()]});

        let text = format!("after: {content}");
        let answer = self.assistant_message(&text);
        self.event(obj! {"type": "turn_start"});
        self.event(obj! {"type": "message_start", "message": empty.clone()});
        self.event(message_update(&empty, "text_start", 0, ""));
        self.event(message_update(&answer, "text_delta", 0, &text));
        self.event(message_update(&answer, "text_end", 0, ""));
        self.event(obj! {"type": "message_end", "message": answer.clone()});
        self.event(obj! {"type": "turn_end", "message": answer.clone(), "toolResults": arr![]});
        self.event(obj! {"type": "agent_end", "messages": arr![user, asking.clone(), tool_result.clone(), answer.clone()]});
        self.st.last_assistant_text = Some(text);
        self.st.messages = vec![asking, tool_result, answer];
    }
}
