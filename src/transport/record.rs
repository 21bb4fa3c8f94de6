//! Session recording (the `record_path` start option): every frame in both directions, with
//! the time it was sent or received, as JSON lines — so a session with a real agent can be
//! replayed later by `omprpc-fake-agent --replay FILE` as a regression test.
//!
//! The file is one header line, then one line per frame:
//!
//! ```text
//! {"omprpc_recording":1,"version":"0.1.0","flavor":"pi","agentVersion":"1.6.0","argv":[…redacted…],"started":"2026-…Z"}
//! {"t_ms":0.412,"dir":"out","frame":{"id":"req_1","type":"get_state"}}
//! {"t_ms":1803.25,"dir":"in","frame":{"type":"response","id":"req_1",…}}
//! {"t_ms":1810.5,"dir":"in","invalid":true,"frame":"this is not json"}
//! ```
//!
//! Frames are embedded byte for byte (they are already one line of valid JSON: outbound ones
//! are built by the library, inbound ones have passed the frame scanner); a line that is not
//! a JSON object is stored as a string with `"invalid":true`. Outbound frames are recorded
//! just before they are written (under the stdin lock), inbound ones as the reader takes them
//! (before v2 chunk reassembly), so the file's order never shows an answer before its
//! request. The file holds what the session held — prompts, tool output, file contents — so
//! it is created 0600; argv in the header is redacted like everywhere else. `agentVersion` is the
//! agent's version as the client knew it (null when it did not): a replay answers `--version`
//! with it, so the replayed client reads the stream as it read the agent's.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use crate::wait::lock;

/// The format's version (the header's `omprpc_recording`).
pub const FORMAT: u32 = 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// Host → agent (stdin).
    Out,
    /// Agent → host (stdout).
    In,
}

pub struct Recorder {
    path: PathBuf,
    start: Instant,
    /// None once a write failed (recording stops; the failure was reported once).
    out: Mutex<Option<BufWriter<File>>>,
}

impl Recorder {
    /// Creates (or truncates) the file, mode 0600, and writes the header line.
    pub fn create(path: &Path, flavor: &str, agent_version: Option<&str>, argv: &[String]) -> io::Result<Recorder> {
        // An existing file is narrowed to private too (not a device or a FIFO).
        let file = crate::env::private_file(path, crate::env::Existing::Truncate)?;
        let mut w = BufWriter::with_capacity(64 * 1024, file);
        // Written by hand for a fixed key order (json! sorts keys): the format marker first.
        writeln!(
            w,
            "{{\"omprpc_recording\":{FORMAT},\"version\":{},\"flavor\":{},\"agentVersion\":{},\"argv\":{},\"started\":{}}}",
            json!(env!("CARGO_PKG_VERSION")),
            json!(flavor),
            json!(agent_version),
            json!(argv),
            utc_now()
        )?;
        Ok(Recorder { path: path.to_path_buf(), start: Instant::now(), out: Mutex::new(Some(w)) })
    }

    /// Appends one frame (without its newline). `valid`: the bytes are one JSON object and
    /// can be embedded as they are. Err (once) with a message when writing failed; nothing is
    /// recorded after that.
    pub fn frame(&self, dir: Dir, frame: &[u8], valid: bool) -> Result<(), String> {
        let mut guard = lock(&self.out);
        let Some(w) = guard.as_mut() else { return Ok(()) };
        let t = self.start.elapsed().as_secs_f64() * 1000.0;
        let dir = match dir {
            Dir::Out => "out",
            Dir::In => "in",
        };
        let written = (|| -> io::Result<()> {
            write!(w, "{{\"t_ms\":{t:.3},\"dir\":\"{dir}\",")?;
            if valid {
                w.write_all(b"\"frame\":")?;
                w.write_all(frame)?;
            } else {
                w.write_all(b"\"invalid\":true,\"frame\":")?;
                serde_json::to_writer(&mut *w, &String::from_utf8_lossy(frame))?;
            }
            w.write_all(b"}\n")
        })();
        written.map_err(|e| {
            *guard = None;
            self.failed(&e)
        })
    }

    /// Flushes what is buffered (at close). Err (once) when that fails.
    pub fn flush(&self) -> Result<(), String> {
        let mut guard = lock(&self.out);
        let Some(w) = guard.as_mut() else { return Ok(()) };
        w.flush().map_err(|e| {
            *guard = None;
            self.failed(&e)
        })
    }

    fn failed(&self, e: &io::Error) -> String {
        format!("recording to {} failed: {e}; the recording stops here", self.path.display())
    }
}

/// The current time as `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC).
fn utc_now() -> Value {
    let d = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    Value::String(iso_utc(d.as_secs() as i64, d.subsec_millis()))
}

/// `secs` since the epoch and `millis` as `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC).
pub fn iso_utc(secs: i64, millis: u32) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's days → civil date.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(miri, ignore)] // files and chmod: outside miri's isolation
    fn lines_embed_valid_frames_and_quote_invalid_ones() {
        let dir = std::env::temp_dir().join(format!("omprpc-record-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.jsonl");
        let r = Recorder::create(&path, "omp", Some("18.2.3"), &["agent".into(), "--mode".into(), "rpc".into()]).unwrap();
        r.frame(Dir::Out, br#"{"id":"req_1","type":"get_state"}"#, true).unwrap();
        r.frame(Dir::In, b"not \"json\"\xff", false).unwrap();
        r.flush().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert!(text.starts_with("{\"omprpc_recording\":1,\"version\":"), "{text}");
        assert_eq!(lines[0]["flavor"], "omp");
        assert_eq!(lines[0]["agentVersion"], "18.2.3");
        assert_eq!(lines[0]["argv"], json!(["agent", "--mode", "rpc"]));
        let started = lines[0]["started"].as_str().unwrap();
        assert_eq!(started.len(), 24, "{started}");
        assert!(started.starts_with("20") && started.ends_with('Z'), "{started}");
        assert_eq!(lines[1]["dir"], "out");
        assert_eq!(lines[1]["frame"], json!({"id": "req_1", "type": "get_state"}));
        assert!(lines[1]["t_ms"].as_f64().unwrap() >= 0.0);
        assert_eq!(lines[2], json!({"t_ms": lines[2]["t_ms"], "dir": "in", "invalid": true, "frame": "not \"json\"\u{fffd}"}));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
        drop(r); // Windows removes no directory holding an open file
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn civil_dates() {
        assert_eq!(iso_utc(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_utc(951_782_400 + 3_723, 7), "2000-02-29T01:02:03.007Z");
        assert_eq!(iso_utc(1_764_460_799, 999), "2025-11-29T23:59:59.999Z");
        assert_eq!(iso_utc(4_107_542_400, 0), "2100-03-01T00:00:00.000Z");
    }
}
