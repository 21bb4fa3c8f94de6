//! Strings across the C boundary: borrowed C strings in (`text`, `opt_text`), owned strings out
//! (`give`, `give_json`), and `omprpc_string_free`, the one way a caller releases the latter.

use std::ffi::{c_char, CStr, CString};

use crate::error::{Error, Result, Status};

use super::guarded;

/// Hands a string to C. NUL bytes (possible only in stderr text) become U+FFFD.
pub(super) fn give(s: String) -> *mut c_char {
    match CString::new(s) {
        Ok(c) => c.into_raw(),
        Err(e) => {
            let fixed = String::from_utf8_lossy(&e.into_vec()).replace('\0', "\u{fffd}");
            CString::new(fixed).expect("NULs replaced").into_raw()
        }
    }
}

/// Hands JSON the library assembled from validated frames to C. Such JSON never holds a NUL
/// byte (the frame scanner rejects raw control bytes, and NUL is no JSON token), so the
/// tens of megabytes of a large turn are not scanned again for one.
pub(super) fn give_json(mut v: Vec<u8>) -> *mut c_char {
    debug_assert!(!v.contains(&0), "validated JSON holds no NUL");
    v.push(0);
    // SAFETY: exactly one NUL, at the end (see above).
    unsafe { CString::from_vec_with_nul_unchecked(v) }.into_raw()
}

pub(super) unsafe fn text<'a>(p: *const c_char, what: &str) -> Result<&'a str> {
    if p.is_null() {
        return Err(Error::invalid(format!("{what} is NULL")));
    }
    CStr::from_ptr(p).to_str().map_err(|_| Error::new(Status::InvalidUtf8, format!("{what} is not valid UTF-8")))
}

pub(super) unsafe fn opt_text<'a>(p: *const c_char, what: &str) -> Result<Option<&'a str>> {
    if p.is_null() {
        Ok(None)
    } else {
        text(p, what).map(Some)
    }
}

/// Frees a string returned by omprpc. NULL is a no-op. Never pass it memory from elsewhere.
/// Threads: any thread; each string is freed once, after its last use.
#[no_mangle]
pub unsafe extern "C" fn omprpc_string_free(s: *mut c_char) {
    if !s.is_null() {
        guarded((), || drop(CString::from_raw(s)));
    }
}
