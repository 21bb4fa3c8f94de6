//! Entry points for the fuzz targets in `fuzz/` (cargo-fuzz): the library's own framing,
//! parsing, correlation and bridge-decision code, reachable without spawning a process.
//! Not part of the API: nothing here is stable, and the C ABI never exposes it.

pub use crate::bridge::{decide as bridge_decide, Auth as BridgeAuth, Decision as BridgeDecision, Rules as BridgeRules};
pub use crate::client::pending::{Pending, Settled, Slot};
pub use crate::client::reader::{check_frame, correlate, Correlation};
pub use crate::protocol::scan::{validate, Fields, Kind};
pub use crate::base64::decode_base64_strict;
pub use crate::protocol::chunks::{ChunkDecoder, ChunkLimits};
pub use crate::transport::{Framed, Framer, LineSink};

/// Largest decoded slice one v2 chunk may carry.
pub const MAX_CHUNK_DATA: usize = crate::protocol::chunks::MAX_CHUNK_DATA;
/// Nesting depth past which the frame scanner rejects a frame.
pub const MAX_SCAN_DEPTH: usize = crate::protocol::scan::MAX_DEPTH;

use serde_json::{Map, Value};

/// A prompt's params from its message and options, as `omprpc_client_prompt` builds them
/// (the bool: whether `streamingBehavior` was given).
pub fn prompt_params(message: &str, options: Option<Map<String, Value>>) -> crate::error::Result<(Map<String, Value>, bool)> {
    crate::client::Client::prompt_params(message, options)
}

/// The request line `omprpc_client_request` writes for `params` (reserved keys refused).
pub fn request_line(id: &str, ty: &str, params: Option<&Map<String, Value>>) -> crate::error::Result<Vec<u8>> {
    crate::client::request_line(id, ty, params)
}

/// Every status value the C API can return.
pub fn all_statuses() -> &'static [crate::error::Status] {
    &crate::error::Status::ALL
}
