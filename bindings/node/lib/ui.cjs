'use strict';
// UI requests: waiters are served by non-blocking polls, made when they arrive and whenever
// the client's events move (every UI request is also an event), so no pool thread waits.
// ClientUi holds Client's UI methods (installed on Client.prototype by lib/client.cjs).

const { TIMEOUT_INFINITE } = require('./constants.cjs');
const { Status, closedError, jsError, abortError } = require('./errors.cjs');
const { native, take, failure, callOutRaw } = require('./native.cjs');
const { text, timeoutArg } = require('./args.cjs');

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
    if (signal && signal.aborted) return Promise.reject(abortError(signal, 'nextUiRequest'));
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
        w.onAbort = () => w.reject(abortError(signal, 'nextUiRequest'));
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

class ClientUi {
  /** Writes one frame as is (no id, no response awaited), e.g. `widget_layout`. */
  sendFrame(frame) {
    this._syncNoOut('sendFrame', [typeof frame === 'string' ? frame : JSON.stringify(frame)]);
  }
  /**
   * The next UI request that needs an answer (select, confirm, input, editor, unknown
   * interactive). Default: waits without deadline, in slices. RpcTimeoutError when none arrived
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
}

module.exports = { UiLane, ClientUi };
