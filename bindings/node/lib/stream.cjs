'use strict';
// client.stream(message): one turn as typed items, as omprpc.aio's stream() yields them. The
// prompt is sent at once; the turn's events come from the client's event pump (the reactor
// on the core's event descriptor: no pool thread waits while the agent works) and are fed, in
// order, to the core's summarizer, whose derived items become the stream's items. The turn ends
// where the core says so: its `prompt_complete` event for this prompt (the start option
// `prompt_complete_events`, which Client.start always sets).

const { Status, jsError, errorFromDetails, closedError, abortError } = require('./errors.cjs');
const { Summarizer } = require('./functions.cjs');
const { signalArg } = require('./abort.cjs');

/** Whether `ev` is the core's prompt_complete event (not an agent frame of that name). */
function isCompletion(ev) {
  return ev !== null && typeof ev === 'object' && ev.type === 'prompt_complete' && ev.omprpc === true;
}

const str = (v) => (typeof v === 'string' ? v : '');
const strOrNull = (v) => (typeof v === 'string' ? v : null);
/** A JSON number as whole units (omp's retry delay is a float), null when absent. */
const intOrNull = (v) => (typeof v === 'number' && Number.isFinite(v) ? Math.round(v) : null);

/** One derived item of the core's summarizer as a stream item (null: not streamed). */
function streamItem(d) {
  switch (d.kind) {
    case 'text':
      return { kind: 'text', text: str(d.text) };
    case 'reasoning':
      return { kind: 'reasoning', text: str(d.text) };
    case 'tool_start':
      return { kind: 'tool_start', toolCallId: str(d.toolCallId), toolName: str(d.toolName), args: d.args === undefined ? null : d.args };
    case 'tool_end':
      return {
        kind: 'tool_end',
        toolCallId: str(d.toolCallId),
        toolName: str(d.toolName),
        outcome: str(d.outcome),
        result: d.result === undefined ? null : d.result,
        reason: strOrNull(d.reason),
      };
    case 'retry':
      return { kind: 'retry', attempt: intOrNull(d.attempt), maxAttempts: intOrNull(d.maxAttempts), delayMs: intOrNull(d.delayMs), error: strOrNull(d.error) };
    case 'compaction':
      return { kind: 'compaction', reason: strOrNull(d.reason), aborted: d.aborted === true, willRetry: d.willRetry === true, errorMessage: strOrNull(d.errorMessage) };
    default:
      return null; // the summarizer's bookkeeping items (message_end, stop, turn_end …)
  }
}

/** The error of a prompt that completed with `outcome: "failed"` (its `error` is a call's error detail). */
function completionError(error) {
  const details = error && typeof error === 'object' ? error : { message: 'the prompt failed' };
  const status = typeof details.status === 'number' ? details.status : Status[details.code] !== undefined ? Status[details.code] : Status.COMMAND_FAILED;
  return errorFromDetails(details, status);
}

/**
 * The events a turn receives from the client's pump, in order, until it no longer needs them.
 * Registered before the prompt is sent, so nothing of the turn is missed.
 */
class TurnEvents {
  constructor(client) {
    this._client = client;
    this._queue = [];
    this._head = 0;
    this._waiter = null;
    this._end = null; // {error} once the client's events ended
    this._stop = null; // an error that ends the wait at once (the signal's AbortError)
    this._requestId = null; // the prompt whose completion ends the turn, once acknowledged
    this._onCompletion = null;
    client._addSink(this);
  }

  /**
   * The prompt was acknowledged as `requestId`: once its completion arrives, this reader stops
   * taking events (what it holds stays readable) and `onCompletion` runs, read or not.
   */
  expect(requestId, onCompletion) {
    this._requestId = requestId;
    this._onCompletion = onCompletion;
    for (let i = this._head; i < this._queue.length; i++) {
      if (this._completes(this._queue[i])) return;
    }
  }

  /** From the pump: a batch, in order. */
  push(evs) {
    if (this._requestId !== null && !this._client._sinks.has(this)) return; // completed
    for (const ev of evs) {
      this._queue.push(ev);
      if (this._requestId !== null && this._completes(ev)) break; // later events are the next turn's
    }
    this._wake();
  }

  /** Whether `ev` is this turn's completion (then it stops taking events and says so). */
  _completes(ev) {
    if (!isCompletion(ev) || ev.requestId !== this._requestId) return false;
    this._client._removeSink(this);
    const done = this._onCompletion;
    this._onCompletion = null;
    if (done !== null) done();
    return true;
  }

  /** From the pump: the client's events ended (closed: error null; else the failure). */
  end(error) {
    if (this._end === null) this._end = { error: error || null };
    this._wake();
  }

  /** Ends the current and every later wait with `error` (the turn was given up). */
  stop(error) {
    if (this._stop === null) this._stop = error;
    this._wake();
  }

  detach() {
    this._client._removeSink(this);
    this._queue = [];
    this._head = 0;
  }

  _wake() {
    if (this._waiter !== null) {
      const w = this._waiter;
      this._waiter = null;
      w();
    }
  }

  /** The next event; rejects once stopped, or once the client's events ended and all were read. */
  next() {
    return this._read(false);
  }

  /** Reads events until this prompt's completion, past a stop (the events of a turn given up). */
  async untilCompletion(requestId) {
    for (;;) {
      const ev = await this._read(true);
      if (isCompletion(ev) && ev.requestId === requestId) return ev;
    }
  }

  async _read(pastStop) {
    for (;;) {
      if (this._stop !== null && !pastStop) throw this._stop;
      if (this._head < this._queue.length) {
        const ev = this._queue[this._head];
        this._queue[this._head++] = undefined;
        if (this._head > 1024 && this._head * 2 > this._queue.length) {
          this._queue = this._queue.slice(this._head);
          this._head = 0;
        }
        return ev;
      }
      if (this._end !== null) throw this._end.error || closedError('the client was closed during the turn');
      await new Promise((resolve) => {
        this._waiter = resolve;
      });
    }
  }
}

/**
 * The stream of one turn: an async iterable of items (`kind`: text, reasoning, tool_start,
 * tool_end, retry, compaction; last turn_complete) with finalTurn(). Created by client.stream().
 */
class TurnStream {
  constructor(client, message, opts, args) {
    this._client = client;
    this._signal = signalArg(opts.signal);
    this._final = null; // the turn_complete item, once read
    this._completed = false; // this prompt's completion was read
    this._agentDone = false; // its completion arrived (read or not): nothing to abort
    this._given = false; // given up before completion: abort sent (once)
    this._failed = null; // an error raised before anything ran (a closed client)
    this._events = null; // this turn's event reader, from just before the prompt is sent
    this._stopError = null; // what reads reject with once the turn was given up
    this._sent = null;
    let acked;
    /** Settles once this prompt's acknowledgement was handled (its completion, if here, seen). */
    this._ackSettled = new Promise((resolve) => {
      acked = resolve;
    });
    if (client._closePromise !== null) {
      this._failed = closedError();
      acked();
    } else {
      const holder = client._streaming;
      if (holder === null) client._streaming = this;
      this._sent = holder === null ? this._send(args) : this._behind(holder, args);
      this._sent.then(acked, acked);
      this._sent.catch(() => {}); // read (and thrown) by the iteration
      if (this._signal) {
        this._onAbort = () => this._giveUp(abortError(this._signal, 'the stream'));
        if (this._signal.aborted) this._onAbort();
        else this._signal.addEventListener('abort', this._onAbort, { once: true });
      }
    }
    this._items = this._run();
  }

  /**
   * Created while `holder` streams: its completion may have been delivered before its own
   * acknowledgement was handled (a program that saw prompt_complete may start the next turn at
   * once), so the rule is applied once that acknowledgement was.
   */
  async _behind(holder, args) {
    await holder._ackSettled;
    const c = this._client;
    if (c._streaming !== null) {
      throw jsError(Status.CONCURRENCY, 'a turn is already streaming on this client (one at a time): finish it, or abort or close() its stream, first');
    }
    c._streaming = this;
    return this._send(args);
  }

  async _send(args) {
    const c = this._client;
    await c._abandonedTurn(); // an aborted turn's prompt completes first, with all its events
    if (this._stopError !== null) {
      this._release(); // given up before it was sent
      throw this._stopError;
    }
    this._events = new TurnEvents(c);
    const requestId = await c._async('prompt', args, true);
    // Done in the agent once its completion arrives, whether or not anyone reads the stream:
    // the next stream may start then, and leaving this one later aborts nothing.
    this._events.expect(requestId, () => {
      this._agentDone = true;
      this._release();
    });
    return requestId;
  }

  async *_run() {
    if (this._failed !== null) throw this._failed;
    let summarizer = null;
    try {
      const requestId = await this._sent;
      summarizer = new Summarizer(this._client._model === undefined ? undefined : { model: this._client._model });
      for (;;) {
        const ev = await this._events.next();
        if (isCompletion(ev)) {
          if (ev.requestId !== requestId) continue; // an earlier prompt's (sent with prompt())
          this._completed = true;
          this._release();
          this._events.detach();
          if (ev.outcome === 'failed') throw completionError(ev.error);
          const s = summarizer.summary();
          this._final = {
            kind: 'turn_complete',
            requestId,
            outcome: ev.outcome,
            stopReason: s.stopReason === undefined ? null : s.stopReason,
            usage: s.usage === undefined ? null : s.usage,
            text: s.finalText === undefined ? null : s.finalText,
            summary: s,
            attempts: typeof s.attempts === 'number' ? s.attempts : 0,
            failedAttempts: Array.isArray(s.failedAttempts) ? s.failedAttempts : [],
            compactions: Array.isArray(s.compactions) ? s.compactions : [],
          };
          yield this._final;
          return;
        }
        for (const d of summarizer.feed(JSON.stringify(ev))) {
          const item = streamItem(d);
          if (item !== null) yield item;
        }
      }
    } finally {
      if (summarizer !== null) summarizer.close();
      if (!this._completed) this._giveUp(null);
    }
  }

  /**
   * Gives the turn up before its completion (left early, the signal, an error): `abort` is
   * sent once the prompt was accepted, and the client's next turn waits until this prompt
   * completed (so no event of it reaches the next). `error`: what pending reads reject with.
   */
  _giveUp(error) {
    if (error !== null && this._stopError === null) {
      this._stopError = error;
      if (this._events !== null) this._events.stop(error);
    }
    if (this._given || this._completed || this._agentDone || this._sent === null) return;
    this._given = true;
    if (this._events === null) {
      // Not sent yet (it waits for an earlier turn): it will not be (_send sees _stopError).
      this._release();
      return;
    }
    const c = this._client;
    // The next turn may be asked for at once: it waits (c._abandonedTurn) for this one's end.
    c._abandon((async () => {
      try {
        const requestId = await this._sent;
        await c.abort();
        await this._events.untilCompletion(requestId);
      } catch {
        // refused or never sent, or the client stopped: nothing runs any more
      } finally {
        if (this._events !== null) this._events.detach();
      }
    })());
    this._release();
  }

  /** This turn no longer holds the client's stream slot (the next stream may be created). */
  _release() {
    if (this._signal && this._onAbort) this._signal.removeEventListener('abort', this._onAbort);
    if (this._client._streaming === this) this._client._streaming = null;
  }

  next() {
    return this._items.next();
  }

  /** Leaves the stream: an unfinished turn is aborted (see _giveUp). */
  return(value) {
    return this._items.return(value);
  }

  throw(error) {
    return this._items.throw(error);
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  /** Reads the rest of the stream; resolves its turn_complete item (also once read). */
  async finalTurn() {
    if (this._final !== null) return this._final;
    for await (const item of this) {
      if (item.kind === 'turn_complete') return item;
    }
    if (this._final !== null) return this._final;
    throw jsError(Status.CLOSED, 'the stream was left before its turn completed');
  }

  /** Leaves the stream (like `break`): an unfinished turn is aborted. Idempotent. */
  async close() {
    await this.return(undefined);
  }
}

if (typeof Symbol.asyncDispose === 'symbol') {
  TurnStream.prototype[Symbol.asyncDispose] = TurnStream.prototype.close;
}

module.exports = { TurnStream, TurnEvents, isCompletion, streamItem };
