//! Protocol v2 chunk reassembly (src/transport/chunks.rs) and its strict base64.
//!
//! Mode 0 (valid splits): the payload is cut at fuzzer-chosen points into a correct chunk
//! sequence (id, count, byteLength, standard base64), optionally disturbed once (a foreign
//! frame, a repeated or skipped chunk, a wrong byteLength, a non-canonical base64 tail); an
//! undisturbed sequence must reassemble to exactly the payload, a disturbed one must fail.
//! Mode 1 (raw): arbitrary lines through the reader's frame check and the decoder, which must
//! never panic and may only yield a frame of exactly its byteLength.
//! Mode 2: strict base64 — whatever decodes must re-encode to the same text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use omprpc::fuzzing::{check_frame, decode_base64_strict, ChunkDecoder, ChunkLimits, Fields, MAX_CHUNK_DATA};

fn b64(data: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(data.len().div_ceil(3) * 4);
    for c in data.chunks(3) {
        let v = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
        for k in 0..4 {
            s.push(if k <= c.len() { T[(v >> (18 - 6 * k)) as usize & 63] as char } else { '=' });
        }
    }
    s
}

fn line(id: &str, index: usize, count: usize, len: usize, data: &str) -> Vec<u8> {
    let id = serde_json::to_string(id).unwrap();
    format!(r#"{{"type":"rpc_chunk","chunkId":{id},"index":{index},"count":{count},"byteLength":{len},"data":"{data}"}}"#)
        .into_bytes()
}

fn feed(d: &mut ChunkDecoder, f: &mut Fields, l: &[u8]) -> Result<Option<Vec<u8>>, String> {
    check_frame(f, l).expect("a chunk line we built is a valid frame");
    d.feed(l, f)
}

fn valid_splits(input: &[u8]) {
    if input.len() < 4 {
        return;
    }
    let (hdr, rest) = input.split_at(4);
    let id_len = 1 + hdr[0] as usize % 8;
    if rest.len() < id_len + 2 {
        return;
    }
    let (id_bytes, payload) = rest.split_at(id_len);
    let id = String::from_utf8_lossy(id_bytes).into_owned();
    // Split points: up to 2..=17 pieces, each non-empty.
    let want = 2 + hdr[1] as usize % 16;
    let count = want.min(payload.len());
    if count < 2 {
        return;
    }
    let mut cuts = vec![0usize];
    let mut seed = u32::from(hdr[2]).wrapping_mul(2654435761) | 1;
    for i in 1..count {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        let lo = cuts[i - 1] + 1;
        let hi = payload.len() - (count - i); // room for the remaining pieces
        cuts.push(lo + seed as usize % (hi - lo + 1));
    }
    cuts.push(payload.len());
    let limits = ChunkLimits { min_frame: 1, max_frame: 64 << 20 };
    let mut d = ChunkDecoder::default();
    d.enable(limits);
    let mut f = Fields::new();
    let disturb = hdr[3] % 8; // 0..=2: none; others below
    let at = hdr[3] as usize / 8 % count;
    let mut done = None;
    let mut failed = false;
    for i in 0..count {
        let piece = &payload[cuts[i]..cuts[i + 1]];
        let mut lines = vec![line(&id, i, count, payload.len(), &b64(piece))];
        if i == at {
            match disturb {
                3 => lines.insert(0, br#"{"type":"agent_start"}"#.to_vec()),
                4 => lines.push(lines[0].clone()),
                5 => lines.clear(),
                6 => lines[0] = line(&id, i, count, payload.len() + 1, &b64(piece)),
                7 => {
                    // A non-canonical last quad (trailing bits set) must be refused.
                    let mut t = b64(piece);
                    if t.ends_with('=') {
                        let p = t.find('=').unwrap();
                        let c = t.as_bytes()[p - 1];
                        let bumped = if c == b'/' { b'A' } else { c + 1 };
                        if bumped.is_ascii_alphanumeric() || bumped == b'+' || bumped == b'/' {
                            t.replace_range(p - 1..p, std::str::from_utf8(&[bumped]).unwrap());
                        }
                    } else {
                        t.push_str("A===");
                    }
                    lines[0] = line(&id, i, count, payload.len(), &t);
                }
                _ => {}
            }
        }
        for l in &lines {
            let mut fl = Fields::new();
            check_frame(&mut fl, l).unwrap();
            let r = if fl.str(l, "type").as_deref() == Some("rpc_chunk") {
                feed(&mut d, &mut f, l)
            } else {
                d.check_not_interrupted().map(|_| None)
            };
            match r {
                Ok(Some(frame)) => done = Some(frame),
                Ok(None) => {}
                Err(_) => failed = true,
            }
            if failed {
                break;
            }
        }
        if failed {
            break;
        }
    }
    // A foreign frame before the first chunk is legal; skipping the last chunk leaves the
    // sequence open; every other disturbance is a violation.
    match disturb {
        3 if at == 0 => {}
        5 if at == count - 1 => {
            assert!(!failed && done.is_none(), "an incomplete sequence yielded a frame");
            assert!(d.check_not_interrupted().is_err());
            return;
        }
        3..=7 => {
            assert!(failed, "disturbance {disturb} at chunk {at} of {count} went unnoticed");
            return;
        }
        _ => {}
    }
    assert!(!failed, "a correct chunk sequence was refused");
    assert_eq!(done.as_deref(), Some(payload), "reassembled frame differs from the original");
    assert!(d.check_not_interrupted().is_ok());
}

fn raw(input: &[u8]) {
    let mut d = ChunkDecoder::default();
    let limits = ChunkLimits { min_frame: 4, max_frame: 4096 };
    let mut enabled = false;
    let mut f = Fields::new();
    for l in input.split(|&b| b == b'\n') {
        if l == b"ENABLE" {
            d.enable(limits);
            enabled = true;
            continue;
        }
        if check_frame(&mut f, l).is_err() {
            continue;
        }
        let r = if f.str_bytes(l, "type").as_deref() == Some(b"rpc_chunk") {
            d.feed(l, &f)
        } else {
            d.check_not_interrupted().map(|_| None)
        };
        match r {
            Ok(Some(frame)) => {
                assert!(enabled);
                let want: u64 = f.raw(l, "byteLength").and_then(|r| std::str::from_utf8(r).ok()?.parse().ok()).unwrap();
                assert_eq!(frame.len() as u64, want);
                assert!(frame.len() >= limits.min_frame && frame.len() <= limits.max_frame);
            }
            Ok(None) => {}
            // The reader closes the client on the first violation.
            Err(m) => {
                assert!(!m.is_empty());
                return;
            }
        }
    }
}

fn strict_base64(input: &[u8]) {
    let mut out = Vec::new();
    if decode_base64_strict(input, &mut out).is_ok() {
        assert_eq!(b64(&out).as_bytes(), input, "accepted base64 that does not re-encode to itself");
        assert!(out.len() <= MAX_CHUNK_DATA * 64);
    }
    // And every encoding decodes back.
    let mut back = Vec::new();
    decode_base64_strict(b64(input).as_bytes(), &mut back).expect("canonical base64 refused");
    assert_eq!(back, input);
}

fuzz_target!(|input: &[u8]| {
    let Some((&mode, rest)) = input.split_first() else { return };
    match mode % 3 {
        0 => valid_splits(rest),
        1 => raw(rest),
        _ => strict_base64(rest),
    }
});
