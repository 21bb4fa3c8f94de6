//! Protocol v2 `rpc_chunk` reassembly (spec/PROTOCOL.md §1.3). Every rule violation is fatal
//! to the stream: the caller closes the client with the returned message.

use crate::base64::decode_base64_strict;
use crate::protocol::scan::{Fields, Kind};

/// Largest decoded slice one chunk may carry (the server cuts at 256 KiB).
pub(crate) const MAX_CHUNK_DATA: usize = 256 * 1024;
const MAX_CHUNK_ID_CHARS: usize = 128;

#[derive(Clone, Copy, Debug)]
pub struct ChunkLimits {
    /// Smallest logical frame the server chunks (its `maxFrameBytes`, 1 MiB).
    pub min_frame: usize,
    /// Largest reassembled frame (its `maxReassembledFrameBytes`, 64 MiB).
    pub max_frame: usize,
}

impl Default for ChunkLimits {
    fn default() -> Self {
        ChunkLimits { min_frame: 1024 * 1024, max_frame: 64 * 1024 * 1024 }
    }
}

impl ChunkLimits {
    fn max_count(&self) -> u64 {
        self.max_frame.div_ceil(MAX_CHUNK_DATA).max(2) as u64
    }
}

struct Partial {
    chunk_id: String,
    count: u64,
    byte_length: u64,
    next_index: u64,
    buf: Vec<u8>,
}

#[derive(Default)]
pub struct ChunkDecoder {
    enabled: bool,
    limits: ChunkLimits,
    current: Option<Partial>,
}

impl ChunkDecoder {
    pub fn enable(&mut self, limits: ChunkLimits) {
        self.enabled = true;
        self.limits = limits;
    }

    /// Back to v1 (negotiation failed): a chunk is an error again.
    pub fn disable(&mut self) {
        self.enabled = false;
        self.current = None;
    }

    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// A frame that is not a chunk arrived: legal only between sequences.
    pub fn check_not_interrupted(&self) -> Result<(), String> {
        match &self.current {
            Some(p) => Err(format!(
                "RPC chunk sequence {} was interrupted by a non-chunk frame after {} of {} chunks",
                p.chunk_id, p.next_index, p.count
            )),
            None => Ok(()),
        }
    }

    /// Feeds one `rpc_chunk` frame. Returns the reassembled frame when this was the last chunk.
    pub fn feed(&mut self, line: &[u8], f: &Fields) -> Result<Option<Vec<u8>>, String> {
        if !self.enabled {
            return Err("RPC chunk received before protocol negotiation".into());
        }
        let chunk_id = f.str(line, "chunkId").ok_or("RPC chunk has no string chunkId")?;
        if chunk_id.is_empty() || chunk_id.chars().count() > MAX_CHUNK_ID_CHARS {
            return Err(format!("RPC chunk id must be 1 to {MAX_CHUNK_ID_CHARS} characters"));
        }
        let index = integer(line, f, "index")?;
        let count = integer(line, f, "count")?;
        let byte_length = integer(line, f, "byteLength")?;
        if count < 2 || count > self.limits.max_count() {
            return Err(format!("RPC chunk count {count} is outside 2..={}", self.limits.max_count()));
        }
        if index >= count {
            return Err(format!("RPC chunk index {index} is not below count {count}"));
        }
        if byte_length < self.limits.min_frame as u64 || byte_length > self.limits.max_frame as u64 {
            return Err(format!(
                "RPC chunk byteLength {byte_length} is outside {}..={}",
                self.limits.min_frame, self.limits.max_frame
            ));
        }
        let data = f.str(line, "data").ok_or("RPC chunk has no string data")?;
        if data.is_empty() {
            return Err("RPC chunk data is empty".into());
        }
        match &self.current {
            None if index != 0 => {
                return Err(format!("RPC chunk sequence {chunk_id} started at index {index}, not 0"))
            }
            None => {
                self.current = Some(Partial {
                    chunk_id: chunk_id.to_string(),
                    count,
                    byte_length,
                    next_index: 0,
                    buf: Vec::with_capacity(byte_length as usize),
                })
            }
            Some(p) => {
                if p.chunk_id != chunk_id || p.count != count || p.byte_length != byte_length {
                    return Err(format!(
                        "RPC chunk sequence {} was interrupted by chunk sequence {chunk_id}",
                        p.chunk_id
                    ));
                }
                if index != p.next_index {
                    return Err(format!(
                        "RPC chunk {index} of sequence {chunk_id} arrived where {} was expected",
                        p.next_index
                    ));
                }
            }
        }
        let p = self.current.as_mut().expect("set above");
        let before = p.buf.len();
        decode_base64_strict(data.as_bytes(), &mut p.buf).map_err(|e| format!("RPC chunk data is {e}"))?;
        let decoded = p.buf.len() - before;
        if decoded > MAX_CHUNK_DATA {
            return Err(format!("RPC chunk decodes to {decoded} bytes, over {MAX_CHUNK_DATA}"));
        }
        if p.buf.len() as u64 > p.byte_length {
            return Err(format!(
                "RPC chunk sequence {chunk_id} exceeds its byteLength {}",
                p.byte_length
            ));
        }
        p.next_index += 1;
        if p.next_index < p.count {
            return Ok(None);
        }
        let p = self.current.take().expect("set above");
        if p.buf.len() as u64 != p.byte_length {
            return Err(format!(
                "RPC chunk sequence {chunk_id} ended with {} bytes, byteLength says {}",
                p.buf.len(),
                p.byte_length
            ));
        }
        Ok(Some(p.buf))
    }
}

fn integer(line: &[u8], f: &Fields, name: &str) -> Result<u64, String> {
    let field = f.get(line, name).ok_or_else(|| format!("RPC chunk has no {name}"))?;
    if field.kind != Kind::Number {
        return Err(format!("RPC chunk {name} is not an integer"));
    }
    let raw = std::str::from_utf8(&line[field.value.clone()]).unwrap_or("");
    raw.parse::<u64>().map_err(|_| format!("RPC chunk {name} is not a non-negative integer: {raw}"))
}


#[cfg(test)]
mod tests {
    use super::*;
    use crate::base64::encode as b64;

    fn chunk_line(id: &str, index: usize, count: usize, len: usize, data: &[u8]) -> String {
        format!(
            r#"{{"type":"rpc_chunk","chunkId":"{id}","index":{index},"count":{count},"byteLength":{len},"data":"{}"}}"#,
            b64(data)
        )
    }

    fn feed(d: &mut ChunkDecoder, line: &str) -> Result<Option<Vec<u8>>, String> {
        let mut f = Fields::new();
        f.scan(line.as_bytes(), 0..line.len()).unwrap();
        d.feed(line.as_bytes(), &f)
    }

    fn frame_of(len: usize) -> Vec<u8> {
        let mut v = br#"{"type":"x","pad":""#.to_vec();
        let tail = br#""}"#;
        v.resize(len - tail.len(), b'a');
        v.extend_from_slice(tail);
        v
    }

    #[test]
    fn exact_one_mib_frame_reassembles() {
        let frame = frame_of(1024 * 1024);
        let mut d = ChunkDecoder::default();
        d.enable(ChunkLimits::default());
        let parts: Vec<_> = frame.chunks(MAX_CHUNK_DATA).collect();
        let mut done = None;
        for (i, p) in parts.iter().enumerate() {
            done = feed(&mut d, &chunk_line("rpc-1", i, parts.len(), frame.len(), p)).unwrap();
        }
        assert_eq!(done.unwrap(), frame);
        assert!(d.check_not_interrupted().is_ok());
    }

    #[test]
    fn violations_are_reported() {
        let frame = frame_of(1024 * 1024 + 10);
        let parts: Vec<_> = frame.chunks(MAX_CHUNK_DATA).collect();
        let n = parts.len();
        let len = frame.len();
        let fresh = || {
            let mut d = ChunkDecoder::default();
            d.enable(ChunkLimits::default());
            d
        };
        assert!(feed(&mut ChunkDecoder::default(), &chunk_line("a", 0, n, len, parts[0]))
            .unwrap_err()
            .contains("before protocol negotiation"));
        assert!(feed(&mut fresh(), &chunk_line("a", 1, n, len, parts[1])).unwrap_err().contains("not 0"));
        assert!(feed(&mut fresh(), &chunk_line("", 0, n, len, parts[0])).is_err());
        assert!(feed(&mut fresh(), &chunk_line(&"x".repeat(129), 0, n, len, parts[0])).is_err());
        assert!(feed(&mut fresh(), &chunk_line("a", 0, 1, len, parts[0])).is_err());
        assert!(feed(&mut fresh(), &chunk_line("a", 0, 257, len, parts[0])).is_err());
        assert!(feed(&mut fresh(), &chunk_line("a", 0, n, 1000, parts[0])).is_err());
        assert!(feed(&mut fresh(), &chunk_line("a", 0, n, 64 * 1024 * 1024 + 1, parts[0])).is_err());
        let bool_index = r#"{"type":"rpc_chunk","chunkId":"a","index":true,"count":5,"byteLength":1048586,"data":"QQ=="}"#;
        assert!(feed(&mut fresh(), bool_index).unwrap_err().contains("not an integer"));
        let mut d = fresh();
        feed(&mut d, &chunk_line("a", 0, n, len, parts[0])).unwrap();
        assert!(d.check_not_interrupted().is_err());
        assert!(feed(&mut d, &chunk_line("b", 1, n, len, parts[1])).unwrap_err().contains("interrupted"));
        let mut d = fresh();
        feed(&mut d, &chunk_line("a", 0, n, len, parts[0])).unwrap();
        assert!(feed(&mut d, &chunk_line("a", 2, n, len, parts[2])).unwrap_err().contains("expected"));
        // Total short of byteLength at the last chunk.
        let mut d = fresh();
        let short = len + 5;
        let mut last = Ok(None);
        for (i, p) in parts.iter().enumerate() {
            last = feed(&mut d, &chunk_line("a", i, n, short, p));
        }
        assert!(last.unwrap_err().contains("ended with"));
    }
}
