// The prompt lifecycle (mirrors tests/c/test_prompt.c): promptAndWait and its turn, late
// and id-less failures, collectEvents, waitForIdle, single flight, close during a wait,
// the event stream (iterator, EventEmitter, nextEvent, overflow), history limits, v2.
import test from 'node:test';
import assert from 'node:assert/strict';
import { isDeepStrictEqual } from 'node:util';
import {
  Client, ClosedError, CommandError, ConcurrencyError, LimitExceededError,
  ProtocolError, RpcTimeoutError, OmprpcError,
} from '../index.mjs';
import { WAIT_MS, start, slowToStopOptions, count, find, nextOfType, nextEventOfType, sleep } from './helpers.mjs';

test('promptAndWait returns the turn', async (t) => {
  const c = await start(t);
  const turn = await c.promptAndWait('say hello', { timeoutMs: WAIT_MS });
  assert.equal(turn.assistantText, 'pong');
  assert.ok(turn.requestId.length > 0);
  assert.equal(turn.agentInvoked, true);
  assert.equal(turn.assistantMessage.role, 'assistant');
  assert.equal(turn.messages.length, 1);
  assert.equal(turn.messages[0].content[0].text, 'pong');
  assert.equal(count(turn.events, 'agent_end'), 1);
  assert.equal(count(turn.events, 'message_update'), 1);
  assert.equal(count(turn.events, 'ready'), 0);
  assert.equal((await c.request('get_last_assistant_text')).text, 'pong');
});

test('listeners have seen the turn when promptAndWait / collectEvents resolve', async (t) => {
  const c = await start(t, [], { maxEventHistory: null });
  const seen = [];
  c.on('event', (ev) => ev.type !== 'ready' && seen.push(ev.type));
  for (let i = 0; i < 3; i++) {
    seen.length = 0;
    const turn = await c.promptAndWait('burst 3000', { timeoutMs: WAIT_MS });
    assert.equal(turn.events.length, 3006);
    assert.equal(seen.length, 3006, 'every event of the turn reached the listener first');
    assert.equal(seen[seen.length - 1], 'agent_end');
  }
  seen.length = 0;
  await c.prompt('slow', { timeoutMs: WAIT_MS });
  await c.collectEvents({ timeoutMs: WAIT_MS });
  assert.equal(seen[seen.length - 1], 'agent_end');
});

test('turn shapes: thinking, compacted, non-terminal, all events', async (t) => {
  const c = await start(t);
  assert.equal((await c.promptAndWait('thinking')).assistantText, 'visible');
  const compacted = await c.promptAndWait('compacted');
  assert.equal(compacted.messages.length, 2);
  assert.equal(compacted.messages[0].role, 'assistant');
  assert.equal(compacted.messages[1].customType, 'terminal');
  assert.equal(compacted.assistantText, 'pong');
  const nt = await c.promptAndWait('non-terminal');
  assert.equal(count(nt.events, 'agent_end'), 2);
  assert.equal(nt.assistantText, 'pong');
  const all = await c.promptAndWait('all events');
  for (const type of [
    'agent_start', 'turn_start', 'message_start', 'message_update', 'message_end', 'turn_end',
    'tool_execution_start', 'tool_execution_update', 'tool_execution_end', 'auto_compaction_start',
    'auto_compaction_end', 'auto_retry_start', 'auto_retry_end', 'retry_fallback_applied',
    'retry_fallback_succeeded', 'ttsr_triggered', 'todo_reminder', 'todo_auto_clear', 'agent_end',
  ]) assert.equal(count(all.events, type), 1, type);
});

test('local prompts complete and leave the client idle', async (t) => {
  const c = await start(t);
  const local = await c.promptAndWait('local');
  assert.equal(local.agentInvoked, false);
  assert.equal(local.assistantText, null);
  assert.equal((await c.promptAndWait('prompt result')).agentInvoked, false);
  await c.waitForIdle({ timeoutMs: 2000 });
  assert.equal((await c.promptAndWait('say hello')).assistantText, 'pong');
});

async function checkLateFailure(c, message) {
  await assert.rejects(c.promptAndWait(message, { timeoutMs: WAIT_MS }), (e) => {
    assert.ok(e instanceof CommandError, e.stack);
    assert.equal(e.command, 'prompt');
    assert.equal(e.error, 'late failure');
    return true;
  });
  const errors = c.protocolErrors();
  assert.equal(errors.length, 1);
  assert.match(JSON.stringify(errors), /late failure/);
  // sticky for waitForIdle until the next prompt
  await assert.rejects(c.waitForIdle({ timeoutMs: 2000 }), CommandError);
}

test('late prompt failures', async (t) => {
  await checkLateFailure(await start(t, ['--scenario', 'late-failure']), 'say hello');
  const c = await start(t);
  await checkLateFailure(c, 'late failure');
  assert.equal((await c.promptAndWait('say hello')).assistantText, 'pong');
});

test('id-less errors reach their own callers', async (t) => {
  const c = await start(t, ['--scenario', 'idless-error']);
  await assert.rejects(c.request('unknown'), (e) => e instanceof CommandError && e.command === 'unknown' && e.error === 'unsupported: unknown');
  const [a, b] = await Promise.allSettled([c.request('alpha'), c.request('beta')]);
  assert.equal(a.status, 'rejected');
  assert.equal(a.reason.command, 'alpha');
  assert.equal(b.status, 'rejected');
  assert.equal(b.reason.command, 'beta');
});

test('collectEvents, waitForIdle, abortAndPrompt, a hanging prompt', async (t) => {
  const c = await start(t);
  const id = await c.prompt('slow');
  assert.ok(id.length > 0);
  const events = await c.collectEvents({ timeoutMs: WAIT_MS });
  assert.equal(events.at(-1).type, 'agent_end');
  await c.waitForIdle({ timeoutMs: WAIT_MS });
  assert.ok((await c.abortAndPrompt('say hello')).length > 0);
  await c.waitForIdle({ timeoutMs: WAIT_MS });
  assert.equal((await c.request('get_last_assistant_text')).text, 'pong');
  await c.prompt('hang');
  const t0 = Date.now();
  await assert.rejects(c.waitForIdle({ timeoutMs: 600 }), RpcTimeoutError);
  const dt = Date.now() - t0;
  assert.ok(dt >= 550 && dt < 3000, `waitForIdle(600) took ${dt} ms`);
  // an AbortSignal ends the wait at once
  const ac = new AbortController();
  setTimeout(() => ac.abort(new Error('stop waiting')), 100);
  const t1 = Date.now();
  await assert.rejects(c.waitForIdle({ signal: ac.signal }), /stop waiting/);
  assert.ok(Date.now() - t1 < 1000);
  await c.getState();
});

test('a listener or iterator added during promptAndWait also gets the events queued before it', async (t) => {
  // promptAndWait takes none of the client's events: with nobody consuming, they wait in the
  // core's queue, and whoever subscribes during the wait is handed them first.
  const c = await start(t);
  const waiting = c.promptAndWait('slow', { timeoutMs: WAIT_MS });
  // "slow" pauses 300 ms after its delta: wait until the core holds the ready frame and the
  // turn's first four events (agent_start, turn_start, message_start, message_update).
  const deadline = Date.now() + WAIT_MS;
  while (c.counters().events_held < 5) {
    assert.ok(Date.now() < deadline, 'the turn\'s first events were not queued');
    await sleep(5);
  }
  const seen = [];
  c.on('event', (ev) => seen.push(ev.type));
  const it = c.events();
  const turn = await waiting;
  const want = ['ready', ...turn.events.map((ev) => ev.type)];
  assert.equal(want[4], 'message_update');
  assert.deepEqual(seen, want);
  const iterated = [];
  for await (const ev of it) {
    iterated.push(ev.type);
    if (ev.type === 'agent_end') break;
  }
  assert.deepEqual(iterated, want);
});

test('single flight: a second collector gets ConcurrencyError', async (t) => {
  // No handler: the call is an event, and the turn cannot end before the test answers it,
  // so the first collector surely still runs while the others are tried.
  const c = await start(t, [], { hostTools: [{ name: 'echo_host', description: 'Echo', parameters: { type: 'object' } }] });
  const it = c.events({ types: ['host_tool_call'] });
  const first = c.promptAndWait('needs host tool');
  const call = await nextOfType(it, 'host_tool_call');
  await assert.rejects(c.collectEvents({ timeoutMs: 1000 }), ConcurrencyError);
  await assert.rejects(c.promptAndWait('say hello', { timeoutMs: 1000 }), ConcurrencyError);
  c.hostToolResult(call.id, 'done');
  const turn = await first;
  assert.equal(turn.events.at(-1).type, 'agent_end');
  assert.equal(find(turn.events, 'tool_execution_end').result.content[0].text, 'done');
  await it.return();
});

test('close during a prompt rejects it at once with ClosedError', async () => {
  const c = await Client.start(slowToStopOptions());
  const waiting = c.promptAndWait('hang', { timeoutMs: 30_000 });
  let settled = false;
  waiting.then(() => (settled = true), () => (settled = true));
  await sleep(300);
  assert.equal(settled, false);
  const t0 = Date.now();
  const closing = c.close();
  const err = await waiting.then(() => null, (e) => e);
  const woke = Date.now() - t0;
  // The agent was still alive when the waiter woke: only close can have ended the wait.
  assert.ok(err instanceof ClosedError, String(err));
  assert.ok(woke < 1500, `promptAndWait woke ${woke} ms after close began`);
  await Promise.all([closing, c.close()]);
});

test('events: iterator, EventEmitter, nextEvent, batches', async (t) => {
  const c = await start(t);
  // the ready frame was queued at start: the first consumer gets it
  const it = c.events();
  assert.equal((await it.next()).value.type, 'ready');
  const seen = [];
  const types = [];
  const onEvent = (ev) => seen.push(ev.type);
  const onEnd = (ev) => types.push(ev.type);
  c.on('event', onEvent);
  c.on('agent_end', onEnd);
  await c.promptAndWait('burst 50');
  const fromIterator = [];
  for await (const ev of it) {
    fromIterator.push(ev.type);
    if (ev.type === 'agent_end') break;
  }
  // agent_start turn_start message_start, 50 updates, message_end turn_end agent_end
  assert.equal(fromIterator.length, 56);
  assert.equal(fromIterator[0], 'agent_start');
  while (seen.length < 56) await sleep(5);
  assert.deepEqual(seen, fromIterator);
  assert.deepEqual(types, ['agent_end']);
  c.off('event', onEvent);
  c.off('agent_end', onEnd);
  // a filtered iterator
  const ends = c.events({ types: ['agent_end'] });
  await c.promptAndWait('say hello');
  assert.equal((await ends.next()).value.type, 'agent_end');
  await ends.return();
  // with nobody listening, events wait in the core's queue for nextEvent()
  // (the pump may still hold a poll: what it takes then is kept for the next consumer)
  await c.promptAndWait('say hello');
  assert.equal((await c.nextEvent({ timeoutMs: WAIT_MS })).type, 'agent_start');
  await nextEventOfType(c, 'agent_end');
  await assert.rejects(c.nextEvent({ timeoutMs: 0 }), RpcTimeoutError);
  const t0 = Date.now();
  await assert.rejects(c.nextEvent({ timeoutMs: 200 }), RpcTimeoutError);
  assert.ok(Date.now() - t0 >= 150);
  // close: iterators see what was queued, then end
  const tail = c.events();
  await c.prompt('say hello');
  await c.waitForIdle();
  await c.close();
  const rest = [];
  for await (const ev of tail) rest.push(ev.type);
  assert.equal(rest.at(-1), 'agent_end');
});

test('a full queue drops the oldest events and says so', async (t) => {
  const c = await start(t, [], { eventQueueCapacity: 16 });
  await c.promptAndWait('burst 200');
  let received = 0;
  let dropped = 0;
  let overflows = 0;
  const it = c.events();
  for await (const ev of it) {
    if (ev.type === 'event_overflow') {
      overflows++;
      assert.equal(ev.omprpc, true);
      dropped += ev.dropped;
    } else received++;
    if (ev.type === 'agent_end') break;
  }
  assert.ok(overflows >= 1);
  assert.equal(received + dropped, 1 + 206);
});

test('events a promptAndWait left unread are the turn\'s, parsed when taken from the pull queue', async (t) => {
  // Nobody consumes events: the pump keeps them unparsed (lib/events.cjs PullQueue), the oldest
  // past the capacity counted (here or, when the pump fell behind, in the core's queue); each
  // taken one is the turn's event, field for field, in the turn's order.
  const c = await start(t, [], { eventQueueCapacity: 100 });
  const turn = await c.promptAndWait('burst 300');
  const want = JSON.parse(JSON.stringify(turn.events));
  let dropped = 0;
  let received = 0;
  let at = 0;
  for (;;) {
    let ev;
    try {
      ev = await c.nextEvent({ timeoutMs: 0 });
    } catch (e) {
      if (e instanceof RpcTimeoutError) break;
      throw e;
    }
    if (ev.type === 'event_overflow' && ev.omprpc === true) {
      dropped += ev.dropped;
      continue;
    }
    received++;
    if (ev.type === 'ready') continue; // the agent's, before the turn
    while (at < want.length && !isDeepStrictEqual(want[at], ev)) at++;
    assert.ok(at < want.length, `taken event ${received} (${ev.type}) is not the turn's next`);
    at++;
  }
  assert.ok(dropped > 0);
  assert.equal(received + dropped, 1 + 306);
  assert.equal(at, want.length, 'the last taken event is the turn\'s last');
});

test('the pull queue hands out what the pump took for nobody: one by one or all at once, in order, the oldest dropped and counted', async (t) => {
  // A host tool handler keeps the pump running while nobody consumes events: it moves them
  // (unparsed, a batch's run at a time) to the pull queue, dropping the oldest past
  // eventQueueCapacity (the core's queue drops its own when the pump falls behind).
  const handler = (a) => `host:${a.message}`;
  const c = await start(t, [], { eventQueueCapacity: 100, hostTools: [{ name: 'echo_host', description: 'd', parameters: { type: 'object' }, handler }] });
  const turn = await c.promptAndWait('burst 300');
  const want = JSON.parse(JSON.stringify(turn.events));
  const taken = [];
  for (let i = 0; i < 5; i++) taken.push(await c.nextEvent({ timeoutMs: WAIT_MS })); // one by one
  const it = c.events(); // the rest at once
  for await (const ev of it) {
    taken.push(ev);
    if (ev.type === 'agent_end') break;
  }
  let dropped = 0;
  let at = 0;
  const received = taken.filter((ev) => {
    if (ev.type === 'event_overflow' && ev.omprpc === true) {
      dropped += ev.dropped;
      return false;
    }
    return ev.type !== 'ready'; // the agent's, before the turn
  });
  for (const ev of received) {
    while (at < want.length && !isDeepStrictEqual(want[at], ev)) at++;
    assert.ok(at < want.length, `a taken ${ev.type} is not the turn's next event`);
    at++;
  }
  assert.ok(dropped > 0);
  const ready = taken.some((ev) => ev.type === 'ready') ? 1 : 0;
  assert.equal(received.length + ready + dropped, 1 + 306);
  assert.equal(at, want.length, 'the last taken event is the turn\'s last');
});

test('bounded histories: max_event_history', async (t) => {
  const c = await start(t, [], { maxEventHistory: 2 });
  await assert.rejects(c.promptAndWait('say hello'), (e) => e instanceof LimitExceededError && /max_event_history/.test(e.message));
  const u = await start(t, [], { maxEventHistory: null });
  assert.equal((await u.promptAndWait('burst 100')).events.length, 106);
});

test('timeouts: a hanging turn times out, the client survives; default deadlines', async (t) => {
  const c = await start(t);
  const t0 = Date.now();
  await assert.rejects(c.promptAndWait('hang', { timeoutMs: 300 }), RpcTimeoutError);
  assert.ok(Date.now() - t0 < 3000);
  await c.getState();
  const h = await start(t, ['--scenario', 'hanging'], { requestTimeoutMs: 200, turnTimeoutMs: 200 });
  await assert.rejects(h.promptAndWait('x'), RpcTimeoutError);
  await assert.rejects(h.getState(), RpcTimeoutError);
  await assert.rejects(h.waitForIdle(), RpcTimeoutError);
});

test('protocol v2: chunked frames, refused negotiation, negotiateV2:false', async (t) => {
  const c = await start(t, ['--v2']);
  assert.equal(c.info().protocolVersion, 2);
  const big = await c.promptAndWait('big 2000000');
  assert.equal(big.assistantText.length, 2_000_000);
  assert.equal(big.assistantText[0], 'a');
  assert.equal(big.assistantText[1_999_999], String.fromCharCode(97 + (1_999_999 % 26)));
  assert.equal((await c.promptAndWait('exact MiB')).assistantText[0], 'a');
  assert.equal((await c.promptAndWait('say hello')).assistantText, 'pong');
  const refused = await start(t, ['--v2'], { env: { OMPRPC_FAKE_V2_FAIL: '1' } });
  assert.equal(refused.info().protocolVersion, 1);
  assert.equal((await refused.promptAndWait('say hello')).assistantText, 'pong');
  const v1 = await start(t, ['--v2'], { negotiateV2: false });
  assert.equal(v1.info().protocolVersion, 1);
});

test('max_frame_bytes', async (t) => {
  const ok = await start(t, [], { maxFrameBytes: 8 * 1024 * 1024 });
  const turn = await ok.promptAndWait('huge 5000000');
  assert.equal(find(turn.events, 'tool_execution_end').result.content[0].text.length, 5_000_000);
  const small = await start(t, [], { maxFrameBytes: 1024 * 1024 });
  await assert.rejects(small.promptAndWait('huge 2000000'), (e) => e instanceof ProtocolError || e instanceof LimitExceededError);
});

test('large inputs cross the boundary intact (sync and async calls)', async (t) => {
  const c = await start(t);
  const message = 'x'.repeat(3 * 1024 * 1024) + 'é✓';
  const turn = await c.promptAndWait(message);
  assert.equal(turn.assistantText, 'pong');
  const frame = { type: 'widget_layout', widgetKey: 'k'.repeat(2 * 1024 * 1024), visible: true };
  c.sendFrame(frame);
  const seen = await nextEventOfType(c, 'widget_layout_seen');
  assert.equal(seen.frame.widgetKey.length, 2 * 1024 * 1024);
  assert.ok(!(seen instanceof OmprpcError));
});

test('a slow iterator with a small highWaterMark: what it lost is reported, never silent', async (t) => {
  const c = await start(t);
  const it = c.events({ highWaterMark: 8 });
  await c.prompt('burst 200');
  let events = 0;
  let dropped = 0;
  for await (const ev of it) {
    if (ev.type === 'event_overflow') dropped += ev.dropped;
    else events++;
    if (events % 50 === 0) await sleep(20);
    if (ev.type === 'agent_end') break;
  }
  assert.ok(dropped > 0, 'a burst of 200 does not fit in 8');
  assert.equal(events + dropped, 1 + 206, 'every event read or counted');
});

test('an AbortSignal ends an event iterator; break detaches it', async (t) => {
  const c = await start(t);
  const ac = new AbortController();
  const it = c.events({ signal: ac.signal, types: ['agent_end'] });
  setTimeout(() => ac.abort(new Error('enough')), 100);
  await assert.rejects(it.next(), /enough/);
  assert.deepEqual(await it.next(), { value: undefined, done: true });
  // (the first iterator took the ready frame, and filtered it out)
  const all = c.events();
  await c.prompt('say hello');
  for await (const ev of all) {
    assert.equal(ev.type, 'agent_start');
    break;
  }
  assert.equal(c._iterators.size, 0);
});

test('a turn is the library\'s turn JSON (outcome and the attempts included), with stopReason, errorMessage and usage besides', async (t) => {
  const { createRequire } = await import('node:module');
  const require = createRequire(import.meta.url);
  const { native, take } = require('../lib/native.cjs');
  const { takeTurn } = require('../lib/turn.cjs');
  const c = await start(t, [], { maxEventHistory: null, turnSummary: true });
  // One omprpc_turn, read both ways: its whole turn_json parsed, and the binding's turn.
  const both = (message) => {
    const out = [null];
    const err = [null];
    assert.equal(native().promptAndWaitTurn(c._st.h, message, null, WAIT_MS, out, err), 0);
    take(err[0]);
    const info = {};
    assert.equal(native().turnGetInfo(out[0], info, err), 0);
    const json = JSON.parse(require('../lib/views.cjs').strText(info.turn_json));
    return [takeTurn(out[0]), json];
  };
  const cases = [
    ['say hello', 'agent_end'],
    ['all events', 'agent_end'],
    ['thinking', 'agent_end'],
    ['prompt result', 'prompt_result'],
    ['local', 'not_invoked'],
  ];
  for (const [message, outcome] of cases) {
    const [turn, want] = both(message);
    assert.deepEqual(Object.keys(turn), Object.keys(want), message);
    assert.deepStrictEqual(turn, want, message);
    assert.deepStrictEqual(JSON.parse(JSON.stringify(turn)), want, message);
    assert.equal(turn.outcome, outcome, message);
    const msg = want.assistantMessage;
    assert.equal(turn.stopReason, msg && typeof msg.stopReason === 'string' ? msg.stopReason : null, message);
    assert.equal(turn.errorMessage, msg && typeof msg.errorMessage === 'string' ? msg.errorMessage : null, message);
    assert.deepStrictEqual(turn.usage, msg && msg.usage !== undefined ? msg.usage : null, message);
    assert.equal(turn.attempts, outcome === 'agent_end' ? 1 : 0, message);
    if (message === 'say hello') assert.deepEqual([turn.settled, turn.failedAttempts, turn.compactions], [false, [], []]);
    for (const k of ['stopReason', 'errorMessage', 'usage']) assert.equal(Object.keys(turn).includes(k), false);
  }
  const turn = await c.promptAndWait('say hello', { timeoutMs: WAIT_MS });
  assert.equal(turn.outcome, 'agent_end');
  assert.equal(typeof turn.stopReason, 'string');
  assert.equal(typeof turn.usage, 'object');
  assert.equal((await c.promptAndWait('local', { timeoutMs: WAIT_MS })).outcome, 'not_invoked');
  // events replaced unread
  turn.events = [];
  assert.deepEqual(turn.events, []);
  // collectEvents: the events of the run, as the library took them
  await c.prompt('slow', { timeoutMs: WAIT_MS });
  const events = await c.collectEvents({ timeoutMs: WAIT_MS });
  assert.equal(events.at(-1).type, 'agent_end');
  assert.ok(events.every((e) => typeof e.type === 'string' && Object.getPrototypeOf(e) === Object.prototype));
});

test('turn events are lazy: the same events as listeners get, each parsed on first use', async (t) => {
  const util = await import('node:util');
  const c = await start(t, [], { maxEventHistory: null });
  const seen = [];
  c.on('event', (ev) => ev.type !== 'ready' && seen.push(ev));
  const turn = await c.promptAndWait('burst 20', { timeoutMs: WAIT_MS });
  const evs = turn.events;
  assert.ok(Array.isArray(evs));
  assert.equal(evs.length, 26);
  assert.ok(evs.every((ev) => util.types.isProxy(ev)), 'every event is lazy');
  assert.deepEqual(evs.map((ev) => ev.type), seen.map((ev) => ev.type));
  // util.inspect parses (and shows) the event, as console.log would
  assert.match(util.inspect(evs[3], { depth: 4 }), /assistantMessageEvent: \{/);
  // field reads, `in`, keys, spread, JSON and deep equality see the whole event
  assert.equal(evs[4].assistantMessageEvent.type, seen[4].assistantMessageEvent.type);
  assert.ok('message' in evs[5]);
  assert.deepEqual(Object.keys(evs[6]), Object.keys(seen[6]));
  assert.deepStrictEqual({ ...evs[7] }, seen[7]);
  assert.deepStrictEqual(JSON.parse(JSON.stringify(evs)), seen);
  assert.deepStrictEqual(evs, seen);
  assert.equal(Object.getPrototypeOf(evs[0]), Object.prototype);
  // writable like a plain object; structuredClone needs a plain copy (a Proxy is not cloneable)
  evs[8].mine = 1;
  delete evs[8].message;
  assert.deepEqual(Object.keys(evs[8]), ['type', 'assistantMessageEvent', 'mine']);
  assert.deepStrictEqual(structuredClone({ ...evs[9] }), seen[9]);
  assert.throws(() => structuredClone(evs[9]), /could not be cloned/);
});
