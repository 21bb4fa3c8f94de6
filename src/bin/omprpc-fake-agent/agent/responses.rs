//! Prompt responses: scenarios about the prompt's response itself rather than a run behind it.
//!
//! * "local": the response carries `{agentInvoked:false}` and nothing follows.
//! * "prompt result": the response, then a `prompt_result` frame and no run.
//! * "late failure": the response, then a second one with the same id that fails.
//! * "duplicate response": the success response twice, then the normal turn.
//! * "queued": the response only (for prompts sent with `streamingBehavior`).

use crate::command::Cmd;
use crate::json::{obj, J};

use super::Agent;

/// The responses a prompt message can ask for.
#[derive(Debug)]
pub(super) enum Scenario {
    Local,
    PromptResult,
    LateFailure,
    DuplicateResponse,
    Queued,
}

impl Scenario {
    /// None: not a keyword of this family.
    pub(super) fn parse(message: &str) -> Option<Scenario> {
        Some(match message {
            "local" => Scenario::Local,
            "prompt result" => Scenario::PromptResult,
            "late failure" => Scenario::LateFailure,
            "duplicate response" => Scenario::DuplicateResponse,
            "queued" => Scenario::Queued,
            _ => return None,
        })
    }
}

impl Agent {
    /// After the prompt's usual response, except for "local", which is answered here.
    pub(super) fn run_response(&mut self, scenario: Scenario, cmd: &Cmd<'_>) {
        let id = &cmd.id;
        let ty = cmd.ty.as_str();
        match scenario {
            Scenario::Local => self.ok(id, ty, obj! {"agentInvoked": false}),
            Scenario::PromptResult => {
                let mut fields: Vec<(&'static str, J)> = vec![("type", J::from("prompt_result"))];
                if let Some(id) = id {
                    fields.push(("id", id.clone()));
                }
                fields.push(("agentInvoked", J::Bool(false)));
                self.event(J::Obj(fields));
            }
            Scenario::LateFailure => self.fail(id, ty, "late failure"),
            Scenario::DuplicateResponse => {
                self.ack(id, ty);
                self.emit_prompt_turn("pong", 0, false);
            }
            Scenario::Queued => {}
        }
    }
}
