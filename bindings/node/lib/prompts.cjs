'use strict';
// Client's prompts and the calls that wait on the agent's runs (installed on Client.prototype
// by lib/client.cjs): prompt, abortAndPrompt, promptAndWait, steer, followUp, abort,
// collectEvents, waitForIdle.

const { TIMEOUT_DEFAULT } = require('./constants.cjs');
const { native, take, failure } = require('./native.cjs');
const { AbortError, abortError, throwIfAborted } = require('./errors.cjs');
const { TurnStream, TurnEvents } = require('./stream.cjs');
const { signalArg, raceSignal } = require('./abort.cjs');
const { promptArgs, timeoutArg } = require('./args.cjs');
const { takeTurn } = require('./turn.cjs');
const { takeBatch } = require('./views.cjs');

class ClientPrompts {
  /**
   * Prompts and streams the turn: an async iterable of items (`kind` text, reasoning,
   * tool_start, tool_end, retry, compaction, and last turn_complete) with `finalTurn()`. Options:
   * `images`, `content` (as prompt()), `timeoutMs` (the prompt's acknowledgement; for the
   * whole turn pass `signal: AbortSignal.timeout(ms)`), `signal`. Leaving early (`break`,
   * close()) or the signal aborting sends `abort`; the next turn starts once that prompt
   * completed. One stream at a time per client (ConcurrencyError).
   */
  stream(message, opts = {}) {
    const args = [...promptArgs(message, opts), timeoutArg(opts.timeoutMs)];
    return new TurnStream(this, message, opts, args);
  }

  /**
   * Sends `prompt`; resolves its request id once the agent acknowledged it. `signal` rejects
   * the wait with an AbortError; a prompt the agent accepts after that is aborted.
   */
  async prompt(message, opts = {}) {
    return this._promptLike('prompt', message, opts);
  }

  /** Sends `abort_and_prompt`; like prompt(). */
  async abortAndPrompt(message, opts = {}) {
    return this._promptLike('abortAndPrompt', message, opts);
  }

  async _promptLike(name, message, opts) {
    const args = [...promptArgs(message, opts), timeoutArg(opts.timeoutMs)];
    const signal = signalArg(opts.signal);
    throwIfAborted(signal, name);
    await this._abandonedTurn();
    if (signal === null) return this._async(name, args, true);
    throwIfAborted(signal, name); // (nothing sent: no watcher needed)
    // Its completion is watched from before the send, in case the acknowledgement is given up.
    const events = new TurnEvents(this);
    let lateSettled; // resolves once a given-up prompt is known refused, or aborted and completed
    const settled = new Promise((resolve) => {
      lateSettled = resolve;
    });
    const acceptedLate = (late) => {
      take(late.err);
      if (late.st !== 0) {
        take(late.out);
        events.detach();
        lateSettled();
        return;
      }
      this._settleGivenUp(take(late.out), events).then(lateSettled);
    };
    try {
      const id = await this._async(name, args, true, signal, name, acceptedLate);
      events.detach();
      return id;
    } catch (e) {
      if (e instanceof AbortError) this._abandon(settled); // the next prompt waits for it
      else events.detach();
      throw e;
    }
  }

  /**
   * A prompt accepted after its caller gave it up: `abort` sent; resolves once it completed
   * (`events` sees its completion; detached then).
   */
  async _settleGivenUp(requestId, events) {
    try {
      await this.abort();
      await events.untilCompletion(requestId);
    } catch {
      // the agent refused, or the client stopped: nothing runs any more
    } finally {
      events.detach();
    }
  }

  /**
   * Prompts and waits for that prompt's completion (where the library finds the agent's work
   * ended); resolves the turn. `timeoutMs` covers the whole turn (default: the
   * `turn_timeout_ms` option, else none). `signal` aborts the agent's work: `abort` is sent and
   * the call rejects at once with an AbortError; the next prompt, promptAndWait,
   * collectEvents or waitForIdle of this client starts once the library completed the aborted
   * prompt. This call holds one libuv pool thread for the whole turn.
   */
  async promptAndWait(message, opts = {}) {
    const n = native();
    this._handle();
    const args = [...promptArgs(message, opts), timeoutArg(opts.timeoutMs)];
    const signal = signalArg(opts.signal);
    throwIfAborted(signal, 'promptAndWait');
    await this._abandonedTurn();
    throwIfAborted(signal, 'promptAndWait');
    this._handle(); // still open after the wait
    const call = this._asyncRaw(n.promptAndWaitTurn, args, true);
    const r = signal ? await this._abortable(call, signal, n.turnFree) : await call;
    this._catchUp();
    return takeTurn(structured(r, n.turnFree));
  }

  /**
   * `call` (a prompt_and_wait on the pool), or, once `signal` aborts first: `abort` sent, the
   * rejection with its reason, and the call (whose result is then dropped) remembered as the
   * abandoned turn.
   */
  _abortable(call, signal, free) {
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        const sent = this.abort().catch(() => {}); // closed, or the agent refused: nothing to stop
        const dropped = call.then((late) => {
          if (late.out) free(late.out); // the turn nobody takes
          take(late.err);
        }, () => {});
        this._abandon(Promise.all([dropped, sent]));
        reject(abortError(signal, 'promptAndWait'));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      call.then(
        (r) => {
          signal.removeEventListener('abort', onAbort);
          resolve(r);
        },
        (e) => {
          signal.removeEventListener('abort', onAbort);
          reject(e);
        },
      );
    });
  }

  /** Remembers a turn abandoned to its signal until the library completed it. */
  _abandon(done) {
    const mine = done.then(() => {
      if (this._abandoned === mine) this._abandoned = null;
    });
    this._abandoned = mine;
  }

  /** Resolves once no turn abandoned to its signal is still open in the library. */
  async _abandonedTurn() {
    while (this._abandoned) await this._abandoned;
  }
  async steer(message, opts = {}) {
    await this._async('steer', [...promptArgs(message, opts), timeoutArg(opts.timeoutMs)], false, opts.signal, 'steer');
  }

  async followUp(message, opts = {}) {
    await this._async('followUp', [...promptArgs(message, opts), timeoutArg(opts.timeoutMs)], false, opts.signal, 'followUp');
  }

  async abort(opts = {}) {
    await this._async('abort', [timeoutArg(opts.timeoutMs)], false, opts.signal, 'abort');
  }
  /**
   * Events from now until the agent's work ends (its `agent_settled`, or the last run's
   * terminal `agent_end` when it does not announce settling); holds a pool thread meanwhile.
   */
  async collectEvents(opts = {}) {
    const n = native();
    this._handle();
    const signal = signalArg(opts.signal);
    throwIfAborted(signal, 'collectEvents');
    await this._abandonedTurn();
    this._handle();
    const dropBatch = (late) => {
      if (late.out) n.eventBatchFree(late.out);
      take(late.err);
    };
    const r = await raceSignal(this._asyncRaw(n.collectEventBatch, [timeoutArg(opts.timeoutMs)], true), signal, 'collectEvents', dropBatch);
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
    await this._abandonedTurn();
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
