'use strict';
// Event delivery. ClientEvents holds Client's methods for it (installed on Client.prototype by
// lib/client.cjs): the pull queue (nextEvent), iterators and listeners, and the pump that
// takes batches from the core (through the shared reactor, or on timers) and hands them to
// host handlers and consumers.

const { EVENT_BATCH, TIMEOUT_INFINITE, UNREF_POLL_MIN_MS, UNREF_POLL_MAX_MS } = require('./constants.cjs');
const { Status, closedError, jsError, abortError, throwIfAborted } = require('./errors.cjs');
const { signalArg } = require('./abort.cjs');
const { native, take, failure, callOutRaw } = require('./native.cjs');
const { takeBatch } = require('./views.cjs');
const { timeoutArg } = require('./args.cjs');
const { EventIterator } = require('./iterator.cjs');
const { reactor } = require('./reactor.cjs');

const RESERVED_EMIT = new Set(['error', 'event', 'close', 'newListener', 'removeListener']);
const INTERNAL_LISTENERS = new Set(['close', 'error', 'newListener', 'removeListener']);
/** The event types the binding itself reads (host calls, completions, overflows): parsed as taken. */
const READ_HERE = new Set(['host_tool_call', 'host_uri_request', 'host_tool_cancel', 'host_uri_cancel', 'policy_eval', 'prompt_complete', 'event_overflow']);

class ClientEvents {
  /**
   * Before any call that waited on the agent resolves or rejects: delivers what the core has
   * queued to listeners and iterators (non-blocking batches, on this thread), so they have
   * seen every event that preceded the call's outcome — the core queues them before the call
   * returns. Not for the pull queue alone (nextEvent() takes its own).
   */
  _catchUp() {
    if (this._st.freed || this._pumpEnded) return;
    if (this._iterators.size === 0 && this._sinks.size === 0 && !this._hasListeners()) return;
    while (this._drainOnce() > 0) {
      // each batch is delivered in order; a closed client stops it
    }
  }
  /**
   * The next event straight from the core's queue (RpcTimeoutError when none arrived in time;
   * ClosedError once closed and drained). Do not mix with events()/listeners: whichever
   * takes an event first gets it.
   */
  async nextEvent(opts = {}) {
    this._pulls = true; // from now on the pull queue has a consumer (see _seenBy)
    if (this._orphans.length || this._orphansDropped) return this._takeOrphans(1)[0];
    const t = timeoutArg(opts.timeoutMs === undefined ? TIMEOUT_INFINITE : opts.timeoutMs);
    const signal = signalArg(opts.signal);
    throwIfAborted(signal, 'nextEvent');
    if (this._closePromise !== null) {
      // close() drains the core's queue into the pull queue before it frees the handle.
      await this._closePromise.catch(() => {});
      if (this._orphans.length || this._orphansDropped) return this._takeOrphans(1)[0];
      throw closedError();
    }
    if (this._pumpEnded) throw this._pumpError || closedError();
    if (t === 0) {
      // Only the main thread takes events: a non-blocking poll keeps their order.
      const r = callOutRaw(native().nextEventBatch, [this._st.h, EVENT_BATCH, 0]);
      if (r.st === Status.OK) {
        take(r.err);
        const batch = this._parsed(takeBatch(r.out));
        const { events, types } = batch;
        for (const sink of this._sinks) sink.push(events);
        this._keepOrphans(batch, this._visible(this._dispatchHost(events, types, true), types).events);
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
        w.onAbort = () => w.reject(abortError(signal, 'nextEvent'));
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
  // --- events ------------------------------------------------------------------------

  /**
   * An async iterator over every event from now on (verbatim agent frames plus omprpc's
   * synthetic ones). Ends when the client is closed and the queue drained. Options:
   * `signal`, `types` (only these event types), `highWaterMark` (the most unread events it
   * keeps: past it the oldest are dropped and an event_overflow item says how many; a slow
   * iterator never holds back host calls or other consumers).
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
    this._updatePump();
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
    return this._sinks.size > 0 || this._iterators.size > 0 || this._eventWaiters.length > 0 || this._hasListeners();
  }

  /** Host registrations need the pump: their calls are served, delivered, or answered at once. */
  _hasHandlers() {
    return this._policyHandler !== null || this._tools.size > 0 || this._schemes.size > 0;
  }

  _pumpMode() {
    if (this._st.freed || this._pumpEnded || this._releasing) return 'off';
    const consumers = this._hasConsumers() || this._uiLane.waiting;
    if (!consumers && !this._hasHandlers()) return 'off';
    if (this._pending > 0 || this._eventWaiters.length > 0 || this._uiLane.waiting || (consumers && this._refed)) return 'block';
    return 'timer';
  }

  /** Re-evaluates who waits for this client's events and how (reactor, timer, nothing). */
  _updatePump() {
    const mode = this._pumpMode();
    const shared = mode === 'block' && reactor.accepts(this);
    if (shared) {
      reactor.add(this);
    } else {
      reactor.remove(this);
    }
    if (mode === 'timer' || (mode === 'block' && !shared)) this._runTimerLoop();
    else if (this._wakeTimer) this._wakeTimer();
  }

  _reactorWants() {
    return this._draining === null && !this._st.freed && !this._pumpEnded && this._pumpMode() === 'block';
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

  /** One non-blocking batch: >0 events delivered, 0 none queued, -1 stop. */
  _drainOnce() {
    if (this._st.freed || this._pumpEnded) return -1;
    if (this._closePromise === null && this._pumpMode() === 'off') return -1;
    const r = callOutRaw(native().nextEventBatch, [this._st.h, EVENT_BATCH, 0]);
    if (r.st === Status.OK) {
      take(r.err);
      const batch = this._parsed(takeBatch(r.out));
      this._deliver(batch);
      this._uiLane.serve();
      return batch.events.length;
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
   * client must keep the process alive (no reactor available, or on Windows no place left in
   * its wait: see lib/reactor.cjs).
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
        const useTimer = mode === 'timer' || (mode === 'block' && !reactor.accepts(this));
        if (!useTimer) {
          // The reactor has room again (or never had to be left): wait there.
          if (mode === 'block') process.nextTick(() => this._updatePump());
          return;
        }
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
    for (const sink of [...this._sinks]) sink.end(error);
    this._wakeEventWaiters();
  }

  /** A turn's event reader (lib/stream.cjs): sees every event from now, before other consumers. */
  _addSink(sink) {
    this._sinks.add(sink);
    if (this._pumpEnded || this._st.freed) sink.end(this._pumpError);
    else this._updatePump();
  }

  _removeSink(sink) {
    if (this._sinks.delete(sink)) this._updatePump();
  }

  /** The events a program sees: without the core's prompt_complete unless it asked for them. */
  _visible(evs, types) {
    if (!this._hideCompletions) return { events: evs, types };
    let i = 0;
    while (i < evs.length && types[i] !== 'prompt_complete') i++;
    if (i === evs.length) return { events: evs, types };
    const events = [];
    const kept = [];
    for (let j = 0; j < evs.length; j++) {
      if (types[j] === 'prompt_complete' && evs[j] && evs[j].omprpc === true) continue;
      events.push(evs[j]);
      kept.push(types[j]);
    }
    return { events, types: kept };
  }

  _pumpFailed(e) {
    this._pumpClosed(e instanceof Error ? e : new Error(String(e)));
    if (this.listenerCount('error') > 0) this.emit('error', e);
  }

  /** Starts handlers for host calls / cancels (by the library's `types[i]` of `evs[i]`); returns the events. */
  _dispatchHost(evs, types, pulled) {
    for (let i = 0; i < evs.length; i++) {
      const ev = evs[i];
      switch (types[i]) {
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
   * A batch (lib/views.cjs takeBatch) with the events parsed that are read before the pull
   * queue: those the binding reads itself, and all of them when anyone else consumes events.
   * The rest stay unparsed (their index in `batch.events`), parsed when taken from the pull
   * queue (or never: dropped).
   */
  _parsed(batch) {
    if (this._iterators.size > 0 || this._sinks.size > 0 || this._hasListeners()) {
      batch.parseAll();
    } else {
      const types = batch.types;
      for (let i = 0; i < types.length; i++) if (READ_HERE.has(types[i])) batch.parse(i);
    }
    return batch;
  }

  /**
   * Hands a batch to everyone: host handlers, iterators, listeners; and to the pull queue
   * (nextEvent(), later iterators) while a nextEvent() waits or nobody else consumes.
   */
  _deliver(batch) {
    const { events: all, types: allTypes } = batch;
    this._dispatchHost(all, allTypes);
    for (const sink of this._sinks) sink.push(all);
    const { events: evs, types } = this._visible(all, allTypes);
    if (evs.length === 0) return;
    const listeners = this._hasListeners();
    if (this._eventWaiters.length > 0 || (this._iterators.size === 0 && !this._sinks.size > 0 && !listeners)) {
      this._keepOrphans(batch, evs);
      this._wakeEventWaiters();
    }
    for (const it of this._iterators) it._push(evs);
    if (listeners) {
      const all = this.listenerCount('event') > 0;
      for (let i = 0; i < evs.length; i++) {
        const ev = evs[i];
        try {
          const type = types[i];
          if (all) this.emit('event', ev);
          if (type !== null && !RESERVED_EMIT.has(type) && this.listenerCount(type) > 0) this.emit(type, ev);
        } catch (e) {
          // A throwing listener must not stop the pump; surface it like any uncaught error.
          queueMicrotask(() => {
            throw e;
          });
        }
      }
    }
  }

  /** Keeps `evs` (of `batch`: parsed events, or the indices of unparsed ones) in the pull queue. */
  _keepOrphans(batch, evs) {
    const q = this._orphans;
    for (let i = 0; i < evs.length; ) {
      if (typeof evs[i] !== 'number') {
        q.push(evs[i++]);
        continue;
      }
      // A run of unparsed events: consecutive indices (_visible may have left a gap).
      const from = evs[i];
      let to = from + 1;
      for (i++; i < evs.length && evs[i] === to; i++) to++;
      q.pushRun(batch, from, to);
    }
    const over = q.length - this._orphanCapacity;
    if (over > 0) {
      // Oldest dropped, and said so (like the core's own queue) when they are handed out; a
      // dropped event_overflow of the core's carries its count into ours.
      const { events, bindings } = q.drop(over);
      this._orphansDropped += events;
      this._bindingDropped += bindings;
    }
  }

  /** Up to `max` kept events, led by a synthetic event_overflow when some were dropped. */
  _takeOrphans(max) {
    const out = [];
    if (this._orphansDropped > 0) {
      out.push({ type: 'event_overflow', dropped: this._orphansDropped, omprpc: true });
      this._orphansDropped = 0;
    }
    this._orphans.take(Math.min(max - out.length, this._orphans.length), out);
    return out;
  }
}

/** Unparsed events `from`..`to` (exclusive) of a batch, in the pull queue. */
class Run {
  constructor(batch, from, to) {
    this.batch = batch;
    this.from = from;
    this.to = to;
  }
}

/**
 * The pull queue's events, oldest first: parsed events, and runs of a batch's unparsed ones
 * (one entry for up to a batch of events, which are parsed as taken, or dropped unparsed).
 * Taking from the front moves nothing (a full queue of 65536 drops the oldest of every batch;
 * Array#splice moved all the others each time).
 */
class PullQueue {
  constructor() {
    this._items = [];
    this._head = 0;
    this._count = 0; // events (a run counts its events)
  }

  get length() {
    return this._count;
  }

  push(ev) {
    this._items.push(ev);
    this._count++;
  }

  pushRun(batch, from, to) {
    this._items.push(new Run(batch, from, to));
    this._count += to - from;
  }

  /** Appends the `n` oldest events (n <= length) to `out`, parsed. */
  take(n, out) {
    while (n > 0) {
      const item = this._items[this._head];
      if (!(item instanceof Run)) {
        out.push(item);
        this._shift();
        n--;
        continue;
      }
      const end = Math.min(item.to, item.from + n);
      for (let i = item.from; i < end; i++) out.push(item.batch.parse(i));
      n -= end - item.from;
      this._count -= end - item.from;
      item.from = end;
      if (end === item.to) this._shift(0);
    }
  }

  /**
   * Drops the `n` oldest events (n <= length): `events`, how many that makes for the next
   * event_overflow (a dropped event_overflow of the core's carries its count), `bindings`,
   * how many were events (not the core's reports).
   */
  drop(n) {
    let events = 0;
    let bindings = 0;
    while (n > 0) {
      const item = this._items[this._head];
      if (!(item instanceof Run)) {
        if (item && item.type === 'event_overflow' && item.omprpc === true && typeof item.dropped === 'number') {
          events += item.dropped;
        } else {
          events++;
          bindings++;
        }
        this._shift();
        n--;
        continue;
      }
      const k = Math.min(item.to - item.from, n);
      item.batch.drop(k);
      events += k;
      bindings += k;
      n -= k;
      this._count -= k;
      item.from += k;
      if (item.from === item.to) this._shift(0);
    }
    return { events, bindings };
  }

  /** Removes the front item (`counted`: the events it still holds). */
  _shift(counted = 1) {
    const items = this._items;
    items[this._head++] = undefined;
    this._count -= counted;
    // Compacted once the taken part is the larger half: each item moves O(1) times.
    if (this._head === items.length) {
      this._items = [];
      this._head = 0;
    } else if (this._head > 1024 && this._head * 2 > items.length) {
      this._items = items.slice(this._head);
      this._head = 0;
    }
  }
}

module.exports = { ClientEvents, INTERNAL_LISTENERS, PullQueue };
