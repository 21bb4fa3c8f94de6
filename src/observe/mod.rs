//! Observability: a per-client log channel and per-client counters.
//!
//! Logs are JSON records `{"level","target","message","t_ms","client",…fields}`, off by
//! default. A client collects them only when started with `"log_level"`; they wait in their
//! own bounded queue (never mixed with agent events, never counted against the event queue)
//! until the host polls them, so no foreign callback ever runs on a library thread. Overflow
//! drops the oldest and is reported by a record saying how many were dropped. `OMPRPC_LOG`
//! (read once per process) also writes every record at or above its level to stderr, one line
//! each, whether or not the client collects them — and records from a start that fails before
//! a client exists go there too.
//!
//! What is logged never includes a request's params, a prompt, a system prompt or an env
//! value: call sites log types, ids, sizes, latencies and the redacted argv; as a second line
//! of defence every record is scrubbed of the client's system prompts and secret-looking env
//! values before it is queued or printed.
//!
//! Counters are relaxed atomics bumped on the reader's and writers' paths (a few adds per
//! frame), read together as JSON by `Counters::to_json`.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Condvar, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use once_cell::sync::Lazy;
use serde_json::{json, Map, Value};

use crate::error::{Error, Result, Status};
use crate::wait::wait_until;
use crate::wait::lock;

/// Records a client holds before the oldest are dropped (unless `log_queue_capacity` says).
pub const DEFAULT_LOG_CAPACITY: usize = 1024;

/// Log levels, most severe first (a level enables itself and everything above it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Error = 1,
    Warn = 2,
    Info = 3,
    Debug = 4,
    Trace = 5,
}

impl Level {
    pub fn name(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warn => "warn",
            Level::Info => "info",
            Level::Debug => "debug",
            Level::Trace => "trace",
        }
    }

    /// `"off"` (and `""`) is `None`; an unknown name is an error.
    pub fn parse(s: &str) -> std::result::Result<Option<Level>, String> {
        Ok(Some(match s.trim().to_ascii_lowercase().as_str() {
            "" | "off" | "none" => return Ok(None),
            "error" => Level::Error,
            "warn" | "warning" => Level::Warn,
            "info" => Level::Info,
            "debug" => Level::Debug,
            "trace" => Level::Trace,
            other => return Err(format!("unknown log level {other:?} (use off, error, warn, info, debug or trace)")),
        }))
    }
}

/// `OMPRPC_LOG`, read once: the level of records written to stderr (an unknown value is
/// reported on stderr once and then ignored, as the variable exists only for debugging).
static STDERR_LEVEL: Lazy<Option<Level>> = Lazy::new(|| {
    let raw = std::env::var("OMPRPC_LOG").ok()?;
    match Level::parse(&raw) {
        Ok(l) => l,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "omprpc: ignoring OMPRPC_LOG: {e}");
            None
        }
    }
});

static NEXT_CLIENT: AtomicU64 = AtomicU64::new(1);

pub fn stderr_level() -> Option<Level> {
    *STDERR_LEVEL
}

fn unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// Shorter secrets are not scrubbed: replacing every "1" or "on" would garble the records.
const MIN_SCRUB_LEN: usize = 6;
pub const SCRUBBED: &str = "<redacted>";

/// The bounded queue a client's records wait in.
struct Queue {
    items: VecDeque<String>,
    dropped: u64,
    /// Set once the client is torn down: pollers drain, then get CLOSED.
    closed: bool,
}

/// One client's logger. Cheap to ask `enabled` (one compare); records are built only then.
pub struct Logger {
    /// The most verbose level anything wants (the client's queue or stderr), as u8; 0 = off.
    max: u8,
    collect: Option<Level>,
    to_stderr: Option<Level>,
    client: u64,
    capacity: usize,
    /// (secret, the same as escaped inside a JSON string), longest first.
    secrets: Vec<(String, String)>,
    queue: Mutex<Queue>,
    cond: Condvar,
}

impl Logger {
    /// `collect`: the client's `log_level`; `secrets`: strings never to appear in a record.
    pub fn new(collect: Option<Level>, capacity: usize, secrets: Vec<String>) -> Logger {
        Self::with_stderr(collect, stderr_level(), capacity, secrets)
    }

    fn with_stderr(collect: Option<Level>, to_stderr: Option<Level>, capacity: usize, mut secrets: Vec<String>) -> Logger {
        secrets.retain(|s| s.len() >= MIN_SCRUB_LEN);
        // Longest first, so a secret containing another is replaced whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        let secrets = secrets
            .into_iter()
            .map(|s| {
                let quoted = serde_json::to_string(&s).unwrap_or_default();
                let escaped = quoted[1..quoted.len() - 1].to_string();
                (s, escaped)
            })
            .collect();
        let max = collect.max(to_stderr).map_or(0, |l| l as u8);
        Logger {
            max,
            collect,
            to_stderr,
            client: NEXT_CLIENT.fetch_add(1, Relaxed),
            capacity: capacity.max(1),
            secrets,
            queue: Mutex::new(Queue { items: VecDeque::new(), dropped: 0, closed: false }),
            cond: Condvar::new(),
        }
    }

    /// For code that runs before a client's options are known (a start that fails early):
    /// stderr only, and only when `OMPRPC_LOG` asks.
    pub fn stderr_only() -> Logger {
        Self::with_stderr(None, stderr_level(), 1, Vec::new())
    }

    pub fn id(&self) -> u64 {
        self.client
    }

    #[inline]
    pub fn enabled(&self, level: Level) -> bool {
        level as u8 <= self.max
    }

    /// Logs a record. `fields` must be a JSON object (or null); its members join the record.
    pub fn log(&self, level: Level, target: &str, message: &str, fields: Value) {
        if !self.enabled(level) {
            return;
        }
        let mut rec = Map::new();
        rec.insert("level".into(), json!(level.name()));
        rec.insert("target".into(), json!(format!("omprpc::{target}")));
        rec.insert("message".into(), json!(message));
        rec.insert("t_ms".into(), json!(unix_ms()));
        rec.insert("client".into(), json!(self.client));
        if let Value::Object(extra) = fields {
            for (k, v) in extra {
                rec.entry(k).or_insert(v);
            }
        }
        let mut line = Value::Object(rec).to_string();
        for (raw, escaped) in &self.secrets {
            // Scrub the JSON text both as the secret is escaped inside a JSON string and raw.
            if line.contains(escaped.as_str()) {
                line = line.replace(escaped.as_str(), SCRUBBED);
            }
            if line.contains(raw.as_str()) {
                line = line.replace(raw.as_str(), SCRUBBED);
            }
        }
        if self.to_stderr.is_some_and(|l| level <= l) {
            // One write per record, so lines from several threads do not interleave.
            let _ = std::io::stderr().write_all(format!("omprpc: {line}\n").as_bytes());
        }
        if self.collect.is_some_and(|l| level <= l) {
            let mut q = lock(&self.queue);
            if q.closed {
                return;
            }
            q.items.push_back(line);
            while q.items.len() > self.capacity {
                q.items.pop_front();
                q.dropped += 1;
            }
            drop(q);
            self.cond.notify_all();
        }
    }

    /// Whether records are collected for polling (`log_level` was given).
    pub fn collecting(&self) -> bool {
        self.collect.is_some()
    }

    /// After this, pollers get what is queued, then CLOSED.
    pub fn close(&self) {
        lock(&self.queue).closed = true;
        self.cond.notify_all();
    }

    /// Takes up to `max` records (JSON text each), waiting until `deadline` for the first.
    /// Dropped records are reported first, by a record of their own.
    pub fn pop(&self, max: usize, deadline: Option<Instant>) -> Result<Vec<String>> {
        if self.collect.is_none() {
            return Err(Error::invalid("logs are off for this client: start it with the option \"log_level\""));
        }
        let max = max.max(1);
        let mut q = lock(&self.queue);
        loop {
            if q.dropped > 0 || !q.items.is_empty() {
                let mut out = Vec::with_capacity(max.min(q.items.len() + 1));
                if q.dropped > 0 {
                    out.push(
                        json!({"level": "warn", "target": "omprpc::log", "t_ms": unix_ms(), "client": self.client,
                               "message": format!("{} log records were dropped: the log queue was full", q.dropped),
                               "dropped": q.dropped})
                        .to_string(),
                    );
                    q.dropped = 0;
                }
                while out.len() < max {
                    match q.items.pop_front() {
                        Some(r) => out.push(r),
                        None => break,
                    }
                }
                return Ok(out);
            }
            if q.closed {
                return Err(Error::new(Status::Closed, "the client is closed and every log record was taken"));
            }
            q = wait_until(&self.cond, q, deadline)
                .ok_or_else(|| Error::new(Status::Timeout, "no log record arrived before the timeout"))?;
        }
    }
}

/// Per-client counters. Relaxed atomics: each is exact on its own; a snapshot of several is
/// not one instant (good enough for monitoring, and free of locks on the hot path).
/// Aligned to its own cache lines: the reader thread bumps them on every frame, and they must
/// not share a line with state the polling threads touch (false sharing).
#[repr(align(128))]
pub struct Counters {
    born: Instant,
    pub frames_in: AtomicU64,
    pub bytes_in: AtomicU64,
    pub frames_out: AtomicU64,
    pub bytes_out: AtomicU64,
    pub requests_sent: AtomicU64,
    pub responses: AtomicU64,
    pub protocol_errors: AtomicU64,
    pub ui_requests: AtomicU64,
    /// `get_state` probes sent to settle whether the agent is idle (client::lifecycle).
    pub activity_probes: AtomicU64,
    /// When the last prompt went out (µs since start, plus one), until its first event.
    prompt_sent_us: AtomicU64,
    /// Microseconds from the last prompt's send to its first session event, plus one.
    prompt_first_event_us: AtomicU64,
}

impl Default for Counters {
    fn default() -> Self {
        Counters::new()
    }
}

impl Counters {
    pub fn new() -> Counters {
        Counters {
            born: Instant::now(),
            frames_in: AtomicU64::new(0),
            bytes_in: AtomicU64::new(0),
            frames_out: AtomicU64::new(0),
            bytes_out: AtomicU64::new(0),
            requests_sent: AtomicU64::new(0),
            responses: AtomicU64::new(0),
            protocol_errors: AtomicU64::new(0),
            ui_requests: AtomicU64::new(0),
            activity_probes: AtomicU64::new(0),
            prompt_sent_us: AtomicU64::new(0),
            prompt_first_event_us: AtomicU64::new(0),
        }
    }

    fn now_us(&self) -> u64 {
        self.born.elapsed().as_micros() as u64 + 1
    }

    #[inline]
    pub fn frame_in(&self, bytes: usize) {
        self.frames_in.fetch_add(1, Relaxed);
        self.bytes_in.fetch_add(bytes as u64, Relaxed);
    }

    #[inline]
    pub fn frame_out(&self, bytes: usize) {
        self.frames_out.fetch_add(1, Relaxed);
        self.bytes_out.fetch_add(bytes as u64, Relaxed);
    }

    /// A session event arrived: the first after a prompt sets the prompt latency.
    #[inline]
    pub fn session_event(&self) {
        if self.prompt_sent_us.load(Relaxed) != 0 {
            let sent = self.prompt_sent_us.swap(0, Relaxed);
            if sent != 0 {
                self.prompt_first_event_us.store(self.now_us().saturating_sub(sent) + 1, Relaxed);
            }
        }
    }

    pub fn prompt_sent(&self) {
        self.prompt_sent_us.store(self.now_us(), Relaxed);
    }

    fn ms(us_plus_one: u64) -> Value {
        if us_plus_one == 0 {
            Value::Null
        } else {
            json!((us_plus_one - 1) as f64 / 1000.0)
        }
    }

    /// The counters as a JSON object; the caller adds what lives elsewhere (queue figures,
    /// pending requests). `first_event`: when the first event was queued.
    pub fn to_map(&self, first_event: Option<Instant>) -> Map<String, Value> {
        let mut m = Map::new();
        let n = |a: &AtomicU64| json!(a.load(Relaxed));
        m.insert("frames_in".into(), n(&self.frames_in));
        m.insert("bytes_in".into(), n(&self.bytes_in));
        m.insert("frames_out".into(), n(&self.frames_out));
        m.insert("bytes_out".into(), n(&self.bytes_out));
        m.insert("requests_sent".into(), n(&self.requests_sent));
        m.insert("responses".into(), n(&self.responses));
        m.insert("protocol_errors".into(), n(&self.protocol_errors));
        m.insert("ui_requests".into(), n(&self.ui_requests));
        m.insert("activity_probes".into(), n(&self.activity_probes));
        let first = first_event.map_or(0, |t| t.saturating_duration_since(self.born).as_micros() as u64 + 1);
        m.insert("time_to_first_event_ms".into(), Self::ms(first));
        m.insert("last_prompt_first_event_ms".into(), Self::ms(self.prompt_first_event_us.load(Relaxed)));
        // Whole milliseconds (an integer in every binding's type), rounded up: never less than
        // the fractional times above, which happened before now.
        m.insert("uptime_ms".into(), json!((self.born.elapsed().as_micros() as u64).div_ceil(1000)));
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uptime_is_never_less_than_the_time_to_the_first_event() {
        use std::time::Duration;
        // Started 1.5 ms ago, its first event queued at 1.4 ms: that time keeps the fraction,
        // the uptime is whole milliseconds (rounded down it would read 1).
        let mut c = Counters::new();
        c.born = Instant::now() - Duration::from_micros(1500);
        let m = c.to_map(Some(c.born + Duration::from_micros(1400)));
        let (uptime, to_first) = (m["uptime_ms"].as_u64().unwrap(), m["time_to_first_event_ms"].as_f64().unwrap());
        assert!(uptime as f64 >= to_first, "uptime {uptime} < time to the first event {to_first}");
    }

    #[test]
    fn levels_parse_and_order() {
        assert_eq!(Level::parse("DEBUG").unwrap(), Some(Level::Debug));
        assert_eq!(Level::parse("off").unwrap(), None);
        assert!(Level::parse("loud").unwrap_err().contains("loud"));
        assert!(Level::Error < Level::Trace);
    }

    #[test]
    fn records_are_filtered_bounded_and_scrubbed() {
        let l = Logger::with_stderr(Some(Level::Info), None, 2, vec!["hunter2-secret".into(), "x".into()]);
        assert!(!l.enabled(Level::Debug));
        l.log(Level::Debug, "t", "hidden", Value::Null);
        for i in 0..4 {
            l.log(Level::Info, "t", &format!("n{i} hunter2-secret \"hunter2-secret\""), json!({"i": i}));
        }
        let got = l.pop(10, Some(Instant::now())).unwrap();
        assert_eq!(got.len(), 3);
        let first: Value = serde_json::from_str(&got[0]).unwrap();
        assert_eq!(first["dropped"], 2);
        let last: Value = serde_json::from_str(&got[2]).unwrap();
        assert_eq!(last["i"], 3);
        assert_eq!(last["target"], "omprpc::t");
        assert!(!got.concat().contains("hunter2"), "{got:?}");
        assert_eq!(l.pop(1, Some(Instant::now())).unwrap_err().status, Status::Timeout);
        l.log(Level::Error, "t", "last", Value::Null);
        l.close();
        assert_eq!(l.pop(5, None).unwrap().len(), 1);
        assert_eq!(l.pop(5, None).unwrap_err().status, Status::Closed);
    }

    #[test]
    fn polling_a_client_without_logs_is_refused() {
        let l = Logger::with_stderr(None, Some(Level::Trace), 2, Vec::new());
        assert!(l.enabled(Level::Trace));
        assert_eq!(l.pop(1, Some(Instant::now())).unwrap_err().status, Status::InvalidArgument);
    }
}
