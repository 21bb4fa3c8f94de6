//! `make bench`: the driver of omprpc's benchmark, and the Rust floors measured beside it.
//!
//! ```text
//! bench_run all --bench BIN --agent AGENT --lib LIBOMPRPC_SO --out DIR --repo DIR [--runs N]
//! bench_run parse FILE                       serde_json parse loop over FILE's lines (floor)
//! bench_run rtt AGENT COUNT [--pin CPU]      raw get_state write/read-line/parse loop (floor)
//! ```
//!
//! `all` produces the input files once with the fake agent, then runs every workload and every
//! floor `--runs` times (default 5), each run in its own process, and reports the medians: a
//! table on stdout, `DIR/results.md` and `DIR/results.json` (every run's figures too). The
//! workloads through the C API are `bench/omprpc_bench.c` (BIN); the bindings' benchmarks, and
//! pi's own TypeScript client on the same burst (`bench/pi_ts_client.mjs`, the reference of their
//! targets), are optional scripts (see bench/README.md). A workload or floor that fails is reported as failed
//! and makes the exit status 1; a failing binding script or a missed target does not (this
//! measures, it does not gate).
//!
//! The floors print the same `key=value` line as the C workloads: `secs` is the timed part,
//! `hwm_kib` the process's peak RSS (VmHWM).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

type Figures = BTreeMap<String, f64>;

const BURST_EVENTS: u64 = 100_000;
/// agent_start, turn_start, message_start, the updates, message_end, turn_end, agent_end.
const BURST_EXTRA_EVENTS: u64 = 6;
const HUGE_SIZES: [u64; 2] = [16 << 20, 64 << 20];
const RTT_COUNT: u64 = 2000;
const CLIENTS: u64 = 100;
const CLIENT_BURST: u64 = 10_000;
const RUN_TIMEOUT: Duration = Duration::from_secs(120);
/// One run of a binding's benchmark script (one measurement) must finish within this.
const BINDING_TIMEOUT: Duration = Duration::from_secs(20);

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("parse") if args.len() == 2 => floor_parse(Path::new(&args[1])),
        Some("rtt") if args.len() >= 3 => {
            let pin = match args.get(3).map(String::as_str) {
                Some("--pin") => Some(args.get(4).and_then(|c| c.parse().ok()).expect("--pin CPU")),
                _ => None,
            };
            floor_rtt(&args[1], args[2].parse().expect("COUNT"), pin)
        }
        Some("all") => std::process::exit(drive(Config::parse(&args[1..]))),
        _ => {
            eprintln!("usage: bench_run all --bench BIN --agent AGENT --lib SO --out DIR --repo DIR [--runs N]");
            eprintln!("       bench_run parse FILE | bench_run rtt AGENT COUNT [--pin CPU]");
            std::process::exit(2);
        }
    }
}

// --- floors -------------------------------------------------------------------------------

/// VmHWM of this process, in KiB.
fn hwm_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Reads FILE line by line (as a pipe consumer would) and parses each line into a
/// `serde_json::Value`: what a plain JSON-lines client does at the least.
fn floor_parse(path: &Path) {
    let t0 = Instant::now();
    let mut r = BufReader::with_capacity(256 * 1024, File::open(path).expect("open input"));
    let mut line = Vec::new();
    let (mut lines, mut bytes) = (0u64, 0u64);
    loop {
        line.clear();
        let n = r.read_until(b'\n', &mut line).expect("read input");
        if n == 0 {
            break;
        }
        bytes += n as u64;
        let body = line.strip_suffix(b"\n").unwrap_or(&line);
        if body.is_empty() {
            continue;
        }
        let v: Value = serde_json::from_slice(body).expect("every line is JSON");
        std::hint::black_box(&v);
        lines += 1;
    }
    let secs = t0.elapsed().as_secs_f64();
    println!("secs={secs:.6} lines={lines} bytes={bytes} hwm_kib={}", hwm_kib());
}

fn pin_to(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET and sched_setaffinity only read
    // and write that local set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            eprintln!("bench_run: sched_setaffinity: {}", std::io::Error::last_os_error());
        }
    }
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    let k = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[k - 1]
}

/// The same process model as the client (this process, the agent as its child, two pipes),
/// with nothing in between: write the request, read one line, parse it.
fn floor_rtt(agent: &str, count: usize, pin: Option<usize>) {
    if let Some(cpu) = pin {
        pin_to(cpu);
    }
    let mut child = Command::new(agent)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the fake agent");
    let mut w = child.stdin.take().unwrap();
    let mut r = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    r.read_line(&mut line).expect("ready line");
    let mut round_trip = |i: usize, line: &mut String| {
        // ChildStdin is unbuffered: one write(2), as the client does.
        w.write_all(format!("{{\"id\":\"r{i}\",\"type\":\"get_state\"}}\n").as_bytes()).expect("write");
        line.clear();
        r.read_line(line).expect("read");
        let v: Value = serde_json::from_str(line).expect("response is JSON");
        assert!(v["success"] == true && v["data"].is_object(), "unexpected response {line}");
    };
    for i in 0..100 {
        round_trip(i, &mut line);
    }
    let mut lat = Vec::with_capacity(count);
    for i in 0..count {
        let t0 = Instant::now();
        round_trip(100 + i, &mut line);
        lat.push(t0.elapsed().as_secs_f64() * 1e6);
    }
    drop(w);
    let _ = child.wait();
    let mean = lat.iter().sum::<f64>() / count as f64;
    lat.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "count={count} p50_us={:.2} p99_us={:.2} mean_us={mean:.2} max_us={:.2} hwm_kib={}",
        percentile(&lat, 0.50),
        percentile(&lat, 0.99),
        lat[count - 1],
        hwm_kib()
    );
}

// --- the driver -------------------------------------------------------------------------

struct Config {
    bench: String,
    agent: String,
    lib: String,
    out: PathBuf,
    repo: PathBuf,
    runs: usize,
}

impl Config {
    fn parse(args: &[String]) -> Config {
        let get = |name: &str| {
            args.iter()
                .position(|a| a == name)
                .and_then(|i| args.get(i + 1))
                .cloned()
                .unwrap_or_else(|| panic!("bench_run all: {name} is required"))
        };
        let runs = args
            .iter()
            .position(|a| a == "--runs")
            .and_then(|i| args.get(i + 1))
            .map(|r| r.parse().expect("--runs N"))
            .unwrap_or(5usize)
            .max(1);
        let abs = |p: String| std::fs::canonicalize(&p).unwrap_or_else(|e| panic!("{p}: {e}")).display().to_string();
        let out = PathBuf::from(get("--out"));
        std::fs::create_dir_all(&out).expect("create the output directory");
        Config {
            bench: abs(get("--bench")),
            agent: abs(get("--agent")),
            lib: abs(get("--lib")),
            out: std::fs::canonicalize(&out).unwrap(),
            repo: PathBuf::from(abs(get("--repo"))),
            runs,
        }
    }
}

/// One command's run: wall time, output, success.
struct Ran {
    wall: f64,
    stdout: String,
    stderr: String,
    ok: bool,
}

/// Runs `cmd` to completion (killed after `timeout`), timing it from spawn to exit.
fn run(cmd: &[String], env: &[(&str, String)], cwd: Option<&Path>, timeout: Duration) -> Ran {
    let mut c = Command::new(&cmd[0]);
    c.args(&cmd[1..]).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    if let Some(d) = cwd {
        c.current_dir(d);
    }
    let t0 = Instant::now();
    let mut child = match c.spawn() {
        Ok(ch) => ch,
        Err(e) => return Ran { wall: 0.0, stdout: String::new(), stderr: format!("cannot run {}: {e}", cmd[0]), ok: false },
    };
    let pipe = |mut p: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = p.read_to_string(&mut s);
            s
        })
    };
    let out = pipe(Box::new(child.stdout.take().unwrap()));
    let err = pipe(Box::new(child.stderr.take().unwrap()));
    let (status, wall) = loop {
        match child.try_wait() {
            Ok(Some(st)) => break (Some(st), t0.elapsed().as_secs_f64()),
            Ok(None) if t0.elapsed() > timeout => {
                let _ = child.kill();
                let _ = child.wait();
                break (None, t0.elapsed().as_secs_f64());
            }
            Ok(None) => std::thread::sleep(Duration::from_micros(100)),
            Err(_) => break (None, t0.elapsed().as_secs_f64()),
        }
    };
    let stdout = out.join().unwrap_or_default();
    let mut stderr = err.join().unwrap_or_default();
    if status.is_none() {
        stderr.push_str(&format!("\n(killed after {} s)", timeout.as_secs()));
    }
    Ran { wall, stdout, stderr, ok: status.is_some_and(|s| s.success()) }
}

/// The `key=value` pairs of the last output line that has any.
fn figures(stdout: &str) -> Figures {
    let line = stdout.lines().rev().find(|l| l.contains('=')).unwrap_or("");
    line.split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .filter_map(|(k, v)| v.parse::<f64>().ok().map(|v| (k.to_string(), v)))
        .collect()
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
}

/// One measured thing: every run's figures, or why it has none.
struct Row {
    label: String,
    runs: Vec<Figures>,
    /// "not available …" or "failed: …".
    note: Option<String>,
}

impl Row {
    fn med(&self, key: &str) -> Option<f64> {
        if self.note.is_some() {
            return None;
        }
        median(self.runs.iter().filter_map(|f| f.get(key).copied()).collect())
    }

    fn to_json(&self) -> Value {
        let keys: std::collections::BTreeSet<&String> = self.runs.iter().flat_map(|f| f.keys()).collect();
        let medians: BTreeMap<&String, Option<f64>> = keys.iter().map(|k| (*k, self.med(k))).collect();
        json!({"label": self.label, "note": self.note, "median": medians, "runs": self.runs})
    }
}

fn last_line(s: &str) -> String {
    s.trim().lines().last().unwrap_or("").chars().take(300).collect()
}

/// One thing to measure: a command run once per round, each run in its own process.
struct Job {
    key: String,
    cmd: Vec<String>,
    env: Vec<(&'static str, String)>,
    cwd: Option<PathBuf>,
    timeout: Duration,
    /// Figures every run must print.
    required: &'static [&'static str],
    /// The command prints nothing: its wall time is its `secs`.
    wall_is_secs: bool,
}

/// Every job, and a row of figures per key. Rounds interleave the jobs (round 1 of every
/// job, then round 2, …), so a floor and the workloads beside it see the same machine.
struct Bench {
    cfg: Config,
    /// Without taskset, the programs pin themselves (`--pin 0`).
    taskset: bool,
    jobs: Vec<Job>,
    rows: BTreeMap<String, Row>,
    /// A workload or floor failed (the exit status is 1).
    failed: bool,
    /// A binding's script failed (reported, but the exit status stays 0: they are optional).
    binding_failed: bool,
}

impl Bench {
    fn add(&mut self, key: &str, label: &str, cmd: Vec<String>) -> &mut Job {
        self.rows.insert(key.to_string(), Row { label: label.to_string(), runs: Vec::new(), note: None });
        self.jobs.push(Job {
            key: key.to_string(),
            cmd,
            env: Vec::new(),
            cwd: None,
            timeout: RUN_TIMEOUT,
            required: &[],
            wall_is_secs: false,
        });
        self.jobs.last_mut().unwrap()
    }

    /// A row with no runs and a reason ("not available …", "failed to build …").
    fn note(&mut self, key: &str, label: &str, note: String) {
        self.rows.insert(key.to_string(), Row { label: label.to_string(), runs: Vec::new(), note: Some(note) });
    }

    fn row(&self, key: &str) -> &Row {
        &self.rows[key]
    }

    /// A workload of bench/omprpc_bench.c.
    fn c_job(&mut self, key: &str, label: &str, args: &[String]) {
        let mut cmd = vec![self.cfg.bench.clone()];
        cmd.extend(args.iter().cloned());
        self.add(key, label, cmd);
    }

    /// The same, pinned to CPU 0 with the agent it spawns.
    fn pinned(&self, program: Vec<String>, args: Vec<String>, pin_at_end: bool) -> Vec<String> {
        if self.taskset {
            let mut v = vec!["taskset".to_string(), "-c".into(), "0".into()];
            v.extend(program);
            v.extend(args);
            return v;
        }
        let pin = vec!["--pin".to_string(), "0".into()];
        let mut v = program;
        if pin_at_end {
            v.extend(args);
            v.extend(pin);
        } else {
            v.extend(pin);
            v.extend(args);
        }
        v
    }

    /// Floors over one input: `cat FILE | cat`, the serde_json parse loop, and the agent
    /// writing the same output into `cat`.
    fn floors(&mut self, prefix: &str, file: &Path, message: &str) {
        let cat = sh(&["cat \"$1\" | cat > /dev/null", &file.display().to_string()]);
        self.add(&format!("{prefix}.cat"), &format!("floor: cat {} | cat", file_name(file)), cat).wall_is_secs = true;
        let me = std::env::current_exe().unwrap().display().to_string();
        let parse = vec![me, "parse".into(), file.display().to_string()];
        self.add(&format!("{prefix}.serde"), "floor: serde_json parse loop", parse);
        let prompt = json!({"id": "1", "type": "prompt", "message": message}).to_string();
        let producer = sh(&["printf '%s\\n' \"$2\" | \"$1\" | cat > /dev/null", &self.cfg.agent, &prompt]);
        self.add(&format!("{prefix}.producer"), "floor: agent | cat (producer)", producer).wall_is_secs = true;
    }

    /// An optional per-binding benchmark (bench/README.md).
    fn binding(&mut self, name: &str) {
        let repo = self.cfg.repo.clone();
        let key = format!("binding.{}", name.to_lowercase());
        let label = format!("{name} binding");
        let (cmd, cwd): (Vec<String>, PathBuf) = match name {
            "Python" => {
                let script = repo.join("bindings/python/bench.py");
                if !script.is_file() {
                    return self.note(&key, &label, "not available (no bindings/python/bench.py)".into());
                }
                if !have("python3") {
                    return self.note(&key, &label, "not available (python3 is not installed)".into());
                }
                (vec!["python3".into(), script.display().to_string()], repo.clone())
            }
            "Go" => {
                let dir = repo.join("bindings/go");
                if !dir.join("cmd/bench").is_dir() {
                    return self.note(&key, &label, "not available (no bindings/go/cmd/bench)".into());
                }
                if !have("go") {
                    return self.note(&key, &label, "not available (go is not installed)".into());
                }
                let exe = self.cfg.out.join("go-bench").display().to_string();
                let build: Vec<String> =
                    ["go", "build", "-tags", "omprpc_release", "-o", &exe, "./cmd/bench"].iter().map(|s| s.to_string()).collect();
                eprintln!("bench: building bindings/go/cmd/bench");
                let b = run(&build, &[], Some(&dir), Duration::from_secs(300));
                if !b.ok {
                    self.binding_failed = true;
                    return self.note(&key, &label, format!("failed to build: {}", last_line(&b.stderr)));
                }
                (vec![exe], repo.clone())
            }
            _ => {
                let script = repo.join("bindings/node/bench.mjs");
                if !script.is_file() {
                    return self.note(&key, &label, "not available (no bindings/node/bench.mjs)".into());
                }
                if !have("node") {
                    return self.note(&key, &label, "not available (node is not installed)".into());
                }
                (vec!["node".into(), script.display().to_string()], repo.join("bindings/node"))
            }
        };
        let mut env = vec![
            ("OMPRPC_LIBRARY", self.cfg.lib.clone()),
            ("OMPRPC_FAKE_AGENT", self.cfg.agent.clone()),
            ("OMPRPC_BENCH_EVENTS", BURST_EVENTS.to_string()),
        ];
        if name == "Python" {
            let mut pp = repo.join("bindings/python").display().to_string();
            if let Ok(old) = std::env::var("PYTHONPATH") {
                pp = format!("{pp}:{old}");
            }
            env.push(("PYTHONPATH", pp));
        }
        let job = self.add(&key, &label, cmd);
        job.env = env;
        job.cwd = Some(cwd);
        job.timeout = BINDING_TIMEOUT;
        job.required = &["events_per_sec", "rss_mib"];
    }

    /// pi's own TypeScript RpcClient on the same burst (bench/pi_ts_client.mjs): the
    /// reference the bindings' targets name, measured in the same run. Optional like the
    /// bindings: pi comes from the test suites' cache or is installed into the output
    /// directory with npm; without node, npm or the registry the row says why.
    fn pi_ts_client(&mut self) {
        let (key, label) = ("binding.pi_ts", "pi's TS client (RpcClient.promptAndWait: every event JSON.parse'd)");
        let script = self.cfg.repo.join("bench/pi_ts_client.mjs");
        if !script.is_file() {
            return self.note(key, label, "not available (no bench/pi_ts_client.mjs)".into());
        }
        if !have("node") {
            return self.note(key, label, "not available (node is not installed)".into());
        }
        let client = match pi_rpc_client(&self.cfg.out) {
            Ok(c) => c,
            Err(e) => return self.note(key, label, format!("not available ({e})")),
        };
        let agent = self.cfg.agent.clone();
        let job = self.add(key, label, vec!["node".into(), script.display().to_string()]);
        job.env = vec![
            ("OMPRPC_PI_RPC_CLIENT", client.display().to_string()),
            ("OMPRPC_FAKE_AGENT", agent),
            ("OMPRPC_BENCH_EVENTS", BURST_EVENTS.to_string()),
        ];
        job.timeout = BINDING_TIMEOUT;
        job.required = &["events_per_sec", "rss_mib"];
    }

    fn run_all(&mut self) {
        let runs = self.cfg.runs;
        for round in 1..=runs {
            for job in &self.jobs {
                let row = self.rows.get_mut(&job.key).unwrap();
                if row.note.is_some() {
                    continue;
                }
                eprint!("\rbench: round {round}/{runs}: {:<70.70}", row.label);
                let _ = std::io::stderr().flush();
                let r = run(&job.cmd, &job.env, job.cwd.as_deref(), job.timeout);
                let optional = job.key.starts_with("binding.");
                if !r.ok {
                    eprintln!("\nbench: {} failed: {}", row.label, r.stderr.trim());
                    row.note = Some(format!("failed: {}", last_line(&r.stderr)));
                    *(if optional { &mut self.binding_failed } else { &mut self.failed }) = true;
                    continue;
                }
                let mut f = figures(&r.stdout);
                if let Some(missing) = job.required.iter().find(|k| !f.contains_key(**k)) {
                    eprintln!("\nbench: {}: no `{missing}=<n>` in its output:\n{}", row.label, r.stdout.trim());
                    let want: Vec<String> = job.required.iter().map(|k| format!("{k}=<n>")).collect();
                    row.note = Some(format!("failed: printed no `{}` line", want.join(" ")));
                    *(if optional { &mut self.binding_failed } else { &mut self.failed }) = true;
                    continue;
                }
                f.insert("wall".into(), r.wall);
                if job.wall_is_secs {
                    f.insert("secs".into(), r.wall);
                }
                row.runs.push(f);
            }
        }
        eprintln!("\rbench: {runs} rounds done{:<70}", "");
    }
}

/// Writes the agent's whole stdout for one prompt into `file`.
fn produce(agent: &str, message: &str, file: &Path) -> std::io::Result<()> {
    let mut child = Command::new(agent).stdin(Stdio::piped()).stdout(File::create(file)?).stderr(Stdio::null()).spawn()?;
    let prompt = json!({"id": "1", "type": "prompt", "message": message}).to_string();
    child.stdin.take().unwrap().write_all(format!("{prompt}\n").as_bytes())?;
    let st = child.wait()?;
    if !st.success() {
        return Err(std::io::Error::other(format!("the fake agent exited with {st}")));
    }
    Ok(())
}

fn sh(script_and_args: &[&str]) -> Vec<String> {
    // sh -c SCRIPT NAME ARGS…: $0 = "bench", $1… = the args.
    let mut v = vec!["sh".to_string(), "-c".into(), script_and_args[0].to_string(), "bench".into()];
    v.extend(script_and_args[1..].iter().map(|s| s.to_string()));
    v
}

fn file_name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// The pi package whose RpcClient the "pi's TS client" row measures (tests/support/pi.rs
/// installs the same version for the real-pi suite).
const PI_PACKAGE: &str = "@mariozechner/pi-coding-agent";
const PI_VERSION: &str = "0.73.1";
const PI_RPC_CLIENT: &str = "node_modules/@mariozechner/pi-coding-agent/dist/modes/rpc/rpc-client.js";

/// pi's rpc-client.js: from $OMPRPC_PI_CACHE or the test suites' cache
/// ($HOME/.cache/omprpc/pi-VERSION) when there, else installed once into OUT/pi-VERSION.
fn pi_rpc_client(out: &Path) -> Result<PathBuf, String> {
    let own = out.join(format!("pi-{PI_VERSION}"));
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(d) = std::env::var_os("OMPRPC_PI_CACHE").filter(|d| !d.is_empty()) {
        dirs.push(PathBuf::from(d));
    }
    if let Some(h) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        dirs.push(Path::new(&h).join(".cache/omprpc").join(format!("pi-{PI_VERSION}")));
    }
    dirs.push(own.clone());
    if let Some(found) = dirs.iter().map(|d| d.join(PI_RPC_CLIENT)).find(|c| c.is_file()) {
        return Ok(found);
    }
    if !have("npm") {
        return Err("npm is not installed, and pi is not in a cache".into());
    }
    eprintln!("bench: installing {PI_PACKAGE}@{PI_VERSION} into {}", own.display());
    std::fs::create_dir_all(&own).map_err(|e| format!("{}: {e}", own.display()))?;
    std::fs::write(own.join("package.json"), r#"{"name":"omprpc-bench-pi","version":"0.0.0","private":true}"#)
        .map_err(|e| format!("{}: {e}", own.display()))?;
    let cmd: Vec<String> = ["npm", "install", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"]
        .iter()
        .map(|s| s.to_string())
        .chain([format!("{PI_PACKAGE}@{PI_VERSION}")])
        .collect();
    let r = run(&cmd, &[], Some(&own), Duration::from_secs(600));
    let client = own.join(PI_RPC_CLIENT);
    if !r.ok || !client.is_file() {
        return Err(format!("npm install {PI_PACKAGE}@{PI_VERSION} failed: {}", last_line(&r.stderr)));
    }
    Ok(client)
}

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", "command -v \"$1\" >/dev/null 2>&1", "sh", tool])
        .status()
        .is_ok_and(|s| s.success())
}

/// Lengths of the file's lines without their newline.
fn line_lengths(file: &Path) -> Vec<u64> {
    let mut r = BufReader::with_capacity(1 << 20, File::open(file).expect("open"));
    let mut out = Vec::new();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = r.read_until(b'\n', &mut buf).expect("read");
        if n == 0 {
            break;
        }
        out.push(buf.strip_suffix(b"\n").unwrap_or(&buf).len() as u64);
    }
    out
}

// --- formatting ---------------------------------------------------------------------------

fn secs(v: Option<f64>) -> String {
    match v {
        None => "—".into(),
        Some(s) if s < 1e-3 => format!("{:.1} µs", s * 1e6),
        Some(s) if s < 1.0 => format!("{:.1} ms", s * 1e3),
        Some(s) => format!("{s:.2} s"),
    }
}

fn rate(v: Option<f64>) -> String {
    match v {
        None => "—".into(),
        Some(r) if r >= 1e6 => format!("{:.2} M/s", r / 1e6),
        Some(r) => format!("{:.0} k/s", r / 1e3),
    }
}

fn mib_from_kib(v: Option<f64>) -> String {
    v.map(|k| format!("{:.1} MiB", k / 1024.0)).unwrap_or_else(|| "—".into())
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}×", a / b),
        _ => "—".into(),
    }
}

/// A table cell: pipes escaped, newlines flattened.
fn esc(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn verdict(ok: Option<bool>) -> &'static str {
    match ok {
        Some(true) => "yes",
        Some(false) => "**no**",
        None => "—",
    }
}

fn cmd_line(cmd: &str) -> String {
    Command::new("sh")
        .args(["-c", cmd])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}
// --- the run ------------------------------------------------------------------------------

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg").unwrap_or_default().split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

fn drive(cfg: Config) -> i32 {
    let started = Instant::now();
    let load_before = loadavg();
    let runs = cfg.runs;
    let out = cfg.out.clone();
    let agent = cfg.agent.clone();
    // Pinning for the round trips: taskset when present, else the programs pin themselves.
    let taskset = have("taskset") && run(&["taskset".into(), "-c".into(), "0".into(), "true".into()], &[], None, RUN_TIMEOUT).ok;
    let pin_method = if taskset { "taskset -c 0" } else { "sched_setaffinity(CPU 0) in the programs: taskset not found" };
    let mut b = Bench { cfg, taskset, jobs: Vec::new(), rows: BTreeMap::new(), failed: false, binding_failed: false };

    // --- inputs, produced once by the fake agent
    eprintln!("bench: producing the inputs with the fake agent");
    let burst_file = out.join("burst.jsonl");
    let burst_msg = format!("burst {BURST_EVENTS}");
    let mut huge_files = Vec::new();
    let mut inputs = vec![(burst_msg.clone(), burst_file.clone())];
    for size in HUGE_SIZES {
        let file = out.join(format!("huge-{}MiB.jsonl", size >> 20));
        inputs.push((format!("huge {size}"), file.clone()));
        huge_files.push((size, file));
    }
    for (msg, file) in &inputs {
        if let Err(e) = produce(&agent, msg, file) {
            eprintln!("bench: cannot produce {}: {e}", file.display());
            return 1;
        }
    }
    let lens = line_lengths(&burst_file);
    // ready, the prompt's response, then the events.
    let event_lines = lens.len().saturating_sub(2) as u64;
    let s_bytes: u64 = lens.iter().skip(2).sum();
    let burst_bytes = std::fs::metadata(&burst_file).map(|m| m.len()).unwrap_or(0);
    let n_events = BURST_EVENTS + BURST_EXTRA_EVENTS;
    if event_lines != n_events {
        eprintln!("bench: expected {n_events} event lines in {}, found {event_lines}", burst_file.display());
        return 1;
    }
    let frames: Vec<u64> = huge_files.iter().map(|(_, f)| line_lengths(f).into_iter().max().unwrap_or(0)).collect();

    // --- the jobs
    let (n, s) = (BURST_EVENTS.to_string(), s_bytes.to_string());
    let args = |v: &[&str]| -> Vec<String> { v.iter().map(|s| s.to_string()).collect() };
    b.floors("burst", &burst_file, &burst_msg);
    b.c_job("burst.turn_drain", "prompt_and_wait, a 2nd thread drains next_events (C API)", &args(&["turn", &agent, &n, "drain", &s]));
    b.c_job("burst.turn_nodrain", "prompt_and_wait, nobody drains (C API)", &args(&["turn", &agent, &n, "nodrain", &s]));
    b.c_job("burst.batch", "next_events batches, no turn (C API)", &args(&["events", &agent, &n, "batch", &s]));
    b.c_job("burst.lines", "next_events_lines batches, split at newlines, no turn (C API)", &args(&["events", &agent, &n, "lines", &s]));
    b.c_job("burst.single", "next_event one by one, no turn (C API)", &args(&["events", &agent, &n, "single", &s]));
    for name in ["Python", "Go", "Node"] {
        b.binding(name);
    }
    b.pi_ts_client();
    let me = std::env::current_exe().unwrap().display().to_string();
    let count = RTT_COUNT.to_string();
    let raw = b.pinned(vec![me], args(&["rtt", &agent, &count]), true);
    b.add("rtt.raw", "floor: raw write + read line + serde_json parse (Rust)", raw);
    let ours = b.pinned(vec![b.cfg.bench.clone()], args(&["rtt", &agent, &count]), false);
    b.add("rtt.omprpc", "omprpc_client_get_state (C API)", ours);
    for (size, file) in &huge_files {
        let (p, mib, sz) = (format!("huge{}", size >> 20), size >> 20, size.to_string());
        b.floors(&p, file, &format!("huge {size}"));
        b.c_job(&format!("{p}.turn"), &format!("prompt_and_wait, {mib} MiB frame, drained (C API)"), &args(&["huge", &agent, &sz, "turn"]));
        b.c_job(&format!("{p}.events"), &format!("next_event, {mib} MiB frame (C API)"), &args(&["huge", &agent, &sz, "events"]));
    }
    let (nc, cb) = (CLIENTS.to_string(), CLIENT_BURST.to_string());
    b.c_job("clients", &format!("{CLIENTS} clients (C API)"), &args(&["clients", &agent, &nc, &cb]));

    b.run_all();
    for (_, file) in &inputs {
        let _ = std::fs::remove_file(file);
    }
    let load_after = loadavg();

    // --- report
    let mut md = String::new();
    let commit = cmd_line("git rev-parse --short HEAD 2>/dev/null");
    let dirty = !cmd_line("git status --porcelain --untracked-files=no 2>/dev/null").is_empty();
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("model name").map(|m| m.trim_start_matches([' ', '\t', ':']).to_string()))
        .unwrap_or_default();
    let ncpu = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim().to_string();
    let date = cmd_line("date -u '+%Y-%m-%d %H:%M:%SZ'");
    let _ = writeln!(md, "# omprpc bench\n");
    let _ = writeln!(
        md,
        "{date} · commit {}{} · {ncpu} CPUs ({cpu}) · Linux {kernel} · load average {load_before} before, \
         {load_after} after.\n\nEvery figure is the median of {runs} runs, each in its own process; the runs of \
         every workload and floor are interleaved round by round. Peak RSS = the measuring process's VmHWM (the \
         agent's memory is not included).\n",
        if commit.is_empty() { "unknown" } else { &commit },
        if dirty { " (+ uncommitted changes)" } else { "" },
    );

    // burst
    let cat_t = b.row("burst.cat").med("secs");
    let serde_t = b.row("burst.serde").med("secs");
    let _ = writeln!(
        md,
        "## Burst: {BURST_EVENTS} `message_update` events of 640 B (+{BURST_EXTRA_EVENTS} turn frames, {:.1} MB)\n",
        burst_bytes as f64 / 1e6
    );
    let _ = writeln!(md, "| workload | time | events/s | peak RSS | RSS kept | × cat | × serde | target (ratio) | met |");
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|");
    let label = |r: &Row| esc(&match &r.note {
        Some(n) => format!("{} — {n}", r.label),
        None => r.label.clone(),
    });
    for key in ["burst.cat", "burst.serde", "burst.producer"] {
        let row = b.row(key);
        let t = row.med("secs");
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | — | {} | {} | | |",
            label(row),
            secs(t),
            rate(t.map(|t| n_events as f64 / t)),
            mib_from_kib(row.med("hwm_kib")),
            ratio(t, cat_t),
            ratio(t, serde_t)
        );
    }
    for key in ["burst.turn_drain", "burst.turn_nodrain", "burst.batch", "burst.lines", "burst.single"] {
        let row = b.row(key);
        let (t, r, rss) = (row.med("secs"), row.med("events_per_sec"), row.med("hwm_kib"));
        let (target, ok) = if key.starts_with("burst.turn") {
            ("≥ 1 M/s, ≤ 100 MiB", r.zip(rss).map(|(r, m)| r >= 1e6 && m <= 100.0 * 1024.0))
        } else {
            ("≥ 1 M/s", r.map(|r| r >= 1e6))
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {target} ({}) | {} |",
            label(row),
            secs(t),
            rate(r),
            mib_from_kib(rss),
            mib_from_kib(row.med("rss_end_kib")),
            ratio(t, cat_t),
            ratio(t, serde_t),
            ratio(r, Some(1e6)),
            verdict(ok)
        );
    }
    // pi's TS client, measured in the same rounds: each binding's rate over its rate too.
    let pi_rate = b.row("binding.pi_ts").med("events_per_sec");
    for (key, target) in [("binding.python", 170e3), ("binding.go", 199e3), ("binding.node", 199e3), ("binding.pi_ts", 0.0)] {
        let row = b.row(key);
        let r = row.med("events_per_sec");
        let t = r.map(|r| n_events as f64 / r);
        let rss = row.med("rss_mib").map(|m| format!("{m:.1} MiB")).unwrap_or_else(|| "—".into());
        let (goal, met) = if target > 0.0 {
            let vs_pi = match (r, pi_rate) {
                (Some(_), Some(_)) => format!("; {} pi TS", ratio(r, pi_rate)),
                _ => String::new(),
            };
            (format!("≥ {:.0} k/s ({}){vs_pi}", target / 1e3, ratio(r, Some(target))), verdict(r.map(|r| r >= target)).to_string())
        } else {
            ("the reference".to_string(), String::new())
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {rss} | — | {} | {} | {goal} | {met} |",
            label(row),
            secs(t),
            rate(r),
            ratio(t, cat_t),
            ratio(t, serde_t),
        );
    }
    let mut delivered = true;
    for (key, fig) in [("burst.turn_drain", "drained"), ("burst.batch", "received"), ("burst.lines", "received"), ("burst.single", "received")] {
        for f in &b.row(key).runs {
            if f.get(fig).copied() != Some(n_events as f64) {
                delivered = false;
                eprintln!("bench: {key}: {fig}={:?}, expected {n_events}", f.get(fig));
            }
        }
    }
    let nodrain = b.row("burst.turn_nodrain");
    let _ = writeln!(
        md,
        "\nThe drained runs received all {n_events} events{}. Nobody draining, the event queue (default \
         capacity 65,536) overflowed in {} of {} runs. Batches of at most {} events. Reference: omp_rpc (Python) \
         12 s / 410 MiB; pi's TS client 0.50 s / 157 MiB (the row above measures it in this run: \
         the bindings' \"pi TS\" ratio is their rate over its); `cat|cat` 0.05 s. The cat and producer floors are timed \
         from outside (they include starting `sh` and the programs); the other figures time the prompt up to the \
         last event (or the turn) only. \"RSS kept\": the process's RSS after the workload, the client \
         still open and every string it returned freed.\n",
        if delivered { ", counted exactly, in every run" } else { " **NOT in every run** (see results.json)" },
        nodrain.runs.iter().filter(|f| f.get("overflow") == Some(&1.0)).count(),
        nodrain.runs.len(),
        std::env::var("OMPRPC_BENCH_BATCH").unwrap_or_else(|_| "4096".into()),
    );

    // get_state
    let _ = writeln!(md, "## {RTT_COUNT} sequential `get_state` round trips, pinned to one CPU ({pin_method})\n");
    let _ = writeln!(md, "| workload | p50 | p99 | p50 × raw | p99 × raw | target | met |");
    let _ = writeln!(md, "|---|---|---|---|---|---|---|");
    let us = |v: Option<f64>| v.map(|v| format!("{v:.1} µs")).unwrap_or_else(|| "—".into());
    let (raw, ours) = (b.row("rtt.raw"), b.row("rtt.omprpc"));
    let (rp50, rp99, op50, op99) = (raw.med("p50_us"), raw.med("p99_us"), ours.med("p50_us"), ours.med("p99_us"));
    let _ = writeln!(md, "| {} | {} | {} | 1.00× | 1.00× | | |", label(raw), us(rp50), us(rp99));
    let ok = match (op50, op99, rp50, rp99) {
        (Some(a), Some(c), Some(e), Some(g)) => Some(a <= 1.3 * e && c <= 2.0 * g),
        _ => None,
    };
    let _ = writeln!(
        md,
        "| {} | {} | {} | {} | {} | p50 ≤ 1.3×, p99 ≤ 2× raw | {} |",
        label(ours),
        us(op50),
        us(op99),
        ratio(op50, rp50),
        ratio(op99, rp99),
        verdict(ok)
    );
    let _ = writeln!(
        md,
        "\nReference: omp_rpc 222 / 374 µs; TS 33 / 1140 µs; raw 24 / 43 µs. Each run starts with 100 \
         warm-up round trips; raw and client runs alternate.\n"
    );

    // huge
    let _ = writeln!(md, "## One huge `tool_execution_end` frame (prompt \"huge N\", protocol v1: one line)\n");
    let _ = writeln!(
        md,
        "| workload | 16 MiB | 64 MiB | 64/16 | × cat (64) | × serde (64) | peak RSS (64) | RSS / frame | RSS kept (64) | target | met |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|---|");
    let (cat64, serde64) = (b.row("huge64.cat").med("secs"), b.row("huge64.serde").med("secs"));
    for what in ["cat", "serde", "producer", "turn", "events"] {
        let (ra, rb) = (b.row(&format!("huge16.{what}")), b.row(&format!("huge64.{what}")));
        let (ta, tb) = (ra.med("secs"), rb.med("secs"));
        let rss = rb.med("hwm_kib");
        let per_frame = rss.map(|k| k * 1024.0 / frames[1] as f64);
        let workload = what == "turn" || what == "events";
        let ok = match (tb, per_frame, ta) {
            (Some(t), Some(p), Some(t16)) if workload => Some(t <= 0.3 && p <= 3.0 && t / t16 <= 5.0),
            _ => None,
        };
        let name = match (&ra.note, &rb.note) {
            (Some(n), _) | (_, Some(n)) => format!("{} — {n}", rb.label),
            _ => rb.label.clone(),
        };
        let name = name.replace("64 MiB frame, ", "").replace(", 64 MiB frame", "").replace("huge-64MiB.jsonl", "FILE");
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            esc(&name),
            secs(ta),
            secs(tb),
            ratio(tb, ta),
            ratio(tb, cat64),
            ratio(tb, serde64),
            mib_from_kib(rss),
            per_frame.map(|p| format!("{p:.2}×")).unwrap_or_else(|| "—".into()),
            mib_from_kib(rb.med("rss_end_kib")),
            if workload { "≤ 0.3 s, ≤ 3× frame, linear" } else { "" },
            if workload { verdict(ok) } else { "" }
        );
    }
    let _ = writeln!(
        md,
        "\nFrames of {} and {} bytes. \"Linear\": the 64 MiB time is at most 5× the 16 MiB time. Reference at \
         64 MiB: omp_rpc 0.35 s / 243 MiB; TS 27 s / 910 MiB. Every figure over the agent includes the agent \
         generating the frame (the producer floor).\n",
        frames[0], frames[1]
    );

    // clients
    let c = b.row("clients");
    let _ = writeln!(md, "## {CLIENTS} clients open at once, idle, then one burst of {CLIENT_BURST} events each in turn\n");
    if let Some(n) = &c.note {
        let _ = writeln!(md, "{n}\n");
    }
    let _ = writeln!(md, "| figure | median |");
    let _ = writeln!(md, "|---|---|");
    let num = |k: &str, dec: usize| c.med(k).map(|v| format!("{v:.dec$}")).unwrap_or_else(|| "—".into());
    for (what, value) in [
        ("threads per client".to_string(), num("threads_per_client", 2)),
        ("file descriptors per client".into(), num("fds_per_client", 2)),
        ("RSS per idle client (host process)".into(), format!("{} KiB", num("idle_rss_kib_per_client", 1))),
        ("client start (spawn + handshake), per client".into(), format!("{} ms", num("start_ms_per_client", 2))),
        (format!("CPU used by {CLIENTS} idle clients in 1 s"), format!("{} ms", num("idle_cpu_ms", 1))),
        ("bursts, one client at a time (prompt_and_wait, then drain)".into(), rate(c.med("events_per_sec"))),
        ("RSS retained per client after its burst".into(), format!("{} KiB", num("retained_kib_per_client", 1))),
        ("peak RSS of the host process".into(), mib_from_kib(c.med("hwm_kib"))),
        (format!("closing all {CLIENTS}"), format!("{} ms", num("close_ms", 1))),
        ("threads left after freeing every client (1 = main)".into(), num("threads_after_free", 0)),
    ] {
        let _ = writeln!(md, "| {what} | {value} |");
    }
    let _ = writeln!(md, "\nTotal: {:.0} s.", started.elapsed().as_secs_f64());

    print!("\n{md}");
    let _ = std::fs::write(out.join("results.md"), &md);
    let rows: BTreeMap<&String, Value> = b.rows.iter().map(|(k, r)| (k, r.to_json())).collect();
    let j = json!({
        "date": date, "commit": commit, "dirty": dirty, "cpus": ncpu, "cpu": cpu, "kernel": kernel,
        "loadavg_before": load_before, "loadavg_after": load_after, "runs": runs, "pinning": pin_method,
        "seconds": started.elapsed().as_secs_f64(),
        "burst": {"events": n_events, "bytes": burst_bytes, "event_frame_bytes": s_bytes, "delivered_exactly": delivered},
        "huge_frame_bytes": {"16MiB": frames[0], "64MiB": frames[1]},
        "rows": rows,
    });
    let _ = std::fs::write(out.join("results.json"), serde_json::to_string_pretty(&j).unwrap() + "\n");
    eprintln!("bench: wrote {} and {}", out.join("results.md").display(), out.join("results.json").display());
    if b.binding_failed {
        eprintln!("bench: warning: a binding's benchmark failed (see its row; bench/README.md has the contract)");
    }
    if b.failed || !delivered {
        eprintln!("bench: some workloads failed (see above)");
        1
    } else {
        0
    }
}
