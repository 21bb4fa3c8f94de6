//! Just enough of a TypeScript declaration reader to list what an agent's own type files
//! declare: the members of a union type alias (`export type RpcCommand = { … } | { … };`), the
//! fields of an object type (`{ id?: string; type: "prompt"; message: string }`) and of an
//! interface. Used by `tests/protocol_table.rs` to hold `src/protocol/table.json` against the
//! installed pi's `rpc-types.d.ts` and omp's `rpc-types.ts`.
//!
//! It is not a TypeScript parser: it tracks bracket depth and string literals, which is all
//! these declaration files need (they are generated `.d.ts` for pi and hand-written type-only
//! modules for omp). Anything it cannot read is reported by the caller as a failure, never
//! skipped.

#![allow(dead_code)]

/// One field of an object type: `name?: type`.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    pub name: String,
    pub optional: bool,
    /// The type's source text, whitespace collapsed.
    pub ty: String,
}

/// The index just past the string literal that opens at `b[i]` (a quote, `'` or backtick).
fn past_string(b: &[u8], mut i: usize) -> usize {
    let q = b[i];
    i += 1;
    while i < b.len() && b[i] != q {
        i += if b[i] == b'\\' { 2 } else { 1 };
    }
    (i + 1).min(b.len())
}

/// The source without `//` and `/* */` comments (string literals kept intact).
pub fn strip_comments(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' | b'\'' | b'`' => {
                let start = i;
                i = past_string(b, i);
                out.push_str(&src[start..i]);
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
            }
            _ => {
                let start = i;
                i += 1;
                while i < b.len() && !matches!(b[i], b'"' | b'\'' | b'`' | b'/') {
                    i += 1;
                }
                out.push_str(&src[start..i]);
            }
        }
    }
    out
}

/// Splits `text` at every top-level occurrence of one of `seps` (outside brackets, generics
/// and string literals). `=>` does not close a generic.
fn split_top(text: &str, seps: &[u8]) -> Vec<String> {
    let b = text.as_bytes();
    let (mut depth, mut i, mut start) = (0i32, 0, 0);
    let mut parts = Vec::new();
    while i < b.len() {
        match b[i] {
            b'"' | b'\'' | b'`' => {
                i = past_string(b, i);
                continue;
            }
            b'{' | b'(' | b'[' | b'<' => depth += 1,
            b'}' | b')' | b']' => depth -= 1,
            b'>' if i > 0 && b[i - 1] == b'=' => {}
            b'>' => depth -= 1,
            c if depth == 0 && seps.contains(&c) => {
                parts.push(text[start..i].to_string());
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    parts.push(text[start..].to_string());
    parts.into_iter().map(|p| collapse(&p)).filter(|p| !p.is_empty()).collect()
}

/// Whitespace runs to one space, trimmed.
pub fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The text after `export type NAME =` (or `type NAME =`) up to its closing top-level `;`.
pub fn type_alias(src: &str, name: &str) -> Option<String> {
    let src = strip_comments(src);
    for prefix in ["export type ", "type "] {
        let needle = format!("{prefix}{name} =");
        if let Some(at) = src.find(&needle) {
            let rest = &src[at + needle.len()..];
            let first = split_top(rest, b";").into_iter().next()?;
            return Some(first);
        }
    }
    None
}

/// A generic type alias `type NAME<P> = …;`: its parameter and the text after `=` up to the
/// closing top-level `;`.
pub fn generic_type_alias(src: &str, name: &str) -> Option<(String, String)> {
    let src = strip_comments(src);
    let at = src.find(&format!("type {name}<"))? + "type ".len() + name.len() + 1;
    let rest = &src[at..];
    let close = rest.find('>')?;
    let param = rest[..close].trim().to_string();
    let after = rest[close + 1..].trim_start().strip_prefix('=')?;
    Some((param, split_top(after, b";").into_iter().next()?))
}

/// A conditional alias that adds fields to some members of a union, as pi 1.x's
/// `WithParentToolCallId<E> = E extends { type: "a" | "b" } ? E & { x?: string } : E`: the
/// `type` literals it applies to and the fields it adds. `None` for any other shape.
pub fn member_extension(param: &str, body: &str) -> Option<(Vec<String>, Vec<Field>)> {
    let rest = body.trim().strip_prefix(param)?.trim_start().strip_prefix("extends")?.trim_start();
    let cond = braced(rest)?;
    let rest = rest[cond.len()..].trim_start().strip_prefix('?')?.trim_start().strip_prefix(param)?.trim_start().strip_prefix('&')?.trim_start();
    let extra = braced(rest)?;
    let otherwise = rest[extra.len()..].trim_start().strip_prefix(':')?.trim();
    if otherwise != param {
        return None;
    }
    let cond_fields = object_fields(&cond)?;
    let types = literal_union(&cond_fields.iter().find(|f| f.name == "type")?.ty)?;
    Some((types, object_fields(&extra)?))
}

/// The body of `export interface NAME { … }` (with its braces).
pub fn interface(src: &str, name: &str) -> Option<String> {
    let src = strip_comments(src);
    let at = src.find(&format!("interface {name} "))?;
    let rest = &src[at..];
    let open = rest.find('{')?;
    let body = braced(&rest[open..])?;
    Some(body)
}

/// Every `interface NAME … { … }` of the file, in order: (name, body with braces).
pub fn interfaces(src: &str) -> Vec<(String, String)> {
    let src = strip_comments(src);
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = src[from..].find("interface ") {
        let at = from + at;
        let rest = &src[at + "interface ".len()..];
        let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        match rest.find('{').and_then(|o| braced(&rest[o..])) {
            Some(body) if !name.is_empty() => {
                from = at + "interface ".len() + rest.find('{').unwrap() + body.len();
                out.push((name, body));
            }
            _ => from = at + "interface ".len(),
        }
    }
    out
}

/// The balanced `{ … }` at the start of `text`.
fn braced(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let mut depth = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' | b'\'' | b'`' => {
                i = past_string(b, i);
                continue;
            }
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(text[..=i].to_string());
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The members of a union: `A | { … } | B` → `["A", "{ … }", "B"]`.
pub fn union_members(alias_body: &str) -> Vec<String> {
    split_top(alias_body, b"|")
}

/// The fields of an object type `{ a: string; b?: number }` (an interface body too). `None`
/// when `text` is not a braced object type.
pub fn object_fields(text: &str) -> Option<Vec<Field>> {
    let t = text.trim();
    if !t.starts_with('{') || !t.ends_with('}') {
        return None;
    }
    let inner = &t[1..t.len() - 1];
    let mut fields = Vec::new();
    for part in split_top(inner, b";\n,") {
        let part = part.strip_prefix("readonly ").unwrap_or(&part).to_string();
        if part.starts_with('[') {
            continue; // an index signature: no named field
        }
        let colon = part.find(':')?;
        let (lhs, ty) = (part[..colon].trim(), collapse(&part[colon + 1..]));
        let (name, optional) = match lhs.strip_suffix('?') {
            Some(n) => (n.trim().to_string(), true),
            None => (lhs.to_string(), false),
        };
        fields.push(Field { name, optional, ty });
    }
    Some(fields)
}

/// The string literal a field is typed with: `type: "prompt"` → `prompt`.
pub fn literal(fields: &[Field], name: &str) -> Option<String> {
    let f = fields.iter().find(|f| f.name == name)?;
    let t = f.ty.trim();
    (t.len() >= 2 && t.starts_with('"') && t.ends_with('"')).then(|| t[1..t.len() - 1].to_string())
}

/// The string literals of a literal union type: `"all" | "one-at-a-time"`.
pub fn literal_union(ty: &str) -> Option<Vec<String>> {
    let parts = split_top(ty, b"|");
    parts
        .iter()
        .map(|p| (p.len() >= 2 && p.starts_with('"') && p.ends_with('"')).then(|| p[1..p.len() - 1].to_string()))
        .collect()
}

/// Every `type: "…"` object literal passed straight to a call whose name ends in `call`
/// (`output({ type: "notice", … })`, `this.#output({\n type: … })`): the frame types a mode
/// emits without a declared type.
pub fn emitted_literals(src: &str, call: &str) -> Vec<String> {
    let src = strip_comments(src);
    let needle = format!("{call}({{");
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = src[from..].find(&needle) {
        let rest = src[from + at + needle.len()..].trim_start();
        from += at + needle.len();
        if let Some(lit) = rest.strip_prefix("type: \"") {
            if let Some(end) = lit.find('"') {
                out.push(lit[..end].to_string());
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The declaration of `name` in `src`: the body of `type NAME<…> = …;` (`Alias`) or of
/// `interface NAME<…> … { … }` (`Interface`, with its braces). Generic parameters are skipped.
#[derive(Clone, Debug, PartialEq)]
pub enum Declaration {
    Alias(String),
    Interface(String),
}

/// Finds `type NAME` / `interface NAME` followed by `=`, `<`, `{`, ` ` (not a longer name).
pub fn declaration(src: &str, name: &str) -> Option<Declaration> {
    let src = strip_comments(src);
    for keyword in ["type ", "interface "] {
        let needle = format!("{keyword}{name}");
        let mut from = 0;
        while let Some(at) = src[from..].find(&needle) {
            let start = from + at;
            from = start + needle.len();
            let before_ok = start == 0 || !src[..start].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '.');
            let mut rest = &src[from..];
            if !before_ok || rest.starts_with(|c: char| c.is_alphanumeric() || c == '_') {
                continue;
            }
            rest = rest.trim_start();
            if rest.starts_with('<') {
                let close = matching_angle(rest)?;
                rest = rest[close + 1..].trim_start();
            }
            if keyword == "type " {
                let Some(after) = rest.strip_prefix('=') else { continue };
                return Some(Declaration::Alias(split_top(after, b";").into_iter().next()?));
            }
            let open = rest.find('{')?;
            return Some(Declaration::Interface(braced(&rest[open..])?));
        }
    }
    None
}

/// The index of the `>` closing the `<` at the start of `text` (`=>` does not close).
fn matching_angle(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    let mut depth = 0;
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'<' => depth += 1,
            b'>' if i > 0 && b[i - 1] == b'=' => {}
            b'>' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// The object members a type expression stands for, each with its fields: an object type, a
/// union (each member), a name (its alias or interface, generic arguments dropped), a
/// conditional `C extends X ? { … } : never` (the object), `M[keyof M]` (the types of the
/// members of interface `M`). `None` when something cannot be read.
pub fn object_members(src: &str, text: &str) -> Option<Vec<Vec<Field>>> {
    let t = text.trim().trim_start_matches('(').trim_end_matches(')').trim();
    let members = union_members(t);
    if members.len() > 1 {
        let mut out = Vec::new();
        for m in members {
            out.extend(object_members(src, &m)?);
        }
        return Some(out);
    }
    if t.starts_with('{') {
        return Some(vec![object_fields(t)?]);
    }
    if let Some(at) = t.find(" ? {") {
        if t[..at].contains(" extends ") {
            return Some(vec![object_fields(&braced(&t[at + 3..])?)?]);
        }
    }
    if let Some((map, key)) = t.strip_suffix(']').and_then(|r| r.split_once('[')) {
        if key.trim() == format!("keyof {}", map.trim()) {
            // Every declaration of the interface: declaration merging (`declare module`) adds members.
            let mut out = Vec::new();
            for (_, body) in interfaces(src).into_iter().filter(|(n, _)| n == map.trim()) {
                for f in object_fields(&body)? {
                    out.extend(object_members(src, &f.ty)?);
                }
            }
            return Some(out);
        }
    }
    let name: String = t.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    if name.is_empty() || !(t.len() == name.len() || t[name.len()..].starts_with('<')) {
        return None;
    }
    match declaration(src, &name)? {
        Declaration::Alias(body) => object_members(src, &body),
        Declaration::Interface(body) => Some(vec![object_fields(&body)?]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_union_of_object_types_splits_into_members_with_fields() {
        let src = r#"
            /** doc with a | bar */
            export type C = { id?: string; type: "a"; mode: "all" | "one" } // trailing |
              | { id?: string; type: "b"; cb: (x: number) => void; xs: Array<{ k: string }> };
            export type D = number;
        "#;
        let body = type_alias(src, "C").unwrap();
        let members = union_members(&body);
        assert_eq!(members.len(), 2, "{members:?}");
        let a = object_fields(&members[0]).unwrap();
        assert_eq!(literal(&a, "type").as_deref(), Some("a"));
        assert_eq!(literal_union(&a[2].ty).unwrap(), vec!["all", "one"]);
        assert!(a[0].optional && !a[1].optional);
        let b = object_fields(&members[1]).unwrap();
        assert_eq!(b.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(), ["id", "type", "cb", "xs"]);
        assert_eq!(b[3].ty, "Array<{ k: string }>");
    }

    #[test]
    fn a_conditional_alias_that_extends_some_members_is_read() {
        let src = "type W<E> = E extends {\n type: \"a\" | \"b\";\n} ? E & {\n /** doc */ parent?: string;\n} : E;";
        let (param, body) = generic_type_alias(src, "W").unwrap();
        assert_eq!(param, "E");
        let (types, fields) = member_extension(&param, &body).unwrap();
        assert_eq!(types, ["a", "b"]);
        assert_eq!(fields, [Field { name: "parent".into(), optional: true, ty: "string".into() }]);
        assert!(member_extension("E", "E extends { type: \"a\" } ? E : never").is_none());
    }

    #[test]
    fn interfaces_and_emitted_literals_are_found() {
        let src = "export interface A { type: \"x\"; n: number }\ninterface B extends A {\n  m?: string;\n}\n\
                   output({ type: \"notice\", level }); this.#output({\n  type: \"ready\" }); output(x);";
        let all = interfaces(src);
        assert_eq!(all.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["A", "B"]);
        assert_eq!(object_fields(&all[1].1).unwrap()[0].name, "m");
        assert_eq!(emitted_literals(src, "output"), ["notice", "ready"]);
    }

    #[test]
    fn unions_of_named_generic_and_conditional_members_are_read() {
        let src = "export interface A { type: \"a\"; n: number }\n\
                   export type B<T = X> = IsOk<T> extends true ? { type: \"b\"; d?: T } : never;\n\
                   interface Extra {}\ninterface Extra { c: C; }\ninterface C { type: \"c\" }\n\
                   export type U = A | B<number> | Extra[keyof Extra] | { type: \"d\" };\ntype UU = 1;";
        let all = object_members(src, "U").unwrap();
        let tags: Vec<String> = all.iter().map(|f| literal(f, "type").unwrap()).collect();
        assert_eq!(tags, ["a", "b", "c", "d"]);
        assert_eq!(all[1][1], Field { name: "d".into(), optional: true, ty: "T".into() });
        assert_eq!(declaration(src, "UU"), Some(Declaration::Alias("1".into())));
        assert!(object_members(src, "Missing").is_none());
    }
}
