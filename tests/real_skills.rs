//! The `skills` start option against the REAL agents, offline, with `omprpc-fake-llm` as the
//! model, whose request log shows the system prompt the agent built: the flags the option adds
//! are accepted (the agent starts and answers a turn), the skills it selects are the ones the
//! agent lists, `read` joins a `tools` allow-list because both agents list skills only when
//! `read` is on, and what an agent version cannot select fails start.
//!
//! pi: the newest supported (`make test-pi-oldest` runs it on the oldest too). omp: only with
//! `OMPRPC_REAL_OMP=1` (`make test-omp`), as tests/real_omp.rs.
//! Run: `cargo test --test real_skills` (`OMPRPC_PI_VERSION=oldest`, `OMPRPC_REAL_OMP=1`).

#[path = "support/common.rs"]
#[allow(dead_code)]
mod common;
#[path = "support/omp.rs"]
mod omp;
#[path = "support/pi.rs"]
mod pi;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use common::turn;
use serde_json::{json, Value};

/// The two skills: each directory's SKILL.md, with a description the system prompt would show.
const SKILLS: [&str; 2] = ["alpha", "beta"];

fn marker(skill: &str) -> String {
    format!("omprpc-{skill}-skill-marker")
}

/// What one start showed: the argv, and the system prompt and tool names of the request the
/// agent made for a turn.
struct Seen {
    argv: Vec<String>,
    prompt: String,
    tools: Vec<String>,
}

impl Seen {
    fn listed(&self) -> Vec<&'static str> {
        SKILLS.into_iter().filter(|s| self.prompt.contains(&marker(s))).collect()
    }

    fn has(&self, flags: &[&str]) -> bool {
        self.argv.windows(flags.len()).any(|w| w == flags)
    }
}

/// Writes the two skills into the project's `config_dir/skills` (`.pi` or `.omp`; each agent
/// discovers it) and a launcher script named after the agent, so the library's argv builder
/// (not a whole `command`) makes the argv and its `--version` probe reaches the real agent.
/// Returns the launcher.
fn prepare(ws: &pi::Workspace, agent: &str, runtime: &Path, cli: &Path) -> PathBuf {
    for skill in SKILLS {
        let dir = skill_dir(ws, agent, skill);
        std::fs::create_dir_all(&dir).unwrap();
        let text = format!("---\nname: {skill}\ndescription: {}\n---\n# {skill}\nSay {skill}.\n", marker(skill));
        std::fs::write(dir.join("SKILL.md"), text).unwrap();
    }
    let launcher = ws.root.join("bin").join(agent);
    std::fs::create_dir_all(launcher.parent().unwrap()).unwrap();
    std::fs::write(&launcher, format!("#!/bin/sh\nexec '{}' '{}' \"$@\"\n", runtime.display(), cli.display())).unwrap();
    std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755)).unwrap();
    launcher
}

fn skill_dir(ws: &pi::Workspace, agent: &str, skill: &str) -> PathBuf {
    ws.work.join(format!(".{agent}")).join("skills").join(skill)
}

/// The base start options: the launcher through the argv builder, the workspace's model.
fn base(ws: &pi::Workspace, agent: &str, launcher: &Path) -> Value {
    let mut extra = vec!["--offline"];
    if agent == "omp" {
        extra.clear();
    }
    json!({
        "executable": launcher.display().to_string(),
        "flavor": agent,
        "model": "fake/fake-model",
        "no_session": true,
        "extra_args": extra,
        "cwd": ws.work.display().to_string(),
        "env": ws.env(json!({"PI_OFFLINE": "1"})),
        "inherit_env": false,
        "startup_timeout_ms": 120000,
        "request_timeout_ms": 60000,
    })
}

/// Starts the agent with `options` over `base`, runs one turn, and reports what it saw.
fn run(ws: &pi::Workspace, agent: &str, base: &Value, options: Value) -> Seen {
    let c = common::start_with(agent, base.clone(), options);
    let info: Value = serde_json::from_str(&c.info()).unwrap();
    let argv: Vec<String> = serde_json::from_value(info["argv"].clone()).unwrap();
    let t = turn(&c, "hello");
    assert_eq!(t["assistantText"], "pong", "{t:#}");
    c.close().unwrap();
    let reqs = ws.llm_requests();
    let request = reqs.last().expect("the agent asked the model");
    // The system messages' text, whether a string or parts.
    let mut prompt = String::new();
    for m in request["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "system" || m["role"] == "developer") {
        match &m["content"] {
            Value::String(s) => prompt.push_str(s),
            Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).for_each(|s| prompt.push_str(s)),
            _ => {}
        }
    }
    let tools = request["tools"].as_array().map(|t| t.iter().map(|t| t["function"]["name"].as_str().unwrap().to_string()).collect()).unwrap_or_default();
    Seen { argv, prompt, tools }
}

/// Each case in its own environment (own fake LLM), all at once: an agent start dominates.
fn cases<E: Sync>(new_env: impl Fn(&str) -> Option<E>, names: &[&str], each: impl Fn(&E, &str) + Sync) {
    let envs: Vec<E> = match names.iter().map(|n| new_env(n)).collect::<Option<Vec<E>>>() {
        Some(e) => e,
        None => return,
    };
    std::thread::scope(|s| {
        let each = &each;
        let handles: Vec<_> = envs.iter().zip(names).map(|(e, n)| s.spawn(move || each(e, n))).collect();
        let failed: Vec<String> = handles
            .into_iter()
            .zip(names)
            .filter_map(|(h, n)| h.join().err().map(|p| format!("{n}: {}", common_panic(&*p))))
            .collect();
        assert!(failed.is_empty(), "failed cases:\n{}", failed.join("\n"));
    });
}

fn common_panic(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default()
}

#[test]
fn the_skills_option_selects_what_pi_lists() {
    let by_path = pi::pi_at_least("0.50.0");
    let new_env = |n: &str| {
        let env = pi::PiEnv::new(&format!("skills_{n}"), json!([]))?;
        let launcher = prepare(&env.ws, "pi", &env.install.node, &env.install.cli);
        Some((env, launcher))
    };
    // Each pi start costs seconds: the cases that tell something apart. "all" adds no flag
    // (its read rule is what "one" shows too); the oldest pi adds its ignored --skills.
    let names: &[&str] = if by_path { &["no_read", "one", "refused"] } else { &["one", "refused"] };
    cases(new_env, names, |(env, launcher), case| {
        let base = base(&env.ws, "pi", launcher);
        let alpha = skill_dir(&env.ws, "pi", "alpha").display().to_string();
        match case {
            // pi's own rule, the reason for ours: an allow-list without `read` lists no skill.
            "no_read" => {
                let seen = run(&env.ws, "pi", &base, json!({"tools": ["bash"]}));
                assert!(seen.has(&["--tools", "bash"]), "{:?}", seen.argv);
                assert_eq!(seen.tools, ["bash"]);
                assert_eq!(seen.listed(), Vec::<&str>::new(), "{}", seen.prompt);
            }
            // One skill, by path, on pi 0.50 and later (--no-skills keeps beta, discovered, out);
            // older pi parses --skills but filters nothing: why the option refuses a subset there.
            "one" if by_path => {
                let seen = run(&env.ws, "pi", &base, json!({"tools": ["bash"], "skills": [alpha]}));
                assert!(seen.has(&["--tools", "bash,read"]) && seen.has(&["--no-skills", "--skill", &alpha]), "{:?}", seen.argv);
                assert_eq!(seen.tools, ["bash", "read"]);
                assert_eq!(seen.listed(), ["alpha"], "{}", seen.prompt);
            }
            "one" => {
                // trust_project: before project trust the library keeps discovery (skills
                // included) off unless the host selects skills or trusts the project.
                let seen = run(&env.ws, "pi", &base, json!({"extra_args": ["--offline", "--skills", "alpha"], "trust_project": true}));
                assert_eq!(seen.listed(), ["alpha", "beta"], "{}", seen.prompt);
            }
            // What this pi cannot express fails start, with the reason, after the probe.
            _ => {
                let (wrong, reason) = if by_path { (json!(["alpha"]), "by path") } else { (json!([alpha]), "cannot load a subset") };
                let mut opts = base.clone();
                opts["skills"] = wrong;
                let err = omprpc::Client::start(&opts.to_string()).err().expect("start must refuse the selection");
                assert_eq!(err.status, omprpc::Status::InvalidArgument);
                assert!(err.message.contains(reason), "{}", err.message);
            }
        }
    });
}

/// omp: a name pattern through `--skills=`, with read joining the allow-list (one start: omp
/// takes ~5 s to its ready frame).
#[test]
fn the_skills_option_selects_what_omp_lists() {
    let Some(env) = omp::OmpEnv::new("skills_one", json!([])) else { return };
    let launcher = prepare(&env.ws, "omp", &env.install.bun, &env.install.cli);
    let base = base(&env.ws, "omp", &launcher);
    let seen = run(&env.ws, "omp", &base, json!({"tools": ["bash"], "skills": ["alp*"]}));
    assert!(seen.has(&["--tools", "bash,read"]) && seen.has(&["--skills=alp*"]), "{:?}", seen.argv);
    assert_eq!(seen.listed(), ["alpha"], "{}", seen.prompt);
}
