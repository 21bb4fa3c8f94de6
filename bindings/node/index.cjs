'use strict';
// omprpc for Node.js: a thin koffi binding over the omprpc C ABI (include/omprpc.h,
// docs/c-api.md). No protocol logic lives here: correlation, framing, turn assembly, host
// call bookkeeping and teardown are the core's. This file maps C calls to promises, runs
// every call that can block on libuv's pool (koffi `fn.async`), and turns the polled event
// queue into an async iterator and an EventEmitter.

const fs = require('node:fs');
const path = require('node:path');
const { EventEmitter } = require('node:events');

/** The C ABI version this binding was written against (`OMPRPC_ABI_VERSION`). */
const ABI_VERSION = 1;
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
/** Default per-iterator buffer before event delivery pauses (backpressure). */
const DEFAULT_HIGH_WATER_MARK = 65536;
/** Unref'd polling interval bounds (ms) when the event pump must not hold the loop open. */
const UNREF_POLL_MIN_MS = 2;
const UNREF_POLL_MAX_MS = 100;

const Status = Object.freeze({
  OK: 0,
  INVALID_ARGUMENT: 1,
  INVALID_JSON: 2,
  INVALID_UTF8: 3,
  TIMEOUT: 4,
  COMMAND_FAILED: 5,
  PROCESS_EXITED: 6,
  CLOSED: 7,
  CONCURRENCY: 8,
  PROTOCOL: 9,
  IO: 10,
  NOT_FOUND: 11,
  CANCELLED: 12,
  LIMIT_EXCEEDED: 13,
  PANIC: 14,
});
const STATUS_NAMES = Object.keys(Status);

// ---------------------------------------------------------------------------------------
// Errors

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

function closedError(message) {
  return jsError(Status.CLOSED, message || 'the client is closed');
}

// ---------------------------------------------------------------------------------------
// The native library

let koffi = null;
let N = null; // the bound functions, once loaded
let loadedPath = null;

function libraryFileName() {
  if (process.platform === 'win32') return 'omprpc.dll';
  if (process.platform === 'darwin') return 'libomprpc.dylib';
  return 'libomprpc.so';
}

/** Where `load()` looks, in order (the first existing file wins; see README). */
function libraryCandidates() {
  const name = libraryFileName();
  const out = [];
  if (process.env.OMPRPC_LIBRARY) return [path.resolve(process.env.OMPRPC_LIBRARY)];
  out.push(path.join(__dirname, 'lib', name));
  // The repository's cargo output: the more recently built of release and debug.
  const targets = [];
  if (process.env.CARGO_TARGET_DIR) targets.push(path.resolve(process.env.CARGO_TARGET_DIR));
  targets.push(path.resolve(__dirname, '..', '..', 'target'));
  for (const t of targets) {
    const builds = ['release', 'debug']
      .map((p) => path.join(t, p, name))
      .map((p) => ({ p, m: mtimeOf(p) }))
      .filter((x) => x.m !== null)
      .sort((a, b) => b.m - a.m);
    for (const b of builds) out.push(b.p);
    if (builds.length === 0) out.push(path.join(t, 'release', name), path.join(t, 'debug', name));
  }
  return out;
}

function mtimeOf(p) {
  try {
    return fs.statSync(p).mtimeMs;
  } catch {
    return null;
  }
}

const DECLS = {
  version: 'const char *omprpc_version(void)',
  abiVersion: 'uint32_t omprpc_abi_version(void)',
  statusName: 'const char *omprpc_status_name(int status)',
  stringFree: 'void omprpc_string_free(void *s)',
  buildArgv: 'int omprpc_build_argv(const char *options_json, _Out_ void **out, _Out_ void **err)',
  start: 'int omprpc_client_start(const char *options_json, _Out_ void **out_client, _Out_ void **err)',
  request: 'int omprpc_client_request(void *c, const char *type, const char *params_json, int64_t timeout_ms, _Out_ void **out, _Out_ void **err)',
  sendFrame: 'int omprpc_client_send_frame(void *c, const char *frame_json, _Out_ void **err)',
  prompt: 'int omprpc_client_prompt(void *c, const char *message, const char *options_json, int64_t timeout_ms, _Out_ void **out, _Out_ void **err)',
  abortAndPrompt: 'int omprpc_client_abort_and_prompt(void *c, const char *message, const char *options_json, int64_t timeout_ms, _Out_ void **out, _Out_ void **err)',
  promptAndWait: 'int omprpc_client_prompt_and_wait(void *c, const char *message, const char *options_json, int64_t timeout_ms, _Out_ void **out, _Out_ void **err)',
  steer: 'int omprpc_client_steer(void *c, const char *message, const char *options_json, int64_t timeout_ms, _Out_ void **err)',
  followUp: 'int omprpc_client_follow_up(void *c, const char *message, const char *options_json, int64_t timeout_ms, _Out_ void **err)',
  abort: 'int omprpc_client_abort(void *c, int64_t timeout_ms, _Out_ void **err)',
  getState: 'int omprpc_client_get_state(void *c, int64_t timeout_ms, _Out_ void **out, _Out_ void **err)',
  bash: 'int omprpc_client_bash(void *c, const char *command, int64_t timeout_ms, _Out_ void **out, _Out_ void **err)',
  collectEvents: 'int omprpc_client_collect_events(void *c, int64_t timeout_ms, _Out_ void **out, _Out_ void **err)',
  waitForIdle: 'int omprpc_client_wait_for_idle(void *c, int64_t timeout_ms, _Out_ void **err)',
  nextEvent: 'int omprpc_client_next_event(void *c, int64_t timeout_ms, _Out_ void **out, _Out_ void **err)',
  nextEvents: 'int omprpc_client_next_events(void *c, size_t max_events, int64_t timeout_ms, _Out_ void **out, _Out_ void **err)',
  eventFd: 'int omprpc_client_event_fd(void *c, _Out_ int *out_fd, _Out_ void **err)',
  nextUiRequest: 'int omprpc_client_next_ui_request(void *c, int64_t timeout_ms, _Out_ void **out, _Out_ void **err)',
  uiSendValue: 'int omprpc_client_ui_send_value(void *c, const char *request_id, const char *value, _Out_ void **err)',
  uiSendConfirmation: 'int omprpc_client_ui_send_confirmation(void *c, const char *request_id, bool confirmed, _Out_ void **err)',
  uiCancel: 'int omprpc_client_ui_cancel(void *c, const char *request_id, bool timed_out, _Out_ void **err)',
  setUiPolicy: 'int omprpc_client_set_ui_policy(void *c, const char *policy_json, _Out_ void **err)',
  setHostTools: 'int omprpc_client_set_host_tools(void *c, const char *tools_json, int64_t timeout_ms, _Out_ void **out, _Out_ void **err)',
  setHostUriSchemes: 'int omprpc_client_set_host_uri_schemes(void *c, const char *schemes_json, int64_t timeout_ms, _Out_ void **out, _Out_ void **err)',
  hostToolUpdate: 'int omprpc_client_host_tool_update(void *c, const char *call_id, const char *partial_json, _Out_ void **err)',
  hostToolResult: 'int omprpc_client_host_tool_result(void *c, const char *call_id, const char *result_json, bool is_error, _Out_ void **err)',
  hostUriResult: 'int omprpc_client_host_uri_result(void *c, const char *request_id, const char *result_json, _Out_ void **err)',
  stderr: 'int omprpc_client_stderr(void *c, _Out_ void **out, _Out_ void **err)',
  protocolErrors: 'int omprpc_client_protocol_errors(void *c, _Out_ void **out, _Out_ void **err)',
  info: 'int omprpc_client_info(void *c, _Out_ void **out, _Out_ void **err)',
  close: 'int omprpc_client_close(void *c, _Out_ void **err)',
  free: 'void omprpc_client_free(void *c)',
};

/** Later additions (same ABI version): bound when present, an error on use otherwise. */
const OPTIONAL_DECLS = {
  policyVerdict: 'int omprpc_client_policy_verdict(void *c, const char *request_id, bool allow, const char *reason, _Out_ void **err)',
  summarize: 'int omprpc_summarize(const char *events_json, const char *options_json, _Out_ void **out, _Out_ void **err)',
  summarizerNew: 'int omprpc_summarizer_new(const char *options_json, _Out_ void **out, _Out_ void **err)',
  summarizerFeed: 'int omprpc_summarizer_feed(void *s, const char *event_json, _Out_ void **out, _Out_ void **err)',
  summarizerSummary: 'int omprpc_summarizer_summary(void *s, _Out_ void **out, _Out_ void **err)',
  summarizerFree: 'void omprpc_summarizer_free(void *s)',
  envAllowlisted: 'int omprpc_env_allowlisted(const char *options_json, _Out_ void **out, _Out_ void **err)',
  promptFromContent: 'int omprpc_prompt_from_content(const char *blocks_json, _Out_ void **out, _Out_ void **err)',
  providerConfig: 'int omprpc_provider_config(const char *options_json, _Out_ void **out, _Out_ void **err)',
  counters: 'int omprpc_client_counters(void *c, _Out_ void **out, _Out_ void **err)',
  nextLogs: 'int omprpc_client_next_logs(void *c, size_t max_records, int64_t timeout_ms, _Out_ void **out, _Out_ void **err)',
};

/**
 * Loads the shared library (once) and checks its ABI version. `libraryPath` overrides the
 * search (env `OMPRPC_LIBRARY`, the package's `lib/`, the repository's `target/`).
 * Returns the path that was loaded.
 */
function load(libraryPath) {
  if (N) {
    if (libraryPath && path.resolve(libraryPath) !== loadedPath) {
      throw new Error(`omprpc: the library is already loaded from ${loadedPath}; cannot load ${libraryPath} too`);
    }
    return loadedPath;
  }
  if (!koffi) koffi = require('koffi');
  const candidates = libraryPath ? [path.resolve(libraryPath)] : libraryCandidates();
  const file = candidates.find((p) => mtimeOf(p) !== null);
  if (!file) {
    throw new Error(
      'omprpc: cannot find the omprpc shared library. Set OMPRPC_LIBRARY to its path, copy it to ' +
        `${path.join(__dirname, 'lib', libraryFileName())}, or build it with \`cargo build\`. Looked at:\n  ` +
        candidates.join('\n  '),
    );
  }
  let lib;
  try {
    lib = koffi.load(file);
  } catch (e) {
    throw new Error(`omprpc: cannot load ${file}: ${e.message}`);
  }
  const abi = lib.func(DECLS.abiVersion)();
  if (abi !== ABI_VERSION) {
    throw new Error(
      `omprpc: ABI mismatch: ${file} has ABI version ${abi}, this binding (omprpc for Node) needs ${ABI_VERSION}. ` +
        'Use a library and a binding from the same omprpc release.',
    );
  }
  const fns = {};
  for (const [k, decl] of Object.entries(DECLS)) fns[k] = lib.func(decl);
  for (const [k, decl] of Object.entries(OPTIONAL_DECLS)) {
    try {
      fns[k] = lib.func(decl);
    } catch {
      const name = /omprpc_\w+/.exec(decl)[0];
      fns[k] = () => {
        throw new Error(`omprpc: ${name} is not in ${file} (an older build of the library)`);
      };
    }
  }
  N = fns;
  loadedPath = file;
  return file;
}

function native() {
  if (!N) load();
  return N;
}

/** Decodes an omprpc-owned string and frees it. */
function take(ptr) {
  if (ptr === null || ptr === undefined || ptr === 0n || ptr === 0) return null;
  try {
    return koffi.decode.string(ptr);
  } finally {
    N.stringFree(ptr);
  }
}

function failure(st, errPtr) {
  const text = take(errPtr);
  let details = null;
  if (text) {
    try {
      details = JSON.parse(text);
    } catch {
      details = null;
    }
  }
  if (!details || typeof details !== 'object') {
    details = { code: STATUS_NAMES[st] || 'UNKNOWN', status: st, message: text || `omprpc call failed: ${STATUS_NAMES[st] || st}` };
  }
  return errorFromDetails(details, st);
}

/** A synchronous call with an out-string: the string, or throws. */
function callOut(fn, args) {
  const out = [null];
  const err = [null];
  const st = fn(...args, out, err);
  if (st !== 0) throw failure(st, err[0]);
  return take(out[0]);
}

/** A synchronous call without an out-parameter: undefined, or throws. */
function callNoOut(fn, args) {
  const err = [null];
  const st = fn(...args, err);
  if (st !== 0) throw failure(st, err[0]);
}

/**
 * An async call on libuv's pool. Resolves `{st, out, err}` with the raw pointers; the
 * caller takes (decodes + frees) them.
 */
function callAsyncRaw(fn, args, hasOut) {
  return new Promise((resolve, reject) => {
    const out = [null];
    const err = [null];
    const cb = (e, st) => {
      if (e) reject(e);
      else resolve({ st, out: out[0], err: err[0] });
    };
    if (hasOut) fn.async(...args, out, err, cb);
    else fn.async(...args, err, cb);
  });
}

function settle(r) {
  if (r.st !== 0) {
    take(r.out);
    throw failure(r.st, r.err);
  }
  take(r.err);
  return r.out === undefined ? undefined : take(r.out);
}

// ---------------------------------------------------------------------------------------
// Argument helpers

function timeoutArg(v, what) {
  if (v === undefined) return TIMEOUT_DEFAULT;
  if (v === null || v === Infinity) return TIMEOUT_INFINITE;
  if (typeof v !== 'number' || Number.isNaN(v)) throw new TypeError(`${what || 'timeoutMs'} must be a number, null or Infinity`);
  if (v === TIMEOUT_INFINITE || v === TIMEOUT_DEFAULT) return v;
  if (v < 0) throw new RangeError(`${what || 'timeoutMs'} must be >= 0 (or -1: infinite, -2: the client default)`);
  return Math.floor(v);
}

function text(v, what) {
  if (typeof v !== 'string') throw new TypeError(`${what} must be a string`);
  if (v.includes('\0')) throw jsError(Status.INVALID_ARGUMENT, `${what} contains a NUL character`);
  return v;
}

function snakeKey(k) {
  return k.replace(/[A-Z]/g, (c) => '_' + c.toLowerCase());
}

/** Binding-only start options (not sent to the core). */
const BINDING_OPTIONS = new Set(['closeOnExit', 'close_on_exit', 'ref', 'libraryPath', 'library_path']);

/**
 * Converts a start options object to the C keys: top-level camelCase keys become snake_case
 * (`maxEventHistory` → `max_event_history`); values (e.g. `env`, tool specs) are untouched;
 * `undefined` values are dropped. Binding-only keys are removed.
 */
function toCoreOptions(options) {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError('options must be an object');
  }
  const out = {};
  for (const [k, v] of Object.entries(options)) {
    if (BINDING_OPTIONS.has(k) || v === undefined) continue;
    const key = snakeKey(k);
    if (Object.prototype.hasOwnProperty.call(out, key)) {
      throw jsError(Status.INVALID_ARGUMENT, `option "${key}" is given twice (as "${k}" and in another spelling)`);
    }
    out[key] = v;
  }
  return out;
}

function optionsJson(opts, strip) {
  if (opts === undefined || opts === null) return null;
  const o = {};
  let any = false;
  for (const [k, v] of Object.entries(opts)) {
    if (strip.includes(k) || v === undefined) continue;
    o[k] = v;
    any = true;
  }
  return any ? JSON.stringify(o) : null;
}

const CALL_OPTS = ['timeoutMs', 'signal'];

/** (message, options_json) of prompt / steer / follow_up: a message with a NUL travels inside the options. */
function promptArgs(message, opts) {
  if (typeof message !== 'string') throw new TypeError('message must be a string');
  if (!message.includes('\0')) return [message, optionsJson(opts, CALL_OPTS)];
  return [null, optionsJson({ ...opts, message }, CALL_OPTS)];
}

/** Host tool results: `"text"` or `{content:[…], details?}`; anything else becomes text. */
function toolResultJson(v) {
  if (typeof v === 'string') return JSON.stringify(v);
  if (v === undefined || v === null) return JSON.stringify('');
  if (typeof v === 'object' && Array.isArray(v.content)) return JSON.stringify(v);
  return JSON.stringify(JSON.stringify(v));
}

function errorText(e) {
  if (e instanceof Error) return e.message || String(e);
  return typeof e === 'string' ? e : JSON.stringify(e);
}

// ---------------------------------------------------------------------------------------
// Process-exit safety net: a client still open when the process exits is closed
// synchronously (agent and its process group stopped), unless `closeOnExit: false`.

const openAtExit = new Set();
let exitHookInstalled = false;
function onProcessExit() {
  for (const st of openAtExit) {
    if (!st.freed && st.h) {
      try {
        N.close(st.h, [null]);
      } catch {
        /* exiting anyway */
      }
    }
  }
  openAtExit.clear();
}

// GC safety net: a client that became unreachable without close() is closed (async) and freed.
const finalizer = new FinalizationRegistry((st) => {
  if (st.freed || st.closing || !st.h) return;
  st.closing = true;
  openAtExit.delete(st);
  const h = st.h;
  N.close.async(h, [null], () => {
    st.freed = true;
    N.free(h);
  });
});

// ---------------------------------------------------------------------------------------
// Event iterator

class EventIterator {
  constructor(client, opts) {
    this._client = client;
    this._buf = [];
    this._head = 0;
    this._waiter = null;
    this._done = false;
    this._error = null;
    this._hwm = opts.highWaterMark || DEFAULT_HIGH_WATER_MARK;
    this._types = opts.types ? new Set(opts.types) : null;
    this._signal = opts.signal || null;
    if (this._signal) {
      this._onAbort = () => this._finish(this._signal.reason || new Error('aborted'));
      if (this._signal.aborted) this._done = true;
      else this._signal.addEventListener('abort', this._onAbort, { once: true });
    }
  }

  get _size() {
    return this._buf.length - this._head;
  }

  _push(evs) {
    if (this._done) return;
    const types = this._types;
    for (let i = 0; i < evs.length; i++) {
      const ev = evs[i];
      if (types === null || types.has(ev.type)) this._buf.push(ev);
    }
    if (this._waiter && this._size > 0) {
      const w = this._waiter;
      this._waiter = null;
      w.resolve({ value: this._shift(), done: false });
    }
  }

  _shift() {
    const v = this._buf[this._head];
    this._buf[this._head++] = undefined;
    if (this._head > 4096 && this._head * 2 > this._buf.length) {
      this._buf = this._buf.slice(this._head);
      this._head = 0;
    }
    if (this._size === this._hwm - 1) this._client._iteratorDrained();
    return v;
  }

  /** Ends the iterator once its buffer is consumed (error: rejects after the buffer). */
  _end(error) {
    if (this._done) return;
    this._done = true;
    this._error = error || null;
    this._detach();
    if (this._waiter) {
      const w = this._waiter;
      this._waiter = null;
      if (this._size > 0) w.resolve({ value: this._shift(), done: false });
      else if (this._error) {
        const e = this._error;
        this._error = null;
        w.reject(e);
      } else w.resolve({ value: undefined, done: true });
    }
  }

  /** Ends now, dropping the buffer (return(), abort). */
  _finish(error) {
    this._buf = [];
    this._head = 0;
    this._end(error && this._signal && this._signal.aborted ? error : null);
  }

  _detach() {
    if (this._signal && this._onAbort) this._signal.removeEventListener('abort', this._onAbort);
    this._client._detachIterator(this);
  }

  get blocked() {
    return !this._done && this._size >= this._hwm;
  }

  /** Whether events of this type reach this iterator. */
  _accepts(type) {
    return !this._done && (this._types === null || this._types.has(type));
  }

  next() {
    if (this._size > 0) return Promise.resolve({ value: this._shift(), done: false });
    if (this._done) {
      if (this._error) {
        const e = this._error;
        this._error = null;
        return Promise.reject(e);
      }
      return Promise.resolve({ value: undefined, done: true });
    }
    if (this._waiter) return Promise.reject(new Error('omprpc: concurrent next() on one event iterator'));
    return new Promise((resolve, reject) => {
      this._waiter = { resolve, reject };
    });
  }

  return() {
    this._finish(null);
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator]() {
    return this;
  }
}

// ---------------------------------------------------------------------------------------
// The reactor: one pool thread for every client. Node cannot watch a foreign descriptor
// without native code (net.Socket would read and own it), so one koffi async call of libc
// poll(2) waits, in slices, on the event descriptors of all clients that await events (plus
// a self-pipe to re-arm it at once); a readable descriptor makes that client drain its queue
// with non-blocking calls on the main thread. Only the main thread ever takes events, so
// their order is kept.

let libc; // undefined: not tried; null: unavailable (a timer fallback is used)
function bindLibc() {
  if (libc !== undefined) return libc;
  libc = null;
  if (process.platform === 'win32') return libc;
  try {
    const self = koffi.load(null);
    libc = {
      poll: self.func('int poll(void *fds, unsigned long nfds, int timeout)'),
      pipe: self.func('int pipe(_Out_ int *fds)'),
      read: self.func('long read(int fd, void *buf, unsigned long count)'),
      write: self.func('long write(int fd, void *buf, unsigned long count)'),
    };
  } catch {
    libc = null;
  }
  return libc;
}

const POLLIN = 0x1;
const ONE_BYTE = Buffer.from([1]);

class Reactor {
  constructor() {
    this.members = new Set();
    this.running = false;
    this.wakePending = false;
    this.pipe = null;
    this.scratch = Buffer.alloc(64);
  }

  available() {
    if (this.pipe) return true;
    if (this.failed) return false;
    const l = bindLibc();
    if (!l) return false;
    const fds = [0, 0];
    const arr = new Int32Array(2);
    if (l.pipe(arr) !== 0) return false;
    fds[0] = arr[0];
    fds[1] = arr[1];
    this.pipe = fds;
    return true;
  }

  add(client) {
    if (!this.members.has(client)) {
      this.members.add(client);
      this.wake();
    }
    this.run();
  }

  remove(client) {
    if (this.members.delete(client)) this.wake();
  }

  /** Re-arms the current poll (membership or wishes changed). */
  wake() {
    if (this.running && !this.wakePending) {
      this.wakePending = true;
      libc.write(this.pipe[1], ONE_BYTE, 1);
    } else if (!this.running) {
      this.run();
    }
  }

  run() {
    if (this.running) return;
    this.running = true;
    this._loop().catch(() => {
      // poll(2) through koffi failed: every client falls back to timer polling.
      this.failed = true;
      this.pipe = null;
      for (const c of this.members) process.nextTick(() => c._updatePump());
      this.members.clear();
    });
  }

  async _loop() {
    try {
      for (;;) {
        const list = [];
        for (const c of this.members) {
          if (c._reactorWants()) list.push(c);
          else if (c._draining === null && c._pumpMode() !== 'block') {
            // No longer awaiting events this way: let the client pick its new mode.
            this.members.delete(c);
            process.nextTick(() => c._updatePump());
          }
        }
        if (list.length === 0) break;
        const n = list.length + 1;
        const buf = Buffer.alloc(8 * n);
        buf.writeInt32LE(this.pipe[0], 0);
        buf.writeInt16LE(POLLIN, 4);
        for (let i = 0; i < list.length; i++) {
          buf.writeInt32LE(list[i]._fd, 8 * (i + 1));
          buf.writeInt16LE(POLLIN, 8 * (i + 1) + 4);
        }
        const ready = await new Promise((resolve, reject) => {
          libc.poll.async(buf, n, POLL_SLICE_MS, (e, r) => (e ? reject(e) : resolve(r)));
        });
        if (buf.readInt16LE(6) !== 0) {
          libc.read(this.pipe[0], this.scratch, this.scratch.length);
          this.wakePending = false;
        }
        if (ready > 0) {
          for (let i = 0; i < list.length; i++) {
            if (buf.readInt16LE(8 * (i + 1) + 6) !== 0 && this.members.has(list[i])) list[i]._startDrain();
          }
        }
      }
    } finally {
      this.running = false;
    }
  }
}

const reactor = new Reactor();

// ---------------------------------------------------------------------------------------
// Turns: a turn's `events` can be large (a burst of 100k events is 64 MB of JSON) and most
// callers read its text, each event's `type` and the fields of a few events. The turn object
// is parsed from the small rest of the JSON; `events` is built when first read, and each event
// in it is parsed on its first use. This relies on the core writing `{"events":[…],` first and
// the events one per line, each followed by `,\n` (src/turn/mod.rs; an event never contains
// a raw newline); any other shape is simply parsed whole.
//
// The library's string is not copied: copying (or decoding) 64 MB into fresh memory costs
// ~90 ms of page faults alone. The turn reads it in place through a Buffer over the C memory
// (koffi.view), and frees it once nothing needs it: when every event has been parsed, when
// the events were parsed whole, or when the turn is garbage-collected (a FinalizationRegistry).
// V8 does not see that memory, so an untouched ArrayBuffer of the same size (zero pages, no
// RSS) stands for it in the GC's accounting of external memory: a host that never reads
// `events` still has these strings freed as its turns are collected.

const TURN_PREFIX = '{"events":[';
const TURN_MARK = Buffer.from('],"requestId":');
const TYPE_HEAD = Buffer.from('{"type":"');

let strlenFn; // undefined: not looked up; null: unavailable (turns are then decoded whole)
function cStrlen() {
  if (strlenFn === undefined) {
    try {
      strlenFn = typeof koffi.view === 'function' ? koffi.load(null).func('size_t strlen(const void *s)') : null;
    } catch {
      strlenFn = null;
    }
  }
  return strlenFn;
}

/** The library's turn strings the binding holds (for the tests). */
let turnStringsHeld = 0;
const turnMemory = new FinalizationRegistry((ptr) => {
  turnStringsHeld--;
  native().stringFree(ptr);
});

function takeTurn(ptr) {
  if (ptr === null || ptr === undefined || ptr === 0n || ptr === 0) return null;
  const strlen = cStrlen();
  if (strlen === null) return splitTurn(take(ptr));
  const n = Number(strlen(ptr));
  let buf;
  try {
    buf = Buffer.from(koffi.view(ptr, n));
  } catch {
    // A runtime without external ArrayBuffers (a V8 sandbox): decode the string instead.
    strlenFn = null;
    return splitTurn(take(ptr));
  }
  return turnFrom(buf, ptr);
}

/** The turn of a JSON text (the tests, and turns without the C string path). */
function splitTurn(json) {
  return turnFrom(Buffer.from(json, 'utf8'), null);
}

/** The turn in `buf`; `ptr`: the library's string `buf` views (null: `buf` is ours). */
function turnFrom(buf, ptr) {
  const n = buf.length;
  if (buf.latin1Slice(0, Math.min(n, TURN_PREFIX.length)) === TURN_PREFIX) {
    // The true boundary is the last `],"requestId":` after which the rest is one JSON object:
    // from any later match (inside a message) the rest would close more than it opens.
    for (let b = buf.lastIndexOf(TURN_MARK); b > 0; b = buf.lastIndexOf(TURN_MARK, b - 1)) {
      let turn;
      try {
        turn = JSON.parse('{' + buf.utf8Slice(b + 2, n));
      } catch {
        continue;
      }
      if (turn === null || typeof turn !== 'object' || Array.isArray(turn)) break;
      return lazyEvents(turn, eventSource(buf, ptr, TURN_PREFIX.length - 1, b)); // b: the `]`
    }
  }
  const json = buf.utf8Slice(0, n);
  if (ptr !== null) native().stringFree(ptr);
  return JSON.parse(json);
}

/** The JSON array of events at buf[start..last] (`[` … `]`), and who owns `buf`. */
function eventSource(buf, ptr, start, last) {
  // lastType: the previous event's type, reused when the next has the same bytes (a burst's
  // 100k message_update share one string).
  const source = { buf, ptr, start, last, pending: 0, pressure: null, lastType: '' };
  if (ptr !== null) {
    try {
      source.pressure = new ArrayBuffer(buf.length);
    } catch {
      // no address space for the stand-in: the GC just sees less
    }
    turnMemory.register(source, ptr, source);
    turnStringsHeld++;
  }
  return source;
}

/** Nothing reads `source.buf` any more: the library's string is freed now. */
function releaseSource(source) {
  if (source.buf === null) return;
  source.buf = null;
  source.pressure = null;
  if (source.ptr !== null) {
    const ptr = source.ptr;
    source.ptr = null;
    turnMemory.unregister(source);
    turnStringsHeld--;
    native().stringFree(ptr);
  }
}

function lazyEvents(turn, src) {
  let source = src;
  const define = (value) => Object.defineProperty(turn, 'events', { value, writable: true, enumerable: true, configurable: true });
  Object.defineProperty(turn, 'events', {
    configurable: true,
    enumerable: true,
    get() {
      const value = splitEvents(source);
      source = null;
      define(value);
      return value;
    },
    set(value) {
      if (source !== null) releaseSource(source);
      source = null;
      define(value);
    },
  });
  return turn;
}

/** The events parsed whole (a layout this does not cut); the source is released. */
function wholeEvents(source) {
  try {
    return JSON.parse(source.buf.utf8Slice(source.start, source.last + 1));
  } finally {
    releaseSource(source);
  }
}

/** The events of a source: lazy events when written one per line, else parsed whole. */
function splitEvents(source) {
  const { buf, start, last } = source;
  if (buf[start] !== 0x5b /* [ */ || buf[last] !== 0x5d /* ] */) return wholeEvents(source);
  if (start + 1 === last) {
    releaseSource(source);
    return [];
  }
  const events = [];
  for (let pos = start + 1; ; ) {
    // Searched as the newline alone (commas are everywhere in JSON, newlines only here).
    let k = buf.indexOf(0x0a, pos);
    if (k < 0 || k > last) k = last;
    else if (buf[k - 1] !== 0x2c /* , */) return wholeEvents(source);
    else k--;
    // Without a separator there is one event, or a layout this does not know: parse whole.
    if (k === last && events.length === 0) return wholeEvents(source);
    if (buf[pos] !== 0x7b /* { */ || buf[k - 1] !== 0x7d /* } */) return wholeEvents(source);
    events.push(lazyEvent(source, pos));
    if (k === last) break;
    pos = k + 2;
  }
  source.pending = events.length;
  return events;
}

// Each lazy event is a Proxy whose `type` is read from the event's leading `{"type":"…"`
// without parsing it, and whose first use of anything else (a field, `in`, Object.keys,
// spread, JSON.stringify, a write, util.inspect) parses that one event into its target, once.
// From then on it is that plain object behind a pass-through Proxy.

const LAZY_AT = Symbol('omprpc.lazyAt'); // where the event starts in its source
const LAZY_IN = Symbol('omprpc.lazyIn'); // its source (eventSource)

// util.inspect shows a Proxy's target without running its traps, and looks this hook up on
// the target: it is called with the Proxy as `this`, whose first read parses the event, so
// console.log(ev) shows the parsed event. (An own property, not a prototype's: changing the
// prototype back after parsing cost as much as the parse.)
const INSPECT = Symbol.for('nodejs.util.inspect.custom');
function inspectLazyEvent() {
  void this[LAZY_IN]; // through the Proxy: parses the event into its target
  return this;
}

/** An unparsed event's target: `type` when it was read cheaply, and where its JSON is. */
function lazyTarget(type, at, source) {
  const t = type === undefined ? {} : { type };
  t[LAZY_AT] = at;
  t[LAZY_IN] = source;
  t[INSPECT] = inspectLazyEvent;
  return t;
}

/** Parses a lazy event's JSON into its target, once; the target becomes a plain object. */
function fillEvent(t) {
  const source = t[LAZY_IN];
  if (source === undefined) return;
  const at = t[LAZY_AT];
  // Removed newest first, so each is the last property (the object keeps a fast shape).
  delete t[INSPECT];
  delete t[LAZY_IN];
  delete t[LAZY_AT];
  const buf = source.buf;
  let end = buf.indexOf(0x0a, at) - 1; // the separator's comma
  if (end < 0 || end > source.last) end = source.last;
  const json = buf.utf8Slice(at, end);
  if (--source.pending === 0) releaseSource(source);
  let v;
  try {
    v = JSON.parse(json);
  } catch (e) {
    throw new Error(`omprpc: a turn event is not JSON (${e.message})`);
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('omprpc: a turn event is not a JSON object');
  Object.assign(t, v);
}

const LAZY_EVENT = {
  get(t, k, r) {
    if (k === 'type') {
      const type = t.type; // own (read cheaply or parsed), else not read yet
      if (type !== undefined) return type;
    }
    fillEvent(t);
    return Reflect.get(t, k, r);
  },
  set: (t, k, v, r) => (fillEvent(t), Reflect.set(t, k, v, r)),
  has: (t, k) => (fillEvent(t), Reflect.has(t, k)),
  deleteProperty: (t, k) => (fillEvent(t), Reflect.deleteProperty(t, k)),
  ownKeys: (t) => (fillEvent(t), Reflect.ownKeys(t)),
  getOwnPropertyDescriptor: (t, k) => (fillEvent(t), Reflect.getOwnPropertyDescriptor(t, k)),
  defineProperty: (t, k, d) => (fillEvent(t), Reflect.defineProperty(t, k, d)),
  getPrototypeOf: (t) => (fillEvent(t), Reflect.getPrototypeOf(t)),
  setPrototypeOf: (t, p) => (fillEvent(t), Reflect.setPrototypeOf(t, p)),
  preventExtensions: (t) => (fillEvent(t), Reflect.preventExtensions(t)),
};

/** The event at `at` of `source`, its type read when it leads the object as a plain string. */
function lazyEvent(source, at) {
  const buf = source.buf;
  let type;
  let i = 0;
  while (i < TYPE_HEAD.length && buf[at + i] === TYPE_HEAD[i]) i++;
  if (i === TYPE_HEAD.length) {
    const a = at + i;
    let b = a;
    // ASCII without escapes (else JSON.parse reads it): bytes are characters.
    for (let c = buf[b]; c !== 0x22 && c !== 0x5c && c < 0x80 && b < source.last; c = buf[++b]);
    if (buf[b] === 0x22) {
      type = source.lastType;
      let same = type.length === b - a;
      for (let j = 0; same && j < type.length; j++) same = type.charCodeAt(j) === buf[a + j];
      if (!same) type = source.lastType = buf.latin1Slice(a, b);
    }
  }
  return new Proxy(lazyTarget(type, at, source), LAZY_EVENT);
}

// ---------------------------------------------------------------------------------------
// UI requests: waiters are served by non-blocking polls, made when they arrive and whenever
// the client's events move (every UI request is also an event), so no pool thread waits.

class UiLane {
  constructor(client) {
    this._client = client;
    this._waiters = [];
  }

  get waiting() {
    return this._waiters.length > 0;
  }

  _poll() {
    return callOutRaw(native().nextUiRequest, [this._client._st.h, 0]);
  }

  get(opts) {
    const c = this._client;
    if (c._closePromise !== null || c._st.freed) return Promise.reject(closedError());
    let t;
    try {
      t = timeoutArg(opts.timeoutMs === undefined ? TIMEOUT_INFINITE : opts.timeoutMs);
    } catch (e) {
      return Promise.reject(e);
    }
    const signal = opts.signal;
    if (signal && signal.aborted) return Promise.reject(signal.reason);
    if (this._waiters.length === 0) {
      const r = this._poll();
      if (r.st === Status.OK) {
        take(r.err);
        return Promise.resolve(JSON.parse(take(r.out)));
      }
      if (r.st !== Status.TIMEOUT || t === 0) return Promise.reject(failure(r.st, r.err));
      take(r.err);
    } else if (t === 0) {
      return Promise.reject(jsError(Status.TIMEOUT, 'Timed out waiting for an extension UI request'));
    }
    return new Promise((resolve, reject) => {
      const w = { resolve: null, reject: null, timer: null, onAbort: null };
      const done = () => {
        if (w.timer) clearTimeout(w.timer);
        if (signal) signal.removeEventListener('abort', w.onAbort);
        const i = this._waiters.indexOf(w);
        if (i >= 0) this._waiters.splice(i, 1);
        c._updatePump();
      };
      w.resolve = (v) => {
        done();
        resolve(v);
      };
      w.reject = (e) => {
        done();
        reject(e);
      };
      if (t >= 0) w.timer = setTimeout(() => w.reject(jsError(Status.TIMEOUT, 'Timed out waiting for an extension UI request')), t);
      if (signal) {
        w.onAbort = () => w.reject(signal.reason);
        signal.addEventListener('abort', w.onAbort, { once: true });
      }
      this._waiters.push(w);
      c._updatePump();
    });
  }

  /** Serves waiting callers from the core's UI queue (non-blocking). */
  serve() {
    while (this._waiters.length > 0 && !this._client._st.freed) {
      const r = this._poll();
      if (r.st === Status.OK) {
        take(r.err);
        this._waiters[0].resolve(JSON.parse(take(r.out)));
      } else if (r.st === Status.TIMEOUT) {
        take(r.err);
        return;
      } else {
        this.rejectAll(failure(r.st, r.err));
        return;
      }
    }
  }

  rejectAll(e) {
    for (const w of [...this._waiters]) w.reject(e);
  }
}

// ---------------------------------------------------------------------------------------
// Client

const RESERVED_EMIT = new Set(['error', 'event', 'close', 'newListener', 'removeListener']);
const INTERNAL_LISTENERS = new Set(['close', 'error', 'newListener', 'removeListener']);

class Client extends EventEmitter {
  /**
   * Spawns the agent and waits for its handshake (off the main thread). `options` takes the
   * C start option keys (docs/c-api.md), in snake_case or camelCase. `hostTools` and
   * `hostUriSchemes` entries may carry a `handler`. Binding-only: `closeOnExit` (default
   * true), `ref` (default true), `libraryPath`.
   */
  static async start(options = {}) {
    if (options === null || typeof options !== 'object' || Array.isArray(options)) throw new TypeError('options must be an object');
    const libraryPath = options.libraryPath || options.library_path;
    if (libraryPath) load(libraryPath);
    const n = native();
    const core = toCoreOptions(options);
    const tools = new Map();
    const schemes = new Map();
    if (Array.isArray(core.host_tools)) core.host_tools = core.host_tools.map((t) => splitHandler(t, 'name', tools));
    if (Array.isArray(core.host_uri_schemes)) core.host_uri_schemes = core.host_uri_schemes.map((s) => splitHandler(s, 'scheme', schemes));
    let policyHandler = null;
    if (core.tool_policy && typeof core.tool_policy === 'object' && typeof core.tool_policy.handler === 'function') {
      const { handler, ...policy } = core.tool_policy;
      policyHandler = handler;
      core.tool_policy = policy;
    }
    const r = await callAsyncRaw(n.start, [JSON.stringify(core)], true);
    if (r.st !== 0) throw failure(r.st, r.err);
    let client;
    try {
      client = new Client(r.out, {
        closeOnExit: options.closeOnExit !== undefined ? !!options.closeOnExit : options.close_on_exit !== false,
        ref: options.ref !== false,
      });
    } catch (e) {
      n.free(r.out); // closes the agent too
      throw e;
    }
    client._turnTimeoutMs = typeof core.turn_timeout_ms === 'number' && core.turn_timeout_ms >= 0 ? core.turn_timeout_ms : TIMEOUT_INFINITE;
    const cap = core.event_queue_capacity;
    if (cap === null || (typeof cap === 'number' && cap < 0)) client._orphanCapacity = Infinity;
    else if (typeof cap === 'number' && cap > 0) client._orphanCapacity = cap;
    client._tools = tools;
    client._schemes = schemes;
    client._policyHandler = policyHandler;
    client._updatePump();
    return client;
  }

  constructor(handle, opts) {
    if (typeof handle !== 'bigint') throw new TypeError('use Client.start(options)');
    super();
    this._st = { h: handle, freed: false, closing: false };
    this._refed = opts.ref;
    this._closePromise = null;
    this._final = null; // stderr / protocolErrors / info snapshot after close
    this._inflight = new Set();
    this._pending = 0;
    this._iterators = new Set();
    this._orphans = [];
    this._orphansDropped = 0;
    this._orphanCapacity = ORPHAN_CAPACITY;
    this._pulls = false; // nextEvent() was used
    this._bindingDropped = 0; // events this binding dropped (kept events past _orphanCapacity), total
    this._tools = new Map(); // name -> {spec, handler}
    this._schemes = new Map(); // scheme -> {spec, handler}
    this._hostCalls = new Map(); // call id -> AbortController
    this._policyHandler = null;
    this._uiLane = new UiLane(this);
    this._eventWaiters = []; // pending nextEvent() calls
    this._draining = null; // the running drain (a promise), if any
    this._timerLoop = false;
    this._wakeTimer = null;
    this._pumpEnded = false;
    this._pumpError = null;
    this._unrefDelay = UNREF_POLL_MIN_MS;
    this._fd = callEventFd(handle);
    this._turnTimeoutMs = TIMEOUT_INFINITE;
    finalizer.register(this, this._st, this._st);
    if (opts.closeOnExit) {
      openAtExit.add(this._st);
      if (!exitHookInstalled) {
        exitHookInstalled = true;
        process.on('exit', onProcessExit);
      }
    }
    this.on('newListener', (name) => {
      if (!INTERNAL_LISTENERS.has(name)) process.nextTick(() => this._updatePump());
    });
    this.on('removeListener', () => process.nextTick(() => this._updatePump()));
  }

  // --- handle and call plumbing --------------------------------------------------------

  get closed() {
    return this._closePromise !== null;
  }

  _handle() {
    if (this._closePromise !== null || this._st.freed) throw closedError();
    return this._st.h;
  }

  _track(p) {
    this._inflight.add(p);
    this._pending++;
    this._updatePump();
    const done = () => {
      this._inflight.delete(p);
      this._pending--;
      if (this._pending === 0 && this._closePromise === null) this._updatePump();
    };
    p.then(done, done);
    return p;
  }

  _asyncRaw(fn, args, hasOut) {
    return this._track(callAsyncRaw(fn, [this._st.h, ...args], hasOut));
  }

  async _async(name, args, hasOut) {
    const n = native();
    this._handle();
    const r = await this._asyncRaw(n[name], args, hasOut);
    this._catchUp();
    return settle(r);
  }

  _syncOut(name, args) {
    return callOut(native()[name], [this._handle(), ...args]);
  }

  _syncNoOut(name, args) {
    callNoOut(native()[name], [this._handle(), ...args]);
  }

  /**
   * A poll (`timeout` is its last C argument) in slices of at most POLL_SLICE_MS, so no pool
   * thread is held for long and `signal` is honoured between slices. Resolves the out string.
   */
  async _sliced(name, args, hasOut, timeoutMs, signal) {
    const n = native();
    this._handle();
    const t = timeoutArg(timeoutMs === undefined ? TIMEOUT_INFINITE : timeoutMs);
    const deadline = t < 0 ? Infinity : Date.now() + t;
    if (signal) signal.throwIfAborted();
    for (;;) {
      const remain = deadline - Date.now();
      const slice = Math.max(0, Math.min(POLL_SLICE_MS, remain));
      const call = this._asyncRaw(n[name], [...args, slice], hasOut);
      let r;
      if (signal) {
        let onAbort;
        const aborted = new Promise((_, reject) => {
          onAbort = () => reject(signal.reason);
          signal.addEventListener('abort', onAbort, { once: true });
        });
        try {
          r = await Promise.race([call, aborted]);
        } catch (e) {
          call.then((late) => {
            take(late.out);
            take(late.err);
          }, () => {});
          throw e;
        } finally {
          signal.removeEventListener('abort', onAbort);
        }
      } else {
        r = await call;
      }
      if (r.st === Status.TIMEOUT && remain > slice) {
        take(r.err);
        continue;
      }
      this._catchUp();
      return settle(r);
    }
  }

  // --- commands ------------------------------------------------------------------------

  /** Any command `{type, ...params}`; resolves the response's `data` (null when absent). */
  async request(type, params, opts = {}) {
    const p = params === undefined || params === null ? null : JSON.stringify(params);
    return JSON.parse(await this._async('request', [text(type, 'type'), p, timeoutArg(opts.timeoutMs)], true));
  }

  /** Writes one frame as is (no id, no response awaited), e.g. `widget_layout`. */
  sendFrame(frame) {
    this._syncNoOut('sendFrame', [typeof frame === 'string' ? frame : JSON.stringify(frame)]);
  }

  /** Sends `prompt`; resolves its request id once the agent acknowledged it. */
  async prompt(message, opts = {}) {
    return this._async('prompt', [...promptArgs(message, opts), timeoutArg(opts.timeoutMs)], true);
  }

  /** Sends `abort_and_prompt`; like prompt(). */
  async abortAndPrompt(message, opts = {}) {
    return this._async('abortAndPrompt', [...promptArgs(message, opts), timeoutArg(opts.timeoutMs)], true);
  }

  /**
   * Prompts and waits for that prompt's completion; resolves the turn. `timeoutMs` covers the
   * whole turn (default: the `turn_timeout_ms` option, else none). This call holds one
   * libuv pool thread for the whole turn.
   */
  async promptAndWait(message, opts = {}) {
    const n = native();
    this._handle();
    const r = await this._asyncRaw(n.promptAndWait, [...promptArgs(message, opts), timeoutArg(opts.timeoutMs)], true);
    this._catchUp();
    if (r.st !== 0) return settle(r);
    take(r.err);
    return takeTurn(r.out);
  }

  /**
   * Before any call that waited on the agent resolves or rejects: delivers what the core has
   * queued to listeners and iterators (non-blocking batches, on this thread), so they have
   * seen every event that preceded the call's outcome — the core queues them before the call
   * returns. An iterator past its highWaterMark takes these anyway (they are bounded by the
   * core's queue). Not for the pull queue alone (nextEvent() takes its own).
   */
  _catchUp() {
    if (this._st.freed || this._pumpEnded) return;
    if (this._iterators.size === 0 && !this._hasListeners()) return;
    while (this._drainOnce(true) > 0) {
      // each batch is delivered in order; a closed client stops it
    }
  }

  async steer(message, opts = {}) {
    await this._async('steer', [...promptArgs(message, opts), timeoutArg(opts.timeoutMs)], false);
  }

  async followUp(message, opts = {}) {
    await this._async('followUp', [...promptArgs(message, opts), timeoutArg(opts.timeoutMs)], false);
  }

  async abort(opts = {}) {
    await this._async('abort', [timeoutArg(opts.timeoutMs)], false);
  }

  async getState(opts = {}) {
    return JSON.parse(await this._async('getState', [timeoutArg(opts.timeoutMs)], true));
  }

  async bash(command, opts = {}) {
    return JSON.parse(await this._async('bash', [text(command, 'command'), timeoutArg(opts.timeoutMs)], true));
  }

  /** Events from now through the next terminal `agent_end` (holds a pool thread meanwhile). */
  async collectEvents(opts = {}) {
    return JSON.parse(await this._async('collectEvents', [timeoutArg(opts.timeoutMs)], true));
  }

  /**
   * Waits until every accepted prompt completed (polled in slices; `signal` aborts the wait).
   * Rejects with CommandError when a prompt failed late since the last prompt.
   */
  async waitForIdle(opts = {}) {
    let t = opts.timeoutMs;
    // The C default is turn_timeout_ms; slicing needs the deadline here.
    if (t === undefined || t === TIMEOUT_DEFAULT) t = this._turnTimeoutMs;
    await this._sliced('waitForIdle', [], false, t, opts.signal);
  }

  /**
   * The next event straight from the core's queue (TimeoutError when none arrived in time;
   * ClosedError once closed and drained). Do not mix with events()/listeners: whichever
   * takes an event first gets it.
   */
  async nextEvent(opts = {}) {
    this._pulls = true; // from now on the pull queue has a consumer (see _seenBy)
    if (this._orphans.length || this._orphansDropped) return this._takeOrphans(1)[0];
    const t = timeoutArg(opts.timeoutMs === undefined ? TIMEOUT_INFINITE : opts.timeoutMs);
    const signal = opts.signal;
    if (signal) signal.throwIfAborted();
    if (this._closePromise !== null) {
      // close() drains the core's queue into the pull queue before it frees the handle.
      await this._closePromise.catch(() => {});
      if (this._orphans.length || this._orphansDropped) return this._takeOrphans(1)[0];
      throw closedError();
    }
    if (this._pumpEnded) throw this._pumpError || closedError();
    if (t === 0) {
      // Only the main thread takes events: a non-blocking poll keeps their order.
      const r = callOutRaw(native().nextEvents, [this._st.h, EVENT_BATCH, 0]);
      if (r.st === Status.OK) {
        take(r.err);
        this._keepOrphans(this._dispatchHost(JSON.parse(take(r.out)), true));
        this._uiLane.serve();
        return this._takeOrphans(1)[0];
      }
      throw failure(r.st, r.err);
    }
    return new Promise((resolve, reject) => {
      const w = { resolve, reject, timer: null, signal, onAbort: null };
      const done = () => {
        if (w.timer) clearTimeout(w.timer);
        if (signal) signal.removeEventListener('abort', w.onAbort);
        const i = this._eventWaiters.indexOf(w);
        if (i >= 0) this._eventWaiters.splice(i, 1);
        if (this._eventWaiters.length === 0) process.nextTick(() => this._updatePump());
      };
      w.resolve = (v) => {
        done();
        resolve(v);
      };
      w.reject = (e) => {
        done();
        reject(e);
      };
      if (t >= 0) w.timer = setTimeout(() => w.reject(jsError(Status.TIMEOUT, 'no event arrived before the timeout')), t);
      if (signal) {
        w.onAbort = () => w.reject(signal.reason);
        signal.addEventListener('abort', w.onAbort, { once: true });
      }
      this._eventWaiters.push(w);
      this._updatePump();
    });
  }

  _wakeEventWaiters() {
    while (this._eventWaiters.length && (this._orphans.length || this._orphansDropped)) {
      this._eventWaiters[0].resolve(this._takeOrphans(1)[0]);
    }
    if (this._eventWaiters.length && (this._pumpEnded || this._st.freed)) {
      const e = this._pumpError || closedError();
      for (const w of [...this._eventWaiters]) w.reject(e);
    }
  }

  /**
   * The next UI request that needs an answer (select, confirm, input, editor, unknown
   * interactive). Default: waits without deadline, in slices. TimeoutError when none arrived
   * in time; ClosedError once the client is closed.
   */
  async nextUiRequest(opts = {}) {
    return this._uiLane.get(opts);
  }

  uiSendValue(requestId, value) {
    this._syncNoOut('uiSendValue', [text(requestId, 'requestId'), text(value, 'value')]);
  }

  uiSendConfirmation(requestId, confirmed) {
    this._syncNoOut('uiSendConfirmation', [text(requestId, 'requestId'), !!confirmed]);
  }

  uiCancel(requestId, opts = {}) {
    this._syncNoOut('uiCancel', [text(requestId, 'requestId'), !!(opts && opts.timedOut)]);
  }

  /** The headless UI policy (`{confirm, select, input, editor}`; null removes it). */
  setUiPolicy(policy) {
    this._syncNoOut('setUiPolicy', [policy === null || policy === undefined ? null : JSON.stringify(policy)]);
  }

  // --- host tools and URIs -----------------------------------------------------------

  /**
   * Replaces the registered host tools (`[{name, description, parameters, label?, hidden?,
   * loadMode?, handler?}]`); tools with a `handler` are answered by it. Resolves the agent's
   * answer (`{toolNames}`).
   */
  async setHostTools(tools, opts = {}) {
    if (!Array.isArray(tools)) throw new TypeError('tools must be an array');
    const handlers = new Map();
    const specs = tools.map((t) => splitHandler(t, 'name', handlers));
    return this._register('_tools', handlers, () => this._async('setHostTools', [JSON.stringify(specs), timeoutArg(opts.timeoutMs)], true));
  }

  /**
   * A host registration whose handlers (`field`: '_tools' or '_schemes') are installed before
   * the call — a host call may follow the agent's answer at once — and put back if it fails.
   */
  async _register(field, handlers, call) {
    const previous = this[field];
    this[field] = handlers;
    this._updatePump();
    try {
      return JSON.parse(await call());
    } catch (e) {
      this[field] = previous;
      this._updatePump();
      throw e;
    }
  }

  /** Adds (or replaces, by name) one host tool with its async handler. */
  async registerHostTool(tool, opts = {}) {
    if (!tool || typeof tool.name !== 'string') throw new TypeError('tool.name must be a string');
    const list = [...this._tools.values()].filter((e) => e.spec.name !== tool.name).map(joinHandler);
    list.push(tool);
    return this.setHostTools(list, opts);
  }

  /** Removes one host tool by name. */
  async unregisterHostTool(name, opts = {}) {
    return this.setHostTools([...this._tools.values()].filter((e) => e.spec.name !== name).map(joinHandler), opts);
  }

  /**
   * Replaces the registered host URI schemes (`[{scheme, description?, writable?,
   * immutable?, handler?}]`). Resolves the agent's answer (`{schemes}`).
   */
  async setHostUriSchemes(schemes, opts = {}) {
    if (!Array.isArray(schemes)) throw new TypeError('schemes must be an array');
    const handlers = new Map();
    const specs = schemes.map((s) => splitHandler(s, 'scheme', handlers));
    const keyed = new Map([...handlers].map(([k, v]) => [String(k).trim().toLowerCase(), v]));
    return this._register('_schemes', keyed, () => this._async('setHostUriSchemes', [JSON.stringify(specs), timeoutArg(opts.timeoutMs)], true));
  }

  /** Adds (or replaces) one host URI scheme with its async handler. */
  async registerHostUriScheme(scheme, opts = {}) {
    if (!scheme || typeof scheme.scheme !== 'string') throw new TypeError('scheme.scheme must be a string');
    const key = scheme.scheme.trim().toLowerCase();
    const list = [...this._schemes.entries()].filter(([k]) => k !== key).map(([, e]) => joinHandler(e));
    list.push(scheme);
    return this.setHostUriSchemes(list, opts);
  }

  /**
   * Answers a `policy_eval` event (the `tool_policy` gate in host mode): allow, or block with
   * `reason`. NotFoundError for an unknown id. Not needed with a policy handler.
   */
  policyVerdict(requestId, allow, reason) {
    this._syncNoOut('policyVerdict', [text(requestId, 'requestId'), !!allow, reason === undefined || reason === null ? null : text(reason, 'reason')]);
  }

  /**
   * Answers every `policy_eval` with `handler(event, ctx)`: `true`/`false` or
   * `{allow, reason}` (async allowed; a throw blocks with its message). null removes it.
   */
  setPolicyHandler(handler) {
    if (handler !== null && handler !== undefined && typeof handler !== 'function') throw new TypeError('handler must be a function or null');
    this._policyHandler = handler || null;
    this._updatePump();
  }

  _onPolicyEval(ev) {
    const handler = this._policyHandler;
    if (!handler || typeof ev.id !== 'string') return;
    const id = ev.id;
    const ctx = { requestId: id, toolName: ev.toolName, toolCallId: ev.toolCallId, event: ev, client: this };
    Promise.resolve()
      .then(() => handler(ev, ctx))
      .then(
        (v) => {
          const allow = typeof v === 'object' && v !== null ? !!v.allow : !!v;
          const reason = typeof v === 'object' && v !== null && typeof v.reason === 'string' ? v.reason : null;
          this._hostSend(() => this.policyVerdict(id, allow, reason));
        },
        (err) => this._hostSend(() => this.policyVerdict(id, false, errorText(err))),
      );
  }

  /** Streams a partial result for host tool call `callId` (raw; handlers use ctx.update). */
  hostToolUpdate(callId, partial) {
    this._syncNoOut('hostToolUpdate', [text(callId, 'callId'), toolResultJson(partial)]);
  }

  /** The final result of host tool call `callId` (raw; handlers just return). */
  hostToolResult(callId, result, opts = {}) {
    this._syncNoOut('hostToolResult', [text(callId, 'callId'), toolResultJson(result), !!(opts && opts.isError)]);
  }

  /** Answers host URI request `requestId` (raw; handlers just return). */
  hostUriResult(requestId, result) {
    this._syncNoOut('hostUriResult', [text(requestId, 'requestId'), JSON.stringify(result)]);
  }

  /** Whether an event of this type reaches a consumer that could answer it (a client that
   * ever called nextEvent() pulls its events, between calls too). */
  _seenBy(type, pulled) {
    if (pulled || this._pulls || this._eventWaiters.length > 0 || this.listenerCount('event') > 0 || this.listenerCount(type) > 0) return true;
    for (const it of this._iterators) if (it._accepts(type)) return true;
    return false;
  }

  /** A registered host call without a handler: the program answers it from its events; when
   * none of its consumers will see it, nobody can, and it is answered with an error now. */
  _unanswerable(ev, pulled) {
    if (this._seenBy(ev.type, pulled)) return false;
    const what = ev.type === 'host_tool_call' ? `host tool ${ev.toolName}` : `host URI ${ev.url}`;
    return `${what} has no handler and no listener or iterator receives ${ev.type} events`;
  }

  _onHostToolCall(ev, pulled) {
    const entry = this._tools.get(ev.toolName);
    if (!entry || typeof ev.id !== 'string') return; // the core answers unregistered tools
    if (!entry.handler) {
      const why = this._unanswerable(ev, pulled);
      if (why) this._hostSend(() => this.hostToolResult(ev.id, why, { isError: true }));
      return;
    }
    const ac = new AbortController();
    this._hostCalls.set(ev.id, ac);
    const id = ev.id;
    const ctx = {
      callId: id,
      toolCallId: ev.toolCallId,
      toolName: ev.toolName,
      signal: ac.signal,
      event: ev,
      client: this,
      update: (partial) => this._hostSend(() => this.hostToolUpdate(id, partial)),
    };
    Promise.resolve()
      .then(() => entry.handler(ev.arguments, ctx))
      .then(
        (res) => this._hostSend(() => this.hostToolResult(id, res)),
        (err) => this._hostSend(() => this.hostToolResult(id, err && err.result !== undefined ? err.result : errorText(err), { isError: true })),
      )
      .finally(() => this._hostCalls.delete(id));
  }

  _onHostUriRequest(ev, pulled) {
    const url = typeof ev.url === 'string' ? ev.url : '';
    const i = url.indexOf('://');
    const entry = i > 0 ? this._schemes.get(url.slice(0, i).toLowerCase()) : undefined;
    if (!entry || typeof ev.id !== 'string') return; // the core answers unregistered schemes
    if (!entry.handler) {
      const why = this._unanswerable(ev, pulled);
      if (why) this._hostSend(() => this.hostUriResult(ev.id, { error: why }));
      return;
    }
    const ac = new AbortController();
    this._hostCalls.set(ev.id, ac);
    const id = ev.id;
    const ctx = { requestId: id, signal: ac.signal, event: ev, client: this };
    Promise.resolve()
      .then(() => entry.handler(ev, ctx))
      .then(
        (res) => this._hostSend(() => this.hostUriResult(id, res === undefined || res === null ? {} : typeof res === 'string' ? { content: res } : res)),
        (err) => this._hostSend(() => this.hostUriResult(id, { error: errorText(err) })),
      )
      .finally(() => this._hostCalls.delete(id));
  }

  /** Sends a host reply; false when the call is no longer open (cancelled, unknown, closed). */
  _hostSend(fn) {
    try {
      fn();
      return true;
    } catch (e) {
      if (e instanceof CancelledError || e instanceof NotFoundError || e instanceof ClosedError) return false;
      throw e;
    }
  }

  _onHostCancel(ev) {
    const ac = this._hostCalls.get(ev.targetId);
    if (ac) ac.abort(jsError(Status.CANCELLED, `the agent cancelled ${ev.targetId}`));
  }

  // --- information -------------------------------------------------------------------

  /** The agent's last `max_stderr_lines` stderr lines (also after close). */
  stderr() {
    if (this._final) return this._final.stderr;
    return callOut(native().stderr, [this._liveHandle()]);
  }

  /** The recorded protocol errors (also after close). */
  protocolErrors() {
    if (this._final) return this._final.protocolErrors;
    return JSON.parse(callOut(native().protocolErrors, [this._liveHandle()]));
  }

  /** `{pid, argv, flavor, protocolVersion, ready, closed, closeReason, …}` (also after close). */
  info() {
    if (this._final) return this._final.info;
    return JSON.parse(callOut(native().info, [this._liveHandle()]));
  }

  /**
   * The library's per-client counters: `{frames_in, bytes_in, frames_out, bytes_out,
   * requests_sent, responses, requests_pending, events_queued, events_delivered,
   * events_dropped, time_to_first_event_ms, uptime_ms, …}` (after close: the last values),
   * plus `binding_events_dropped`: the events this binding dropped (kept for a later consumer
   * past 65 536), also counted in `events_dropped`.
   */
  counters() {
    const k = this._final ? { ...this._final.counters } : JSON.parse(callOut(native().counters, [this._liveHandle()]));
    k.binding_events_dropped = this._bindingDropped;
    if (typeof k.events_dropped === 'number') k.events_dropped += this._bindingDropped;
    return k;
  }

  /**
   * Resolves up to `max` (256) log records `{level, target, message, t_ms, client, …}`,
   * waiting up to `timeoutMs` (default: no deadline) for the first, in slices on libuv's pool
   * (`signal` aborts). Needs the start option `logLevel` / `log_level` (else
   * InvalidArgumentError); TimeoutError when none arrived in time; ClosedError once the
   * client is closed and every record was taken.
   */
  async nextLogs(opts = {}) {
    const max = opts.max === undefined ? 256 : opts.max;
    if (!Number.isInteger(max) || max < 1) throw new RangeError('max must be a positive integer');
    if (this._final) {
      // Closed: what teardown logged was kept at close; then ClosedError.
      if (this._final.logs.length === 0) throw closedError();
      return this._final.logs.splice(0, max);
    }
    return JSON.parse(await this._sliced('nextLogs', [max], true, opts.timeoutMs, opts.signal));
  }

  /** The core's event descriptor (eventfd; do not read or close it). Valid until close(). */
  eventFd() {
    const fd = [0];
    callNoOut(native().eventFd, [this._handle(), fd]);
    return fd[0];
  }

  _liveHandle() {
    if (this._st.freed) throw closedError();
    return this._st.h;
  }

  // --- events ------------------------------------------------------------------------

  /**
   * An async iterator over every event from now on (verbatim agent frames plus omprpc's
   * synthetic ones). Ends when the client is closed and the queue drained. Options:
   * `signal`, `types` (only these event types), `highWaterMark` (buffered events before
   * delivery pauses).
   */
  events(opts = {}) {
    const it = new EventIterator(this, opts);
    if (it._done) return it;
    this._iterators.add(it);
    if (this._orphans.length || this._orphansDropped) it._push(this._takeOrphans(Infinity));
    if (this._pumpEnded || this._st.freed) it._end(this._pumpError);
    else this._updatePump();
    return it;
  }

  _detachIterator(it) {
    this._iterators.delete(it);
    this._iteratorDrained();
    this._updatePump();
  }

  _iteratorDrained() {
    // Below the high-water mark again: the reactor may watch this client's events again.
    if (this._closePromise === null) process.nextTick(() => this._updatePump());
  }

  /** Keeps the process alive while events are awaited (default). */
  ref() {
    this._refed = true;
    this._updatePump();
    return this;
  }

  /**
   * Lets the process exit although events are awaited: the event pump then polls with
   * unref'd timers instead of blocking pool calls.
   */
  unref() {
    this._refed = false;
    this._updatePump();
    return this;
  }

  _hasListeners() {
    for (const name of this.eventNames()) {
      if (!INTERNAL_LISTENERS.has(name) && this.listenerCount(name) > 0) return true;
    }
    return false;
  }

  _hasConsumers() {
    return this._iterators.size > 0 || this._eventWaiters.length > 0 || this._hasListeners();
  }

  /** Host registrations need the pump: their calls are served, delivered, or answered at once. */
  _hasHandlers() {
    return this._policyHandler !== null || this._tools.size > 0 || this._schemes.size > 0;
  }

  _pumpMode() {
    if (this._st.freed || this._pumpEnded) return 'off';
    const consumers = this._hasConsumers() || this._uiLane.waiting;
    if (!consumers && !this._hasHandlers()) return 'off';
    if (this._pending > 0 || this._eventWaiters.length > 0 || this._uiLane.waiting || (consumers && this._refed)) return 'block';
    return 'timer';
  }

  /** Re-evaluates who waits for this client's events and how (reactor, timer, nothing). */
  _updatePump() {
    const mode = this._pumpMode();
    if (mode === 'block' && reactor.available()) {
      reactor.add(this);
    } else {
      reactor.remove(this);
    }
    if (mode === 'timer' || (mode === 'block' && !reactor.available())) this._runTimerLoop();
    else if (this._wakeTimer) this._wakeTimer();
  }

  _reactorWants() {
    return this._draining === null && !this._st.freed && !this._pumpEnded && this._pumpMode() === 'block' && !this._blockedIterator();
  }

  _blockedIterator() {
    if (this._closePromise !== null) return false;
    for (const it of this._iterators) if (it.blocked) return true;
    return false;
  }

  /** Takes what is queued, batch by batch, yielding to the event loop in between. */
  _startDrain() {
    if (this._draining !== null) return this._draining;
    this._draining = this._drain().then(
      (n) => {
        this._draining = null;
        this._updatePump();
        return n;
      },
      (e) => {
        this._draining = null;
        this._pumpFailed(e);
        return 0;
      },
    );
    return this._draining;
  }

  async _drain() {
    let delivered = 0;
    for (let first = true; ; first = false) {
      if (!first) await new Promise((resolve) => setImmediate(resolve));
      if (this._drainOnce() <= 0) return delivered;
      delivered++;
    }
  }

  /** One non-blocking batch: >0 events delivered, 0 none queued, -1 stop. `force`: past blocked iterators. */
  _drainOnce(force) {
    if (this._st.freed || this._pumpEnded) return -1;
    if (this._closePromise === null && (this._pumpMode() === 'off' || (!force && this._blockedIterator()))) return -1;
    const r = callOutRaw(native().nextEvents, [this._st.h, EVENT_BATCH, 0]);
    if (r.st === Status.OK) {
      take(r.err);
      const evs = JSON.parse(take(r.out));
      this._deliver(evs);
      this._uiLane.serve();
      return evs.length;
    }
    if (r.st === Status.TIMEOUT) {
      take(r.err);
      this._uiLane.serve();
      return 0;
    }
    if (r.st === Status.CLOSED) {
      take(r.err);
      this._uiLane.serve();
      this._pumpClosed(null);
      return -1;
    }
    this._pumpClosed(failure(r.st, r.err));
    return -1;
  }

  /**
   * Without the reactor's pool call: non-blocking polls on a timer, unref'd unless the
   * client must keep the process alive (no libc poll available).
   */
  async _runTimerLoop() {
    if (this._timerLoop) {
      if (this._wakeTimer) this._wakeTimer();
      return;
    }
    this._timerLoop = true;
    try {
      for (;;) {
        const mode = this._pumpMode();
        const useTimer = mode === 'timer' || (mode === 'block' && !reactor.available());
        if (!useTimer) return;
        const n = await this._startDrain();
        if (n > 0) this._unrefDelay = UNREF_POLL_MIN_MS;
        else this._unrefDelay = Math.min(UNREF_POLL_MAX_MS, this._unrefDelay * 2);
        if (this._pumpMode() === 'off') return;
        await new Promise((resolve) => {
          const t = setTimeout(resolve, this._unrefDelay);
          if (this._pumpMode() !== 'block') t.unref();
          this._wakeTimer = () => {
            clearTimeout(t);
            resolve();
          };
        });
        this._wakeTimer = null;
      }
    } finally {
      this._timerLoop = false;
    }
  }

  _pumpClosed(error) {
    this._pumpEnded = true;
    this._pumpError = error;
    reactor.remove(this);
    for (const it of [...this._iterators]) it._end(error);
    this._wakeEventWaiters();
  }

  _pumpFailed(e) {
    this._pumpClosed(e instanceof Error ? e : new Error(String(e)));
    if (this.listenerCount('error') > 0) this.emit('error', e);
  }

  /** Starts handlers for host calls / cancels; returns the events. */
  _dispatchHost(evs, pulled) {
    for (let i = 0; i < evs.length; i++) {
      const ev = evs[i];
      switch (ev.type) {
        case 'host_tool_call':
          this._onHostToolCall(ev, pulled);
          break;
        case 'host_uri_request':
          this._onHostUriRequest(ev, pulled);
          break;
        case 'host_tool_cancel':
        case 'host_uri_cancel':
          this._onHostCancel(ev);
          break;
        case 'policy_eval':
          this._onPolicyEval(ev);
          break;
        default:
      }
    }
    return evs;
  }

  /**
   * Hands a batch to everyone: host handlers, iterators, listeners; and to the pull queue
   * (nextEvent(), later iterators) while a nextEvent() waits or nobody else consumes.
   */
  _deliver(evs) {
    this._dispatchHost(evs);
    const listeners = this._hasListeners();
    if (this._eventWaiters.length > 0 || (this._iterators.size === 0 && !listeners)) {
      this._keepOrphans(evs);
      this._wakeEventWaiters();
    }
    for (const it of this._iterators) it._push(evs);
    if (listeners) {
      const all = this.listenerCount('event') > 0;
      for (let i = 0; i < evs.length; i++) {
        const ev = evs[i];
        try {
          if (all) this.emit('event', ev);
          if (typeof ev.type === 'string' && !RESERVED_EMIT.has(ev.type) && this.listenerCount(ev.type) > 0) this.emit(ev.type, ev);
        } catch (e) {
          // A throwing listener must not stop the pump; surface it like any uncaught error.
          queueMicrotask(() => {
            throw e;
          });
        }
      }
    }
  }

  _keepOrphans(evs) {
    for (const ev of evs) this._orphans.push(ev);
    const over = this._orphans.length - this._orphanCapacity;
    if (over > 0) {
      // Oldest dropped, and said so (like the core's own queue) when they are handed out; a
      // dropped event_overflow of the core's carries its count into ours.
      for (const ev of this._orphans.splice(0, over)) {
        if (ev && ev.type === 'event_overflow' && ev.omprpc === true && typeof ev.dropped === 'number') {
          this._orphansDropped += ev.dropped;
        } else {
          this._orphansDropped++;
          this._bindingDropped++;
        }
      }
    }
  }

  /** Up to `max` kept events, led by a synthetic event_overflow when some were dropped. */
  _takeOrphans(max) {
    const out = [];
    if (this._orphansDropped > 0) {
      out.push({ type: 'event_overflow', dropped: this._orphansDropped, omprpc: true });
      this._orphansDropped = 0;
    }
    const n = Math.min(max - out.length, this._orphans.length);
    for (const ev of this._orphans.splice(0, n)) out.push(ev);
    return out;
  }

  // --- close -------------------------------------------------------------------------

  /**
   * Closes the client: every pending call settles at once (ClosedError, or the earlier
   * failure), the agent and its process group are stopped, events queued before close are
   * still delivered to active iterators/listeners (or kept for a later events()), and the
   * native handle is freed. Resolves once the agent is gone. Idempotent.
   */
  close() {
    if (this._closePromise === null) this._closePromise = this._doClose();
    return this._closePromise;
  }

  async _doClose() {
    const n = native();
    const st = this._st;
    st.closing = true;
    openAtExit.delete(st);
    for (const ac of this._hostCalls.values()) ac.abort(closedError('the client was closed'));
    this._hostCalls.clear();
    this._uiLane.rejectAll(closedError());
    let closeError = null;
    const r = await callAsyncRaw(n.close, [st.h], false);
    if (r.st !== 0) closeError = failure(r.st, r.err);
    else take(r.err);
    // Every pending call has seen the close (the core woke them); the events queued before
    // it are delivered (to iterators and listeners, or kept for nextEvent()/events()).
    while (this._inflight.size > 0) await Promise.allSettled([...this._inflight]);
    if (this._draining !== null) await this._draining;
    while (this._drainOnce() > 0);
    const snapshot = (fn) => {
      try {
        return callOut(fn, [st.h]);
      } catch {
        return null;
      }
    };
    const info = snapshot(n.info);
    const pe = snapshot(n.protocolErrors);
    const counters = snapshot(n.counters);
    // The log records left after close (teardown's): kept for nextLogs() after the free.
    const logs = [];
    try {
      for (;;) {
        const r = callOutRaw(n.nextLogs, [st.h, 4096, 0]);
        take(r.err);
        if (r.st !== Status.OK) break; // CLOSED once taken, INVALID_ARGUMENT when logs are off
        logs.push(...JSON.parse(take(r.out)));
      }
    } catch {
      // an older library without omprpc_client_next_logs
    }
    this._final = {
      counters: counters ? JSON.parse(counters) : {},
      logs,
      stderr: snapshot(n.stderr) || '',
      protocolErrors: pe ? JSON.parse(pe) : [],
      info: info ? JSON.parse(info) : { closed: true },
    };
    while (this._inflight.size > 0) await Promise.allSettled([...this._inflight]);
    reactor.remove(this);
    st.freed = true;
    finalizer.unregister(st);
    n.free(st.h);
    this._pumpEnded = true;
    if (this._wakeTimer) this._wakeTimer();
    for (const it of [...this._iterators]) it._end(this._pumpError);
    this._wakeEventWaiters();
    this.emit('close', this._final.info.closeReason || null);
    if (closeError) throw closeError;
  }
}

if (typeof Symbol.asyncDispose === 'symbol') {
  Client.prototype[Symbol.asyncDispose] = function asyncDispose() {
    return this.close();
  };
}

function callEventFd(h) {
  const fd = [0];
  callNoOut(native().eventFd, [h, fd]);
  return fd[0];
}

function callOutRaw(fn, args) {
  const out = [null];
  const err = [null];
  const st = fn(...args, out, err);
  return { st, out: out[0], err: err[0] };
}

function splitHandler(item, key, handlers) {
  if (!item || typeof item !== 'object' || Array.isArray(item)) {
    if (typeof item === 'string' && key === 'scheme') {
      handlers.set(item.trim().toLowerCase(), { spec: { scheme: item }, handler: null });
      return item;
    }
    throw new TypeError(`each entry must be an object with a "${key}"`);
  }
  const { handler, ...spec } = item;
  if (handler !== undefined && typeof handler !== 'function') throw new TypeError(`${key} ${spec[key]}: handler must be a function`);
  const k = key === 'scheme' ? String(spec.scheme).trim().toLowerCase() : spec[key];
  handlers.set(k, { spec, handler: handler || null });
  return spec;
}

function joinHandler(e) {
  return e.handler ? { ...e.spec, handler: e.handler } : e.spec;
}

// ---------------------------------------------------------------------------------------
// Module functions

/** The library version string. */
function version() {
  return native().version();
}

/** The loaded library's ABI version. */
function abiVersion() {
  return native().abiVersion();
}

/** The name of a status value ("TIMEOUT"); "UNKNOWN" for others. */
function statusName(status) {
  return native().statusName(status);
}

/** The argv `Client.start(options)` would spawn (nothing started). */
function buildArgv(options = {}) {
  return JSON.parse(callOut(native().buildArgv, [JSON.stringify(toCoreOptions(options))]));
}

/**
 * The turn summary of raw events (an array, e.g. a turn's `events`, or its JSON text):
 * `{complete, text, finalText, reasoning, chunks, toolCalls, stopReason, stopReasons, usage,
 * messageUsage}`. Options `{model}`: the configured model. Runs on the pool.
 */
async function summarize(events, options) {
  const n = native();
  const ev = typeof events === 'string' ? events : JSON.stringify(events);
  const r = await callAsyncRaw(n.summarize, [ev, options === undefined || options === null ? null : JSON.stringify(options)], true);
  return JSON.parse(settle(r));
}

const summarizerFinalizer = new FinalizationRegistry((box) => {
  if (box.h) N.summarizerFree(box.h);
});

/** The streaming turn summary: feed raw events in order, read the summary at any time. */
class Summarizer {
  constructor(options) {
    const n = native();
    const out = [null];
    const err = [null];
    const st = n.summarizerNew(options === undefined || options === null ? null : JSON.stringify(options), out, err);
    if (st !== 0) throw failure(st, err[0]);
    this._box = { h: out[0] };
    summarizerFinalizer.register(this, this._box, this._box);
  }

  _h() {
    if (!this._box.h) throw new Error('omprpc: the summarizer was freed');
    return this._box.h;
  }

  /** Feeds one raw event (object or JSON text); returns the derived items it produced. */
  feed(event) {
    return JSON.parse(callOut(native().summarizerFeed, [this._h(), typeof event === 'string' ? event : JSON.stringify(event)]));
  }

  /** The summary of everything fed so far. */
  summary() {
    return JSON.parse(callOut(native().summarizerSummary, [this._h()]));
  }

  /** Frees the native summarizer (also done by the garbage collector). Idempotent. */
  free() {
    if (this._box.h) {
      summarizerFinalizer.unregister(this._box);
      native().summarizerFree(this._box.h);
      this._box.h = null;
    }
  }
}
if (typeof Symbol.dispose === 'symbol') Summarizer.prototype[Symbol.dispose] = Summarizer.prototype.free;

/** This process's environment through the core's allow-list, plus `passthrough` names. */
function envAllowlisted(options) {
  return JSON.parse(callOut(native().envAllowlisted, [options === undefined || options === null ? null : JSON.stringify(options)]));
}

/** Prompt content blocks → `{message, images}` (images checked, files inlined). */
function promptFromContent(blocks) {
  return JSON.parse(callOut(native().promptFromContent, [JSON.stringify(blocks)]));
}

/**
 * Writes a custom-provider config into a private agent directory; returns `{dir, file, env,
 * model, envPassthrough}` to merge into the start options. The caller removes `dir`.
 */
function providerConfig(options) {
  return JSON.parse(callOut(native().providerConfig, [JSON.stringify(options)]));
}

/** The path of the loaded library (null before load()). */
function libraryPath() {
  return loadedPath;
}

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
  /** Internals exposed for the tests only; not part of the API. */
  _internal: { splitTurn, turnStringsHeld: () => turnStringsHeld },
};
