'use strict';
// EventIterator: a client's events as an async iterator, with its own bounded buffer and a
// type filter. A reader that falls behind never holds back the client's event pump (host tool
// calls, listeners, other iterators): past `highWaterMark` unread events its oldest are
// dropped, and its next read is an event_overflow item saying how many (as the core's queue
// reports its own drops).

const { DEFAULT_HIGH_WATER_MARK } = require('./constants.cjs');
const { abortError } = require('./errors.cjs');

class EventIterator {
  constructor(client, opts) {
    this._client = client;
    this._buf = [];
    this._head = 0;
    this._waiter = null;
    this._done = false;
    this._error = null;
    this._dropped = 0; // events dropped since the last read, reported by the next
    this._hwm = opts.highWaterMark || DEFAULT_HIGH_WATER_MARK;
    this._types = opts.types ? new Set(opts.types) : null;
    this._signal = opts.signal || null;
    if (this._signal) {
      this._onAbort = () => this._finish(abortError(this._signal, 'the event iterator'));
      if (this._signal.aborted) this._done = true;
      else this._signal.addEventListener('abort', this._onAbort, { once: true });
    }
  }

  /** Unread items: the buffered events, and the overflow report when some were dropped. */
  get _size() {
    return this._buf.length - this._head + (this._dropped > 0 ? 1 : 0);
  }

  _push(evs) {
    if (this._done) return;
    const types = this._types;
    for (let i = 0; i < evs.length; i++) {
      const ev = evs[i];
      if (types === null || types.has(ev.type)) this._buf.push(ev);
    }
    const over = this._buf.length - this._head - this._hwm;
    if (over > 0) this._dropOldest(over);
    if (this._waiter && this._size > 0) {
      const w = this._waiter;
      this._waiter = null;
      w.resolve({ value: this._shift(), done: false });
    }
  }

  /** Drops the `n` oldest unread events, counted (a dropped event_overflow carries its count). */
  _dropOldest(n) {
    let lost = 0;
    for (let i = 0; i < n; i++) {
      const ev = this._buf[this._head];
      this._buf[this._head++] = undefined;
      lost += ev && ev.type === 'event_overflow' && ev.omprpc === true && typeof ev.dropped === 'number' ? ev.dropped : 1;
    }
    this._dropped += lost;
    this._client._bindingDropped += lost;
    this._compact();
  }

  _compact() {
    if (this._head > 4096 && this._head * 2 > this._buf.length) {
      this._buf = this._buf.slice(this._head);
      this._head = 0;
    }
  }

  _shift() {
    if (this._dropped > 0) {
      // The loss is reported where it happened: before the newest events, which were kept.
      const report = { type: 'event_overflow', dropped: this._dropped, omprpc: true };
      this._dropped = 0;
      return report;
    }
    const v = this._buf[this._head];
    this._buf[this._head++] = undefined;
    this._compact();
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
    this._dropped = 0;
    this._end(error && this._signal && this._signal.aborted ? error : null);
  }

  _detach() {
    if (this._signal && this._onAbort) this._signal.removeEventListener('abort', this._onAbort);
    this._client._detachIterator(this);
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

  /** Detaches the iterator now (as `break` does); its unread events are dropped. */
  close() {
    this._finish(null);
  }

  [Symbol.asyncIterator]() {
    return this;
  }
}

if (typeof Symbol.dispose === 'symbol') EventIterator.prototype[Symbol.dispose] = EventIterator.prototype.close;

module.exports = { EventIterator };
