//! The skills filter: a selection of skills ("all", "none", or a list) as the flags each agent
//! and version takes. What the agents accept (their `--help` and argument parsers):
//!
//! | agent | select by | flags |
//! |---|---|---|
//! | omp 17–18 | name (glob patterns) | `--skills=a,b` (applied as `skills.includeSkills`), `--no-skills` |
//! | pi before 0.50 | — | `--no-skills` only: `--skills <patterns>` is parsed but never applied (read in 0.37.2's main.js, and measured: every skill is still listed) |
//! | pi 0.50 and later | path | `--skill <path>` (repeatable; loads even with `--no-skills`), `--no-skills` |
//!
//! pi 0.50 dropped `--skills <patterns>` for `--skill <path>` (its changelog: "discovery now
//! uses settings and CLI path arrays instead of legacy filters"), so a named subset there is
//! `--no-skills` plus the paths. A bare name for pi cannot be resolved without looking at the
//! disk, and older pi would load every skill with a filter flag it ignores: each is an error
//! here (never a guess, never a filter that silently filters nothing).
//!
//! Both agents list skills in the system prompt only when the `read` tool is on (pi:
//! `selectedTools.includes("read")`; omp: a tool that reads `skill://`), so a selection that
//! loads skills needs `read` in a `--tools` allow-list.

use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::protocol::argv::Flavor;
use crate::protocol::opts::{wrong, Opts};
use crate::protocol::version::Version;

/// The first pi with `--skill <path>` (and without `--skills <patterns>`, which older pi
/// parses but does not apply).
pub const PI_SKILL_PATHS: Version = Version::new(0, 50, 0);

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selection {
    /// The agent's own discovery: no flag.
    All,
    /// No skills: `--no-skills`.
    None,
    /// Only these: names (glob patterns) for omp, paths (an entry with a `/`) for pi from
    /// 0.50; older pi has no flag for it. Empty: none.
    Only(Vec<String>),
}

/// The flags for a selection, and whether the agent needs `read` among its tools.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillFlags {
    pub flags: Vec<String>,
    pub needs_read: bool,
}

impl Selection {
    /// `"all"`, `"none"` or an array of non-empty strings; `what` names the value in errors.
    pub fn parse(v: &Value, what: &str) -> Result<Selection> {
        let wrong = || Error::invalid(format!("{what} must be \"all\", \"none\" or an array of skill names or paths"));
        match v {
            Value::String(s) if s == "all" => Ok(Selection::All),
            Value::String(s) if s == "none" => Ok(Selection::None),
            Value::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    let s = item.as_str().ok_or_else(wrong)?;
                    if s.trim().is_empty() {
                        return Err(Error::invalid(format!("{what}: a skill name or path must not be empty")));
                    }
                    out.push(s.to_string());
                }
                Ok(Selection::Only(out))
            }
            _ => Err(wrong()),
        }
    }

    /// The flags for `flavor` at `version` (None: the newest behaviour).
    pub fn flags(&self, flavor: Flavor, version: Option<Version>) -> Result<SkillFlags> {
        let entries = match self {
            Selection::All => return Ok(SkillFlags { flags: Vec::new(), needs_read: true }),
            Selection::None => return Ok(SkillFlags { flags: vec!["--no-skills".into()], needs_read: false }),
            Selection::Only(e) if e.is_empty() => return Ok(SkillFlags { flags: vec!["--no-skills".into()], needs_read: false }),
            Selection::Only(e) => e,
        };
        let is_path = |s: &String| s.contains('/');
        let by_path = flavor == Flavor::Pi && version.map_or(true, |v| v >= PI_SKILL_PATHS);
        let agent = match (flavor, version) {
            (_, Some(v)) => format!("{} {v}", flavor.name()),
            (_, None) => format!("{} (the newest)", flavor.name()),
        };
        if flavor == Flavor::Pi && !by_path {
            return Err(Error::invalid(format!(
                "{agent} cannot load a subset of skills: its --skills flag is parsed but not applied (every skill is still \
                 listed), and --skill <path> came with pi 0.50; use \"all\", \"none\", or pi's settings (skills.includeSkills)"
            )));
        }
        let flags = if by_path {
            if let Some(name) = entries.iter().find(|e| !is_path(e)) {
                return Err(Error::invalid(format!(
                    "skill {name:?}: {agent} selects skills by path (--skill <path>, pi 0.50 and later), not by name; give the \
                     skill's directory or SKILL.md path (an entry with a '/')"
                )));
            }
            let mut flags = vec!["--no-skills".to_string()];
            for path in entries {
                flags.push("--skill".into());
                flags.push(path.clone());
            }
            flags
        } else {
            if let Some(path) = entries.iter().find(|e| is_path(e)) {
                return Err(Error::invalid(format!(
                    "skill {path:?}: {agent} selects skills by name (--skills <patterns>) and has no --skill <path>; give skill names"
                )));
            }
            if let Some(bad) = entries.iter().find(|e| e.contains(',')) {
                return Err(Error::invalid(format!("skill {bad:?}: a name must not contain ',' (the list separator)")));
            }
            vec![format!("--skills={}", entries.join(","))]
        };
        Ok(SkillFlags { flags, needs_read: true })
    }
}

/// `omprpc_skills_flags`: `{"flavor","agent_version"?,"skills","tools"?}` →
/// `{"flags","needs_read","tools"}` (`tools`: the allow-list given, with `read` added when
/// needed; null when none was given).
pub fn for_options(map: &Map<String, Value>) -> Result<Value> {
    if let Some(k) = map.keys().find(|k| !["flavor", "agent_version", "skills", "tools"].contains(&k.as_str())) {
        return Err(Error::invalid(format!("unknown skills_flags option \"{k}\"")));
    }
    let o = Opts::new(map);
    let flavor = match o.str("flavor")? {
        Some("omp") => Flavor::Omp,
        Some("pi") => Flavor::Pi,
        _ => return Err(wrong("flavor", "\"omp\" or \"pi\"")),
    };
    let version = match o.str("agent_version")? {
        None => None,
        Some(text) => Some(Version::parse(text).ok_or_else(|| wrong("agent_version", "a version \"X.Y.Z\""))?),
    };
    let selection = Selection::parse(o.get("skills").ok_or_else(|| wrong("skills", "given"))?, "option \"skills\"")?;
    let got = selection.flags(flavor, version)?;
    let tools = o.str_list("tools")?.map(|mut tools| {
        if got.needs_read && !tools.iter().any(|t| t == "read") {
            tools.push("read".into());
        }
        tools
    });
    Ok(json!({"flags": got.flags, "needs_read": got.needs_read, "tools": tools}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(v: Value, flavor: Flavor, version: Option<Version>) -> Result<SkillFlags> {
        Selection::parse(&v, "skills")?.flags(flavor, version)
    }

    #[test]
    fn each_agent_gets_its_own_flags() {
        let new_pi = Some(Version::new(0, 73, 1));
        let old_pi = Some(Version::new(0, 37, 2));
        let omp = Some(Version::new(18, 2, 3));
        assert_eq!(flags(json!("all"), Flavor::Pi, new_pi).unwrap(), SkillFlags { flags: vec![], needs_read: true });
        assert_eq!(flags(json!("none"), Flavor::Omp, omp).unwrap(), SkillFlags { flags: vec!["--no-skills".into()], needs_read: false });
        assert_eq!(flags(json!([]), Flavor::Pi, new_pi).unwrap().flags, ["--no-skills"]);
        assert_eq!(flags(json!(["a", "git-*"]), Flavor::Omp, omp).unwrap().flags, ["--skills=a,git-*"]);
        assert_eq!(flags(json!("none"), Flavor::Pi, old_pi).unwrap().flags, ["--no-skills"]);
        assert_eq!(flags(json!("all"), Flavor::Pi, old_pi).unwrap().flags, Vec::<String>::new());
        let p = flags(json!(["/s/alpha", "./beta/SKILL.md"]), Flavor::Pi, new_pi).unwrap();
        assert_eq!(p, SkillFlags { flags: vec!["--no-skills".into(), "--skill".into(), "/s/alpha".into(), "--skill".into(), "./beta/SKILL.md".into()], needs_read: true });
        assert_eq!(flags(json!(["/s/alpha"]), Flavor::Pi, None).unwrap().flags[0], "--no-skills");
    }

    #[test]
    fn what_an_agent_cannot_express_is_an_error() {
        let e = flags(json!(["alpha"]), Flavor::Pi, Some(Version::new(0, 50, 0))).unwrap_err();
        assert!(e.message.contains("by path"), "{}", e.message);
        assert!(flags(json!(["/s/alpha"]), Flavor::Omp, None).unwrap_err().message.contains("no --skill <path>"));
        for entry in ["/s/alpha", "alpha"] {
            let e = flags(json!([entry]), Flavor::Pi, Some(Version::new(0, 49, 9))).unwrap_err();
            assert!(e.message.contains("pi 0.49.9 cannot load a subset"), "{}", e.message);
        }
        assert!(flags(json!(["a,b"]), Flavor::Omp, None).unwrap_err().message.contains("','"));
        assert!(flags(json!(["", "a"]), Flavor::Omp, None).unwrap_err().message.contains("empty"));
        assert!(flags(json!("some"), Flavor::Omp, None).unwrap_err().message.contains("\"all\", \"none\""));
        assert!(flags(json!([1]), Flavor::Omp, None).is_err());
    }
}
