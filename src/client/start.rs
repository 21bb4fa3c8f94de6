//! Starting a client: the options, the agent's version, the tool bridge, system prompt files and
//! the recording are made ready before the agent is spawned; then the reader and writer threads
//! start and the handshake runs (ready or probe, the bridge's hello, protocol v2, host tools and
//! URI schemes). A start that fails at any step leaves nothing running.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use crate::bridge::Bridge;
use crate::error::{Error, Result, Status};
use crate::observe::{Counters, Level, Logger};
use crate::protocol::argv;
use crate::protocol::chunks::{ChunkDecoder, ChunkLimits};
use crate::transport::process::{self, Signal};
use crate::transport::record::Recorder;
use crate::transport::StderrRing;
use crate::wait::lock;

use super::events::EventQueue;
use super::host::HostRegistry;
use super::lifecycle::Lifecycle;
use super::options::{self, Handshake, Options};
use super::pending::Pending;
use super::ui::UiQueue;
use super::{deadline_after, operations, reader, Client, Deadline, Shared, State, Wait};

impl Client {
    /// Spawns the agent and completes the handshake; on any failure the agent is torn down.
    ///
    /// `options_json`: the start options as a JSON object, the keys of the C API's
    /// `omprpc_client_start` (docs/c-api.md, "Start options"): `command` (the agent's argv) or
    /// `executable` with typed options (`model`, `flavor`, `host_tools`, `ui_policy`, …), the
    /// environment (`env`, `inherit_env`), timeouts. An unknown key or a bad value is
    /// INVALID_ARGUMENT naming it; an agent that cannot start is IO or PROCESS_EXITED with its
    /// stderr.
    pub fn start(options_json: &str) -> Result<Client> {
        // Before the options are read there is no client logger: OMPRPC_LOG still sees why.
        let early = |e: Error| {
            if crate::observe::stderr_level().is_some() {
                Logger::stderr_only().log(Level::Error, "start", "start failed: bad options", json!({"status": e.status.name(), "error": e.message}));
            }
            e
        };
        let map = options::parse_object(options_json).map_err(early)?;
        let mut opts = Options::from_map(&map).map_err(early)?;
        let log = Logger::new(opts.log_level, opts.log_queue_capacity, options::log_secrets(&map, &opts.spawn));
        let failed = |e: Error, step: &str| {
            log.log(Level::Error, "start", &format!("start failed: {step}"), json!({"status": e.status.name(), "error": e.message}));
            e
        };
        // The version, once per executable: the argv is built for it, and an unsupported one
        // fails here, before the agent runs.
        if let Some(probe) = opts.version_probe.take() {
            // As logged: the agent's words (behind the launcher, its env values hidden).
            let probe_shown = {
                let words = crate::protocol::version::launcher(&opts.spawn.argv).unwrap_or_default();
                opts.launcher.as_ref().map_or_else(|| argv::redact(words), |l| l.wrap_shown(words))
            };
            let timeout = opts.startup_timeout.unwrap_or(Duration::from_secs(30));
            match crate::protocol::version::probe(&probe, timeout) {
                // Logged with the spawn record below.
                Ok(Some(probed)) => opts = Options::from_map_at(&map, Some(probed)).map_err(|e| failed(e, "agent version"))?,
                Ok(None) => log.log(Level::Warn, "start", "the agent's --version named no version; argv for the newest", json!({"argv": probe_shown})),
                Err(e) => log.log(Level::Warn, "start", "the agent's --version failed; argv for the newest", json!({"argv": probe_shown, "error": e})),
            }
        }
        if let Some(v) = opts.agent_version {
            let (_, newest) = crate::protocol::version::supported(opts.flavor);
            if v > newest {
                log.log(Level::Warn, "start", "agent newer than the newest tested", json!({"version": v.to_string(), "newest_tested": newest.to_string()}));
            }
        }
        let mut bridge = match &opts.bridge {
            Some(plan) => Some(Bridge::prepare(plan).map_err(|e| failed(e, "preparing the tool bridge"))?),
            None => None,
        };
        if let Some(b) = &bridge {
            let path = b.extension_path().to_string_lossy().into_owned();
            for a in opts.spawn.argv.iter_mut().filter(|a| a.as_str() == argv::EXTENSION_PLACEHOLDER) {
                *a = path.clone();
            }
        }
        // System prompts as files: written into a private directory removed at close — and,
        // through the guard, on every way out of a start that fails before the client exists.
        let scratch = if opts.system_prompt_via_file {
            let dir = crate::env::private_dir("omprpc-agent").map_err(|e| Error::new(Status::Io, format!("creating a private directory: {e}")))?;
            let guard = crate::env::RemoveDir(Some(dir.clone()));
            let mut n = 0;
            let written = argv::system_prompts_to_files(&mut opts.spawn.argv, |flag, text| {
                use std::io::Write;
                n += 1;
                let path = dir.join(format!("{}-{n}.md", flag.trim_start_matches('-')));
                crate::env::private_file(&path, crate::env::Existing::Refuse)?.write_all(text.as_bytes())?;
                Ok(path.to_string_lossy().into_owned())
            });
            if let Err(e) = written {
                return Err(failed(Error::new(Status::Io, format!("writing the system prompt file: {e}")), "system prompt files"));
            }
            guard
        } else {
            crate::env::RemoveDir(None)
        };
        let argv_shown = opts.launch_shown();
        // Opened before the agent exists, so a bad path fails start with nothing to tear down.
        let recorder = match &opts.record_path {
            None => None,
            Some(p) => match Recorder::create(p, opts.flavor.name(), opts.agent_version.map(|v| v.to_string()).as_deref(), &argv_shown) {
                Ok(r) => Some(r),
                Err(e) => return Err(failed(Error::new(Status::Io, format!("cannot open record_path {}: {e}", p.display())), "record_path")),
            },
        };
        // Everything that can fail without the agent is made before it runs.
        let io = |e: std::io::Error| Error::new(Status::Io, e.to_string());
        let closing = Signal::new().map_err(io)?;
        let reader_stop = Signal::new().map_err(io)?;
        let events = EventQueue::new(opts.event_queue_capacity, opts.event_queue_max_bytes).map_err(io)?;
        let spawned = process::spawn(&opts.launch_spec()).map_err(|e| match &opts.launcher {
            Some(l) => Error::new(Status::Io, format!("starting the agent through its launcher {:?}: {e}", argv::redact(&l.argv))),
            None => Error::new(Status::Io, e.to_string()),
        });
        if let Err(e) = &spawned {
            log.log(Level::Error, "spawn", "spawning the agent failed", json!({"argv": argv_shown, "error": e.message}));
        }
        let (process, pipes) = spawned?;
        // Env names and argv as shown (system prompts redacted): never env values.
        log.log(Level::Info, "spawn", "agent spawned", json!({"pid": process.pid(), "argv": argv_shown, "flavor": opts.flavor.name(),
            "agent_version": opts.agent_version.map(|v| v.to_string()),
            "env_names": opts.spawn.env.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), "inherit_env": opts.spawn.inherit_env}));
        let (internal_tx, internal_rx) = crossbeam_channel::unbounded::<Vec<u8>>();
        let shared = Arc::new(Shared {
            flavor: opts.flavor,
            argv_shown,
            process,
            stdin: Mutex::new(Some(pipes.stdin)),
            closing,
            reader_stop,
            closed: AtomicBool::new(false),
            queue_responses: AtomicBool::new(opts.queue_responses),
            pending: Mutex::new(Pending::default()),
            state: Mutex::new(State {
                life: {
                    let mut life = Lifecycle::new(opts.max_event_history, opts.max_turn_bytes, opts.turn_events);
                    life.agent_settles(crate::protocol::version::announces_settling(opts.flavor, opts.agent_version));
                    if opts.flavor == crate::protocol::argv::Flavor::Omp {
                        // omp holds a failed run's agent_end back until its retries and overflow
                        // recovery are over (tests/support/OMP-NOTES.md).
                        life.agent_recovers_before_its_end();
                    }
                    if opts.prompt_complete_events {
                        life.announce_completions();
                    }
                    life
                },
                host: HostRegistry::default(),
                ready: None,
                protocol_version: 1,
                protocol_errors: VecDeque::new(),
                close_reason: None,
                policy: Default::default(),
                blocked: Default::default(),
                bridge_hello: None,
                probe: None,
                ops: operations::Operations::default(),
            }),
            cond: Condvar::new(),
            announcing: Mutex::new(()),
            events,
            ui: UiQueue::new(opts.ui_policy.clone()),
            stderr: Mutex::new(StderrRing::new(opts.max_stderr_lines)),
            decoder: Mutex::new(ChunkDecoder::default()),
            next_id: AtomicU64::new(0),
            internal: internal_tx,
            bridge: Mutex::new(None),
            bridge_endpoint: bridge.as_ref().map(|b| b.endpoint().clone()),
            // From here the client's teardown removes it.
            scratch: scratch.keep(),
            recorder,
            opts,
            log,
            counters: Counters::new(),
        });
        // From here a failure tears the client down (agent, bridge, threads, scratch) by close.
        let client = Client { shared: shared.clone(), threads: Mutex::new(Vec::new()), teardown: Mutex::new(None) };
        if let Some(b) = bridge.as_mut() {
            if let Some(plan) = &shared.opts.bridge {
                shared.state().host.set_tools(plan.tool_names());
            }
            if let Err(e) = b.serve(shared.clone()) {
                *lock(&shared.bridge) = bridge;
                let _ = client.close();
                return Err(e);
            }
        }
        *lock(&shared.bridge) = bridge;
        let s = shared.clone();
        let reader = std::thread::Builder::new()
            .name("omprpc-reader".into())
            .spawn(move || s.clone().guarded("reader", || reader::run(s, pipes.stdout, pipes.stderr)));
        let s = shared.clone();
        let writer = std::thread::Builder::new().name("omprpc-writer".into()).spawn(move || {
            s.guarded("writer", || {
                while let Ok(line) = internal_rx.recv() {
                    if line.is_empty() {
                        break; // close() asks the writer to stop
                    }
                    s.fault("writer");
                    let _ = s.write(&line, None);
                }
            })
        });
        // A host streaming events learns of every completion without waiting: the library
        // probes the agent's activity itself where the stream leaves it open.
        let watcher = shared.opts.prompt_complete_events.then(|| {
            let s = shared.clone();
            std::thread::Builder::new().name("omprpc-activity".into()).spawn(move || s.guarded("activity", || s.watch_activity()))
        });
        let mut threads = Vec::new();
        let spawned: Result<()> =
            [reader, writer].into_iter().chain(watcher).try_for_each(|t| t.map(|t| threads.push(t)).map_err(io));
        *lock(&client.threads) = threads;
        if let Err(e) = spawned {
            client.shared.log.log(Level::Error, "start", "start failed: starting the client's threads", json!({"error": e.message}));
            let _ = client.close();
            return Err(e);
        }
        drop(shared);
        let began = Instant::now();
        if let Err(e) = client.handshake() {
            // A step that started after the agent died says "closed"; the cause is more useful.
            let e = match client.shared.close_reason() {
                Some(reason) if e.status == Status::Closed => reason,
                _ => e,
            };
            client.shared.log.log(Level::Error, "start", "start failed: handshake", json!({"status": e.status.name(), "error": e.message}));
            let _ = client.close();
            return Err(e);
        }
        let s = &client.shared;
        s.log.log(Level::Info, "start", "handshake done", json!({"handshake": format!("{:?}", s.opts.handshake).to_lowercase(),
            "protocolVersion": s.state().protocol_version, "ms": began.elapsed().as_secs_f64() * 1000.0}));
        Ok(client)
    }

    fn handshake(&self) -> Result<()> {
        let s = &self.shared;
        let deadline = deadline_after(s.opts.startup_timeout);
        match s.opts.handshake {
            Handshake::Ready => {
                s.wait_state_since(deadline, "Timed out waiting for RPC ready signal", Wait { began_before: true, ..Wait::default() }, &mut |st| {
                    st.ready.as_ref().map(|_| ())
                })?;
            }
            Handshake::Probe => {
                s.request("get_state", None, deadline).map_err(|e| e.context("the agent did not answer its start-up probe (get_state): "))?;
            }
            Handshake::None => {}
        }
        if s.opts.bridge.is_some() {
            self.wait_bridge_hello(deadline)?;
        }
        if s.opts.negotiate_v2 {
            self.negotiate(deadline)?;
        }
        if let Some(tools) = &s.opts.host_tools {
            self.set_host_tools(tools.clone(), deadline)?;
        }
        if let Some(schemes) = &s.opts.host_uri_schemes {
            self.set_host_uri_schemes(schemes.clone(), deadline)?;
        }
        Ok(())
    }

    /// A requested bridge or gate must prove it loaded: the generated extension says hello when
    /// the agent loads it (before pi answers its first command; the factory awaits the
    /// acknowledgement). An agent that drops `--extension` silently (pi before 0.35) would run
    /// with no host tools and no policy gate: start fails instead of failing open.
    fn wait_bridge_hello(&self, deadline: Deadline) -> Result<()> {
        let s = &self.shared;
        let waited = s.wait_state_since(deadline, "", Wait { began_before: true, ..Wait::default() }, &mut |st| st.bridge_hello.as_ref().map(|_| ()));
        match waited {
            Err(e) if e.status == Status::Timeout => {
                let gate = s.opts.bridge.as_ref().is_some_and(|p| p.gate.is_some());
                let what = if gate { "the tool policy gate and any bridged host tools" } else { "the bridged host tools" };
                let dialled = s.bridge_endpoint.as_ref().map_or_else(String::new, |e| format!(" (the extension dials {})", crate::bridge::dialled(e)));
                Err(Error::new(
                    Status::Protocol,
                    format!(
                        "the agent did not load the omprpc bridge extension: no hello over the tool bridge{dialled} within the \
                         start-up timeout ({} ms), so {what} would not be active. An agent that ignores --extension \
                         (pi before 0.35) cannot be used with host tools or tool_policy; one that cannot reach the \
                         bridge's address cannot either{}{}",
                        s.opts.startup_timeout.map_or(0, |d| d.as_millis()),
                        s.opts.agent_version.as_ref().map_or(String::new(), |v| format!(" (agent: {} {v})", s.flavor.name())),
                        s.stderr_suffix()
                    ),
                ))
            }
            other => other,
        }
    }

    /// Protocol v2 when the ready frame offers it; v1 (recorded) when negotiation fails.
    fn negotiate(&self, deadline: Deadline) -> Result<()> {
        let s = &self.shared;
        let Some(ready) = s.state().ready.clone() else { return Ok(()) };
        let ready: Value = serde_json::from_slice(&ready).unwrap_or(Value::Null);
        let offers_v2 = ready["supportedProtocolVersions"].as_array().is_some_and(|a| a.iter().any(|v| v.as_u64() == Some(2)));
        if !offers_v2 {
            return Ok(());
        }
        let defaults = ChunkLimits::default();
        let limits = ChunkLimits {
            min_frame: ready["maxFrameBytes"].as_u64().map_or(defaults.min_frame, |v| v as usize),
            max_frame: ready["maxReassembledFrameBytes"].as_u64().map_or(defaults.max_frame, |v| v as usize),
        };
        if limits.min_frame < 1024 || limits.max_frame < limits.min_frame || limits.max_frame > 1 << 30 {
            let mut r = Map::new();
            r.insert("message".into(), json!(format!("ignoring protocol v2: implausible limits {ready}")));
            s.protocol_error(r);
            return Ok(());
        }
        // The server switches right after its success response: decode chunks from now on.
        lock(&s.decoder).enable(limits);
        let mut p = Map::new();
        p.insert("protocolVersion".into(), json!(2));
        let outcome = s.request("negotiate_protocol", Some(&p), deadline);
        let accepted = matches!(&outcome, Ok(Some(d)) if serde_json::from_slice::<Value>(d).ok().and_then(|v| v["protocolVersion"].as_u64()) == Some(2));
        if accepted {
            s.state().protocol_version = 2;
            s.log.log(Level::Info, "protocol", "protocol v2 negotiated", json!({"maxFrameBytes": limits.min_frame, "maxReassembledFrameBytes": limits.max_frame}));
            return Ok(());
        }
        lock(&s.decoder).disable();
        match outcome {
            Err(e) if matches!(e.status, Status::Closed | Status::ProcessExited | Status::Protocol | Status::Io) => Err(e),
            other => {
                let why = match other {
                    Err(e) => e.message,
                    Ok(d) => format!("unexpected answer {}", String::from_utf8_lossy(d.as_deref().unwrap_or(b"null"))),
                };
                let mut r = Map::new();
                r.insert("message".into(), json!(format!("protocol v2 negotiation failed ({why}); continuing with protocol v1")));
                s.protocol_error(r);
                Ok(())
            }
        }
    }
}
