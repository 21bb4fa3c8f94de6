// Where koffi cannot view foreign memory (in a V8 sandbox koffi.view throws: no external
// ArrayBuffers), turns and event batches are read from copies instead of in place: the same
// events, each parsed on first use, and no turn held by the binding. Its own file: node --test
// runs each file in its own process, and the binding remembers that views are unavailable.
import test from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { isDeepStrictEqual } from 'node:util';
import { RpcTimeoutError } from '../index.mjs';
import { start, WAIT_MS } from './helpers.mjs';

const koffi = createRequire(import.meta.url)('koffi');
let views = 0;
koffi.view = () => {
  views++;
  throw new Error('external ArrayBuffers are not allowed (a V8 sandbox)');
};

test('without koffi.view, a turn and the pull queue are read from copies', async (t) => {
  const { _internal } = (await import('../index.cjs')).default;
  const c = await start(t, [], { maxEventHistory: null, eventQueueCapacity: 1000 });
  const seen = [];
  const onEvent = (ev) => ev.type !== 'ready' && seen.push(ev);
  c.on('event', onEvent);
  const turn = await c.promptAndWait('burst 40', { timeoutMs: WAIT_MS });
  c.off('event', onEvent);
  assert.ok(views > 0, 'the binding tried to view the library memory');
  assert.equal(_internal.turnsHeld(), 0, 'a copied turn is not held');
  const evs = turn.events;
  assert.equal(evs.length, 46);
  assert.deepEqual(evs.map((ev) => ev.type), seen.map((ev) => ev.type));
  assert.deepStrictEqual(JSON.parse(JSON.stringify(evs)), seen);
  assert.equal(turn.assistantText, 'pong');

  // Nobody consumes now: the next turn's events wait for nextEvent(), read from copied batches.
  const next = await c.promptAndWait('burst 40', { timeoutMs: WAIT_MS });
  const want = JSON.parse(JSON.stringify(next.events));
  const taken = [];
  for (;;) {
    let ev;
    try {
      ev = await c.nextEvent({ timeoutMs: 0 });
    } catch (e) {
      if (e instanceof RpcTimeoutError) break;
      throw e;
    }
    taken.push(ev);
  }
  const at = taken.findIndex((ev) => ev.type === 'agent_start');
  assert.ok(at >= 0, 'the second turn\'s events were queued');
  assert.ok(isDeepStrictEqual(taken.slice(at), want), 'the taken events are the turn\'s, in order');
});
