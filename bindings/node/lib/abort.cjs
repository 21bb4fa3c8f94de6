'use strict';
// AbortSignal support shared by every call: checking the option, and racing a call on libuv's
// pool against its signal. The pool call cannot be interrupted (the C call runs to its end), so
// an aborted call rejects at once and its late result is dropped (freed) when it comes.

const { abortError } = require('./errors.cjs');
const { take } = require('./native.cjs');

/** `signal` as given (undefined/null: none), or a TypeError naming the option. */
function signalArg(signal) {
  if (signal === undefined || signal === null) return null;
  if (typeof signal !== 'object' || typeof signal.aborted !== 'boolean' || typeof signal.addEventListener !== 'function') {
    throw new TypeError('signal must be an AbortSignal');
  }
  return signal;
}

/** Frees a dropped raw result (`{st, out, err}` with string pointers). */
function dropRaw(late) {
  take(late.out);
  take(late.err);
}

/**
 * `call` (a promise), or, when `signal` aborts first, a rejection with the package's
 * AbortError (`what` names the call in its message); the late result of `call` is then handed
 * to `dropLate` (which frees it, or undoes it: a late-accepted prompt is aborted).
 */
function raceSignal(call, signal, what, dropLate = dropRaw) {
  if (!signal) return call;
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      call.then(dropLate, () => {});
      reject(abortError(signal, what));
    };
    if (signal.aborted) {
      onAbort();
      return;
    }
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

module.exports = { signalArg, raceSignal, dropRaw };
