//! Which program a spawn runs on Windows: argv[0] found the way Windows finds commands
//! (`PATHEXT`, the child's `PATH`), and npm's `.cmd` shims seen through.
//!
//! npm installs a package's command (pi's `pi`) as `pi.cmd`, a batch file that runs
//! `node.exe` with the package's script. A batch file runs through `cmd.exe`, whose parsing of
//! its command line no quoting makes safe for arbitrary text (a prompt in argv could run
//! commands: the 2024 "BatBadBut" advisories, CVE-2024-24576 for Rust's std). So an npm shim
//! is resolved to what it runs, and any other `.bat` or `.cmd` is refused with an error that
//! says why. The current directory is not searched (as std does not, unlike `cmd.exe`): a
//! repository the agent is started in cannot plant a `pi.exe`.
//!
//! This replaces the Unix `resolve_executable`; `windows.rs` calls `resolve` when it spawns.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

use super::SpawnSpec;

/// What to run for a spec: `exe` with `prefix_args`, then `spec.argv[1..]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    pub exe: PathBuf,
    pub prefix_args: Vec<String>,
    /// The file argv[0] named (the shim itself for an npm shim): what `program_path` reports,
    /// so the version probe's cache sees a reinstall (npm rewrites the shim each time).
    pub found: PathBuf,
}

/// The default `PATHEXT` of Windows (cmd.exe's own, before `.VBS` and the like were added).
const DEFAULT_PATHEXT: &str = ".COM;.EXE;.BAT;.CMD";

/// At most this much of a batch file is read to see whether it is an npm shim (npm's are
/// about 500 bytes).
const SHIM_MAX: u64 = 16 * 1024;

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

/// The value of `name` (ignoring ASCII case, as Windows does) in the child's environment: the
/// last setting in `spec.env`, else ours.
fn child_var(spec: &SpawnSpec, name: &str) -> Option<OsString> {
    spec.env.iter().rev().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| OsString::from(v)).or_else(|| std::env::var_os(name))
}

/// The extensions of a `PATHEXT` value, in order; the default when it names none.
fn extensions(pathext: Option<&OsString>) -> Vec<String> {
    let list = pathext.and_then(|v| v.to_str()).unwrap_or(DEFAULT_PATHEXT);
    let exts: Vec<String> = list.split(';').map(str::trim).filter(|e| e.len() > 1 && e.starts_with('.')).map(String::from).collect();
    if exts.is_empty() {
        extensions(None)
    } else {
        exts
    }
}

/// A name Windows takes as a path rather than a command to search for.
fn is_path(name: &str) -> bool {
    let b = name.as_bytes();
    name.contains(['\\', '/']) || (b.len() >= 2 && b[1] == b':' && b[0].is_ascii_alphabetic())
}

/// The files `base` may name: itself when it has an extension, else itself with each of `exts`.
fn candidates(base: &Path, exts: &[String]) -> Vec<PathBuf> {
    if base.extension().is_some() {
        return vec![base.to_path_buf()];
    }
    exts.iter()
        .map(|e| {
            let mut p = base.as_os_str().to_owned();
            p.push(e);
            PathBuf::from(p)
        })
        .collect()
}

/// The first file `name` names: as a path, or in the directories of `path` in order.
fn find(name: &str, path: Option<&OsString>, exts: &[String]) -> io::Result<PathBuf> {
    if is_path(name) {
        return candidates(Path::new(name), exts)
            .into_iter()
            .find(|c| c.is_file())
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("executable '{name}' was not found")));
    }
    let dirs = path.map(|p| std::env::split_paths(p).filter(|d| !d.as_os_str().is_empty()).collect::<Vec<_>>()).unwrap_or_default();
    dirs.iter()
        .flat_map(|d| candidates(&d.join(name), exts))
        .find(|c| c.is_file())
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("executable '{name}' was not found on PATH")))
}

/// Whether `file` is a batch file, which Windows runs through cmd.exe. Decided on the name
/// of the file itself (symbolic links followed, 8.3 names expanded), and on the name given
/// with the trailing dots and spaces that Windows drops (`pi.cmd.` opens `pi.cmd`).
fn is_batch(file: &Path) -> io::Result<bool> {
    let batch = |p: &Path| {
        let name = p.file_name().map(|n| n.to_string_lossy().trim_end_matches(['.', ' ']).to_ascii_lowercase()).unwrap_or_default();
        name.ends_with(".bat") || name.ends_with(".cmd")
    };
    Ok(batch(file) || batch(&std::fs::canonicalize(file)?))
}

/// The ways npm's cmd-shim (npm 7 to 11 at least) writes a `.cmd`, read from its text.
#[derive(Debug, PartialEq, Eq)]
enum Shim {
    /// A script with a `#!` line: `prog` (`node`) beside the shim, else on PATH, with the
    /// line's `args`, then `script` (relative to the shim's directory), then the arguments.
    Interpreted { prog: String, args: Vec<String>, script: String },
    /// A bin without a `#!` line, run as it is.
    Direct { target: String },
}

/// The lines every shim starts with: `%dp0%` becomes the shim's directory.
const SHIM_HEAD: [&str; 8] = ["@ECHO off", "GOTO start", ":find_dp0", "SET dp0=%~dp0", "EXIT /b", ":start", "SETLOCAL", "CALL :find_dp0"];

/// How the `Interpreted` form's last line starts, up to the program's arguments.
const SHIM_RUN: &str = "endLocal & goto #_undefined_# 2>NUL || title %COMSPEC% & \"%_prog%\" ";

/// Reads an npm shim; None for any other text (another batch file, or a shim of a form this
/// does not know, e.g. one that sets variables). Strict on purpose: what is not recognised
/// is refused, never guessed at.
fn parse_shim(text: &str) -> Option<Shim> {
    let text = text.strip_suffix('\n')?;
    let lines: Vec<&str> = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
    let rest = lines.strip_prefix(&SHIM_HEAD[..])?;
    // The script or program, relative to the shim's directory. Inside quotes only `%`
    // (expansion) and `"` mean something to cmd; a `:` would make the joined path another
    // drive's. npm writes none of these.
    let target = |t: &str| -> Option<String> {
        (!t.is_empty() && !t.contains(['"', '%', ':']) && !t.chars().any(char::is_control)).then(|| t.to_string())
    };
    match rest {
        [run] => {
            let quoted = run.strip_suffix(" %*")?.trim_end();
            let target = target(quoted.strip_prefix("\"%dp0%\\")?.strip_suffix('"')?)?;
            Some(Shim::Direct { target })
        }
        ["", if_exist, branches @ .., "", run] => {
            let prog = if_exist.strip_prefix("IF EXIST \"%dp0%\\")?.strip_suffix(".exe\" (")?;
            let plain = !prog.is_empty() && prog.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
            let expected = [
                format!("  SET \"_prog=%dp0%\\{prog}.exe\""),
                ") ELSE (".to_string(),
                format!("  SET \"_prog={prog}\""),
                "  SET PATHEXT=%PATHEXT:;.JS;=;%".to_string(),
                ")".to_string(),
            ];
            if !plain || !branches.iter().copied().eq(expected.iter().map(String::as_str)) {
                return None;
            }
            let (args, script) = run.strip_prefix(SHIM_RUN)?.strip_suffix("\" %*")?.split_once("\"%dp0%\\")?;
            // The `#!` line's own arguments (`--no-warnings`): only plain words, which cmd and
            // the MSVC rules pass as they are.
            let args: Vec<String> = args.split_whitespace().map(String::from).collect();
            if !args.iter().all(|a| a.chars().all(|c| c.is_ascii_alphanumeric() || "-_=.,:/+@".contains(c))) {
                return None;
            }
            Some(Shim::Interpreted { prog: prog.to_string(), args, script: target(script)? })
        }
        _ => None,
    }
}

/// A path as the String an argument must be.
fn utf8(p: PathBuf) -> io::Result<String> {
    p.into_os_string().into_string().map_err(|p| io::Error::new(io::ErrorKind::InvalidData, format!("{p:?} is not valid Unicode")))
}

fn refused_batch(name: &str, file: &Path, why: &str) -> io::Error {
    invalid(format!(
        "cannot start '{name}' ({}): {why}. A batch file runs through cmd.exe, which cannot be given \
         arguments such as a prompt safely (BatBadBut, CVE-2024-24576); start the program it runs instead \
         (for a Node.js tool: node.exe and its script)",
        file.display()
    ))
}

/// What `spec` runs: its argv[0] found on the child's `PATH` (the `Path`/`PATH` in
/// `spec.env`, else ours) with the child's `PATHEXT` (else ours, else `.COM;.EXE;.BAT;.CMD`),
/// or as a path when it has a `\`, a `/` or a drive; an npm shim resolved to the program and
/// script it runs; any other batch file refused. A missing program is NotFound.
pub fn resolve(spec: &SpawnSpec) -> io::Result<Resolved> {
    let name = spec.argv.first().ok_or_else(|| invalid("argv is empty".into()))?;
    if name.is_empty() {
        return Err(invalid("the executable's name is empty".into()));
    }
    let path = child_var(spec, "PATH");
    let pathext = child_var(spec, "PATHEXT");
    let found = find(name, path.as_ref(), &extensions(pathext.as_ref()))?;
    if !is_batch(&found)? {
        return Ok(Resolved { exe: found.clone(), prefix_args: Vec::new(), found });
    }
    let mut text = String::new();
    {
        use std::io::Read;
        let file = std::fs::File::open(&found)?;
        if file.take(SHIM_MAX + 1).read_to_string(&mut text).is_err() || text.len() as u64 > SHIM_MAX {
            return Err(refused_batch(name, &found, "it is a batch file, and not an npm shim"));
        }
    }
    let shim = parse_shim(&text).ok_or_else(|| refused_batch(name, &found, "it is a batch file, and not an npm shim"))?;
    // `%dp0%`: the shim's directory, made absolute so the script is found from the agent's
    // working directory too.
    let dir = found.parent().map(Path::to_path_buf).unwrap_or_default();
    let dir = if dir.is_absolute() { dir } else { std::env::current_dir()?.join(dir) };
    let beside = |rel: &str| dir.join(rel);
    match shim {
        Shim::Direct { target } => {
            let exe = beside(&target);
            if !exe.is_file() {
                return Err(io::Error::new(io::ErrorKind::NotFound, format!("the npm shim {} runs {}, which does not exist", found.display(), exe.display())));
            }
            if is_batch(&exe)? {
                return Err(refused_batch(name, &exe, "the npm shim runs a batch file"));
            }
            Ok(Resolved { exe, prefix_args: Vec::new(), found })
        }
        Shim::Interpreted { prog, args, script } => {
            let script = beside(&script);
            if !script.is_file() {
                return Err(io::Error::new(io::ErrorKind::NotFound, format!("the npm shim {} runs {}, which does not exist", found.display(), script.display())));
            }
            // As the shim does: `<prog>.exe` beside it, else `<prog>` on PATH with `.JS` left
            // out of PATHEXT (so `node` is not node.js).
            let local = beside(&format!("{prog}.exe"));
            let exe = if local.is_file() {
                local
            } else {
                let exts: Vec<String> = extensions(pathext.as_ref()).into_iter().filter(|e| !e.eq_ignore_ascii_case(".js")).collect();
                find(&prog, path.as_ref(), &exts).map_err(|e| {
                    io::Error::new(e.kind(), format!("the npm shim {} runs '{prog}', and {e}", found.display()))
                })?
            };
            if is_batch(&exe)? {
                return Err(refused_batch(&prog, &exe, &format!("the npm shim {} runs it, and it is a batch file", found.display())));
            }
            let mut prefix_args = args;
            prefix_args.push(utf8(script)?);
            Ok(Resolved { exe, prefix_args, found })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `.cmd` for pi 1.6.0 in an npm global prefix on Windows (`<prefix>\pi.cmd`, the
    /// package under `<prefix>\node_modules`; its `bin` `pi` is `dist/bundle/cli.js`, whose
    /// first line is `#!/usr/bin/env node`), as written by the cmd-shim 8.0.0 of npm 11.19,
    /// CR LF line ends and all.
    const PI_CMD: &str = "@ECHO off\r\nGOTO start\r\n:find_dp0\r\nSET dp0=%~dp0\r\nEXIT /b\r\n:start\r\nSETLOCAL\r\nCALL :find_dp0\r\n\r\n\
IF EXIST \"%dp0%\\node.exe\" (\r\n  SET \"_prog=%dp0%\\node.exe\"\r\n) ELSE (\r\n  SET \"_prog=node\"\r\n  SET PATHEXT=%PATHEXT:;.JS;=;%\r\n)\r\n\r\n\
endLocal & goto #_undefined_# 2>NUL || title %COMSPEC% & \"%_prog%\"  \"%dp0%\\node_modules\\@earendil-works\\pi-coding-agent\\dist\\bundle\\cli.js\" %*\r\n";

    const PI_SCRIPT: &str = r"node_modules\@earendil-works\pi-coding-agent\dist\bundle\cli.js";

    /// A scratch directory under the temp dir, removed when dropped.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new() -> Scratch {
            let dir = std::env::temp_dir().join(format!("omprpc-path-test-{}", crate::env::random_hex(6).unwrap()));
            std::fs::create_dir(&dir).unwrap();
            Scratch(dir)
        }

        /// Creates `rel` (and its directories) holding `text`; its full path.
        fn file(&self, rel: &str, text: &str) -> PathBuf {
            let p = self.0.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, text).unwrap();
            p
        }

        fn dir(&self, rel: &str) -> String {
            let p = self.0.join(rel);
            std::fs::create_dir_all(&p).unwrap();
            p.to_str().unwrap().to_string()
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// Paths compared as Windows does, ignoring case (a name found with PATHEXT's `.EXE`
    /// names the file `node.exe`).
    fn same(a: &Path, b: &Path) -> bool {
        a.to_string_lossy().to_lowercase() == b.to_string_lossy().to_lowercase()
    }

    fn spec(argv0: &str, env: &[(&str, &str)]) -> SpawnSpec {
        SpawnSpec {
            argv: vec![argv0.to_string(), "--mode".into(), "rpc".into()],
            env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            ..SpawnSpec::default()
        }
    }

    /// An npm global prefix holding pi: the shim, the script, and node.exe beside it or not.
    fn npm_prefix(s: &Scratch, rel: &str, with_node: bool) -> String {
        let dir = s.dir(rel);
        s.file(&format!("{rel}\\pi.cmd"), PI_CMD);
        s.file(&format!("{rel}\\pi"), "#!/bin/sh\n"); // npm writes these two as well
        s.file(&format!("{rel}\\pi.ps1"), "#!/usr/bin/env pwsh\n");
        s.file(&format!("{rel}\\{PI_SCRIPT}"), "#!/usr/bin/env node\n");
        if with_node {
            s.file(&format!("{rel}\\node.exe"), "MZ");
        }
        dir
    }

    #[test]
    fn an_npm_shim_runs_the_node_exe_beside_it_with_its_script() {
        let s = Scratch::new();
        let npm = npm_prefix(&s, "npm", true);
        let r = resolve(&spec("pi", &[("PATH", &npm)])).unwrap();
        let dir = PathBuf::from(&npm);
        assert_eq!(r.exe, dir.join("node.exe"));
        assert_eq!(r.prefix_args, [dir.join(PI_SCRIPT).to_str().unwrap()]);
        assert!(r.found.to_string_lossy().to_ascii_lowercase().ends_with("pi.cmd"), "{r:?}");
    }

    #[test]
    fn an_npm_shim_without_node_beside_it_runs_node_from_path() {
        let s = Scratch::new();
        let npm = npm_prefix(&s, "npm", false);
        let nodejs = s.dir("nodejs");
        s.file("nodejs\\node.exe", "MZ");
        // node.js, a script, must not be taken for node (the shim drops .JS from PATHEXT).
        let js_first = s.dir("scripts");
        s.file("scripts\\node.js", "");
        let path = format!("{npm};{js_first};{nodejs}");
        let r = resolve(&spec("pi", &[("Path", &path), ("PATHEXT", ".COM;.EXE;.BAT;.CMD;.JS")])).unwrap();
        assert!(same(&r.exe, &PathBuf::from(&nodejs).join("node.exe")), "{r:?}");
        assert_eq!(r.prefix_args, [PathBuf::from(&npm).join(PI_SCRIPT).to_str().unwrap()]);
        // No node at all: NotFound, saying which shim wanted it.
        let err = resolve(&spec("pi", &[("PATH", &npm)])).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound, "{err}");
        assert!(err.to_string().contains("runs 'node'") && err.to_string().contains("pi.cmd"), "{err}");
    }

    #[test]
    fn a_shim_named_by_path_and_relative_to_the_working_directory_gives_an_absolute_script() {
        let s = Scratch::new();
        let npm = npm_prefix(&s, "npm", true);
        let by_path = resolve(&spec(&format!("{npm}\\pi"), &[("PATH", "")])).unwrap();
        assert_eq!(by_path.exe, PathBuf::from(&npm).join("node.exe"));
        let explicit = resolve(&spec(&format!("{npm}/pi.CMD"), &[])).unwrap();
        assert_eq!(explicit.prefix_args, by_path.prefix_args);
        assert!(Path::new(&by_path.prefix_args[0]).is_absolute());
    }

    #[test]
    fn a_shim_with_arguments_on_its_hash_bang_line_passes_them_before_the_script() {
        let s = Scratch::new();
        let text = PI_CMD.replace("\"%_prog%\"  \"", "\"%_prog%\" --no-warnings \"");
        s.file("bin\\tool.cmd", &text);
        s.file(&format!("bin\\{PI_SCRIPT}"), "");
        s.file("bin\\node.exe", "MZ");
        let bin = s.0.join("bin");
        let r = resolve(&spec("tool", &[("PATH", bin.to_str().unwrap())])).unwrap();
        assert_eq!(r.prefix_args, ["--no-warnings".to_string(), bin.join(PI_SCRIPT).to_str().unwrap().to_string()]);
    }

    #[test]
    fn a_shim_for_a_bin_without_hash_bang_runs_it_and_one_for_a_batch_file_is_refused() {
        let s = Scratch::new();
        let head = SHIM_HEAD.join("\r\n");
        s.file("bin\\tool.cmd", &format!("{head}\r\n\"%dp0%\\..\\pkg\\tool.exe\"   %*\r\n"));
        s.file("pkg\\tool.exe", "MZ");
        let bin = s.dir("bin");
        let r = resolve(&spec("tool", &[("PATH", &bin)])).unwrap();
        assert_eq!(r.exe, PathBuf::from(&bin).join("..\\pkg\\tool.exe"));
        assert!(r.prefix_args.is_empty());
        s.file("bin\\other.cmd", &format!("{head}\r\n\"%dp0%\\..\\pkg\\other.bat\"   %*\r\n"));
        s.file("pkg\\other.bat", "@echo %*\r\n");
        let err = resolve(&spec("other", &[("PATH", &bin)])).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
    }

    #[test]
    fn other_batch_files_are_refused_saying_why() {
        let s = Scratch::new();
        let bin = s.dir("bin");
        s.file("bin\\agent.bat", "@echo off\r\nnode \"%~dp0\\agent.js\" %*\r\n");
        for name in ["agent", "agent.bat", "AGENT.BAT", &format!("{bin}\\agent.bat."), &format!("{bin}\\agent.bat  ")] {
            let err = resolve(&spec(name, &[("PATH", &bin)])).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{name}: {err}");
            let msg = err.to_string();
            assert!(msg.contains("not an npm shim") && msg.contains("cmd.exe") && msg.contains("BatBadBut"), "{msg}");
        }
        // A shim changed by hand, or one that sets variables, is not one this can read.
        for (what, text) in [
            ("an extra command", PI_CMD.replace("SETLOCAL\r\n", "SETLOCAL\r\ncalc.exe\r\n")),
            ("variables", PI_CMD.replace("CALL :find_dp0\r\n", "CALL :find_dp0\r\n@SET FOO=bar\r\n")),
            ("a variable in the script", PI_CMD.replace("cli.js", "%X%.js")),
            ("a quoted argument", PI_CMD.replace("\"%_prog%\"  \"", "\"%_prog%\" \"&calc\" \"")),
            ("another program per branch", PI_CMD.replace("SET \"_prog=node\"", "SET \"_prog=calc\"")),
            ("no line end", PI_CMD.trim_end().to_string()),
        ] {
            s.file("bin\\tool.cmd", &text);
            let err = resolve(&spec("tool", &[("PATH", &bin)])).unwrap_err();
            assert!(err.to_string().contains("not an npm shim"), "{what}: {err}");
        }
    }

    #[test]
    fn the_shim_parser_reads_npm_s_forms() {
        assert_eq!(
            parse_shim(PI_CMD),
            Some(Shim::Interpreted { prog: "node".into(), args: vec![], script: PI_SCRIPT.into() })
        );
        // LF line ends (a shim copied through a tool that converts them) read the same.
        assert_eq!(parse_shim(&PI_CMD.replace("\r\n", "\n")), parse_shim(PI_CMD));
        // Another interpreter on the `#!` line: its name is read, not assumed.
        let bun = PI_CMD.replace("node.exe", "bun.exe").replace("_prog=node\"", "_prog=bun\"");
        assert_eq!(parse_shim(&bun), Some(Shim::Interpreted { prog: "bun".into(), args: vec![], script: PI_SCRIPT.into() }));
        assert_eq!(parse_shim(""), None);
        assert_eq!(parse_shim("@echo off\r\n"), None);
    }

    #[test]
    fn a_program_is_found_on_the_child_s_path_with_its_pathext() {
        let s = Scratch::new();
        let (a, b) = (s.dir("a"), s.dir("b"));
        s.file("a\\agent.com", "MZ");
        s.file("b\\agent.exe", "MZ");
        s.file("b\\tool.ps1", "");
        // PATH order first, then PATHEXT order within a directory.
        let r = resolve(&spec("agent", &[("PATH", &format!("{b};{a}"))])).unwrap();
        assert!(same(&r.exe, &PathBuf::from(&b).join("agent.exe")) && r.exe == r.found && r.prefix_args.is_empty(), "{r:?}");
        // The last setting wins, whatever its case; empty PATH entries are skipped.
        let r = resolve(&spec("agent", &[("PATH", &b), ("path", &format!(";{a}"))])).unwrap();
        assert!(same(&r.exe, &PathBuf::from(&a).join("agent.com")), "{r:?}");
        // The child's PATHEXT decides the extensions tried, matched ignoring case.
        let r = resolve(&spec("tool", &[("PATH", &b), ("PathExt", ".Ps1;.EXE")])).unwrap();
        assert!(same(&r.exe, &PathBuf::from(&b).join("tool.ps1")), "{r:?}");
        let err = resolve(&spec("agent", &[("PATH", &a), ("PATHEXT", ".EXE")])).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound, "agent.com is not tried: {err}");
        // A name with an extension is taken as it is.
        let r = resolve(&spec("agent.exe", &[("PATH", &format!("{a};{b}"))])).unwrap();
        assert_eq!(r.exe, PathBuf::from(&b).join("agent.exe"));
        // A directory is no program.
        s.dir("a\\dir.exe");
        let err = resolve(&spec("dir", &[("PATH", &a)])).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound, "{err}");
    }

    #[test]
    fn a_missing_program_is_not_found_by_name() {
        let s = Scratch::new();
        let empty = s.dir("empty");
        let err = resolve(&spec("no-such-agent", &[("PATH", &empty)])).unwrap_err();
        assert_eq!((err.kind(), err.to_string()), (io::ErrorKind::NotFound, "executable 'no-such-agent' was not found on PATH".to_string()));
        let missing = format!("{empty}\\pi");
        let err = resolve(&spec(&missing, &[])).unwrap_err();
        assert_eq!((err.kind(), err.to_string()), (io::ErrorKind::NotFound, format!("executable '{missing}' was not found")));
        // A drive prefix makes a path, not a name to search for.
        assert!(is_path("C:pi") && is_path("a/b") && is_path(r"a\b") && !is_path("pi") && !is_path("pi.cmd"));
        assert_eq!(resolve(&spec("", &[])).unwrap_err().kind(), io::ErrorKind::InvalidInput);
        assert_eq!(resolve(&SpawnSpec::default()).unwrap_err().kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn pathext_falls_back_to_the_windows_default() {
        assert_eq!(extensions(None), [".COM", ".EXE", ".BAT", ".CMD"]);
        assert_eq!(extensions(Some(&OsString::from(";;"))), [".COM", ".EXE", ".BAT", ".CMD"]);
        assert_eq!(extensions(Some(&OsString::from(".EXE; .Cmd ;com"))), [".EXE", ".Cmd"]);
    }
}
