'use strict';
// Turns, built from the library's structure (omprpc_client_prompt_and_wait_turn): the
// metadata of omprpc_turn_get_info, and a view per event (its `type`, and where its JSON is)
// from omprpc_turn_events. Nothing here reads the turn JSON's layout.
//
// A turn's `events` can be large (a burst of 100k events is 64 MB of JSON) and most callers
// read its text, each event's `type` and the fields of a few events. So the turn object is
// built from the small parts; `events` is built when first read, and each event in it is
// parsed on its first use, from the bounds its view gives.
//
// The turn's bytes are not copied: copying (or decoding) 64 MB into fresh memory costs ~90 ms
// of page faults alone. The events are read in place through a Buffer over the turn's JSON
// (koffi.view), and the turn is freed once nothing needs it: when every event has been
// parsed, when `events` is replaced unread, or when the turn object is garbage-collected (a
// FinalizationRegistry). V8 does not see that memory, so an untouched ArrayBuffer of the same
// size (zero pages, no RSS) stands for it in the GC's accounting of external memory: a host
// that never reads `events` still has its turns freed as they are collected. Where koffi
// cannot view foreign memory (a V8 sandbox), the JSON is copied once and the turn freed at once.

const { getKoffi, native, failure } = require('./native.cjs');
const { TurnOutcome } = require('./native.gen.cjs');
const { lent, viewsInPlace, ViewArray, strText, TypeNames } = require('./views.cjs');

/** `omprpc_turn_outcome` by number: the names the turn JSON's `outcome` uses. */
const OUTCOMES = {
  [TurnOutcome.AGENT_END]: 'agent_end',
  [TurnOutcome.PROMPT_RESULT]: 'prompt_result',
  [TurnOutcome.NOT_INVOKED]: 'not_invoked',
  [TurnOutcome.AGENT_SETTLED]: 'agent_settled',
  [TurnOutcome.ABORTED]: 'aborted',
};

function outcomeName(n) {
  const name = OUTCOMES[n];
  // The ABI version is checked at load: a number outside the enum is the library's bug.
  if (name === undefined) throw new Error(`omprpc: the library reported an unknown turn outcome ${n}`);
  return name;
}

/** The library's turns the binding holds (for the tests). */
let turnsHeld = 0;
const turnMemory = new FinalizationRegistry((ptr) => {
  turnsHeld--;
  native().turnFree(ptr);
});

const parsed = (s) => (s.data === null || s.data === 0n ? null : JSON.parse(strText(s)));

/** The turn object of an `omprpc_turn` (which it then owns: freed when no longer needed). */
function takeTurn(ptr) {
  const N = native();
  const koffi = getKoffi();
  let source = null;
  try {
    const info = {};
    const err = [null];
    const st = N.turnGetInfo(ptr, info, err);
    if (st !== 0) throw failure(st, err[0]);
    // The turn JSON's members, in its order; the record of attempts (outcome, attempts,
    // settled, failedAttempts, compactions) is the library's, read from its structure.
    const turn = {
      events: null, // replaced below: in the turn JSON's place
      requestId: strText(info.request_id),
      outcome: outcomeName(info.outcome),
      agentInvoked: info.agent_invoked,
      attempts: info.attempts,
      settled: info.settled,
      failedAttempts: parsed(info.failed_attempts_json) || [],
      compactions: parsed(info.compactions_json) || [],
      messages: parsed(info.messages_json) || [],
      assistantMessage: parsed(info.assistant_message_json),
      assistantText: strText(info.assistant_text),
      promptResult: parsed(info.prompt_result_json),
    };
    const summary = parsed(info.summary_json);
    if (summary !== null) turn.summary = summary;
    // Additions to the turn JSON's members: not enumerable, so the object still is that JSON.
    const extra = (value) => ({ value, writable: true, enumerable: false, configurable: true });
    Object.defineProperties(turn, {
      stopReason: extra(strText(info.stop_reason)),
      errorMessage: extra(strText(info.error_message)),
      usage: extra(parsed(info.usage_json)),
    });
    const { ptr: viewsPtr, count } = lent(N.turnEvents, ptr);
    if (count === 0) {
      turn.events = [];
      return turn;
    }
    source = new EventSource(ptr, info.turn_json, viewsPtr, count, koffi);
    return lazyEvents(turn, source);
  } finally {
    // Freed now unless the events are read in place (the source then owns the turn).
    if (source === null || source.turn === null) N.turnFree(ptr);
  }
}

/**
 * Where the events are: the turn JSON as a Buffer (over the library's memory, the turn then
 * owned by the source; or a copy), and the turn's views, each read when its event is first
 * used (its type, or its JSON's bounds).
 */
class EventSource {
  constructor(turnPtr, turnJson, viewsPtr, count, koffi) {
    const n = Number(turnJson.len);
    const base = Number(turnJson.data);
    this.buf = null;
    this.turn = null; // the library's turn while the events are read in place
    this.pressure = null;
    this.pending = count; // events not parsed yet
    let buf = null;
    let views = null;
    if (viewsInPlace()) {
      try {
        buf = Buffer.from(koffi.view(turnJson.data, n));
        views = new ViewArray(viewsPtr, count, false);
        if (views.inPlace) this.turn = turnPtr;
        else buf = null;
      } catch {
        buf = null;
      }
    }
    if (buf === null) {
      // Read from copies: the turn is freed when takeTurn returns.
      buf = Buffer.from(koffi.decode(turnJson.data, koffi.array('uint8_t', n, 'Typed')).buffer);
      views = new ViewArray(viewsPtr, count, true);
    }
    this.buf = buf;
    this.views = views;
    this.base = base;
    this.names = new TypeNames();
    // A type in the turn JSON is read from it; one the library decoded (it held an escape) is
    // its own copy, outside the turn JSON.
    this.decodeType = (t, len) => (t >= base && t + len <= base + n ? this.buf.utf8Slice(t - base, t - base + len) : koffi.decode.string(t, len));
    if (this.turn !== null) {
      // The turn's n bytes are the library's, outside V8's accounting, so a loop holding big
      // turns would not prompt the GC to collect them (and free the library's copies). A
      // never-written ArrayBuffer of the same size is counted as external memory by V8; its
      // zeroed pages are mapped lazily, so a big one costs address space, not resident memory.
      // When it cannot be had, the GC merely misses the hint.
      try {
        this.pressure = new ArrayBuffer(n);
      } catch {
        this.pressure = null;
      }
      turnMemory.register(this, turnPtr, this);
      turnsHeld++;
    }
  }

  get count() {
    return this.views.count;
  }

  /** Event i's type from its view (decoded once per type: the views share them); undefined: none. */
  type(i) {
    const v = this.views;
    const at = v.typeAt(i);
    return at === 0 ? undefined : this.names.name(at, v.typeLen(i), this.decodeType);
  }

  /** Event i's JSON text. */
  json(i) {
    const v = this.views;
    const start = v.jsonAt(i) - this.base;
    return this.buf.utf8Slice(start, start + v.jsonLen(i));
  }
}

/** Nothing reads `source.buf` any more: the library's turn is freed now. */
function releaseSource(source) {
  if (source.buf === null) return;
  source.buf = null;
  source.views = null;
  source.pressure = null;
  if (source.turn !== null) {
    const ptr = source.turn;
    source.turn = null;
    turnMemory.unregister(source);
    turnsHeld--;
    native().turnFree(ptr);
  }
}

function lazyEvents(turn, src) {
  let source = src;
  const define = (value) => Object.defineProperty(turn, 'events', { value, writable: true, enumerable: true, configurable: true });
  Object.defineProperty(turn, 'events', {
    configurable: true,
    enumerable: true,
    get() {
      const value = eventsOf(source);
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

function eventsOf(source) {
  const count = source.count;
  const events = new Array(count);
  for (let i = 0; i < count; i++) events[i] = new Proxy(lazyTarget(i, source), LAZY_EVENT);
  return events;
}

// Each lazy event is a Proxy whose `type` is the view's (without parsing the event), and whose first use of anything else
// (a field, `in`, Object.keys, spread, JSON.stringify, a write, util.inspect) parses that one
// event into its target, once. From then on it is that plain object behind a pass-through
// Proxy.

const LAZY_AT = Symbol('omprpc.lazyAt'); // the event's index in its source
const LAZY_IN = Symbol('omprpc.lazyIn'); // its source (EventSource)

// util.inspect shows a Proxy's target without running its traps, and looks this hook up on
// the target: it is called with the Proxy as `this`, whose first read parses the event, so
// console.log(ev) shows the parsed event. (An own property, not a prototype's: changing the
// prototype back after parsing cost as much as the parse.)
const INSPECT = Symbol.for('nodejs.util.inspect.custom');
function inspectLazyEvent() {
  void this[LAZY_IN]; // through the Proxy: parses the event into its target
  return this;
}

/** An unparsed event's target: which event it is (its type is `source.type(at)`). */
function lazyTarget(at, source) {
  const t = {};
  t[LAZY_AT] = at;
  t[LAZY_IN] = source;
  t[INSPECT] = inspectLazyEvent;
  return t;
}

/** Parses a lazy event's JSON into its target, once; the target becomes a plain object. */
function fillEvent(t) {
  const source = t[LAZY_IN];
  if (source === undefined) return;
  const i = t[LAZY_AT];
  // Removed newest first, so each is the last property (the object keeps a fast shape).
  delete t[INSPECT];
  delete t[LAZY_IN];
  delete t[LAZY_AT];
  const json = source.json(i);
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
      const source = t[LAZY_IN];
      if (source === undefined) return t.type; // parsed
      const type = source.type(t[LAZY_AT]); // the view's (undefined: the event has none)
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

function heldTurns() {
  return turnsHeld;
}

module.exports = { takeTurn, heldTurns };
