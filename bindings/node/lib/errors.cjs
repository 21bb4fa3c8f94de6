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
class TimeoutError extends OmprpcError {}
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
class LimitExceededError extends OmprpcError {}
class PanicError extends OmprpcError {}

const ERROR_CLASSES = [
  OmprpcError, InvalidArgumentError, InvalidJsonError, InvalidUtf8Error, TimeoutError,
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

module.exports = {
  Status,
  STATUS_NAMES,
  OmprpcError,
  InvalidArgumentError,
  InvalidJsonError,
  InvalidUtf8Error,
  TimeoutError,
  CommandError,
  ProcessExitedError,
  ClosedError,
  ConcurrencyError,
  ProtocolError,
  IoError,
  NotFoundError,
  CancelledError,
  LimitExceededError,
  PanicError,
  errorFromDetails,
  jsError,
  closedError,
};
