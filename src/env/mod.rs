//! Environment hygiene: what of the host's environment the agent gets. The allow-list holds
//! the names a coding agent needs to run (paths, locale, proxies, TLS, node and pi settings)
//! and to reach its model (the provider keys pi and omp read, `PROVIDER_KEYS`), plus exact
//! names the host opts in to — never the rest of the host's secrets. It is the C, Go and Node
//! default (`inherit_env` unset or `"allowlist"`; docs/c-api.md#the-agents-environment).

use std::collections::BTreeMap;
use std::io;
#[cfg(unix)]
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::PathBuf;

/// Names passed when they start with one of these (case-sensitive, as on POSIX).
pub const ALLOWED_PREFIXES: [&str; 10] = ["PI_", "HTTP_", "HTTPS_", "ALL_PROXY", "NO_PROXY", "SSL_", "NODE_", "XDG_", "LANG", "LC_"];

/// Names passed as they are.
pub const ALLOWED_EXACT: [&str; 16] = [
    "HOME", "PATH", "TERM", "TMPDIR", "TMP", "TEMP", "USER", "LOGNAME", "SHELL", "TZ", "SSH_AUTH_SOCK",
    // curl-style lower-case proxy settings, which node and many tools read as well.
    "http_proxy", "https_proxy", "all_proxy", "no_proxy", "COLORTERM",
];

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

pub fn allowed(name: &str, opt_in: &[String]) -> bool {
    ALLOWED_EXACT.contains(&name)
        || ALLOWED_PREFIXES.iter().any(|p| name.starts_with(p))
        || PROVIDER_KEYS.binary_search(&name).is_ok()
        || opt_in.iter().any(|n| n == name)
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
#[cfg(unix)]
pub fn random_hex(bytes: usize) -> io::Result<String> {
    use std::io::Read;
    let mut buf = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut buf)?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// `bytes` random bytes from the system's generator (RtlGenRandom, which Windows and Wine
/// both export from advapi32; std's own ProcessPrng is in a DLL Wine 8.0 lacks), as hex.
#[cfg(windows)]
pub fn random_hex(bytes: usize) -> io::Result<String> {
    #[link(name = "advapi32")]
    extern "system" {
        // RtlGenRandom's exported name.
        #[link_name = "SystemFunction036"]
        fn rtl_gen_random(buffer: *mut u8, length: u32) -> u8;
    }
    let mut buf = vec![0u8; bytes];
    for chunk in buf.chunks_mut(u32::MAX as usize) {
        // SAFETY: writes at most `length` bytes into `buffer`: the chunk, valid and ours alone.
        if unsafe { rtl_gen_random(chunk.as_mut_ptr(), chunk.len() as u32) } == 0 {
            return Err(io::Error::other("RtlGenRandom failed"));
        }
    }
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// The error every unported piece returns on Windows; `what` names the piece.
#[cfg(windows)]
pub fn not_ported(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, format!("omprpc on Windows: {what} is not ported yet (docs/windows.md)"))
}

/// `options`, set to create a file only this user may read or write (mode 0600 on Unix; the
/// mode applies to a file the open creates).
#[cfg(unix)]
pub fn private_file(options: &mut std::fs::OpenOptions) -> io::Result<&mut std::fs::OpenOptions> {
    Ok(options.mode(0o600))
}

/// Not ported to Windows yet: an owner-only DACL (docs/windows.md). Refused rather than
/// creating a file that inherits whatever its directory allows.
#[cfg(windows)]
pub fn private_file(_options: &mut std::fs::OpenOptions) -> io::Result<&mut std::fs::OpenOptions> {
    Err(not_ported("creating a private file"))
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
#[cfg(unix)]
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

/// Not ported to Windows yet: an owner-only DACL (docs/windows.md).
#[cfg(windows)]
pub fn private_dir(_prefix: &str) -> io::Result<PathBuf> {
    Err(not_ported("creating a private directory"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deny_by_default() {
        let from: BTreeMap<String, String> = [
            "HOME", "PATH", "LANG", "LC_ALL", "PI_CODING_AGENT_DIR", "HTTPS_PROXY", "https_proxy", "NODE_OPTIONS",
            "ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "home", "MY_PATH", "OPENAI_API_KEY", "MY_SECRET",
            "anthropic_api_key",
        ]
        .iter()
        .map(|k| (k.to_string(), "v".to_string()))
        .collect();
        let got: Vec<String> = build(Some(&from), &["MY_SECRET".into()]).into_keys().collect();
        assert_eq!(
            got,
            [
                "ANTHROPIC_API_KEY", "HOME", "HTTPS_PROXY", "LANG", "LC_ALL", "MY_SECRET", "NODE_OPTIONS", "OPENAI_API_KEY", "PATH",
                "PI_CODING_AGENT_DIR", "https_proxy"
            ]
        );
        assert!(!allowed("MY_SECRET_X", &["MY_SECRET".into()]), "opt-in names are exact");
        assert!(!allowed("ANTHROPIC_API_KEY_X", &[]), "provider keys are exact names");
    }

    #[test]
    fn provider_keys_are_sorted_unique_and_hold_no_account_credentials() {
        // `allowed` binary-searches the table.
        assert!(PROVIDER_KEYS.windows(2).all(|w| w[0] < w[1]), "PROVIDER_KEYS must stay sorted and unique");
        for name in ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY", "COPILOT_GITHUB_TOKEN", "PERPLEXITY_API_KEY"] {
            assert!(allowed(name, &[]), "{name}");
        }
        for name in ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS", "GITHUB_TOKEN", "GH_TOKEN", "GITLAB_TOKEN"] {
            assert!(!allowed(name, &[]), "{name} opens more than a model: only by name");
        }
    }
}
