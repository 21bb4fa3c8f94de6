//! The generated agent extension (JavaScript): CommonJS for pi, ESM for omp. It registers
//! the host's tools, asks the library over the bridge when one runs (streaming `onUpdate`
//! partial results, honouring the AbortSignal, timing out if configured, and always settling
//! its promise), and — with the policy gate on — asks before the agent runs one of its own
//! tools, blocking when no verdict comes unless the gate was set to fail open.

use std::path::PathBuf;

use serde_json::{json, Value};

use super::address::Advertised;
use crate::protocol::argv::Flavor;

pub enum Endpoint {
    Unix(PathBuf),
    /// The advertised address: what the extension dials, wherever the agent runs.
    Tcp(Advertised),
}

pub struct Config {
    pub endpoint: Endpoint,
    pub token: String,
    pub client_id: String,
    pub tools: Vec<Value>,
    pub gate: bool,
    pub fail_open: bool,
    pub policy_timeout_ms: u64,
    pub call_timeout_ms: u64,
}

/// The extension's body, shared by both module formats. `CONFIG` and `net` / `StringDecoder`
/// are bound by the format-specific prologue.
const BODY: &str = r#"
let conn = null;
let seq = 0;
const waiting = new Map();
const bridged = new Set(CONFIG.tools.map((t) => t.name));

function connection() {
  if (conn && !conn.destroyed) return conn;
  const sock = CONFIG.socket ? net.createConnection(CONFIG.socket) : net.createConnection({ host: CONFIG.host, port: CONFIG.port });
  const decoder = new StringDecoder("utf8"); // a multibyte character may span two chunks
  let buf = "";
  sock.on("data", (chunk) => {
    buf += decoder.write(chunk);
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      let frame;
      try { frame = JSON.parse(line); } catch { continue; }
      const w = waiting.get(frame.id);
      if (!w) continue;
      if (frame.update !== undefined) { if (w.onUpdate) w.onUpdate(frame.update); continue; }
      w.finish(frame);
    }
  });
  // `unreachable`: the bridge could not be reached (or hung up), as opposed to a slow answer.
  const fail = (why) => {
    if (conn === sock) conn = null;
    for (const w of [...waiting.values()]) w.finish({ error: why, unreachable: true });
  };
  sock.on("error", (e) => fail("omprpc bridge connection to " + CONFIG.address + " failed: " + e.message));
  sock.on("close", () => fail("omprpc bridge connection to " + CONFIG.address + " closed"));
  conn = sock;
  return sock;
}

// The connection keeps the agent's event loop alive only while a request waits on it.
function keepAlive() {
  if (!conn) return;
  if (waiting.size > 0) conn.ref(); else conn.unref();
}

// Tells the library a request is given up (an abort, or its timeout): it voids the call or
// the policy question, so the host learns of it and a late answer is refused. `reason`: what
// the agent is told instead (the gate's block), so the library notes the same words.
function sendCancel(id, reason) {
  try { connection().write(JSON.stringify({ kind: "cancel", target: id, id: id + "-cancel", ...(reason ? { reason } : {}), token: CONFIG.token, client: CONFIG.client }) + "\n"); } catch {}
}

// One request; the promise always settles exactly once (reply, error, close, timeout, abort).
// `outcome(error)`: what the caller will tell the agent when the request times out with `error`.
function request(frame, timeoutMs, onUpdate, outcome) {
  const id = CONFIG.client + "-" + ++seq;
  let finish;
  const done = new Promise((resolve) => {
    let settled = false;
    let timer = null;
    finish = (reply) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      waiting.delete(id);
      keepAlive();
      resolve(reply);
    };
    if (timeoutMs > 0) timer = setTimeout(() => {
      const error = "omprpc bridge: no answer within " + timeoutMs + " ms";
      sendCancel(id, outcome ? outcome(error) : error);
      finish({ error });
    }, timeoutMs);
  });
  waiting.set(id, { finish, onUpdate });
  try {
    connection().write(JSON.stringify({ ...frame, id, token: CONFIG.token, client: CONFIG.client }) + "\n");
    keepAlive();
  } catch (e) {
    finish({ error: "omprpc bridge at " + CONFIG.address + " unavailable: " + e.message, unreachable: true });
  }
  return { id, done, finish };
}

function text(content) {
  return (Array.isArray(content) ? content : []).filter((c) => c && c.type === "text").map((c) => c.text).join("\n");
}

for (const tool of CONFIG.tools) {
  pi.registerTool({
    name: tool.name,
    label: tool.label || tool.name,
    description: tool.description,
    parameters: tool.parameters,
    ...(tool.loadMode !== undefined ? { loadMode: tool.loadMode } : {}),
    ...(tool.hidden !== undefined ? { hidden: tool.hidden } : {}),
    // pi 0.51+ calls execute(toolCallId, params, signal, onUpdate, ctx); pi 0.35-0.50
    // execute(toolCallId, params, onUpdate, ctx, signal). Told apart by type: an AbortSignal
    // has addEventListener, onUpdate is a function.
    async execute(toolCallId, params, ...rest) {
      const signal = rest.find((a) => a && typeof a === "object" && typeof a.addEventListener === "function");
      const onUpdate = rest.find((a) => typeof a === "function");
      if (signal && signal.aborted) throw new Error("cancelled");
      const call = request({ kind: "tool", tool: tool.name, toolCallId, args: params ?? {} }, CONFIG.callTimeoutMs, onUpdate);
      const onAbort = () => {
        sendCancel(call.id);
        call.finish({ error: "cancelled" });
      };
      if (signal) signal.addEventListener("abort", onAbort, { once: true });
      const reply = await call.done;
      if (signal) signal.removeEventListener("abort", onAbort);
      if (reply.error !== undefined) throw new Error(String(reply.error));
      const result = reply.result || { content: [] };
      if (reply.isError) throw new Error(text(result.content) || "host tool failed");
      return { content: result.content || [], details: result.details ?? {} };
    },
  });
}

// Proves the extension loaded: the library's start fails unless this hello arrives, so an
// agent that silently ignores --extension can never pass for one running the gate. The factory
// awaits the acknowledgement where the agent awaits factories (pi 0.51+), so the hello is in
// before the agent answers its first command.
const hello = request({ kind: "hello", tools: [...bridged], gate: CONFIG.gate }, 10000);

if (CONFIG.gate) {
  const noVerdict = (why) => "blocked: the host's policy gave no verdict (" + why + ")";
  pi.on("tool_call", async (event) => {
    const name = event.toolName ?? event.name;
    if (bridged.has(name)) return undefined; // the host runs these itself
    const frame = { kind: "policy_eval", tool: name, toolCallId: event.toolCallId, args: event.input ?? event.args ?? {} };
    // pi 0.99+: a call another tool made (a codemode script's) names the call that made it.
    if (typeof event.parentToolCallId === "string") frame.parentToolCallId = event.parentToolCallId;
    const call = request(frame, CONFIG.policyTimeoutMs, undefined, CONFIG.failOpen ? undefined : noVerdict);
    const reply = await call.done;
    const v = reply.verdict;
    if (v && typeof v.block === "boolean") return v.block ? { block: true, reason: v.reason || "blocked by the host's policy" } : undefined;
    if (CONFIG.failOpen) return undefined;
    return { block: true, reason: noVerdict(reply.error || "malformed verdict") };
  });
}

const helloReply = await hello.done;
if (helloReply.error !== undefined) {
  console.error("omprpc bridge: hello not acknowledged: " + helloReply.error);
  // The library's start fails without the hello (fail closed). An agent that cannot reach the
  // bridge at all ends here, so start fails at once with this message naming the address,
  // not at its start-up timeout; a slow answer does not (the hello may yet have arrived).
  if (helloReply.unreachable) process.exit(1);
}
"#;

/// The file name and text of the extension for `flavor`.
pub fn render(flavor: Flavor, c: &Config) -> (&'static str, String) {
    let tools: Vec<Value> = c
        .tools
        .iter()
        .map(|t| {
            let mut v = json!({"name": t["name"], "label": t.get("label").cloned().unwrap_or(Value::Null),
                               "description": t["description"], "parameters": t["parameters"]});
            // omp offers an extension tool to the model directly only with loadMode
            // "essential" (else it becomes an xd:// device); pi ignores both fields.
            for key in ["loadMode", "hidden"] {
                if let Some(x) = t.get(key) {
                    v[key] = x.clone();
                }
            }
            v
        })
        .collect();
    // `address`: what the extension's messages name (the socket path, or host:port).
    let (socket, host, port, address) = match &c.endpoint {
        Endpoint::Unix(p) => {
            let p = p.to_string_lossy().into_owned();
            (Value::String(p.clone()), Value::Null, Value::Null, p)
        }
        Endpoint::Tcp(a) => (Value::Null, json!(a.host), json!(a.port), a.display()),
    };
    let config = json!({
        "socket": socket, "host": host, "port": port, "address": address, "token": c.token, "client": c.client_id, "tools": tools,
        "gate": c.gate, "failOpen": c.fail_open, "policyTimeoutMs": c.policy_timeout_ms, "callTimeoutMs": c.call_timeout_ms,
    });
    let header = "// Generated by omprpc for one agent session; do not edit. It holds that session's bridge token.\n";
    match flavor {
        Flavor::Pi => (
            "omprpc-bridge.cjs",
            format!(
                "{header}\"use strict\";\nconst net = require(\"node:net\");\nconst {{ StringDecoder }} = require(\"node:string_decoder\");\nconst CONFIG = {config};\nmodule.exports = async function omprpcBridge(pi) {{{BODY}}};\n"
            ),
        ),
        Flavor::Omp => (
            "omprpc-bridge.mjs",
            format!(
                "{header}import net from \"node:net\";\nimport {{ StringDecoder }} from \"node:string_decoder\";\nconst CONFIG = {config};\nexport default async function omprpcBridge(pi) {{{BODY}}}\n"
            ),
        ),
    }
}
