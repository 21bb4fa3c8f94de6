//! `omprpc-fake-llm`: a scriptable fake LLM HTTP server for running the real pi and omp
//! offline (see the project's notes on the real agents). std + serde_json only.
//!
//! # Command line
//!
//! `omprpc-fake-llm [--bind IP] [--port N] [--script FILE | --script-json JSON] [--log FILE] [--exit-on-eof]`
//!
//! * Binds `IP:N` (default `127.0.0.1`; another address lets an agent in another network
//!   namespace reach it; port default 0: the OS picks). Ports 11434, 8080 and 1234 are refused
//!   (omp probes them at start-up for local model servers). The first stdout line is
//!   `LISTENING <port>`; nothing else is written to stdout.
//! * `--log FILE`: every request body is appended to FILE as one line of compact JSON (a body
//!   that is not JSON is logged as a JSON string), flushed before the reply starts. Requests
//!   other than the two LLM endpoints are not logged.
//! * `--exit-on-eof`: exit when stdin reaches EOF (a parent that holds the pipe can die
//!   without leaving the server behind).
//!
//! # Endpoints
//!
//! * `POST /v1/chat/completions` (and any path ending in `/chat/completions`): OpenAI Chat
//!   Completions. `stream:true` → SSE `data: {chunk}` lines and `data: [DONE]`; otherwise one
//!   `chat.completion` JSON object.
//! * `POST /v1/messages` (any path ending in `/messages`): Anthropic Messages, streaming SSE
//!   (`message_start` … `message_stop`) or one message object.
//! * `GET /v1/models`: `{"object":"list","data":[{"id":"fake-model",…}]}`.
//! * Anything else: 404. Every response carries `Connection: close`; one request per
//!   connection.
//!
//! # Script
//!
//! A JSON array of rules, or an object `{"rules":[…],"default":REPLY,"usage":{…}}`:
//!
//! ```json
//! [{"match":"run bash","replies":[
//!     {"tool_call":{"name":"bash","arguments":{"command":"echo hi"}}},
//!     {"text":"done: {{last_tool_result}}"}]}]
//! ```
//!
//! * A request is matched on its LAST user message text (text parts joined; in the Anthropic
//!   shape a user message holding only `tool_result` blocks does not count). The first rule
//!   whose `match` is a substring of it wins (`match` absent or "" matches everything).
//! * Reply index = the number of assistant messages after that user message, so the first
//!   LLM call of a prompt gets `replies[0]`, the call after the tool results `replies[1]`, …
//!   (stateless: no per-connection memory). Past the end of `replies`, and when no rule
//!   matches, the default reply is used (`{"text":"pong"}` unless the script sets `default`).
//! * A reply (every key optional):
//!   - `"text"`: streamed as several deltas (split after each space);
//!   - `"reasoning"`: streamed first, as `reasoning_content` deltas (Anthropic: thinking);
//!   - `"tool_call": {"name","arguments"(object or JSON string),"id"?}` or
//!     `"tool_calls": [ … ]`: streamed as `tool_calls` deltas (name first, then the
//!     arguments in two pieces), `finish_reason:"tool_calls"`;
//!   - `"delay_ms"`: wait before the first chunk (headers are already sent);
//!   - `"chunk_delay_ms"`: wait between chunks;
//!   - `"hang": true`: stream the first text delta (or "…"), then send nothing more until the
//!     client disconnects (capped by `"hang_max_ms"`, default 600000);
//!   - `"usage": {"prompt_tokens","completion_tokens","cached_tokens"?}`: overrides the
//!     script-level `usage`, which overrides the default 12 / 5;
//!   - `"finish_reason"`: overrides "stop" / "tool_calls";
//!   - `"error": {"status":500,"message":"…"}`: an HTTP error instead of a stream, every time;
//!   - `"fail": KIND` or `{"kind":KIND,"times":N,"retry_after_s":S,"retry_after_ms":M}`: the first N requests
//!     (default 1) answered by this reply (the same rule and reply index) fail as a real
//!     provider fails, in the API's own error shape; later ones get the reply. KIND:
//!     `http_500` (a server error), `http_429` (a rate limit with `retry-after: S`, default 1;
//!     with M, OpenAI's `retry-after-ms: M` header too, on a 500 as well),
//!     `context_length` (HTTP 400: the prompt exceeds the context window, worded as OpenAI
//!     and Anthropic word it, so the agents recognise an overflow). The agents retry the
//!     first two themselves (pi: `auto_retry_start`) and compact on the third.
//! * Substitutions in `text`, `reasoning` and every string inside tool-call arguments:
//!   `{{last_tool_result}}` (the text of the last tool result message), `{{last_user}}`
//!   (the matched user text), `{{call_index}}` (the reply index), `{{model}}`.
//!
//! The usage chunk is the last chunk before `[DONE]`: `{"choices":[],"usage":{…}}`.

mod http;
mod script;
mod stream;

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

pub struct Server {
    pub script: script::Script,
    log: Option<Mutex<File>>,
    pub next_id: AtomicU64,
    /// Per failing reply (by its place in the script): the calls it answered, and whether the
    /// last one failed.
    failed: Mutex<HashMap<(usize, usize), (u32, bool)>>,
}

impl Server {
    fn log_body(&self, body: &[u8]) {
        let Some(log) = &self.log else { return };
        let line = match serde_json::from_slice::<Value>(body) {
            Ok(v) => v.to_string(),
            Err(_) => Value::String(String::from_utf8_lossy(body).into_owned()).to_string(),
        };
        let mut f = log.lock().unwrap();
        let _ = writeln!(f, "{line}");
        let _ = f.flush();
    }

    pub fn fresh_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Whether this request to the reply at `place` fails: the first `times` calls do. An
    /// SDK's own retry of a call (`sdk_retry` > 0) is the same call: it fails as that call
    /// did, so the agent sees the failure whatever its SDK's retry budget (pi 0.73.1's and
    /// omp's SDKs retry 429 and 5xx twice by themselves; pi 1.x turns that off).
    fn fails_now(&self, place: (usize, usize), times: u32, sdk_retry: u32) -> bool {
        let mut failed = self.failed.lock().unwrap_or_else(|p| p.into_inner());
        let (calls, last_failed) = failed.entry(place).or_insert((0, false));
        if sdk_retry > 0 && *calls > 0 {
            return *last_failed;
        }
        *calls += 1;
        *last_failed = *calls <= times;
        *last_failed
    }
}

fn usage_exit(msg: &str) -> ! {
    eprintln!("omprpc-fake-llm: {msg}");
    eprintln!("usage: omprpc-fake-llm [--bind IP] [--port N] [--script FILE | --script-json JSON] [--log FILE] [--exit-on-eof]");
    std::process::exit(2);
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut port: u16 = 0;
    let mut bind = std::net::IpAddr::from([127, 0, 0, 1]);
    let mut script_text: Option<String> = None;
    let mut log_path: Option<String> = None;
    let mut exit_on_eof = false;
    while let Some(a) = args.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        let mut value = || inline.clone().or_else(|| args.next()).unwrap_or_else(|| usage_exit(&format!("{flag} needs a value")));
        match flag.as_str() {
            "--bind" => bind = value().parse().unwrap_or_else(|_| usage_exit("--bind needs an IP address")),
            "--port" => port = value().parse().unwrap_or_else(|_| usage_exit("--port needs a number")),
            "--script" => {
                let path = value();
                script_text = Some(std::fs::read_to_string(&path).unwrap_or_else(|e| usage_exit(&format!("cannot read {path}: {e}"))));
            }
            "--script-json" => script_text = Some(value()),
            "--log" => log_path = Some(value()),
            "--exit-on-eof" => exit_on_eof = true,
            "-h" | "--help" => usage_exit("help"),
            other => usage_exit(&format!("unknown argument {other}")),
        }
    }
    if matches!(port, 11434 | 8080 | 1234) {
        usage_exit(&format!("port {port} is reserved (local model servers that agents probe)"));
    }
    let script = match script_text {
        Some(t) => script::Script::parse(&t).unwrap_or_else(|e| usage_exit(&format!("bad script: {e}"))),
        None => script::Script::default(),
    };
    let log = log_path.map(|p| {
        Mutex::new(OpenOptions::new().create(true).append(true).open(&p).unwrap_or_else(|e| usage_exit(&format!("cannot open log {p}: {e}"))))
    });
    let listener = TcpListener::bind((bind, port)).unwrap_or_else(|e| usage_exit(&format!("cannot bind {bind} port {port}: {e}")));
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(port);
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "LISTENING {port}");
        let _ = out.flush();
    }
    if exit_on_eof {
        std::thread::spawn(|| {
            let mut buf = [0u8; 256];
            let mut stdin = std::io::stdin().lock();
            loop {
                match stdin.read(&mut buf) {
                    Ok(0) | Err(_) => std::process::exit(0),
                    Ok(_) => {}
                }
            }
        });
    }
    let server = Arc::new(Server { script, log, next_id: AtomicU64::new(0), failed: Mutex::new(HashMap::new()) });
    for conn in listener.incoming() {
        let Ok(conn) = conn else { continue };
        let server = server.clone();
        std::thread::spawn(move || {
            if let Err(e) = handle(&server, conn) {
                eprintln!("omprpc-fake-llm: connection: {e}");
            }
        });
    }
}

fn handle(server: &Server, mut conn: TcpStream) -> std::io::Result<()> {
    let _ = conn.set_nodelay(true);
    conn.set_read_timeout(Some(Duration::from_secs(30)))?;
    let req = match http::read_request(&mut conn) {
        Ok(Some(r)) => r,
        Ok(None) => return Ok(()),
        Err(e) => {
            let _ = http::respond_json(&mut conn, 400, &serde_json::json!({"error": {"message": e.to_string()}}));
            return Ok(());
        }
    };
    let path = req.path.split('?').next().unwrap_or("").trim_end_matches('/');
    match (req.method.as_str(), path) {
        ("POST", p) if p.ends_with("/chat/completions") => {
            server.log_body(&req.body);
            serve_llm(server, conn, &req, stream::Api::OpenAi)
        }
        ("POST", p) if p.ends_with("/messages") => {
            server.log_body(&req.body);
            serve_llm(server, conn, &req, stream::Api::Anthropic)
        }
        ("GET", p) if p.ends_with("/models") => http::respond_json(
            &mut conn,
            200,
            &serde_json::json!({"object":"list","data":[{"id":"fake-model","object":"model","created":0,"owned_by":"omprpc"}]}),
        ),
        _ => http::respond_json(&mut conn, 404, &serde_json::json!({"error": {"message": format!("no route for {} {}", req.method, req.path)}})),
    }
}

fn serve_llm(server: &Server, mut conn: TcpStream, req: &http::Request, api: stream::Api) -> std::io::Result<()> {
    let request: Value = match serde_json::from_slice(&req.body) {
        Ok(v) => v,
        Err(e) => return http::respond_json(&mut conn, 400, &serde_json::json!({"error": {"message": format!("body is not JSON: {e}")}})),
    };
    let conv = script::Conversation::from_request(&request, api);
    let (reply, place) = server.script.reply_for(&conv);
    if let Some(f) = reply.fail.filter(|f| server.fails_now(place, f.times, req.sdk_retry)) {
        return stream::fail(conn, f, api);
    }
    stream::send(server, conn, &request, &conv, &reply, api)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_reply_fails_its_first_calls_and_an_sdk_retry_fails_as_its_call_did() {
        let server = Server { script: script::Script::default(), log: None, next_id: AtomicU64::new(0), failed: Mutex::new(HashMap::new()) };
        let place = (0, 0);
        // times 2: the first two calls fail; each call's SDK retries (x-stainless-retry-count
        // 1, 2) fail with it and do not count.
        assert!(server.fails_now(place, 2, 0));
        assert!(server.fails_now(place, 2, 1) && server.fails_now(place, 2, 2));
        assert!(server.fails_now(place, 2, 0));
        assert!(!server.fails_now(place, 2, 0), "the third call is served");
        assert!(!server.fails_now(place, 2, 1), "its SDK retry too");
        // Another reply counts on its own.
        assert!(server.fails_now((0, 1), 1, 0));
    }
}
