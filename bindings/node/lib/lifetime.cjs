'use strict';
// The safety nets for a client that was not closed: at process exit, and when it is
// garbage-collected.

const { native } = require('./native.cjs');

// Process-exit safety net: a client still open when the process exits is closed
// synchronously (agent and its process group stopped), unless `closeOnExit: false`.

const openAtExit = new Set();
let exitHookInstalled = false;
function onProcessExit() {
  for (const st of openAtExit) {
    if (!st.freed && st.h) {
      try {
        native().close(st.h, [null]);
      } catch {
        /* exiting anyway */
      }
    }
  }
  openAtExit.clear();
}

/** Registers a client's state for onProcessExit (installing the exit hook on first use). */
function closeAtExit(st) {
  openAtExit.add(st);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on('exit', onProcessExit);
  }
}

// GC safety net: a client that became unreachable without close() is closed (async) and freed.
const finalizer = new FinalizationRegistry((st) => {
  if (st.freed || st.closing || !st.h) return;
  st.closing = true;
  openAtExit.delete(st);
  const h = st.h;
  native().close.async(h, [null], () => {
    st.freed = true;
    native().free(h);
  });
});

module.exports = { openAtExit, closeAtExit, finalizer };
