// Listeners and iterators have every event that preceded a call's outcome when the call
// resolves or rejects; host calls nobody can answer are answered at once; binding-side drops
// are reported and counted.
import test from 'node:test';
import assert from 'node:assert/strict';
import { Client, CommandError, ProcessExitedError } from '../index.mjs';
import { WAIT_MS, start, fakeOptions, nextEventOfType } from './helpers.mjs';

const TURN = ['agent_start', 'turn_start', 'message_start', 'message_update', 'message_end', 'turn_end', 'agent_end'];

/** The iterator's next event if it already holds one, else 'pending'. */
async function held(it) {
  const r = await Promise.race([it.next(), Promise.resolve('pending')]);
  return r === 'pending' ? r : r.value.type;
}

test('a crash mid-turn: listeners and iterators have the events before it when the call rejects (x50)', async (t) => {
  for (let i = 0; i < 50; i++) {
    const c = await Client.start(fakeOptions());
    try {
      const seen = [];
      const typed = [];
      c.on('event', (ev) => {
        if (ev.type !== 'ready') seen.push(ev.type);
      });
      c.on('message_update', (ev) => typed.push(ev.type));
      const it = c.events({ types: ['agent_start', 'message_update'] });
      await assert.rejects(c.promptAndWait('crash'), ProcessExitedError);
      assert.deepEqual(seen, ['agent_start', 'message_update'], `iteration ${i}`);
      assert.deepEqual(typed, ['message_update'], `iteration ${i}`);
      assert.equal(await held(it), 'agent_start', `iteration ${i}`);
      assert.equal(await held(it), 'message_update', `iteration ${i}`);
    } finally {
      await c.close();
    }
  }
});

test('requests resolve and reject after listeners saw the events before the response (x20)', async (t) => {
  // a turn of several batches (1024 events each) before the response
  const c = await start(t, [], { maxEventHistory: null });
  let seen = 0;
  let last = null;
  c.on('event', (ev) => {
    seen++;
    last = ev.type;
  });
  await c.getState();
  for (let i = 0; i < 20; i++) {
    seen = 0;
    await c.prompt('burst 3000');
    await c.getState();
    assert.deepEqual([seen, last], [3006, 'agent_end'], `iteration ${i}: getState`);
    seen = 0;
    await c.prompt('burst 3000');
    await assert.rejects(c.request('no_such_command'), CommandError);
    assert.deepEqual([seen, last], [3006, 'agent_end'], `iteration ${i}: a failed request`);
  }
});

test('a full iterator keeps the newest events and reports the loss; listeners miss nothing', async (t) => {
  const c = await start(t);
  const seen = [];
  c.on('event', (ev) => seen.push(ev.type));
  const it = c.events({ highWaterMark: 2 });
  await c.getState(); // ready reaches both
  seen.length = 0;
  await c.promptAndWait('say hello');
  assert.deepEqual(seen, TURN);
  // 8 events for 2 places: the 6 oldest are dropped, said first, then the 2 newest
  const first = await it.next();
  assert.deepEqual(first.value, { type: 'event_overflow', dropped: 6, omprpc: true });
  assert.equal(await held(it), 'turn_end');
  assert.equal(await held(it), 'agent_end');
  assert.equal(await held(it), 'pending');
  assert.equal(c.counters().binding_events_dropped, 6);
});

test('an iterator nobody reads never holds back host tool calls or other iterators', async (t) => {
  const calls = [];
  const c = await start(t, [], {
    hostTools: [{
      name: 'echo_host', description: 'Echo', parameters: { type: 'object' },
      handler: ({ message }) => (calls.push(message), `echo: ${message}`),
    }],
  });
  const stuck = c.events({ highWaterMark: 1 }); // never read
  const reader = c.events({ types: ['tool_execution_end'] });
  for (let i = 0; i < 3; i++) {
    const turn = await c.promptAndWait('needs host tool', { timeoutMs: WAIT_MS });
    const end = turn.events.find((e) => e.type === 'tool_execution_end');
    assert.equal(end.isError, false, JSON.stringify(end));
    assert.equal((await reader.next()).value.type, 'tool_execution_end');
  }
  assert.deepEqual(calls, ['hello', 'hello', 'hello']);
  const report = (await stuck.next()).value;
  assert.equal(report.type, 'event_overflow');
  assert.ok(report.dropped > 3, JSON.stringify(report));
  stuck.close();
  reader.close();
});

test('host calls no handler and no consumer can answer are answered at once', async (t) => {
  for (const withHandler of [false, true]) {
    const tools = [{ name: 'echo_host', description: 'x', parameters: { type: 'object' } }];
    if (withHandler) tools.push({ name: 'other', description: 'x', parameters: { type: 'object' }, handler: () => 'x' });
    const c = await start(t, [], { hostTools: tools, hostUriSchemes: [{ scheme: 'memo' }] });
    const t0 = Date.now();
    let turn = await c.promptAndWait('needs host uri', { timeoutMs: WAIT_MS });
    const seen = turn.events.find((e) => e.type === 'host_uri_result_seen');
    assert.equal(seen.frame.isError, true, JSON.stringify(seen));
    assert.match(seen.frame.error, /no handler/);
    turn = await c.promptAndWait('needs host tool', { timeoutMs: WAIT_MS });
    const end = turn.events.find((e) => e.type === 'tool_execution_end');
    assert.equal(end.isError, true, JSON.stringify(end));
    assert.match(end.result.content[0].text, /no handler/);
    assert.ok(Date.now() - t0 < 5000);
  }
});

test('a consumer that receives host calls answers them itself', async (t) => {
  const c = await start(t, [], { hostUriSchemes: [{ scheme: 'memo' }] });
  c.on('host_uri_request', (ev) => c.hostUriResult(ev.id, { content: 'from the listener' }));
  const turn = await c.promptAndWait('needs host uri');
  const seen = turn.events.find((e) => e.type === 'host_uri_result_seen');
  assert.equal(seen.frame.content, 'from the listener');
  // and one that pulls the events with nextEvent()
  const d = await start(t, [], { hostUriSchemes: [{ scheme: 'memo' }] });
  const pending = d.promptAndWait('needs host uri');
  const req = await nextEventOfType(d, 'host_uri_request');
  d.hostUriResult(req.id, { content: 'pulled' });
  const pulled = (await pending).events.find((e) => e.type === 'host_uri_result_seen');
  assert.equal(pulled.frame.content, 'pulled');
});

test('events read for host handlers while nobody listens are kept, and drops counted', async (t) => {
  const c = await start(t, [], {
    eventQueueCapacity: 16,
    hostTools: [{ name: 'echo_host', description: 'x', parameters: { type: 'object' }, handler: () => 'x' }],
  });
  await c.promptAndWait('needs host tool');
  await c.promptAndWait('burst 200');
  let got = 0;
  let dropped = 0;
  const it = c.events();
  for (;;) {
    let timer;
    const r = await Promise.race([it.next(), new Promise((resolve) => {
      timer = setTimeout(() => resolve(null), WAIT_MS);
    })]).finally(() => clearTimeout(timer));
    assert.ok(r && !r.done, 'the events stopped');
    if (r.value.type === 'event_overflow' && r.value.omprpc === true) dropped += r.value.dropped;
    else got++;
    if (r.value.type === 'agent_end' && got + dropped > 10) break;
  }
  await it.return();
  // ready + the host tool turn (agent_start, host_tool_call, tool_execution_end, agent_end)
  // + the burst turn (206)
  assert.equal(got + dropped, 1 + 4 + 206);
  assert.ok(dropped > 0);
  const k = c.counters();
  assert.equal(k.events_dropped, dropped);
  assert.ok(k.binding_events_dropped <= dropped);
});
