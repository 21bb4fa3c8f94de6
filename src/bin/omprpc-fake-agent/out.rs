//! The single buffered stdout writer, with protocol-v2 chunking.

use std::io::{self, BufWriter, StdoutLock, Write};

use crate::json::{base64, obj, J};

/// 1 MiB: the physical frame limit of protocol v2.
pub const MIB: usize = 1 << 20;
/// Size of the UTF-8 JSON slice carried by one `rpc_chunk`.
pub const CHUNK_BYTES: usize = 256 * 1024;

/// All stdout output goes through here. Callers flush after each logical
/// batch (a response, an event group, before sleeping or reading stdin).
pub struct Out {
    w: BufWriter<StdoutLock<'static>>,
    /// Set once `negotiate_protocol` succeeded: oversized frames are chunked.
    pub v2: bool,
    /// Protocol 1.1: every frame ends with `seq`, `timestamp` and `sessionId` (the count so far).
    pub metadata: Option<u64>,
    next_chunk_id: u64,
    scratch: Vec<u8>,
}

impl Out {
    pub fn new() -> Out {
        Out {
            w: BufWriter::with_capacity(4 * MIB, io::stdout().lock()),
            v2: false,
            metadata: None,
            next_chunk_id: 0,
            scratch: Vec::with_capacity(64 * 1024),
        }
    }

    /// Writes one logical frame (compact JSON + "\n"), chunked under v2 when
    /// its serialized length plus the newline exceeds 1 MiB.
    pub fn frame(&mut self, j: &J) {
        let mut buf = std::mem::take(&mut self.scratch);
        buf.clear();
        j.write(&mut buf);
        self.line(&buf);
        if buf.capacity() > 8 * MIB {
            buf = Vec::with_capacity(64 * 1024);
        }
        self.scratch = buf;
    }

    /// Writes pre-serialized frame text as one logical frame (see [`Out::frame`]).
    pub fn line(&mut self, bytes: &[u8]) {
        if let Some(seq) = self.metadata.as_mut().filter(|_| bytes.ends_with(b"}") && bytes.len() > 2) {
            *seq += 1;
            let mut framed = bytes[..bytes.len() - 1].to_vec();
            let tail = format!(",\"seq\":{seq},\"timestamp\":\"{}\",\"sessionId\":\"fake-session\"}}", crate::agent::timestamp());
            framed.extend_from_slice(tail.as_bytes());
            return self.raw_line(&framed);
        }
        self.raw_line(bytes)
    }

    fn raw_line(&mut self, bytes: &[u8]) {
        if self.v2 && bytes.len() + 1 > MIB {
            self.chunked(bytes);
        } else {
            self.raw(bytes);
            self.raw(b"\n");
        }
    }

    /// Splits one logical frame into an uninterrupted run of `rpc_chunk`s.
    fn chunked(&mut self, bytes: &[u8]) {
        self.next_chunk_id += 1;
        let chunk_id = format!("rpc-{}", self.next_chunk_id);
        let count = bytes.len().div_ceil(CHUNK_BYTES);
        for (index, slice) in bytes.chunks(CHUNK_BYTES).enumerate() {
            let chunk = obj! {
                "type": "rpc_chunk",
                "chunkId": chunk_id.as_str(),
                "index": index,
                "count": count,
                "byteLength": bytes.len(),
                "data": J::Safe(base64(slice)),
            };
            let text = chunk.to_bytes();
            self.raw(&text);
            self.raw(b"\n");
        }
    }

    /// Writes bytes verbatim (no framing, no chunking).
    pub fn raw(&mut self, bytes: &[u8]) {
        if self.w.write_all(bytes).is_err() {
            stdout_gone();
        }
    }

    pub fn flush(&mut self) {
        if self.w.flush().is_err() {
            stdout_gone();
        }
    }
}

/// The reader of our stdout went away (EPIPE): nobody can observe anything
/// any more, so leave quietly.
fn stdout_gone() -> ! {
    let _ = io::stderr().write_all(b"omprpc-fake-agent: stdout closed by the reader, exiting\n");
    std::process::exit(0);
}
