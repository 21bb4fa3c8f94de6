// Garbage-collector pressure (FFI-STYLE §14: Node with --expose-gc): forced collections
// between and during calls, and a client collected without close() is closed and freed.
import test from 'node:test';
import assert from 'node:assert/strict';
import v8 from 'node:v8';
import vm from 'node:vm';
import { Client } from '../index.mjs';
import { fakeOptions, start, sleep } from './helpers.mjs';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc');

test('calls, turns and event streams survive forced collections', async (t) => {
  const c = await start(t, [], { hostTools: [{ name: 'echo_host', description: 'd', parameters: { type: 'object' }, handler: (a) => `host:${a.message}` }] });
  const it = c.events({ types: ['agent_end'] });
  const ticker = setInterval(gc, 5);
  try {
    for (let i = 0; i < 30; i++) {
      const [state, turn] = await Promise.all([c.getState(), c.promptAndWait('say hello')]);
      assert.equal(state.sessionId, 'fake-session');
      assert.equal(turn.assistantText, 'pong');
      gc();
      assert.equal(turn.events.length, 7);
      const toolTurn = await c.promptAndWait('needs host tool');
      assert.equal(toolTurn.events.find((e) => e.type === 'tool_execution_end').result.content[0].text, 'host:hello');
      assert.equal((await it.next()).value.type, 'agent_end');
      assert.equal((await it.next()).value.type, 'agent_end');
    }
  } finally {
    clearInterval(ticker);
    await it.return();
  }
});

function agentGone(pid) {
  try {
    process.kill(pid, 0);
    return false;
  } catch (e) {
    return e.code === 'ESRCH';
  }
}

test('a client collected without close() is closed and its agent stopped', async () => {
  let pid = 0;
  await (async () => {
    const c = await Client.start(fakeOptions([], { closeOnExit: false }));
    pid = c.info().pid;
    await c.getState();
  })();
  assert.ok(pid > 0 && !agentGone(pid));
  const deadline = Date.now() + 10_000;
  while (!agentGone(pid) && Date.now() < deadline) {
    gc();
    await sleep(20);
  }
  assert.ok(agentGone(pid), 'the agent of a collected client is still running');
});

test("a turn is freed once its events are parsed, or when the turn is collected", async (t) => {
  const { _internal } = (await import('../index.cjs')).default;
  const c = await start(t, [], { maxEventHistory: null, eventQueueCapacity: 16 });
  const base = _internal.turnsHeld();
  // every event used: freed at the last one
  let turn = await c.promptAndWait('burst 30');
  assert.equal(_internal.turnsHeld(), base + 1);
  const evs = turn.events;
  assert.equal(evs.filter((e) => e.type === 'message_update').length, 30); // types alone parse nothing
  assert.equal(_internal.turnsHeld(), base + 1);
  const copies = evs.map((e) => ({ ...e }));
  assert.equal(_internal.turnsHeld(), base);
  assert.equal(copies[3].assistantMessageEvent.type, 'text_delta');
  // events replaced unread: freed at once
  turn = await c.promptAndWait('burst 30');
  turn.events = [];
  assert.equal(_internal.turnsHeld(), base);
  // turns never read, or read in part: freed as they are collected
  for (let i = 0; i < 5; i++) {
    turn = await c.promptAndWait('burst 30');
    if (i % 2) assert.equal(turn.events[2].type, 'message_start');
  }
  turn = null;
  const deadline = Date.now() + 10_000;
  while (_internal.turnsHeld() !== base && Date.now() < deadline) {
    gc();
    await sleep(20);
  }
  assert.equal(_internal.turnsHeld(), base);
});
