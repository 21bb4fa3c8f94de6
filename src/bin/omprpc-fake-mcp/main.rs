//! `omprpc-fake-mcp`: a tiny stdio MCP server for the real-agent tests (pi 1.x connects to MCP
//! servers and calls their tools; the tests check what reached the server). std + serde_json only.
//!
//! # Command line
//!
//! `omprpc-fake-mcp --log <path>`
//!
//! Appends one compact JSON line per event to `<path>` (opened in append mode, flushed per line,
//! so a test can read it while the server runs and several servers can share one file):
//!
//! * `{"event":"started","pid":N}` once, at start;
//! * `{"event":"call","tool":"<name>","arguments":{…}}` for each `tools/call`, written before the
//!   answer, whatever the tool (an unknown one too: the log records what the agent asked for).
//!
//! # Protocol
//!
//! MCP over stdio: newline-delimited JSON-RPC 2.0 on stdin/stdout. Answers:
//!
//! * `initialize`: `protocolVersion` echoes the client's, `capabilities {tools:{}}`,
//!   `serverInfo {name:"omprpc-fake-mcp",version:"1"}`;
//! * `ping`: `{}`;
//! * `tools/list`: `echo` (`{text: string}`, required) and `secret` (no parameters);
//! * `tools/call`: `echo` → text `echo: <text>`; `secret` → text `the secret is 42`; another
//!   name → a tool result with `isError: true`; missing `text` for `echo` → JSON-RPC error -32602;
//! * any other request → JSON-RPC error -32601 (method not found);
//! * notifications (no `id`, e.g. `notifications/initialized`) get no answer;
//! * a line that is not JSON → JSON-RPC error -32700 with id null.
//!
//! EOF on stdin → exit 0. A usage error → a message on stderr and exit 2.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufWriter, Write};
use std::process::ExitCode;

use serde_json::{json, Value};

const SERVER_NAME: &str = "omprpc-fake-mcp";
const SECRET_TEXT: &str = "the secret is 42";

fn main() -> ExitCode {
    let log_path = match parse_args(std::env::args().skip(1)) {
        Ok(path) => path,
        Err(message) => {
            eprintln!("{SERVER_NAME}: {message}\nusage: {SERVER_NAME} --log <path>");
            return ExitCode::from(2);
        }
    };
    let mut log = match OpenOptions::new().create(true).append(true).open(&log_path) {
        Ok(file) => file,
        Err(err) => {
            eprintln!("{SERVER_NAME}: cannot open log {log_path}: {err}");
            return ExitCode::from(2);
        }
    };
    if let Err(err) = log_event(&mut log, &json!({"event": "started", "pid": std::process::id()})) {
        eprintln!("{SERVER_NAME}: cannot write log {log_path}: {err}");
        return ExitCode::from(2);
    }
    match serve(io::stdin().lock(), io::stdout().lock(), &mut log) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // The agent closing our stdout while we answer is the usual way this happens.
            eprintln!("{SERVER_NAME}: {err}");
            ExitCode::from(1)
        }
    }
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<String, String> {
    let mut log = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--log" => log = Some(args.next().ok_or("--log needs a path")?),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    log.ok_or_else(|| "--log <path> is required".to_string())
}

/// One line per event; a single write_all of the whole line so that appends from several
/// servers sharing the file do not interleave within a line.
fn log_event(log: &mut File, event: &Value) -> io::Result<()> {
    let mut line = event.to_string();
    line.push('\n');
    log.write_all(line.as_bytes())?;
    log.flush()
}

fn serve(input: impl BufRead, output: impl Write, log: &mut File) -> io::Result<()> {
    let mut out = BufWriter::new(output);
    for line in input.lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let reply = match serde_json::from_str::<Value>(&line) {
            Ok(message) => handle(&message, log)?,
            Err(err) => Some(error_reply(&Value::Null, -32700, &format!("parse error: {err}"))),
        };
        if let Some(reply) = reply {
            writeln!(out, "{reply}")?;
            out.flush()?;
        }
    }
    Ok(())
}

/// The answer to one message, or None for a notification (or a response from the client,
/// which this server never asks for but must not answer).
fn handle(message: &Value, log: &mut File) -> io::Result<Option<Value>> {
    let Some(id) = message.get("id").cloned() else {
        return Ok(None);
    };
    let Some(method) = message.get("method").and_then(Value::as_str) else {
        if message.get("result").is_some() || message.get("error").is_some() {
            return Ok(None);
        }
        return Ok(Some(error_reply(&id, -32600, "invalid request: no method")));
    };
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    let reply = match method {
        "initialize" => result_reply(&id, initialize_result(&params)),
        "ping" => result_reply(&id, json!({})),
        "tools/list" => result_reply(&id, json!({"tools": tool_list()})),
        "tools/call" => call_tool(&id, &params, log)?,
        other => error_reply(&id, -32601, &format!("method not found: {other}")),
    };
    Ok(Some(reply))
}

fn initialize_result(params: &Value) -> Value {
    // Echo the client's version: this server supports only what every version has in common.
    let version = params.get("protocolVersion").cloned().unwrap_or(json!("2025-06-18"));
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {}},
        "serverInfo": {"name": SERVER_NAME, "version": "1"},
    })
}

fn tool_list() -> Value {
    json!([
        {
            "name": "echo",
            "description": "Echoes its text back, prefixed with \"echo: \".",
            "inputSchema": {
                "type": "object",
                "properties": {"text": {"type": "string", "description": "The text to echo."}},
                "required": ["text"],
            },
        },
        {
            "name": "secret",
            "description": "Returns the secret.",
            "inputSchema": {"type": "object", "properties": {}},
        },
    ])
}

fn call_tool(id: &Value, params: &Value, log: &mut File) -> io::Result<Value> {
    let Some(tool) = params.get("name").and_then(Value::as_str) else {
        return Ok(error_reply(id, -32602, "tools/call: params.name (string) is required"));
    };
    let arguments = params.get("arguments").cloned().unwrap_or_else(|| json!({}));
    log_event(log, &json!({"event": "call", "tool": tool, "arguments": arguments}))?;
    let reply = match tool {
        "echo" => match arguments.get("text").and_then(Value::as_str) {
            Some(text) => result_reply(id, text_result(&format!("echo: {text}"), false)),
            None => error_reply(id, -32602, "echo: arguments.text (string) is required"),
        },
        "secret" => result_reply(id, text_result(SECRET_TEXT, false)),
        other => result_reply(id, text_result(&format!("unknown tool: {other}"), true)),
    };
    Ok(reply)
}

fn text_result(text: &str, is_error: bool) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": is_error})
}

fn result_reply(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn error_reply(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `serve` over `lines`; the replies (one JSON value per output line) and the log.
    fn session(lines: &[&str]) -> (Vec<Value>, Vec<Value>) {
        let dir = std::env::temp_dir().join(format!("omprpc-fake-mcp-test-{}-{:?}", std::process::id(), std::thread::current().id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log_path = dir.join("log.jsonl");
        let mut log = OpenOptions::new().create(true).write(true).truncate(true).open(&log_path).unwrap();
        let input = lines.join("\n") + "\n";
        let mut out = Vec::new();
        serve(input.as_bytes(), &mut out, &mut log).unwrap();
        let parse = |text: &str| text.lines().map(|l| serde_json::from_str(l).unwrap()).collect::<Vec<Value>>();
        let logged = parse(&std::fs::read_to_string(&log_path).unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
        (parse(std::str::from_utf8(&out).unwrap()), logged)
    }

    #[test]
    fn initialize_echoes_the_version_and_lists_two_tools() {
        let (replies, logged) = session(&[
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{}}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":"two","method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#,
        ]);
        assert_eq!(replies.len(), 3, "the notification is not answered: {replies:?}");
        assert_eq!(replies[0]["result"]["protocolVersion"], "2025-03-26");
        assert_eq!(replies[0]["result"]["capabilities"], json!({"tools": {}}));
        assert_eq!(replies[0]["result"]["serverInfo"], json!({"name": "omprpc-fake-mcp", "version": "1"}));
        assert_eq!(replies[1]["id"], "two");
        let names: Vec<&str> = replies[1]["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["echo", "secret"]);
        assert_eq!(replies[1]["result"]["tools"][0]["inputSchema"]["required"], json!(["text"]));
        assert_eq!(replies[2], json!({"jsonrpc": "2.0", "id": 3, "result": {}}));
        assert_eq!(logged, Vec::<Value>::new(), "no call, nothing logged (the start is logged by main)");
    }

    #[test]
    fn calls_are_answered_and_logged() {
        let (replies, logged) = session(&[
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"secret"}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"nope","arguments":{}}}"#,
        ]);
        assert_eq!(replies[0]["result"], json!({"content": [{"type": "text", "text": "echo: hi"}], "isError": false}));
        assert_eq!(replies[1]["result"]["content"][0]["text"], SECRET_TEXT);
        assert_eq!(replies[2]["error"]["code"], -32602);
        assert_eq!(replies[3]["result"]["isError"], true);
        let calls: Vec<(&str, &Value)> = logged.iter().map(|e| (e["tool"].as_str().unwrap(), &e["arguments"])).collect();
        assert_eq!(calls, [("echo", &json!({"text": "hi"})), ("secret", &json!({})), ("echo", &json!({})), ("nope", &json!({}))]);
        assert!(logged.iter().all(|e| e["event"] == "call"));
    }

    #[test]
    fn unknown_methods_and_bad_lines_get_errors() {
        let (replies, _) = session(&[r#"{"jsonrpc":"2.0","id":7,"method":"resources/list"}"#, "not json", r#"{"jsonrpc":"2.0","id":8}"#]);
        assert_eq!((&replies[0]["id"], &replies[0]["error"]["code"]), (&json!(7), &json!(-32601)));
        assert_eq!((&replies[1]["id"], &replies[1]["error"]["code"]), (&Value::Null, &json!(-32700)));
        assert_eq!((&replies[2]["id"], &replies[2]["error"]["code"]), (&json!(8), &json!(-32600)));
    }

    #[test]
    fn arguments_are_required() {
        assert!(parse_args(std::iter::empty()).is_err());
        assert!(parse_args(["--log".to_string()].into_iter()).is_err());
        assert!(parse_args(["--verbose".to_string()].into_iter()).is_err());
        assert_eq!(parse_args(["--log".to_string(), "x".to_string()].into_iter()), Ok("x".to_string()));
    }
}
