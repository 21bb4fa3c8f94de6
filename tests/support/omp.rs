//! Test support for running the real omp (`@oh-my-pi/pi-coding-agent` 18.2.3) offline against
//! `omprpc-fake-llm`. Used by `tests/real_omp.rs` through `#[path]`, next to
//! `tests/support/pi.rs` (whose `FakeLlm` and `models_json` it reuses as `crate::pi`).
//!
//! * Opt-in: nothing runs unless `OMPRPC_REAL_OMP=1` (`make test-omp` sets it). Without it
//!   every test prints "set OMPRPC_REAL_OMP=1 (make test-omp)" and passes — omp and its Bun
//!   runtime are ~1.5 GB, too much for `make test`.
//! * With it, omp is installed once with `npm install --ignore-scripts --no-audit --no-fund`
//!   into a cache directory outside the repository: `$OMPRPC_OMP_CACHE`, else
//!   `$HOME/.cache/omprpc/omp-<version>` (18.2.3, or `OMPRPC_OMP_VERSION`, e.g. 17.3.5:
//!   OMP-NOTES.md "Versions"). The same install brings Bun from npm
//!   (`@oven/bun-linux-x64`, or `-baseline` on x86-64 CPUs without AVX2, or
//!   `@oven/bun-linux-aarch64`), pinned to `BUN_VERSION`. The install happens in a sibling
//!   temporary directory that is renamed into place, so parallel test threads (one
//!   `OnceLock`) and parallel processes (the rename) never see a half-installed tree.
//! * `OMPRPC_OMP_CLI=/path/to/dist/cli.js` and `OMPRPC_BUN=/path/to/bun` use those instead
//!   (no install when both are set). `OMPRPC_NPM` names npm (default `npm` on `PATH`).
//! * When omp cannot be had (no npm, no registry, no Bun binary), the tests FAIL with the
//!   reason: a requested real-agent run never passes by skipping.
//! * Each `OmpEnv` is a throw-away directory (HOME, agent dir with `models.yml`, a working
//!   directory, the fake LLM's script and log) plus a running fake LLM; dropping it stops the
//!   server and removes the directory (kept when `OMPRPC_KEEP_TMP=1`).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::pi::Workspace;

pub const OMP_PACKAGE: &str = "@oh-my-pi/pi-coding-agent";
/// The omp the suite runs on by default: the newest supported (src/protocol/version.rs).
pub const OMP_VERSION: &str = "18.2.3";

/// The omp version under test: `OMPRPC_OMP_VERSION` (e.g. 17.3.5), else `OMP_VERSION`.
pub fn omp_version() -> String {
    env_nonempty("OMPRPC_OMP_VERSION").unwrap_or_else(|| OMP_VERSION.to_string())
}
/// omp 18.2.3 needs Bun >= 1.3.14; this is the version the suite was verified with.
pub const BUN_VERSION: &str = "1.4.5";
/// How long `npm install` may take before the tests give up on it (~1 min here).
const NPM_TIMEOUT: Duration = Duration::from_secs(1800);

/// A usable omp: the Bun binary and omp's CLI entry (`…/dist/cli.js`).
#[derive(Clone, Debug)]
pub struct OmpInstall {
    pub bun: PathBuf,
    pub cli: PathBuf,
}

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// `OMPRPC_REAL_OMP=1` (or true/yes).
pub fn requested() -> bool {
    matches!(env_nonempty("OMPRPC_REAL_OMP").as_deref(), Some("1") | Some("true") | Some("yes"))
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

/// The npm package that ships the Bun binary for this machine.
pub fn bun_package() -> Result<&'static str, String> {
    match std::env::consts::ARCH {
        "x86_64" => {
            // Bun's default x64 build needs AVX2; the baseline build does not.
            let avx2 = std::fs::read_to_string("/proc/cpuinfo")
                .map(|t| t.lines().filter(|l| l.starts_with("flags")).any(|l| l.split_whitespace().any(|f| f == "avx2")))
                .unwrap_or(false);
            Ok(if avx2 { "@oven/bun-linux-x64" } else { "@oven/bun-linux-x64-baseline" })
        }
        "aarch64" => Ok("@oven/bun-linux-aarch64"),
        other => Err(format!("no Bun package on npm for {other} Linux")),
    }
}

/// The cache directory omp is installed into.
pub fn cache_dir() -> PathBuf {
    let omp_v = omp_version();
    if let Some(d) = env_nonempty("OMPRPC_OMP_CACHE") {
        return PathBuf::from(d);
    }
    let home = env_nonempty("HOME").unwrap_or_else(|| "/tmp".into());
    PathBuf::from(home).join(".cache").join("omprpc").join(format!("omp-{omp_v}"))
}

fn cli_in(dir: &Path) -> PathBuf {
    dir.join("node_modules").join(OMP_PACKAGE).join("dist").join("cli.js")
}

fn bun_in(dir: &Path, package: &str) -> PathBuf {
    dir.join("node_modules").join(package).join("bin").join("bun")
}

fn package_version(dir: &Path, package: &str) -> Option<String> {
    let text = std::fs::read_to_string(dir.join("node_modules").join(package).join("package.json")).ok()?;
    serde_json::from_str::<Value>(&text).ok()?["version"].as_str().map(str::to_string)
}

/// Installed and complete: the marker is written last, before the rename.
fn installed(dir: &Path, bun: &str) -> bool {
    package_version(dir, OMP_PACKAGE).as_deref() == Some(omp_version().as_str())
        && package_version(dir, bun).as_deref() == Some(BUN_VERSION)
        && dir.join(".omprpc-installed").is_file()
        && cli_in(dir).is_file()
        && bun_in(dir, bun).is_file()
}

fn run_npm_install(npm: &Path, dir: &Path, bun: &str) -> Result<(), String> {
    let omp_v = omp_version();
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    std::fs::write(dir.join("package.json"), r#"{"name":"omprpc-omp-cache","version":"0.0.0","private":true}"#)
        .map_err(|e| format!("writing package.json: {e}"))?;
    let log_path = dir.join("npm-install.log");
    let log = std::fs::File::create(&log_path).map_err(|e| format!("creating {}: {e}", log_path.display()))?;
    let mut child = Command::new(npm)
        .args(["install", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"])
        .arg(format!("{OMP_PACKAGE}@{omp_v}"))
        .arg(format!("{bun}@{BUN_VERSION}"))
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
        return Err(format!("npm install {OMP_PACKAGE}@{omp_v} {bun}@{BUN_VERSION} failed ({status}):\n{tail}"));
    }
    for p in [cli_in(dir), bun_in(dir, bun)] {
        if !p.is_file() {
            return Err(format!("npm install succeeded but {} is missing", p.display()));
        }
    }
    check_bun(&bun_in(dir, bun))?;
    std::fs::write(dir.join(".omprpc-installed"), format!("{OMP_PACKAGE}@{omp_v} {bun}@{BUN_VERSION}\n")).map_err(|e| e.to_string())
}

/// The Bun binary runs here (an AVX2 build on a CPU without it dies with SIGILL).
fn check_bun(bun: &Path) -> Result<(), String> {
    let out = Command::new(bun).arg("--version").output().map_err(|e| format!("running {} --version: {e}", bun.display()))?;
    if !out.status.success() {
        return Err(format!("{} --version failed ({}): {}", bun.display(), out.status, String::from_utf8_lossy(&out.stderr)));
    }
    Ok(())
}

fn install() -> Result<OmpInstall, String> {
    let omp_v = omp_version();
    let bun_pkg = bun_package()?;
    let (cli_override, bun_override) = (env_nonempty("OMPRPC_OMP_CLI").map(PathBuf::from), env_nonempty("OMPRPC_BUN").map(PathBuf::from));
    for p in cli_override.iter().chain(bun_override.iter()) {
        if !p.is_file() {
            return Err(format!("{} (from OMPRPC_OMP_CLI / OMPRPC_BUN) does not exist", p.display()));
        }
    }
    if let (Some(cli), Some(bun)) = (&cli_override, &bun_override) {
        check_bun(bun)?;
        return Ok(OmpInstall { bun: bun.clone(), cli: cli.clone() });
    }
    let dir = cache_dir();
    let pick = |dir: &Path| OmpInstall {
        bun: bun_override.clone().unwrap_or_else(|| bun_in(dir, bun_pkg)),
        cli: cli_override.clone().unwrap_or_else(|| cli_in(dir)),
    };
    if installed(&dir, bun_pkg) {
        return Ok(pick(&dir));
    }
    let npm_name = env_nonempty("OMPRPC_NPM").unwrap_or_else(|| "npm".into());
    let npm = which(&npm_name).ok_or_else(|| format!("npm not found (looked for {npm_name:?} on PATH; set OMPRPC_NPM)"))?;
    let parent = dir.parent().ok_or("the omp cache directory has no parent")?;
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
    eprintln!("real omp: installing {OMP_PACKAGE}@{omp_v} and {bun_pkg}@{BUN_VERSION} into {} (once, ~1.5 GB) …", dir.display());
    let started = Instant::now();
    if let Err(e) = run_npm_install(&npm, &staging, bun_pkg) {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(e);
    }
    if dir.exists() && !installed(&dir, bun_pkg) {
        // A broken leftover (an interrupted older layout, another Bun build): replace it.
        let _ = std::fs::remove_dir_all(&dir);
    }
    if let Err(e) = std::fs::rename(&staging, &dir) {
        // Another process won the race: use its tree.
        let _ = std::fs::remove_dir_all(&staging);
        if !installed(&dir, bun_pkg) {
            return Err(format!("moving the omp install into {}: {e}", dir.display()));
        }
    }
    eprintln!("real omp: installed in {:.1}s", started.elapsed().as_secs_f64());
    Ok(pick(&dir))
}

/// omp, installed once per process. `None` (after printing why) unless `OMPRPC_REAL_OMP=1`;
/// with it, a missing omp panics with the reason.
pub fn omp(test: &str) -> Option<OmpInstall> {
    let omp_v = omp_version();
    static INSTALL: OnceLock<Result<OmpInstall, String>> = OnceLock::new();
    if !requested() {
        eprintln!("{test}: set OMPRPC_REAL_OMP=1 (make test-omp)");
        println!("{test}: set OMPRPC_REAL_OMP=1 (make test-omp)");
        return None;
    }
    match INSTALL.get_or_init(|| {
        let found = install()?;
        // Said once per suite, to the real stderr (past the test harness's capture).
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "real omp: {OMP_PACKAGE} {omp_v} ({})", found.cli.display());
        Ok(found)
    }) {
        Ok(i) => Some(i.clone()),
        Err(e) => panic!(
            "{test}: the real omp {omp_v} is not available: {e}\n\
             (these tests need npm with access to the npm registry, which also serves Bun)"
        ),
    }
}

/// One throw-away omp environment: directories, models.yml, and the fake LLM.
pub struct OmpEnv {
    pub install: OmpInstall,
    pub ws: Workspace,
}

impl std::ops::Deref for OmpEnv {
    type Target = Workspace;
    fn deref(&self) -> &Workspace {
        &self.ws
    }
}

impl OmpEnv {
    /// `None` unless the real omp was asked for. `script`: the fake LLM's script (see
    /// `src/bin/omprpc-fake-llm/main.rs`).
    pub fn new(test: &str, script: Value) -> Option<OmpEnv> {
        let install = omp(test)?;
        Some(OmpEnv { install, ws: Workspace::new("omp", test, script, "models.yml") })
    }

    /// The argv: `bun cli.js --mode rpc --no-session --no-title --model fake/fake-model` + `extra`.
    pub fn command(&self, extra: &[&str]) -> Vec<String> {
        let mut argv = vec![
            self.install.bun.display().to_string(),
            self.install.cli.display().to_string(),
            "--mode".into(),
            "rpc".into(),
            "--no-session".into(),
            "--no-title".into(),
            "--model".into(),
            "fake/fake-model".into(),
        ];
        argv.extend(extra.iter().map(|s| s.to_string()));
        argv
    }

    /// `Client::start` options for this environment (extra omp flags appended to argv).
    pub fn options(&self, extra: &[&str]) -> Value {
        json!({
            "command": self.command(extra),
            "flavor": "omp",
            "cwd": self.work.display().to_string(),
            "env": self.env(json!({})),
            // Exactly `env`: the test's own environment (a developer's keys, XDG dirs) stays out.
            "inherit_env": false,
            // omp takes ~5 s to its ready frame on this 2-core machine, longer when busy.
            "startup_timeout_ms": 120000,
            "request_timeout_ms": 60000,
            "stop_grace_ms": 5000,
        })
    }

}
