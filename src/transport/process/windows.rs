//! The agent process on Windows: not ported yet (issue 25; docs/windows.md has the design and
//! what is missing). Every way in fails with an `Unsupported` error that says so; `Process`
//! and `Signal` are empty enums, so no value of them can exist and their methods cannot be
//! reached — nothing here can pretend to have spawned, waited for or signalled anything.
//!
//! The design these replace: `std::process` with the agent in a Job object (the Unix process
//! group: kill-on-close ends the tree, also when this process dies, which is the Unix
//! watchdog's job), a reader thread per pipe instead of poll(2), and a manual-reset event (or
//! a loopback socket pair where a host polls sockets) for `Signal`.

use std::fs::File;
use std::io;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::{Exit, Output, Pipes, SpawnSpec};
use crate::env::not_ported;

/// A spawned agent. None can exist until spawning is ported.
pub enum Process {}

impl Process {
    pub fn pid(&self) -> i32 {
        match *self {}
    }

    pub fn try_exit(&self) -> Option<Exit> {
        match *self {}
    }

    pub fn wait_exit(&self, _timeout: Option<Duration>) -> Option<Exit> {
        match *self {}
    }

    pub fn terminate(&self, _grace: Duration, _kill_grace: Duration) -> Exit {
        match *self {}
    }
}

/// The file `spec` would run. Windows resolves names its own way (PATHEXT, the application's
/// directory first), which is part of the port.
pub fn program_path(_spec: &SpawnSpec) -> io::Result<PathBuf> {
    Err(not_ported("finding the agent's executable"))
}

pub fn spawn(_spec: &SpawnSpec) -> io::Result<(Process, Pipes)> {
    Err(not_ported("starting the agent process"))
}

pub fn run_to_end(_spec: &SpawnSpec, _timeout: Duration, _max: usize) -> io::Result<Output> {
    Err(not_ported("running the agent to its end (its --version)"))
}

/// Writes to the agent's stdin; unreachable until `Signal` exists.
pub fn write_all(_stdin: &File, _data: &[u8], _deadline: Option<Instant>, wake: &Signal) -> io::Result<()> {
    match *wake {}
}

/// The level-triggered wake-up of the Unix side (eventfd / self-pipe). None can exist until it
/// is ported, and with it the client's event queue, its stop signals and the tool bridge.
pub enum Signal {}

impl Signal {
    pub fn new() -> io::Result<Self> {
        Err(not_ported("the client's wake-up signal (the C API's event descriptor)"))
    }

    pub fn raw(&self) -> i32 {
        match *self {}
    }

    pub fn set(&self) {
        match *self {}
    }

    pub fn clear(&self) {
        match *self {}
    }
}
