'use strict';
// Turns: a turn's `events` can be large (a burst of 100k events is 64 MB of JSON) and most
// callers read its text, each event's `type` and the fields of a few events. The turn object
// is parsed from the small rest of the JSON; `events` is built when first read, and each event
// in it is parsed on its first use. This relies on the core writing `{"events":[…],` first and
// the events one per line, each followed by `,\n` (src/turn/mod.rs; an event never contains
// a raw newline); any other shape is simply parsed whole.
//
// The library's string is not copied: copying (or decoding) 64 MB into fresh memory costs
// ~90 ms of page faults alone. The turn reads it in place through a Buffer over the C memory
// (koffi.view), and frees it once nothing needs it: when every event has been parsed, when
// the events were parsed whole, or when the turn is garbage-collected (a FinalizationRegistry).
// V8 does not see that memory, so an untouched ArrayBuffer of the same size (zero pages, no
// RSS) stands for it in the GC's accounting of external memory: a host that never reads
// `events` still has these strings freed as its turns are collected.

const { getKoffi, native, take } = require('./native.cjs');

const TURN_PREFIX = '{"events":[';
const TURN_MARK = Buffer.from('],"requestId":');
const TYPE_HEAD = Buffer.from('{"type":"');

let strlenFn; // undefined: not looked up; null: unavailable (turns are then decoded whole)
function cStrlen() {
  if (strlenFn === undefined) {
    try {
      strlenFn = typeof getKoffi().view === 'function' ? getKoffi().load(null).func('size_t strlen(const void *s)') : null;
    } catch {
      strlenFn = null;
    }
  }
  return strlenFn;
}

/** The library's turn strings the binding holds (for the tests). */
let turnStringsHeld = 0;
const turnMemory = new FinalizationRegistry((ptr) => {
  turnStringsHeld--;
  native().stringFree(ptr);
});

function takeTurn(ptr) {
  if (ptr === null || ptr === undefined || ptr === 0n || ptr === 0) return null;
  const strlen = cStrlen();
  if (strlen === null) return splitTurn(take(ptr));
  const n = Number(strlen(ptr));
  let buf;
  try {
    buf = Buffer.from(getKoffi().view(ptr, n));
  } catch {
    // A runtime without external ArrayBuffers (a V8 sandbox): decode the string instead.
    strlenFn = null;
    return splitTurn(take(ptr));
  }
  return turnFrom(buf, ptr);
}

/** The turn of a JSON text (the tests, and turns without the C string path). */
function splitTurn(json) {
  return turnFrom(Buffer.from(json, 'utf8'), null);
}

/** The turn in `buf`; `ptr`: the library's string `buf` views (null: `buf` is ours). */
function turnFrom(buf, ptr) {
  const n = buf.length;
  if (buf.latin1Slice(0, Math.min(n, TURN_PREFIX.length)) === TURN_PREFIX) {
    // The true boundary is the last `],"requestId":` after which the rest is one JSON object:
    // from any later match (inside a message) the rest would close more than it opens.
    for (let b = buf.lastIndexOf(TURN_MARK); b > 0; b = buf.lastIndexOf(TURN_MARK, b - 1)) {
      let turn;
      try {
        turn = JSON.parse('{' + buf.utf8Slice(b + 2, n));
      } catch {
        continue;
      }
      if (turn === null || typeof turn !== 'object' || Array.isArray(turn)) break;
      return lazyEvents(turn, eventSource(buf, ptr, TURN_PREFIX.length - 1, b)); // b: the `]`
    }
  }
  const json = buf.utf8Slice(0, n);
  if (ptr !== null) native().stringFree(ptr);
  return JSON.parse(json);
}

/** The JSON array of events at buf[start..last] (`[` … `]`), and who owns `buf`. */
function eventSource(buf, ptr, start, last) {
  // lastType: the previous event's type, reused when the next has the same bytes (a burst's
  // 100k message_update share one string).
  const source = { buf, ptr, start, last, pending: 0, pressure: null, lastType: '' };
  if (ptr !== null) {
    try {
      source.pressure = new ArrayBuffer(buf.length);
    } catch {
      // no address space for the stand-in: the GC just sees less
    }
    turnMemory.register(source, ptr, source);
    turnStringsHeld++;
  }
  return source;
}

/** Nothing reads `source.buf` any more: the library's string is freed now. */
function releaseSource(source) {
  if (source.buf === null) return;
  source.buf = null;
  source.pressure = null;
  if (source.ptr !== null) {
    const ptr = source.ptr;
    source.ptr = null;
    turnMemory.unregister(source);
    turnStringsHeld--;
    native().stringFree(ptr);
  }
}

function lazyEvents(turn, src) {
  let source = src;
  const define = (value) => Object.defineProperty(turn, 'events', { value, writable: true, enumerable: true, configurable: true });
  Object.defineProperty(turn, 'events', {
    configurable: true,
    enumerable: true,
    get() {
      const value = splitEvents(source);
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

/** The events parsed whole (a layout this does not cut); the source is released. */
function wholeEvents(source) {
  try {
    return JSON.parse(source.buf.utf8Slice(source.start, source.last + 1));
  } finally {
    releaseSource(source);
  }
}

/** The events of a source: lazy events when written one per line, else parsed whole. */
function splitEvents(source) {
  const { buf, start, last } = source;
  if (buf[start] !== 0x5b /* [ */ || buf[last] !== 0x5d /* ] */) return wholeEvents(source);
  if (start + 1 === last) {
    releaseSource(source);
    return [];
  }
  const events = [];
  for (let pos = start + 1; ; ) {
    // Searched as the newline alone (commas are everywhere in JSON, newlines only here).
    let k = buf.indexOf(0x0a, pos);
    if (k < 0 || k > last) k = last;
    else if (buf[k - 1] !== 0x2c /* , */) return wholeEvents(source);
    else k--;
    // Without a separator there is one event, or a layout this does not know: parse whole.
    if (k === last && events.length === 0) return wholeEvents(source);
    if (buf[pos] !== 0x7b /* { */ || buf[k - 1] !== 0x7d /* } */) return wholeEvents(source);
    events.push(lazyEvent(source, pos));
    if (k === last) break;
    pos = k + 2;
  }
  source.pending = events.length;
  return events;
}

// Each lazy event is a Proxy whose `type` is read from the event's leading `{"type":"…"`
// without parsing it, and whose first use of anything else (a field, `in`, Object.keys,
// spread, JSON.stringify, a write, util.inspect) parses that one event into its target, once.
// From then on it is that plain object behind a pass-through Proxy.

const LAZY_AT = Symbol('omprpc.lazyAt'); // where the event starts in its source
const LAZY_IN = Symbol('omprpc.lazyIn'); // its source (eventSource)

// util.inspect shows a Proxy's target without running its traps, and looks this hook up on
// the target: it is called with the Proxy as `this`, whose first read parses the event, so
// console.log(ev) shows the parsed event. (An own property, not a prototype's: changing the
// prototype back after parsing cost as much as the parse.)
const INSPECT = Symbol.for('nodejs.util.inspect.custom');
function inspectLazyEvent() {
  void this[LAZY_IN]; // through the Proxy: parses the event into its target
  return this;
}

/** An unparsed event's target: `type` when it was read cheaply, and where its JSON is. */
function lazyTarget(type, at, source) {
  const t = type === undefined ? {} : { type };
  t[LAZY_AT] = at;
  t[LAZY_IN] = source;
  t[INSPECT] = inspectLazyEvent;
  return t;
}

/** Parses a lazy event's JSON into its target, once; the target becomes a plain object. */
function fillEvent(t) {
  const source = t[LAZY_IN];
  if (source === undefined) return;
  const at = t[LAZY_AT];
  // Removed newest first, so each is the last property (the object keeps a fast shape).
  delete t[INSPECT];
  delete t[LAZY_IN];
  delete t[LAZY_AT];
  const buf = source.buf;
  let end = buf.indexOf(0x0a, at) - 1; // the separator's comma
  if (end < 0 || end > source.last) end = source.last;
  const json = buf.utf8Slice(at, end);
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
      const type = t.type; // own (read cheaply or parsed), else not read yet
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

/** The event at `at` of `source`, its type read when it leads the object as a plain string. */
function lazyEvent(source, at) {
  const buf = source.buf;
  let type;
  let i = 0;
  while (i < TYPE_HEAD.length && buf[at + i] === TYPE_HEAD[i]) i++;
  if (i === TYPE_HEAD.length) {
    const a = at + i;
    let b = a;
    // ASCII without escapes (else JSON.parse reads it): bytes are characters.
    for (let c = buf[b]; c !== 0x22 && c !== 0x5c && c < 0x80 && b < source.last; c = buf[++b]);
    if (buf[b] === 0x22) {
      type = source.lastType;
      let same = type.length === b - a;
      for (let j = 0; same && j < type.length; j++) same = type.charCodeAt(j) === buf[a + j];
      if (!same) type = source.lastType = buf.latin1Slice(a, b);
    }
  }
  return new Proxy(lazyTarget(type, at, source), LAZY_EVENT);
}

function heldTurnStrings() {
  return turnStringsHeld;
}

module.exports = { takeTurn, splitTurn, heldTurnStrings };
