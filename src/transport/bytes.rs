//! One frame's bytes as the event queue and a turn hold them: a range of the stdout read that
//! carried it, shared by every holder, or bytes of its own.
//!
//! Why shared (issue 24): every event used to be copied out of the read buffer on the reader
//! thread, a malloc and a copy per event, and a huge frame was copied whole. A dense read (see
//! `Framer::commit`) is now kept whole instead: its frames are ranges of it, and the queue and
//! the turn collector hold those.

use std::fmt;
use std::ops::{Deref, Range};
use std::sync::Arc;

#[derive(Clone)]
pub struct FrameBytes {
    buf: Arc<Vec<u8>>,
    start: usize,
    end: usize,
}

impl FrameBytes {
    /// `range` of a read buffer, shared with whoever else holds a frame of it.
    pub fn shared(buf: &Arc<Vec<u8>>, range: Range<usize>) -> Self {
        assert!(range.start <= range.end && range.end <= buf.len(), "a frame lies inside its read");
        FrameBytes { buf: Arc::clone(buf), start: range.start, end: range.end }
    }

    /// Bytes of its own (a frame the library makes or rewrites, or one of a sparse read), with
    /// one spare byte of capacity so the FFI can add the terminating NUL without reallocating.
    pub fn copied(bytes: &[u8]) -> Self {
        let mut v = Vec::with_capacity(bytes.len() + 1);
        v.extend_from_slice(bytes);
        Self::owned(v)
    }

    pub fn owned(v: Vec<u8>) -> Self {
        let end = v.len();
        FrameBytes { buf: Arc::new(v), start: 0, end }
    }

    /// The bytes as a vector of their own: without a copy when nothing else holds them and they
    /// start their buffer (a frame of its own, or a huge frame that was a read by itself).
    pub fn into_vec(self) -> Vec<u8> {
        let FrameBytes { buf, start, end } = self;
        match Arc::try_unwrap(buf) {
            Ok(mut v) if start == 0 => {
                v.truncate(end);
                v
            }
            Ok(v) => v[start..end].to_vec(),
            Err(shared) => shared[start..end].to_vec(),
        }
    }
}

impl Deref for FrameBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }
}

impl fmt::Debug for FrameBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FrameBytes({:?})", String::from_utf8_lossy(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_of_one_read_share_it_and_each_reads_only_its_range() {
        let read = Arc::new(b"{\"a\":1}\n{\"b\":2}\n{\"c\"".to_vec());
        let a = FrameBytes::shared(&read, 0..7);
        let b = FrameBytes::shared(&read, 8..15);
        assert_eq!((&*a, &*b), (&b"{\"a\":1}"[..], &b"{\"b\":2}"[..]));
        assert_eq!(Arc::strong_count(&read), 3, "one buffer, three holders");
        drop(read);
        // Still held by `b` too: copied out.
        assert_eq!(a.clone().into_vec(), b"{\"a\":1}");
        drop(b);
        // The last holder, at the start of its buffer: the buffer itself, cut to the frame.
        let v = a.into_vec();
        assert_eq!(v, b"{\"a\":1}");
        assert!(v.capacity() >= 20, "not copied: the read's buffer");
    }

    #[test]
    fn a_frame_of_its_own_keeps_room_for_the_nul() {
        let f = FrameBytes::copied(b"{}");
        assert_eq!(&*f, b"{}");
        let v = f.into_vec();
        assert!(v.capacity() > v.len());
        let tail = FrameBytes::shared(&Arc::new(b"xx{}".to_vec()), 2..4);
        assert_eq!(tail.into_vec(), b"{}", "a range past the start is copied out");
    }
}
