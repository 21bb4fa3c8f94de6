'use strict';
// The C ABI's status codes and the error classes they map to, one per status.

// Status (OK: 0 … PANIC: 14) is generated from the header's enum (lib/native.gen.cjs).
const { Status } = require('./native.gen.cjs');
const STATUS_NAMES = Object.keys(Status);

/** Every failure of an omprpc call: `status` (number), `code` (its name), `message`. */
class OmprpcError extends Error {
  constructor(message, status, code, details) {
    super(message);
    this.name = new.target.name;
    this.status = status;
    this.code = code !== undefined ? code : STATUS_NAMES[status] || 'UNKNOWN';
    /** The core's whole error object (`{code,status,message,…}`). */
    this.details = details || { code: this.code, status, message };
  }
}
class InvalidArgumentError extends OmprpcError {}
class InvalidJsonError extends OmprpcError {}
class InvalidUtf8Error extends OmprpcError {}
/**
 * A deadline (`timeoutMs`, a start or turn timeout) passed. Not named TimeoutError: that is the
 * DOMException `AbortSignal.timeout()` aborts with, which a caller must tell apart.
 */
class RpcTimeoutError extends OmprpcError {}
/** The agent answered `success:false` (also a late prompt failure). */
class CommandError extends OmprpcError {
  constructor(message, status, code, details) {
    super(message, status, code, details);
    /** The command that failed (`"prompt"`, `"get_state"` …). */
    this.command = details && details.command;
    /** The agent's own error text. */
    this.error = details && details.error;
    /** The agent's error code, when it sent one. */
    this.errorCode = details && details.errorCode;
  }
}
class ProcessExitedError extends OmprpcError {}
class ClosedError extends OmprpcError {}
class ConcurrencyError extends OmprpcError {}
class ProtocolError extends OmprpcError {}
class IoError extends OmprpcError {}
class NotFoundError extends OmprpcError {}
class CancelledError extends OmprpcError {}
/**
 * A call given up to its `signal` (status CANCELLED). `cause` is the signal's reason (for
 * `AbortSignal.timeout()` a DOMException named TimeoutError); `name` is "AbortError", as the
 * platform's own aborted calls (fetch, timers/promises) are.
 */
class AbortError extends CancelledError {
  constructor(reason, what) {
    super(`${what || 'the call'} was aborted${reasonText(reason)}`, Status.CANCELLED, 'CANCELLED');
    this.cause = reason;
  }
}

function reasonText(reason) {
  if (reason === undefined) return '';
  if (reason instanceof Error) return reason.message ? `: ${reason.message}` : '';
  return typeof reason === 'string' ? `: ${reason}` : '';
}
class LimitExceededError extends OmprpcError {}
class PanicError extends OmprpcError {}

const ERROR_CLASSES = [
  OmprpcError, InvalidArgumentError, InvalidJsonError, InvalidUtf8Error, RpcTimeoutError,
  CommandError, ProcessExitedError, ClosedError, ConcurrencyError, ProtocolError, IoError,
  NotFoundError, CancelledError, LimitExceededError, PanicError,
];

function errorFromDetails(details, status) {
  const st = typeof details.status === 'number' ? details.status : status;
  const Cls = ERROR_CLASSES[st] || OmprpcError;
  const message = typeof details.message === 'string' ? details.message : `omprpc: ${STATUS_NAMES[st] || st}`;
  return new Cls(message, st, details.code, details);
}

function jsError(status, message, extra) {
  return errorFromDetails({ code: STATUS_NAMES[status], status, message, ...extra }, status);
}

// The core's own CLOSED message for a client its host closed: the handle is gone by then, so
// the binding says it (test/errortable.test.mjs holds the two equal).
const CLOSED_MESSAGE = 'the client is closed: close() stopped the agent';

function closedError(message) {
  return jsError(Status.CLOSED, message || CLOSED_MESSAGE);
}

/** The AbortError of an aborted `signal` (`what`: the call, for the message). */
function abortError(signal, what) {
  return new AbortError(signal.reason, what);
}

/** Rejects with the AbortError when `signal` is already aborted. */
function throwIfAborted(signal, what) {
  if (signal && signal.aborted) throw abortError(signal, what);
}

module.exports = {
  Status,
  STATUS_NAMES,
  OmprpcError,
  InvalidArgumentError,
  InvalidJsonError,
  InvalidUtf8Error,
  RpcTimeoutError,
  /** @deprecated the old name of RpcTimeoutError (the same class); it shadowed the DOM's TimeoutError. */
  TimeoutError: RpcTimeoutError,
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
  errorFromDetails,
  jsError,
  closedError,
  abortError,
  throwIfAborted,
};
