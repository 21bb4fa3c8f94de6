// Cancellation: every call takes `signal`; an aborted call rejects at once with the package's
// AbortError (cause: the signal's reason); an aborted turn sends `abort` and the next prompt
// is accepted; RpcTimeoutError does not shadow the DOM's TimeoutError.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import {
  AbortError, CancelledError, Client, OmprpcError, RpcTimeoutError, TimeoutError,
} from '../index.mjs';
import { WAIT_MS, start, fakeOptions, nextOfType } from './helpers.mjs';

/** Asserts `e` is the package's AbortError carrying `reason`. */
function isAbort(reason) {
  return (e) => {
    assert.ok(e instanceof AbortError && e instanceof CancelledError && e instanceof OmprpcError, e && e.stack);
    assert.equal(e.name, 'AbortError');
    assert.equal(e.code, 'CANCELLED');
    if (reason !== undefined) assert.equal(e.cause, reason);
    return true;
  };
}

/** This process's child pids (Linux). */
function children() {
  try {
    return fs.readFileSync(`/proc/self/task/${process.pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
  } catch {
    return null;
  }
}

test('a deadline rejects with RpcTimeoutError, told apart from the DOM TimeoutError', async (t) => {
  const c = await start(t, ['--scenario', 'hanging']);
  await c.prompt('x', { timeoutMs: WAIT_MS });
  await assert.rejects(c.getState({ timeoutMs: 50 }), (e) => {
    assert.ok(e instanceof RpcTimeoutError && e instanceof OmprpcError);
    assert.equal(e.name, 'RpcTimeoutError');
    assert.equal(e.code, 'TIMEOUT');
    return true;
  });
  await assert.rejects(c.getState({ signal: AbortSignal.timeout(50) }), (e) => {
    assert.ok(!(e instanceof RpcTimeoutError));
    assert.equal(e.name, 'AbortError');
    assert.equal(e.cause.name, 'TimeoutError'); // the DOMException
    return true;
  });
  assert.equal(TimeoutError, RpcTimeoutError, 'the deprecated name is the same class');
});

test('promptAndWait: the signal sends abort, rejects with AbortError; the next prompt runs', async (t) => {
  const c = await start(t);
  const it = c.events({ types: ['message_update', 'agent_end'] });
  const ac = new AbortController();
  const reason = new Error('cancelled by the user');
  const turn = c.promptAndWait('stream until abort', { signal: ac.signal });
  await nextOfType(it, 'message_update');
  ac.abort(reason);
  await assert.rejects(turn, isAbort(reason));
  // the agent got the abort: its run ends, aborted
  const end = await nextOfType(it, 'agent_end');
  assert.equal(end.messages.at(-1).stopReason, 'aborted');
  await it.return();
  const next = await c.promptAndWait('hello', { timeoutMs: WAIT_MS });
  assert.equal(next.assistantText, 'pong');
  assert.equal(next.outcome, 'agent_end');
});

test('a timeout signal: AbortError whose cause is the DOM TimeoutError', async (t) => {
  const c = await start(t);
  await assert.rejects(c.promptAndWait('stream until abort', { signal: AbortSignal.timeout(200) }), (e) => {
    isAbort()(e);
    assert.equal(e.cause.name, 'TimeoutError');
    assert.ok(!(e.cause instanceof OmprpcError));
    return true;
  });
  assert.equal((await c.promptAndWait('hello', { timeoutMs: WAIT_MS })).assistantText, 'pong');
});

test('requests and generated commands reject at once on abort', async (t) => {
  // The "hanging" agent acknowledges the first prompt, then answers nothing. An aborted call's
  // C call still holds its pool thread until the core gives up on it (requestTimeoutMs): kept
  // short, so the 5 calls below do not keep the pool (and close) waiting for the default 30 s.
  const c = await start(t, ['--scenario', 'hanging'], { requestTimeoutMs: 1000 });
  await c.prompt('x', { timeoutMs: WAIT_MS });
  for (const call of [
    (signal) => c.request('get_state', null, { signal }),
    (signal) => c.getState({ signal }),
    (signal) => c.bash('true', { signal }),
    (signal) => c.steer('more', { signal }),
    (signal) => c.abort({ signal }),
  ]) {
    const ac = new AbortController();
    const reason = new Error('enough');
    const pending = call(ac.signal);
    setImmediate(() => ac.abort(reason));
    const t0 = Date.now();
    await assert.rejects(pending, isAbort(reason));
    assert.ok(Date.now() - t0 < 1000, 'rejected at once');
  }
  // an already aborted signal: nothing is sent
  await assert.rejects(c.getState({ signal: AbortSignal.abort('no') }), (e) => isAbort('no')(e));
  await assert.rejects(c.waitForIdle({ signal: AbortSignal.abort() }), AbortError);
  await assert.rejects(c.nextEvent({ signal: AbortSignal.abort() }), AbortError);
  await assert.rejects(c.request('get_state', null, { signal: 'soon' }), TypeError);
});

test('waits reject with AbortError: waitForIdle, nextUiRequest, events()', async (t) => {
  const c = await start(t);
  await c.prompt('hang', { timeoutMs: WAIT_MS });
  for (const wait of [
    (signal) => c.waitForIdle({ signal }),
    (signal) => c.nextUiRequest({ signal }),
  ]) {
    const ac = new AbortController();
    const pending = wait(ac.signal);
    setImmediate(() => ac.abort('stop'));
    await assert.rejects(pending, isAbort('stop'));
  }
  const ac = new AbortController();
  const it = c.events({ signal: ac.signal, types: ['never'] });
  const read = it.next();
  ac.abort('done');
  await assert.rejects(read, isAbort('done'));
});

test('prompt(): aborted before or while it is sent; one the agent accepts late is aborted', async (t) => {
  const c = await start(t);
  // aborted before: nothing is sent
  await assert.rejects(c.prompt('stream until abort', { signal: AbortSignal.abort('before') }), isAbort('before'));
  for (let i = 0; i < 5; i++) {
    const it = c.events({ types: ['agent_start', 'agent_end'] });
    const ac = new AbortController();
    // From an I/O callback (libuv's poll phase) a setImmediate runs before the loop polls
    // again, so before the prompt's acknowledgement (a pool call's completion) is handled;
    // from a timer's (a promptAndWait's poll) the loop would poll first.
    await new Promise((resolve) => fs.stat('.', () => resolve()));
    const sent = c.prompt('stream until abort', { signal: ac.signal });
    setImmediate(() => ac.abort('while sending')); // the prompt is on its way (on the pool)
    await assert.rejects(sent, isAbort('while sending'));
    // The agent got it (its run only ends by an abort), so it was aborted: the next turn runs.
    const turn = await c.promptAndWait('hello', { timeoutMs: WAIT_MS });
    assert.equal(turn.assistantText, 'pong', `round ${i}`);
    const ends = [];
    for (let ev = await it.next(); ev.value.type !== 'agent_start' || ends.length === 0; ev = await it.next()) {
      if (ev.value.type === 'agent_end') ends.push(ev.value.messages.at(-1).stopReason);
    }
    assert.equal(ends[0], 'aborted', `round ${i}: the late prompt's run was aborted`);
    it.close();
  }
  assert.equal(c._sinks.size, 0, 'no turn watcher left behind');
});

test('start: the signal rejects at once and the late client is stopped', async () => {
  const SLOW_START_MS = 5000;
  const before = children();
  const ac = new AbortController();
  // The agent is ready only after 5 s: a rejection well before that was the signal's.
  const starting = Client.start(fakeOptions(['--scenario', 'slow-start'], {
    env: { OMPRPC_FAKE_SLOW_START_MS: String(SLOW_START_MS) },
    signal: ac.signal,
  }));
  setTimeout(() => ac.abort(new Error('shutting down')), 50);
  const t0 = Date.now();
  await assert.rejects(starting, (e) => isAbort()(e) && e.cause.message === 'shutting down');
  assert.ok(Date.now() - t0 < 2000, `the aborted start rejected after ${Date.now() - t0} ms`);
  await assert.rejects(Client.start(fakeOptions([], { signal: AbortSignal.abort() })), AbortError);
  if (before === null) return; // no /proc: nothing more to see
  // The late client (ready after SLOW_START_MS) is freed, which stops its agent.
  const deadline = t0 + SLOW_START_MS + WAIT_MS;
  while (children().length > before.length) {
    assert.ok(Date.now() < deadline, `the abandoned agent is still running: ${children()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
});
