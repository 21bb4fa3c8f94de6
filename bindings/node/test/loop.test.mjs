// The binding's own promises: the event loop never blocks, libuv's pool is not pinned by
// idle polls, and a process exits by itself once its clients are closed (or forgotten).
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { RpcTimeoutError } from '../index.mjs';
import { WAIT_MS, nextOfType, start, sleep } from './helpers.mjs';

/** Runs `fn` while a 10 ms interval ticks; returns the tick count and the largest gap. */
async function ticking(fn) {
  let ticks = 0;
  let last = performance.now();
  let maxGap = 0;
  const iv = setInterval(() => {
    const now = performance.now();
    maxGap = Math.max(maxGap, now - last);
    last = now;
    ticks++;
  }, 10);
  const t0 = performance.now();
  try {
    await fn();
  } finally {
    clearInterval(iv);
  }
  return { ticks, maxGap, ms: performance.now() - t0 };
}

// A blocked loop would stall for the whole 2 s wait; the bounds are generous so a loaded
// machine's scheduling jitter cannot fail them.
test('the event loop keeps ticking during a 2 s promptAndWait', async (t) => {
  const c = await start(t);
  c.on('event', () => {}); // the event pump runs too
  const r = await ticking(() => assert.rejects(c.promptAndWait('hang', { timeoutMs: 2000 }), RpcTimeoutError));
  assert.ok(r.ms >= 1900, `the turn wait took only ${r.ms} ms`);
  assert.ok(r.ticks >= 40, `${r.ticks} ticks in ${r.ms} ms`);
  assert.ok(r.maxGap < 1000, `largest gap between ticks: ${r.maxGap} ms`);
});

test('the event loop keeps ticking during a 2 s nextUiRequest', async (t) => {
  const c = await start(t);
  const r = await ticking(() => assert.rejects(c.nextUiRequest({ timeoutMs: 2000 }), RpcTimeoutError));
  assert.ok(r.ms >= 1900 && r.ms < 4000, `nextUiRequest(2000) took ${r.ms} ms`);
  assert.ok(r.ticks >= 40, `${r.ticks} ticks in ${r.ms} ms`);
  assert.ok(r.maxGap < 1000, `largest gap between ticks: ${r.maxGap} ms`);
});

test('idle waits do not pin libuv\'s pool: 24 idle waits on 8 clients, fs unaffected', async (t) => {
  const clients = [];
  for (let i = 0; i < 8; i++) clients.push(await start(t));
  const waits = [];
  for (const c of clients) {
    const it = c.events(); // an idle event stream
    await it.next(); // (the ready frame)
    waits.push(it);
    waits.push(c.nextUiRequest({ timeoutMs: 5000 }).catch(() => {}));
    await c.nextEvent({ timeoutMs: 0 }).catch(() => {});
    waits.push(c.nextEvent({ timeoutMs: 5000 }).catch(() => {}));
  }
  await sleep(300);
  const self = fileURLToPath(import.meta.url);
  const t0 = performance.now();
  for (let i = 0; i < 5; i++) await fs.readFile(self);
  const dt = performance.now() - t0;
  t.diagnostic(`5 sequential readFile calls with 24 idle waits: ${dt.toFixed(1)} ms`);
  // A pinned pool would hold the reads until the 5 s waits end.
  assert.ok(dt < 2000, `5 readFile calls took ${dt} ms`);
  for (const c of clients) await c.close();
});

function runChild(args, { expectExit = true, ms = 8000 } = {}) {
  const script = fileURLToPath(new URL('./fixtures/lifecycle.mjs', import.meta.url));
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const t0 = Date.now();
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
    }, ms);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      const lines = out.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
      resolve({ code, signal, ms: Date.now() - t0, lines, stderr: err, expectExit });
    });
  });
}

/** No such process, or only a zombie (an orphan's reaper may be slow). */
function agentGone(pid) {
  try {
    process.kill(pid, 0);
  } catch (e) {
    return e.code === 'ESRCH';
  }
  try {
    return / Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}

async function eventuallyGone(pid, ms = 3000) {
  const deadline = Date.now() + ms;
  while (!agentGone(pid)) {
    if (Date.now() > deadline) return false;
    await sleep(20);
  }
  return true;
}

for (const flavor of ['esm', 'cjs']) {
  test(`a process exits by itself after close() (${flavor})`, async () => {
    const r = await runChild(['close', flavor]);
    assert.equal(r.signal, null, `killed: did not exit by itself; stderr: ${r.stderr}`);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(agentGone(r.lines[0].pid));
  });
}

test('a process exits by itself after close() during a prompt (which rejects with ClosedError)', async () => {
  const r = await runChild(['close-during-prompt']);
  assert.equal(r.signal, null, `killed: did not exit by itself; stderr: ${r.stderr}`);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.lines[1].rejected, 'ClosedError');
});

test('a forgotten idle client does not keep the process alive; the exit hook stops its agent', async () => {
  const r = await runChild(['forgotten']);
  assert.equal(r.signal, null, `killed: did not exit by itself; stderr: ${r.stderr}`);
  assert.equal(r.code, 0, r.stderr);
  assert.ok(await eventuallyGone(r.lines[0].pid, 500), 'the agent outlived the process');
});

test('unref(): a listening client lets the process exit', async () => {
  const r = await runChild(['unref']);
  assert.equal(r.signal, null, `killed: did not exit by itself; stderr: ${r.stderr}`);
  assert.equal(r.code, 0, r.stderr);
});

test('registered host tool handlers alone do not keep the process alive', async () => {
  const r = await runChild(['host-tools']);
  assert.equal(r.signal, null, `killed: did not exit by itself; stderr: ${r.stderr}`);
  assert.equal(r.code, 0, r.stderr);
});

test('a ref\'d event listener keeps the process alive (like a socket)', async () => {
  const r = await runChild(['listening'], { ms: 1500 });
  assert.equal(r.signal, 'SIGKILL', 'the process exited although a listener was waiting for events');
  // SIGKILL skips the exit hook; the agent sees stdin EOF and exits by itself
  assert.ok(await eventuallyGone(r.lines[0].pid));
});

test('close() resolves only once the agent is gone', async (t) => {
  const c = await start(t);
  const { pid } = c.info();
  assert.ok(!agentGone(pid));
  await c.close();
  assert.ok(agentGone(pid));
  void WAIT_MS;
});

// Windows' reactor waits on at most 63 clients' handles at once (WaitForMultipleObjects takes
// 64, one is its own): a client past the limit waits on its timer loop, and joins the reactor
// when a place frees. The same path here, with the reactor's limit lowered to two.
test('clients past the reactor\'s limit get every event on timers, and take a freed place', async (t) => {
  const { reactor } = createRequire(import.meta.url)('../lib/reactor.cjs');
  await start(t); // the library (and koffi) loaded
  assert.ok(reactor.available());
  const limit = reactor.waiter.capacity;
  reactor.waiter.capacity = 2;
  t.after(() => {
    reactor.waiter.capacity = limit;
  });
  const clients = [];
  const iterators = [];
  for (let i = 0; i < 3; i++) {
    const c = await start(t);
    clients.push(c);
    const it = c.events();
    await nextOfType(it, 'ready');
    iterators.push(it);
  }
  assert.deepEqual(clients.map((c) => reactor.members.has(c)), [true, true, false]);
  assert.ok(clients[2]._timerLoop, 'the third client waits on its timer loop');
  const turn = async (i) => {
    await clients[i].prompt('say hello');
    const end = await nextOfType(iterators[i], 'agent_end');
    assert.equal(end.messages.at(-1).content[0].text, 'pong');
  };
  await Promise.all([turn(0), turn(1), turn(2)]);
  // A place frees; with nothing calling into the third client, its timer loop hands it to the
  // reactor at its next round, and the reactor takes its next turn's events (the prompt goes
  // out as a raw frame, which leaves the pump alone).
  await clients[0].close();
  const deadline = Date.now() + WAIT_MS;
  while (!reactor.members.has(clients[2]) && Date.now() < deadline) await sleep(20);
  assert.ok(reactor.members.has(clients[2]), 'the third client took the freed place');
  assert.ok(!clients[2]._timerLoop);
  clients[2].sendFrame({ type: 'prompt', id: 'raw-1', message: 'say hello' });
  await nextOfType(iterators[2], 'agent_end');
});
