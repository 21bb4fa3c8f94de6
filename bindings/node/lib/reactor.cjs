'use strict';
// The reactor: one pool thread for every client. Node cannot watch a foreign descriptor or
// handle without native code (net.Socket would read and own a descriptor; libuv has no wait on
// a foreign Windows event), so one koffi async call waits, in slices, on what every client
// that awaits events offers — on Unix libc poll(2) on their event descriptors, on Windows
// kernel32's WaitForMultipleObjects on their event handles — plus a wake-up of the reactor's
// own (a self-pipe; an auto-reset event) to re-arm it at once; a ready client drains its queue
// with non-blocking calls on the main thread. Only the main thread ever takes events, so their
// order is kept.

const { POLL_SLICE_MS } = require('./constants.cjs');
const { getKoffi } = require('./native.cjs');

const POLLIN = 0x1;
const ONE_BYTE = Buffer.from([1]);

/** Unix: poll(2) on the clients' event descriptors (`client._fd`) and a self-pipe. */
class PollWaiter {
  static open() {
    let libc;
    try {
      const self = getKoffi().load(null);
      libc = {
        poll: self.func('int poll(void *fds, unsigned long nfds, int timeout)'),
        pipe: self.func('int pipe(_Out_ int *fds)'),
        read: self.func('long read(int fd, void *buf, unsigned long count)'),
        write: self.func('long write(int fd, void *buf, unsigned long count)'),
      };
    } catch {
      return null;
    }
    const fds = new Int32Array(2);
    if (libc.pipe(fds) !== 0) return null;
    return new PollWaiter(libc, fds[0], fds[1]);
  }

  constructor(libc, readEnd, writeEnd) {
    this.libc = libc;
    this.readEnd = readEnd;
    this.writeEnd = writeEnd;
    this.scratch = Buffer.alloc(64);
    /** poll(2) takes any number of descriptors. */
    this.capacity = Infinity;
  }

  wake() {
    this.libc.write(this.writeEnd, ONE_BYTE, 1);
  }

  /** Waits up to `ms` on `list`'s descriptors: `{ woken, ready }` (the clients readable). */
  async wait(list, ms) {
    const n = list.length + 1;
    const buf = Buffer.alloc(8 * n);
    buf.writeInt32LE(this.readEnd, 0);
    buf.writeInt16LE(POLLIN, 4);
    for (let i = 0; i < list.length; i++) {
      buf.writeInt32LE(list[i]._fd, 8 * (i + 1));
      buf.writeInt16LE(POLLIN, 8 * (i + 1) + 4);
    }
    const count = await new Promise((resolve, reject) => {
      this.libc.poll.async(buf, n, ms, (e, r) => (e ? reject(e) : resolve(r)));
    });
    if (count < 0) return { woken: false, ready: [] }; // EINTR: the next round polls again
    const woken = buf.readInt16LE(6) !== 0;
    if (woken) this.libc.read(this.readEnd, this.scratch, this.scratch.length);
    const ready = [];
    for (let i = 0; count > 0 && i < list.length; i++) {
      if (buf.readInt16LE(8 * (i + 1) + 6) !== 0) ready.push(list[i]);
    }
    return { woken, ready };
  }
}

const WAIT_OBJECT_0 = 0;
const WAIT_TIMEOUT = 0x102;
/** WaitForMultipleObjects' limit; the reactor's own event takes one place. */
const MAXIMUM_WAIT_OBJECTS = 64;

/**
 * Windows: WaitForMultipleObjects on the clients' event handles (`client._eventHandle`:
 * manual-reset events the core sets while events are queued or the client is closed) and an
 * auto-reset event of the reactor's. It names only the first signalled handle, so the ones
 * after it are asked again without waiting. A client the limit leaves out (more than 63 await
 * events at once) is served by its timer loop instead (lib/events.cjs).
 */
class HandleWaiter {
  static open() {
    let k;
    try {
      const kernel32 = getKoffi().load('kernel32.dll');
      k = {
        createEvent: kernel32.func('void *CreateEventW(void *attributes, int manualReset, int initialState, void *name)'),
        setEvent: kernel32.func('int SetEvent(void *handle)'),
        waitOne: kernel32.func('uint32_t WaitForSingleObject(void *handle, uint32_t ms)'),
        waitAny: kernel32.func('uint32_t WaitForMultipleObjects(uint32_t count, void *handles, int waitAll, uint32_t ms)'),
      };
    } catch {
      return null;
    }
    const event = k.createEvent(null, 0, 0, null);
    if (!event) return null;
    return new HandleWaiter(k, event);
  }

  constructor(k, event) {
    this.k = k;
    this.event = event; // lives as long as the process: one reactor per process
    this.capacity = MAXIMUM_WAIT_OBJECTS - 1;
  }

  wake() {
    this.k.setEvent(this.event);
  }

  async wait(list, ms) {
    const handles = new BigUint64Array(list.length + 1);
    handles[0] = BigInt(this.event);
    for (let i = 0; i < list.length; i++) handles[i + 1] = BigInt(list[i]._eventHandle);
    const got = await new Promise((resolve, reject) => {
      this.k.waitAny.async(handles.length, handles, 0, ms, (e, r) => (e ? reject(e) : resolve(r)));
    });
    if (got === WAIT_TIMEOUT) return { woken: false, ready: [] };
    const first = got - WAIT_OBJECT_0;
    if (!(first >= 0 && first < handles.length)) throw new Error(`WaitForMultipleObjects failed (${got})`);
    // The first signalled one is known; the ones before it were not signalled.
    const ready = [];
    for (let i = Math.max(first, 1); i < handles.length; i++) {
      if (i === first || this.k.waitOne(handles[i], 0) === WAIT_OBJECT_0) ready.push(list[i - 1]);
    }
    return { woken: first === 0, ready };
  }
}

class Reactor {
  constructor() {
    this.members = new Set();
    this.running = false;
    this.wakePending = false;
    this.waiter = undefined; // undefined: not tried; null: unavailable (timer loops instead)
    this.failed = false;
    /** The wait in progress: `{ list, done }`, done settling once it returned. */
    this.inflight = null;
  }

  available() {
    // Tried once koffi is loaded (with the library: a client exists by then).
    if (this.waiter === undefined && getKoffi()) this.waiter = (process.platform === 'win32' ? HandleWaiter : PollWaiter).open();
    return Boolean(this.waiter) && !this.failed;
  }

  /** Whether `client` waits here (else on its timer loop): a member, or a place is free. */
  accepts(client) {
    return this.available() && (this.members.has(client) || this.members.size < this.waiter.capacity);
  }

  add(client) {
    if (!this.members.has(client)) {
      this.members.add(client);
      this.wake();
    }
    this.run();
  }

  remove(client) {
    if (this.members.delete(client)) this.wake();
  }

  /**
   * Resolves once no wait in progress holds `client`'s descriptor or handle: call after
   * remove(), before the core frees the client (a Windows wait on a handle closed under it is
   * undefined behaviour). remove() woke the wait, so it returns at once.
   */
  released(client) {
    const f = this.inflight;
    return f !== null && f.list.includes(client) ? f.done : Promise.resolve();
  }

  /** Re-arms the current wait (membership or wishes changed). */
  wake() {
    if (this.running && !this.wakePending) {
      this.wakePending = true;
      this.waiter.wake();
    } else if (!this.running) {
      this.run();
    }
  }

  run() {
    if (this.running) return;
    this.running = true;
    this._loop().catch(() => {
      // The wait through koffi failed: every client falls back to its timer loop.
      this.failed = true;
      const members = [...this.members];
      this.members.clear();
      for (const c of members) process.nextTick(() => c._updatePump());
    });
  }

  async _loop() {
    try {
      for (;;) {
        const list = [];
        for (const c of this.members) {
          if (c._reactorWants()) list.push(c);
          else if (c._draining === null && c._pumpMode() !== 'block') {
            // No longer awaiting events this way: let the client pick its new mode.
            this.members.delete(c);
            process.nextTick(() => c._updatePump());
          }
        }
        if (list.length === 0) break;
        const call = this.waiter.wait(list, POLL_SLICE_MS);
        this.inflight = { list, done: call.then(() => {}, () => {}) };
        let result;
        try {
          result = await call;
        } finally {
          this.inflight = null;
        }
        if (result.woken) this.wakePending = false;
        for (const c of result.ready) if (this.members.has(c)) c._startDrain();
      }
    } finally {
      this.running = false;
    }
  }
}

const reactor = new Reactor();

module.exports = { reactor };
