//! A tiny ordered JSON builder and a standard base64 encoder.
//!
//! `serde_json::Value` sorts object keys (the crate does not enable
//! `preserve_order`), but the fake agent must write frames with the same key
//! order as the reference fake server, and must echo received sub-values
//! verbatim. [`J`] keeps insertion order and can embed pre-serialized JSON.

/// An ordered JSON value. Object keys are static: every key the fake agent
/// writes is known at compile time.
#[derive(Clone, Debug)]
pub enum J {
    Null,
    Bool(bool),
    Int(i64),
    Num(f64),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(&'static str, J)>),
    /// A string known to need no escaping (no `"`, `\\` or control
    /// characters): written with one copy. Used for large generated texts.
    Safe(String),
    /// Pre-serialized, valid, compact-or-not JSON text, embedded verbatim.
    Raw(String),
}

/// Builds a [`J::Obj`] keeping the key order as written.
macro_rules! obj {
    ($($k:literal : $v:expr),* $(,)?) => {
        $crate::json::J::Obj(vec![$(($k, $crate::json::J::from($v))),*])
    };
}

/// Builds a [`J::Arr`].
macro_rules! arr {
    ($($v:expr),* $(,)?) => {
        $crate::json::J::Arr(vec![$($crate::json::J::from($v)),*])
    };
}

pub(crate) use {arr, obj};

impl J {
    /// An object with `key` set (replaced where present, else appended).
    pub fn with(self, key: &'static str, value: J) -> J {
        match self {
            J::Obj(mut fields) => {
                match fields.iter_mut().find(|(k, _)| *k == key) {
                    Some(slot) => slot.1 = value,
                    None => fields.push((key, value)),
                }
                J::Obj(fields)
            }
            other => other,
        }
    }

    /// Appends the compact serialization of `self` to `out`.
    pub fn write(&self, out: &mut Vec<u8>) {
        match self {
            J::Null => out.extend_from_slice(b"null"),
            J::Bool(true) => out.extend_from_slice(b"true"),
            J::Bool(false) => out.extend_from_slice(b"false"),
            J::Int(i) => out.extend_from_slice(i.to_string().as_bytes()),
            J::Num(f) => {
                if f.is_finite() {
                    // serde_json formats 0.0 as "0.0" and 7.25 as "7.25",
                    // like Python's json module.
                    match serde_json::to_string(f) {
                        Ok(s) => out.extend_from_slice(s.as_bytes()),
                        Err(_) => out.extend_from_slice(b"null"),
                    }
                } else {
                    out.extend_from_slice(b"null");
                }
            }
            J::Str(s) => write_str(out, s),
            J::Safe(s) => {
                debug_assert!(!s.bytes().take(64).any(|b| b < 0x20 || b == b'"' || b == b'\\'));
                out.reserve(s.len() + 2);
                out.push(b'"');
                out.extend_from_slice(s.as_bytes());
                out.push(b'"');
            }
            J::Arr(items) => {
                out.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    item.write(out);
                }
                out.push(b']');
            }
            J::Obj(fields) => {
                out.push(b'{');
                for (i, (k, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    write_str(out, k);
                    out.push(b':');
                    v.write(out);
                }
                out.push(b'}');
            }
            J::Raw(text) => out.extend_from_slice(text.as_bytes()),
        }
    }

    /// The compact serialization as bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write(&mut out);
        out
    }
}

/// Writes `s` as a JSON string literal (escaping `"`, `\` and control
/// characters; everything else is copied as UTF-8).
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0x00..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        if escape.is_empty() {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[(b >> 4) as usize]);
            out.push(HEX[(b & 0xf) as usize]);
        } else {
            out.extend_from_slice(escape);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

impl From<&str> for J {
    fn from(s: &str) -> J {
        J::Str(s.to_owned())
    }
}

impl From<String> for J {
    fn from(s: String) -> J {
        J::Str(s)
    }
}

impl From<&String> for J {
    fn from(s: &String) -> J {
        J::Str(s.clone())
    }
}

impl From<bool> for J {
    fn from(b: bool) -> J {
        J::Bool(b)
    }
}

impl From<i64> for J {
    fn from(i: i64) -> J {
        J::Int(i)
    }
}

impl From<i32> for J {
    fn from(i: i32) -> J {
        J::Int(i64::from(i))
    }
}

impl From<u64> for J {
    fn from(i: u64) -> J {
        J::Int(i64::try_from(i).unwrap_or(i64::MAX))
    }
}

impl From<usize> for J {
    fn from(i: usize) -> J {
        J::Int(i64::try_from(i).unwrap_or(i64::MAX))
    }
}

impl From<f64> for J {
    fn from(f: f64) -> J {
        J::Num(f)
    }
}

impl From<Vec<J>> for J {
    fn from(items: Vec<J>) -> J {
        J::Arr(items)
    }
}

impl From<&J> for J {
    fn from(j: &J) -> J {
        j.clone()
    }
}

impl<T: Into<J>> From<Option<T>> for J {
    fn from(o: Option<T>) -> J {
        match o {
            Some(v) => v.into(),
            None => J::Null,
        }
    }
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Every 12-bit value as its two base64 characters (so the hot loop does
/// two lookups per 3 input bytes; this keeps debug builds fast too).
fn b64_pairs() -> &'static [[u8; 2]; 4096] {
    static TABLE: std::sync::OnceLock<[[u8; 2]; 4096]> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = [[0u8; 2]; 4096];
        for (i, pair) in t.iter_mut().enumerate() {
            *pair = [B64[i >> 6], B64[i & 63]];
        }
        t
    })
}

/// Standard base64 (RFC 4648 alphabet, with `=` padding).
pub fn base64(input: &[u8]) -> String {
    let pairs = b64_pairs();
    let full = input.len() / 3;
    let mut out = vec![b'='; input.len().div_ceil(3) * 4];
    // Plain indexing over a pre-sized buffer: far cheaper than per-group
    // `extend_from_slice` in unoptimized (debug) builds.
    let mut i = 0;
    let mut o = 0;
    for _ in 0..full {
        let n = (usize::from(input[i]) << 16) | (usize::from(input[i + 1]) << 8) | usize::from(input[i + 2]);
        let hi = pairs[n >> 12];
        let lo = pairs[n & 0xfff];
        out[o] = hi[0];
        out[o + 1] = hi[1];
        out[o + 2] = lo[0];
        out[o + 3] = lo[1];
        i += 3;
        o += 4;
    }
    match input.len() - i {
        1 => {
            let pair = pairs[usize::from(input[i]) << 4];
            out[o] = pair[0];
            out[o + 1] = pair[1];
        }
        2 => {
            let n = (usize::from(input[i]) << 16) | (usize::from(input[i + 1]) << 8);
            let pair = pairs[n >> 12];
            out[o] = pair[0];
            out[o + 1] = pair[1];
            out[o + 2] = B64[(n >> 6) & 63];
        }
        _ => {}
    }
    // Only ASCII bytes from the alphabet and '=' were written.
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648_vectors() {
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, encoded) in cases {
            assert_eq!(base64(plain.as_bytes()), encoded);
        }
    }

    #[test]
    fn ordered_objects_and_escapes() {
        let j = obj! {"b": 1, "a": "x\"\n\u{1}", "c": arr![true, J::Null, 0.0]};
        assert_eq!(
            String::from_utf8(j.to_bytes()).unwrap(),
            r#"{"b":1,"a":"x\"\n\u0001","c":[true,null,0.0]}"#
        );
    }
}
