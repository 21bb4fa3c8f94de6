//! The one blocking wait every queue and reply slot shares: a condition variable with an
//! optional deadline.

use std::sync::{Condvar, MutexGuard};
use std::time::Instant;

/// Waits on `cond` once — until notified (or a spurious wake-up), or until `deadline` (None:
/// no deadline). None when the deadline has passed: the caller gives up (the guard is
/// released). Callers loop, re-checking their condition after each wake-up.
pub(crate) fn wait_until<'a, T>(cond: &Condvar, guard: MutexGuard<'a, T>, deadline: Option<Instant>) -> Option<MutexGuard<'a, T>> {
    match deadline {
        None => Some(cond.wait(guard).unwrap()),
        Some(d) => {
            let now = Instant::now();
            if now >= d {
                return None;
            }
            Some(cond.wait_timeout(guard, d - now).unwrap().0)
        }
    }
}
