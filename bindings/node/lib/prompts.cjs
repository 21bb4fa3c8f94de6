'use strict';
// Client's prompts and the calls that wait on the agent's runs (installed on Client.prototype
// by lib/client.cjs): prompt, abortAndPrompt, promptAndWait, steer, followUp, abort,
// collectEvents, waitForIdle.

const { TIMEOUT_DEFAULT, TIMEOUT_INFINITE } = require('./constants.cjs');
const { native, take, failure, settle, callOutRaw, callNoOut } = require('./native.cjs');
const { AbortError, Status, abortError, closedError, jsError, throwIfAborted } = require('./errors.cjs');

const { TurnStream, TurnEvents, isCompletion } = require('./stream.cjs');
const { signalArg, raceSignal } = require('./abort.cjs');
const { promptArgs, timeoutArg } = require('./args.cjs');
const { takeTurn } = require('./turn.cjs');
const { takeBatch } = require('./views.cjs');

/** The shortest re-poll of a turn the idle timer found still running. */
const IDLE_POLL_MIN_MS = 20;

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
   * the turn's end is the core's `prompt_complete` event, seen by the event reactor, and the
   * turn (built by the core) is taken on the main thread: no pool thread waits while the agent
   * works. `timeoutMs` covers the whole turn (default: the `turn_timeout_ms` option, else
   * none) and the `turn_idle_timeout_ms` option the time without an event (the core's clock,
   * which stands still while the agent waits on the host); either rejects with
   * RpcTimeoutError and leaves the turn running. `signal` aborts the agent's work: `abort` is
   * sent and the call rejects at once with an AbortError; the next prompt, promptAndWait,
   * stream, collectEvents or waitForIdle of this client starts once the library completed the
   * aborted prompt.
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
    // Watching from before the prompt is sent: a quick turn may complete before its
    // acknowledgement is handled here.
    const watch = new CompletionWatch(this, this._turnIdleTimeoutMs);
    // The acknowledgement is awaited within the turn's deadline (else the request timeout).
    const ackMs = turnMs === TIMEOUT_INFINITE ? TIMEOUT_DEFAULT : turnMs;
    const begun = this._asyncRaw(n.promptBegin, [...args, ackMs], true).then(settle);
    begun.catch(() => {}); // read below, or by whoever settles a turn given up
    return new Promise((resolve, reject) => {
      let over = false;
      let timer = null;
      const onAbort = () => giveUp(abortError(signal, 'promptAndWait'), () => this._abortBegun(begun, watch));
      const finish = () => {
        over = true;
        if (timer !== null) clearTimeout(timer);
        if (signal) signal.removeEventListener('abort', onAbort);
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
        timer = setTimeout(() => giveUp(error, () => this._releaseBegun(begun, watch)), turnMs);
      }
      // A pending call, as a blocking one would be: it keeps the process alive (lib/events.cjs
      // _pumpMode), also after unref().
      this._track(this._awaitTurn(begun, watch, () => over)).then(
        (turn) => {
          if (over) return; // given up meanwhile: nothing was taken
          finish();
          watch.detach();
          this._catchUp();
          resolve(turn);
        },
        (e) => {
          if (over) return;
          finish();
          watch.detach();
          this._catchUp();
          reject(e);
        },
      );
    });
  }

  /**
   * The begun turn, taken on this thread once its prompt_complete came — or once the idle
   * timer says the core may have failed it (turn_idle_timeout_ms); rejects with its failure.
   * Resolves undefined once `givenUp()`.
   */
  async _awaitTurn(begun, watch, givenUp) {
    const n = native();
    const requestId = await begun;
    this._catchUp(); // events queued before the acknowledgement got here
    for (;;) {
      if (givenUp()) return undefined;
      // Ended: the core's take says why (the close reason), while the handle is still there.
      const ended = watch.ended();
      if (watch.completed(requestId) || watch.takeIdleDue() || ended) {
        const r = ended && this._st.freed ? null : callOutRaw(n.takeTurn, [this._handle(), requestId]);
        if (r !== null && (r.st !== 0 || r.out)) return takeTurn(structured(r, n.turnFree));
        if (r !== null) take(r.err); // not complete yet: the agent was waiting on the host, say
        watch.pollSoon();
      }
      watch.throwIfEnded();
      await watch.change();
    }
  }

  /**
   * A promptAndWait given up to its signal: once its prompt was acknowledged, `abort` is sent
   * (unless it already completed) and its turn taken (dropped) after its completion, which
   * frees the library's collector. Resolves then, or once the client's events ended or the
   * prompt was refused (nothing is held then).
   */
  async _abortBegun(begun, watch) {
    try {
      const requestId = await begun;
      if (!watch.completed(requestId)) await this.abort().catch(() => {}); // closed, or refused: nothing to stop
      while (!watch.completed(requestId)) {
        watch.throwIfEnded();
        await watch.change();
      }
      const n = native();
      const r = callOutRaw(n.takeTurn, [this._handle(), requestId]);
      if (r.out) n.turnFree(r.out);
      take(r.err);
    } catch {
      // refused, or the client stopped: nothing runs any more
    } finally {
      watch.detach();
    }
  }

  /**
   * A promptAndWait past its timeoutMs: once its prompt was acknowledged, the library's
   * collector is released and the turn left running, as a blocking waiter's timeout does.
   */
  async _releaseBegun(begun, watch) {
    watch.detach();
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
 * Watches, on the client's event pump, for the core's prompt_complete of a begun prompt;
 * registered before the prompt is sent. Keeps no events (they stay the program's): only which
 * prompts completed, whether the client's events ended, and an idle timer that asks for a take
 * once no event came for `idleMs` (the core decides whether the turn went idle).
 */
class CompletionWatch {
  constructor(client, idleMs) {
    this._client = client;
    this._done = new Set(); // request ids whose prompt_complete was seen
    this._end = null; // {error} once the client's events ended
    this._waiter = null;
    this._idleMs = idleMs;
    this._idleTimer = null;
    this._idleDue = false;
    this._detached = false;
    this.watchOnly = true; // the events it sees stay the program's (lib/events.cjs _sinkConsumes)
    client._addSink(this);
    this._arm(idleMs);
  }

  /** From the pump: a batch, in order. An event restarts the idle clock. */
  push(evs) {
    for (const ev of evs) if (isCompletion(ev)) this._done.add(ev.requestId);
    this._arm(this._idleMs);
    this._wake();
  }

  /** From the pump: the client's events ended (closed: error null; else the failure). */
  end(error) {
    if (this._end === null) this._end = { error: error || null };
    this._wake();
  }

  completed(requestId) {
    return this._done.has(requestId);
  }

  /** Whether the idle timer fired since last asked. */
  takeIdleDue() {
    const due = this._idleDue;
    this._idleDue = false;
    return due;
  }

  /**
   * A take after the idle timer found the turn running (the core's idle clock stood still
   * while the agent waited on the host): ask again a fraction of the idle time later, so the
   * turn fails close to the core's own idle deadline.
   */
  pollSoon() {
    if (this._idleMs !== TIMEOUT_INFINITE) this._arm(Math.max(IDLE_POLL_MIN_MS, Math.floor(this._idleMs / 4)));
  }

  ended() {
    return this._end !== null;
  }

  throwIfEnded() {
    if (this._end !== null) throw this._end.error || closedError('the client was closed during the turn');
  }

  /** Resolves at the next batch, end, idle tick or detach. */
  change() {
    if (this._detached) return Promise.resolve();
    return new Promise((resolve) => {
      this._waiter = resolve;
    });
  }

  detach() {
    if (this._detached) return;
    this._detached = true;
    if (this._idleTimer !== null) clearTimeout(this._idleTimer);
    this._idleTimer = null;
    this._client._removeSink(this);
    this._wake();
  }

  _arm(ms) {
    if (this._detached || this._idleMs === TIMEOUT_INFINITE) return;
    if (this._idleTimer !== null) clearTimeout(this._idleTimer);
    this._idleTimer = setTimeout(() => {
      this._idleTimer = null;
      this._idleDue = true;
      this._wake();
    }, ms);
  }

  _wake() {
    if (this._waiter !== null) {
      const w = this._waiter;
      this._waiter = null;
      w();
    }
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
