//! What the fake agent does with `--version` and `--extension`, like the real agents.
//!
//! * `--version` (anywhere in argv): prints the version and exits 0 before anything else
//!   (no argv or env report is written). omp flavour: `omp/<v>`; pi: `<v>`. `<v>` is env
//!   `OMPRPC_FAKE_VERSION`, else the newest supported version of the flavour.
//! * `--extension PATH` / `-e PATH`: the fake agent cannot run JavaScript, so it "loads" an
//!   omprpc bridge extension by reading the `const CONFIG = {…};` line the library embeds
//!   (socket path or TCP port, token, client id, tool names, gate) and sending the hello the
//!   real extension sends when its factory runs, waiting for the acknowledgement as pi 0.51+
//!   awaits the factory; the connection stays open for the agent's lifetime. Any other file is
//!   ignored; a missing one is pi's load error (stderr, exit 1, nothing on stdout).
//! * `OMPRPC_FAKE_DROP_EXTENSION=1`: `--extension` is dropped silently, as pi before 0.35 does.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::sync::Mutex;
use std::time::Duration;

use omprpc::protocol::version::{OMP_NEWEST, PI_NEWEST};
use serde_json::{json, Value};

/// Connections of the loaded extensions: open until the process exits.
static LOADED: Mutex<Vec<Box<dyn std::any::Any + Send>>> = Mutex::new(Vec::new());

fn flavor_of(args: &[String]) -> String {
    let mut flavor = None;
    for (i, a) in args.iter().enumerate() {
        if let Some(v) = a.strip_prefix("--flavor=") {
            flavor = Some(v.to_owned());
        } else if a == "--flavor" {
            flavor = args.get(i + 1).cloned();
        }
    }
    flavor
        .or_else(|| std::env::var("OMPRPC_FAKE_FLAVOR").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "omp".to_owned())
}

/// `--version`: Some(exit code) when asked.
pub fn answer_version(args: &[String]) -> Option<i32> {
    if !args.iter().any(|a| a == "--version") {
        return None;
    }
    let pi = flavor_of(args) == "pi";
    let version = std::env::var("OMPRPC_FAKE_VERSION")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| if pi { PI_NEWEST } else { OMP_NEWEST }.to_string());
    println!("{}{version}", if pi { "" } else { "omp/" });
    Some(0)
}

/// Loads every `--extension` in `args` (see the module comment); Err: the message and exit
/// code of a load failure.
pub fn load(args: &[String]) -> Result<(), (String, i32)> {
    if matches!(std::env::var("OMPRPC_FAKE_DROP_EXTENSION").as_deref(), Ok("1") | Ok("true")) {
        return Ok(());
    }
    let mut i = 0;
    while i < args.len() {
        let path = match args[i].as_str() {
            "--extension" | "-e" => {
                i += 1;
                args.get(i).cloned()
            }
            a => a.strip_prefix("--extension=").map(str::to_owned),
        };
        i += 1;
        let Some(path) = path else { continue };
        let text = std::fs::read_to_string(&path).map_err(|e| (format!("Error: Failed to load extension \"{path}\": {e}"), 1))?;
        let Some(line) = text.lines().find_map(|l| l.strip_prefix("const CONFIG = ")) else { continue };
        let config: Value = serde_json::from_str(line.trim_end_matches(';'))
            .map_err(|e| (format!("Error: Failed to load extension \"{path}\": bad CONFIG: {e}"), 1))?;
        hello(&config).map_err(|e| (format!("omprpc-fake-agent: the bridge hello failed: {e}"), 1))?;
    }
    Ok(())
}

fn hello(config: &Value) -> std::io::Result<()> {
    let tools: Vec<Value> = config["tools"].as_array().into_iter().flatten().map(|t| t["name"].clone()).collect();
    let client = config["client"].as_str().unwrap_or_default();
    let frame = json!({"kind": "hello", "tools": tools, "gate": config["gate"], "id": format!("{client}-1"),
                       "token": config["token"], "client": client});
    let line = format!("{frame}\n");
    let timeout = Some(Duration::from_secs(10));
    let mut reply = String::new();
    if let Some(socket) = config["socket"].as_str() {
        let mut s = UnixStream::connect(socket)?;
        s.set_read_timeout(timeout)?;
        s.write_all(line.as_bytes())?;
        BufReader::new(s.try_clone()?).read_line(&mut reply)?;
        LOADED.lock().unwrap().push(Box::new(s));
    } else {
        let port = config["port"].as_u64().unwrap_or(0) as u16;
        let mut s = TcpStream::connect(("127.0.0.1", port))?;
        s.set_read_timeout(timeout)?;
        s.write_all(line.as_bytes())?;
        BufReader::new(s.try_clone()?).read_line(&mut reply)?;
        LOADED.lock().unwrap().push(Box::new(s));
    }
    let ok = serde_json::from_str::<Value>(&reply).ok().is_some_and(|v| v["hello"]["ok"] == true);
    if ok {
        Ok(())
    } else {
        Err(std::io::Error::other(format!("unexpected reply {reply:?}")))
    }
}
