'use strict';
// omprpc for Node.js: a thin koffi binding over the omprpc C ABI (include/omprpc.h,
// docs/c-api.md). No protocol logic lives here: correlation, framing, turn assembly, host
// call bookkeeping and teardown are the core's. The binding maps C calls to promises, runs
// every call that can block on libuv's pool (koffi `fn.async`), and turns the polled event
// queue into an async iterator and an EventEmitter.
//
// This file is the CommonJS entry point (index.mjs re-exports it); the code is in lib/:
// constants, errors, native (loading the library, call wrappers), args, lifetime (exit and GC
// safety nets), iterator, reactor, views (the library's structured results: event batches),
// turn (turns and their lazy events), client (Client, with its methods grouped in commands,
// protocol.gen (the typed commands, generated from src/protocol/table.json), prompts, events,
// ui and host), stream (client.stream(): a turn as typed items), abort (AbortSignal support)
// and functions.

const {
  ABI_VERSION,
  TIMEOUT_INFINITE,
  TIMEOUT_DEFAULT,
  POLL_SLICE_MS,
} = require('./lib/constants.cjs');
const {
  Status,
  OmprpcError,
  InvalidArgumentError,
  InvalidJsonError,
  InvalidUtf8Error,
  RpcTimeoutError,
  TimeoutError,
  CommandError,
  ProcessExitedError,
  ClosedError,
  ConcurrencyError,
  ProtocolError,
  IoError,
  NotFoundError,
  CancelledError,
  AbortError,
  LimitExceededError,
  PanicError,
} = require('./lib/errors.cjs');
const { load, libraryPath, libraryCandidates } = require('./lib/native.cjs');
const { toCoreOptions } = require('./lib/args.cjs');
const { EventIterator } = require('./lib/iterator.cjs');
const { heldTurns } = require('./lib/turn.cjs');
const { Client } = require('./lib/client.cjs');
const {
  EVENT_TYPES,
  UI_METHODS,
  isKnownEvent,
  isKnownUiRequest,
  isKnownAgentMessage,
  isKnownAssistantMessageEvent,
  isKnownMessageContent,
  assistantTextDelta,
} = require('./lib/protocol.gen.cjs');
const {
  version,
  abiVersion,
  statusName,
  buildArgv,
  summarize,
  Summarizer,
  envAllowlisted,
  promptFromContent,
  providerConfig,
  sanitizeSchema,
  skillsFlags,
} = require('./lib/functions.cjs');

module.exports = {
  ABI_VERSION,
  TIMEOUT_INFINITE,
  TIMEOUT_DEFAULT,
  POLL_SLICE_MS,
  Status,
  Client,
  EventIterator,
  OmprpcError,
  InvalidArgumentError,
  InvalidJsonError,
  InvalidUtf8Error,
  RpcTimeoutError,
  /** @deprecated RpcTimeoutError (the same class; this name shadowed the DOM's TimeoutError). */
  TimeoutError,
  CommandError,
  ProcessExitedError,
  ClosedError,
  ConcurrencyError,
  ProtocolError,
  IoError,
  NotFoundError,
  CancelledError,
  AbortError,
  LimitExceededError,
  PanicError,
  load,
  libraryPath,
  libraryCandidates,
  version,
  abiVersion,
  statusName,
  buildArgv,
  toCoreOptions,
  summarize,
  Summarizer,
  envAllowlisted,
  promptFromContent,
  providerConfig,
  sanitizeSchema,
  skillsFlags,
  EVENT_TYPES,
  UI_METHODS,
  isKnownEvent,
  isKnownUiRequest,
  isKnownAgentMessage,
  isKnownAssistantMessageEvent,
  isKnownMessageContent,
  assistantTextDelta,
  /** Internals exposed for the tests only; not part of the API. */
  _internal: { turnsHeld: heldTurns },
};
