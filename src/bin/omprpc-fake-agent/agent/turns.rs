//! Text turns: the runs a model answers a prompt with, and the pieces every other family builds
//! its runs from (the assistant message, the turn's events, FAKE_SERVER's `emit_prompt_turn`).
//!
//! * anything that is no other family's keyword: the normal turn, answer "pong".
//! * "slow": the normal turn with a pause after the delta; "all events": with FAKE_SERVER's tool,
//!   compaction, retry, ttsr and todo events before `message_end`.
//! * "thinking": a thinking block, then the text. "non-terminal": a turn whose `agent_end` says
//!   `isTerminal:false`, then the normal turn. "compacted": an `agent_end` with only the suffix.
//! * "notifications": an `extension_error` and an event no client knows, then the normal turn.

use crate::json::{arr, obj, J};

use super::{sleep_ms, Agent};

/// The turns a prompt message can ask for.
#[derive(Debug)]
pub(super) enum Scenario {
    Notifications,
    Slow,
    AllEvents,
    Compacted,
    NonTerminal,
    Thinking,
    Normal,
}

impl Scenario {
    /// None: not a keyword of this family (the caller falls back to [`Scenario::Normal`]).
    pub(super) fn parse(message: &str) -> Option<Scenario> {
        Some(match message {
            "notifications" => Scenario::Notifications,
            "slow" => Scenario::Slow,
            "all events" => Scenario::AllEvents,
            "compacted" => Scenario::Compacted,
            "non-terminal" => Scenario::NonTerminal,
            "thinking" => Scenario::Thinking,
            _ => return None,
        })
    }
}

pub(super) fn usage() -> J {
    obj! {
        "input": 1,
        "output": 1,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 2,
        "cost": obj! {
            "input": 0.0,
            "output": 0.0,
            "cacheRead": 0.0,
            "cacheWrite": 0.0,
            "total": 0.0,
        },
    }
}

pub(super) fn text_block(text: &str) -> J {
    obj! {"type": "text", "text": text}
}

pub(super) fn message_update(partial: &J, kind: &str, index: usize, delta: &str) -> J {
    obj! {
        "type": "message_update",
        "message": partial.clone(),
        "assistantMessageEvent": obj! {
            "type": kind,
            "contentIndex": index,
            "delta": delta,
            "partial": partial.clone(),
        },
    }
}

impl Agent {
    pub(super) fn run_turn(&mut self, scenario: Scenario) {
        match scenario {
            Scenario::Notifications => {
                self.event(obj! {
                    "type": "extension_error",
                    "extensionPath": "/tmp/ext.py",
                    "event": "run",
                    "error": "boom",
                });
                self.event(obj! {"type": "unknown_future_event", "value": 1});
                self.emit_prompt_turn("pong", 0, false);
            }
            Scenario::Slow => self.emit_prompt_turn("pong", 300, false),
            Scenario::AllEvents => self.emit_prompt_turn("pong", 0, true),
            Scenario::Compacted => self.emit_compacted(),
            Scenario::NonTerminal => {
                let first = self.assistant_message("first");
                self.emit_turn_events(&first, &[("text_delta", 0, "first")], 0, false);
                self.event(obj! {
                    "type": "agent_end",
                    "messages": arr![first],
                    "isTerminal": false,
                });
                self.emit_prompt_turn("pong", 0, false);
            }
            Scenario::Thinking => {
                let message = self.assistant_with_content(vec![
                    obj! {"type": "thinking", "thinking": "hmm"},
                    text_block("visible"),
                ]);
                self.emit_turn_events(
                    &message,
                    &[("thinking_delta", 0, "hmm"), ("text_delta", 1, "visible")],
                    0,
                    false,
                );
                self.event(obj! {"type": "agent_end", "messages": arr![message.clone()]});
                self.st.last_assistant_text = Some("visible".to_owned());
                self.st.messages = vec![message];
            }
            Scenario::Normal => self.emit_prompt_turn("pong", 0, false),
        }
    }

    pub(super) fn assistant_with_content(&self, content: Vec<J>) -> J {
        obj! {
            "role": "assistant",
            "content": content,
            "api": "anthropic-messages",
            "provider": self.st.model_provider.as_str(),
            "model": self.st.model_id.as_str(),
            "usage": usage(),
            "stopReason": "stop",
            "timestamp": 1,
        }
    }

    pub(super) fn assistant_message(&self, text: &str) -> J {
        self.assistant_with_content(vec![text_block(text)])
    }

    /// agent_start, turn_start, message_start, one message_update per delta,
    /// [pause], [extra events], message_end, turn_end (no agent_end).
    fn emit_turn_events(
        &mut self,
        message: &J,
        deltas: &[(&str, usize, &str)],
        delay_ms: u64,
        extra: bool,
    ) {
        let partial = self.assistant_message("");
        self.event(obj! {"type": "agent_start"});
        self.event(obj! {"type": "turn_start"});
        self.event(obj! {"type": "message_start", "message": partial.clone()});
        for (kind, index, delta) in deltas {
            self.event(message_update(&partial, kind, *index, delta));
        }
        if delay_ms > 0 {
            self.out.flush();
            sleep_ms(delay_ms);
        }
        if extra {
            self.emit_extra_events();
        }
        self.event(obj! {"type": "message_end", "message": message.clone()});
        self.event(obj! {"type": "turn_end", "message": message.clone(), "toolResults": arr![]});
    }

    /// FAKE_SERVER's `emit_prompt_turn`.
    pub(super) fn emit_prompt_turn(&mut self, text: &str, delay_ms: u64, extra: bool) {
        let assistant = self.assistant_message(text);
        self.emit_turn_events(&assistant, &[("text_delta", 0, text)], delay_ms, extra);
        self.event(obj! {"type": "agent_end", "messages": arr![assistant.clone()]});
        self.st.last_assistant_text = Some(text.to_owned());
        self.st.messages = vec![assistant];
    }

    fn emit_extra_events(&mut self) {
        self.event(obj! {
            "type": "tool_execution_start",
            "toolCallId": "tool-1",
            "toolName": "read",
            "args": obj! {"path": "README.md"},
            "intent": "Inspect docs",
        });
        self.event(obj! {
            "type": "tool_execution_update",
            "toolCallId": "tool-1",
            "toolName": "read",
            "args": obj! {"path": "README.md"},
            "partialResult": obj! {"bytes": 12},
        });
        self.event(obj! {
            "type": "tool_execution_end",
            "toolCallId": "tool-1",
            "toolName": "read",
            "result": obj! {"text": "docs"},
            "isError": false,
        });
        self.event(obj! {
            "type": "auto_compaction_start",
            "reason": "threshold",
            "action": "context-full",
        });
        self.event(obj! {
            "type": "auto_compaction_end",
            "action": "context-full",
            "result": obj! {
                "summary": "trimmed",
                "shortSummary": "trimmed",
                "firstKeptEntryId": "entry-1",
                "tokensBefore": 123,
            },
            "aborted": false,
            "willRetry": false,
        });
        self.event(obj! {
            "type": "auto_retry_start",
            "attempt": 1,
            "maxAttempts": 3,
            "delayMs": 25,
            "errorMessage": "retrying",
        });
        self.event(obj! {"type": "auto_retry_end", "success": true, "attempt": 1});
        self.event(obj! {
            "type": "retry_fallback_applied",
            "from": "a",
            "to": "b",
            "role": "primary",
        });
        self.event(obj! {"type": "retry_fallback_succeeded", "model": "b", "role": "primary"});
        self.event(obj! {"type": "ttsr_triggered", "rules": arr![obj! {"id": "rule-1"}]});
        self.event(obj! {
            "type": "todo_reminder",
            "attempt": 1,
            "maxAttempts": 2,
            "todos": arr![obj! {"id": "task-1", "content": "Map tools", "status": "pending"}],
        });
        self.event(obj! {"type": "todo_auto_clear"});
    }

    /// "compacted": agent_end carries only the suffix the client has not
    /// seen, with `messageCount` giving the full length.
    fn emit_compacted(&mut self) {
        let pong = self.assistant_message("pong");
        let terminal = obj! {
            "role": "custom",
            "customType": "terminal",
            "content": "terminal",
            "display": true,
            "timestamp": 2,
        };
        self.event(obj! {"type": "agent_start"});
        self.event(obj! {"type": "message_start", "message": self.assistant_message("")});
        self.event(obj! {"type": "message_end", "message": pong.clone()});
        self.event(obj! {"type": "message_end", "message": terminal.clone()});
        self.event(obj! {
            "type": "agent_end",
            "messages": arr![terminal.clone()],
            "messageCount": 2,
        });
        self.st.last_assistant_text = Some("pong".to_owned());
        self.st.messages = vec![pong, terminal];
    }
}
