//! Transport: the agent process, its pipes, LF framing, v2 chunk reassembly and the stderr ring;
//! the tool bridge's sockets. What differs per platform is in `process`, `pump` and `socket`,
//! each with a `unix` and a `windows` half.

pub mod bytes;
pub mod process;
mod pump;
pub mod record;
pub mod socket;

use std::collections::VecDeque;
use std::io;
use std::ops::Range;
use std::sync::Arc;

pub use pump::pump;

/// A stderr "line" longer than this is cut into pieces, so a flood without newlines cannot
/// grow memory without bound.
const MAX_STDERR_LINE: usize = 64 * 1024;
/// Bytes asked of one read of stdout while the agent writes little (replies, a turn's frames):
/// the buffer an idle client keeps is this small.
const MIN_READ: usize = 16 * 1024;
/// While reads come back full (a burst), each asks twice as much as the last, up to this (so a
/// burst costs few reads), and a frame longer than that is read in pieces as long as what has
/// accumulated (so a 64 MiB frame takes tens of reads, not thousands), up to MAX_READ.
const READ_SIZE: usize = 128 * 1024;
const MAX_READ: usize = 4 << 20;
/// A read whose complete lines fill at least this much, and at least half of its buffer, is
/// kept whole and its frames handed over as shared ranges of it (`LineSink::shared_line`); a
/// smaller or sparser one (a reply, a few frames while the agent writes little) is handed over
/// line by line and copied by whoever keeps a frame, so a queued event never holds a mostly
/// empty buffer.
const SHARE_FROM: usize = 32 * 1024;
/// How many trailing stderr lines an error message quotes.
const STDERR_TAIL_LINES: usize = 20;

/// The last N lines the agent wrote to stderr.
pub struct StderrRing {
    lines: VecDeque<String>,
    max_lines: Option<usize>,
    partial: Vec<u8>,
}

impl StderrRing {
    pub fn new(max_lines: Option<usize>) -> Self {
        StderrRing { lines: VecDeque::new(), max_lines, partial: Vec::new() }
    }

    pub fn feed(&mut self, mut data: &[u8]) {
        while let Some(pos) = memchr::memchr(b'\n', data) {
            self.partial.extend_from_slice(&data[..=pos]);
            self.push_partial();
            data = &data[pos + 1..];
        }
        self.partial.extend_from_slice(data);
        while self.partial.len() > MAX_STDERR_LINE {
            let rest = self.partial.split_off(MAX_STDERR_LINE);
            self.push_partial();
            self.partial = rest;
        }
    }

    fn push_partial(&mut self) {
        let line = String::from_utf8_lossy(&self.partial).into_owned();
        self.partial.clear();
        if self.max_lines == Some(0) {
            return;
        }
        if let Some(max) = self.max_lines {
            while self.lines.len() >= max {
                self.lines.pop_front();
            }
        }
        self.lines.push_back(line);
    }

    /// An unterminated last line counts once the stream has ended.
    pub fn finish(&mut self) {
        if !self.partial.is_empty() {
            self.push_partial();
        }
    }

    /// All retained lines, each ending as the agent wrote it.
    pub fn text(&self) -> String {
        let mut s: String = self.lines.iter().map(String::as_str).collect();
        s.push_str(&String::from_utf8_lossy(&self.partial));
        s
    }

    /// The last few lines, for error messages.
    pub fn tail(&self) -> String {
        let skip = self.lines.len().saturating_sub(STDERR_TAIL_LINES);
        let mut s: String = self.lines.iter().skip(skip).map(String::as_str).collect();
        s.push_str(&String::from_utf8_lossy(&self.partial));
        s.trim_end().to_string()
    }
}

/// Receives the agent's stdout, one frame line at a time (LF stripped, and a CR before it).
pub trait LineSink {
    /// Returns false to stop reading (a fatal fault was reported).
    fn line(&mut self, line: &[u8]) -> bool;
    /// The same for a line of a dense read kept whole: `read[range]`. A sink that keeps frames
    /// keeps a [`bytes::FrameBytes`] of it instead of a copy.
    fn shared_line(&mut self, read: &Arc<Vec<u8>>, range: Range<usize>) -> bool {
        self.line(&read[range])
    }
    /// Every complete line of one read has been handed over (a good moment to publish).
    fn end_of_read(&mut self) {}
}

/// Why the stdout pump stopped.
#[derive(Debug)]
pub enum PumpEnd {
    /// stdout closed; `partial` bytes of an unterminated frame were left over.
    Eof { partial: usize },
    /// A frame grew past the configured maximum.
    FrameTooLong { limit: usize },
    /// The sink asked to stop, or the stop descriptor became readable.
    Stopped,
    Io(io::Error),
}

/// What one read of stdout came to, after its complete lines went to the sink.
#[derive(Debug, PartialEq, Eq)]
pub enum Framed {
    /// Keep reading.
    More,
    /// The sink asked to stop.
    Stopped,
    /// A frame (terminated, or still growing) is longer than the configured maximum.
    TooLong { limit: usize },
}

/// LF framing of the stdout byte stream, apart from the reading itself (so the fuzzer drives
/// exactly this code with arbitrary read boundaries). A line ends at LF; one CR before the LF
/// is dropped with it; anything else, empty lines included, goes to the sink as is.
/// Each platform's pump adds how its reads land in the buffer (`pump/unix.rs`: `read_from`;
/// `pump/windows.rs`: `commit_bytes`).
pub struct Framer {
    buf: Vec<u8>,
    /// Bytes of `buf` already searched for LF, so a long frame is scanned once, not per read.
    scanned: usize,
    /// `buf.len()` before the current read's zeroed tail was added.
    filled: usize,
    /// What the next read asks for (MIN_READ..=READ_SIZE), following how full reads come back.
    read_size: usize,
    max_frame: Option<usize>,
}

impl Framer {
    pub fn new(max_frame: Option<usize>) -> Framer {
        Framer { buf: Vec::new(), scanned: 0, filled: 0, read_size: MIN_READ, max_frame }
    }

    /// Begins a read: notes where it will land and returns how many bytes it asks for.
    fn begin_read(&mut self) -> usize {
        self.filled = self.buf.len();
        self.read_size.max(self.filled.min(MAX_READ))
    }

    /// Room for the next read: a zeroed tail. Follow with `commit` (bytes read) or `unread`
    /// (nothing read). The pump reads with `read_from` instead; this is for callers that fill
    /// the buffer themselves (the fuzzer, tests).
    pub fn read_buf(&mut self) -> &mut [u8] {
        let room = self.begin_read();
        self.buf.resize(self.filled + room, 0);
        &mut self.buf[self.filled..]
    }

    /// The read failed or hit EOF: drop the tail `read_buf` added.
    pub fn unread(&mut self) {
        self.buf.truncate(self.filled);
    }

    /// Bytes of an unterminated frame held back.
    pub fn partial(&self) -> usize {
        self.buf.len()
    }

    /// `n` bytes were read into `read_buf()`: hands every complete line to `sink`.
    pub fn commit(&mut self, n: usize, sink: &mut dyn LineSink) -> Framed {
        self.read_size = if n >= self.read_size {
            (self.read_size * 2).min(READ_SIZE)
        } else if n < MIN_READ {
            MIN_READ
        } else {
            self.read_size
        };
        self.buf.truncate(self.filled + n);
        // What came before this read is one unterminated frame (no LF): the read's complete
        // lines end at its last LF.
        let complete = memchr::memrchr(b'\n', &self.buf[self.scanned..]).map_or(0, |pos| self.scanned + pos + 1);
        let handed = if complete >= SHARE_FROM && complete * 2 >= self.buf.capacity() {
            // Kept whole: the unterminated rest moves to a fresh buffer.
            let rest = self.buf[complete..].to_vec();
            let read = Arc::new(std::mem::replace(&mut self.buf, rest));
            each_line(&read[..complete], self.scanned, self.max_frame, |range| sink.shared_line(&read, range))
        } else {
            let handed = each_line(&self.buf[..complete], self.scanned, self.max_frame, |range| sink.line(&self.buf[range]));
            if handed == Framed::More {
                self.buf.drain(..complete);
            }
            handed
        };
        sink.end_of_read();
        if handed != Framed::More {
            return handed;
        }
        let buf = &mut self.buf;
        // A burst or a huge frame grew the buffer: give the memory back once the agent writes
        // little again (issue 24: what a client keeps once its turn is read).
        if self.read_size == MIN_READ && buf.capacity() > 4 * MIN_READ && buf.len() < MIN_READ {
            buf.shrink_to(MIN_READ);
        } else if buf.capacity() > 8 * READ_SIZE && buf.len() < READ_SIZE {
            buf.shrink_to(2 * READ_SIZE);
        }
        self.scanned = buf.len();
        if let Some(limit) = self.max_frame {
            // limit + 1: an unterminated frame of exactly `limit` bytes may still end in CR LF.
            if buf.len() > limit + 1 {
                return Framed::TooLong { limit };
            }
        }
        Framed::More
    }
}

/// Hands each line of `lines` (complete lines, each ending in LF) to `sink` as its range, LF
/// stripped and one CR before it: `More`, or where handing over stopped. The first `scanned`
/// bytes hold no LF (a long frame's earlier reads): not searched again.
fn each_line(lines: &[u8], scanned: usize, max_frame: Option<usize>, mut sink: impl FnMut(Range<usize>) -> bool) -> Framed {
    let mut start = 0;
    let mut from = scanned.min(lines.len());
    while let Some(pos) = memchr::memchr(b'\n', &lines[from..]) {
        let lf = from + pos;
        let end = if lf > start && lines[lf - 1] == b'\r' { lf - 1 } else { lf };
        if let Some(limit) = max_frame {
            if end - start > limit {
                return Framed::TooLong { limit };
            }
        }
        if !sink(start..end) {
            return Framed::Stopped;
        }
        start = lf + 1;
        from = start;
    }
    Framed::More
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wait::lock;
    use std::sync::Mutex;

    #[test]
    fn stderr_ring_keeps_the_last_lines() {
        let mut r = StderrRing::new(Some(1));
        r.feed(b"first\nsec");
        r.feed(b"ond\n");
        assert_eq!(r.text(), "second\n");
        let mut r = StderrRing::new(Some(3));
        for i in 0..10 {
            r.feed(format!("line {i}\n").as_bytes());
        }
        assert_eq!(r.text(), "line 7\nline 8\nline 9\n");
        r.feed(b"no newline");
        assert_eq!(r.tail(), "line 7\nline 8\nline 9\nno newline");
    }

    /// Keeps every line it is handed (the platforms' pump tests use it too).
    pub(super) struct Lines(pub(super) Vec<Vec<u8>>);
    impl LineSink for Lines {
        fn line(&mut self, line: &[u8]) -> bool {
            self.0.push(line.to_vec());
            true
        }
    }

    fn pump_bytes(data: &[u8], max_frame: Option<usize>) -> (Vec<Vec<u8>>, PumpEnd, String) {
        use std::io::Write;
        let (out_r, mut out_w) = pump::pipe();
        let (err_r, mut err_w) = pump::pipe();
        let data = data.to_vec();
        let writer = std::thread::spawn(move || {
            err_w.write_all(b"warn: one\nwarn: two").unwrap();
            drop(err_w);
            for piece in data.chunks(7) {
                // The pump may stop reading early (a frame over the maximum): stop writing then.
                if out_w.write_all(piece).is_err() {
                    break;
                }
            }
        });
        let ring = Mutex::new(StderrRing::new(Some(10)));
        let stop = crate::transport::process::Signal::new().unwrap();
        let mut sink = Lines(Vec::new());
        let end = pump(out_r, err_r, &mut sink, &ring, max_frame, &stop);
        writer.join().unwrap();
        let text = lock(&ring).text();
        (sink.0, end, text)
    }

    #[test]
    fn lf_framing_strips_one_cr_and_keeps_stderr() {
        let (lines, end, err) = pump_bytes(b"{\"a\":1}\r\n\n{\"b\":\"x\r\"}\n{\"c\":\r\r\n{\"half\"", None);
        assert_eq!(lines, vec![b"{\"a\":1}".to_vec(), b"".to_vec(), b"{\"b\":\"x\r\"}".to_vec(), b"{\"c\":\r".to_vec()]);
        assert!(matches!(end, PumpEnd::Eof { partial: 7 }), "{end:?}");
        assert_eq!(err, "warn: one\nwarn: two");
    }

    #[test]
    fn reads_grow_through_a_burst_and_a_quiet_agent_gets_the_buffer_back() {
        // Reads that come back full ask for more each time; a small one gives the buffer back.
        let line = [b"{\"pad\":\"".as_slice(), &[b'x'; 1000], b"\"}\n"].concat();
        let stream: Vec<u8> = line.iter().copied().cycle().take(line.len() * 2000).collect();
        let mut framer = Framer::new(None);
        let mut sink = Lines(Vec::new());
        let (mut at, mut asked) = (0, Vec::new());
        while at < stream.len() - line.len() {
            let buf = framer.read_buf();
            asked.push(buf.len());
            let n = buf.len().min(stream.len() - line.len() - at);
            buf[..n].copy_from_slice(&stream[at..at + n]);
            at += n;
            assert_eq!(framer.commit(n, &mut sink), Framed::More);
        }
        assert_eq!(asked[0], MIN_READ);
        assert!(asked.contains(&READ_SIZE), "reads grow to READ_SIZE in a burst: {asked:?}");
        // A frame still arriving holds the buffer it needs; once it is over, a quiet agent's
        // read gives the buffer back (handed over whole, or shrunk).
        let long = [b"{\"pad\":\"".as_slice(), &vec![b'y'; 4 * READ_SIZE], b"\"}"].concat();
        for piece in long.chunks(READ_SIZE / 2) {
            let buf = framer.read_buf();
            buf[..piece.len()].copy_from_slice(piece);
            assert_eq!(framer.commit(piece.len(), &mut sink), Framed::More);
        }
        assert!(framer.buf.capacity() >= 4 * READ_SIZE);
        let end = [b"\n".as_slice(), &line].concat();
        let buf = framer.read_buf();
        buf[..end.len()].copy_from_slice(&end);
        assert_eq!(framer.commit(end.len(), &mut sink), Framed::More);
        assert!(framer.buf.capacity() <= 4 * MIN_READ, "kept {} bytes", framer.buf.capacity());
        assert_eq!(sink.0.len(), 1999 + 2);
        assert_eq!(sink.0.remove(1999), long, "the long frame whole");
        assert!(sink.0.iter().all(|l| l[..] == line[..line.len() - 1]), "every line whole and in order");
    }

    /// Records each line, and whether it came as a range of a read kept whole.
    #[derive(Default)]
    struct Kept(Vec<(Vec<u8>, bool)>, Vec<Arc<Vec<u8>>>);
    impl LineSink for Kept {
        fn line(&mut self, line: &[u8]) -> bool {
            self.0.push((line.to_vec(), false));
            true
        }
        fn shared_line(&mut self, read: &Arc<Vec<u8>>, range: Range<usize>) -> bool {
            self.0.push((read[range].to_vec(), true));
            if !self.1.iter().any(|r| Arc::ptr_eq(r, read)) {
                self.1.push(Arc::clone(read));
            }
            true
        }
    }

    #[test]
    fn a_dense_read_is_handed_over_whole_and_a_sparse_one_line_by_line() {
        let line = [b"{\"pad\":\"".as_slice(), &[b'z'; 600], b"\"}\r\n"].concat();
        let mut framer = Framer::new(None);
        let mut sink = Kept::default();
        // A reply: a sparse read, copied by whoever keeps it.
        let buf = framer.read_buf();
        buf[..line.len()].copy_from_slice(&line);
        assert_eq!(framer.commit(line.len(), &mut sink), Framed::More);
        assert_eq!(sink.0, vec![(line[..line.len() - 2].to_vec(), false)]);
        // A burst: full reads, each handed over whole; a frame cut by a read's end arrives
        // whole with the next read, its start copied out of the read that was kept.
        let burst: Vec<u8> = line.iter().copied().cycle().take(line.len() * 400).collect();
        let mut at = 0;
        while at < burst.len() {
            let buf = framer.read_buf();
            let n = buf.len().min(burst.len() - at);
            buf[..n].copy_from_slice(&burst[at..at + n]);
            at += n;
            assert_eq!(framer.commit(n, &mut sink), Framed::More);
        }
        assert_eq!(sink.0.len(), 401);
        assert!(sink.0.iter().all(|(l, _)| l[..] == line[..line.len() - 2]), "every frame whole, CR LF stripped, in order");
        let shared = sink.0.iter().filter(|(_, s)| *s).count();
        assert!(shared > 300, "most of the burst came in reads kept whole ({shared} of 400)");
        assert!(sink.1.len() >= 2 && sink.1.iter().all(|r| r.len() >= SHARE_FROM), "{} reads kept", sink.1.len());
        assert_eq!(framer.partial(), 0);
    }

    #[test]
    fn frames_over_the_maximum_stop_the_pump() {
        let mut data = vec![b'x'; 100];
        data.push(b'\n');
        let (lines, end, _) = pump_bytes(&data, Some(50));
        assert!(lines.is_empty());
        assert!(matches!(end, PumpEnd::FrameTooLong { limit: 50 }), "{end:?}");
    }

    /// Feeds `data` through a Framer in reads of `piece` bytes, as the pump does.
    fn frame(data: &[u8], piece: usize, max_frame: Option<usize>) -> (Vec<Vec<u8>>, Framed, usize) {
        let mut framer = Framer::new(max_frame);
        let mut sink = Lines(Vec::new());
        let mut last = Framed::More;
        for p in data.chunks(piece) {
            let buf = framer.read_buf();
            buf[..p.len()].copy_from_slice(p);
            last = framer.commit(p.len(), &mut sink);
            if last != Framed::More {
                break;
            }
        }
        (sink.0, last, framer.partial())
    }

    #[test]
    fn framer_is_independent_of_read_boundaries() {
        let data = b"{\"a\":1}\r\n\n{\"b\":\"x\r\"}\n\r\r\n{\"half\"";
        let want: Vec<Vec<u8>> = vec![b"{\"a\":1}".to_vec(), b"".to_vec(), b"{\"b\":\"x\r\"}".to_vec(), b"\r".to_vec()];
        for piece in 1..=data.len() {
            let (lines, end, partial) = frame(data, piece, None);
            assert_eq!(lines, want, "reads of {piece}");
            assert_eq!((end, partial), (Framed::More, 7));
        }
        // A frame of exactly the limit passes (its CR is not counted); one byte more does not,
        // whether its LF has arrived or not.
        assert_eq!(frame(b"12345\r\n", 1, Some(5)).0, vec![b"12345".to_vec()]);
        assert_eq!(frame(b"123456\n", 3, Some(5)).1, Framed::TooLong { limit: 5 });
        assert_eq!(frame(b"1234567", 7, Some(5)).1, Framed::TooLong { limit: 5 });
        assert_eq!(frame(b"123456", 6, Some(5)), (vec![], Framed::More, 6));
    }

    #[test]
    fn stderr_flood_without_newlines_is_bounded() {
        let mut r = StderrRing::new(Some(2));
        r.feed(&vec![b'x'; MAX_STDERR_LINE * 5 + 10]);
        assert!(r.text().len() <= MAX_STDERR_LINE * 3);
    }
}
