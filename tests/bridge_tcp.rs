//! The tool bridge over TCP for an agent that cannot reach the library's socket path or its
//! loopback: `bridge_listen` (what the library binds) and `bridge_advertise` (what the
//! extension dials). The fake agent and the generated extension (run by node) cover the
//! addresses and the errors fast; the REAL pi then runs in a network namespace of its own,
//! with only the bridge's TCP address reachable, and calls a host tool through it.
//!
//! Run: `cargo test --test bridge_tcp`. The real-pi test needs root (a network namespace, a
//! veth pair, a mount namespace: iproute2 and util-linux) and pi (see tests/support/pi.rs);
//! `OMPRPC_SKIP_REAL_AGENTS=1` skips it.

#[path = "support/common.rs"]
#[allow(dead_code)] // shared with the real-agent suites; this one uses a few
mod common;
#[path = "support/pi.rs"]
mod pi;

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

use common::{parse, secs, wait_event};
use omprpc::{Client, Status};
use serde_json::{json, Value};

const FAKE: &str = env!("CARGO_BIN_EXE_omprpc-fake-agent");
const HARNESS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/bridge-harness.cjs");

fn echo_tool() -> Value {
    json!({"name": "echo_host", "description": "Echo", "parameters": {"type": "object", "properties": {"message": {"type": "string"}}}})
}

fn fake_options(extra: Value) -> Value {
    let mut opts = json!({"command": [FAKE, "--flavor", "pi"], "flavor": "pi", "host_tools": [echo_tool()], "stop_grace_ms": 300});
    for (k, v) in extra.as_object().unwrap() {
        opts[k] = v.clone();
    }
    opts
}

fn node() -> String {
    let ok = Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success());
    assert!(ok, "node is needed to run the generated extension");
    "node".to_string()
}

/// The `--extension` file in the agent's argv.
fn extension_path(c: &Client) -> PathBuf {
    let argv: Vec<String> = serde_json::from_value(parse(c.info().as_bytes())["argv"].clone()).unwrap();
    let i = argv.iter().position(|a| a == "--extension").expect("--extension in argv");
    PathBuf::from(&argv[i + 1])
}

/// The CONFIG object the generated extension embeds.
fn extension_config(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    let line = text.lines().find_map(|l| l.strip_prefix("const CONFIG = ")).expect("a CONFIG line");
    serde_json::from_str(line.trim_end_matches(';')).unwrap()
}

/// The bridge's private directory holds no socket of any kind: over TCP the only way in is
/// the TCP address.
fn assert_no_unix_socket(dir: &Path) {
    use std::os::unix::fs::FileTypeExt;
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        assert!(!entry.file_type().unwrap().is_socket(), "a socket in the bridge directory: {}", entry.path().display());
    }
}

/// A loopback port that refuses connections, held until dropped: the local end of a
/// connection we made is bound but not listening, and nobody else can bind it meanwhile
/// (unlike a port found free and let go, which another process may take).
struct RefusingPort {
    _listener: TcpListener,
    held: TcpStream,
}

impl RefusingPort {
    fn new() -> RefusingPort {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let held = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        RefusingPort { _listener: listener, held }
    }

    fn port(&self) -> u16 {
        self.held.local_addr().unwrap().port()
    }
}

#[test]
fn the_extension_dials_the_advertised_address_not_the_bound_one() {
    // Bound on every interface, advertised as another loopback address: only the advertised
    // address reaches the extension, with the port the OS picked.
    let c = Client::start(&fake_options(json!({"bridge_listen": "0.0.0.0:0", "bridge_advertise": "127.0.0.2:0"})).to_string())
        .unwrap_or_else(|e| panic!("start: {e}"));
    let info = parse(c.info().as_bytes());
    assert_eq!(info["bridgeLoaded"], true, "the fake agent's hello came over the advertised address");
    let endpoint = &info["bridgeEndpoint"];
    assert_eq!(endpoint["transport"], "tcp", "{info}");
    let listen = endpoint["listen"].as_str().unwrap();
    let port = listen.strip_prefix("0.0.0.0:").expect("bound on every interface").parse::<u16>().unwrap();
    assert!(port > 0, "{listen}");
    assert_eq!(endpoint["advertise"], format!("127.0.0.2:{port}"));
    let path = extension_path(&c);
    let config = extension_config(&path);
    assert_eq!((config["host"].as_str(), config["port"].as_u64(), config["socket"].as_str()), (Some("127.0.0.2"), Some(port as u64), None));
    assert_eq!(config["token"].as_str().unwrap().len(), 64, "the token stays mandatory");
    assert_no_unix_socket(path.parent().unwrap());

    // The generated JavaScript itself, over that address: a host tool call end to end.
    let child = Command::new(node()).args([HARNESS, path.to_str().unwrap(), "tool"]).stdout(std::process::Stdio::piped()).spawn().unwrap();
    let call = wait_event(&c, "host_tool_call", |e| e["type"] == "host_tool_call");
    c.host_tool_result(call["id"].as_str().unwrap(), json!("over the advertised address"), false).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(parse(&out.stdout)["result"]["content"][0]["text"], "over the advertised address");
    c.close().unwrap();
}

#[test]
fn a_fixed_advertised_port_is_dialled_as_given() {
    // What a forwarded port looks like to the extension (`ssh -R`, a container's published
    // port): the advertised port is not the bound one, so an agent dialling it reaches
    // whatever forwards there — here nothing, so the fake agent fails to load the extension.
    let refusing = RefusingPort::new();
    let advertised = format!("127.0.0.1:{}", refusing.port());
    let err = Client::start(&fake_options(json!({"bridge_advertise": advertised, "startup_timeout_ms": 10000})).to_string())
        .err()
        .expect("nothing listens on the advertised port");
    assert!(err.message.contains(&format!("omprpc bridge connection to {advertised} failed")), "{err}");
}

#[test]
fn an_advertised_address_nobody_listens_on_fails_start_naming_it() {
    // The generated extension in a stand-in agent (node): it cannot reach the bridge, says so
    // naming the address, and ends its agent, so start fails at once rather than at its
    // start-up timeout (a minute here: reaching it would fail the status check below).
    let refusing = RefusingPort::new();
    let advertised = format!("127.0.0.1:{}", refusing.port());
    let opts = json!({"command": [node(), HARNESS, "agent"], "flavor": "pi", "handshake": "none", "host_tools": [echo_tool()],
                      "bridge_advertise": advertised, "startup_timeout_ms": 60000, "stop_grace_ms": 2000});
    let err = Client::start(&opts.to_string()).err().expect("start must fail without the hello");
    assert_eq!(err.status, Status::ProcessExited, "{err}");
    assert!(err.message.contains(&format!("omprpc bridge connection to {advertised} failed: connect ECONNREFUSED")), "{err}");

    // An agent that never says hello at all (it drops --extension): start fails at its
    // timeout, naming what the extension would have dialled.
    let opts = fake_options(json!({"env": {"OMPRPC_FAKE_DROP_EXTENSION": "1"}, "bridge_advertise": advertised, "startup_timeout_ms": 1000}));
    let err = Client::start(&opts.to_string()).err().expect("start must fail without the hello");
    assert_eq!(err.status, Status::Protocol, "{err}");
    assert!(err.message.contains(&format!("no hello over the tool bridge (the extension dials TCP {advertised})")), "{err}");
}

#[test]
fn bad_bridge_addresses_are_refused_with_the_reason() {
    for (extra, needle) in [
        (json!({"bridge_listen": "localhost:0"}), "a host name is not resolved"),
        (json!({"bridge_listen": "10.0.0.1"}), "\"bridge_listen\" must be an IP address and port"),
        (json!({"bridge_listen": 7000}), "bridge_listen"),
        (json!({"bridge_listen": "0.0.0.0:0"}), "give \"bridge_advertise\""),
        (json!({"bridge_advertise": "fd00::1:7000"}), "in brackets"),
        (json!({"bridge_advertise": "bridge-host"}), "no port"),
        (json!({"bridge_advertise": "0.0.0.0:7000"}), "cannot be dialled"),
        (json!({"bridge_transport": "unix", "bridge_listen": "127.0.0.1:0"}), "cannot go with \"bridge_transport\":\"unix\""),
        // Checked even when no bridge is needed (no host tools, no gate).
        (json!({"host_tools": null, "bridge_advertise": "nope"}), "no port"),
    ] {
        let err = Client::start(&fake_options(extra.clone()).to_string()).err().unwrap_or_else(|| panic!("{extra} started"));
        assert_eq!(err.status, Status::InvalidArgument, "{extra}: {err}");
        assert!(err.message.contains(needle), "{extra}: {err}");
    }
    // A bind address this machine does not have: the OS's refusal, naming the address.
    let err = Client::start(&fake_options(json!({"bridge_listen": "192.0.2.1:0"})).to_string()).err().expect("no such local address");
    assert!(err.message.contains("binding TCP 192.0.2.1:0"), "{err}");
}

#[test]
fn info_shows_the_unix_socket_or_nothing() {
    let c = Client::start(&fake_options(json!({})).to_string()).unwrap();
    let endpoint = &parse(c.info().as_bytes())["bridgeEndpoint"];
    assert_eq!(endpoint["transport"], "unix");
    assert_eq!(Path::new(endpoint["socket"].as_str().unwrap()).parent(), extension_path(&c).parent());
    c.close().unwrap();
    let c = Client::start(&fake_options(json!({"host_tools": null})).to_string()).unwrap();
    assert_eq!(parse(c.info().as_bytes())["bridgeEndpoint"], Value::Null);
}

// ---------------------------------------------------------------------------------------
// The real pi in a network namespace of its own.

/// `ip` with `args`; Err: what it said.
fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("running ip (iproute2): {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

fn is_root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status.lines().find_map(|l| l.strip_prefix("Uid:")).and_then(|ids| ids.split_whitespace().nth(1)).is_some_and(|euid| euid == "0")
}

const NETNS_PREFIX: &str = "omprpc-bridge-";

/// A network namespace joined to ours by a veth pair (`host_ip` on our side, `ns_ip` on its
/// side, nothing else routed), with `/etc/netns/<name>/hosts` naming our side `BRIDGE_HOST`
/// for programs in it. Everything is removed on drop, also when the test fails.
struct NetNs {
    name: String,
    host_if: String,
    host_ip: String,
}

/// The name the namespace's /etc/hosts gives our side of the veth pair.
const BRIDGE_HOST: &str = "omprpc-bridge-host";

impl NetNs {
    fn create() -> Result<NetNs, String> {
        sweep_stale_namespaces();
        static N: AtomicU64 = AtomicU64::new(0);
        let (pid, n) = (std::process::id(), N.fetch_add(1, Ordering::SeqCst));
        let name = format!("{NETNS_PREFIX}{pid}-{n}");
        // Interface names are at most 15 bytes.
        let (host_if, ns_if) = (format!("ob{pid:x}{n}h"), format!("ob{pid:x}{n}n"));
        // A /30 of 10.201.0.0/16 no interface here uses yet, starting from one of our own so
        // parallel runs start apart.
        let used = Command::new("ip").args(["-o", "-4", "addr"]).output().map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
        let start = (pid as u64 * 7 + n) % 16384;
        let block = (0..16384).map(|i| (start + i) % 16384).find(|b| !used.contains(&format!("inet 10.201.{}.{}/", b / 64, b % 64 * 4 + 1)));
        let block = block.ok_or("no free /30 in 10.201.0.0/16")?;
        let (host_ip, ns_ip) = (format!("10.201.{}.{}", block / 64, block % 64 * 4 + 1), format!("10.201.{}.{}", block / 64, block % 64 * 4 + 2));
        ip(&["netns", "add", &name])?;
        // From here drop removes what exists.
        let ns = NetNs { name, host_if, host_ip };
        ip(&["link", "add", &ns.host_if, "type", "veth", "peer", "name", &ns_if])?;
        ip(&["link", "set", &ns_if, "netns", &ns.name])?;
        ip(&["addr", "add", &format!("{}/30", ns.host_ip), "dev", &ns.host_if])?;
        ip(&["link", "set", &ns.host_if, "up"])?;
        ip(&["-n", &ns.name, "addr", "add", &format!("{ns_ip}/30"), "dev", &ns_if])?;
        ip(&["-n", &ns.name, "link", "set", &ns_if, "up"])?;
        ip(&["-n", &ns.name, "link", "set", "lo", "up"])?;
        let etc = ns.etc_dir();
        std::fs::create_dir_all(&etc).map_err(|e| format!("creating {}: {e}", etc.display()))?;
        std::fs::write(etc.join("hosts"), format!("127.0.0.1 localhost\n{} {BRIDGE_HOST}\n", ns.host_ip)).map_err(|e| e.to_string())?;
        Ok(ns)
    }

    /// `ip netns exec` bind-mounts the files here over /etc for programs in the namespace.
    fn etc_dir(&self) -> PathBuf {
        Path::new("/etc/netns").join(&self.name)
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        // Deleting one end of a veth pair deletes both; deleting the namespace ends it once
        // no process is left in it.
        let _ = ip(&["link", "del", &self.host_if]);
        let _ = ip(&["netns", "del", &self.name]);
        let _ = std::fs::remove_dir_all(self.etc_dir());
    }
}

/// Namespaces (and their /etc/netns files) left by runs of this test that were killed before
/// their guard ran: the pid in the name is gone. Their veth pairs went with them.
fn sweep_stale_namespaces() {
    let list = Command::new("ip").args(["netns", "list"]).output().map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
    for name in list.lines().filter_map(|l| l.split_whitespace().next()) {
        let pid = name.strip_prefix(NETNS_PREFIX).and_then(|rest| rest.split('-').next()).and_then(|p| p.parse::<u32>().ok());
        if pid.is_some_and(|pid| !Path::new("/proc").join(pid.to_string()).exists()) {
            let _ = ip(&["netns", "del", name]);
            let _ = std::fs::remove_dir_all(Path::new("/etc/netns").join(name));
        }
    }
}

/// The agent's command: pi in the namespace, where the library's private bridge directory is
/// hidden under an empty tmpfs (a mount namespace of its own) — so the extension is copied
/// first to a directory of the far side, as a user does for an agent on another filesystem.
/// With the `launcher` start option this becomes the launcher argv
/// `["ip", "netns", "exec", NS, "unshare", "--mount", …]`, keeping the copy step.
fn wrapper_script(ns: &NetNs, node: &Path, cli: &Path, far: &Path) -> String {
    format!(
        r#"#!/bin/sh
set -e
hidden=
prev=
for a in "$@"; do
  shift
  if [ "$prev" = --extension ]; then
    hidden=$(dirname "$a")
    cp "$a" '{far}/'
    a='{far}/'$(basename "$a")
  fi
  set -- "$@" "$a"
  prev=$a
done
exec ip netns exec '{ns}' unshare --mount sh -c 'if [ -n "$0" ]; then mount -t tmpfs omprpc-hidden "$0"; fi; exec "$@"' "$hidden" '{node}' '{cli}' "$@"
"#,
        far = far.display(),
        ns = ns.name,
        node = node.display(),
        cli = cli.display()
    )
}

/// From inside the namespace, whether a TCP connection to `host:port` opens (node's verdict).
fn connects_from_namespace(ns: &NetNs, node: &Path, host: &str, port: u16) -> String {
    let js = format!(
        r#"const s = require("node:net").connect({port}, "{host}"); s.on("connect", () => {{ console.log("connected"); s.destroy(); }}); s.on("error", (e) => console.log(e.code));"#
    );
    let out = Command::new("ip").args(["netns", "exec", &ns.name]).arg(node).args(["-e", &js]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn real_pi_in_its_own_network_namespace_calls_a_host_tool_over_tcp() {
    const TEST: &str = "real_pi_in_its_own_network_namespace_calls_a_host_tool_over_tcp";
    if pi::skip_requested() {
        eprintln!("{TEST}: skipped (OMPRPC_SKIP_REAL_AGENTS=1)");
        return;
    }
    assert!(
        is_root(),
        "{TEST} needs root: it makes a network namespace and a veth pair (ip netns, iproute2) and a mount namespace \
         (unshare, util-linux). Run it as root, or set OMPRPC_SKIP_REAL_AGENTS=1 to skip it"
    );
    let ns = NetNs::create().unwrap_or_else(|e| {
        panic!(
            "{TEST}: setting up the network namespace: {e}\n(root is not enough in a container without \
             CAP_SYS_ADMIN and CAP_NET_ADMIN: run it privileged, or set OMPRPC_SKIP_REAL_AGENTS=1 to skip this test)"
        )
    });
    let script = json!([{"match": "add numbers", "replies": [
        {"tool_call": {"name": "host_add", "arguments": {"a": 2, "b": 3}}},
        {"text": "sum is {{last_tool_result}}"}]}]);
    // The fake LLM listens on our side of the veth pair: pi reaches it like a remote provider.
    let Some(env) = pi::PiEnv::new_on("bridge_netns", script, &ns.host_ip) else { return };
    let far = env.root.join("far-side");
    std::fs::create_dir(&far).unwrap();
    let wrapper = env.write_file("pi-in-netns.sh", &wrapper_script(&ns, &env.install.node, &env.install.cli, &far));
    std::fs::set_permissions(&wrapper, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();

    let mut opts = env.options(&[]);
    let pi_args: Vec<Value> = opts["command"].as_array().unwrap()[2..].to_vec();
    opts["command"] = json!([wrapper.display().to_string()]);
    opts["command"].as_array_mut().unwrap().extend(pi_args);
    let tools = json!([{"name": "host_add", "description": "Add two numbers", "parameters": {
        "type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}]);
    // Bound on our side of the veth pair only, advertised under the name the namespace's
    // /etc/hosts gives it (port 0: the bound port).
    let c = common::start_with(
        "pi in a network namespace",
        opts,
        json!({"host_tools": tools, "bridge_listen": format!("{}:0", ns.host_ip), "bridge_advertise": format!("{BRIDGE_HOST}:0")}),
    );
    let info = parse(c.info().as_bytes());
    assert_eq!(info["bridgeLoaded"], true, "{info}");
    let port = info["bridgeEndpoint"]["listen"].as_str().unwrap().rsplit_once(':').unwrap().1.parse::<u16>().unwrap();
    assert_eq!(info["bridgeEndpoint"], json!({"transport": "tcp", "listen": format!("{}:{port}", ns.host_ip), "advertise": format!("{BRIDGE_HOST}:{port}")}));
    // Only the TCP path is open: no socket in the bridge's directory (which pi cannot even
    // see), pi loaded the copy on the far side, and from the namespace the bridge's port is
    // reachable on the veth address alone — loopback there is the namespace's own.
    let ext = extension_path(&c);
    assert_no_unix_socket(ext.parent().unwrap());
    assert!(far.join(ext.file_name().unwrap()).is_file());
    assert_eq!(connects_from_namespace(&ns, &env.install.node, &ns.host_ip, port), "connected");
    assert_eq!(connects_from_namespace(&ns, &env.install.node, "127.0.0.1", port), "ECONNREFUSED");

    std::thread::scope(|s| {
        let t = s.spawn(|| c.prompt_and_wait("add numbers", None, secs(120)));
        let call = wait_event(&c, "host_tool_call", |e| e["type"] == "host_tool_call");
        assert_eq!((call["toolName"].as_str(), call["bridged"].as_bool()), (Some("host_add"), Some(true)), "{call}");
        assert_eq!(call["arguments"], json!({"a": 2, "b": 3}));
        c.host_tool_result(call["id"].as_str().unwrap(), json!("5"), false).unwrap();
        let turn = parse(t.join().unwrap().unwrap_or_else(|e| panic!("the bridged turn: {e}\nstderr: {}", c.stderr())).as_bytes());
        assert_eq!(turn["assistantText"], "sum is 5");
    });
    // The host's result reached the model's next request, as the tool message of that call.
    let reqs = env.llm_requests();
    assert_eq!(reqs.len(), 2, "{reqs:?}");
    let tool_message = reqs[1]["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool").expect("a tool message in the second request");
    let content = &tool_message["content"];
    let text = content.as_str().map(str::to_string).unwrap_or_else(|| content.as_array().unwrap().iter().filter_map(|p| p["text"].as_str()).collect());
    assert_eq!(text, "5", "{tool_message}");
    c.close().unwrap();
}


#[test]
fn real_pi_that_cannot_reach_the_advertised_address_fails_start_at_once() {
    let Some(env) = pi::PiEnv::new("bridge_unreachable", json!([])) else { return };
    let refusing = RefusingPort::new();
    let advertised = format!("127.0.0.1:{}", refusing.port());
    let mut opts = env.options(&[]);
    opts["host_tools"] = json!([echo_tool()]);
    opts["bridge_advertise"] = json!(advertised);
    // pi awaits the extension's factory, which cannot reach the bridge and ends pi: start
    // fails with pi's exit (not PROTOCOL at the two-minute start-up timeout), naming the address.
    let err = Client::start(&opts.to_string()).err().expect("start must fail without the hello");
    assert_eq!(err.status, Status::ProcessExited, "{err}");
    assert!(err.message.contains(&format!("omprpc bridge connection to {advertised} failed: connect ECONNREFUSED")), "{err}");
}
