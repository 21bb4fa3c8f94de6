//! Private files and directories, and random bytes, on Windows.
//!
//! "Private" is a protected DACL (no inheritance from the parent directory) that grants the
//! current user and SYSTEM full access and nobody else anything, with the user as the owner.
//! It is given in the create call itself, so there is no moment in which the file or directory
//! carries what it would have inherited. A directory's entries are inheritable, so what is
//! later created inside it (by us or by the agent) is private too.
//!
//! The few advapi32 and kernel32 functions this needs are declared here (no crate for them);
//! each call is `unsafe` with the reason it is sound beside it.

use std::ffi::c_void;
use std::fs::File;
use std::io;
use std::os::windows::ffi::OsStrExt;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};
use std::path::Path;

use super::Existing;

type Bool = i32;

/// SECURITY_ATTRIBUTES.
#[repr(C)]
struct SecurityAttributes {
    length: u32,
    security_descriptor: *mut c_void,
    inherit_handle: Bool,
}

const TOKEN_QUERY: u32 = 0x0008;
/// TOKEN_INFORMATION_CLASS::TokenUser: a TOKEN_USER, whose first field is the user's SID.
const TOKEN_USER_CLASS: u32 = 1;
const SDDL_REVISION_1: u32 = 1;
const GENERIC_WRITE: u32 = 0x4000_0000;
const WRITE_DAC: u32 = 0x0004_0000;
const FILE_SHARE_ALL: u32 = 0x1 | 0x2 | 0x4; // read, write, delete: std's default
const CREATE_NEW: u32 = 1;
const CREATE_ALWAYS: u32 = 2;
const FILE_ATTRIBUTE_NORMAL: u32 = 0x80;
const FILE_TYPE_DISK: u32 = 1;
const ERROR_ALREADY_EXISTS: i32 = 183;
const OWNER_SECURITY_INFORMATION: u32 = 0x1;
const DACL_SECURITY_INFORMATION: u32 = 0x4;
/// SE_OBJECT_TYPE::SE_FILE_OBJECT.
const SE_FILE_OBJECT: u32 = 1;
const PROTECTED_DACL_SECURITY_INFORMATION: u32 = 0x8000_0000;
const INVALID_HANDLE_VALUE: RawHandle = -1isize as RawHandle;

#[link(name = "advapi32")]
extern "system" {
    fn OpenProcessToken(process: RawHandle, access: u32, token: *mut RawHandle) -> Bool;
    fn GetTokenInformation(token: RawHandle, class: u32, info: *mut c_void, length: u32, returned: *mut u32) -> Bool;
    fn ConvertSidToStringSidW(sid: *mut c_void, string_sid: *mut *mut u16) -> Bool;
    fn ConvertStringSecurityDescriptorToSecurityDescriptorW(
        sddl: *const u16,
        revision: u32,
        descriptor: *mut *mut c_void,
        size: *mut u32,
    ) -> Bool;
    fn SetKernelObjectSecurity(handle: RawHandle, info: u32, descriptor: *mut c_void) -> Bool;
    fn GetNamedSecurityInfoW(
        name: *const u16,
        object_type: u32,
        info: u32,
        owner: *mut *mut c_void,
        group: *mut *mut c_void,
        dacl: *mut *mut c_void,
        sacl: *mut *mut c_void,
        descriptor: *mut *mut c_void,
    ) -> u32;
    // RtlGenRandom's exported name.
    #[link_name = "SystemFunction036"]
    fn rtl_gen_random(buffer: *mut u8, length: u32) -> u8;
}

#[link(name = "kernel32")]
extern "system" {
    fn GetCurrentProcess() -> RawHandle;
    fn LocalFree(memory: *mut c_void) -> *mut c_void;
    fn CreateFileW(
        name: *const u16,
        access: u32,
        share: u32,
        security: *const SecurityAttributes,
        disposition: u32,
        flags: u32,
        template: RawHandle,
    ) -> RawHandle;
    fn CreateDirectoryW(name: *const u16, security: *const SecurityAttributes) -> Bool;
    fn GetFileType(file: RawHandle) -> u32;
}

/// `bytes` random bytes from the system's generator (RtlGenRandom, which Windows and Wine
/// both export from advapi32; std's own ProcessPrng is in a DLL Wine 8.0 lacks), as hex.
pub fn random_hex(bytes: usize) -> io::Result<String> {
    let mut buf = vec![0u8; bytes];
    for chunk in buf.chunks_mut(u32::MAX as usize) {
        // SAFETY: writes at most `length` bytes into `buffer`: the chunk, valid and ours alone.
        if unsafe { rtl_gen_random(chunk.as_mut_ptr(), chunk.len() as u32) } == 0 {
            return Err(io::Error::other("RtlGenRandom failed"));
        }
    }
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// Memory the system allocated with LocalAlloc for us (a descriptor, a SID string), freed
/// with LocalFree when dropped.
struct Local(*mut c_void);

impl Drop for Local {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: the pointer came from a call that documents LocalFree as its release,
            // and nothing uses it after this.
            unsafe { LocalFree(self.0) };
        }
    }
}

/// A NUL-terminated UTF-16 copy of `s`; a NUL inside it is refused (it would cut the name).
fn wide(s: &std::ffi::OsStr) -> io::Result<Vec<u16>> {
    let w: Vec<u16> = s.encode_wide().collect();
    if w.contains(&0) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{s:?} contains a NUL character")));
    }
    Ok(w.into_iter().chain(Some(0)).collect())
}

/// The SID of the user this process runs as, in its string form (`S-1-5-21-…`).
fn current_user_sid() -> io::Result<String> {
    let mut raw: RawHandle = std::ptr::null_mut();
    // SAFETY: GetCurrentProcess returns a pseudo-handle that needs no closing; OpenProcessToken
    // writes a new token handle into `raw` on success, which we own from then on.
    if unsafe { OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut raw) } == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is the token handle just opened, owned by nothing else.
    let token = unsafe { OwnedHandle::from_raw_handle(raw) };
    let mut needed = 0u32;
    // SAFETY: a size query: no buffer, only `needed` is written. It fails by design.
    unsafe { GetTokenInformation(token.as_raw_handle(), TOKEN_USER_CLASS, std::ptr::null_mut(), 0, &mut needed) };
    // u64s: TOKEN_USER holds a pointer, so the buffer must be pointer-aligned.
    let mut buf = vec![0u64; (needed as usize).div_ceil(8).max(1)];
    // SAFETY: writes at most `buf.len() * 8` bytes into `buf`, which is ours.
    if unsafe { GetTokenInformation(token.as_raw_handle(), TOKEN_USER_CLASS, buf.as_mut_ptr().cast(), (buf.len() * 8) as u32, &mut needed) } == 0 {
        return Err(io::Error::last_os_error());
    }
    // TOKEN_USER { SID_AND_ATTRIBUTES { PSID Sid; DWORD Attributes } }: the SID pointer is
    // the first field, pointing into `buf`, alive for the call.
    sid_text(buf[0] as usize as *mut c_void)
}

/// A SID's string form (`S-1-5-21-…`). `sid` must point to a valid SID.
fn sid_text(sid: *mut c_void) -> io::Result<String> {
    let mut text: *mut u16 = std::ptr::null_mut();
    // SAFETY: `sid` is valid (the callers' rule); the string it writes is ours, released by
    // `Local`.
    if unsafe { ConvertSidToStringSidW(sid, &mut text) } == 0 {
        return Err(io::Error::last_os_error());
    }
    let text = Local(text.cast());
    // SAFETY: a NUL-terminated UTF-16 string the call allocated; read up to its NUL.
    let units = unsafe {
        let p = text.0 as *const u16;
        let len = (0..).take_while(|&i| *p.add(i) != 0).count();
        std::slice::from_raw_parts(p, len)
    };
    Ok(String::from_utf16_lossy(units))
}

/// Who owns the file or directory at `path`: its owner's SID, in its string form.
pub fn owner_of(path: &Path) -> io::Result<super::Owner> {
    let name = wide(path.as_os_str())?;
    let (mut owner, mut sd, none) = (std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: `name` is NUL-terminated; the descriptor written into `sd` is ours, released by
    // `Local`, and `owner` points into it.
    let r = unsafe { GetNamedSecurityInfoW(name.as_ptr(), SE_FILE_OBJECT, OWNER_SECURITY_INFORMATION, &mut owner, none, none, none, &mut sd) };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r as i32));
    }
    let _descriptor = Local(sd);
    Ok(super::Owner(sid_text(owner)?))
}

/// The security descriptor of a private object in SDDL: owned by `sid`; a protected DACL
/// (`P`) granting full access (`FA`) to SYSTEM (`SY`) and to `sid`, inherited by files and
/// subdirectories (`OICI`) when `inheritable`.
fn private_sddl(sid: &str, inheritable: bool) -> String {
    let flags = if inheritable { "OICI" } else { "" };
    format!("O:{sid}D:P(A;{flags};FA;;;SY)(A;{flags};FA;;;{sid})")
}

/// A private security descriptor for this user, allocated by the system.
fn private_descriptor(inheritable: bool) -> io::Result<Local> {
    let sddl = wide(private_sddl(&current_user_sid()?, inheritable).as_ref())?;
    let mut sd: *mut c_void = std::ptr::null_mut();
    // SAFETY: `sddl` is NUL-terminated; the descriptor written into `sd` is ours, released by
    // `Local`; the size is not asked for.
    if unsafe { ConvertStringSecurityDescriptorToSecurityDescriptorW(sddl.as_ptr(), SDDL_REVISION_1, &mut sd, std::ptr::null_mut()) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(Local(sd))
}

/// A new directory at `path` with a private descriptor; an existing one is AlreadyExists.
pub fn create_private_dir(path: &Path) -> io::Result<()> {
    let sd = private_descriptor(true)?;
    let name = wide(path.as_os_str())?;
    let sa = SecurityAttributes { length: std::mem::size_of::<SecurityAttributes>() as u32, security_descriptor: sd.0, inherit_handle: 0 };
    // SAFETY: `name` is NUL-terminated and `sa` points to a valid descriptor, both alive for
    // the call.
    if unsafe { CreateDirectoryW(name.as_ptr(), &sa) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A file at `path`, opened for writing, private from its creation. With `Truncate` an
/// existing file is emptied, and (a regular file; not a device such as `NUL`) given the private
/// DACL, since a create call leaves an existing file's descriptor as it was.
pub fn private_file(path: &Path, existing: Existing) -> io::Result<File> {
    let sd = private_descriptor(false)?;
    let name = wide(path.as_os_str())?;
    let sa = SecurityAttributes { length: std::mem::size_of::<SecurityAttributes>() as u32, security_descriptor: sd.0, inherit_handle: 0 };
    let (disposition, access) = match existing {
        Existing::Refuse => (CREATE_NEW, GENERIC_WRITE),
        Existing::Truncate => (CREATE_ALWAYS, GENERIC_WRITE | WRITE_DAC),
    };
    // SAFETY: `name` is NUL-terminated and `sa` points to a valid descriptor, both alive for
    // the call; no template handle.
    let raw = unsafe { CreateFileW(name.as_ptr(), access, FILE_SHARE_ALL, &sa, disposition, FILE_ATTRIBUTE_NORMAL, std::ptr::null_mut()) };
    // Read at once: a success with CREATE_ALWAYS says through it whether the file existed.
    let last = io::Error::last_os_error();
    if raw == INVALID_HANDLE_VALUE {
        return Err(last);
    }
    // SAFETY: a valid handle CreateFileW just returned, owned by nothing else.
    let file = unsafe { File::from_raw_handle(raw) };
    if matches!(existing, Existing::Truncate) && last.raw_os_error() == Some(ERROR_ALREADY_EXISTS) {
        // SAFETY: GetFileType only reads the handle's type.
        if unsafe { GetFileType(file.as_raw_handle()) } == FILE_TYPE_DISK {
            set_dacl(&file, &sd)?;
        }
    }
    Ok(file)
}

/// Replaces the DACL of the open `file` with `sd`'s, protected from inheritance. (Not
/// SetSecurityInfo: under Wine 8 that left the file readable by Everyone, as its directory
/// allows, where this call sets exactly the DACL given.)
fn set_dacl(file: &File, sd: &Local) -> io::Result<()> {
    let info = DACL_SECURITY_INFORMATION | PROTECTED_DACL_SECURITY_INFORMATION;
    // SAFETY: a handle opened with WRITE_DAC, and a valid self-relative descriptor, both alive
    // for the call.
    if unsafe { SetKernelObjectSecurity(file.as_raw_handle(), info, sd.0) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[link(name = "advapi32")]
    extern "system" {
        fn ConvertSecurityDescriptorToStringSecurityDescriptorW(
            descriptor: *mut c_void,
            revision: u32,
            info: u32,
            sddl: *mut *mut u16,
            length: *mut u32,
        ) -> Bool;
    }

    #[link(name = "kernel32")]
    extern "system" {
        fn GetModuleHandleW(name: *const u16) -> RawHandle;
        fn GetProcAddress(module: RawHandle, name: *const u8) -> *mut c_void;
    }

    /// Whether this runs under Wine (its ntdll exports `wine_get_version`). Wine keeps no
    /// DACL of its own for a file: it turns the DACL given into the Unix mode, and reads a
    /// DACL back made from the mode. So the user's and SYSTEM's entries and the absence of
    /// Everyone's show there, but not the protected flag nor inheritance.
    fn under_wine() -> bool {
        let ntdll = wide("ntdll.dll".as_ref()).unwrap();
        // SAFETY: a NUL-terminated name; ntdll is loaded in every process, and the handle
        // needs no release. GetProcAddress only looks the name up.
        unsafe {
            let module = GetModuleHandleW(ntdll.as_ptr());
            !module.is_null() && !GetProcAddress(module, b"wine_get_version\0".as_ptr()).is_null()
        }
    }

    /// The owner and DACL that `path` carries now, read back from the system, in SDDL.
    fn sddl_of(path: &Path) -> String {
        let name = wide(path.as_os_str()).unwrap();
        let info = OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION;
        let (mut sd, none) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: `name` is NUL-terminated; the descriptor written is ours, freed by `Local`.
        let r = unsafe { GetNamedSecurityInfoW(name.as_ptr(), SE_FILE_OBJECT, info, none, none, none, none, &mut sd) };
        assert_eq!(r, 0, "GetNamedSecurityInfoW({})", path.display());
        let sd = Local(sd);
        let mut text: *mut u16 = std::ptr::null_mut();
        let mut len = 0u32;
        // SAFETY: a valid descriptor; the string written is ours, freed by `Local`.
        let ok = unsafe { ConvertSecurityDescriptorToStringSecurityDescriptorW(sd.0, SDDL_REVISION_1, info, &mut text, &mut len) };
        assert_ne!(ok, 0, "{}", io::Error::last_os_error());
        let text = Local(text.cast());
        // SAFETY: `len` UTF-16 units (the NUL not counted) written by the call.
        let units = unsafe { std::slice::from_raw_parts(text.0 as *const u16, len as usize) };
        String::from_utf16_lossy(units).trim_end_matches('\0').to_string()
    }

    /// An SDDL string's owner, DACL flags and ACEs (sorted): `O:S-1-…D:PAI(A;;FA;;;SY)(…)`.
    struct Sddl {
        owner: String,
        flags: String,
        aces: Vec<String>,
    }

    fn read(path: &Path) -> Sddl {
        let sddl = sddl_of(path);
        let (owner, dacl) = sddl.strip_prefix("O:").and_then(|s| s.split_once("D:")).unwrap_or_else(|| panic!("{sddl}"));
        let (flags, aces) = dacl.split_at(dacl.find('(').unwrap_or(dacl.len()));
        let mut aces: Vec<String> = aces.split(')').filter(|a| !a.is_empty()).map(|a| format!("{a})")).collect();
        aces.sort();
        Sddl { owner: owner.to_string(), flags: flags.to_string(), aces }
    }

    /// SYSTEM's and this user's full-access entries with the ACE flags given, sorted.
    fn ours_alone(sid: &str, flags: &str) -> Vec<String> {
        let mut aces = vec![format!("(A;{flags};FA;;;SY)"), format!("(A;{flags};FA;;;{sid})")];
        aces.sort();
        aces
    }

    /// Asserts that `path` is private: owned by this user, only SYSTEM and this user in its
    /// DACL (with the ACE flags given), and (where the system keeps it) protected.
    fn assert_private(path: &Path, ace_flags: &str) {
        let sid = current_user_sid().unwrap();
        let got = read(path);
        assert_eq!(got.owner, sid, "{}", path.display());
        // Wine derives the entries from the Unix mode: directories' carry OICI there anyway.
        assert_eq!(got.aces, ours_alone(&sid, ace_flags), "only SYSTEM and this user: {}", path.display());
        if !under_wine() {
            assert!(got.flags.contains('P'), "the DACL is protected from inheritance: {}", got.flags);
        }
    }

    struct Scratch(std::path::PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            let dir = std::env::temp_dir().join(format!("omprpc-env-test-{name}-{}", random_hex(6).unwrap()));
            std::fs::create_dir(&dir).unwrap();
            Scratch(dir)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn the_current_user_has_a_sid() {
        let sid = current_user_sid().unwrap();
        assert!(sid.starts_with("S-1-5-") && sid.len() > 8, "{sid}");
        assert_eq!(private_sddl(&sid, false), format!("O:{sid}D:P(A;;FA;;;SY)(A;;FA;;;{sid})"));
    }

    #[test]
    fn a_private_directory_is_owned_by_the_current_user() {
        let dir = crate::env::private_dir("omprpc-owner-test").unwrap();
        let owner = owner_of(&dir);
        std::fs::remove_dir(&dir).unwrap();
        assert_eq!(owner.unwrap(), crate::env::Owner(current_user_sid().unwrap()));
        assert!(owner_of(&dir).is_err(), "a path that does not exist has no owner");
    }

    #[test]
    fn a_private_file_is_ours_alone_from_its_creation() {
        let dir = Scratch::new("file");
        let path = dir.0.join("prompt.md");
        let mut f = private_file(&path, Existing::Refuse).unwrap();
        f.write_all(b"secret").unwrap();
        drop(f);
        let mut back = String::new();
        File::open(&path).unwrap().read_to_string(&mut back).unwrap();
        assert_eq!(back, "secret", "readable and writable by us");
        assert_private(&path, "");
    }

    #[test]
    fn an_existing_file_is_refused_and_left_as_it_was() {
        let dir = Scratch::new("exists");
        let path = dir.0.join("extension.ts");
        std::fs::write(&path, "theirs").unwrap();
        let before = sddl_of(&path);
        let err = private_file(&path, Existing::Refuse).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists, "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "theirs");
        assert_eq!(sddl_of(&path), before);
    }

    #[test]
    fn truncating_an_existing_file_empties_it_and_makes_it_private() {
        let dir = Scratch::new("truncate");
        let path = dir.0.join("recording.jsonl");
        std::fs::write(&path, "an old recording").unwrap();
        let sid = current_user_sid().unwrap();
        assert_ne!(read(&path).aces, ours_alone(&sid, ""), "made the ordinary way, the file is not private yet");
        let mut f = private_file(&path, Existing::Truncate).unwrap();
        f.write_all(b"new").unwrap();
        drop(f);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_private(&path, "");
        // A device is opened, not re-secured.
        private_file(Path::new("NUL"), Existing::Truncate).unwrap().write_all(b"x").unwrap();
    }

    #[test]
    fn a_private_directory_is_ours_alone_and_so_is_what_is_made_in_it() {
        let dir = Scratch(super::super::private_dir("omprpc-env-test").unwrap());
        assert!(dir.0.starts_with(std::env::temp_dir()), "{}", dir.0.display());
        assert_private(&dir.0, "OICI");
        // A file made in it the ordinary way (the bridge's owner.pid, the agent's own files).
        let inside = dir.0.join("owner.pid");
        std::fs::write(&inside, "42").unwrap();
        assert_eq!(std::fs::read_to_string(&inside).unwrap(), "42");
        // Inheritance is Windows' (Wine makes an ordinary file from its umask).
        if !under_wine() {
            let sid = current_user_sid().unwrap();
            assert_eq!(read(&inside).aces, ours_alone(&sid, "ID"), "inherited from the private directory");
        }
        // And a private file in it is private on its own terms.
        let own = dir.0.join("prompt.md");
        private_file(&own, Existing::Refuse).unwrap();
        assert_private(&own, "");
    }

    #[test]
    fn a_name_with_a_nul_is_refused() {
        let err = private_file(Path::new("a\0b"), Existing::Refuse).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
        let err = create_private_dir(Path::new("a\0b")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
    }
}
