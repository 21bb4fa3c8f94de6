//! The default scenario: FAKE_SERVER of the seed test suite, plus the extra
//! prompt messages and commands documented in `main.rs`.
//!
//! Here: the agent's state, its commands and the prompt's routing. A prompt's
//! message names a scenario of one family, each in a module of its own:
//! `turns` (text turns, and the pieces every run is made of), `ui` (UI
//! requests), `host` (host tool calls and host URIs), `volume` (bursts and
//! big frames), `faults` (crashes, hangs, stderr, garbage, grandchildren),
//! `responses` (the prompt's response itself), `activity` (runs the client
//! did not start, and runs that end oddly) and `gate` (a tool call through the
//! bridge's policy gate). `rpc11` is protocol 1.1.

use std::collections::{HashMap, HashSet};
use std::io::{self, BufRead};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

mod activity;
mod faults;
mod gate;
mod host;
mod recovery;
mod responses;
mod rpc11;
mod turns;
mod ui;
pub mod versions;
mod volume;
pub use rpc11::timestamp;

use crate::command::{self, Cmd, Parsed};
use crate::json::{arr, obj, J};
use crate::out::Out;
use host::HostCall;
use ui::UiAction;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Flavor {
    Omp,
    Pi,
}

/// Everything a prompt message can ask for, by family: each family's module
/// under agent/ owns its keywords (main.rs lists them all).
#[derive(Debug)]
enum Plan {
    Turn(turns::Scenario),
    Ui(ui::Scenario),
    Host(host::Scenario),
    Volume(volume::Scenario),
    Fault(faults::Scenario),
    Response(responses::Scenario),
    Activity(activity::Scenario),
    Gate(gate::Scenario),
    Recovery(recovery::Scenario),
}

impl Plan {
    /// The families' keywords are disjoint, so the order of the tries does not matter;
    /// a message that is no keyword is the normal turn.
    fn parse(message: &str) -> Plan {
        turns::Scenario::parse(message)
            .map(Plan::Turn)
            .or_else(|| ui::Scenario::parse(message).map(Plan::Ui))
            .or_else(|| host::Scenario::parse(message).map(Plan::Host))
            .or_else(|| volume::Scenario::parse(message).map(Plan::Volume))
            .or_else(|| faults::Scenario::parse(message).map(Plan::Fault))
            .or_else(|| responses::Scenario::parse(message).map(Plan::Response))
            .or_else(|| activity::Scenario::parse(message).map(Plan::Activity))
            .or_else(|| gate::Scenario::parse(message).map(Plan::Gate))
            .or_else(|| recovery::Scenario::parse(message).map(Plan::Recovery))
            .unwrap_or(Plan::Turn(turns::Scenario::Normal))
    }
}

/// The mutable session state of FAKE_SERVER.
struct State {
    todo_phases: J,
    messages: Vec<J>,
    branch_messages: Vec<J>,
    model_provider: String,
    model_id: String,
    thinking_level: J,
    steering_mode: J,
    follow_up_mode: J,
    interrupt_mode: J,
    auto_compaction_enabled: J,
    auto_retry_enabled: J,
    session_name: J,
    last_assistant_text: Option<String>,
    fast_mode: bool,
    host_tools: Vec<J>,
}

impl State {
    fn new() -> State {
        State {
            todo_phases: J::Arr(Vec::new()),
            messages: Vec::new(),
            branch_messages: vec![obj! {"entryId": "entry-1", "text": "branch message"}],
            model_provider: "anthropic".to_owned(),
            model_id: "claude-sonnet-4-5".to_owned(),
            thinking_level: J::from("medium"),
            steering_mode: J::from("one-at-a-time"),
            follow_up_mode: J::from("one-at-a-time"),
            interrupt_mode: J::from("immediate"),
            auto_compaction_enabled: J::Bool(true),
            auto_retry_enabled: J::Bool(true),
            session_name: J::from("Scratchpad"),
            last_assistant_text: None,
            fast_mode: false,
            host_tools: Vec::new(),
        }
    }
}

pub fn model_info(model_id: &str, provider: &str) -> J {
    obj! {
        "id": model_id,
        "name": format!("Model {model_id}"),
        "api": "anthropic-messages",
        "provider": provider,
        "baseUrl": "https://api.anthropic.com",
        "reasoning": true,
        "input": arr!["text"],
        "cost": obj! {
            "input": 1.0,
            "output": 2.0,
            "cacheRead": 0.0,
            "cacheWrite": 0.0,
        },
        "contextWindow": 200000,
        "maxTokens": 8192,
    }
}

fn sleep_ms(ms: u64) {
    thread::sleep(Duration::from_millis(ms));
}

pub struct Agent {
    pub out: Out,
    pub flavor: Flavor,
    /// `--v2`: advertise protocol v2 in the ready frame and accept it.
    pub v2_advertised: bool,
    /// `OMPRPC_FAKE_V2_FAIL=1`: advertise v2 but refuse the negotiation.
    pub v2_fail: bool,
    /// Scenario `chunk-violation`: emit a bad `rpc_chunk` after negotiating.
    pub chunk_violation: bool,
    st: State,
    ui: HashMap<String, UiAction>,
    host_calls: HashMap<String, HostCall>,
    uri_requests: HashSet<String>,
    /// "stream until abort": the run that is live.
    live: Option<activity::Live>,
    /// "hang": a run that never ends (get_state says it streams).
    hanging: bool,
    /// pi: steers and follow-ups that outlived an abort, kept for the next prompt.
    parked: usize,
    /// "gated": tool calls made so far (their ids are `toolu_gated_<n>`).
    gated_calls: u32,
    /// `--protocol 1.1`: the "omp-rpc" 1.1.0 server (agent/rpc11.rs).
    pub protocol11: bool,
    rpc11: rpc11::Rpc11,
    /// The version this agent is (`OMPRPC_FAKE_VERSION`): what pi writes differently by
    /// version is in agent/versions.rs.
    pub version: omprpc::protocol::version::Version,
    /// pi 0.80.4 on: an `agent_settled` is due (`Some(aborted)`), written before the next
    /// response or at the end of the batch.
    settle_due: Option<bool>,
    /// pi 0.99 on: the disposition of the next prompt/steer/follow_up success response, when
    /// not the default one (agent/versions.rs).
    disposition: Option<&'static str>,
    /// Runs started this session (`agent_start` frames written).
    runs: u64,
    /// A retry's delay or an overflow compaction under way (agent/recovery.rs).
    recovery: Option<recovery::Pending>,
    /// `OMPRPC_FAKE_STATE_DELAY_MS`: how long `get_state` takes to answer (an agent busy
    /// elsewhere), so a test can end a wait while a probe is in flight.
    state_delay_ms: u64,
}

impl Agent {
    pub fn new(flavor: Flavor, v2_advertised: bool, v2_fail: bool) -> Agent {
        Agent {
            out: Out::new(),
            flavor,
            v2_advertised,
            v2_fail,
            chunk_violation: false,
            st: State::new(),
            ui: HashMap::new(),
            host_calls: HashMap::new(),
            uri_requests: HashSet::new(),
            live: None,
            hanging: false,
            parked: 0,
            gated_calls: 0,
            protocol11: false,
            rpc11: rpc11::Rpc11::default(),
            version: versions::of(flavor),
            settle_due: None,
            disposition: None,
            runs: 0,
            recovery: None,
            state_delay_ms: crate::env_ms("OMPRPC_FAKE_STATE_DELAY_MS", 0),
        }
    }

    /// The startup frame: omp only (pi sends nothing until the first
    /// command).
    pub fn ready(&mut self) {
        if self.flavor == Flavor::Pi {
            return;
        }
        if self.protocol11 {
            return self.ready_11();
        }
        if self.v2_advertised {
            self.out.frame(&obj! {
                "type": "ready",
                "protocolVersion": 1,
                "supportedProtocolVersions": arr![1, 2],
                "maxFrameBytes": 1048576,
                "maxReassembledFrameBytes": 67108864,
            });
        } else {
            self.out.frame(&obj! {"type": "ready"});
        }
        self.out.flush();
    }

    /// Serves stdin until EOF, one command per line. A reader thread hands the lines over, so
    /// that what the agent does by itself later (a retry after its delay, the end of a
    /// compaction: agent/recovery.rs) happens on time while stdin is quiet.
    pub fn serve(&mut self) {
        let (tx, rx) = mpsc::sync_channel::<Vec<u8>>(64);
        thread::spawn(move || {
            let stdin = io::stdin();
            let mut input = stdin.lock();
            loop {
                let mut line = Vec::with_capacity(256);
                match input.read_until(b'\n', &mut line) {
                    Ok(0) => break,
                    Ok(_) => {
                        if tx.send(line).is_err() {
                            break;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                }
            }
        });
        loop {
            let line = match self.recovery_due() {
                None => rx.recv().ok(),
                Some(at) => match rx.recv_timeout(at.saturating_duration_since(Instant::now())) {
                    Ok(line) => Some(line),
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        self.recovery_fire();
                        self.end_batch();
                        continue;
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => None,
                },
            };
            let Some(line) = line else { break };
            self.handle_line(&line);
            self.end_batch();
        }
        self.out.flush();
    }

    // ----- responses -------------------------------------------------------

    pub fn respond(&mut self, id: &Option<J>, command: &str, outcome: Result<Option<J>, String>) {
        // A settling pi settles before it answers the command that ended its work (`abort`).
        self.settle_if_due();
        let outcome = self.with_disposition(command, outcome);
        let mut fields: Vec<(&'static str, J)> = Vec::with_capacity(5);
        if let Some(id) = id {
            fields.push(("id", id.clone()));
        }
        fields.push(("type", J::from("response")));
        fields.push(("command", J::from(command)));
        match outcome {
            Ok(data) => {
                fields.push(("success", J::Bool(true)));
                if let Some(data) = data {
                    fields.push(("data", data));
                }
            }
            Err(error) => {
                fields.push(("success", J::Bool(false)));
                if self.protocol11 {
                    // Typed errors: the same text, with its code (agent/rpc11.rs).
                    let info = obj! {"code": rpc11::code_for(&error), "message": error.as_str(), "retryable": false};
                    fields.push(("error", J::from(error)));
                    fields.push(("errorInfo", info));
                } else {
                    fields.push(("error", J::from(error)));
                }
            }
        }
        self.out.frame(&J::Obj(fields));
        // A response is always the end of a batch: a client is waiting for it.
        self.out.flush();
    }

    fn ok(&mut self, id: &Option<J>, command: &str, data: J) {
        self.respond(id, command, Ok(Some(data)));
    }

    fn ack(&mut self, id: &Option<J>, command: &str) {
        self.respond(id, command, Ok(None));
    }

    fn fail(&mut self, id: &Option<J>, command: &str, error: &str) {
        self.respond(id, command, Err(error.to_owned()));
    }

    /// Every event goes out here: as this agent's version writes it (agent/versions.rs).
    fn event(&mut self, j: J) {
        let j = self.versioned(j);
        self.out.frame(&j);
        self.after_frame(&j);
    }

    fn seen(&mut self, ty: &str, frame_text: &str) {
        self.event(obj! {"type": ty, "frame": J::Raw(frame_text.to_owned())});
    }

    // ----- dispatch --------------------------------------------------------

    pub fn handle_line(&mut self, line: &[u8]) {
        match command::parse(line) {
            Parsed::Blank => {}
            Parsed::ParseError(error) if self.protocol11 => self.protocol_error_11("invalid_json", &error),
            Parsed::ParseError(error) => self.fail(&None, "parse", &error),
            Parsed::BadType { id: None, error } if self.protocol11 => self.protocol_error_11("invalid_frame", &error),
            Parsed::BadType { id, error } if self.protocol11 => self.fail_typed(&id, "unknown", "invalid_frame", &error, None),
            Parsed::BadType { id, error } => self.fail(&id, "parse", &error),
            Parsed::Cmd(cmd) => self.handle(&cmd),
        }
    }

    fn handle(&mut self, cmd: &Cmd<'_>) {
        let id = &cmd.id;
        let ty = cmd.ty.as_str();
        // Each agent's own commands are unknown to the other (as the real ones answer).
        let other_agents = match self.flavor {
            Flavor::Pi => matches!(
                ty,
                "set_host_tools"
                    | "set_host_uri_schemes"
                    | "negotiate_protocol"
                    | "get_available_commands"
                    | "set_subagent_subscription"
                    | "get_subagents"
                    | "get_subagent_messages"
            ),
            Flavor::Omp => matches!(ty, "fork" | "clone" | "get_fork_messages" | "get_commands" | "clear_queue" | "get_available_thinking_levels"),
        };
        // A command pi has only from a later version (the library's table: `since`) is unknown
        // to an older pi, as pi 0.73.1 answers clear_queue.
        let later = self.flavor == Flavor::Pi
            && omprpc::protocol::version::lacks_command(omprpc::protocol::argv::Flavor::Pi, Some(self.version), ty).is_some();
        if other_agents || later {
            self.unknown(cmd);
            return;
        }
        if self.live_command(cmd) || self.recovery_command(cmd) {
            return;
        }
        if self.protocol11 && self.rpc11_command(cmd) {
            return;
        }
        match ty {
            "extension_ui_response" => self.ui_response(cmd),
            "host_tool_update" => self.host_tool_update(cmd),
            "host_tool_result" => self.host_tool_result(cmd),
            "host_uri_result" => self.host_uri_result(cmd),
            "widget_layout" => {
                self.ack(&None, "widget_layout");
                self.seen("widget_layout_seen", cmd.text);
            }
            "negotiate_protocol" => self.negotiate(cmd),
            "prompt" | "abort_and_prompt" => self.prompt(cmd),
            "get_state" => {
                sleep_ms(self.state_delay_ms);
                let state = self.current_state();
                self.ok(id, ty, state);
            }
            "set_host_tools" => match cmd.raw_array("tools") {
                Ok(items) => {
                    let mut names = Vec::with_capacity(items.len());
                    let mut tools = Vec::with_capacity(items.len());
                    for item in items {
                        let name = serde_json::from_str::<Value>(item.get())
                            .ok()
                            .and_then(|v| v.get("name").and_then(Value::as_str).map(str::to_owned))
                            .unwrap_or_default();
                        names.push(J::from(name));
                        tools.push(J::Raw(item.get().to_owned()));
                    }
                    self.st.host_tools = tools;
                    self.ok(id, ty, obj! {"toolNames": names});
                }
                Err(e) => self.fail(id, ty, &e),
            },
            "set_host_uri_schemes" => self.set_host_uri_schemes(cmd),
            "set_todos" => match cmd.raw_array("phases") {
                Ok(_) => {
                    let phases = match cmd.raw_text("phases") {
                        None | Some("null") => J::Arr(Vec::new()),
                        Some(_) => cmd.raw("phases").unwrap_or(J::Arr(Vec::new())),
                    };
                    self.st.todo_phases = phases.clone();
                    self.ok(id, ty, obj! {"todoPhases": phases});
                }
                Err(e) => self.fail(id, ty, &e),
            },
            "get_messages" => {
                let messages = J::Arr(self.st.messages.clone());
                self.ok(id, ty, obj! {"messages": messages});
            }
            "get_messages_page" => self.get_messages_page(cmd),
            "set_model" => match (cmd.str("provider"), cmd.str("modelId")) {
                (Ok(provider), Ok(model_id)) => {
                    let info = model_info(&model_id, &provider);
                    self.st.model_provider = provider;
                    self.st.model_id = model_id;
                    self.ok(id, ty, info);
                }
                (Err(e), _) | (_, Err(e)) => self.fail(id, ty, &e),
            },
            "cycle_model" => {
                self.st.model_id = if self.st.model_id == "claude-sonnet-4-5" {
                    "claude-sonnet-4-6".to_owned()
                } else {
                    "claude-sonnet-4-5".to_owned()
                };
                let data = obj! {
                    "model": model_info(&self.st.model_id, &self.st.model_provider),
                    "thinkingLevel": self.st.thinking_level.clone(),
                    "isScoped": false,
                };
                self.ok(id, ty, data);
            }
            "get_available_models" => {
                let data = obj! {
                    "models": arr![
                        model_info("claude-sonnet-4-5", "anthropic"),
                        model_info("claude-sonnet-4-6", "anthropic"),
                    ],
                };
                self.ok(id, ty, data);
            }
            "set_thinking_level" => self.set_field(cmd, "level", |st, v| st.thinking_level = v),
            "cycle_thinking_level" => {
                let is_high = matches!(&self.st.thinking_level, J::Str(s) if s == "high")
                    || matches!(&self.st.thinking_level, J::Raw(s) if s == "\"high\"");
                self.st.thinking_level = J::from(if is_high { "low" } else { "high" });
                let data = obj! {"level": self.st.thinking_level.clone()};
                self.ok(id, ty, data);
            }
            "set_steering_mode" => self.set_field(cmd, "mode", |st, v| st.steering_mode = v),
            "set_follow_up_mode" => self.set_field(cmd, "mode", |st, v| st.follow_up_mode = v),
            "set_interrupt_mode" => self.set_field(cmd, "mode", |st, v| st.interrupt_mode = v),
            "set_auto_compaction" => {
                self.set_field(cmd, "enabled", |st, v| st.auto_compaction_enabled = v)
            }
            "set_auto_retry" => self.set_field(cmd, "enabled", |st, v| st.auto_retry_enabled = v),
            "set_session_name" => self.set_field(cmd, "name", |st, v| st.session_name = v),
            "compact" => self.ok(
                id,
                ty,
                obj! {
                    "summary": "trimmed",
                    "shortSummary": "trimmed",
                    "firstKeptEntryId": "entry-1",
                    "tokensBefore": 123,
                },
            ),
            "abort_retry" | "abort_bash" | "steer" | "follow_up" | "abort" => {
                self.ok(id, ty, obj! {})
            }
            "bash" => self.ok(
                id,
                ty,
                obj! {
                    "output": "hello\n",
                    "exitCode": 0,
                    "cancelled": false,
                    "truncated": false,
                    "totalLines": 1,
                    "totalBytes": 6,
                    "outputLines": 1,
                    "outputBytes": 6,
                },
            ),
            "get_session_stats" => {
                let n = self.st.messages.len();
                let data = obj! {
                    "sessionFile": "/tmp/fake-session.jsonl",
                    "sessionId": "fake-session",
                    "userMessages": 1,
                    "assistantMessages": n,
                    "toolCalls": 1,
                    "toolResults": 1,
                    "totalMessages": n + 1,
                    "tokens": obj! {
                        "input": 10,
                        "output": 5,
                        "cacheRead": 0,
                        "cacheWrite": 0,
                        "total": 15,
                    },
                    "premiumRequests": 0,
                    "cost": 0.0,
                };
                self.ok(id, ty, data);
            }
            "export_html" => {
                let path = match cmd.get("outputPath") {
                    Some(Value::String(s)) if !s.is_empty() => s.clone(),
                    _ => "/tmp/session.html".to_owned(),
                };
                self.ok(id, ty, obj! {"path": path});
            }
            "new_session" | "switch_session" => self.ok(id, ty, obj! {"cancelled": false}),
            "branch" => match cmd.required_raw("entryId") {
                Ok(entry_id) => {
                    self.st.branch_messages =
                        vec![obj! {"entryId": entry_id, "text": "branch message"}];
                    self.ok(id, ty, obj! {"text": "branch created", "cancelled": false});
                }
                Err(e) => self.fail(id, ty, &e),
            },
            "get_branch_messages" => {
                let messages = J::Arr(self.st.branch_messages.clone());
                self.ok(id, ty, obj! {"messages": messages});
            }
            "get_last_assistant_text" => {
                let text = J::from(self.st.last_assistant_text.clone());
                self.ok(id, ty, obj! {"text": text});
            }
            "set_fast_mode" => match cmd.bool("enabled") {
                Ok(enabled) => {
                    self.st.fast_mode = enabled;
                    self.ok(id, ty, obj! {"enabled": enabled, "active": enabled});
                }
                Err(e) => self.fail(id, ty, &e),
            },
            "get_available_commands" => self.ok(id, ty, obj! {"commands": arr![]}),
            // omp's subagent registry, with no subagent running.
            "set_subagent_subscription" => match cmd.str("level") {
                Ok(level) if ["off", "progress", "events"].contains(&level.as_str()) => {
                    self.ok(id, ty, obj! {"level": level})
                }
                Ok(level) => {
                    let error = format!("Invalid subagent subscription level: {level}");
                    self.fail(id, ty, &error);
                }
                Err(e) => self.fail(id, ty, &e),
            },
            "get_subagents" => self.ok(id, ty, obj! {"subagents": arr![]}),
            "get_subagent_messages" => {
                let who = cmd.str("subagentId").unwrap_or_default();
                let error = format!("Unknown subagent or session file unavailable: {who}");
                self.fail(id, ty, &error);
            }
            // pi's forking commands (recorded from pi 0.73.1: get_fork_messages lists the user
            // messages; fork answers the chosen text; clone answers {cancelled}).
            "get_fork_messages" => {
                let messages = arr![obj! {"entryId": "5681c403", "text": "say hello"}];
                self.ok(id, ty, obj! {"messages": messages});
            }
            "fork" => match cmd.str("entryId") {
                Ok(_) => self.ok(id, ty, obj! {"text": "say hello", "cancelled": false}),
                Err(e) => self.fail(id, ty, &e),
            },
            "clone" => self.ok(id, ty, obj! {"cancelled": false}),
            "get_commands" => {
                let commands = arr![obj! {"name": "quiet", "description": "Does nothing", "source": "extension"}];
                self.ok(id, ty, obj! {"commands": commands});
            }
            "handoff" => self.ok(id, ty, J::Null),
            // pi 0.84.4 on (recorded from pi 1.6.0): a queue_update with the queue emptied, then
            // the texts it held (a live run's queued steers and follow-ups) as the data.
            "clear_queue" => {
                let (steering, follow_up) = self.take_queue();
                self.event(obj! {"type": "queue_update", "steering": arr![], "followUp": arr![]});
                let list = |v: Vec<String>| J::Arr(v.iter().map(|s| J::from(s.as_str())).collect());
                self.ok(id, ty, obj! {"steering": list(steering), "followUp": list(follow_up)});
            }
            // pi 0.81.0 on (recorded from pi 1.6.0 with a model without reasoning).
            "get_available_thinking_levels" => self.ok(id, ty, obj! {"levels": arr!["off"]}),
            _ => self.unknown(cmd),
        }
    }

    /// omp: failure with the id, `unsupported: <type>`. pi: id-less
    /// `Unknown command: <type>`.
    fn unknown(&mut self, cmd: &Cmd<'_>) {
        if self.protocol11 {
            let error = format!("Unknown command: {}", cmd.ty);
            return match &cmd.id {
                Some(_) => self.fail_typed(&cmd.id, &cmd.ty, "unknown_command", &error, None),
                None => self.protocol_error_11("unknown_command", &error),
            };
        }
        match self.flavor {
            Flavor::Omp => {
                let error = format!("unsupported: {}", cmd.ty);
                self.fail(&cmd.id, &cmd.ty, &error);
            }
            Flavor::Pi => {
                let error = format!("Unknown command: {}", cmd.ty);
                self.fail(&None, &cmd.ty, &error);
            }
        }
    }

    /// Stores a required field (any JSON type, verbatim) and answers `{}`.
    fn set_field(&mut self, cmd: &Cmd<'_>, key: &str, store: impl FnOnce(&mut State, J)) {
        match cmd.required_raw(key) {
            Ok(v) => {
                store(&mut self.st, v);
                self.ok(&cmd.id, &cmd.ty, obj! {});
            }
            Err(e) => self.fail(&cmd.id, &cmd.ty, &e),
        }
    }

    fn current_state(&self) -> J {
        let (streaming, queued) = self.activity_state();
        let mut tools = vec![obj! {
            "name": "read",
            "description": "Read files",
            "parameters": obj! {"type": "object"},
        }];
        tools.extend(self.st.host_tools.iter().cloned());
        let state = obj! {
            "model": model_info(&self.st.model_id, &self.st.model_provider),
            "thinkingLevel": self.st.thinking_level.clone(),
            "isStreaming": streaming,
            "isCompacting": self.compacting(),
            "steeringMode": self.st.steering_mode.clone(),
            "followUpMode": self.st.follow_up_mode.clone(),
            "interruptMode": self.st.interrupt_mode.clone(),
            "sessionId": "fake-session",
            "sessionName": self.st.session_name.clone(),
            "autoCompactionEnabled": self.st.auto_compaction_enabled.clone(),
            "fastModeEnabled": self.st.fast_mode,
            "fastModeActive": self.st.fast_mode,
            "tokensPerSecond": 7.25,
            "messageCount": self.st.messages.len(),
            "queuedMessageCount": queued,
            "todoPhases": self.st.todo_phases.clone(),
            "dumpTools": tools,
        };
        match self.flavor {
            // pi's name for the queue (it has no queuedMessageCount).
            Flavor::Pi => state.with("pendingMessageCount", J::from(queued)),
            Flavor::Omp => state,
        }
    }

    fn set_host_uri_schemes(&mut self, cmd: &Cmd<'_>) {
        let items = match cmd.raw_array("schemes") {
            Ok(items) => items,
            Err(e) => return self.fail(&cmd.id, &cmd.ty, &e),
        };
        let mut schemes = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let value: Value = serde_json::from_str(item.get()).unwrap_or(Value::Null);
            let scheme = match &value {
                Value::String(s) => Some(s.as_str()),
                Value::Object(o) => o.get("scheme").and_then(Value::as_str),
                _ => None,
            };
            match scheme {
                Some(s) => schemes.push(J::from(s.trim().to_lowercase())),
                None => {
                    let error = format!("invalid field: schemes[{i}].scheme (expected a string)");
                    return self.fail(&cmd.id, &cmd.ty, &error);
                }
            }
        }
        self.ok(&cmd.id, &cmd.ty, obj! {"schemes": schemes});
    }

    fn get_messages_page(&mut self, cmd: &Cmd<'_>) {
        let total = self.st.messages.len();
        let limit = match cmd.get("limit") {
            None | Some(Value::Null) => 100,
            Some(v) => match v.as_u64() {
                Some(n @ 1..=256) => n as usize,
                _ => {
                    return self.fail(
                        &cmd.id,
                        &cmd.ty,
                        "Invalid limit: expected an integer between 1 and 256",
                    )
                }
            },
        };
        let start = match cmd.get("cursor") {
            None | Some(Value::Null) => 0,
            Some(Value::String(s)) => match s.parse::<usize>() {
                Ok(n) if n <= total => n,
                _ => return self.fail(&cmd.id, &cmd.ty, "Invalid cursor"),
            },
            Some(_) => return self.fail(&cmd.id, &cmd.ty, "Invalid cursor"),
        };
        let end = (start + limit).min(total);
        let page = J::Arr(self.st.messages[start..end].to_vec());
        let next = if end < total { J::from(end.to_string()) } else { J::Null };
        self.ok(
            &cmd.id,
            &cmd.ty,
            obj! {"messages": page, "totalMessages": total, "nextCursor": next},
        );
    }

    fn negotiate(&mut self, cmd: &Cmd<'_>) {
        let wanted = match cmd.get("protocolVersion") {
            Some(v) => v.as_u64(),
            None => return self.fail(&cmd.id, &cmd.ty, "missing field: protocolVersion"),
        };
        if !self.v2_advertised || self.v2_fail || wanted != Some(2) {
            return self.fail(&cmd.id, &cmd.ty, "Unsupported protocol version");
        }
        self.ok(&cmd.id, &cmd.ty, obj! {"protocolVersion": 2});
        // The encoder switches right after the success response is written.
        self.out.v2 = true;
        if self.chunk_violation {
            // index 1 first: the sequence must start at 0.
            self.event(obj! {
                "type": "rpc_chunk",
                "chunkId": "rpc-1",
                "index": 1,
                "count": 2,
                "byteLength": 1048577,
                "data": "e30=",
            });
        }
    }

    // ----- prompts ---------------------------------------------------------

    fn prompt(&mut self, cmd: &Cmd<'_>) {
        let id = &cmd.id;
        let ty = cmd.ty.as_str();
        let message = match cmd.str("message") {
            Ok(m) => m,
            Err(e) => return self.fail(id, ty, &e),
        };
        let plan = Plan::parse(&message);
        // pi delivers what was parked with the next prompt's run.
        self.parked = 0;

        if let Plan::Ui(ui) = &plan {
            if self.pi_defers(ui, cmd) {
                return;
            }
        }

        // pi 0.99 on: what the response says happens to the prompt (default "started").
        self.disposition = match plan {
            Plan::Response(responses::Scenario::Queued) => Some("queued"),
            Plan::Activity(activity::Scenario::SlashCommand) => Some("handled"),
            _ => None,
        };
        // The response comes first; "local" answers with data of its own.
        if !matches!(plan, Plan::Response(responses::Scenario::Local)) {
            self.ack(id, ty);
        }

        match plan {
            Plan::Turn(turn) => self.run_turn(turn),
            Plan::Ui(ui) => self.run_ui(ui),
            Plan::Host(host) => self.run_host(host),
            Plan::Volume(volume) => self.run_volume(volume),
            Plan::Fault(fault) => self.run_fault(fault),
            Plan::Response(response) => self.run_response(response, cmd),
            Plan::Activity(run) => self.run_activity(run, cmd, &message),
            Plan::Gate(gate) => self.run_gate(gate, &message),
            Plan::Recovery(recovery) => self.run_recovery(recovery, &message),
        }
    }
}
