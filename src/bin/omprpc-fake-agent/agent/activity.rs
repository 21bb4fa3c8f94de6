//! Runs the client did not start, and runs that end oddly: the frames real omp 18.2.3 and
//! pi 0.73.1 sent (recorded with `record_path`, tests/support/*-NOTES.md), so the client's
//! activity model is tested against what the agents do.
//!
//! * "stream until abort": a run that streams one delta ("thinking ") and then waits, as a
//!   model that hangs mid-stream. While it is live, `steer` and `follow_up` queue their message
//!   (pi: a `queue_update` before the response; omp: none), a `prompt` without
//!   `streamingBehavior` fails (omp: success then failure with the same id; pi: one failure),
//!   and `get_state` says `isStreaming:true` with the queue's size. `abort` ends the run:
//!   omp — aborted `message_end` ("Interrupted by user"), `turn_end`, terminal `agent_end`, the
//!   `abort` response, then **a run of its own for a queued steer** (user message with
//!   `steering:true`, answer "steered ok"); pi — `text_end`, aborted `message_end` ("Request was
//!   aborted"), `turn_end`, `agent_end`, the response, and the steer stays parked
//!   (`pendingMessageCount`) until the next prompt. A `follow_up` makes the model finish its
//!   answer (100 ms later) and the run go on with the follow-up in the same run, as both agents
//!   do: `turn_end`, `turn_start`, the user message, "followed ok", one terminal `agent_end`.
//! * "handoff" (omp's compaction handoff): compaction events, a run whose `agent_end` has
//!   `isTerminal:false`, and nothing after it; `get_state` says idle.
//! * "/noop" (an extension command): pi answers the prompt once the handler is done and starts
//!   no run, with no other frame; omp adds `prompt_result {agentInvoked:false}`.

use crate::json::{arr, obj, J};

use super::turns::message_update;
use super::{sleep_ms, Agent, Flavor};
use crate::command::Cmd;

/// The runs a prompt message can ask for.
#[derive(Debug)]
pub(super) enum Scenario {
    Live,
    Handoff,
    SlashCommand,
}

impl Scenario {
    /// None: not a keyword of this family.
    pub(super) fn parse(message: &str) -> Option<Scenario> {
        Some(match message {
            "stream until abort" => Scenario::Live,
            "handoff" => Scenario::Handoff,
            "/noop" => Scenario::SlashCommand,
            _ => return None,
        })
    }
}

/// The live run of "stream until abort".
#[derive(Default)]
pub struct Live {
    steering: Vec<String>,
    follow_up: Vec<String>,
}

impl Agent {
    /// After the prompt's response; `prompt` is its message.
    pub(super) fn run_activity(&mut self, scenario: Scenario, cmd: &Cmd<'_>, prompt: &str) {
        match scenario {
            Scenario::Live => self.start_live_run(prompt),
            Scenario::Handoff => self.handoff(prompt),
            Scenario::SlashCommand => self.slash_command(cmd),
        }
    }

    pub(super) fn user_message(&self, text: &str, steering: bool) -> J {
        let mut m = obj! {"role": "user", "content": arr![obj! {"type": "text", "text": text}]};
        if self.flavor == Flavor::Omp {
            m = m.with("attribution", J::from("user"));
        }
        if steering {
            m = m.with("steering", J::Bool(true));
        }
        m.with("timestamp", J::from(1))
    }

    /// turn_start and the user message; returns the message.
    pub(super) fn user_turn_start(&mut self, text: &str, steering: bool) -> J {
        let user = self.user_message(text, steering);
        self.event(obj! {"type": "turn_start"});
        self.event(obj! {"type": "message_start", "message": user.clone()});
        self.event(obj! {"type": "message_end", "message": user.clone()});
        user
    }

    /// After the prompt's response: the run starts and streams one delta, then waits.
    fn start_live_run(&mut self, prompt: &str) {
        self.event(obj! {"type": "agent_start"});
        let _ = self.user_turn_start(prompt, false);
        let partial = self.assistant_message("thinking ");
        self.event(obj! {"type": "message_start", "message": partial.clone()});
        self.event(message_update(&partial, "text_start", 0, ""));
        self.event(message_update(&partial, "text_delta", 0, "thinking "));
        self.live = Some(Live::default());
    }

    /// steer / follow_up / abort / prompt while a run is live (false: not live, not handled).
    pub(super) fn live_command(&mut self, cmd: &Cmd<'_>) -> bool {
        let Some(live) = self.live.as_mut() else { return false };
        let (id, ty) = (&cmd.id, cmd.ty.as_str());
        match ty {
            "steer" | "follow_up" => {
                let message = cmd.str("message").unwrap_or_default();
                if ty == "steer" { live.steering.push(message) } else { live.follow_up.push(message) }
                if self.flavor == Flavor::Pi {
                    let update = self.queue_update();
                    self.event(update);
                }
                self.ok(id, ty, obj! {});
                if ty == "follow_up" {
                    self.finish_with_follow_ups();
                }
            }
            "prompt" if cmd.str("streamingBehavior").is_ok() => {
                let message = cmd.str("message").unwrap_or_default();
                live.follow_up.push(message);
                self.disposition = Some("queued");
                self.ack(id, ty);
            }
            "prompt" => self.busy(cmd),
            "abort" => self.abort_live(cmd),
            _ => return false,
        }
        true
    }

    /// A prompt without `streamingBehavior` while the agent works: omp acknowledges it, then
    /// fails it with the same id; pi fails it (its own words, the same on 0.73.1 and 1.6.0).
    pub(super) fn busy(&mut self, cmd: &Cmd<'_>) {
        let (id, ty) = (&cmd.id, cmd.ty.as_str());
        match self.flavor {
            Flavor::Omp => {
                self.ack(id, ty);
                self.fail(id, ty, "Agent is already processing. Use steer() or followUp() to queue messages, or wait for completion.");
            }
            Flavor::Pi => self.fail(id, ty, "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message."),
        }
    }

    /// The model finishes its answer, then the run goes on with the queued follow-ups (and
    /// steers) in the same run, as both agents do: the answer's `turn_end`, then `turn_start`,
    /// the user message, the answer "followed ok", `turn_end`, one terminal `agent_end`.
    fn finish_with_follow_ups(&mut self) {
        self.out.flush();
        sleep_ms(100); // the rest of the model's stream
        let live = self.live.take().unwrap_or_default();
        let first = self.assistant_message("thinking done");
        self.event(message_update(&first, "text_delta", 0, "done"));
        self.event(obj! {"type": "message_end", "message": first.clone()});
        self.event(obj! {"type": "turn_end", "message": first.clone(), "toolResults": arr![]});
        if self.flavor == Flavor::Pi {
            self.event(obj! {"type": "queue_update", "steering": arr![], "followUp": arr![]});
        }
        for text in live.steering.iter().chain(&live.follow_up) {
            let _ = self.user_turn_start(text, false);
        }
        let answer = self.assistant_message("followed ok");
        self.event(obj! {"type": "message_start", "message": answer.clone()});
        self.event(message_update(&answer, "text_delta", 0, "followed ok"));
        self.event(obj! {"type": "message_end", "message": answer.clone()});
        self.event(obj! {"type": "turn_end", "message": answer.clone(), "toolResults": arr![]});
        self.event(obj! {"type": "agent_end", "messages": arr![first, answer], "isTerminal": true});
    }

    /// The live run's queued steers and follow-ups, taken out of it (`clear_queue`).
    pub(super) fn take_queue(&mut self) -> (Vec<String>, Vec<String>) {
        self.live.as_mut().map(|l| (std::mem::take(&mut l.steering), std::mem::take(&mut l.follow_up))).unwrap_or_default()
    }

    fn queue_update(&self) -> J {
        let live = self.live.as_ref();
        let list = |v: Option<&Vec<String>>| J::Arr(v.map(|v| v.iter().map(|s| J::from(s.as_str())).collect()).unwrap_or_default());
        obj! {"type": "queue_update", "steering": list(live.map(|l| &l.steering)), "followUp": list(live.map(|l| &l.follow_up))}
    }

    fn abort_live(&mut self, cmd: &Cmd<'_>) {
        let live = self.live.take().unwrap_or_default();
        let aborted = {
            let (stop_text, omp) = match self.flavor {
                Flavor::Omp => ("Interrupted by user", true),
                Flavor::Pi => ("Request was aborted", false),
            };
            let m = self.assistant_message("thinking ").with("stopReason", J::from("aborted")).with("errorMessage", J::from(stop_text));
            if !omp {
                self.event(message_update(&m, "text_end", 0, ""));
            }
            m
        };
        let user = self.user_message("hang please", false);
        self.event(obj! {"type": "message_end", "message": aborted.clone()});
        self.event(obj! {"type": "turn_end", "message": aborted.clone(), "toolResults": arr![]});
        self.event(obj! {"type": "agent_end", "messages": arr![user, aborted.clone()], "isTerminal": true});
        self.ok(&cmd.id, "abort", obj! {});
        match self.flavor {
            // omp delivers a queued steer at once, in a run no prompt started.
            Flavor::Omp if !live.steering.is_empty() => {
                // A breath between the abort's response and the new run (omp's came in the
                // same millisecond): a client that trusts only its own prompts sees "idle" here.
                self.out.flush();
                sleep_ms(100);
                self.event(obj! {"type": "agent_start"});
                for text in &live.steering {
                    let _ = self.user_turn_start(text, true);
                }
                let answer = self.assistant_message("steered ok");
                self.event(obj! {"type": "message_start", "message": answer.clone()});
                self.event(message_update(&answer, "text_delta", 0, "steered ok"));
                self.event(obj! {"type": "message_end", "message": answer.clone()});
                self.event(obj! {"type": "turn_end", "message": answer.clone(), "toolResults": arr![]});
                self.event(obj! {"type": "agent_end", "messages": arr![answer], "isTerminal": true});
            }
            Flavor::Omp => {}
            // pi keeps them until the next prompt.
            Flavor::Pi => self.parked += live.steering.len() + live.follow_up.len(),
        }
    }

    /// `isStreaming` and the queue size for get_state.
    pub(super) fn activity_state(&self) -> (bool, usize) {
        let queued = self.live.as_ref().map_or(0, |l| l.steering.len() + l.follow_up.len()) + self.parked;
        (self.live.is_some() || self.hanging || self.recovery_streaming(), queued)
    }

    /// omp's compaction handoff: the run ends non-terminally and nothing follows.
    fn handoff(&mut self, prompt: &str) {
        self.event(obj! {"type": "auto_compaction_start", "reason": "threshold", "action": "handoff"});
        self.event(obj! {"type": "auto_compaction_end", "action": "handoff", "aborted": false, "willRetry": false, "skipped": true});
        self.event(obj! {"type": "notice", "level": "warning", "source": "compaction", "message": "Context is over the compaction threshold"});
        self.event(obj! {"type": "agent_start"});
        let _ = self.user_turn_start(prompt, false);
        let answer = self.assistant_message("got it");
        self.event(obj! {"type": "message_start", "message": answer.clone()});
        self.event(message_update(&answer, "text_delta", 0, "got it"));
        self.event(obj! {"type": "message_end", "message": answer.clone()});
        self.event(obj! {"type": "turn_end", "message": answer.clone(), "toolResults": arr![]});
        self.event(obj! {"type": "auto_compaction_start", "reason": "threshold", "action": "handoff"});
        self.event(obj! {"type": "agent_end", "messages": arr![answer], "isTerminal": false});
    }

    /// An extension command: no run (pi: nothing after the response; omp: prompt_result).
    fn slash_command(&mut self, cmd: &Cmd<'_>) {
        if self.flavor == Flavor::Omp {
            let id = cmd.id.clone().unwrap_or(J::Null);
            self.event(obj! {"type": "prompt_result", "id": id, "agentInvoked": false});
        }
    }
}
