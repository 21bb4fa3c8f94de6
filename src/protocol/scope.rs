//! What the agent may load and reach beyond what the host names: the repository's own
//! resources (project trust), MCP servers, context files and excluded tools, as the flags each
//! agent and version takes. The options mean the same on every version; where a version has
//! no way to honour one, it is refused with an error naming the version, never dropped.
//!
//! | option | default | pi 1.0.4 on | pi 0.79 – 1.0.3 | pi 0.48 – 0.78 | older pi | omp 17–18 |
//! |---|---|---|---|---|---|---|
//! | `trust_project` | false (omp: its own discovery) | `--no-approve` / `--approve` | same | discovery off (below) / nothing | refused when the repository holds what cannot be kept out | `false`: `--no-extensions` (+ `--no-skills`) |
//! | `mcp` | false | `--no-mcp` / nothing | 0.99 – 1.0.3: `--no-extensions` (MCP is a built-in extension); before 0.99 there is no MCP | — | — | omp's own configuration; `false` refused |
//! | `context_files` | true | — / `--no-context-files` (0.67.4 on) | | | refused | refused |
//! | `exclude_tools` | — | `--exclude-tools a,b` (`*` patterns from 1.0.4) | 0.77 on | | refused | refused |
//!
//! Project trust: pi 0.79 asks before it loads a repository's `.pi/settings.json`,
//! `.pi/mcp.json`, `.pi/extensions`, `.pi/skills`, `.pi/prompts`, `.pi/SYSTEM.md` …, and in RPC
//! mode follows a decision saved in the agent dir's `trust.json` (or `defaultProjectTrust`):
//! measured, a saved "trust" loads the repository's extensions into an agent the host started.
//! `--no-approve` overrides every saved decision. Before 0.79 pi loads them unconditionally, so
//! discovery is switched off instead (`--no-extensions`, `--no-prompt-templates`, and
//! `--no-skills` unless the host selects skills itself); what has no switch there
//! (`.pi/settings.json`, `.pi/SYSTEM.md`, `.pi/APPEND_SYSTEM.md`, and extensions or templates
//! before their switch existed) is found by [`unkeepable`] and refused by the client.
//!
//! The `tools` allow-list is exact: on pi 1.0.4 and later `--tools` keeps every MCP tool unless
//! an entry starts with `mcp__`, so with MCP on and no `mcp__` entry the MCP tools (and the MCP
//! resource tools the list does not name) are excluded; with MCP off no server starts at all.

use crate::error::{Error, Result};
use crate::protocol::argv::Flavor;
use crate::protocol::opts::Opts;
use crate::protocol::version::Version;

/// `--no-extensions` keeps discovered extensions out (0.38.0 added it, 0.48.0 made it work:
/// "Fixed `--no-extensions` flag not preventing extension discovery").
pub const PI_NO_EXTENSIONS: Version = Version::new(0, 48, 0);
/// `--no-prompt-templates`.
pub const PI_NO_PROMPT_TEMPLATES: Version = Version::new(0, 50, 0);
/// `--no-context-files` (`AGENTS.md` / `CLAUDE.md`).
pub const PI_NO_CONTEXT_FILES: Version = Version::new(0, 67, 4);
/// `--exclude-tools` (names); `*` patterns from [`PI_NO_MCP`].
pub const PI_EXCLUDE_TOOLS: Version = Version::new(0, 77, 0);
/// Project trust, `--approve` / `--no-approve`.
pub const PI_PROJECT_TRUST: Version = Version::new(0, 79, 0);
/// Built-in MCP (a built-in extension; `--no-extensions` turns it off).
pub const PI_MCP: Version = Version::new(0, 99, 0);
/// `--no-mcp`, tool patterns, and `--tools` keeping MCP tools unless an entry names `mcp__…`
/// (before it `--tools` removed them).
pub const PI_NO_MCP: Version = Version::new(1, 0, 4);

/// The tools pi's MCP support adds besides `mcp__<server>__<tool>`: they count as MCP tools.
pub const PI_MCP_RESOURCE_TOOLS: [&str; 3] = ["list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource"];

/// The scope options as given.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scope {
    /// `None`: not given — on pi the same as false; on omp its own discovery, as omp_rpc's
    /// command line (which the drop-in reproduces word for word) leaves it.
    pub trust_project: Option<bool>,
    /// `None`: not given (off where the agent has a switch).
    pub mcp: Option<bool>,
    pub context_files: bool,
    pub exclude_tools: Vec<String>,
    /// The `tools` allow-list, when given (after the library's additions).
    pub tools: Option<Vec<String>>,
    /// The `skills` option is given: the host selects skills itself.
    pub skills_selected: bool,
}

impl Scope {
    pub fn parse(o: &Opts, tools: Option<&[String]>) -> Result<Scope> {
        let exclude_tools = o.str_list("exclude_tools")?.unwrap_or_default();
        if exclude_tools.iter().any(|t| t.is_empty() || t.contains(',')) {
            return Err(Error::invalid("option \"exclude_tools\" must name tools (non-empty, without commas)"));
        }
        Ok(Scope {
            trust_project: o.bool("trust_project")?,
            mcp: o.bool("mcp")?,
            context_files: o.bool("context_files")?.unwrap_or(true),
            exclude_tools,
            tools: tools.map(<[String]>::to_vec),
            skills_selected: o.get("skills").is_some() || o.bool("no_skills")? == Some(true),
        })
    }
}

fn refused(option: &str, flavor: Flavor, version: Option<Version>, why: &str) -> Error {
    let agent = match version {
        Some(v) => format!("{} {v}", flavor.name()),
        None => flavor.name().to_string(),
    };
    Error::invalid(format!("option \"{option}\" cannot be honoured by {agent}: {why}"))
}

/// Which flag families the host's own argv (the `command` option) already decides: the
/// library adds none of a family the argv names, so the host's word stands.
fn names_any(argv: &[String], spellings: &[&str]) -> bool {
    argv.iter().any(|a| spellings.iter().any(|s| a == s || a.starts_with(&format!("{s}="))))
}

/// The flags for `scope` on `flavor` at `version` (None: unknown, taken as the newest).
/// `given`: the host's whole argv (`command`), whose own flags of a family win.
pub fn flags(scope: &Scope, flavor: Flavor, version: Option<Version>, given: Option<&[String]>) -> Result<Vec<String>> {
    match flavor {
        Flavor::Pi => pi_flags(scope, version, given),
        Flavor::Omp => omp_flags(scope, version, given),
    }
}

fn pi_flags(scope: &Scope, version: Option<Version>, given: Option<&[String]>) -> Result<Vec<String>> {
    let at_least = |v: Version| version.map_or(true, |have| have >= v);
    let given = given.unwrap_or(&[]);
    let mut out: Vec<String> = Vec::new();
    let push = |flag: &str, family: &[&str], out: &mut Vec<String>| {
        if !names_any(given, family) && !out.iter().any(|f| f == flag) {
            out.push(flag.to_string());
        }
    };
    // --- the repository's own resources
    let trust = scope.trust_project.unwrap_or(false);
    if at_least(PI_PROJECT_TRUST) {
        let flag = if trust { "--approve" } else { "--no-approve" };
        push(flag, &["--approve", "-a", "--no-approve", "-na"], &mut out);
    } else if !trust {
        if at_least(PI_NO_EXTENSIONS) {
            push("--no-extensions", &["--no-extensions", "-ne"], &mut out);
        }
        if at_least(PI_NO_PROMPT_TEMPLATES) {
            push("--no-prompt-templates", &["--no-prompt-templates", "-np"], &mut out);
        }
        if !scope.skills_selected {
            push("--no-skills", &["--no-skills", "-ns"], &mut out);
        }
    }
    // --- MCP
    let mcp = scope.mcp.unwrap_or(false);
    if at_least(PI_NO_MCP) {
        if !mcp {
            push("--no-mcp", &["--no-mcp"], &mut out);
        }
    } else if at_least(PI_MCP) {
        if !mcp {
            // MCP is a built-in extension there; this also keeps discovered and built-in
            // extensions out (explicit `-e` paths, the bridge's among them, still load).
            push("--no-extensions", &["--no-extensions", "-ne"], &mut out);
        }
    } else if mcp {
        return Err(refused("mcp", Flavor::Pi, version, "pi has MCP support from 0.99.0"));
    }
    // --- context files
    if !scope.context_files {
        if !at_least(PI_NO_CONTEXT_FILES) {
            return Err(refused("context_files", Flavor::Pi, version, "pi has --no-context-files from 0.67.4"));
        }
        push("--no-context-files", &["--no-context-files", "-nc"], &mut out);
    }
    // --- excluded tools: the host's, and the MCP tools an exact allow-list leaves out
    let mut exclude = scope.exclude_tools.clone();
    if !exclude.is_empty() && !at_least(PI_EXCLUDE_TOOLS) {
        return Err(refused("exclude_tools", Flavor::Pi, version, "pi has --exclude-tools from 0.77.0"));
    }
    if exclude.iter().any(|t| t.contains('*')) && !at_least(PI_NO_MCP) {
        return Err(refused("exclude_tools", Flavor::Pi, version, "pi takes `*` patterns in --exclude-tools from 1.0.4"));
    }
    if let Some(tools) = &scope.tools {
        if mcp && at_least(PI_NO_MCP) && !tools.iter().any(|t| t.starts_with("mcp__")) {
            exclude.push("mcp__*".into());
            exclude.extend(PI_MCP_RESOURCE_TOOLS.iter().filter(|r| !tools.iter().any(|t| t == *r)).map(|r| r.to_string()));
        }
    }
    if !exclude.is_empty() {
        if names_any(given, &["--exclude-tools", "-xt"]) {
            return Err(Error::invalid(
                "the \"command\" argv names --exclude-tools itself: the library cannot add the exclusions \
                 (exclude_tools, or the MCP tools outside the tools allow-list) to it; give them in one place",
            ));
        }
        out.push("--exclude-tools".into());
        out.push(exclude.join(","));
    }
    Ok(out)
}

fn omp_flags(scope: &Scope, version: Option<Version>, given: Option<&[String]>) -> Result<Vec<String>> {
    let given = given.unwrap_or(&[]);
    let mut out: Vec<String> = Vec::new();
    if scope.trust_project == Some(false) {
        // omp discovers extensions and skills in the repository (its own, Claude's, Codex's …
        // directories) and has no trust concept: discovery goes off; `-e` paths still load.
        if !names_any(given, &["--no-extensions"]) {
            out.push("--no-extensions".into());
        }
        if !scope.skills_selected && !names_any(given, &["--no-skills", "--skills"]) {
            out.push("--no-skills".into());
        }
    }
    if scope.mcp == Some(false) {
        return Err(refused("mcp", Flavor::Omp, version, "omp has no switch for MCP; its configuration (mcp.json, setting mcp.enableProjectConfig) decides"));
    }
    if !scope.context_files {
        return Err(refused("context_files", Flavor::Omp, version, "omp has no flag that keeps AGENTS.md out (its rules have no_rules)"));
    }
    if !scope.exclude_tools.is_empty() {
        return Err(refused("exclude_tools", Flavor::Omp, version, "omp has no --exclude-tools; name the tools it may use with \"tools\""));
    }
    Ok(out)
}

/// What pi at `version` would load from a repository that no flag keeps out, as paths relative
/// to the working directory: with `trust_project` off, the client refuses to start in a
/// directory holding one (`.pi/settings.json` can set the shell, `.pi/SYSTEM.md` replaces
/// the system prompt). Empty where the agent has project trust, or the host trusts the project.
pub fn unkeepable(flavor: Flavor, version: Option<Version>, trust_project: bool) -> Vec<&'static str> {
    let Some(v) = version else { return Vec::new() };
    if trust_project || flavor != Flavor::Pi || v >= PI_PROJECT_TRUST {
        return Vec::new();
    }
    let mut out = vec![".pi/settings.json", ".pi/SYSTEM.md", ".pi/APPEND_SYSTEM.md"];
    if v < PI_NO_EXTENSIONS {
        out.push(".pi/extensions");
    }
    if v < PI_NO_PROMPT_TEMPLATES {
        out.push(".pi/prompts");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn scope(v: Value, tools: Option<&[&str]>) -> Scope {
        let map = v.as_object().unwrap().clone();
        let tools: Option<Vec<String>> = tools.map(|t| t.iter().map(|s| s.to_string()).collect());
        Scope::parse(&Opts::new(&map), tools.as_deref()).unwrap()
    }
    fn pi(s: &Scope, v: &str) -> Result<Vec<String>> {
        flags(s, Flavor::Pi, Version::parse(v), None)
    }
    fn words(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn by_default_pi_1_x_trusts_no_project_and_starts_no_mcp_server() {
        assert_eq!(pi(&scope(json!({}), None), "1.6.0").unwrap(), words(&["--no-approve", "--no-mcp"]));
        assert_eq!(flags(&scope(json!({}), None), Flavor::Pi, None, None).unwrap(), words(&["--no-approve", "--no-mcp"]));
    }

    #[test]
    fn trusting_the_project_approves_it_where_pi_has_trust_and_leaves_discovery_on_before() {
        let s = scope(json!({"trust_project": true, "mcp": true}), None);
        assert_eq!(pi(&s, "1.6.0").unwrap(), words(&["--approve"]));
        assert!(pi(&s, "0.79.0").unwrap_err().message.contains("pi has MCP support from 0.99.0"));
        assert_eq!(pi(&scope(json!({"trust_project": true}), None), "0.79.0").unwrap(), words(&["--approve"]));
        assert_eq!(pi(&scope(json!({"trust_project": true}), None), "0.73.1").unwrap(), Vec::<String>::new());
    }

    #[test]
    fn before_project_trust_discovery_is_switched_off_where_pi_can() {
        assert_eq!(pi(&scope(json!({}), None), "0.73.1").unwrap(), words(&["--no-extensions", "--no-prompt-templates", "--no-skills"]));
        // The host's own skills selection stands.
        assert_eq!(pi(&scope(json!({"skills": "all"}), None), "0.73.1").unwrap(), words(&["--no-extensions", "--no-prompt-templates"]));
        assert_eq!(pi(&scope(json!({}), None), "0.49.0").unwrap(), words(&["--no-extensions", "--no-skills"]));
        assert_eq!(pi(&scope(json!({}), None), "0.37.2").unwrap(), words(&["--no-skills"]));
        assert_eq!(unkeepable(Flavor::Pi, Version::parse("0.37.2"), false).len(), 5);
        assert_eq!(unkeepable(Flavor::Pi, Version::parse("0.73.1"), false), vec![".pi/settings.json", ".pi/SYSTEM.md", ".pi/APPEND_SYSTEM.md"]);
        assert!(unkeepable(Flavor::Pi, Version::parse("0.73.1"), true).is_empty());
        assert!(unkeepable(Flavor::Pi, Version::parse("0.79.0"), false).is_empty());
    }

    #[test]
    fn mcp_off_before_no_mcp_existed_turns_the_builtin_extension_off() {
        assert_eq!(pi(&scope(json!({}), None), "1.0.2").unwrap(), words(&["--no-approve", "--no-extensions"]));
        assert_eq!(pi(&scope(json!({"mcp": true}), None), "1.0.2").unwrap(), words(&["--no-approve"]));
        // No MCP at all before 0.99: nothing to switch off.
        assert_eq!(pi(&scope(json!({"mcp": false}), None), "0.87.1").unwrap(), words(&["--no-approve"]));
    }

    #[test]
    fn with_mcp_on_an_allow_list_without_mcp_entries_excludes_every_mcp_tool() {
        let s = scope(json!({"mcp": true}), Some(&["bash", "read_mcp_resource"]));
        assert_eq!(pi(&s, "1.6.0").unwrap(), words(&["--no-approve", "--exclude-tools", "mcp__*,list_mcp_resources,list_mcp_resource_templates"]));
        let named = scope(json!({"mcp": true, "exclude_tools": ["write"]}), Some(&["bash", "mcp__fake__echo"]));
        assert_eq!(pi(&named, "1.6.0").unwrap(), words(&["--no-approve", "--exclude-tools", "write"]));
        // MCP off: no server starts, nothing to exclude.
        assert_eq!(pi(&scope(json!({}), Some(&["bash"])), "1.6.0").unwrap(), words(&["--no-approve", "--no-mcp"]));
    }

    #[test]
    fn an_option_a_version_cannot_honour_is_refused_naming_the_version() {
        let e = pi(&scope(json!({"context_files": false}), None), "0.67.3").unwrap_err().message;
        assert!(e.contains("context_files") && e.contains("pi 0.67.3") && e.contains("0.67.4"), "{e}");
        assert_eq!(pi(&scope(json!({"context_files": false}), None), "0.67.4").unwrap(), words(&["--no-extensions", "--no-prompt-templates", "--no-skills", "--no-context-files"]));
        assert!(pi(&scope(json!({"exclude_tools": ["write"]}), None), "0.76.0").unwrap_err().message.contains("0.77.0"));
        assert!(pi(&scope(json!({"exclude_tools": ["mcp__*"]}), None), "1.0.2").unwrap_err().message.contains("1.0.4"));
        let omp = |v: Value| flags(&scope(v, None), Flavor::Omp, Version::parse("18.2.3"), None);
        // omp_rpc's command line, which the drop-in reproduces, leaves omp's discovery on.
        assert_eq!(omp(json!({})).unwrap(), Vec::<String>::new());
        assert_eq!(omp(json!({"trust_project": false})).unwrap(), words(&["--no-extensions", "--no-skills"]));
        assert!(omp(json!({"mcp": false})).unwrap_err().message.contains("omp 18.2.3"));
        assert!(omp(json!({"context_files": false})).is_err());
        assert!(omp(json!({"exclude_tools": ["bash"]})).is_err());
        assert_eq!(omp(json!({"trust_project": true, "mcp": true})).unwrap(), Vec::<String>::new());
    }

    #[test]
    fn the_hosts_own_argv_decides_the_families_it_names() {
        let given = words(&["pi", "--mode", "rpc", "--approve", "-ne"]);
        assert_eq!(flags(&scope(json!({}), None), Flavor::Pi, Version::parse("1.6.0"), Some(&given)).unwrap(), words(&["--no-mcp"]));
        assert_eq!(flags(&scope(json!({}), None), Flavor::Pi, Version::parse("0.73.1"), Some(&given)).unwrap(), words(&["--no-prompt-templates", "--no-skills"]));
        let xt = words(&["pi", "--mode", "rpc", "--exclude-tools", "write"]);
        assert!(flags(&scope(json!({"exclude_tools": ["edit"]}), None), Flavor::Pi, Version::parse("1.6.0"), Some(&xt)).is_err());
    }

    #[test]
    fn exclude_tools_must_name_tools() {
        let map = json!({"exclude_tools": ["a,b"]}).as_object().unwrap().clone();
        assert!(Scope::parse(&Opts::new(&map), None).is_err());
        let map = json!({"exclude_tools": "bash"}).as_object().unwrap().clone();
        assert!(Scope::parse(&Opts::new(&map), None).is_err());
    }
}
