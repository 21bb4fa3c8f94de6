'use strict';
// Client's prompts and the calls that wait on the agent's runs (installed on Client.prototype
// by lib/client.cjs): prompt, abortAndPrompt, promptAndWait, steer, followUp, abort,
// collectEvents, waitForIdle.

const { TIMEOUT_DEFAULT, TIMEOUT_INFINITE, TURN_POLL_MIN_MS, TURN_POLL_MAX_MS, TURN_POLL_SHARE } = require('./constants.cjs');
const { native, take, failure, settle, callOutRaw, callNoOut } = require('./native.cjs');
const { AbortError, Status, abortError, closedError, jsError, throwIfAborted } = require('./errors.cjs');

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
   * ended); resolves the turn. The prompt's acknowledgement is one short call on libuv's pool;
   * then the core's non-blocking take of the turn is polled on the main thread (TurnPoll): no
   * pool thread waits while the agent works, and the wait takes none of the client's events —
   * they stay in the core's queue for the program (a listener or iterator added during the
   * wait also gets those queued before it). `timeoutMs` covers the whole turn (default: the
   * `turn_timeout_ms` option, else none) and the `turn_idle_timeout_ms` option the time
   * without an event (the core's clock, which stands still while the agent waits on the host;
   * the core's take applies it); either rejects with RpcTimeoutError and leaves the turn
   * running. `signal` aborts the agent's work: `abort` is sent and the call rejects at once
   * with an AbortError; the next prompt, promptAndWait, stream, collectEvents or waitForIdle
   * of this client starts once the library completed the aborted prompt.
   */
  async promptAndWait(message, opts = {}) {
    const n = native();
    this._handle();
    const t = timeoutArg(opts.timeoutMs);
    const turnMs = t === TIMEOUT_DEFAULT ? this._turnTimeoutMs : t;
    const args = promptArgs(message, opts);
    const signal = signalArg(opts.signal);
    throwIfAborted(signal, 'promptAndWait');
    await this._abandonedTurn();
    throwIfAborted(signal, 'promptAndWait');
    this._handle(); // still open after the wait
    const poll = new TurnPoll(this);
    // The acknowledgement is awaited within the turn's deadline (else the request timeout).
    const ackMs = turnMs === TIMEOUT_INFINITE ? TIMEOUT_DEFAULT : turnMs;
    const begun = this._asyncRaw(n.promptBegin, [...args, ackMs], true).then(settle);
    begun.catch(() => {}); // read below, or by whoever settles a turn given up
    return new Promise((resolve, reject) => {
      let over = false;
      let timer = null;
      const onAbort = () => giveUp(abortError(signal, 'promptAndWait'), () => this._abortBegun(begun));
      const finish = () => {
        over = true;
        if (timer !== null) clearTimeout(timer);
        if (signal) signal.removeEventListener('abort', onAbort);
        poll.detach(); // a wait given up ends at once
      };
      // Rejects now; `settleLater` frees the library's turn later, and the client's next turn
      // waits for that (_abandonedTurn).
      const giveUp = (error, settleLater) => {
        if (over) return;
        finish();
        this._abandon(this._track(settleLater()));
        reject(error);
      };
      if (signal) signal.addEventListener('abort', onAbort, { once: true });
      if (turnMs !== TIMEOUT_INFINITE) {
        const error = jsError(Status.TIMEOUT, `promptAndWait: the turn did not complete within ${turnMs} ms (timeoutMs)`);
        timer = setTimeout(() => giveUp(error, () => this._releaseBegun(begun)), turnMs);
      }
      // A pending call, as a blocking one would be: it keeps the process alive (its poll's
      // timers are ref'd), also after unref().
      this._track(this._awaitTurn(begun, poll, () => over)).then(
        (turn) => {
          if (over) return; // given up meanwhile: nothing was taken
          finish();
          this._catchUp();
          resolve(turn);
        },
        (e) => {
          if (over) return;
          finish();
          this._catchUp();
          reject(e);
        },
      );
    });
  }

  /**
   * The begun turn, taken on this thread once it completed (polled: `poll`); rejects with its
   * failure (the core's take says why: an idle turn, the client closed, …). Resolves undefined
   * once `givenUp()`.
   */
  async _awaitTurn(begun, poll, givenUp) {
    const requestId = await begun;
    this._catchUp(); // events queued before the acknowledgement got here
    for (;;) {
      if (givenUp()) return undefined;
      const r = this._takeTurnNow(requestId);
      if (r !== null) return takeTurn(structured(r, native().turnFree));
      await poll.next();
    }
  }

  /**
   * The core's non-blocking take of the begun turn `requestId`: its result (a turn, or the
   * failure that ended it) once the turn completed, else null. ClosedError once the handle is
   * freed.
   */
  _takeTurnNow(requestId) {
    if (this._st.freed) throw closedError('the client was closed during the turn');
    const r = callOutRaw(native().takeTurn, [this._st.h, requestId]);
    if (r.st !== 0 || r.out) return r;
    take(r.err);
    return null;
  }

  /**
   * A promptAndWait given up to its signal: once its prompt was acknowledged, `abort` is sent
   * (unless it already completed) and its turn taken (dropped) after its completion, which
   * frees the library's collector. Resolves then, or once the client closed or the prompt was
   * refused (nothing is held then).
   */
  async _abortBegun(begun) {
    const poll = new TurnPoll(this);
    try {
      const requestId = await begun;
      let r = this._takeTurnNow(requestId);
      if (r === null) {
        await this.abort().catch(() => {}); // closed, or refused: nothing to stop
        while ((r = this._takeTurnNow(requestId)) === null) await poll.next();
      }
      if (r.out) native().turnFree(r.out);
      take(r.err);
    } catch {
      // refused, or the client stopped: nothing runs any more
    } finally {
      poll.detach();
    }
  }

  /**
   * A promptAndWait past its timeoutMs: once its prompt was acknowledged, the library's
   * collector is released and the turn left running, as a blocking waiter's timeout does.
   */
  async _releaseBegun(begun) {
    try {
      const requestId = await begun;
      callNoOut(native().releaseTurn, [this._handle(), requestId]);
    } catch {
      // refused or timed out unacknowledged, or the client stopped: nothing is held
    }
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
    return takeBatch(structured(r, n.eventBatchFree)).parseAll();
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

/**
 * The pace of a wait for a begun turn (promptAndWait's, or an aborted one's settling): the
 * core's take never blocks, and nothing signals a turn's completion but its prompt_complete
 * event, which waits in the client's queue among the program's events (taking them all to
 * find it cost a 100k-event turn ~15% of its time, and the program its events). So the take
 * is polled, each poll a 1/TURN_POLL_SHARE of the time waited so far after the last (at
 * least 1 ms, at most 20 ms): a turn's end is seen within ~3% of its length and within 20 ms,
 * a long turn costing 50 calls of a few µs a second. (Doubling the interval from 1 ms to
 * 20 ms saw a 120 ms turn's end ~10 ms late: 171 -> 154 ms a 100k-event turn.) The timers
 * are ref'd (a pending call keeps the process alive); close() wakes every poll at once (the
 * take then says why the turn ended).
 */
class TurnPoll {
  constructor(client) {
    this._client = client;
    this._since = performance.now();
    this._timer = null;
    this._waiter = null;
    client._turnPolls.add(this);
  }

  /** Resolves at the next poll (or once woken). */
  next() {
    return new Promise((resolve) => {
      this._waiter = resolve;
      const waited = performance.now() - this._since;
      const delay = Math.min(TURN_POLL_MAX_MS, Math.max(TURN_POLL_MIN_MS, waited / TURN_POLL_SHARE));
      this._timer = setTimeout(() => this.wake(), delay);
    });
  }

  /** Polls now. */
  wake() {
    if (this._timer !== null) clearTimeout(this._timer);
    this._timer = null;
    const w = this._waiter;
    this._waiter = null;
    if (w !== null) w();
  }

  detach() {
    this._client._turnPolls.delete(this);
    this.wake();
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
