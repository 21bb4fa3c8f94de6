//! Faults: a process that misbehaves around its run — for the client's teardown, its stderr ring
//! and its handling of frames that are not JSON.
//!
//! * "crash": one delta, "fatal: crashed" on stderr, exit 3 mid-run.
//! * "hang": the response, then nothing, as a run that never ends (`get_state` says it streams).
//! * "stderr N": N lines on stderr, then the normal turn.
//! * "garbage": a stdout line that is not JSON, then the normal turn.
//! * "grandchild PATH": a grandchild in our process group (see `scenarios.rs`), then the normal
//!   turn.

use std::io::{self, Write};

use crate::json::obj;

use super::turns::message_update;
use super::Agent;

/// The faults a prompt message can ask for.
#[derive(Debug)]
pub(super) enum Scenario {
    Crash,
    Hang,
    Stderr(u64),
    Garbage,
    Grandchild(String),
}

impl Scenario {
    /// None: not a keyword of this family.
    pub(super) fn parse(message: &str) -> Option<Scenario> {
        match message {
            "crash" => return Some(Scenario::Crash),
            "hang" => return Some(Scenario::Hang),
            "garbage" => return Some(Scenario::Garbage),
            _ => {}
        }
        let (head, rest) = message.split_once(' ')?;
        let rest = rest.trim();
        match head {
            "stderr" => rest.parse::<u64>().ok().map(Scenario::Stderr),
            "grandchild" if !rest.is_empty() => Some(Scenario::Grandchild(rest.to_owned())),
            _ => None,
        }
    }
}

impl Agent {
    pub(super) fn run_fault(&mut self, scenario: Scenario) {
        match scenario {
            Scenario::Crash => {
                let partial = self.assistant_message("");
                self.event(obj! {"type": "agent_start"});
                self.event(message_update(&partial, "text_delta", 0, "po"));
                self.out.flush();
                stderr_write(b"fatal: crashed\n");
                std::process::exit(3);
            }
            Scenario::Hang => self.hanging = true,
            Scenario::Stderr(n) => {
                {
                    let mut err = io::BufWriter::with_capacity(1 << 16, io::stderr().lock());
                    for i in 1..=n {
                        let _ = writeln!(err, "stderr line {i}");
                    }
                    let _ = err.flush();
                }
                self.emit_prompt_turn("pong", 0, false);
            }
            Scenario::Garbage => {
                self.out.raw(b"this is not json\n");
                self.emit_prompt_turn("pong", 0, false);
            }
            Scenario::Grandchild(path) => {
                if let Err(e) = crate::scenarios::spawn_grandchild(&path) {
                    stderr_write(format!("omprpc-fake-agent: cannot spawn grandchild: {e}\n").as_bytes());
                }
                self.emit_prompt_turn("pong", 0, false);
            }
        }
    }
}

fn stderr_write(bytes: &[u8]) {
    let mut err = io::stderr().lock();
    let _ = err.write_all(bytes);
    let _ = err.flush();
}
