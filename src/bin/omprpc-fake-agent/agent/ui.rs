//! UI requests: prompts whose extension asks the host's UI something (`extension_ui_request`),
//! and what each answer (`extension_ui_response`) triggers.
//!
//! * "needs ui", "needs confirm", "needs cancel": an input, confirm or editor request; its answer
//!   runs the "ui acknowledged" turn. pi sends the request before the prompt's response, which
//!   waits for the answer.
//! * "ui then tool": a request at once followed by the normal turn (its answer is only echoed).
//! * "passive ui": the requests that expect no answer (notify, setStatus, setWidget, open_url),
//!   then the normal turn.
//! * "unknown ui": a method no client knows ("ask").
//! * "ui dismiss": a select the agent cancels itself 50 ms later, then the normal turn.

use serde_json::Value;

use crate::command::Cmd;
use crate::json::{arr, obj, J};

use super::{sleep_ms, Agent, Flavor};

/// The UI requests a prompt message can ask for.
#[derive(Debug)]
pub(super) enum Scenario {
    NeedsUi,
    NeedsConfirm,
    NeedsCancel,
    UiThenTool,
    PassiveUi,
    UnknownUi,
    UiDismiss,
}

impl Scenario {
    /// None: not a keyword of this family.
    pub(super) fn parse(message: &str) -> Option<Scenario> {
        Some(match message {
            "needs ui" => Scenario::NeedsUi,
            "needs confirm" => Scenario::NeedsConfirm,
            "needs cancel" => Scenario::NeedsCancel,
            "ui then tool" => Scenario::UiThenTool,
            "passive ui" => Scenario::PassiveUi,
            "unknown ui" => Scenario::UnknownUi,
            "ui dismiss" => Scenario::UiDismiss,
            _ => return None,
        })
    }
}

/// What an `extension_ui_response` for a given UI request id triggers.
#[derive(Clone, Debug)]
pub(super) enum UiAction {
    /// Echo `ui_response_seen`, then run the "ui acknowledged" turn.
    AckTurn,
    /// Echo `ui_response_seen` only.
    EchoOnly,
    /// pi: send the deferred prompt response, echo, then the turn.
    PiDeferred { id: Option<J>, command: String },
}

impl Agent {
    /// pi answers a prompt whose extension command asks the UI only after
    /// the UI request was answered: the request goes out now, and the
    /// prompt's response with the answer (true: the prompt waits for it).
    pub(super) fn pi_defers(&mut self, scenario: &Scenario, cmd: &Cmd<'_>) -> bool {
        if self.flavor != Flavor::Pi {
            return false;
        }
        let request = match scenario {
            Scenario::NeedsUi => ui_input("ui-1"),
            Scenario::NeedsConfirm => ui_confirm(),
            Scenario::NeedsCancel => ui_editor(),
            _ => return false,
        };
        let ui_id = match scenario {
            Scenario::NeedsUi => "ui-1",
            Scenario::NeedsConfirm => "ui-2",
            _ => "ui-3",
        };
        self.ui.insert(
            ui_id.to_owned(),
            UiAction::PiDeferred {
                id: cmd.id.clone(),
                command: cmd.ty.clone(),
            },
        );
        self.event(request);
        true
    }

    pub(super) fn run_ui(&mut self, scenario: Scenario) {
        match scenario {
            Scenario::NeedsUi => self.ui_request("ui-1", UiAction::AckTurn, ui_input("ui-1")),
            Scenario::NeedsConfirm => self.ui_request("ui-2", UiAction::AckTurn, ui_confirm()),
            Scenario::NeedsCancel => self.ui_request("ui-3", UiAction::AckTurn, ui_editor()),
            Scenario::UiThenTool => {
                self.ui_request("ui-9", UiAction::EchoOnly, ui_input("ui-9"));
                self.emit_prompt_turn("pong", 0, false);
            }
            Scenario::PassiveUi => {
                self.ui_request(
                    "ui-notify",
                    UiAction::EchoOnly,
                    obj! {
                        "type": "extension_ui_request",
                        "id": "ui-notify",
                        "method": "notify",
                        "message": "heads up",
                        "notifyType": "info",
                    },
                );
                self.ui_request(
                    "ui-status",
                    UiAction::EchoOnly,
                    obj! {
                        "type": "extension_ui_request",
                        "id": "ui-status",
                        "method": "setStatus",
                        "statusKey": "fake",
                        "statusText": "working",
                    },
                );
                self.ui_request(
                    "ui-widget",
                    UiAction::EchoOnly,
                    obj! {
                        "type": "extension_ui_request",
                        "id": "ui-widget",
                        "method": "setWidget",
                        "widgetKey": "fake-widget",
                        "widgetLines": arr!["line 1", "line 2"],
                    },
                );
                self.ui_request(
                    "ui-url",
                    UiAction::EchoOnly,
                    obj! {
                        "type": "extension_ui_request",
                        "id": "ui-url",
                        "method": "open_url",
                        "url": "https://example.com/login",
                        "launchUrl": "http://127.0.0.1:9/launch",
                        "instructions": "Sign in",
                    },
                );
                self.emit_prompt_turn("pong", 0, false);
            }
            Scenario::UnknownUi => self.ui_request(
                "ui-ask",
                UiAction::AckTurn,
                obj! {
                    "type": "extension_ui_request",
                    "id": "ui-ask",
                    "method": "ask",
                    "title": "Question",
                    "questions": arr![obj! {
                        "id": "q1",
                        "question": "Proceed?",
                        "options": arr!["yes", "no"],
                    }],
                },
            ),
            Scenario::UiDismiss => {
                self.ui_request(
                    "ui-5",
                    UiAction::EchoOnly,
                    obj! {
                        "type": "extension_ui_request",
                        "id": "ui-5",
                        "method": "select",
                        "title": "Pick one",
                        "options": arr!["a", "b"],
                    },
                );
                self.out.flush();
                sleep_ms(50);
                self.event(obj! {
                    "type": "extension_ui_request",
                    "id": "ui-6",
                    "method": "cancel",
                    "targetId": "ui-5",
                });
                self.emit_prompt_turn("pong", 0, false);
            }
        }
    }

    fn ui_request(&mut self, ui_id: &str, action: UiAction, frame: J) {
        self.ui.insert(ui_id.to_owned(), action);
        self.event(frame);
    }

    /// An `extension_ui_response`: a control frame, answered with events only.
    pub(super) fn ui_response(&mut self, cmd: &Cmd<'_>) {
        let ui_id = cmd.get("id").and_then(Value::as_str).map(str::to_owned);
        // Unknown ids behave like FAKE_SERVER (which answers every UI response
        // with the "ui acknowledged" turn); a consumed id becomes echo-only.
        let action = match &ui_id {
            Some(ui_id) => match self.ui.get_mut(ui_id) {
                Some(action) => std::mem::replace(action, UiAction::EchoOnly),
                None => UiAction::AckTurn,
            },
            None => UiAction::AckTurn,
        };
        match action {
            UiAction::EchoOnly => self.seen("ui_response_seen", cmd.text),
            UiAction::AckTurn => {
                self.seen("ui_response_seen", cmd.text);
                self.emit_prompt_turn("ui acknowledged", 0, false);
            }
            UiAction::PiDeferred { id, command } => {
                self.ack(&id, &command);
                self.seen("ui_response_seen", cmd.text);
                self.emit_prompt_turn("ui acknowledged", 0, false);
            }
        }
    }
}

fn ui_input(ui_id: &str) -> J {
    obj! {
        "type": "extension_ui_request",
        "id": ui_id,
        "method": "input",
        "title": "Need input",
        "placeholder": "value",
    }
}

fn ui_confirm() -> J {
    obj! {
        "type": "extension_ui_request",
        "id": "ui-2",
        "method": "confirm",
        "title": "Confirm",
        "message": "Continue?",
    }
}

fn ui_editor() -> J {
    obj! {
        "type": "extension_ui_request",
        "id": "ui-3",
        "method": "editor",
        "title": "Edit",
        "placeholder": "value",
    }
}
