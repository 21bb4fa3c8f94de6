//! Volume: many frames fast, and frames too big for one read — for the framing, the v2 chunking
//! and the benchmarks.
//!
//! * "burst N": N identical 640-byte `message_update` lines, written in large blocks (pre-built:
//!   the same on every pi version).
//! * "big N": a run whose one message has N bytes of text; "exact MiB": the same with its
//!   `message_end` line exactly 1 MiB long.
//! * "huge N": a tool whose result has N bytes of text.
//!
//! Generated texts are [`pattern`], so a client that reassembles a frame wrongly shows it; N is
//! capped at [`MAX_GENERATED_BYTES`] (a bigger or non-numeric N is no keyword: the normal turn).

use crate::json::{arr, obj, J};
use crate::out::MIB;

use super::turns::text_block;
use super::Agent;

/// The volumes a prompt message can ask for.
#[derive(Debug)]
pub(super) enum Scenario {
    Burst(u64),
    Big(usize),
    ExactMib,
    Huge(usize),
}

/// Upper bound for "big N" / "huge N" so a typo cannot exhaust memory.
const MAX_GENERATED_BYTES: usize = 512 * MIB;

impl Scenario {
    /// None: not a keyword of this family.
    pub(super) fn parse(message: &str) -> Option<Scenario> {
        if message == "exact MiB" {
            return Some(Scenario::ExactMib);
        }
        let (head, rest) = message.split_once(' ')?;
        let rest = rest.trim();
        let size = rest.parse::<usize>().ok().filter(|n| *n <= MAX_GENERATED_BYTES);
        match (head, size) {
            ("burst", _) => rest.parse::<u64>().ok().map(Scenario::Burst),
            ("big", Some(n)) => Some(Scenario::Big(n)),
            ("huge", Some(n)) => Some(Scenario::Huge(n)),
            _ => None,
        }
    }
}

/// `n` bytes of the deterministic pattern "abc…xyzabc…" (byte i is
/// `b'a' + i % 26`), so reassembly errors are detectable.
fn pattern(n: usize) -> String {
    let mut s = "abcdefghijklmnopqrstuvwxyz".repeat(n / 26 + 1);
    s.truncate(n);
    s
}

/// A text block whose text is [`pattern`]`(n)` (written without escaping).
fn pattern_block(n: usize) -> J {
    obj! {"type": "text", "text": J::Safe(pattern(n))}
}

impl Agent {
    pub(super) fn run_volume(&mut self, scenario: Scenario) {
        match scenario {
            Scenario::Burst(n) => self.emit_burst(n),
            Scenario::Big(n) => self.emit_single_message_run(n),
            Scenario::ExactMib => {
                // Pad the text so the message_end line is exactly 1 MiB.
                let empty = obj! {"type": "message_end", "message": self.assistant_message("")};
                let base = empty.to_bytes().len();
                self.emit_single_message_run(MIB.saturating_sub(base));
            }
            Scenario::Huge(n) => {
                let args = obj! {"path": "huge.txt"};
                self.event(obj! {"type": "agent_start"});
                self.event(obj! {
                    "type": "tool_execution_start",
                    "toolCallId": "tool-huge",
                    "toolName": "read",
                    "args": args,
                });
                self.event(obj! {
                    "type": "tool_execution_end",
                    "toolCallId": "tool-huge",
                    "toolName": "read",
                    "result": obj! {"content": arr![pattern_block(n)]},
                    "isError": false,
                });
                self.event(obj! {"type": "agent_end", "messages": arr![]});
            }
        }
    }

    /// agent_start, message_end(assistant with text [`pattern`]`(n)`),
    /// agent_end. Like omp, the agent_end is compacted to
    /// `{"messages":[],"messageCount":1}` when the full one would not fit in
    /// a 1 MiB line. The message is serialized once and framed by hand.
    fn emit_single_message_run(&mut self, n: usize) {
        let message = self.assistant_with_content(vec![pattern_block(n)]);
        let body = message.to_bytes();
        self.event(obj! {"type": "agent_start"});
        self.out.line(&wrap(b"{\"type\":\"message_end\",\"message\":", &body, b"}"));
        const END_PREFIX: &[u8] = b"{\"type\":\"agent_end\",\"messages\":[";
        // As this pi writes an agent_end (agent/versions.rs), framed by hand too.
        let suffix: &[u8] = if self.pi_since(super::versions::WILL_RETRY) { b"],\"willRetry\":false}" } else { b"]}" };
        if END_PREFIX.len() + body.len() + suffix.len() < MIB {
            self.out.line(&wrap(END_PREFIX, &body, suffix));
            self.after_frame(&obj! {"type": "agent_end"});
        } else {
            self.event(obj! {"type": "agent_end", "messages": arr![], "messageCount": 1});
        }
        self.st.last_assistant_text = Some(pattern(n));
        self.st.messages = vec![message];
    }

    /// "burst N": N identical ~640-byte message_update lines, written in
    /// large blocks.
    fn emit_burst(&mut self, n: u64) {
        const TARGET_LINE: usize = 640; // without the newline
        let partial = self.assistant_message("");
        self.event(obj! {"type": "agent_start"});
        self.event(obj! {"type": "turn_start"});
        self.event(obj! {"type": "message_start", "message": partial});

        let build = |text: &str, this: &Agent| -> Vec<u8> {
            let small_partial = obj! {
                "role": "assistant",
                "content": arr![text_block("xxxxxxxx")],
                "stopReason": "stop",
                "timestamp": 1,
            };
            obj! {
                "type": "message_update",
                "message": this.assistant_message(text),
                "assistantMessageEvent": obj! {
                    "type": "text_delta",
                    "contentIndex": 0,
                    "delta": "xxxxxxxx",
                    "partial": small_partial,
                },
            }
            .to_bytes()
        };
        let base = build("", self).len();
        let mut line = build(&pattern(TARGET_LINE.saturating_sub(base)), self);
        line.push(b'\n');

        let per_block = (MIB / line.len()).max(1);
        let mut block = Vec::with_capacity(per_block * line.len());
        for _ in 0..per_block {
            block.extend_from_slice(&line);
        }
        let per_block = per_block as u64;
        for _ in 0..n / per_block {
            self.out.raw(&block);
        }
        for _ in 0..n % per_block {
            self.out.raw(&line);
        }

        let assistant = self.assistant_message("pong");
        self.event(obj! {"type": "message_end", "message": assistant.clone()});
        self.event(obj! {"type": "turn_end", "message": assistant.clone(), "toolResults": arr![]});
        self.event(obj! {"type": "agent_end", "messages": arr![assistant.clone()]});
        self.st.last_assistant_text = Some("pong".to_owned());
        self.st.messages = vec![assistant];
    }
}

fn wrap(prefix: &[u8], body: &[u8], suffix: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(prefix.len() + body.len() + suffix.len());
    v.extend_from_slice(prefix);
    v.extend_from_slice(body);
    v.extend_from_slice(suffix);
    v
}
