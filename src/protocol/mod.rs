//! Protocol: reading frames without a full JSON tree, and the agent's command line.

pub mod argv;
pub mod chunks;
pub mod opts;
pub mod version;
pub mod scan;
