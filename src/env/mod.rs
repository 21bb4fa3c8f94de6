//! Environment hygiene: a deny-by-default environment for the agent. Only the names a coding
//! agent needs to run (paths, locale, proxies, TLS, node and pi settings) pass, plus exact
//! names the host opts in to (e.g. one API key) — never the rest of the host's secrets.

use std::collections::BTreeMap;
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;

/// Names passed when they start with one of these (case-sensitive, as on POSIX).
pub const ALLOWED_PREFIXES: [&str; 10] = ["PI_", "HTTP_", "HTTPS_", "ALL_PROXY", "NO_PROXY", "SSL_", "NODE_", "XDG_", "LANG", "LC_"];

/// Names passed as they are.
pub const ALLOWED_EXACT: [&str; 16] = [
    "HOME", "PATH", "TERM", "TMPDIR", "TMP", "TEMP", "USER", "LOGNAME", "SHELL", "TZ", "SSH_AUTH_SOCK",
    // curl-style lower-case proxy settings, which node and many tools read as well.
    "http_proxy", "https_proxy", "all_proxy", "no_proxy", "COLORTERM",
];

pub fn allowed(name: &str, opt_in: &[String]) -> bool {
    ALLOWED_EXACT.contains(&name) || ALLOWED_PREFIXES.iter().any(|p| name.starts_with(p)) || opt_in.iter().any(|n| n == name)
}

/// The allowed part of `from` (this process's environment when None), with `opt_in` exact
/// names added to the allow-list.
pub fn build(from: Option<&BTreeMap<String, String>>, opt_in: &[String]) -> BTreeMap<String, String> {
    let source: BTreeMap<String, String> = match from {
        Some(m) => m.clone(),
        None => std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect(),
    };
    source.into_iter().filter(|(k, _)| allowed(k, opt_in)).collect()
}

/// `bytes` random bytes from the kernel, as hex.
pub fn random_hex(bytes: usize) -> io::Result<String> {
    use std::io::Read;
    let mut buf = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut buf)?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// A directory removed when dropped unless `keep` handed it over: what a step that fails
/// half-way leaves behind is nothing (the client's system prompt files, the tool bridge's).
pub struct RemoveDir(pub Option<PathBuf>);

impl RemoveDir {
    pub fn keep(mut self) -> Option<PathBuf> {
        self.0.take()
    }
}

impl Drop for RemoveDir {
    fn drop(&mut self) {
        if let Some(d) = &self.0 {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// A new directory only this user can enter (0700), under the system temp dir.
pub fn private_dir(prefix: &str) -> io::Result<PathBuf> {
    let base = std::env::temp_dir();
    for _ in 0..16 {
        let dir = base.join(format!("{prefix}-{}", random_hex(8)?));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(io::ErrorKind::AlreadyExists, "could not create a private directory"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deny_by_default() {
        let from: BTreeMap<String, String> = [
            "HOME", "PATH", "LANG", "LC_ALL", "PI_CODING_AGENT_DIR", "HTTPS_PROXY", "https_proxy", "NODE_OPTIONS",
            "ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "home", "MY_PATH", "OPENAI_API_KEY",
        ]
        .iter()
        .map(|k| (k.to_string(), "v".to_string()))
        .collect();
        let got: Vec<String> = build(Some(&from), &["OPENAI_API_KEY".into()]).into_keys().collect();
        assert_eq!(
            got,
            ["HOME", "HTTPS_PROXY", "LANG", "LC_ALL", "NODE_OPTIONS", "OPENAI_API_KEY", "PATH", "PI_CODING_AGENT_DIR", "https_proxy"]
        );
        assert!(!allowed("ANTHROPIC_API_KEY_X", &["ANTHROPIC_API_KEY".into()]), "opt-in names are exact");
    }
}
