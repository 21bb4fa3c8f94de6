//! The stdout pump: one thread reads the agent's stdout and stderr until stdout closes, handing
//! frame lines to a `LineSink` (through the `Framer`) and stderr to the `StderrRing`, until the
//! stop signal says the client tore the agent down. Serving both pipes from one thread keeps
//! the stderr tail current whenever a frame is handled, and what stderr holds when stdout ends
//! is read before the end is reported. How the two pipes and the signal are waited on is per
//! platform (`pump/unix.rs`: poll(2); `pump/windows.rs`: overlapped reads, docs/windows.md),
//! and so is how a read lands in the framer's buffer.

// This target's half (src/lib.rs refuses targets that are neither).
#[cfg_attr(unix, path = "pump/unix.rs")]
#[cfg_attr(windows, path = "pump/windows.rs")]
mod platform;
pub use platform::*;
