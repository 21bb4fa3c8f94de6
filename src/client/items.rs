//! What a streamed turn yields ([`StreamItem`]): the derived items of the turn summarizer
//! (turn::summary) as typed values — the same items, in the same order, as the Python binding's
//! `omprpc.aio` `stream()` and the Go and Node streams.
#![warn(missing_docs)]

use serde_json::Value;

use crate::turn::TurnOutcome;

/// One item of a streamed turn ([`Client::stream`](super::Client::stream)), in the order the
/// agent produced it. The last item of a turn that completes is [`StreamItem::TurnComplete`].
///
/// New variants may be added in a minor release: match with a `_` arm.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum StreamItem {
    /// A piece of the assistant's visible text (a `text_delta`). Reasoning and tool-call
    /// arguments never arrive here.
    Text(String),
    /// A piece of the assistant's reasoning (a `thinking_delta`).
    Reasoning(String),
    /// The agent started a tool call (its own tool or a host tool).
    ToolCallRequest(ToolCallRequest),
    /// A tool call ended.
    ToolCallComplete(ToolCallComplete),
    /// An attempt failed and the agent retries by itself after a delay (its `auto_retry_start`);
    /// the retry's items follow. Cancelling now cancels the retry.
    RetryScheduled(RetryScheduled),
    /// A compaction inside the turn ended.
    CompactionComplete(CompactionComplete),
    /// The prompt completed: the agent will not go on by itself (after every retry and
    /// recovery it made). Always the last item.
    TurnComplete(TurnComplete),
}

/// [`StreamItem::ToolCallRequest`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ToolCallRequest {
    /// The call's id, shared by its [`ToolCallComplete`].
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// The arguments, as the agent sent them.
    pub args: Value,
    /// The call that made this one (pi's codemode scripts), else `None`.
    pub parent_tool_call_id: Option<String>,
}

/// How a tool call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolOutcome {
    /// The tool returned a result.
    Success,
    /// The tool failed (`isError`).
    Error,
    /// The policy gate blocked it (`tool_policy`); [`ToolCallComplete::reason`] says why.
    Blocked,
}

/// [`StreamItem::ToolCallComplete`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ToolCallComplete {
    /// The call's id, as in its [`ToolCallRequest`].
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// How it ended.
    pub outcome: ToolOutcome,
    /// The result, as the agent sent it (`{"content":[…],…}` for pi's and omp's tools).
    pub result: Value,
    /// Why the gate blocked it ([`ToolOutcome::Blocked`]).
    pub reason: Option<String>,
    /// The call that made this one, else `None`.
    pub parent_tool_call_id: Option<String>,
}

/// [`StreamItem::RetryScheduled`]: what the agent's `auto_retry_start` said.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryScheduled {
    /// Which retry this is (1 for the first).
    pub attempt: Option<u64>,
    /// How many retries the agent makes at most.
    pub max_attempts: Option<u64>,
    /// How long the agent waits before it (omp's fractional delay rounded).
    pub delay_ms: Option<u64>,
    /// The failure being retried.
    pub error: Option<String>,
}

/// [`StreamItem::CompactionComplete`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompactionComplete {
    /// Why it ran: `"overflow"` when the context was too long for the model, `"threshold"`, …
    pub reason: Option<String>,
    /// It was aborted.
    pub aborted: bool,
    /// The agent runs the failed attempt again after it.
    pub will_retry: bool,
    /// What went wrong, when it failed.
    pub error_message: Option<String>,
}

/// Token usage summed over a turn's LLM calls.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Usage {
    /// Input tokens (each call bills its whole input).
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the provider's cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the provider's cache.
    pub cache_write_tokens: u64,
    /// All of the above.
    pub total_tokens: u64,
    /// The last call's total: how full the context is now.
    pub context_tokens: u64,
    /// The cost the agent reported, in its currency units (0 when it reported none).
    pub cost: f64,
    /// The model of the last call that named one, else the client's `model` option.
    pub model: Option<String>,
    /// How many LLM calls the turn made.
    pub calls: u64,
}

/// [`StreamItem::TurnComplete`]: how the prompt ended, and the summary of the turn.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct TurnComplete {
    /// The prompt's request id.
    pub request_id: String,
    /// Where the library saw the prompt end.
    pub outcome: TurnOutcome,
    /// Whether the agent ran for it (`false`: an extension command, `agentInvoked:false`).
    pub agent_invoked: bool,
    /// The last assistant message's stop reason (`"stop"`, `"toolUse"`, `"aborted"`, `"error"`,
    /// `"length"`, …).
    pub stop_reason: Option<String>,
    /// Usage summed over the turn; `None` when no call reported any.
    pub usage: Option<Usage>,
    /// The final assistant message's visible text.
    pub text: Option<String>,
    /// How many attempts the agent made: 1, plus each retry and each overflow compaction it
    /// retried after (0 when nothing ran).
    pub attempts: u64,
    /// The library's whole summary of the turn, as the C ABI's `omprpc_summarizer_summary`
    /// returns it (`text`, `reasoning`, `toolCalls`, `stopReasons`, `failedAttempts`,
    /// `compactions`, `messageUsage`, …; docs/c-api.md lists the keys).
    pub summary: Value,
}

fn text(v: &Value) -> Option<String> {
    v.as_str().map(str::to_string)
}

/// A JSON number as whole units (omp's retry delay is a float).
fn whole(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| v.as_f64().filter(|f| *f >= 0.0).map(|f| f.round() as u64))
}

impl StreamItem {
    /// One derived item of the summarizer as a stream item (None: not streamed — the same
    /// choice as the Python binding's `_derived`).
    pub(crate) fn from_derived(item: &Value) -> Option<StreamItem> {
        let string = |k: &str| text(&item[k]).unwrap_or_default();
        Some(match item["kind"].as_str()? {
            "text" => StreamItem::Text(string("text")),
            "reasoning" => StreamItem::Reasoning(string("text")),
            "tool_start" => StreamItem::ToolCallRequest(ToolCallRequest {
                tool_call_id: string("toolCallId"),
                tool_name: string("toolName"),
                args: item["args"].clone(),
                parent_tool_call_id: text(&item["parentToolCallId"]),
            }),
            "tool_end" => StreamItem::ToolCallComplete(ToolCallComplete {
                tool_call_id: string("toolCallId"),
                tool_name: string("toolName"),
                outcome: match item["outcome"].as_str() {
                    Some("blocked") => ToolOutcome::Blocked,
                    Some("error") => ToolOutcome::Error,
                    _ => ToolOutcome::Success,
                },
                result: item["result"].clone(),
                reason: text(&item["reason"]),
                parent_tool_call_id: text(&item["parentToolCallId"]),
            }),
            "retry" => StreamItem::RetryScheduled(RetryScheduled {
                attempt: whole(&item["attempt"]),
                max_attempts: whole(&item["maxAttempts"]),
                delay_ms: whole(&item["delayMs"]),
                error: text(&item["error"]),
            }),
            "compaction" => StreamItem::CompactionComplete(CompactionComplete {
                reason: text(&item["reason"]),
                aborted: item["aborted"] == true,
                will_retry: item["willRetry"] == true,
                error_message: text(&item["errorMessage"]),
            }),
            _ => return None,
        })
    }
}

impl Usage {
    /// The summary's `usage` object (None: `null`).
    pub(crate) fn from_summary(u: &Value) -> Option<Usage> {
        u.as_object()?;
        let n = |k: &str| u[k].as_u64().unwrap_or(0);
        Some(Usage {
            input_tokens: n("inputTokens"),
            output_tokens: n("outputTokens"),
            cache_read_tokens: n("cacheReadTokens"),
            cache_write_tokens: n("cacheWriteTokens"),
            total_tokens: n("totalTokens"),
            context_tokens: n("contextTokens"),
            cost: u["cost"].as_f64().unwrap_or(0.0),
            model: text(&u["model"]),
            calls: n("calls"),
        })
    }
}

impl TurnComplete {
    /// The item for a prompt that completed so, from the summary of its events.
    pub(crate) fn new(request_id: String, outcome: TurnOutcome, agent_invoked: bool, summary: Value) -> TurnComplete {
        TurnComplete {
            request_id,
            outcome,
            agent_invoked,
            stop_reason: text(&summary["stopReason"]),
            usage: Usage::from_summary(&summary["usage"]),
            text: text(&summary["finalText"]),
            attempts: summary["attempts"].as_u64().unwrap_or(0),
            summary,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn derived_items_become_typed_items_and_the_rest_is_not_streamed() {
        let t = StreamItem::from_derived(&json!({"kind": "text", "text": "hi"}));
        assert_eq!(t, Some(StreamItem::Text("hi".into())));
        let r = StreamItem::from_derived(&json!({"kind": "retry", "attempt": 1, "maxAttempts": 10, "delayMs": 99.6, "error": "500"}));
        assert_eq!(r, Some(StreamItem::RetryScheduled(RetryScheduled { attempt: Some(1), max_attempts: Some(10), delay_ms: Some(100), error: Some("500".into()) })));
        let end = StreamItem::from_derived(&json!({"kind": "tool_end", "toolCallId": "t", "toolName": "bash", "outcome": "blocked",
                                                   "result": {"content": []}, "reason": "no", "parentToolCallId": null}));
        match end {
            Some(StreamItem::ToolCallComplete(c)) => assert_eq!((c.outcome, c.reason.as_deref(), c.parent_tool_call_id), (ToolOutcome::Blocked, Some("no"), None)),
            other => panic!("{other:?}"),
        }
        for kind in ["reasoning_start", "tool_update", "message_end", "stop", "turn_end", "retry_end", "settled"] {
            assert_eq!(StreamItem::from_derived(&json!({"kind": kind})), None, "{kind}");
        }
        assert_eq!(Usage::from_summary(&Value::Null), None);
    }
}
