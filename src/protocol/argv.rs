//! The agent's command line: omp_rpc's builder (flags, spellings and order, spec §4.2), pi's
//! flags, flavour detection, and redaction of system prompts wherever argv is shown.

use crate::protocol::opts::Opts;
use crate::error::{Error, Result};
use crate::protocol::scope::{self, Scope};
use crate::protocol::skills::{Selection, SkillFlags};
use crate::protocol::version::{self, Version};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    Omp,
    Pi,
}

impl Flavor {
    pub fn name(self) -> &'static str {
        match self {
            Flavor::Omp => "omp",
            Flavor::Pi => "pi",
        }
    }
}

/// Flags whose value is a system prompt: never shown in logs, errors or `info`.
const SECRET_FLAGS: [&str; 2] = ["--system-prompt", "--append-system-prompt"];
pub const REDACTED: &str = "<redacted>";

fn basename(s: &str) -> &str {
    s.rsplit('/').next().unwrap_or(s)
}

/// pi when the program (or the script a runtime runs, e.g. `node …/pi`) is named pi.
fn detect(argv: &[String]) -> Flavor {
    let looks_pi = |s: &String| {
        let b = basename(s);
        b == "pi" || b == "pi.js" || s.contains("/pi-coding-agent/") && !s.contains("@oh-my-pi/")
    };
    if argv.iter().take(2).any(looks_pi) {
        Flavor::Pi
    } else {
        Flavor::Omp
    }
}

/// Stands for the bridge extension's path in argv until the bridge exists.
pub const EXTENSION_PLACEHOLDER: &str = "\u{0}omprpc-bridge-extension";

/// The agent flavour: the `flavor` option, else detected from the program name.
pub fn flavor(o: &Opts) -> Result<Flavor> {
    match o.str("flavor")? {
        Some("omp") => return Ok(Flavor::Omp),
        Some("pi") => return Ok(Flavor::Pi),
        None | Some("auto") => {}
        Some(other) => return Err(Error::invalid(format!("option \"flavor\" must be \"omp\", \"pi\" or \"auto\", not {other:?}"))),
    }
    if let Some(command) = o.str_list("command")? {
        return Ok(detect(&command));
    }
    Ok(match o.str("executable")? {
        Some(e) => detect(&[e.to_string()]),
        None => Flavor::Omp,
    })
}

/// `--approval-mode <mode>` when the `approval_mode` option asks for one. Tool approvals for
/// headless runs: none is passed unless asked for, so the agent's own configuration decides
/// (omp's setting tools.approvalMode; never --auto-approve from us). pi up to 0.73.1 has no
/// approval or trust flag.
fn approval_flag(o: &Opts, flavor: Flavor) -> Result<Vec<String>> {
    let Some(mode) = o.str("approval_mode")? else { return Ok(Vec::new()) };
    if flavor == Flavor::Pi {
        return Err(Error::invalid("option \"approval_mode\" is omp-only; pi (through 0.73.1) has no approval flag"));
    }
    if !["always-ask", "write", "yolo"].contains(&mode) {
        return Err(Error::invalid("option \"approval_mode\" must be \"always-ask\", \"write\" or \"yolo\""));
    }
    Ok(vec!["--approval-mode".into(), mode.into()])
}

/// The argv to spawn, for the agent's version when known (else the newest). `bridged`: the
/// tool names a bridge extension registers (Some when a bridge is used); `--extension` is added
/// with `EXTENSION_PLACEHOLDER` as its path, and where the agent's `--tools` filters extension
/// tools too (pi from 0.68, omp) they join the allow-list.
pub fn build(o: &Opts, flavor: Flavor, bridged: Option<&[String]>, version: Option<Version>) -> Result<Vec<String>> {
    let skills = skill_flags(o, flavor, version)?;
    if let Some(mut command) = o.str_list("command")? {
        if command.is_empty() {
            return Err(Error::invalid("option \"command\" must not be empty"));
        }
        // The approval mode is a safety setting: never dropped because argv was given whole.
        command.extend(approval_flag(o, flavor)?);
        // So is a skills selection that narrows what loads, and what keeps the repository's
        // resources, MCP servers and excluded tools out (the argv's own flags of a kind stand).
        command.extend(skills.iter().flat_map(|s| s.flags.iter().cloned()));
        let scoped = scope::flags(&Scope::parse(o, None)?, flavor, version, Some(&command))?;
        command.extend(scoped);
        if bridged.is_some() {
            command.push("--extension".into());
            command.push(EXTENSION_PLACEHOLDER.into());
        }
        return Ok(command);
    }
    let executable = o.str("executable")?.map(str::to_string);
    let mut argv = vec![executable.unwrap_or_else(|| flavor.name().to_string()), "--mode".into(), "rpc".into()];
    let mut flag = |name: &str, value: Option<&str>| {
        // omp_rpc adds a valued flag only when the value is truthy (an empty string is skipped).
        if let Some(v) = value.filter(|v| !v.is_empty()) {
            argv.push(name.into());
            argv.push(v.into());
        }
    };
    flag("--provider", o.str("provider")?);
    flag("--model", o.str("model")?);
    flag("--session-dir", o.str("session_dir")?);
    flag("--thinking", o.str("thinking")?);
    flag("--system-prompt", o.str("system_prompt")?);
    flag("--append-system-prompt", o.str("append_system_prompt")?);
    let provider_session = o.str("provider_session_id")?;
    if flavor == Flavor::Pi && provider_session.is_some() {
        return Err(Error::invalid("option \"provider_session_id\" is omp-only; pi has no such flag"));
    }
    flag("--provider-session-id", provider_session);
    // The allow-list as passed (with the library's additions): the scope flags make it exact.
    let mut allowed: Option<Vec<String>> = None;
    if let Some(mut tools) = o.str_list("tools")? {
        // The agents list skills in the prompt only when `read` is on (protocol::skills).
        if skills.as_ref().is_some_and(|s| s.needs_read) && !tools.iter().any(|t| t == "read") {
            tools.push("read".into());
        }
        // Where the allow-list covers extension tools it must name the bridged ones, or the
        // agent hides them (and --no-tools would turn them off). Before pi 0.68 it names
        // built-ins only: a bridged name there is an "Unknown tool" warning, and --no-tools
        // leaves extension tools on.
        if version::tools_filter_extensions(flavor, version) {
            for name in bridged.unwrap_or_default() {
                if !tools.contains(name) {
                    tools.push(name.clone());
                }
            }
        }
        allowed = Some(tools.clone());
        if tools.is_empty() && version::has_no_tools_flag(flavor, version) {
            argv.push("--no-tools".into());
        } else if tools.is_empty() {
            // pi before 0.40 ignores --no-tools silently (every built-in would stay on); an
            // allow-list naming nothing valid turns them off (pi warns `Unknown tool ""`).
            argv.push("--tools".into());
            argv.push(String::new());
        } else {
            argv.push("--tools".into());
            argv.push(tools.join(","));
        }
    }
    for (key, spelling) in [("no_session", "--no-session"), ("no_skills", "--no-skills"), ("no_rules", "--no-rules")] {
        if key == "no_skills" && skills.is_some() {
            argv.extend(skills.iter().flat_map(|s| s.flags.iter().cloned()));
        } else if o.bool(key)?.unwrap_or(false) {
            if flavor == Flavor::Pi && key == "no_rules" {
                return Err(Error::invalid("option \"no_rules\" is omp-only; pi has no such flag"));
            }
            argv.push(spelling.into());
        }
    }
    // omp_rpc: --no-title when no_title is true, or when it is unset and rpc_defaults holds.
    let no_title = o.bool("no_title")?.unwrap_or(o.bool("rpc_defaults")?.unwrap_or(true));
    if no_title && flavor == Flavor::Omp {
        argv.push("--no-title".into());
    } else if flavor == Flavor::Pi && o.bool("no_title")? == Some(true) {
        return Err(Error::invalid("option \"no_title\" is omp-only; pi has no such flag"));
    }
    argv.extend(approval_flag(o, flavor)?);
    argv.extend(scope::flags(&Scope::parse(o, allowed.as_deref())?, flavor, version, None)?);
    let mut extensions = o.str_list("extensions")?.unwrap_or_default();
    if bridged.is_some() {
        extensions.push(EXTENSION_PLACEHOLDER.into());
    }
    for ext in extensions {
        argv.push("--extension".into());
        argv.push(ext);
    }
    argv.extend(o.str_list("extra_args")?.unwrap_or_default());
    Ok(argv)
}

/// The flags of the `skills` option (None when it is not given). `no_skills: true` is the same
/// as `skills: "none"`; with any other selection it is a contradiction, refused.
fn skill_flags(o: &Opts, flavor: Flavor, version: Option<Version>) -> Result<Option<SkillFlags>> {
    let Some(v) = o.get("skills") else { return Ok(None) };
    let selection = Selection::parse(v, "option \"skills\"")?;
    if o.bool("no_skills")? == Some(true) && selection != Selection::None {
        return Err(Error::invalid("options \"no_skills\": true and \"skills\" (other than \"none\") contradict each other; give one"));
    }
    selection.flags(flavor, version).map(Some)
}

/// Replaces each system-prompt value in argv with what `to_file` returns for it (a path),
/// so the prompt stays out of `/proc/*/cmdline` and argv size limits.
pub fn system_prompts_to_files(argv: &mut [String], mut to_file: impl FnMut(&str, &str) -> std::io::Result<String>) -> std::io::Result<()> {
    let mut i = 0;
    while i < argv.len() {
        if let Some(flag) = SECRET_FLAGS.iter().find(|f| argv[i] == **f) {
            if i + 1 < argv.len() {
                argv[i + 1] = to_file(flag, &argv[i + 1])?;
                i += 1;
            }
        } else if let Some(flag) = SECRET_FLAGS.iter().find(|f| argv[i].starts_with(&format!("{f}="))) {
            let value = argv[i][flag.len() + 1..].to_string();
            argv[i] = format!("{flag}={}", to_file(flag, &value)?);
        }
        i += 1;
    }
    Ok(())
}

/// A copy of argv with every system-prompt value replaced, in both `--flag value` and
/// `--flag=value` forms.
pub fn redact(argv: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut hide_next = false;
    for a in argv {
        if hide_next {
            out.push(REDACTED.to_string());
            hide_next = false;
            continue;
        }
        if SECRET_FLAGS.contains(&a.as_str()) {
            hide_next = true;
            out.push(a.clone());
        } else if let Some(flag) = SECRET_FLAGS.iter().find(|f| a.starts_with(&format!("{f}="))) {
            out.push(format!("{flag}={REDACTED}"));
        } else {
            out.push(a.clone());
        }
    }
    out
}

// --- launcher: an argv prefix the agent runs through (sandbox, container, other host) ---------

/// How the agent's environment crosses a launcher.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LauncherEnv {
    /// Set on the launcher process, which hands its environment on (bwrap, unshare,
    /// `ip netns exec`, a wrapper script that execs the rest).
    Process,
    /// Written as an `env NAME=VALUE …` prefix after the launcher, for a far side that does
    /// not inherit the launcher's environment (ssh, docker/podman/kubectl exec, sudo).
    Command,
}

/// Launchers whose far side does not see the launcher's environment: detected by program name
/// for `launcher_env: "auto"`.
const FAR_ENV_LAUNCHERS: [&str; 8] = ["ssh", "docker", "podman", "nerdctl", "kubectl", "oc", "sudo", "doas"];

/// An argv prefix placed before the agent's own argv. The agent's argv (and with it flavour
/// detection, the version probe's words and redaction) stays the agent's own; the prefix is
/// added only where a process is spawned and where the command line is shown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launcher {
    pub argv: Vec<String>,
    pub env: LauncherEnv,
    /// The words after the launcher are joined by the far side into one shell command line
    /// (ssh does): each is quoted for a POSIX shell so it arrives as one word.
    pub shell: bool,
    /// `LauncherEnv::Command`: what the `env` prefix sets (the `env` option and the
    /// `env_passthrough` names: what the host asked the agent to get by name).
    pub far_env: Vec<(String, String)>,
    /// `LauncherEnv::Command`: the `cwd` option, applied on the far side with `env -C`.
    pub far_cwd: Option<String>,
}

impl Launcher {
    /// The `launcher`, `launcher_env` and `launcher_shell` options; `env` and `cwd` are the
    /// agent's (only the `Command` form carries them in argv). None without `launcher`.
    pub fn parse(o: &Opts, env: &[(String, String)], cwd: Option<&str>) -> Result<Option<Launcher>> {
        let argv = match o.get("launcher") {
            None => {
                for k in ["launcher_env", "launcher_shell"] {
                    if o.get(k).is_some() {
                        return Err(Error::invalid(format!("option \"{k}\" needs the \"launcher\" option")));
                    }
                }
                return Ok(None);
            }
            Some(v) => v
                .as_array()
                .filter(|a| !a.is_empty())
                .and_then(|a| a.iter().map(|w| w.as_str().filter(|s| !s.is_empty()).map(str::to_string)).collect::<Option<Vec<_>>>())
                .ok_or_else(|| {
                    Error::invalid(format!(
                        "option \"launcher\" must be a non-empty array of non-empty strings (an argv prefix such as \
                         [\"bwrap\", \"--dev-bind\", \"/\", \"/\", \"--\"] or [\"ssh\", \"-T\", \"host\"]), not {v}"
                    ))
                })?,
        };
        let program = basename(&argv[0]).to_string();
        let far = FAR_ENV_LAUNCHERS.contains(&program.as_str());
        let env_mode = match o.str("launcher_env")? {
            None | Some("auto") if far => LauncherEnv::Command,
            None | Some("auto") | Some("process") => LauncherEnv::Process,
            Some("command") => LauncherEnv::Command,
            Some(_) => return Err(Error::invalid("option \"launcher_env\" must be \"auto\", \"process\" or \"command\"")),
        };
        let (far_env, far_cwd) = if env_mode == LauncherEnv::Command {
            // `env` reads NAME=VALUE words up to the first that is not one: a name that is not
            // a plain identifier would end the list early or be read as the program.
            if let Some((bad, _)) = env.iter().find(|(k, _)| !is_env_name(k)) {
                return Err(Error::invalid(format!(
                    "environment name {bad:?} cannot be passed through the launcher as `env NAME=VALUE` (launcher_env \
                     \"command\"): a name must be letters, digits and underscores, not starting with a digit"
                )));
            }
            (env.to_vec(), cwd.map(str::to_string))
        } else {
            (Vec::new(), None)
        };
        let shell = o.bool("launcher_shell")?.unwrap_or(program == "ssh");
        Ok(Some(Launcher { argv, env: env_mode, shell, far_env, far_cwd }))
    }

    /// The argv to run: the launcher, then (`Command`) `env [-C DIR] NAME=VALUE…`, then `agent`.
    pub fn wrap(&self, agent: &[String]) -> Vec<String> {
        self.compose(agent, false)
    }

    /// `wrap` as shown in logs, records and `info`: system prompts redacted (`redact`) and
    /// every value of the `env` prefix hidden.
    pub fn wrap_shown(&self, agent: &[String]) -> Vec<String> {
        let mut out = redact(&self.argv);
        out.extend(self.compose(&redact(agent), true).split_off(self.argv.len()));
        out
    }

    fn compose(&self, agent: &[String], hide_env: bool) -> Vec<String> {
        let mut inner: Vec<String> = Vec::new();
        if self.env == LauncherEnv::Command && (!self.far_env.is_empty() || self.far_cwd.is_some()) {
            inner.push("env".into());
            if let Some(dir) = &self.far_cwd {
                inner.extend(["-C".to_string(), dir.clone()]);
            }
            inner.extend(self.far_env.iter().map(|(k, v)| format!("{k}={}", if hide_env { REDACTED } else { v })));
        }
        inner.extend(agent.iter().cloned());
        let mut out = self.argv.clone();
        out.extend(inner.into_iter().map(|w| if self.shell { shell_quote(&w) } else { w }));
        out
    }
}

fn is_env_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes.next().is_some_and(|b| b == b'_' || b.is_ascii_alphabetic()) && bytes.all(|b| b == b'_' || b.is_ascii_alphanumeric())
}

/// One word for a POSIX shell: as is when it holds only characters no shell treats specially,
/// else single-quoted (a `'` inside becomes `'\''`).
pub fn shell_quote(word: &str) -> String {
    let plain = |b: u8| b.is_ascii_alphanumeric() || b"_@%+=:,./-".contains(&b);
    if !word.is_empty() && word.bytes().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn argv(v: serde_json::Value) -> Result<(Vec<String>, Flavor)> {
        let map = v.as_object().unwrap().clone();
        let o = Opts::new(&map);
        let f = flavor(&o)?;
        Ok((build(&o, f, None, None)?, f))
    }

    #[test]
    fn omp_rpc_order_is_kept() {
        let (a, f) = argv(json!({
            "executable": "omp", "model": "openrouter/anthropic/claude-sonnet-4.6", "cwd": "/tmp/workspace",
            "thinking": "high", "append_system_prompt": "extra instructions",
            "provider_session_id": "provider-session-1", "tools": ["read", "edit", "write"],
            "no_session": true, "no_skills": true, "no_rules": true, "extra_args": ["--foo", "bar"]
        }))
        .unwrap();
        assert_eq!(f, Flavor::Omp);
        assert_eq!(
            a,
            [
                "omp", "--mode", "rpc", "--model", "openrouter/anthropic/claude-sonnet-4.6", "--thinking", "high",
                "--append-system-prompt", "extra instructions", "--provider-session-id", "provider-session-1",
                "--tools", "read,edit,write", "--no-session", "--no-skills", "--no-rules", "--no-title", "--foo", "bar"
            ]
        );
    }

    #[test]
    fn empty_values_and_defaults() {
        let (a, _) = argv(json!({"provider": "", "tools": [], "rpc_defaults": false})).unwrap();
        assert_eq!(a, ["omp", "--mode", "rpc", "--no-tools"]);
        let (a, _) = argv(json!({"no_title": true, "rpc_defaults": false})).unwrap();
        assert_eq!(a, ["omp", "--mode", "rpc", "--no-title"]);
    }

    #[test]
    fn pi_flags_and_detection() {
        let (a, f) = argv(json!({"flavor": "pi", "model": "fake/fake-model", "no_session": true, "extensions": ["/x.js"]})).unwrap();
        assert_eq!(f, Flavor::Pi);
        // pi (version unknown: the newest) trusts no project and starts no MCP server by default.
        assert_eq!(a, ["pi", "--mode", "rpc", "--model", "fake/fake-model", "--no-session", "--no-approve", "--no-mcp", "--extension", "/x.js"]);
        assert_eq!(argv(json!({"executable": "/usr/bin/pi"})).unwrap().1, Flavor::Pi);
        assert_eq!(argv(json!({"command": ["node", "/opt/x/pi"]})).unwrap().1, Flavor::Pi);
        assert_eq!(argv(json!({"command": ["python3", "-c", "x"]})).unwrap().1, Flavor::Omp);
        assert!(argv(json!({"flavor": "pi", "no_rules": true})).unwrap_err().message.contains("omp-only"));
        assert!(argv(json!({"flavor": "vim"})).is_err());
        assert!(argv(json!({"flavor": "pi", "approval_mode": "yolo"})).unwrap_err().message.contains("omp-only"));
        assert!(argv(json!({"approval_mode": "sometimes"})).is_err());
        let (a, _) = argv(json!({"approval_mode": "always-ask", "rpc_defaults": false})).unwrap();
        assert_eq!(a, ["omp", "--mode", "rpc", "--approval-mode", "always-ask"]);
        // A whole argv keeps the approval mode (a safety setting) and still refuses it for pi.
        let (a, _) = argv(json!({"command": ["bun", "cli.js", "--mode", "rpc"], "approval_mode": "write"})).unwrap();
        assert_eq!(a, ["bun", "cli.js", "--mode", "rpc", "--approval-mode", "write"]);
        assert!(argv(json!({"command": ["pi", "--mode", "rpc"], "approval_mode": "yolo"})).unwrap_err().message.contains("omp-only"));
        assert!(argv(json!({"command": []})).is_err());
        assert!(argv(json!({"tools": "read"})).unwrap_err().message.contains("tools"));
    }

    #[test]
    fn bridged_tools_join_the_allow_list() {
        let map = json!({"flavor": "pi", "tools": [], "extra_args": ["--x"]}).as_object().unwrap().clone();
        let o = Opts::new(&map);
        let a = build(&o, Flavor::Pi, Some(&["echo".to_string()]), None).unwrap();
        assert_eq!(a, ["pi", "--mode", "rpc", "--tools", "echo", "--no-approve", "--no-mcp", "--extension", EXTENSION_PLACEHOLDER, "--x"]);
        let a = build(&o, Flavor::Pi, Some(&["echo".to_string()]), Some(Version::new(0, 68, 1))).unwrap();
        assert_eq!(a, ["pi", "--mode", "rpc", "--tools", "echo", "--no-extensions", "--no-prompt-templates", "--no-skills", "--extension", EXTENSION_PLACEHOLDER, "--x"]);
        // Before pi 0.68: --tools names built-ins only, and --no-tools leaves extension tools on.
        let a = build(&o, Flavor::Pi, Some(&["echo".to_string()]), Some(Version::new(0, 67, 6))).unwrap();
        assert_eq!(a, ["pi", "--mode", "rpc", "--no-tools", "--no-extensions", "--no-prompt-templates", "--no-skills", "--extension", EXTENSION_PLACEHOLDER, "--x"]);
        let a = build(&o, Flavor::Pi, Some(&["echo".to_string()]), Some(Version::new(0, 37, 2))).unwrap();
        assert_eq!(a, ["pi", "--mode", "rpc", "--tools", "", "--no-skills", "--extension", EXTENSION_PLACEHOLDER, "--x"]);
        let map2 = json!({"flavor": "pi", "tools": ["read"]}).as_object().unwrap().clone();
        let a = build(&Opts::new(&map2), Flavor::Pi, Some(&["echo".to_string()]), Some(Version::new(0, 50, 7))).unwrap();
        assert_eq!(a, ["pi", "--mode", "rpc", "--tools", "read", "--no-extensions", "--no-prompt-templates", "--no-skills", "--extension", EXTENSION_PLACEHOLDER]);
        let map = json!({"command": ["pi", "--mode", "rpc"]}).as_object().unwrap().clone();
        let a = build(&Opts::new(&map), Flavor::Pi, Some(&[]), None).unwrap();
        assert_eq!(a, ["pi", "--mode", "rpc", "--no-approve", "--no-mcp", "--extension", EXTENSION_PLACEHOLDER]);
    }

    fn launcher(v: serde_json::Value, env: &[(&str, &str)], cwd: Option<&str>) -> Result<Option<Launcher>> {
        let map = v.as_object().unwrap().clone();
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Launcher::parse(&Opts::new(&map), &env, cwd)
    }

    fn words(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_launcher_must_be_a_non_empty_array_of_non_empty_strings() {
        for bad in [json!({"launcher": []}), json!({"launcher": "bwrap"}), json!({"launcher": ["bwrap", ""]}), json!({"launcher": ["x", 1]})] {
            let e = launcher(bad.clone(), &[], None).unwrap_err();
            assert!(e.message.contains("\"launcher\" must be a non-empty array of non-empty strings"), "{bad}: {}", e.message);
        }
        assert!(launcher(json!({"launcher_env": "command"}), &[], None).unwrap_err().message.contains("needs the \"launcher\""));
        assert!(launcher(json!({"launcher": ["x"], "launcher_env": "remote"}), &[], None).is_err());
        assert!(launcher(json!({"launcher": ["x"], "launcher_shell": "yes"}), &[], None).is_err());
        assert_eq!(launcher(json!({"launcher": null}), &[], None).unwrap(), None);
        let e = launcher(json!({"launcher": ["ssh", "h"]}), &[("A-B", "1")], None).unwrap_err();
        assert!(e.message.contains("\"A-B\""), "{}", e.message);
    }

    #[test]
    fn the_far_side_gets_env_and_cwd_in_argv_where_the_launcher_does_not_pass_them() {
        let agent = words(&["pi", "--mode", "rpc", "--system-prompt", "be terse"]);
        // bwrap hands its environment on: nothing is added.
        let l = launcher(json!({"launcher": ["/usr/bin/bwrap", "--dev-bind", "/", "/"]}), &[("K", "v")], Some("/w")).unwrap().unwrap();
        assert_eq!((l.env, l.shell), (LauncherEnv::Process, false));
        assert_eq!(l.wrap(&agent), words(&["/usr/bin/bwrap", "--dev-bind", "/", "/", "pi", "--mode", "rpc", "--system-prompt", "be terse"]));
        // docker exec: env (and cwd) as an `env` prefix, words passed as they are.
        let l = launcher(json!({"launcher": ["docker", "exec", "-i", "c"]}), &[("K", "v 1")], Some("/w")).unwrap().unwrap();
        assert_eq!(l.wrap(&agent)[4..8], words(&["env", "-C", "/w", "K=v 1"]));
        assert_eq!(l.wrap_shown(&agent), words(&["docker", "exec", "-i", "c", "env", "-C", "/w", "K=<redacted>", "pi", "--mode", "rpc", "--system-prompt", REDACTED]));
        // ssh joins its words into a shell command line: each is quoted to stay one word.
        let l = launcher(json!({"launcher": ["ssh", "-T", "h"]}), &[("K", "it's")], None).unwrap().unwrap();
        assert_eq!(l.wrap(&agent), words(&["ssh", "-T", "h", "env", "'K=it'\\''s'", "pi", "--mode", "rpc", "--system-prompt", "'be terse'"]));
        // Told otherwise, explicitly.
        let l = launcher(json!({"launcher": ["ssh", "h"], "launcher_env": "process", "launcher_shell": false}), &[("K", "v")], None).unwrap().unwrap();
        assert_eq!(l.wrap(&agent[..3]), words(&["ssh", "h", "pi", "--mode", "rpc"]));
        let l = launcher(json!({"launcher": ["./enter"], "launcher_env": "command"}), &[], None).unwrap().unwrap();
        assert_eq!(l.wrap(&agent[..1]), words(&["./enter", "pi"]), "no env prefix when there is nothing to set");
    }

    #[test]
    fn shell_quoting_keeps_every_word_whole() {
        assert_eq!(shell_quote("--mode"), "--mode");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("$HOME;rm"), "'$HOME;rm'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        // What a shell makes of the quoted words is the words (a POSIX shell: a launcher's
        // far side, e.g. over ssh; run here only where the tests have one: Unix).
        #[cfg(unix)]
        {
            let tricky = ["a b", "it's", "$(x)", "`y`", "\"q\"", "", "*", "\n\t", "ü"];
            let line = tricky.iter().map(|w| shell_quote(w)).collect::<Vec<_>>().join(" ");
            let out = std::process::Command::new("sh").arg("-c").arg(format!("for w in {line}; do printf '%s\\0' \"$w\"; done")).output().unwrap();
            let got: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().split_terminator('\0').collect();
            assert_eq!(got, tricky);
        }
    }

    #[test]
    fn skills_become_each_agents_flags_and_turn_read_on() {
        let (a, _) = argv(json!({"flavor": "pi", "tools": ["echo"], "skills": ["/s/alpha"], "no_session": true})).unwrap();
        assert_eq!(a, ["pi", "--mode", "rpc", "--tools", "echo,read", "--no-session", "--no-skills", "--skill", "/s/alpha", "--no-approve", "--no-mcp"]);
        let (a, _) = argv(json!({"tools": [], "skills": ["git-*"], "rpc_defaults": false})).unwrap();
        assert_eq!(a, ["omp", "--mode", "rpc", "--tools", "read", "--skills=git-*"]);
        // "none" needs no read; no_skills: true agrees with it and gives one flag.
        let (a, _) = argv(json!({"flavor": "pi", "tools": [], "skills": "none", "no_skills": true})).unwrap();
        assert_eq!(a, ["pi", "--mode", "rpc", "--no-tools", "--no-skills", "--no-approve", "--no-mcp"]);
        let (a, _) = argv(json!({"flavor": "pi", "skills": "all"})).unwrap();
        assert_eq!(a, ["pi", "--mode", "rpc", "--no-approve", "--no-mcp"]);
        // pi 0.37.2: no --no-tools, so an allow-list of read alone.
        let map = json!({"flavor": "pi", "skills": "all", "tools": []}).as_object().unwrap().clone();
        let a = build(&Opts::new(&map), Flavor::Pi, None, Some(Version::new(0, 37, 2))).unwrap();
        assert_eq!(a, ["pi", "--mode", "rpc", "--tools", "read"]);
        assert!(argv(json!({"flavor": "pi", "skills": ["alpha"]})).unwrap_err().message.contains("by path"));
        let e = argv(json!({"skills": ["a"], "no_skills": true})).unwrap_err();
        assert!(e.message.contains("contradict"), "{}", e.message);
        // A whole argv keeps the selection, as it keeps the approval mode.
        let (a, _) = argv(json!({"command": ["omp", "--mode", "rpc"], "skills": "none"})).unwrap();
        assert_eq!(a, ["omp", "--mode", "rpc", "--no-skills"]);
    }

    #[test]
    fn system_prompts_are_redacted_in_every_form() {
        let a: Vec<String> = ["pi", "--system-prompt", "secret", "--append-system-prompt=also secret", "--model", "m"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(redact(&a), ["pi", "--system-prompt", REDACTED, "--append-system-prompt=<redacted>", "--model", "m"]);
    }
}
