//! A validating JSON scanner that reads a frame's top-level fields without building a tree.
//!
//! Every frame from the agent passes through here, so it is the hot path: the scanner checks
//! that a line is one well-formed JSON object (strict grammar: no trailing commas, no raw
//! control characters in strings, bounded nesting) and records where each top-level value
//! lies, so the client can route a frame by `type` / `id` and hand the original bytes on
//! without re-serialising. String bodies are skipped eight bytes at a time.

use std::borrow::Cow;
use std::ops::Range;

/// Nesting deeper than this is rejected (serde_json's own limit is 128; JS has none, but no
/// agent frame comes near it, and it keeps a hostile line from costing unbounded memory).
pub(crate) const MAX_DEPTH: usize = 512;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    String,
    Number,
    Object,
    Array,
    True,
    False,
    Null,
}

/// One top-level member: where its key and value lie in the scanned bytes.
#[derive(Clone, Debug)]
pub struct Field {
    key: Range<usize>,
    key_escaped: bool,
    pub value: Range<usize>,
    pub kind: Kind,
    /// For strings: whether the body contains a backslash escape.
    value_escaped: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanError {
    pub offset: usize,
    pub reason: &'static str,
}

impl std::fmt::Display for ScanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid JSON at byte {}: {}", self.offset, self.reason)
    }
}

/// The scanned members of one JSON object, borrowing the bytes they were read from.
#[derive(Clone, Debug, Default)]
pub struct Fields {
    items: Vec<Field>,
}

impl Fields {
    pub fn new() -> Self {
        Fields { items: Vec::with_capacity(16) }
    }

    /// Scans `bytes[range]`, which must hold exactly one JSON object (surrounding whitespace
    /// allowed). `bytes` must already be valid UTF-8.
    pub fn scan(&mut self, bytes: &[u8], range: Range<usize>) -> Result<(), ScanError> {
        self.items.clear();
        let end = range.end;
        let b = &bytes[..end];
        // Without control bytes no string can hold a raw one, so nested values only need a
        // structural walk; otherwise every token is checked.
        let structural = !has_control_byte(&b[range.start..]);
        let mut i = skip_ws(b, range.start);
        if b.get(i) != Some(&b'{') {
            return Err(err(i, "expected a JSON object"));
        }
        i = skip_ws(b, i + 1);
        if b.get(i) == Some(&b'}') {
            i += 1;
        } else {
            loop {
                if b.get(i) != Some(&b'"') {
                    return Err(err(i, "expected a string key"));
                }
                let (key_end, key_escaped) = scan_string(b, i)?;
                let key = i + 1..key_end - 1;
                i = skip_ws(b, key_end);
                if b.get(i) != Some(&b':') {
                    return Err(err(i, "expected ':'"));
                }
                i = skip_ws(b, i + 1);
                let start = i;
                let (value_end, kind, value_escaped) = match b.get(i) {
                    Some(b'{') if structural => (skip_nested(b, i)?, Kind::Object, false),
                    Some(b'[') if structural => (skip_nested(b, i)?, Kind::Array, false),
                    _ => scan_value(b, i)?,
                };
                self.items.push(Field {
                    key,
                    key_escaped,
                    value: start..value_end,
                    kind,
                    value_escaped,
                });
                i = skip_ws(b, value_end);
                match b.get(i) {
                    Some(b',') => i = skip_ws(b, i + 1),
                    Some(b'}') => {
                        i += 1;
                        break;
                    }
                    _ => return Err(err(i, "expected ',' or '}'")),
                }
            }
        }
        if skip_ws(b, i) != end {
            return Err(err(i, "trailing characters after the object"));
        }
        Ok(())
    }

    /// The last member named `name` (JSON.parse keeps the last of duplicate keys).
    pub fn get(&self, bytes: &[u8], name: &str) -> Option<&Field> {
        self.items.iter().rev().find(|f| key_is(bytes, f, name))
    }

    /// How many members are named `name`.
    pub fn count(&self, bytes: &[u8], name: &str) -> usize {
        self.items.iter().filter(|f| key_is(bytes, f, name)).count()
    }

    /// The string value of member `name`, if it is a string.
    pub fn str<'b>(&self, bytes: &'b [u8], name: &str) -> Option<Cow<'b, str>> {
        let f = self.get(bytes, name)?;
        if f.kind != Kind::String {
            return None;
        }
        string_value(bytes, f)
    }

    /// The string value of member `name` as bytes, without a UTF-8 check (the scanned line
    /// was checked whole): the hot path compares `type` values this way.
    pub fn str_bytes<'b>(&self, bytes: &'b [u8], name: &str) -> Option<Cow<'b, [u8]>> {
        let f = self.get(bytes, name)?;
        if f.kind != Kind::String {
            return None;
        }
        let body = &bytes[f.value.start + 1..f.value.end - 1];
        if f.value_escaped {
            unescape(body).map(|s| Cow::Owned(s.into_bytes()))
        } else {
            Some(Cow::Borrowed(body))
        }
    }

    /// The raw JSON text of member `name`.
    pub fn raw<'b>(&self, bytes: &'b [u8], name: &str) -> Option<&'b [u8]> {
        self.get(bytes, name).map(|f| &bytes[f.value.clone()])
    }

    pub fn kind(&self, bytes: &[u8], name: &str) -> Option<Kind> {
        self.get(bytes, name).map(|f| f.kind)
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Every member in frame order, duplicates included.
    pub fn iter(&self) -> std::slice::Iter<'_, Field> {
        self.items.iter()
    }

    /// The raw key text of `f` (escapes not decoded).
    pub fn raw_key<'b>(&self, bytes: &'b [u8], f: &Field) -> &'b [u8] {
        &bytes[f.key.clone()]
    }
}

/// The decoded text of a string field.
fn key_is(bytes: &[u8], f: &Field, name: &str) -> bool {
    let raw = &bytes[f.key.clone()];
    if f.key_escaped {
        unescape(raw).map(|k| k == name).unwrap_or(false)
    } else {
        raw == name.as_bytes()
    }
}

pub fn string_value<'b>(bytes: &'b [u8], f: &Field) -> Option<Cow<'b, str>> {
    let body = &bytes[f.value.start + 1..f.value.end - 1];
    if f.value_escaped {
        unescape(body).map(Cow::Owned)
    } else {
        std::str::from_utf8(body).ok().map(Cow::Borrowed)
    }
}

fn unescape(body: &[u8]) -> Option<String> {
    let mut quoted = Vec::with_capacity(body.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(body);
    quoted.push(b'"');
    serde_json::from_slice::<String>(&quoted).ok()
}

/// Checks that `bytes` is exactly one JSON value (any type), returning its kind.
pub fn validate(bytes: &[u8]) -> Result<Kind, ScanError> {
    let i = skip_ws(bytes, 0);
    let (end, kind, _) = scan_value(bytes, i)?;
    if skip_ws(bytes, end) != bytes.len() {
        return Err(err(end, "trailing characters after the value"));
    }
    Ok(kind)
}

fn err(offset: usize, reason: &'static str) -> ScanError {
    ScanError { offset, reason }
}

#[inline]
fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while let Some(&c) = b.get(i) {
        if c == b' ' || c == b'\n' || c == b'\r' || c == b'\t' {
            i += 1;
        } else {
            break;
        }
    }
    i
}

/// Whether any byte is below 0x20. Written without early exit so it vectorises; frames are
/// short enough that scanning all of one costs less than a branch per byte.
fn has_control_byte(b: &[u8]) -> bool {
    b.chunks(256).any(|c| c.iter().fold(false, |acc, &x| acc | (x < 0x20)))
}

/// How far `find_quote_or_backslash` looks eight bytes at a time before it hands over to
/// memchr2. Most strings in a frame end within it, where a SIMD search costs more to set up
/// than it saves; past it the string is long (message text, tool output) and memchr2's SIMD
/// loop is several times faster (a 1 MiB text: ~10x on the nested walk).
const WORD_PROBE: usize = 32;

/// Index of the first `"` or `\` at or after `j` (or `b.len()`): the first `WORD_PROBE`
/// bytes eight at a time, the rest with memchr2.
#[inline]
fn find_quote_or_backslash(b: &[u8], mut j: usize) -> usize {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let probe_end = j + WORD_PROBE;
    while j + 8 <= b.len() {
        let w = u64::from_le_bytes([b[j], b[j + 1], b[j + 2], b[j + 3], b[j + 4], b[j + 5], b[j + 6], b[j + 7]]);
        let q = w ^ (LO * b'"' as u64);
        let s = w ^ (LO * b'\\' as u64);
        let m = (q.wrapping_sub(LO) & !q | s.wrapping_sub(LO) & !s) & HI;
        if m != 0 {
            return j + (m.trailing_zeros() / 8) as usize;
        }
        j += 8;
        if j >= probe_end {
            return memchr::memchr2(b'"', b'\\', &b[j..]).map_or(b.len(), |k| j + k);
        }
    }
    while j < b.len() && b[j] != b'"' && b[j] != b'\\' {
        j += 1;
    }
    j
}

/// Index of the first byte at or after `j` that is `"`, `\` or a control character.
#[inline]
fn find_string_special(b: &[u8], mut j: usize) -> usize {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    #[inline]
    fn has_zero_byte(x: u64) -> u64 {
        x.wrapping_sub(LO) & !x & HI
    }
    while j + 8 <= b.len() {
        let w = u64::from_le_bytes([b[j], b[j + 1], b[j + 2], b[j + 3], b[j + 4], b[j + 5], b[j + 6], b[j + 7]]);
        // The lowest flagged byte is exact; borrows only create false flags above a true one.
        let m = has_zero_byte(w ^ (LO * b'"' as u64))
            | has_zero_byte(w ^ (LO * b'\\' as u64))
            | (w.wrapping_sub(LO * 0x20) & !w & HI);
        if m != 0 {
            return j + (m.trailing_zeros() / 8) as usize;
        }
        j += 8;
    }
    while j < b.len() {
        let c = b[j];
        if c == b'"' || c == b'\\' || c < 0x20 {
            return j;
        }
        j += 1;
    }
    b.len()
}

/// `b[i]` is the opening quote. Returns the index after the closing quote and whether the
/// body had escapes.
fn scan_string(b: &[u8], i: usize) -> Result<(usize, bool), ScanError> {
    let mut j = i + 1;
    let mut escaped = false;
    loop {
        j = find_string_special(b, j);
        match b.get(j) {
            None => return Err(err(i, "unterminated string")),
            Some(b'"') => return Ok((j + 1, escaped)),
            Some(b'\\') => {
                escaped = true;
                match b.get(j + 1) {
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => j += 2,
                    Some(b'u') => {
                        let hex = b.get(j + 2..j + 6).ok_or_else(|| err(j, "short \\u escape"))?;
                        if !hex.iter().all(u8::is_ascii_hexdigit) {
                            return Err(err(j, "bad \\u escape"));
                        }
                        j += 6;
                    }
                    _ => return Err(err(j, "bad escape")),
                }
            }
            Some(_) => return Err(err(j, "control character in string")),
        }
    }
}

fn scan_number(b: &[u8], i: usize) -> Result<usize, ScanError> {
    let mut j = i;
    if b.get(j) == Some(&b'-') {
        j += 1;
    }
    match b.get(j) {
        Some(b'0') => j += 1,
        Some(c) if c.is_ascii_digit() => {
            while b.get(j).is_some_and(u8::is_ascii_digit) {
                j += 1;
            }
        }
        _ => return Err(err(j, "bad number")),
    }
    if b.get(j) == Some(&b'.') {
        j += 1;
        if !b.get(j).is_some_and(u8::is_ascii_digit) {
            return Err(err(j, "bad fraction"));
        }
        while b.get(j).is_some_and(u8::is_ascii_digit) {
            j += 1;
        }
    }
    if matches!(b.get(j), Some(b'e' | b'E')) {
        j += 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if !b.get(j).is_some_and(u8::is_ascii_digit) {
            return Err(err(j, "bad exponent"));
        }
        while b.get(j).is_some_and(u8::is_ascii_digit) {
            j += 1;
        }
    }
    Ok(j)
}

fn scan_literal(b: &[u8], i: usize, word: &'static [u8]) -> Result<usize, ScanError> {
    if b.get(i..i + word.len()) == Some(word) {
        Ok(i + word.len())
    } else {
        Err(err(i, "bad literal"))
    }
}

/// Scans one value starting at `b[i]`; containers are walked iteratively (no recursion, so
/// a hostile `[[[[…` line cannot overflow the stack).
fn scan_value(b: &[u8], i: usize) -> Result<(usize, Kind, bool), ScanError> {
    match b.get(i) {
        Some(b'"') => scan_string(b, i).map(|(e, esc)| (e, Kind::String, esc)),
        Some(b'{') => scan_container(b, i).map(|e| (e, Kind::Object, false)),
        Some(b'[') => scan_container(b, i).map(|e| (e, Kind::Array, false)),
        Some(b't') => scan_literal(b, i, b"true").map(|e| (e, Kind::True, false)),
        Some(b'f') => scan_literal(b, i, b"false").map(|e| (e, Kind::False, false)),
        Some(b'n') => scan_literal(b, i, b"null").map(|e| (e, Kind::Null, false)),
        Some(b'-' | b'0'..=b'9') => scan_number(b, i).map(|e| (e, Kind::Number, false)),
        Some(_) => Err(err(i, "expected a value")),
        None => Err(err(i, "unexpected end of input")),
    }
}

/// Byte classes for the structural walk outside strings.
const PLAIN: u8 = 0;
const QUOTE: u8 = 1;
const OPEN: u8 = 2;
const CLOSE: u8 = 3;
static CLASS: [u8; 256] = {
    let mut t = [PLAIN; 256];
    t[b'"' as usize] = QUOTE;
    t[b'{' as usize] = OPEN;
    t[b'[' as usize] = OPEN;
    t[b'}' as usize] = CLOSE;
    t[b']' as usize] = CLOSE;
    t
};

/// Skips a nested object or array at `b[start]` checking its structure only: brackets
/// balanced and matched, strings terminated, nesting bounded. The caller has ruled out control
/// bytes. This is the hot path for event frames, whose nested values the client passes on
/// verbatim; the top level of every frame is still checked token by token.
fn skip_nested(b: &[u8], start: usize) -> Result<usize, ScanError> {
    // One bit per open container (1 = object), so a mismatched `{]` is caught.
    let mut kinds = [0u64; MAX_DEPTH / 64];
    let mut depth = 0usize;
    let mut j = start;
    let n = b.len();
    while j < n {
        let c = b[j];
        match CLASS[c as usize] {
            PLAIN => j += 1,
            QUOTE => {
                j += 1;
                loop {
                    j = find_quote_or_backslash(b, j);
                    match b.get(j) {
                        None => return Err(err(j, "unterminated string")),
                        Some(b'\\') => j += 2,
                        Some(_) => {
                            j += 1;
                            break;
                        }
                    }
                }
            }
            OPEN => {
                if depth >= MAX_DEPTH {
                    return Err(err(j, "nesting too deep"));
                }
                let bit = 1u64 << (depth % 64);
                if c == b'{' {
                    kinds[depth / 64] |= bit;
                } else {
                    kinds[depth / 64] &= !bit;
                }
                depth += 1;
                j += 1;
            }
            _ => {
                if depth == 0 {
                    return Err(err(j, "unbalanced closing bracket"));
                }
                depth -= 1;
                let is_object = kinds[depth / 64] & (1u64 << (depth % 64)) != 0;
                if is_object != (c == b'}') {
                    return Err(err(j, "mismatched closing bracket"));
                }
                j += 1;
                if depth == 0 {
                    return Ok(j);
                }
            }
        }
    }
    Err(err(j, "unexpected end of input"))
}

fn scan_container(b: &[u8], start: usize) -> Result<usize, ScanError> {
    // One byte per open container: b'{' or b'['.
    let mut stack: Vec<u8> = Vec::with_capacity(8);
    stack.push(b[start]);
    let mut i = start + 1;
    let mut first = true;
    loop {
        i = skip_ws(b, i);
        let top = *stack.last().expect("stack is never empty inside the loop");
        let close = if top == b'{' { b'}' } else { b']' };
        if first {
            if b.get(i) == Some(&close) {
                i += 1;
                stack.pop();
                if stack.is_empty() {
                    return Ok(i);
                }
                first = false;
                continue;
            }
        } else {
            match b.get(i) {
                Some(b',') => i = skip_ws(b, i + 1),
                Some(&c) if c == close => {
                    i += 1;
                    stack.pop();
                    if stack.is_empty() {
                        return Ok(i);
                    }
                    continue;
                }
                None => return Err(err(i, "unexpected end of input")),
                _ => return Err(err(i, "expected ',' or a closing bracket")),
            }
        }
        if top == b'{' {
            if b.get(i) != Some(&b'"') {
                return Err(err(i, "expected a string key"));
            }
            i = skip_ws(b, scan_string(b, i)?.0);
            if b.get(i) != Some(&b':') {
                return Err(err(i, "expected ':'"));
            }
            i = skip_ws(b, i + 1);
        }
        match b.get(i) {
            Some(&c @ (b'{' | b'[')) => {
                if stack.len() >= MAX_DEPTH {
                    return Err(err(i, "nesting too deep"));
                }
                stack.push(c);
                i += 1;
                first = true;
            }
            _ => {
                i = scan_value(b, i)?.0;
                first = false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(s: &str) -> Result<Fields, ScanError> {
        let mut f = Fields::new();
        f.scan(s.as_bytes(), 0..s.len()).map(|_| f)
    }

    #[test]
    fn reads_top_level_members() {
        let s = r#"{"type":"response","id":"req_1","success":true,"data":{"a":[1,2,{"b":null}]},"n":-1.5e3}"#;
        let f = fields(s).unwrap();
        let b = s.as_bytes();
        assert_eq!(f.str(b, "type").unwrap(), "response");
        assert_eq!(f.str(b, "id").unwrap(), "req_1");
        assert_eq!(f.kind(b, "success"), Some(Kind::True));
        assert_eq!(f.raw(b, "data").unwrap(), br#"{"a":[1,2,{"b":null}]}"#);
        assert_eq!(f.raw(b, "n").unwrap(), b"-1.5e3");
        assert!(f.get(b, "missing").is_none());
    }

    #[test]
    fn decodes_escapes_in_keys_and_values() {
        let s = r#"{"ty\u0070e":"a\"b\\c\u00e9","x":"plain text longer than eight bytes"}"#;
        let f = fields(s).unwrap();
        assert_eq!(f.str(s.as_bytes(), "type").unwrap(), "a\"b\\cé");
        assert_eq!(f.str(s.as_bytes(), "x").unwrap(), "plain text longer than eight bytes");
    }

    #[test]
    fn last_duplicate_key_wins() {
        let s = r#"{"type":"a","type":"b"}"#;
        assert_eq!(fields(s).unwrap().str(s.as_bytes(), "type").unwrap(), "b");
    }

    #[test]
    fn rejects_malformed_frames() {
        for bad in [
            "",
            "not-json",
            "[]",
            r#"{"type":"broken""#,
            r#"{"a":1,}"#,
            r#"{"a":[1,]"#,
            r#"{"a":01}"#,
            r#"{"a":1.}"#,
            r#"{"a":tru}"#,
            "{\"a\":\"tab\there\"}",
            r#"{"a":"\x"}"#,
            r#"{"a":"\u12"}"#,
            r#"{"a":1} x"#,
            r#"{"a" 1}"#,
            r#"{1:1}"#,
            r#"{"a":{"b":1]}"#,
        ] {
            assert!(fields(bad).is_err(), "accepted {bad:?}");
        }
    }

    #[test]
    fn accepts_what_serde_accepts() {
        for good in [
            "{}",
            " { } ",
            r#"{"a":[]}"#,
            r#"{"a":[{}]}"#,
            r#"{"a":0,"b":-0.5,"c":1E+2,"d":"","e":"\/\b\f\n\r\t"}"#,
            r#"{"a":"😀 ünïcödé"}"#,
        ] {
            assert!(fields(good).is_ok(), "rejected {good:?}");
            assert!(serde_json::from_str::<serde_json::Value>(good).is_ok());
        }
    }

    #[test]
    fn nested_values_are_checked_for_structure() {
        for bad in [r#"{"a":{"b":1]}"#, r#"{"a":[{"b":"x}]}"#, r#"{"a":[1]]}"#, r#"{"a":{"#, r#"{"a":["\"]}"#] {
            assert!(fields(bad).is_err(), "accepted {bad:?}");
        }
        // With a control byte anywhere, every token is checked.
        assert!(fields("{\"a\":[1,],\"b\":\"\t\"}").is_err());
        assert!(fields("{\"a\":[1],\t\"b\":2}").is_ok());
        let s = r#"{"a":{"k":["x\"]y",{"z":[]}]},"b":1}"#;
        let f = fields(s).unwrap();
        assert_eq!(f.raw(s.as_bytes(), "a").unwrap(), br#"{"k":["x\"]y",{"z":[]}]}"#);
        assert_eq!(f.raw(s.as_bytes(), "b").unwrap(), b"1");
    }

    #[test]
    fn deep_nesting_is_bounded_not_a_stack_overflow() {
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(fields(&deep).unwrap_err().reason, "nesting too deep");
        let ok = format!("{{\"a\":{}{}}}", "[".repeat(500), "]".repeat(500));
        assert!(fields(&ok).is_ok());
    }

    #[test]
    fn special_byte_search_finds_the_first_one() {
        for pos in 0..40 {
            for c in [b'"', b'\\', 0x01u8, 0x1f] {
                let mut v = vec![b'a'; 40];
                v[pos] = c;
                if pos + 1 < 40 {
                    v[pos + 1] = b'"';
                }
                assert_eq!(find_string_special(&v, 0), pos);
            }
        }
        assert_eq!(find_string_special(&[b'a'; 17], 0), 17);
        // Before, at and past the hand-over to memchr2, from every start within a word (under
        // miri, minutes per 1000-byte string, the 40-byte one only).
        let lens: &[usize] = if cfg!(miri) { &[40] } else { &[40, 100, 1000] };
        for &len in lens {
            for pos in 0..len {
                for c in [b'"', b'\\'] {
                    let mut v = vec![0xc3u8; len];
                    v[pos] = c;
                    for from in [0, 1, 7, 8, 9].into_iter().filter(|&f| f <= pos) {
                        assert_eq!(find_quote_or_backslash(&v, from), pos);
                    }
                    assert_eq!(find_quote_or_backslash(&v, pos + 1), len);
                }
            }
        }
        assert_eq!(find_string_special(&[0x20, 0x7f, 0xc3, 0xa9], 0), 4);
    }

    /// A deterministic xorshift generator: the same inputs on every run.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    #[test]
    #[cfg_attr(miri, ignore)] // thousands of scans: minutes under miri, and safe code
    fn long_strings_in_nested_values() {
        // Quotes and escapes before, at and after the hand-over to memchr2 (WORD_PROBE), in
        // keys and values, and strings that run to the line's end.
        for len in 0..80 {
            let body = "é".repeat(len / 2) + &"x".repeat(len % 2);
            for tail in ["", "\\\"", "\\\\", "\\u00e9", "]"] {
                let text = format!("{body}{tail}{body}");
                let s = format!(r#"{{"a":{{"{text}":["{text}",{{}}]}},"b":1}}"#);
                let f = fields(&s).unwrap_or_else(|e| panic!("{s}: {e}"));
                assert_eq!(f.raw(s.as_bytes(), "b").unwrap(), b"1", "{s}");
                assert!(serde_json::from_str::<serde_json::Value>(&s).is_ok());
                let open = format!(r#"{{"a":["{text}"#);
                let e = fields(&open).unwrap_err();
                assert_eq!((e.offset, e.reason), (open.len(), "unterminated string"), "{open}");
                let esc = format!(r#"{{"a":["{text}\"#);
                let e = fields(&esc).unwrap_err();
                assert_eq!((e.offset, e.reason), (esc.len() + 1, "unterminated string"), "{esc}");
            }
        }
    }

    #[test]
    #[cfg_attr(miri, ignore)] // reads a recording: outside miri's isolation
    fn scan_agrees_with_serde_on_generated_frames() {
        // Mutated well-formed frames: what serde accepts, the scanner accepts; what the
        // scanner accepts, serde accepts once the nested values (checked for structure only,
        // when the line has no control byte) are replaced.
        let base = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/recordings/pi-text-turn.jsonl")).unwrap();
        let frames: Vec<String> = base
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()?.get("frame").cloned())
            .filter(|f| f.is_object())
            .map(|f| f.to_string())
            .collect();
        assert!(frames.len() > 5);
        const NOISE: [u8; 12] = [b'{', b'}', b'[', b']', b'"', b'\\', b',', b':', b'\n', b'\t', b'1', b'x'];
        let mut rng = Rng(42);
        let mut f = Fields::new();
        for round in 0..20_000 {
            let mut line = frames[round % frames.len()].clone().into_bytes();
            for _ in 0..rng.below(3) {
                let at = rng.below(line.len());
                match rng.below(3) {
                    0 => line[at] = NOISE[rng.below(NOISE.len())],
                    1 => line.insert(at, NOISE[rng.below(NOISE.len())]),
                    _ => {
                        line.remove(at);
                    }
                }
            }
            if std::str::from_utf8(&line).is_err() {
                continue;
            }
            let ours = f.scan(&line, 0..line.len());
            let theirs = serde_json::from_slice::<serde_json::Value>(&line);
            match (&ours, &theirs) {
                (Ok(()), Ok(v)) => assert!(v.is_object()),
                (Err(e), Ok(serde_json::Value::Object(_))) => panic!("refused valid {e}: {}", String::from_utf8_lossy(&line)),
                (Ok(()), Err(_)) => assert!(!line.iter().any(|&c| c < 0x20), "accepted {}", String::from_utf8_lossy(&line)),
                _ => {}
            }
        }
    }

    #[test]
    fn validate_any_value() {
        assert_eq!(validate(b" \"x\" ").unwrap(), Kind::String);
        assert_eq!(validate(b"null").unwrap(), Kind::Null);
        assert_eq!(validate(b"[1,2]").unwrap(), Kind::Array);
        assert!(validate(b"NaN").is_err());
        assert!(validate(b"1 2").is_err());
    }
}
