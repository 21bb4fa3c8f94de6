'use strict';
// Client: starting the agent, the handle and the call plumbing every method uses, the
// information calls and close. Its other methods are grouped by kind in lib/commands.cjs,
// protocol.gen.cjs (the typed commands, generated), prompts.cjs, events.cjs, ui.cjs and
// host.cjs, and installed on Client.prototype below.

const { EventEmitter } = require('node:events');
const { TIMEOUT_INFINITE, POLL_SLICE_MS, ORPHAN_CAPACITY, UNREF_POLL_MIN_MS } = require('./constants.cjs');
const { Status, closedError, throwIfAborted } = require('./errors.cjs');
const { signalArg, raceSignal } = require('./abort.cjs');
const { load, native, take, failure, callOut, callNoOut, callOutRaw, callAsyncRaw, callEventFd, callEventHandle, settle } = require('./native.cjs');
const { timeoutArg, toCoreOptions } = require('./args.cjs');
const { openAtExit, closeAtExit, finalizer } = require('./lifetime.cjs');
const { reactor } = require('./reactor.cjs');
const { ClientCommands } = require('./commands.cjs');
const { ProtocolCommands } = require('./protocol.gen.cjs');
const { ClientPrompts } = require('./prompts.cjs');
const { ClientEvents, INTERNAL_LISTENERS, PullQueue } = require('./events.cjs');
const { UiLane, ClientUi } = require('./ui.cjs');
const { ClientHost, splitHandler } = require('./host.cjs');

class Client extends EventEmitter {
  /**
   * Spawns the agent and waits for its handshake (off the main thread). `options`: the C start
   * options (docs/c-api.md) in camelCase, one key per option (an unknown or snake_case key is
   * a TypeError naming it). `hostTools` and `hostUriSchemes` entries may carry a `handler`.
   * Binding-only: `closeOnExit` (default true), `ref` (default true), `libraryPath`, `signal`.
   */
  static async start(options = {}) {
    const core = toCoreOptions(options); // checks every key first
    if (options.libraryPath) load(options.libraryPath);
    const n = native();
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
    // Turns (stream(), an aborted turn's settling) end at the core's prompt_complete event:
    // always asked for; a program that did not ask for it does not see it.
    const hideCompletions = core.prompt_complete_events !== true;
    core.prompt_complete_events = true;
    const sig = signalArg(options.signal);
    throwIfAborted(sig, 'start');
    // An abandoned start's client, when it comes, is freed (which stops its agent).
    const dropStarted = (late) => (late.st === 0 ? n.free(late.out) : take(late.err));
    const r = await raceSignal(callAsyncRaw(n.start, [JSON.stringify(core)], true), sig, 'start', dropStarted);
    if (r.st !== 0) throw failure(r.st, r.err);
    let client;
    try {
      client = new Client(r.out, {
        closeOnExit: options.closeOnExit !== false,
        ref: options.ref !== false,
      });
    } catch (e) {
      n.free(r.out); // closes the agent too
      throw e;
    }
    client._hideCompletions = hideCompletions;
    client._model = typeof core.model === 'string' ? core.model : undefined;
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
    this._orphans = new PullQueue(); // the pull queue (nextEvent(), a later events())
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
    this._releasing = false; // close() is about to free the handle: the pump is off
    this._pumpError = null;
    this._unrefDelay = UNREF_POLL_MIN_MS;
    // What the reactor waits on (lib/reactor.cjs): the event descriptor, on Windows the event
    // handle (Windows has no such descriptor).
    this._fd = -1;
    this._eventHandle = null;
    if (process.platform === 'win32') this._eventHandle = callEventHandle(handle);
    else this._fd = callEventFd(handle);
    this._turnTimeoutMs = TIMEOUT_INFINITE;
    this._abandoned = null; // a turn given up to its signal, until the library completed it
    this._streaming = null; // the open TurnStream (one at a time)
    this._sinks = new Set(); // the turns' own event readers (lib/stream.cjs TurnEvents)
    this._turnPolls = new Set(); // waits for begun turns (lib/prompts.cjs TurnPoll): close wakes them
    this._hideCompletions = true; // prompt_complete events are the binding's, not the program's
    this._model = undefined;
    finalizer.register(this, this._st, this._st);
    if (opts.closeOnExit) closeAtExit(this._st);
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

  /**
   * A call on libuv's pool (a request's round trip). `signal` rejects it at once with an
   * AbortError (`what` names the call); the late result goes to `dropLate` (default: freed).
   */
  async _async(name, args, hasOut, signal, what, dropLate) {
    const n = native();
    this._handle();
    const sig = signalArg(signal);
    throwIfAborted(sig, what);
    const r = await raceSignal(this._asyncRaw(n[name], args, hasOut), sig, what, dropLate);
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
    const sig = signalArg(signal);
    throwIfAborted(sig, name);
    for (;;) {
      const remain = deadline - Date.now();
      const slice = Math.max(0, Math.min(POLL_SLICE_MS, remain));
      const r = await raceSignal(this._asyncRaw(n[name], [...args, slice], hasOut), sig, name);
      if (r.st === Status.TIMEOUT && remain > slice) {
        take(r.err);
        continue;
      }
      this._catchUp();
      return settle(r);
    }
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
   * InvalidArgumentError); RpcTimeoutError when none arrived in time; ClosedError once the
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

  /**
   * The core's event descriptor (eventfd; do not read or close it). Valid until close(). Unix
   * only: on Windows the core refuses it (InvalidArgumentError); use eventHandle().
   */
  eventFd() {
    const fd = [0];
    callNoOut(native().eventFd, [this._handle(), fd]);
    return fd[0];
  }

  /**
   * Windows' counterpart of eventFd(): the core's event HANDLE as a BigInt, a manual-reset
   * event set while events are queued or the client is closed (for WaitForSingleObject and
   * friends through koffi or an addon). The client owns it: never set, reset or close it.
   * Valid until close() resolves; a wait that may outlive it must be on a duplicate of one's
   * own (DuplicateHandle). Windows only: elsewhere the core refuses it (InvalidArgumentError).
   */
  eventHandle() {
    return callEventHandle(this._handle());
  }

  _liveHandle() {
    if (this._st.freed) throw closedError();
    return this._st.h;
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
    for (const poll of this._turnPolls) poll.wake(); // their takes now say the client closed
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
    // The pump stops here (everything queued was drained above), and no reactor wait may
    // still hold the descriptor or handle that the free closes.
    this._releasing = true;
    reactor.remove(this);
    await reactor.released(this);
    st.freed = true;
    finalizer.unregister(st);
    n.free(st.h);
    this._pumpEnded = true;
    if (this._wakeTimer) this._wakeTimer();
    for (const it of [...this._iterators]) it._end(this._pumpError);
    for (const sink of [...this._sinks]) sink.end(this._pumpError);
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

// The method groups are classes only to hold methods: each method is defined on
// Client.prototype with its own descriptor (non-enumerable, as if written in Client's body).
for (const group of [ClientCommands, ProtocolCommands, ClientPrompts, ClientEvents, ClientUi, ClientHost]) {
  for (const name of Object.getOwnPropertyNames(group.prototype)) {
    if (name === 'constructor') continue;
    // `in`: a generated command must not shadow EventEmitter's methods either.
    if (name in Client.prototype) throw new Error(`omprpc: Client.${name} is defined twice`);
    Object.defineProperty(Client.prototype, name, Object.getOwnPropertyDescriptor(group.prototype, name));
  }
}

module.exports = { Client };
