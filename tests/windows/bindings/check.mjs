// make windows-bindings-test: the Node binding on a Windows node.exe, under Wine, through its
// public API (tests/windows/bindings/run.sh runs it from a project whose node_modules holds the
// binding, with koffi's win32-x64 part).
//
//   node check.mjs full      the library found where expected, a call with an owned string out
//                            and back, an option error as its typed error, then the fake agent:
//                            a streamed turn; the reactor's wait on the event handle (blocked
//                            when a turn's events arrive, woken by close()); eventHandle() in a
//                            program's own wait; AbortSignal and dispose
//   node check.mjs lookup    only: the library found where expected
//   node check.mjs missing   no library anywhere: load() fails naming every place it tried
//
// Environment: EXPECTED_VERSION; EXPECTED_LIBRARY (a directory the loaded library lies under, or
// the bare name the system loader was given); OMPRPC_AGENT (the fake agent, full);
// EXPECTED_PLACES (missing: the texts the error must hold, separated by "|"). Prints PASS
// lines; any failure throws. Output goes through fs.writeSync: under Wine 8.0, Node's
// process.stdout on a pipe fails to open (EBADF), a file works; run.sh gives it files.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import * as omprpc from 'omprpc';

const say = (line) => fs.writeSync(1, `${line}\n`);
const mode = process.argv[2] || 'full';

function samePlace(loaded, expected) {
  if (!expected.includes('/') && !expected.includes('\\')) return loaded === expected;
  const canon = (p) => fs.realpathSync(p).toLowerCase();
  return canon(loaded).startsWith(canon(expected) + path.sep);
}

if (mode === 'missing') {
  let text = null;
  try {
    omprpc.load();
  } catch (e) {
    text = e.message;
  }
  if (text === null) throw new Error('load() succeeded with no library anywhere');
  const places = process.env.EXPECTED_PLACES.split('|');
  for (const place of places) {
    if (!text.includes(place)) throw new Error(`the error does not name ${JSON.stringify(place)}:\n${text}`);
  }
  say(`windows-bindings-test: PASS node: no library -> load() fails naming every place (${places.length} checked)`);
  process.exit(0);
}

if (process.platform !== 'win32') throw new Error(`platform ${process.platform}`);
const loaded = omprpc.load();
if (!samePlace(loaded, process.env.EXPECTED_LIBRARY)) throw new Error(`loaded ${loaded}, expected ${process.env.EXPECTED_LIBRARY}`);
if (omprpc.version() !== process.env.EXPECTED_VERSION) throw new Error(`library version ${omprpc.version()}`);
if (omprpc.abiVersion() !== 2) throw new Error(`ABI ${omprpc.abiVersion()}`);
say(`windows-bindings-test: PASS node ${process.version} on ${process.platform}-${process.arch}: omprpc ${omprpc.version()} loaded from ${loaded}`);
if (mode === 'lookup') process.exit(0);

// An owned string out of the library and freed by it, UTF-8 both ways.
const content = omprpc.promptFromContent([
  { type: 'text', text: 'h\u00e9llo' },
  { type: 'text', text: 'w\u00f6rld' },
]);
if (content.message !== 'h\u00e9llo\n\nw\u00f6rld' || content.images.length !== 0) throw new Error(`content ${JSON.stringify(content)}`);
// An option the core refuses before anything starts: its status and message, typed.
let bad = null;
try {
  await omprpc.Client.start({ command: ['unused.exe'], flavor: 'bogus' });
} catch (e) {
  bad = e;
}
if (!(bad instanceof omprpc.InvalidArgumentError) || bad.code !== 'INVALID_ARGUMENT' || !/flavor/.test(bad.message)) {
  throw new Error(`flavor 'bogus': ${bad && bad.constructor.name} ${bad && bad.code} ${bad && bad.message}`);
}
say('windows-bindings-test: PASS node: promptFromContent round trip; a bad option is InvalidArgumentError');

// A turn, streamed through listeners (the reactor delivers the events).
const agent = process.env.OMPRPC_AGENT;
const client = await omprpc.Client.start({ command: [agent], startupTimeoutMs: 30_000 });
const deltas = [];
try {
  client.on('message_update', (ev) => {
    if (ev.assistantMessageEvent?.type === 'text_delta') deltas.push(ev.assistantMessageEvent.delta);
  });
  const turn = await client.promptAndWait('ping', { timeoutMs: 60_000 });
  if (turn.assistantText !== 'pong') throw new Error(`assistantText ${turn.assistantText}`);
} finally {
  await client.close();
}
if (deltas.join('') !== 'pong') throw new Error(`streamed ${JSON.stringify(deltas)}`);
say(`windows-bindings-test: PASS node: a turn from the fake agent, streamed ${JSON.stringify(deltas)}`);

await checkReactorWait();
await checkOwnWait();
await checkSignalAndDispose();

/** Rejects after `ms` (a hang guard only). */
function within(promise, ms, what) {
  let timer;
  const guard = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing after ${ms} ms`)), ms);
  });
  return Promise.race([promise, guard]).finally(() => clearTimeout(timer));
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Whether `p` has settled (after the microtasks queued so far). */
async function settled(p) {
  const mark = Symbol('pending');
  return (await Promise.race([p.then(() => true, () => true), Promise.resolve(mark)])) !== mark;
}

/**
 * An iterator's read blocks with nothing queued: the reactor waits on the client's event
 * handle in the pool (no timer of the binding runs meanwhile), a turn's events end the wait,
 * and close() ends a blocked read.
 */
async function checkReactorWait() {
  const c = await omprpc.Client.start({ command: [agent], startupTimeoutMs: 30_000 });
  try {
    const it = c.events();
    const first = await within(it.next(), 30_000, 'the ready event');
    if (first.value?.type !== 'ready') throw new Error(`first event ${JSON.stringify(first.value)}`);
    let read = it.next();
    await sleep(300);
    if (await settled(read)) throw new Error('a read settled with nothing queued');
    // A timer loop (the fallback without the reactor) would hold a Timeout here.
    const resources = process.getActiveResourcesInfo();
    if (resources.includes('Timeout')) throw new Error(`the wait runs on timers: ${resources}`);
    await c.prompt('say hello');
    const types = [];
    for (;;) {
      const r = await within(read, 30_000, 'the turn\'s events');
      if (r.done) throw new Error(`the events ended after ${types}`);
      types.push(r.value.type);
      if (r.value.type === 'agent_end') break;
      read = it.next();
    }
    if (types[0] !== 'agent_start') throw new Error(`the turn's events: ${types}`);
    read = it.next();
    await sleep(300);
    if (await settled(read)) throw new Error('a read settled with nothing queued');
    await within(c.close(), 30_000, 'close()');
    const end = await within(read, 1_000, 'the read blocked at close()');
    if (!end.done) throw new Error(`the read blocked at close() got ${JSON.stringify(end.value)}`);
  } finally {
    await c.close();
  }
  say('windows-bindings-test: PASS node: the reactor waits on the event handle: woken by a turn\'s events, a blocked read ended by close()');
}

/**
 * eventHandle() in a program's own wait (kernel32 through koffi, which the binding depends on):
 * set with the ready event queued; a wait on a duplicate, blocked while nothing is queued,
 * woken by close(). eventFd() is refused on Windows with the core's typed error.
 */
async function checkOwnWait() {
  const require = createRequire(createRequire(import.meta.url).resolve('omprpc'));
  const kernel32 = require('koffi').load('kernel32.dll');
  const waitOne = kernel32.func('uint32_t WaitForSingleObject(void *handle, uint32_t ms)');
  const currentProcess = kernel32.func('void *GetCurrentProcess()');
  const duplicate = kernel32.func('int DuplicateHandle(void *fromProcess, void *handle, void *toProcess, _Out_ void **out, uint32_t access, int inherit, uint32_t options)');
  const closeHandle = kernel32.func('int CloseHandle(void *handle)');
  const WAIT_OBJECT_0 = 0;
  const WAIT_TIMEOUT = 0x102;
  const DUPLICATE_SAME_ACCESS = 2;

  const c = await omprpc.Client.start({ command: [agent], startupTimeoutMs: 30_000 });
  try {
    let refused = null;
    try {
      c.eventFd();
    } catch (e) {
      refused = e;
    }
    if (!(refused instanceof omprpc.InvalidArgumentError) || !refused.message.includes('omprpc_client_event_handle')) {
      throw new Error(`eventFd() on Windows: ${refused && refused.message}`);
    }
    const h = c.eventHandle();
    if (typeof h !== 'bigint' || h === 0n || c.eventHandle() !== h) throw new Error(`eventHandle() ${h}`);
    if (waitOne(h, 10_000) !== WAIT_OBJECT_0) throw new Error('not set with the ready event queued');
    const seen = await within(c.nextEvent(), 30_000, 'nextEvent()');
    if (seen.type !== 'ready') throw new Error(`nextEvent() ${seen.type}`);
    if (waitOne(h, 0) !== WAIT_TIMEOUT) throw new Error('set with nothing queued');
    const own = [null];
    if (!duplicate(currentProcess(), h, currentProcess(), own, 0, 0, DUPLICATE_SAME_ACCESS)) throw new Error('DuplicateHandle failed');
    try {
      const woke = new Promise((resolve, reject) => waitOne.async(own[0], 30_000, (e, r) => (e ? reject(e) : resolve(r))));
      await sleep(300);
      if (await settled(woke)) throw new Error('the wait returned with nothing queued');
      await c.close();
      if ((await within(woke, 30_000, 'the wait at close()')) !== WAIT_OBJECT_0) throw new Error('close() did not set the handle');
    } finally {
      closeHandle(own[0]);
    }
  } finally {
    await c.close();
  }
  say('windows-bindings-test: PASS node: eventHandle() in a wait of its own: set while events are queued, a blocked wait woken by close(); eventFd() is InvalidArgumentError');
}

/** An AbortSignal ends a blocked read and a stream; Symbol.asyncDispose closes the client. */
async function checkSignalAndDispose() {
  const c = await omprpc.Client.start({ command: [agent], startupTimeoutMs: 30_000 });
  try {
    const ready = await within(c.nextEvent(), 30_000, 'nextEvent()');
    if (ready.type !== 'ready') throw new Error(`nextEvent() ${ready.type}`);
    const reading = new AbortController();
    const read = c.nextEvent({ signal: reading.signal });
    await sleep(200);
    if (await settled(read)) throw new Error('nextEvent() settled with nothing queued');
    reading.abort();
    let readError = null;
    try {
      await within(read, 5_000, 'the aborted read');
    } catch (e) {
      readError = e;
    }
    if (!(readError instanceof omprpc.AbortError)) throw new Error(`the aborted read: ${readError}`);
    const cancel = new AbortController();
    let text = '';
    let aborted = null;
    try {
      for await (const item of c.stream('stream until abort', { signal: cancel.signal })) {
        if (item.kind === 'text') {
          text += item.text;
          cancel.abort();
        }
      }
    } catch (e) {
      aborted = e;
    }
    if (!(aborted instanceof omprpc.AbortError) || !text) throw new Error(`the aborted stream: ${aborted} after ${JSON.stringify(text)}`);
    const next = await within(c.stream('ping').finalTurn(), 30_000, 'the next turn');
    if (next.text !== 'pong') throw new Error(`the turn after the abort: ${next.text}`);
  } finally {
    await c[Symbol.asyncDispose]();
  }
  if (!c.closed || c.info().closed !== true) throw new Error('asyncDispose left the client open');
  say('windows-bindings-test: PASS node: AbortSignal ends a blocked read and a stream (then a clean turn); asyncDispose closes');
}
