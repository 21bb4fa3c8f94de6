'use strict';
// Client's prompts and the calls that wait on the agent's runs (installed on Client.prototype
// by lib/client.cjs): prompt, abortAndPrompt, promptAndWait, steer, followUp, abort,
// collectEvents, waitForIdle.

const { TIMEOUT_DEFAULT } = require('./constants.cjs');
const { native, take, failure } = require('./native.cjs');
const { promptArgs, timeoutArg } = require('./args.cjs');
const { takeTurn } = require('./turn.cjs');
const { takeBatch } = require('./views.cjs');

class ClientPrompts {
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
    const r = await this._asyncRaw(n.promptAndWaitTurn, [...promptArgs(message, opts), timeoutArg(opts.timeoutMs)], true);
    this._catchUp();
    return takeTurn(structured(r, n.turnFree));
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
  /** Events from now through the next terminal `agent_end` (holds a pool thread meanwhile). */
  async collectEvents(opts = {}) {
    const n = native();
    this._handle();
    const r = await this._asyncRaw(n.collectEventBatch, [timeoutArg(opts.timeoutMs)], true);
    this._catchUp();
    return takeBatch(structured(r, n.eventBatchFree)).events;
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
}

/** A structured result (a turn, a batch) of a call on the pool, or throws its failure. */
function structured(r, free) {
  if (r.st !== 0) {
    if (r.out) free(r.out);
    throw failure(r.st, r.err);
  }
  take(r.err);
  return r.out;
}

module.exports = { ClientPrompts };
