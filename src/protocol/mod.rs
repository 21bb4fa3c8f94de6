//! Protocol: reading frames without a full JSON tree, the agent's command line (with the
//! skills filter), and the tool-parameter schema sanitizer.

pub mod argv;
pub mod chunks;
pub mod opts;
pub mod schema;
pub mod scope;
pub mod skills;
pub mod version;
pub mod scan;
