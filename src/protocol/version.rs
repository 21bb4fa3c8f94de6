//! The agent's version: parsed from `--version` output, checked against the supported range,
//! and the facts about each version that the argv depends on. The measured range and what was
//! tried live in tests/support/PI-NOTES.md; the constants below are the one place the range is
//! written in code.

use std::collections::HashMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use once_cell::sync::Lazy;

use crate::protocol::argv::Flavor;
use crate::transport::process::{self, SpawnSpec};
use crate::wait::lock;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl Version {
    pub const fn new(major: u32, minor: u32, patch: u32) -> Version {
        Version { major, minor, patch }
    }

    /// `X.Y.Z` (a leading `v` and a pre-release or build suffix are accepted and dropped).
    pub fn parse(text: &str) -> Option<Version> {
        let t = text.trim();
        let t = t.strip_prefix('v').unwrap_or(t);
        let core = t.split(['-', '+']).next()?;
        let mut parts = core.split('.');
        let mut num = || -> Option<u32> {
            let p = parts.next()?;
            if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) || p.len() > 9 {
                return None;
            }
            p.parse().ok()
        };
        let v = Version::new(num()?, num()?, num()?);
        parts.next().is_none().then_some(v)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// The oldest pi the real-pi suite passes on (older pi has no `--extension`: 0.32.3 has
/// `--hook` instead and drops the flag silently; 0.35–0.37.1 are not on the registry here).
pub const PI_OLDEST: Version = Version::new(0, 37, 2);
/// The newest pi the suite ran on. Newer pi is started (with a log warning), untested.
pub const PI_NEWEST: Version = Version::new(1, 6, 0);
/// The newest pi of its old npm package (`@mariozechner/pi-coding-agent`; from 0.74.0 pi is
/// `@earendil-works/pi-coding-agent`): the suites run it beside the newest, as the pi whose
/// prompts end at an `agent_end` (`make test-pi-previous`).
pub const PI_PREVIOUS: Version = Version::new(0, 73, 1);
/// omp: 17.x and 18.x share the RPC surface the library uses (17.3.5 was read, 18.2.3 run).
pub const OMP_OLDEST: Version = Version::new(17, 0, 0);
pub const OMP_NEWEST: Version = Version::new(18, 2, 3);

/// The supported range of `flavor`, inclusive (the newest is the newest measured).
pub fn supported(flavor: Flavor) -> (Version, Version) {
    match flavor {
        Flavor::Pi => (PI_OLDEST, PI_NEWEST),
        Flavor::Omp => (OMP_OLDEST, OMP_NEWEST),
    }
}

/// What `--version` printed, read: omp prints `omp/X.Y.Z`, pi a bare `X.Y.Z`. The first line
/// that holds a version counts (stdout first; some launchers print to stderr).
pub fn read_output(stdout: &str, stderr: &str) -> Option<(Option<Flavor>, Version)> {
    for line in stdout.lines().chain(stderr.lines()) {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("omp/") {
            if let Some(v) = Version::parse(rest.split_whitespace().next().unwrap_or("")) {
                return Some((Some(Flavor::Omp), v));
            }
        }
        if let Some(v) = Version::parse(line) {
            return Some((None, v));
        }
    }
    None
}

/// What a probe learnt: the version, and the flavour when the output names it (omp).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Probed {
    pub flavor: Option<Flavor>,
    pub version: Version,
}

/// The words of the agent's argv that start it: everything before `--mode`. None when there
/// is no `--mode` (a wrapper script or a test double, which is not asked `--version`).
pub fn launcher(argv: &[String]) -> Option<&[String]> {
    let i = argv.iter().position(|a| a == "--mode" || a.starts_with("--mode="))?;
    (i > 0).then(|| &argv[..i])
}

/// Everything the answer of `--version` depends on: the launcher's words, and the files it
/// names (the program found on PATH, a `cli.js`) with their modification times, so an
/// upgrade in place is probed again; and the environment it runs with.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Key {
    argv: Vec<String>,
    files: Vec<Option<(std::path::PathBuf, SystemTime)>>,
    env: u64,
}

fn key(spec: &SpawnSpec) -> Key {
    let stamp = |p: std::path::PathBuf| {
        let p = p.canonicalize().unwrap_or(p);
        std::fs::metadata(&p).and_then(|m| m.modified()).ok().map(|t| (p, t))
    };
    let mut files = vec![process::program_path(spec).ok().and_then(stamp)];
    files.extend(spec.argv.iter().skip(1).map(|a| {
        let p = std::path::PathBuf::from(a);
        if p.is_file() {
            stamp(p)
        } else {
            None
        }
    }));
    let mut env: Vec<&(String, String)> = spec.env.iter().collect();
    env.sort();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (env, spec.inherit_env, &spec.cwd).hash(&mut h);
    Key { argv: spec.argv.clone(), files, env: h.finish() }
}

/// Probed versions of this process, by `Key`: an agent executable is asked once.
static CACHE: Lazy<Mutex<HashMap<Key, Probed>>> = Lazy::new(|| Mutex::new(HashMap::new()));

/// Runs `<launcher> --version` (`spec.argv` is the launcher) with the agent's environment and
/// working directory, at most `timeout`. Ok(None): it answered, but with no version in it.
/// Answers are cached per process; failures are not (a slow machine may do better next time).
pub fn probe(spec: &SpawnSpec, timeout: Duration) -> Result<Option<Probed>, String> {
    let k = key(spec);
    if let Some(p) = lock(&CACHE).get(&k) {
        return Ok(Some(*p));
    }
    let dir = ProbeDir::new().map_err(|e| format!("making an empty directory for the version probe: {e}"))?;
    let mut run = in_dir(spec, &dir.0);
    run.argv.push("--version".into());
    let out = process::run_to_end(&run, timeout, 64 * 1024).map_err(|e| e.to_string())?;
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if out.exit != process::Exit::Code(0) {
        let first = stderr.lines().chain(stdout.lines()).next().unwrap_or("");
        return Err(format!("it {}: {first}", out.exit));
    }
    let probed = read_output(&stdout, &stderr).map(|(flavor, version)| Probed { flavor, version });
    if let Some(p) = probed {
        lock(&CACHE).insert(k, p);
    }
    Ok(probed)
}

/// An empty directory of its own for one probe, removed after it. pi 0.37.2 loads the working
/// directory's `.pi/extensions` while it answers `--version` (measured; 0.67.4 and later do
/// not), so a probe run in the agent's directory would run a repository's code before the
/// library knows which flags keep it out (protocol::scope).
struct ProbeDir(std::path::PathBuf);

impl ProbeDir {
    fn new() -> std::io::Result<ProbeDir> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("omprpc-version-probe-{}-{n}", std::process::id()));
        std::fs::create_dir(&dir)?;
        Ok(ProbeDir(dir))
    }
}

impl Drop for ProbeDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `spec` run in `dir`: the words that name files relative to the agent's directory (a
/// relative program path, a script such as `cli.js`) made absolute first, so they still name
/// the same files. A bare program name stays a `PATH` lookup.
fn in_dir(spec: &SpawnSpec, dir: &std::path::Path) -> SpawnSpec {
    let base = spec.cwd.clone().or_else(|| std::env::current_dir().ok());
    let argv = spec
        .argv
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let p = std::path::Path::new(w);
            match &base {
                Some(b) if p.is_relative() && (i > 0 || w.contains('/')) && b.join(p).is_file() => b.join(p).display().to_string(),
                _ => w.clone(),
            }
        })
        .collect();
    SpawnSpec { argv, cwd: Some(dir.to_path_buf()), ..spec.clone() }
}

/// pi from 0.68 applies `--tools` / `--no-tools` to extension tools too; before it they name
/// built-in tools only (an unknown name warns on stderr: `Warning: Unknown tool "x"`), and
/// extension tools are always on.
pub const PI_TOOLS_FILTER_EXTENSIONS: Version = Version::new(0, 68, 0);

/// pi has `--no-tools` from 0.38–0.40.1 (absent in 0.37.8, present in 0.40.1); older pi ignores
/// it silently, leaving every built-in on.
pub const PI_NO_TOOLS_FLAG: Version = Version::new(0, 40, 1);

/// pi announces the end of its work with `agent_settled` from 0.80.4 (CHANGELOG 0.80.4; measured
/// in tests/support/PI-NOTES.md): a prompt ends there, not at an `agent_end`, which from then on
/// only ends one low-level run (retries, overflow recovery and queued messages may follow).
pub const PI_AGENT_SETTLED: Version = Version::new(0, 80, 4);

/// Whether the agent announces settling (`agent_settled`): omp does not; pi from
/// [`PI_AGENT_SETTLED`]. `None` for a pi of unknown version: the client learns it from the first
/// `agent_settled` it sees, and until then lets a probe settle what the frames leave open.
pub fn announces_settling(flavor: Flavor, version: Option<Version>) -> Option<bool> {
    match (flavor, version) {
        (Flavor::Pi, Some(v)) => Some(v >= PI_AGENT_SETTLED),
        (Flavor::Pi, None) => None,
        (Flavor::Omp, _) => Some(false),
    }
}

/// From which version each agent has a command and each of its parameters: the `since` of the
/// command rows of src/protocol/table.json (`{"pi": "X.Y.Z"}`). The table is the one source —
/// the bindings' typed commands are generated from it and tests/protocol_table.rs holds it
/// against the agents' declarations — so it is embedded as is and read once, at the first
/// command of a client, rather than copied into Rust (a copy would need a drift test of its own).
/// Keyed by the command's name, so a request looks it up without allocating.
#[derive(Default)]
struct Since {
    /// Per flavour (`Flavor::Pi`, `Flavor::Omp`): the first version with the command.
    command: [Option<Version>; 2],
    /// Parameters that came later than their command: pi ignores a parameter it does not know,
    /// so one sent to an older pi would be dropped without a word.
    params: Vec<(String, [Option<Version>; 2])>,
}

fn flavor_slot(flavor: Flavor) -> usize {
    match flavor {
        Flavor::Pi => 0,
        Flavor::Omp => 1,
    }
}

static COMMAND_SINCE: Lazy<HashMap<String, Since>> = Lazy::new(|| {
    let table: serde_json::Value = serde_json::from_str(include_str!("table.json")).unwrap_or_default();
    let versions = |row: &serde_json::Value| -> Option<[Option<Version>; 2]> {
        let since = row["since"].as_object()?;
        let of = |f: Flavor| since.get(f.name()).and_then(serde_json::Value::as_str).and_then(Version::parse);
        Some([of(Flavor::Pi), of(Flavor::Omp)])
    };
    let mut out = HashMap::new();
    for row in table["commands"].as_array().into_iter().flatten() {
        let Some(name) = row["name"].as_str() else { continue };
        let params: Vec<(String, [Option<Version>; 2])> = row["params"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| Some((p["name"].as_str()?.to_string(), versions(p)?)))
            .collect();
        let command = versions(row);
        if command.is_some() || !params.is_empty() {
            out.insert(name.to_string(), Since { command: command.unwrap_or_default(), params });
        }
    }
    out
});

/// The first version of `flavor` that has `command`, when the protocol table names one (`None`:
/// every version has it, or the table does not know the command).
pub fn command_since(flavor: Flavor, command: &str) -> Option<Version> {
    COMMAND_SINCE.get(command)?.command[flavor_slot(flavor)]
}

/// Why an agent of `version` cannot take `command`, when the table says it came later: the
/// command is then refused without being sent. An unknown version sends everything.
pub fn lacks_command(flavor: Flavor, version: Option<Version>, command: &str) -> Option<String> {
    let (v, since) = (version?, command_since(flavor, command)?);
    let name = flavor.name();
    (v < since).then(|| format!("command \"{command}\" needs {name} {since} or newer; the agent is {name} {v}, so it was not sent"))
}

/// Why an agent of `version` cannot take the parameter `param` of `command` (given, not null),
/// when the table says it came later; as [`lacks_command`].
pub fn lacks_param(flavor: Flavor, version: Option<Version>, command: &str, param: &str) -> Option<String> {
    let v = version?;
    let since = COMMAND_SINCE.get(command)?.params.iter().find(|(p, _)| p == param)?.1[flavor_slot(flavor)]?;
    let name = flavor.name();
    (v < since).then(|| {
        format!("parameter \"{param}\" of command \"{command}\" needs {name} {since} or newer; the agent is {name} {v}, which would ignore it, so the command was not sent")
    })
}

/// The first refusal of [`lacks_command`] / [`lacks_param`] for a request of `command` with
/// `params` (a parameter counts when it is given and not null).
pub fn lacks_request(flavor: Flavor, version: Option<Version>, command: &str, params: Option<&serde_json::Map<String, serde_json::Value>>) -> Option<String> {
    version?;
    lacks_command(flavor, version, command).or_else(|| {
        params?.iter().filter(|(_, v)| !v.is_null()).find_map(|(p, _)| lacks_param(flavor, version, command, p))
    })
}

/// Whether the agent knows `--no-tools`. Unknown version: the newest behaviour.
pub fn has_no_tools_flag(flavor: Flavor, version: Option<Version>) -> bool {
    match (flavor, version) {
        (Flavor::Pi, Some(v)) => v >= PI_NO_TOOLS_FLAG,
        _ => true,
    }
}

/// Whether `--tools` / `--no-tools` also filter extension tools (the bridge's) for this agent.
/// Unknown version: the newest behaviour.
pub fn tools_filter_extensions(flavor: Flavor, version: Option<Version>) -> bool {
    match (flavor, version) {
        (Flavor::Pi, Some(v)) => v >= PI_TOOLS_FILTER_EXTENSIONS,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_the_agents_print() {
        assert_eq!(read_output("0.73.1\n", ""), Some((None, Version::new(0, 73, 1))));
        assert_eq!(read_output("omp/18.2.3\n", ""), Some((Some(Flavor::Omp), Version::new(18, 2, 3))));
        assert_eq!(read_output("omp/18.2.3-canary.1\n", ""), Some((Some(Flavor::Omp), Version::new(18, 2, 3))));
        assert_eq!(read_output("", "v1.2.3"), Some((None, Version::new(1, 2, 3))));
        assert_eq!(read_output("true (GNU coreutils) 8.32\n", ""), None);
        assert_eq!(read_output("1.2\n1.2.3.4\nx.1.2\n", ""), None);
        assert!(Version::new(0, 37, 2) < Version::new(0, 68, 0) && Version::new(0, 68, 0) < Version::new(18, 0, 0));
    }

    #[test]
    fn the_launcher_is_what_comes_before_mode() {
        let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(launcher(&v(&["pi", "--mode", "rpc"])), Some(&v(&["pi"])[..]));
        assert_eq!(launcher(&v(&["node", "/x/cli.js", "--mode=rpc"])), Some(&v(&["node", "/x/cli.js"])[..]));
        assert_eq!(launcher(&v(&["sh", "-c", "sleep 9"])), None);
        assert_eq!(launcher(&v(&["--mode", "rpc"])), None);
    }

    #[test]
    fn the_probe_runs_elsewhere_with_relative_files_made_absolute() {
        let base = std::env::temp_dir().join(format!("omprpc-in-dir-test-{}", std::process::id()));
        std::fs::create_dir_all(base.join("bin")).unwrap();
        std::fs::write(base.join("cli.js"), "").unwrap();
        std::fs::write(base.join("bin/pi"), "").unwrap();
        let spec = SpawnSpec {
            argv: ["bin/pi", "node", "cli.js", "--flag", "missing.js"].iter().map(|s| s.to_string()).collect(),
            cwd: Some(base.clone()),
            env: Vec::new(),
            inherit_env: false,
        };
        let run = in_dir(&spec, std::path::Path::new("/nowhere"));
        let b = |p: &str| base.join(p).display().to_string();
        assert_eq!(run.argv, [b("bin/pi"), "node".into(), b("cli.js"), "--flag".into(), "missing.js".into()]);
        assert_eq!(run.cwd.as_deref(), Some(std::path::Path::new("/nowhere")));
        std::fs::remove_dir_all(&base).unwrap();
        let dir = ProbeDir::new().unwrap();
        let path = dir.0.clone();
        assert!(path.is_dir() && std::fs::read_dir(&path).unwrap().next().is_none());
        drop(dir);
        assert!(!path.exists());
    }

    #[test]
    fn pi_announces_settling_from_0_80_4() {
        assert_eq!(announces_settling(Flavor::Pi, Some(Version::new(0, 80, 3))), Some(false));
        assert_eq!(announces_settling(Flavor::Pi, Some(Version::new(0, 80, 4))), Some(true));
        assert_eq!(announces_settling(Flavor::Pi, Some(Version::new(1, 6, 0))), Some(true));
        assert_eq!(announces_settling(Flavor::Pi, None), None);
        assert_eq!(announces_settling(Flavor::Omp, Some(Version::new(18, 2, 3))), Some(false));
    }

    #[test]
    fn commands_pi_added_later_are_known_from_the_table() {
        assert_eq!(command_since(Flavor::Pi, "clear_queue"), Some(Version::new(0, 84, 4)));
        assert_eq!(command_since(Flavor::Pi, "get_tree"), Some(Version::new(0, 80, 3)));
        assert_eq!(command_since(Flavor::Pi, "get_state"), None);
        assert_eq!(command_since(Flavor::Omp, "clear_queue"), None);
        let old = Some(PI_PREVIOUS);
        let why = lacks_command(Flavor::Pi, old, "clear_queue").expect("0.73.1 has no clear_queue");
        assert!(why.contains("clear_queue") && why.contains("0.73.1") && why.contains("0.84.4"), "{why}");
        assert_eq!(lacks_command(Flavor::Pi, Some(Version::new(0, 84, 4)), "clear_queue"), None);
        assert_eq!(lacks_command(Flavor::Pi, Some(PI_NEWEST), "get_available_thinking_levels"), None);
        assert_eq!(lacks_command(Flavor::Pi, None, "clear_queue"), None, "an unknown version sends it");
        assert_eq!(lacks_command(Flavor::Pi, old, "no_such_command"), None, "a command the table does not know is sent");
        let why = lacks_param(Flavor::Pi, old, "bash", "excludeFromContext").expect("0.73.1 ignores excludeFromContext");
        assert!(why.contains("excludeFromContext") && why.contains("0.76.0") && why.contains("0.73.1"), "{why}");
        assert_eq!(lacks_param(Flavor::Pi, Some(PI_NEWEST), "bash", "excludeFromContext"), None);
        assert_eq!(lacks_param(Flavor::Pi, old, "bash", "command"), None);
    }

    #[test]
    fn tools_semantics_change_at_pi_0_68() {
        assert!(!tools_filter_extensions(Flavor::Pi, Some(Version::new(0, 67, 6))));
        assert!(tools_filter_extensions(Flavor::Pi, Some(Version::new(0, 68, 0))));
        assert!(tools_filter_extensions(Flavor::Pi, None));
        assert!(tools_filter_extensions(Flavor::Omp, Some(Version::new(18, 2, 3))));
        assert!(!has_no_tools_flag(Flavor::Pi, Some(Version::new(0, 37, 8))));
        assert!(has_no_tools_flag(Flavor::Pi, Some(Version::new(0, 40, 1))));
    }
}
