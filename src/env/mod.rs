//! Environment hygiene: what of the host's environment the agent gets. The allow-list holds
//! the names a coding agent needs to run (paths, locale, proxies, TLS, node and pi settings)
//! and to reach its model (the provider keys pi and omp read, `PROVIDER_KEYS`), plus exact
//! names the host opts in to — never the rest of the host's secrets. It is the C, Go and Node
//! default (`inherit_env` unset or `"allowlist"`; docs/c-api.md#the-agents-environment).
//!
//! On Windows names are case-insensitive (`Path` is `PATH`) and Windows programs need more of
//! them (`WINDOWS_EXACT`): there every table is matched ignoring ASCII case (`Names`).
//!
//! Also here: files and directories only this user can read (`private_file`, `private_dir`)
//! and random tokens (`random_hex`), whose Windows halves are in `windows.rs`.

use std::collections::BTreeMap;
use std::io;
#[cfg(unix)]
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::{owner_of, random_hex};

/// Names passed when they start with one of these (case-sensitive, as on POSIX).
pub const ALLOWED_PREFIXES: [&str; 10] = ["PI_", "HTTP_", "HTTPS_", "ALL_PROXY", "NO_PROXY", "SSL_", "NODE_", "XDG_", "LANG", "LC_"];

/// Names passed as they are.
pub const ALLOWED_EXACT: [&str; 16] = [
    "HOME", "PATH", "TERM", "TMPDIR", "TMP", "TEMP", "USER", "LOGNAME", "SHELL", "TZ", "SSH_AUTH_SOCK",
    // curl-style lower-case proxy settings, which node and many tools read as well.
    "http_proxy", "https_proxy", "all_proxy", "no_proxy", "COLORTERM",
];

/// Names passed as well on Windows, where node, pi and the programs its tools run find the
/// system, the user's directories and each other through them. (`PATH`, `TEMP` and `TMP` are
/// in `ALLOWED_EXACT`; matching ignores case there, so `Path` is `PATH`.)
pub const WINDOWS_EXACT: [&str; 17] = [
    // The Windows directory: Winsock and other system DLLs need it to load; pi finds
    // taskkill.exe, tar.exe and Windows PowerShell under it. `windir` is its older name, which
    // batch files and installers still read.
    "SystemRoot", "windir",
    // The command interpreter: cross-spawn and node's `shell: true` run commands through it.
    "ComSpec",
    // The extensions a command name may omit: cmd, PowerShell and npm's `which`/`isexe`.
    "PATHEXT",
    // The user's home (node's os.homedir(), pi's home directory) and where it lives, which
    // tools read when USERPROFILE is missing (the AWS SDK's home in pi's Bedrock provider).
    "USERPROFILE", "HOMEDRIVE", "HOMEPATH",
    // Per-user settings and caches: npm's global prefix (where `npm install -g` puts pi.cmd)
    // is under APPDATA, its cache under LOCALAPPDATA; pi's Vertex provider reads gcloud's
    // configuration under APPDATA.
    "APPDATA", "LOCALAPPDATA",
    // Where programs are installed: pi looks for Git Bash and PowerShell 7 under these.
    "ProgramFiles", "ProgramFiles(x86)", "CommonProgramFiles", "ProgramData",
    // Machine facts that build scripts and installers read to pick a binary or a job count;
    // `OS` (`Windows_NT`) is how Makefiles and npm scripts tell Windows apart.
    "NUMBER_OF_PROCESSORS", "PROCESSOR_ARCHITECTURE", "OS",
    // The account's name: Windows' USER.
    "USERNAME",
];

/// How environment names compare: exactly (POSIX), or ignoring ASCII case with the Windows
/// names added (Windows, whose environment block ignores case).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Names {
    Posix,
    Windows,
}

impl Names {
    /// This platform's rule.
    pub const HOST: Names = if cfg!(windows) { Names::Windows } else { Names::Posix };

    fn eq(self, a: &str, b: &str) -> bool {
        match self {
            Names::Posix => a == b,
            Names::Windows => a.eq_ignore_ascii_case(b),
        }
    }

    fn starts_with(self, name: &str, prefix: &str) -> bool {
        match self {
            Names::Posix => name.starts_with(prefix),
            Names::Windows => name.as_bytes().get(..prefix.len()).is_some_and(|h| h.eq_ignore_ascii_case(prefix.as_bytes())),
        }
    }
}

/// The names pi and omp read a model or search provider's API key from, so that an agent
/// started with the default environment reaches the provider its user configured. Listed from
/// their source (sorted; one name may serve several providers):
/// - pi 1.6.0: `getApiKeyEnvVars` / `getEnvApiKey` in @earendil-works/pi-ai's
///   `dist/env-api-keys.js` (the Bedrock bearer token and Vertex's `GOOGLE_CLOUD_API_KEY`
///   included);
/// - omp 18.2.3: `getEnvApiKey` in @oh-my-pi/pi-ai's `src/stream.ts`, whose names come from
///   the catalog's provider entries (`envVars` in @oh-my-pi/pi-catalog's
///   `src/compat/rules.json`), the auth rules' `env.vars` there (web search providers too),
///   `LEGACY_ENV_KEYS` in `src/stream.ts` and the Foundry hook in `src/registry/hooks/env.ts`.
///
/// Left out on purpose, though an agent reads them: credentials that open more than a model —
/// a cloud account (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`,
/// `AWS_PROFILE`, `GOOGLE_APPLICATION_CREDENTIALS`: Bedrock and Vertex) or a code host
/// (`GITHUB_TOKEN`, `GH_TOKEN`, `GITLAB_TOKEN`) — and OAuth client settings, which are no
/// keys. A host that wants them passes them by name (`env_passthrough`).
pub const PROVIDER_KEYS: &[&str] = &[
    "ABLITERATION_API_KEY", "ABLIT_KEY", "AIAND_API_KEY", "AIMLAPI_API_KEY", "AI_GATEWAY_API_KEY",
    "ALIBABA_CODING_PLAN_API_KEY", "ALIBABA_TOKEN_PLAN_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_FOUNDRY_API_KEY", "ANTHROPIC_OAUTH_TOKEN", "ANT_LING_API_KEY", "AWS_BEARER_TOKEN_BEDROCK",
    "AZURE_OPENAI_API_KEY", "BAILIAN_TOKEN_PLAN_API_KEY", "BASETEN_API_KEY", "BRAVE_API_KEY", "CEREBRAS_API_KEY",
    "CHARM_HYPER_API_KEY", "CLINE_API_KEY", "CLOUDFLARE_AI_GATEWAY_API_KEY", "CLOUDFLARE_API_KEY",
    "COMMANDCODE_API_KEY", "COMMAND_CODE_API_KEY", "COPILOT_GITHUB_TOKEN", "COREWEAVE_API_KEY",
    "CURSOR_ACCESS_TOKEN", "DEEPINFRA_API_KEY", "DEEPSEEK_API_KEY", "DEVIN_API_KEY", "EXA_API_KEY",
    "FIRECRAWL_API_KEY", "FIREPASS_API_KEY", "FIREWORKS_API_KEY", "FUGU_API_KEY", "GEMINI_API_KEY",
    "GMI_API_KEY", "GOOGLE_CLOUD_API_KEY", "GROQ_API_KEY", "HF_TOKEN", "HUGGINGFACE_HUB_TOKEN", "HYPER_API_KEY",
    "JINA_API_KEY", "KAGI_API_KEY", "KILO_API_KEY", "KIMI_API_KEY", "LITELLM_API_KEY", "LLAMA_CPP_API_KEY",
    "LM_STUDIO_API_KEY", "META_API_KEY", "MINIMAX_API_KEY", "MINIMAX_CN_API_KEY", "MINIMAX_CODE_API_KEY",
    "MINIMAX_CODE_CN_API_KEY", "MISTRAL_API_KEY", "MODEL_API_KEY", "MOONSHOT_API_KEY", "NANO_GPT_API_KEY",
    "NOVITA_API_KEY", "NVIDIA_API_KEY", "OLLAMA_API_KEY", "OLLAMA_CLOUD_API_KEY", "OPENAI_API_KEY",
    "OPENAI_CODEX_OAUTH_TOKEN", "OPENCODE_API_KEY", "OPENROUTER_API_KEY", "PARALLEL_API_KEY",
    "PERPLEXITY_API_KEY", "QIANFAN_API_KEY", "QWEN_OAUTH_TOKEN", "QWEN_PORTAL_API_KEY",
    "QWEN_TOKEN_PLAN_API_KEY", "QWEN_TOKEN_PLAN_CN_API_KEY", "QWEN_TOKEN_PLAN_INDIVIDUAL_API_KEY",
    "QWEN_TOKEN_PLAN_INDIVIDUAL_CN_API_KEY", "QWEN_TOKEN_PLAN_TEAM_API_KEY", "QWEN_TOKEN_PLAN_TEAM_CN_API_KEY",
    "RADIUS_API_KEY", "SAKANA_API_KEY", "SILICONFLOW_API_KEY", "SILICONFLOW_CN_API_KEY", "SYNTHETIC_API_KEY",
    "TAVILY_API_KEY", "TINYFISH_API_KEY", "TOGETHER_API_KEY", "TYPESAFE_API_KEY", "UMANS_AI_CODING_PLAN_API_KEY",
    "VENICE_API_KEY", "VLLM_API_KEY", "WAFER_SERVERLESS_API_KEY", "WANDB_API_KEY", "XAI_API_KEY",
    "XAI_OAUTH_TOKEN", "XIAOMI_API_KEY", "XIAOMI_TOKEN_PLAN_AMS_API_KEY", "XIAOMI_TOKEN_PLAN_CN_API_KEY",
    "XIAOMI_TOKEN_PLAN_SGP_API_KEY", "YOLO_AUTO_API_KEY", "ZAI_API_KEY", "ZAI_CODING_CN_API_KEY",
    "ZENMUX_API_KEY", "ZHIPU_API_KEY",
];

/// Whether the agent gets `name` by default, `opt_in` being exact names the host added.
pub fn allowed(name: &str, opt_in: &[String]) -> bool {
    allowed_as(Names::HOST, name, opt_in)
}

/// `allowed` under the rule `names` (so that both platforms' rules are tested everywhere).
pub fn allowed_as(names: Names, name: &str, opt_in: &[String]) -> bool {
    let windows: &[&str] = if names == Names::Windows { &WINDOWS_EXACT } else { &[] };
    // PROVIDER_KEYS is upper case (a test says so): a Windows name is looked up upper-cased.
    let key = match names {
        Names::Posix => std::borrow::Cow::Borrowed(name),
        Names::Windows => std::borrow::Cow::Owned(name.to_ascii_uppercase()),
    };
    ALLOWED_EXACT.iter().chain(windows).any(|e| names.eq(name, e))
        || ALLOWED_PREFIXES.iter().any(|p| names.starts_with(name, p))
        || PROVIDER_KEYS.binary_search(&key.as_ref()).is_ok()
        || opt_in.iter().any(|n| names.eq(name, n))
}

/// The allowed part of `from` (this process's environment when None), with `opt_in` exact
/// names added to the allow-list. Names keep the case they had (`Path` stays `Path`).
pub fn build(from: Option<&BTreeMap<String, String>>, opt_in: &[String]) -> BTreeMap<String, String> {
    build_as(Names::HOST, from, opt_in)
}

/// `build` under the rule `names`.
pub fn build_as(names: Names, from: Option<&BTreeMap<String, String>>, opt_in: &[String]) -> BTreeMap<String, String> {
    let source: BTreeMap<String, String> = match from {
        Some(m) => m.clone(),
        None => std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect(),
    };
    source.into_iter().filter(|(k, _)| allowed_as(names, k, opt_in)).collect()
}

/// `bytes` random bytes from the kernel, as hex.
#[cfg(unix)]
pub fn random_hex(bytes: usize) -> io::Result<String> {
    use std::io::Read;
    let mut buf = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut buf)?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// What `private_file` does when the file exists already.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Existing {
    /// Fail with AlreadyExists, leaving it as it was (a file in our own private directory
    /// that is there already is not ours to overwrite).
    Refuse,
    /// Empty it and make it private too: a recording or a provider file at a path the host
    /// chose, whose new content is as private as a new file's.
    Truncate,
}

/// Creates `path` for writing, readable and writable only by this user from its creation:
/// mode 0600 on Unix, a protected owner-only DACL on Windows (src/env/windows.rs). An existing
/// regular file is refused or truncated and narrowed as `existing` says; a device or a FIFO
/// (`/dev/null`, `NUL`) is opened as it is.
#[cfg(unix)]
pub fn private_file(path: &Path, existing: Existing) -> io::Result<std::fs::File> {
    use std::os::unix::fs::PermissionsExt;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).mode(0o600);
    match existing {
        Existing::Refuse => options.create_new(true),
        Existing::Truncate => options.create(true).truncate(true),
    };
    let file = options.open(path)?;
    // An existing file keeps its mode through open(): narrow it, the content is private.
    // (Not a device or a FIFO: those are someone else's to set.)
    if existing == Existing::Truncate {
        let meta = file.metadata()?;
        if meta.is_file() && meta.permissions().mode() & 0o077 != 0 {
            file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        }
    }
    Ok(file)
}

#[cfg(windows)]
pub use windows::private_file;

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

/// Who owns a file or directory: a uid on Unix, a SID (in its string form) on Windows. Two
/// are equal when the same user owns both.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner(OwnerId);
#[cfg(unix)]
type OwnerId = u32;
#[cfg(windows)]
type OwnerId = String;

/// Who owns the file or directory at `path` (a final symbolic link itself, not its target).
#[cfg(unix)]
pub fn owner_of(path: &Path) -> io::Result<Owner> {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path).map(|m| Owner(m.uid()))
}

/// A new directory only this user can enter, under the system temp dir: mode 0700 on Unix;
/// on Windows a protected owner-only DACL that what is created inside inherits.
pub fn private_dir(prefix: &str) -> io::Result<PathBuf> {
    private_dir_in(&std::env::temp_dir(), prefix, || random_hex(8))
}

/// `private_dir`'s loop: `<base>/<prefix>-<name>`, a new random name while the one tried
/// exists (another process's, or a collision), at most 16 times.
fn private_dir_in(base: &Path, prefix: &str, mut name: impl FnMut() -> io::Result<String>) -> io::Result<PathBuf> {
    for _ in 0..16 {
        let dir = base.join(format!("{prefix}-{}", name()?));
        match create_private_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(io::ErrorKind::AlreadyExists, "could not create a private directory"))
}

#[cfg(unix)]
fn create_private_dir(path: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new().mode(0o700).create(path)
}

#[cfg(windows)]
use windows::create_private_dir;

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(names: &[&str]) -> BTreeMap<String, String> {
        names.iter().map(|k| (k.to_string(), "v".to_string())).collect()
    }

    #[test]
    fn deny_by_default() {
        let from = env_of(&[
            "HOME", "PATH", "LANG", "LC_ALL", "PI_CODING_AGENT_DIR", "HTTPS_PROXY", "https_proxy", "NODE_OPTIONS",
            "ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "home", "MY_PATH", "OPENAI_API_KEY", "MY_SECRET",
            "anthropic_api_key", "SystemRoot", "APPDATA",
        ]);
        let got: Vec<String> = build_as(Names::Posix, Some(&from), &["MY_SECRET".into()]).into_keys().collect();
        assert_eq!(
            got,
            [
                "ANTHROPIC_API_KEY", "HOME", "HTTPS_PROXY", "LANG", "LC_ALL", "MY_SECRET", "NODE_OPTIONS", "OPENAI_API_KEY", "PATH",
                "PI_CODING_AGENT_DIR", "https_proxy"
            ],
            "names are exact and Windows' own names are not passed on POSIX"
        );
        assert!(!allowed_as(Names::Posix, "MY_SECRET_X", &["MY_SECRET".into()]), "opt-in names are exact");
        assert!(!allowed_as(Names::Posix, "my_secret", &["MY_SECRET".into()]), "and case-sensitive");
        assert!(!allowed_as(Names::Posix, "ANTHROPIC_API_KEY_X", &[]), "provider keys are exact names");
        assert!(!allowed_as(Names::Posix, "node_options", &[]), "prefixes are case-sensitive");
    }

    #[test]
    fn windows_names_ignore_case_and_add_what_windows_programs_need() {
        let from = env_of(&[
            "Path", "SystemRoot", "windir", "ComSpec", "PATHEXT", "USERPROFILE", "APPDATA", "LOCALAPPDATA", "ProgramFiles",
            "ProgramFiles(x86)", "OS", "Temp", "anthropic_api_key", "Node_Options", "https_proxy", "Pi_Coding_Agent_Dir",
            "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "MY_PATH", "My_Secret", "COMPUTERNAME", "SESSIONNAME",
        ]);
        let got: Vec<String> = build_as(Names::Windows, Some(&from), &["MY_SECRET".into()]).into_keys().collect();
        assert_eq!(
            got,
            [
                "APPDATA", "ComSpec", "LOCALAPPDATA", "My_Secret", "Node_Options", "OS", "PATHEXT", "Path", "Pi_Coding_Agent_Dir",
                "ProgramFiles", "ProgramFiles(x86)", "SystemRoot", "Temp", "USERPROFILE", "anthropic_api_key", "https_proxy", "windir"
            ],
            "names keep their case; the account and code-host credentials and unknown names stay out"
        );
        assert!(allowed_as(Names::Windows, "PATH", &[]) && allowed_as(Names::Windows, "path", &[]));
        assert!(allowed_as(Names::Windows, "systemroot", &[]) && allowed_as(Names::Windows, "SYSTEMROOT", &[]));
        assert!(!allowed_as(Names::Windows, "SystemRoot2", &[]), "exact names stay exact, only the case is ignored");
        assert!(!allowed_as(Names::Windows, "anthropic_api_key_x", &[]));
        assert!(!allowed_as(Names::Windows, "aws_profile", &[]) && allowed_as(Names::Windows, "aws_profile", &["AWS_PROFILE".into()]));
        assert!(!allowed_as(Names::Windows, "PI", &[]) && !allowed_as(Names::Windows, "é", &[]), "shorter than a prefix, or not ASCII");
    }

    #[test]
    fn the_host_rule_is_the_platforms() {
        assert_eq!(Names::HOST, if cfg!(windows) { Names::Windows } else { Names::Posix });
        assert_eq!(allowed("path", &[]), cfg!(windows));
        assert_eq!(allowed("SystemRoot", &[]), cfg!(windows));
        assert!(allowed("PATH", &[]));
    }

    #[test]
    fn the_name_tables_are_sound() {
        // `allowed` binary-searches PROVIDER_KEYS, with a Windows name upper-cased first.
        assert!(PROVIDER_KEYS.windows(2).all(|w| w[0] < w[1]), "PROVIDER_KEYS must stay sorted and unique");
        assert!(PROVIDER_KEYS.iter().all(|k| *k == k.to_ascii_uppercase()), "PROVIDER_KEYS must stay upper case");
        // One table per fact: a Windows name that POSIX has (in any case) belongs there only.
        for w in WINDOWS_EXACT {
            assert!(!allowed_as(Names::Posix, &w.to_ascii_uppercase(), &[]) && !allowed_as(Names::Posix, w, &[]), "{w}");
            assert_eq!(WINDOWS_EXACT.iter().filter(|x| x.eq_ignore_ascii_case(w)).count(), 1, "{w}");
        }
    }

    #[test]
    fn provider_keys_are_passed_and_account_credentials_are_not() {
        for names in [Names::Posix, Names::Windows] {
            for name in ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY", "COPILOT_GITHUB_TOKEN", "PERPLEXITY_API_KEY"] {
                assert!(allowed_as(names, name, &[]), "{name}");
            }
            for name in ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS", "GITHUB_TOKEN", "GH_TOKEN", "GITLAB_TOKEN"] {
                assert!(!allowed_as(names, name, &[]), "{name} opens more than a model: only by name");
            }
        }
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("omprpc-env-test-{name}-{}", random_hex(6).unwrap()));
        std::fs::create_dir(&dir).unwrap();
        dir
    }

    #[test]
    fn private_dir_takes_another_name_while_one_is_taken() {
        let base = scratch("retry");
        std::fs::create_dir(base.join("p-taken")).unwrap();
        std::fs::write(base.join("p-file"), "").unwrap();
        let mut names = ["taken", "file", "free"].into_iter().map(|n| Ok(n.to_string()));
        let dir = private_dir_in(&base, "p", || names.next().unwrap()).unwrap();
        assert_eq!(dir, base.join("p-free"));
        assert!(dir.is_dir());
        // Every name taken: a clear error after 16 tries, nothing made.
        let mut tries = 0;
        let err = private_dir_in(&base, "p", || {
            tries += 1;
            Ok("taken".to_string())
        })
        .unwrap_err();
        assert_eq!((err.kind(), tries), (io::ErrorKind::AlreadyExists, 16), "{err}");
        // Another failure ends the loop at once, and so does a failing name source.
        let err = private_dir_in(&base.join("missing"), "p", || Ok("x".to_string())).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound, "{err}");
        let err = private_dir_in(&base, "p", || Err(io::Error::other("no randomness"))).unwrap_err();
        assert_eq!(err.to_string(), "no randomness");
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_private_file_is_refused_over_an_existing_one_and_truncated_when_asked() {
        use std::io::Write;
        let dir = scratch("file");
        let path = dir.join("a.md");
        private_file(&path, Existing::Refuse).unwrap().write_all(b"first").unwrap();
        let err = private_file(&path, Existing::Refuse).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists, "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "first", "left as it was");
        private_file(&path, Existing::Truncate).unwrap().write_all(b"2nd").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "2nd");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn private_files_and_dirs_are_0600_and_0700_and_truncate_narrows() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let dir = private_dir("omprpc-env-test").unwrap();
        assert_eq!(mode(&dir), 0o700);
        let new = dir.join("new");
        private_file(&new, Existing::Refuse).unwrap();
        assert_eq!(mode(&new), 0o600);
        let old = dir.join("old");
        std::fs::write(&old, "x").unwrap();
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).unwrap();
        private_file(&old, Existing::Truncate).unwrap();
        assert_eq!(mode(&old), 0o600, "an existing file is narrowed");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
