'use strict';
// The library's structured results (src/ffi/structured.rs): arrays of `omprpc_event_view
// {event_type, json}` (each an `omprpc_str {data, len}`, borrowed, not NUL-terminated) lent by
// an event batch or a turn, and the text of an `omprpc_str`. The struct types are the
// generated ones (lib/native.gen.cjs, registered by native.cjs).

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

/** The `count` views at `ptr`, decoded as the generated `omprpc_event_view`. */
function decodeViews(ptr, count) {
  return count === 0 ? [] : getKoffi().decode(ptr, structTypes().omprpc_event_view, count);
}

/** An `omprpc_str`'s text; null when absent (data NULL). */
function strText(s) {
  return s.data === null || s.data === 0n ? null : getKoffi().decode.string(s.data, Number(s.len));
}

/**
 * A batch's events, parsed: JSON.parse of each view's JSON. `types[i]`: the view's
 * `event_type` (null when the event has none). The batch is freed.
 */
function takeBatch(batch) {
  const N = native();
  try {
    const { ptr, count } = lent(N.eventBatchEvents, batch);
    const views = decodeViews(ptr, count);
    const events = new Array(count);
    const types = new Array(count);
    const decode = getKoffi().decode.string;
    for (let i = 0; i < count; i++) {
      const v = views[i];
      events[i] = JSON.parse(decode(v.json.data, Number(v.json.len)));
      types[i] = strText(v.event_type);
    }
    return { events, types };
  } finally {
    N.eventBatchFree(batch);
  }
}

module.exports = { lent, decodeViews, strText, takeBatch };
