//! The stdout LF framer (src/transport, `Framer`): arbitrary bytes, cut into reads of
//! fuzzer-chosen sizes, with an optional small max frame size and a sink that may stop early.
//! Checked against a model: frames are the LF-separated lines with one trailing CR dropped;
//! emitted frames + dropped terminators + held-back bytes account for every input byte.
//!
//! Input: [limit selector, piece-size seed, stop-after, flags, data...].
#![no_main]

use libfuzzer_sys::fuzz_target;
use omprpc::fuzzing::{Framed, Framer, LineSink};

struct Sink {
    lines: Vec<Vec<u8>>,
    stop_after: Option<usize>,
    end_of_reads: usize,
}

impl LineSink for Sink {
    fn line(&mut self, line: &[u8]) -> bool {
        assert!(!line.contains(&b'\n'), "a frame holds no LF");
        self.lines.push(line.to_vec());
        self.stop_after != Some(self.lines.len())
    }
    fn end_of_read(&mut self) {
        self.end_of_reads += 1;
    }
}

fuzz_target!(|input: &[u8]| {
    if input.len() < 4 {
        return;
    }
    let (hdr, data) = input.split_at(4);
    let limit = if hdr[0] % 4 == 0 { None } else { Some((hdr[0] / 4) as usize % 48) };
    let max_piece = 1 + hdr[1] as usize % 64;
    let stop_after = if hdr[2] == 0 { None } else { Some(hdr[2] as usize % 16 + 1) };
    let flags = hdr[3];

    // The model: complete lines (one CR before the LF dropped) and the unterminated rest.
    let mut model: Vec<&[u8]> = Vec::new();
    let mut rest = data;
    while let Some(p) = rest.iter().position(|&b| b == b'\n') {
        let mut l = &rest[..p];
        if l.last() == Some(&b'\r') {
            l = &l[..l.len() - 1];
        }
        model.push(l);
        rest = &rest[p + 1..];
    }

    let mut framer = Framer::new(limit);
    let mut sink = Sink { lines: Vec::new(), stop_after, end_of_reads: 0 };
    let mut rng = u32::from(flags) | 1;
    let mut pos = 0;
    let mut commits = 0;
    let mut outcome = Framed::More;
    while pos < data.len() {
        rng ^= rng << 13;
        rng ^= rng >> 17;
        rng ^= rng << 5;
        if flags & 1 != 0 && rng % 7 == 0 {
            // A read that failed (EINTR) or returned nothing: the tail is dropped again.
            let before = framer.partial();
            let _ = framer.read_buf();
            framer.unread();
            assert_eq!(framer.partial(), before);
        }
        let buf = framer.read_buf();
        assert!(!buf.is_empty());
        let n = (1 + rng as usize % max_piece).min(buf.len()).min(data.len() - pos);
        buf[..n].copy_from_slice(&data[pos..pos + n]);
        pos += n;
        commits += 1;
        outcome = framer.commit(n, &mut sink);
        if outcome != Framed::More {
            break;
        }
    }
    assert_eq!(sink.end_of_reads, commits, "end_of_read once per read");

    let k = sink.lines.len();
    assert!(k <= model.len());
    for (i, l) in sink.lines.iter().enumerate() {
        assert_eq!(l.as_slice(), model[i], "frame {i}");
        if let Some(m) = limit {
            assert!(l.len() <= m, "frame {i} over the limit was delivered");
        }
    }
    match outcome {
        Framed::More => {
            assert_eq!(pos, data.len());
            assert_eq!(k, model.len(), "every complete line delivered");
            assert_eq!(framer.partial(), rest.len(), "the unterminated rest is held back");
            // Accounting: frames + stripped CRs + LFs + held bytes == input.
            let crs = data.split(|&b| b == b'\n').take(k).filter(|l| l.last() == Some(&b'\r')).count();
            let total: usize = sink.lines.iter().map(Vec::len).sum::<usize>() + crs + k + framer.partial();
            assert_eq!(total, data.len());
            if let Some(m) = limit {
                assert!(rest.len() <= m + 1, "an unterminated frame over the limit went unnoticed");
            }
        }
        Framed::Stopped => {
            assert_eq!(Some(k), stop_after, "stopped only when the sink asked");
        }
        Framed::TooLong { limit: l } => {
            let m = limit.expect("no limit, no TooLong");
            assert_eq!(l, m);
            // The frame after the delivered ones is really too long.
            if k < model.len() && model[k].len() > m {
                // a complete line over the limit
            } else {
                assert_eq!(k, model.len(), "TooLong with a short next frame");
                assert!(rest.len() > m + 1, "unterminated frame of {} bytes called too long (limit {m})", rest.len());
            }
        }
    }
});
