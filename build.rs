//! Build script: gives the shared library a versioned SONAME on Linux.
//!
//! SONAME `libomprpc.so.<ABI>`, where ABI is `OMPRPC_ABI_VERSION` (src/ffi/mod.rs). The
//! usual rule is "soname = semver major", but while the crate is 0.x its major is always 0
//! and says nothing about binary compatibility; the ABI version is exactly the number that
//! changes on an incompatible C ABI change (docs/c-api.md), so it is the soname's number.
//! `make install` then installs libomprpc.so.<crate version> with the links
//! libomprpc.so.<ABI> (what programs record as NEEDED) and libomprpc.so (for `-lomprpc`).
//!
//! A program linked against the checkout's own target/<profile>/libomprpc.so also records
//! NEEDED libomprpc.so.<ABI>, so the script puts a link of that name next to the library
//! cargo is about to write (the tests, the bench and the Go binding link there with an rpath).
//! Bindings that dlopen the file by path (Python, Node) are unaffected by the soname.

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/ffi/mod.rs");

    let abi = abi_version();
    // Only ELF platforms with GNU-style linkers take -soname; macOS uses install names and
    // is left to rustc's defaults.
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if !matches!(os.as_str(), "linux" | "android" | "freebsd" | "netbsd" | "openbsd" | "dragonfly") {
        return;
    }
    let soname = format!("libomprpc.so.{abi}");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{soname}");

    if let Some(dir) = profile_dir() {
        link_soname(&dir, &soname);
    }
}

/// `pub const OMPRPC_ABI_VERSION: u32 = N;` from src/ffi/mod.rs: the one place it is defined
/// (the header macro is generated from it), so the soname cannot drift from it.
fn abi_version() -> u32 {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/ffi/mod.rs");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("build.rs: cannot read {}: {e}", path.display()));
    text.lines()
        .find_map(|l| l.trim().strip_prefix("pub const OMPRPC_ABI_VERSION: u32 =")?.trim().strip_suffix(';')?.trim().parse().ok())
        .unwrap_or_else(|| panic!("build.rs: no `pub const OMPRPC_ABI_VERSION: u32 = N;` in {}", path.display()))
}

/// The directory cargo writes the library to: OUT_DIR is <profile dir>/build/<pkg>-<hash>/out.
fn profile_dir() -> Option<PathBuf> {
    let out = PathBuf::from(std::env::var_os("OUT_DIR")?);
    let dir = out.ancestors().nth(3)?.to_path_buf();
    // Only when the layout is the one described above (not, e.g., a tool's private layout).
    (dir.join("build").is_dir()).then_some(dir)
}

/// `<dir>/libomprpc.so.<ABI>` -> `libomprpc.so` (relative, so the target dir may move).
/// Dangling until cargo links the library; a failure only warns, it does not fail the build.
#[cfg(unix)]
fn link_soname(dir: &Path, soname: &str) {
    let link = dir.join(soname);
    match std::fs::read_link(&link) {
        Ok(t) if t == Path::new("libomprpc.so") => return,
        Ok(_) => {
            let _ = std::fs::remove_file(&link);
        }
        Err(_) if link.exists() => return, // a real file of that name: leave it alone
        Err(_) => {}
    }
    if let Err(e) = std::os::unix::fs::symlink("libomprpc.so", &link) {
        if std::fs::symlink_metadata(&link).is_err() {
            println!("cargo:warning=cannot create {}: {e}", link.display());
        }
    }
}

#[cfg(not(unix))]
fn link_soname(_dir: &Path, _soname: &str) {}
