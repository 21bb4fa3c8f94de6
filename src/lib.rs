//! omprpc: a native client for the omp and pi coding agents' RPC mode (JSON lines over the
//! agent's stdin/stdout), with a stable C ABI (`include/omprpc.h`).
//!
//! Layers, data flowing up: `transport` (process, framing, v2 chunks, stderr) → `protocol`
//! (frame scanning, argv) → `client` (correlation, events, lifecycle, UI, host calls) →
//! `turn` (turn assembly) → `ffi` (the C ABI, the only place with foreign-facing `unsafe`).

// Only `ffi` and `error` (the status enum) define the C API; cbindgen skips the rest.
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
