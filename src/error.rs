//! Status codes and errors. The status enum is part of the C ABI: values are never renumbered.

use serde_json::{json, Value};

/// Result of every fallible omprpc call.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// Success (seen only across the C ABI: a Rust call returns `Ok(…)`).
    Ok = 0,
    /// A bad argument: a NULL pointer, a bad option value, an unknown id, a command the agent's version lacks.
    InvalidArgument = 1,
    /// An input string is not JSON, or not the JSON type the call takes.
    InvalidJson = 2,
    /// An input string is not UTF-8.
    InvalidUtf8 = 3,
    /// The deadline passed (the client stays usable).
    Timeout = 4,
    /// The agent answered `success:false` (also a late prompt failure).
    CommandFailed = 5,
    /// The agent exited, or closed its stdout.
    ProcessExited = 6,
    /// The client was closed (by close, or after a fatal fault).
    Closed = 7,
    /// A second prompt-lifecycle operation (turn, stream, wait) while one runs.
    Concurrency = 8,
    /// The agent broke the protocol (a bad frame, a bad chunk, …).
    Protocol = 9,
    /// Spawning, reading or writing failed at the OS level.
    Io = 10,
    /// No such host call, UI request or policy question is open.
    NotFound = 11,
    /// The agent cancelled that host call (the reply was dropped); in the Rust API, a `Cancel` handle cancelled the turn.
    Cancelled = 12,
    /// A configured bound was exceeded (e.g. `max_event_history`).
    LimitExceeded = 13,
    /// A bug inside omprpc was caught; the client is closed.
    Panic = 14,
}

impl Status {
    /// The status's name in every language: `"TIMEOUT"`, `"CANCELLED"`, …
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "OK",
            Status::InvalidArgument => "INVALID_ARGUMENT",
            Status::InvalidJson => "INVALID_JSON",
            Status::InvalidUtf8 => "INVALID_UTF8",
            Status::Timeout => "TIMEOUT",
            Status::CommandFailed => "COMMAND_FAILED",
            Status::ProcessExited => "PROCESS_EXITED",
            Status::Closed => "CLOSED",
            Status::Concurrency => "CONCURRENCY",
            Status::Protocol => "PROTOCOL",
            Status::Io => "IO",
            Status::NotFound => "NOT_FOUND",
            Status::Cancelled => "CANCELLED",
            Status::LimitExceeded => "LIMIT_EXCEEDED",
            Status::Panic => "PANIC",
        }
    }

    pub(crate) const ALL: [Status; 15] = [
        Status::Ok,
        Status::InvalidArgument,
        Status::InvalidJson,
        Status::InvalidUtf8,
        Status::Timeout,
        Status::CommandFailed,
        Status::ProcessExited,
        Status::Closed,
        Status::Concurrency,
        Status::Protocol,
        Status::Io,
        Status::NotFound,
        Status::Cancelled,
        Status::LimitExceeded,
        Status::Panic,
    ];
}

/// The agent's `success:false` answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandFailure {
    /// The command it answered.
    pub command: String,
    /// Its `error` text.
    pub error: String,
    /// The machine code: the frame's `code`, else `errorInfo.code`.
    pub code: Option<String>,
    /// The frame's `errorInfo` object verbatim (omp's typed errors: `code`, `message`,
    /// `details`, `retryable`), when it sent one.
    pub info: Option<Value>,
}

/// Why a call failed: its [`Status`], a message (the same words in every language), and the
/// agent's own answer when it refused a command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// What kind of failure.
    pub status: Status,
    /// What happened, for people.
    pub message: String,
    /// The agent's `success:false` answer (COMMAND_FAILED).
    pub failure: Option<Box<CommandFailure>>,
}

/// The result of every fallible call.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What a caught panic said (its `&str` or `String` payload).
pub fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

impl Error {
    pub fn new(status: Status, message: impl Into<String>) -> Self {
        Error { status, message: message.into(), failure: None }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Error::new(Status::InvalidArgument, message)
    }

    pub fn invalid_json(message: impl Into<String>) -> Self {
        Error::new(Status::InvalidJson, message)
    }

    pub fn command_failed(command: &str, error: &str, code: Option<String>) -> Self {
        Error::command_failure(CommandFailure { command: command.into(), error: error.into(), code, info: None })
    }

    pub fn command_failure(failure: CommandFailure) -> Self {
        Error {
            status: Status::CommandFailed,
            message: format!("{}: {}", failure.command, failure.error),
            failure: Some(Box::new(failure)),
        }
    }

    /// The same failure under another command name (an id-less failure matched to the
    /// command that was waiting); everything the agent said is kept.
    pub fn for_command(self, command: &str) -> Self {
        match self.failure {
            Some(f) => Error::command_failure(CommandFailure { command: command.into(), ..*f }),
            None => self,
        }
    }

    /// What a call made after the client closed gets: CLOSED, saying why it closed.
    pub fn closed_because(reason: &Error) -> Self {
        if reason.status == Status::Closed {
            return Error::new(Status::Closed, reason.message.clone());
        }
        Error::new(Status::Closed, format!("the client is closed ({}): {}", reason.status.name(), reason.message))
    }

    /// The same error with other text before its message (e.g. where it was raised).
    pub fn context(mut self, prefix: &str) -> Self {
        self.message = format!("{prefix}{}", self.message);
        self
    }

    pub fn to_value(&self) -> Value {
        let mut v = json!({"code": self.status.name(), "status": self.status as i32, "message": self.message});
        if let Some(f) = &self.failure {
            v["command"] = json!(f.command);
            v["error"] = json!(f.error);
            if let Some(c) = &f.code {
                v["errorCode"] = json!(c);
            }
            if let Some(info) = &f.info {
                v["errorInfo"] = info.clone();
            }
        }
        v
    }

    pub fn to_json(&self) -> String {
        self.to_value().to_string()
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.status.name(), self.message)
    }
}

impl std::error::Error for Error {}
