'use strict';
// The numbers the binding is written against or tuned with: the C ABI version, the special
// timeout values, poll slices, batch and buffer sizes.

/** The C ABI version this binding was written against (`OMPRPC_ABI_VERSION`). */
const ABI_VERSION = 2;
/** Timeout value: wait without a deadline. */
const TIMEOUT_INFINITE = -1;
/** Timeout value: the client's configured default for that kind of call. */
const TIMEOUT_DEFAULT = -2;

/** Longest single blocking poll (events, UI requests, waitForIdle) handed to a pool thread. */
const POLL_SLICE_MS = 250;
/** Events taken from the core per poll. */
const EVENT_BATCH = 1024;
/** Events kept for later consumers while nobody listens (oldest dropped, reported), unless
 * the `event_queue_capacity` option says otherwise (the core's default). */
const ORPHAN_CAPACITY = 65536;
/** Default most unread events an events() iterator keeps (past it the oldest are dropped, and reported). */
const DEFAULT_HIGH_WATER_MARK = 65536;
/** The interval between polls of a turn's completion (lib/prompts.cjs TurnPoll): this share of
 * the time waited so far, within these bounds (ms). */
const TURN_POLL_SHARE = 32;
const TURN_POLL_MIN_MS = 1;
const TURN_POLL_MAX_MS = 20;
/** Unref'd polling interval bounds (ms) when the event pump must not hold the loop open. */
const UNREF_POLL_MIN_MS = 2;
const UNREF_POLL_MAX_MS = 100;

module.exports = {
  ABI_VERSION,
  TIMEOUT_INFINITE,
  TIMEOUT_DEFAULT,
  POLL_SLICE_MS,
  EVENT_BATCH,
  ORPHAN_CAPACITY,
  DEFAULT_HIGH_WATER_MARK,
  UNREF_POLL_MIN_MS,
  UNREF_POLL_MAX_MS,
  TURN_POLL_SHARE,
  TURN_POLL_MIN_MS,
  TURN_POLL_MAX_MS,
};
