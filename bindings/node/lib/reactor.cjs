'use strict';
// The reactor: one pool thread for every client. Node cannot watch a foreign descriptor
// without native code (net.Socket would read and own it), so one koffi async call of libc
// poll(2) waits, in slices, on the event descriptors of all clients that await events (plus
// a self-pipe to re-arm it at once); a readable descriptor makes that client drain its queue
// with non-blocking calls on the main thread. Only the main thread ever takes events, so
// their order is kept.

const { POLL_SLICE_MS } = require('./constants.cjs');
const { getKoffi } = require('./native.cjs');

let libc; // undefined: not tried; null: unavailable (a timer fallback is used)
function bindLibc() {
  if (libc !== undefined) return libc;
  libc = null;
  if (process.platform === 'win32') return libc;
  try {
    const self = getKoffi().load(null);
    libc = {
      poll: self.func('int poll(void *fds, unsigned long nfds, int timeout)'),
      pipe: self.func('int pipe(_Out_ int *fds)'),
      read: self.func('long read(int fd, void *buf, unsigned long count)'),
      write: self.func('long write(int fd, void *buf, unsigned long count)'),
    };
  } catch {
    libc = null;
  }
  return libc;
}

const POLLIN = 0x1;
const ONE_BYTE = Buffer.from([1]);

class Reactor {
  constructor() {
    this.members = new Set();
    this.running = false;
    this.wakePending = false;
    this.pipe = null;
    this.scratch = Buffer.alloc(64);
  }

  available() {
    if (this.pipe) return true;
    if (this.failed) return false;
    const l = bindLibc();
    if (!l) return false;
    const fds = [0, 0];
    const arr = new Int32Array(2);
    if (l.pipe(arr) !== 0) return false;
    fds[0] = arr[0];
    fds[1] = arr[1];
    this.pipe = fds;
    return true;
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

  /** Re-arms the current poll (membership or wishes changed). */
  wake() {
    if (this.running && !this.wakePending) {
      this.wakePending = true;
      libc.write(this.pipe[1], ONE_BYTE, 1);
    } else if (!this.running) {
      this.run();
    }
  }

  run() {
    if (this.running) return;
    this.running = true;
    this._loop().catch(() => {
      // poll(2) through koffi failed: every client falls back to timer polling.
      this.failed = true;
      this.pipe = null;
      for (const c of this.members) process.nextTick(() => c._updatePump());
      this.members.clear();
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
        const n = list.length + 1;
        const buf = Buffer.alloc(8 * n);
        buf.writeInt32LE(this.pipe[0], 0);
        buf.writeInt16LE(POLLIN, 4);
        for (let i = 0; i < list.length; i++) {
          buf.writeInt32LE(list[i]._fd, 8 * (i + 1));
          buf.writeInt16LE(POLLIN, 8 * (i + 1) + 4);
        }
        const ready = await new Promise((resolve, reject) => {
          libc.poll.async(buf, n, POLL_SLICE_MS, (e, r) => (e ? reject(e) : resolve(r)));
        });
        if (buf.readInt16LE(6) !== 0) {
          libc.read(this.pipe[0], this.scratch, this.scratch.length);
          this.wakePending = false;
        }
        if (ready > 0) {
          for (let i = 0; i < list.length; i++) {
            if (buf.readInt16LE(8 * (i + 1) + 6) !== 0 && this.members.has(list[i])) list[i]._startDrain();
          }
        }
      }
    } finally {
      this.running = false;
    }
  }
}

const reactor = new Reactor();

module.exports = { reactor };
