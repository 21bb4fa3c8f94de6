//! Base64 (RFC 4648, standard alphabet, padded): the v2 chunks' payloads and prompt images.
//! A leaf: used by `protocol` (chunk reassembly) and `prompt` (data URIs, image files).

/// `data` as padded standard base64.
pub fn encode(data: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for c in data.chunks(3) {
        let v = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
        for k in 0..4 {
            out.push(if k <= c.len() { T[(v >> (18 - 6 * k)) as usize & 63] as char } else { '=' });
        }
    }
    out
}

fn sextet(c: u8) -> Option<u32> {
    Some(match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    } as u32)
}

/// Standard base64 with padding, rejecting anything that would not re-encode to the same
/// text (bad length, stray characters, misplaced padding, non-zero trailing bits).
pub fn decode_base64_strict(src: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    const BAD: &str = "not strict base64";
    if src.len() % 4 != 0 {
        return Err(BAD.into());
    }
    out.reserve(src.len() / 4 * 3);
    let quads = src.chunks_exact(4);
    let last = quads.len().saturating_sub(1);
    for (n, q) in quads.enumerate() {
        let pad = q.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && n != last) {
            return Err(BAD.into());
        }
        let mut v: u32 = 0;
        for &c in &q[..4 - pad] {
            v = (v << 6) | sextet(c).ok_or(BAD)?;
        }
        match pad {
            0 => out.extend_from_slice(&[(v >> 16) as u8, (v >> 8) as u8, v as u8]),
            1 => {
                if v & 0x3 != 0 {
                    return Err(BAD.into());
                }
                let v = v >> 2;
                out.extend_from_slice(&[(v >> 8) as u8, v as u8]);
            }
            _ => {
                if v & 0xf != 0 {
                    return Err(BAD.into());
                }
                out.push((v >> 4) as u8);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_is_strict() {
        for n in 0..10 {
            let data: Vec<u8> = (0..n as u8).collect();
            let mut out = Vec::new();
            decode_base64_strict(encode(&data).as_bytes(), &mut out).unwrap();
            assert_eq!(out, data);
        }
        assert_eq!(encode(b"foobar"), "Zm9vYmFy");
        assert_eq!(encode(b"fo"), "Zm8=");
        for bad in ["A", "AB=C", "AB==AB==", "QR==", "QUJ=", "QUJD\n", "Q===", "QU*D"] {
            assert_eq!(decode_base64_strict(bad.as_bytes(), &mut Vec::new()).unwrap_err(), "not strict base64", "{bad}");
        }
    }
}
