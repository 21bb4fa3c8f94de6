//! omprpc: a native client for the omp and pi coding agents' RPC mode (`omp --mode rpc`,
//! `pi --mode rpc`: JSON lines over the agent's stdin/stdout).
//!
//! A turn, streamed: the answer printed as it arrives, tool calls shown, usage at the end
//! (`examples/stream.rs`, which the tests run against the project's fake agent):
//!
//! ```no_run
//! use omprpc::{Client, StreamItem};
//!
//! # fn main() -> omprpc::Result<()> {
//! let options = r#"{"command": ["omp", "--mode", "rpc"]}"#;
//! let prompt = "say hello";
//! let mut answer = String::new();
//! let client = Client::start(options)?;
//! for item in client.stream(prompt)? {
//!     match item? {
//!         StreamItem::Text(text) => {
//!             print!("{text}");
//!             answer.push_str(&text);
//!         }
//!         StreamItem::ToolCallRequest(call) => println!("\n[{} {}]", call.tool_name, call.args),
//!         StreamItem::ToolCallComplete(done) => println!("[{}: {:?}]", done.tool_name, done.outcome),
//!         StreamItem::TurnComplete(done) => match done.usage {
//!             Some(usage) => println!("\n[{} tokens in, {} out]", usage.input_tokens, usage.output_tokens),
//!             None => println!(),
//!         },
//!         _ => {} // reasoning, retries, compactions
//!     }
//! }
//! client.close()?;
//! # Ok(())
//! # }
//! ```
//!
//! A [`Client`] owns one agent process: [`Client::start`] spawns it from start options (JSON,
//! the same keys as the C API's `omprpc_client_start`, docs/c-api.md) and completes the
//! handshake; dropping the client or [`Client::close`] stops it (stdin EOF, grace, SIGTERM,
//! SIGKILL to its process group). A client may be used from any thread at once (`Send + Sync`;
//! share it in an `Arc`).
//!
//! - **Turns**: [`Client::stream`] yields [`StreamItem`]s — text and reasoning deltas, tool
//!   calls requested and completed, retries, compactions, and last [`TurnComplete`] (outcome,
//!   stop reason, [`Usage`], final text, the whole summary). Dropping a [`Stream`] before then
//!   aborts the turn; the client accepts the next prompt when the drop returns.
//!   [`Client::prompt_and_wait`] returns the whole turn as JSON instead.
//! - **Cancellation**: a [`Cancel`] handle (`Clone + Send + Sync`) from
//!   [`Client::cancel_handle`] or [`Stream::cancel_handle`]; `cancel()` from another thread
//!   makes the blocked `next()` or `prompt_and_wait` send `abort`, wait for the agent to end the
//!   prompt, and return an [`Error`] with [`Status::Cancelled`].
//! - **Commands**: [`Client::request`] sends any command of the agent's protocol (the table in
//!   `src/protocol/table.json`) and returns its `data` JSON.
//! - **Events, UI requests, host tools**: [`Client::next_events`], [`Client::next_ui_request`],
//!   [`Client::host_tool_result`] and their kin, as in the C API.
//! - **Errors**: every fallible call returns [`Result`]; an [`Error`] carries a [`Status`] (the
//!   C ABI's status codes, never renumbered) and a message, and the agent's own words when it
//!   refused a command ([`CommandFailure`]).
//!
//! ```no_run
//! # fn main() -> omprpc::Result<()> {
//! # let client = omprpc::Client::start(r#"{"command": ["omp", "--mode", "rpc"]}"#)?;
//! let cancel = client.cancel_handle();
//! // e.g. from a Ctrl-C handler, a UI button, a deadline of the host's own
//! std::thread::spawn(move || cancel.cancel());
//! match client.prompt_and_wait("write a long essay", None, None) {
//!     Err(e) if e.status == omprpc::Status::Cancelled => println!("cancelled"),
//!     other => println!("{other:?}"),
//! }
//! # Ok(())
//! # }
//! ```
//!
//! # Stability
//!
//! The documented items of this page are the crate's Rust API, under semver: while the crate
//! is 0.x, a breaking change to them bumps the minor version (0.1 → 0.2), and a patch release
//! never breaks them. Enums and structs marked `#[non_exhaustive]` may gain variants and fields
//! in a minor release. Items hidden from these docs (the modules `transport`, `protocol`,
//! `bridge`, `turn`, `client`, `ffi`, … and the methods marked hidden) are public only for the
//! crate's own tests, fuzz targets and C ABI: they are not covered by semver and may change in
//! any release. The stable contract across languages is the C ABI (`include/omprpc.h`,
//! `omprpc_abi_version`), which the Python, Go and Node bindings use.
//!
//! # Layers
//!
//! Data flows down from the agent (ARCHITECTURE.md; each layer uses only those above it,
//! tests/layers.rs checks it): `transport` (process, framing, stderr, recording) → `protocol`
//! (frame scanning, v2 chunks, argv, the agent's version) → `bridge` (pi tool bridge, policy
//! gate) and `turn` (collecting and assembling turns) → `client` (correlation, events, the
//! agent's activity, UI, host calls) → `ffi` (the C ABI, the only place with foreign-facing
//! `unsafe`). Leaves, used by any layer: `error`, `wait`, `env`, `provider`, `observe`,
//! `base64`, `prompt`.
#![warn(missing_docs)]

// Linux is supported and tested; macOS compiles (`make check-macos`, in `make test`) with
// fallbacks for what only Linux has (eventfd, pidfd, F_SETPIPE_SZ, sigtimedwait); Windows
// builds and is tested under Wine (`make windows-*`, docs/windows.md). Anything else is
// refused here rather than failing deep inside a platform module.
#[cfg(not(any(unix, windows)))]
compile_error!("omprpc supports Linux (tested), Windows (tested under Wine, docs/windows.md) and macOS (compiles); other targets are not supported");

// Only `ffi` and `error` (the status enum) define the C API; cbindgen skips the rest. Every
// module is hidden from the docs: the documented surface is what this file re-exports.
/// cbindgen:ignore
#[doc(hidden)]
pub mod base64;
/// cbindgen:ignore
#[doc(hidden)]
pub mod bridge;
/// cbindgen:ignore
#[doc(hidden)]
pub mod client;
/// cbindgen:ignore
#[doc(hidden)]
pub mod env;
#[doc(hidden)]
pub mod error;
#[doc(hidden)]
pub mod ffi;
/// cbindgen:ignore
#[doc(hidden)]
pub mod fuzzing;
/// cbindgen:ignore
#[doc(hidden)]
pub mod observe;
/// cbindgen:ignore
#[doc(hidden)]
pub mod prompt;
/// cbindgen:ignore
#[doc(hidden)]
pub mod protocol;
/// cbindgen:ignore
#[doc(hidden)]
pub mod provider;
/// cbindgen:ignore
#[doc(hidden)]
pub mod transport;
/// cbindgen:ignore
#[doc(hidden)]
pub mod turn;
/// cbindgen:ignore
mod wait;

pub use client::items::{CompactionComplete, RetryScheduled, StreamItem, ToolCallComplete, ToolCallRequest, ToolOutcome, TurnComplete, Usage};
pub use client::options::UiPolicy;
pub use client::stream::{Cancel, Stream};
pub use client::{Client, Deadline};
pub use error::{CommandFailure, Error, Result, Status};
pub use turn::TurnOutcome;

/// The crate version, also returned by `omprpc_version()`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
