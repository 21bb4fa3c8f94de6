'use strict';
// The library's structured results (src/ffi/structured.rs): arrays of `omprpc_event_view
// {event_type, json}` (each an `omprpc_str {data, len}`, borrowed, not NUL-terminated) lent by
// an event batch or a turn, and the text of an `omprpc_str`. The struct types are the
// generated ones (lib/native.gen.cjs, registered by native.cjs).

const os = require('node:os');
const { getKoffi, native, structTypes, failure } = require('./native.cjs');

/** `fn(obj, &array, &count, &err)`: the lent array's pointer and its length. */
function lent(fn, obj) {
  const arr = [null];
  const count = [0];
  const err = [null];
  const st = fn(obj, arr, count, err);
  if (st !== 0) throw failure(st, err[0]);
  return { ptr: arr[0], count: Number(count[0]) };
}

// A view array read as memory: the generated struct's offsets, its pointers and sizes as
// numbers (little-endian, 4- or 8-byte words; user-space addresses fit a double exactly), which
// koffi takes as pointers. Decoding the array as structs costs ~3 µs a view (an object per
// struct and member); this, ~0.1 µs.
let layout; // undefined: not computed; null: unusable (the views are decoded as structs)
function viewLayout() {
  if (layout !== undefined) return layout;
  layout = null;
  const koffi = getKoffi();
  const word = koffi.sizeof('void *');
  if (os.endianness() === 'LE' && (word === 4 || word === 8) && koffi.sizeof('size_t') === word) {
    const T = structTypes();
    const type = koffi.offsetof(T.omprpc_event_view, 'event_type');
    const json = koffi.offsetof(T.omprpc_event_view, 'json');
    const data = koffi.offsetof(T.omprpc_str, 'data');
    const len = koffi.offsetof(T.omprpc_str, 'len');
    const stride = koffi.sizeof(T.omprpc_event_view);
    if (stride % 4 === 0) layout = { wide: word === 8, step: stride / 4, at: [type + data, type + len, json + data, json + len].map((o) => o / 4) };
  }
  return layout;
}

/** Whether foreign memory is read in place (koffi.view); false in a V8 sandbox. */
function viewsInPlace() {
  return viewLayout() !== null;
}

/**
 * The `count` views at `ptr` as numbers: for view i, [4i] its type's address, [4i+1] its
 * length, [4i+2] its JSON's address, [4i+3] its length (address 0: absent).
 */
function viewNumbers(ptr, count) {
  const out = new Float64Array(4 * count);
  if (count === 0) return out;
  const koffi = getKoffi();
  const l = viewLayout();
  let words = null;
  if (l !== null) {
    try {
      words = new Uint32Array(koffi.view(ptr, count * l.step * 4));
    } catch {
      layout = null; // no external ArrayBuffers here: decoded as structs from now on
    }
  }
  if (words !== null) {
    const [a0, a1, a2, a3] = l.at;
    const wide = l.wide;
    for (let w = 0, o = 0; o < out.length; w += l.step, o += 4) {
      if (wide) {
        out[o] = words[w + a0] + words[w + a0 + 1] * 4294967296;
        out[o + 1] = words[w + a1] + words[w + a1 + 1] * 4294967296;
        out[o + 2] = words[w + a2] + words[w + a2 + 1] * 4294967296;
        out[o + 3] = words[w + a3] + words[w + a3 + 1] * 4294967296;
      } else {
        out[o] = words[w + a0];
        out[o + 1] = words[w + a1];
        out[o + 2] = words[w + a2];
        out[o + 3] = words[w + a3];
      }
    }
    return out;
  }
  const views = koffi.decode(ptr, structTypes().omprpc_event_view, count);
  for (let i = 0, o = 0; i < count; i++, o += 4) {
    const v = views[i];
    out[o] = Number(v.event_type.data || 0);
    out[o + 1] = Number(v.event_type.len);
    out[o + 2] = Number(v.json.data || 0);
    out[o + 3] = Number(v.json.len);
  }
  return out;
}

/**
 * A lent view array, read where it lies: view i's numbers are read from the library's memory
 * when asked, so a turn's 100k views cost nothing until its events are used (decoding them
 * all into arrays at the take cost 2-30 ms a 100k-event turn, mostly in the collections of
 * those 5 MB of arrays). Valid while the batch or turn lending it is. `copy`: decoded into
 * numbers at once (for views read after their owner is freed, or where foreign memory cannot
 * be viewed).
 */
class ViewArray {
  constructor(ptr, count, copy) {
    this.count = count;
    this.words = null; // the views' memory as 32-bit words (in place)
    this.nums = null; // or the views as numbers, 4 a view (viewNumbers)
    const l = copy || count === 0 ? null : viewLayout();
    if (l !== null) {
      try {
        this.words = new Uint32Array(getKoffi().view(ptr, count * l.step * 4));
        this.step = l.step;
        this.wide = l.wide;
        [this.a0, this.a1, this.a2, this.a3] = l.at;
      } catch {
        layout = null; // no external ArrayBuffers here: decoded as structs from now on
      }
    }
    if (this.words === null) this.nums = viewNumbers(ptr, count);
  }

  /** Whether the views are read in the lender's memory (which must then outlive the reads). */
  get inPlace() {
    return this.words !== null;
  }

  /** The number at word `a` of view i (a 64-bit one from two words when `wide`). */
  _at(i, a) {
    const w = i * this.step + a;
    const words = this.words;
    return this.wide ? words[w] + words[w + 1] * 4294967296 : words[w];
  }

  typeAt(i) {
    return this.nums === null ? this._at(i, this.a0) : this.nums[4 * i];
  }

  typeLen(i) {
    return this.nums === null ? this._at(i, this.a1) : this.nums[4 * i + 1];
  }

  jsonAt(i) {
    return this.nums === null ? this._at(i, this.a2) : this.nums[4 * i + 2];
  }

  jsonLen(i) {
    return this.nums === null ? this._at(i, this.a3) : this.nums[4 * i + 3];
  }
}

/**
 * The types of views by address: within one batch or turn the library gives events of one
 * type one `event_type` (src/ffi/structured.rs), so each distinct type is decoded once. Use
 * one per batch or turn (an address is another type's once the memory is reused).
 */
class TypeNames {
  constructor() {
    this.at = -1; // the last type's address and length, and the type
    this.len = -1;
    this.type = null;
    this.known = new Map(); // address -> [length, type]
  }

  /** The type at `at` (`len` bytes); `decode(at, len)` reads one not seen yet. */
  name(at, len, decode) {
    if (at === this.at && len === this.len) return this.type;
    const k = this.known.get(at);
    let type;
    if (k !== undefined && k[0] === len) {
      type = k[1];
    } else {
      type = decode(at, len);
      this.known.set(at, [len, type]);
    }
    this.at = at;
    this.len = len;
    this.type = type;
    return type;
  }
}

/** An `omprpc_str`'s text; null when absent (data NULL). */
function strText(s) {
  return s.data === null || s.data === 0n ? null : getKoffi().decode.string(s.data, Number(s.len));
}

// A batch's events are parsed when something reads them. While nobody consumes events (the
// pump runs for host tool handlers, say), they only move to the pull queue, most to be
// dropped past its capacity unread: parsing 100k events there cost 5x the turn itself. So
// each stays unparsed, read in place from its batch, until it is taken (the pull queue holds
// runs of them: lib/events.cjs PullQueue); the batch is freed once each of its events was
// parsed or dropped (or, unreachable, by the GC).

const heldBatches = new FinalizationRegistry((ptr) => native().eventBatchFree(ptr));

/**
 * A batch taken from the library: `types[i]`, event i's type from its view (null: none), and
 * `events[i]`, the event once parsed — until then its index i (a number), parsed on demand
 * from the library's memory (`parse`). The library's batch is freed once each event was parsed
 * or dropped.
 */
class Batch {
  constructor(ptr, views, types) {
    this.ptr = ptr;
    this.views = views;
    this.types = types;
    this.events = new Array(types.length);
    for (let i = 0; i < types.length; i++) this.events[i] = i;
    this.unread = types.length; // events neither parsed nor dropped
    if (ptr !== null) heldBatches.register(this, ptr, this);
  }

  /** Event i, parsed (once: `events[i]` is the event from then on). */
  parse(i) {
    const ev = this.events[i];
    if (typeof ev !== 'number') return ev;
    const v = this.views;
    const json = getKoffi().decode.string(v.jsonAt(i), v.jsonLen(i));
    this.drop(1);
    const parsed = JSON.parse(json);
    this.events[i] = parsed;
    return parsed;
  }

  /** `n` events parsed or dropped; the last frees the library's batch. */
  drop(n) {
    this.unread -= n;
    if (this.unread === 0) {
      heldBatches.unregister(this);
      native().eventBatchFree(this.ptr);
      this.ptr = null;
      this.views = null;
    }
  }

  /** Every event parsed; returns `events`. */
  parseAll() {
    for (let i = 0; i < this.events.length; i++) if (typeof this.events[i] === 'number') this.parse(i);
    return this.events;
  }
}

/**
 * The events of the library's `batch` (unparsed: see Batch), read in place from its views;
 * each distinct type decoded once.
 */
function takeBatch(batch) {
  const N = native();
  let held = null;
  try {
    const { ptr, count } = lent(N.eventBatchEvents, batch);
    if (count === 0) return new Batch(null, null, []); // (freed below)
    const views = new ViewArray(ptr, count, false);
    const types = new Array(count);
    const decode = getKoffi().decode.string;
    const names = new TypeNames();
    for (let i = 0; i < count; i++) {
      const at = views.typeAt(i);
      types[i] = at === 0 ? null : names.name(at, views.typeLen(i), decode);
    }
    held = new Batch(batch, views, types);
    return held;
  } finally {
    if (held === null) N.eventBatchFree(batch);
  }
}

module.exports = { lent, viewNumbers, viewsInPlace, ViewArray, strText, TypeNames, takeBatch, Batch };
