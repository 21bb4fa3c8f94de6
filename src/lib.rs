//! omprpc: a native client for the omp and pi coding agents' RPC mode (JSON lines over the
//! agent's stdin/stdout), with a stable C ABI (`include/omprpc.h`).
//!
//! Layers, data flowing down from the agent (ARCHITECTURE.md; each uses only those above it,
//! tests/layers.rs checks it): `transport` (process, framing, stderr, recording) → `protocol`
//! (frame scanning, v2 chunks, argv, the agent's version) → `bridge` (pi tool bridge, policy
//! gate) and `turn` (collecting and assembling turns) → `client` (correlation, events, the
//! agent's activity, UI, host calls) → `ffi` (the C ABI, the only place with foreign-facing
//! `unsafe`). Leaves, used by any layer: `error`, `wait`, `env`, `provider`, `observe`,
//! `base64`, `prompt`.

// Linux is supported and tested; macOS compiles (`make check-macos`, in `make test`) with
// fallbacks for what only Linux has (eventfd, pidfd, F_SETPIPE_SZ, sigtimedwait). Anything
// else is refused here rather than failing deep inside libc calls.
#[cfg(not(unix))]
compile_error!("omprpc supports Linux (tested) and macOS (compiles); Windows and other non-Unix targets are not supported");

// Only `ffi` and `error` (the status enum) define the C API; cbindgen skips the rest.
/// cbindgen:ignore
pub mod base64;
/// cbindgen:ignore
pub mod bridge;
/// cbindgen:ignore
pub mod client;
/// cbindgen:ignore
pub mod env;
pub mod error;
pub mod ffi;
/// cbindgen:ignore
#[doc(hidden)]
pub mod fuzzing;
/// cbindgen:ignore
pub mod observe;
/// cbindgen:ignore
pub mod prompt;
/// cbindgen:ignore
pub mod protocol;
/// cbindgen:ignore
pub mod provider;
/// cbindgen:ignore
pub mod transport;
/// cbindgen:ignore
pub mod turn;
/// cbindgen:ignore
mod wait;

pub use client::Client;
pub use error::{Error, Status};

/// The crate version, also returned by `omprpc_version()`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
