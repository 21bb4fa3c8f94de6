// client.stream(): one turn as typed items (the core's summarizer over the turn's events), its
// finalTurn(), leaving early and the signal (both abort the turn; the next starts once it
// completed), one stream at a time, failures, and the prompt_complete events it rests on.
import test from 'node:test';
import assert from 'node:assert/strict';
import {
  AbortError, CancelledError, ClosedError, CommandError, ConcurrencyError, OmprpcError, ProcessExitedError,
} from '../index.mjs';
import { WAIT_MS, start, nextOfType } from './helpers.mjs';

/** Every item of a stream, in order. */
async function itemsOf(stream) {
  const items = [];
  for await (const item of stream) items.push(item);
  return items;
}

const texts = (items) => items.filter((i) => i.kind === 'text').map((i) => i.text).join('');

/** The types of every event the client delivers from now (an events() iterator, read in the background). */
function recordTypes(c) {
  const types = [];
  const it = c.events();
  const done = (async () => {
    for await (const ev of it) types.push(ev.type);
  })();
  return { types, stop: async () => (await it.return(), await done) };
}

test('a turn streams reasoning, text and turn_complete; the next starts clean', async (t) => {
  const c = await start(t);
  const items = await itemsOf(c.stream('thinking'));
  assert.deepEqual(items.map((i) => i.kind), ['reasoning', 'text', 'turn_complete']);
  assert.deepEqual(items[0], { kind: 'reasoning', text: 'hmm' });
  assert.deepEqual(items[1], { kind: 'text', text: 'visible' });
  const done = items[2];
  assert.equal(done.outcome, 'agent_end');
  assert.equal(done.stopReason, 'stop');
  assert.equal(done.text, 'visible');
  assert.equal(done.usage.inputTokens, 1);
  assert.equal(done.usage.outputTokens, 1);
  assert.equal(done.summary.reasoning, 'hmm');
  assert.equal(done.summary.complete, true);
  assert.equal(done.attempts, 1);
  assert.deepEqual(done.failedAttempts, []);
  assert.ok(done.requestId.length > 0);
  const again = await c.stream('hello').finalTurn();
  assert.equal(again.text, 'pong');
  assert.equal(again.summary.text, 'pong', 'only this turn in its summary');
  assert.notEqual(again.requestId, done.requestId);
});

test('tool calls stream as tool_start then tool_end; only text deltas reach text', async (t) => {
  const c = await start(t);
  const items = await itemsOf(c.stream('all events'));
  const starts = items.filter((i) => i.kind === 'tool_start');
  const ends = items.filter((i) => i.kind === 'tool_end');
  assert.ok(starts.length > 0 && starts.length === ends.length, JSON.stringify(items));
  for (const s of starts) {
    const end = ends.find((e) => e.toolCallId === s.toolCallId);
    assert.ok(items.indexOf(end) > items.indexOf(s));
    assert.equal(end.toolName, s.toolName);
    assert.equal(typeof end.outcome, 'string');
  }
  assert.ok(items.some((i) => i.kind === 'retry'));
  assert.ok(items.some((i) => i.kind === 'compaction'));
  assert.equal(items.at(-1).kind, 'turn_complete');
  assert.equal(texts(items), 'pong');
});

test('finalTurn() reads the rest, and returns the same item once read', async (t) => {
  const c = await start(t);
  const s = c.stream('thinking');
  const first = await s.next();
  assert.equal(first.value.kind, 'reasoning');
  const final = await s.finalTurn();
  assert.equal(final.kind, 'turn_complete');
  assert.equal(final.text, 'visible');
  assert.equal(await s.finalTurn(), final);
  assert.deepEqual(await s.next(), { value: undefined, done: true });
});

test('leaving the loop early aborts the turn; the next turn has none of it', async (t) => {
  const c = await start(t);
  const log = recordTypes(c);
  for await (const item of c.stream('stream until abort')) {
    assert.equal(item.kind, 'text');
    break;
  }
  const next = await itemsOf(c.stream('hello'));
  assert.deepEqual(next.map((i) => i.kind), ['text', 'turn_complete']);
  assert.equal(texts(next), 'pong');
  assert.deepEqual(next.at(-1).summary.stopReasons, [], 'nothing of the aborted run');
  await log.stop();
  // The aborted run ended (abort reached the agent) before the next prompt's run began.
  const starts = log.types.flatMap((ty, i) => (ty === 'agent_start' ? [i] : []));
  const ends = log.types.flatMap((ty, i) => (ty === 'agent_end' ? [i] : []));
  assert.equal(starts.length, 2, log.types.join(','));
  assert.equal(ends.length, 2);
  assert.ok(ends[0] < starts[1]);
  assert.equal((await c.getState()).isStreaming, false);
});

test('the signal aborts the turn: an AbortError with the reason as cause', async (t) => {
  const c = await start(t);
  const ac = new AbortController();
  const reason = new Error('user pressed Ctrl-C');
  const seen = [];
  await assert.rejects(
    (async () => {
      for await (const item of c.stream('stream until abort', { signal: ac.signal })) {
        seen.push(item.kind);
        ac.abort(reason);
      }
    })(),
    (e) => {
      assert.ok(e instanceof AbortError && e instanceof CancelledError && e instanceof OmprpcError, e.stack);
      assert.equal(e.name, 'AbortError');
      assert.equal(e.cause, reason);
      assert.equal(e.code, 'CANCELLED');
      assert.match(e.message, /aborted: user pressed Ctrl-C/);
      return true;
    },
  );
  assert.deepEqual(seen, ['text']);
  assert.equal((await c.stream('hello').finalTurn()).text, 'pong');
  // an already aborted signal: nothing is sent, the stream rejects
  await assert.rejects(c.stream('hello', { signal: AbortSignal.abort() }).next(), AbortError);
  assert.equal((await c.stream('hello').finalTurn()).text, 'pong');
});

test('the signal aborts a stream nobody is reading', async (t) => {
  const c = await start(t);
  const ac = new AbortController();
  const s = c.stream('stream until abort', { signal: ac.signal });
  assert.equal((await s.next()).value.kind, 'text');
  ac.abort();
  // the next turn starts once the aborted one completed, without the first stream being read
  assert.equal((await c.stream('hello').finalTurn()).text, 'pong');
  await assert.rejects(s.next(), AbortError);
});

test('a stream nobody reads keeps its items, and frees the client once its turn completed', async (t) => {
  const c = await start(t, [], { promptCompleteEvents: true, queueResponses: true });
  const it = c.events({ types: ['prompt_complete'] });
  const answered = []; // the commands the agent answered (queueResponses: each response is an event too)
  c.on('response', (ev) => answered.push(ev.command));
  const unread = c.stream('thinking');
  await nextOfType(it, 'prompt_complete'); // done in the agent, not read here
  assert.equal((await c.stream('hello').finalTurn()).text, 'pong', 'the next stream may start');
  await unread.close(); // after its completion: aborts nothing
  const later = await c.stream('hello').finalTurn();
  assert.equal(later.text, 'pong');
  assert.ok(answered.includes('prompt') && !answered.includes('abort'), answered.join(','));
  const kept = c.stream('thinking');
  await nextOfType(it, 'prompt_complete');
  await c.promptAndWait('hello', { timeoutMs: WAIT_MS }); // events after it are not its own
  assert.deepEqual((await itemsOf(kept)).map((i) => i.kind), ['reasoning', 'text', 'turn_complete']);
  assert.equal(c._sinks.size, 0, 'no stream still takes events');
  it.close();
});

test('one stream at a time: a second gets ConcurrencyError until the first is closed', async (t) => {
  const c = await start(t);
  const first = c.stream('stream until abort');
  assert.equal((await first.next()).value.kind, 'text');
  await assert.rejects(c.stream('hello').next(), (e) => e instanceof ConcurrencyError && e.code === 'CONCURRENCY');
  await first.close(); // aborts: the next turn may start
  assert.equal((await c.stream('hello').finalTurn()).text, 'pong');
  // await using (Symbol.asyncDispose) leaves it the same way
  if (typeof Symbol.asyncDispose === 'symbol') {
    {
      const s = c.stream('stream until abort');
      await s.next();
      await s[Symbol.asyncDispose]();
    }
    assert.equal((await c.stream('hello').finalTurn()).text, 'pong');
  }
});

test('a prompt that fails late rejects the stream with its CommandError', async (t) => {
  const c = await start(t);
  await assert.rejects(itemsOf(c.stream('late failure')), (e) => e instanceof CommandError && e.error === 'late failure');
  assert.equal((await c.stream('hello').finalTurn()).text, 'pong');
});

test('a stream whose client closes rejects; a closed client rejects at once', async (t) => {
  const c = await start(t);
  const s = c.stream('stream until abort');
  assert.equal((await s.next()).value.kind, 'text');
  await c.close();
  await assert.rejects(itemsOf(s), (e) => e instanceof ClosedError || e instanceof ProcessExitedError);
  await assert.rejects(c.stream('hello').next(), ClosedError);
});

test('the prompt_complete events a stream rests on reach only a program that asked for them', async (t) => {
  for (const asked of [false, true]) {
    const c = await start(t, [], asked ? { promptCompleteEvents: true } : {});
    const log = recordTypes(c);
    assert.equal((await c.stream('hello').finalTurn()).text, 'pong');
    await c.promptAndWait('hello', { timeoutMs: WAIT_MS });
    await log.stop();
    assert.equal(log.types.includes('prompt_complete'), asked, log.types.join(','));
  }
});
