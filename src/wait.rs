//! The one blocking wait every queue and reply slot shares: a condition variable with an
//! optional deadline; and locking that survives a panic.
//!
//! A panic in a library thread while it held a lock poisons it (ARCHITECTURE.md, "Panics"):
//! the client is then closed with PANIC, and teardown must still run — so every lock and
//! wait of the library takes the guard out of a poisoned lock instead of panicking again.
//! The data under the lock is whatever the panicking thread left; after PANIC the client
//! only tears down.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

/// Waits on `cond` once — until notified (or a spurious wake-up), or until `deadline` (None:
/// no deadline). None when the deadline has passed: the caller gives up (the guard is
/// released). Callers loop, re-checking their condition after each wake-up.
pub(crate) fn wait_until<'a, T>(cond: &Condvar, guard: MutexGuard<'a, T>, deadline: Option<Instant>) -> Option<MutexGuard<'a, T>> {
    match deadline {
        None => Some(cond.wait(guard).unwrap_or_else(PoisonError::into_inner)),
        Some(d) => {
            let now = Instant::now();
            if now >= d {
                return None;
            }
            Some(cond.wait_timeout(guard, d - now).unwrap_or_else(PoisonError::into_inner).0)
        }
    }
}

/// `m.lock()`, also when a panicking thread poisoned it.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
