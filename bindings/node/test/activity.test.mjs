// The activity model (mirrors tests/c/test_activity.c) against the fake agent's reproductions
// of real agents: a steer that outlives an abort (omp runs it by itself, pi parks it), a
// follow_up queued during a stream (run in the same run), omp's compaction handoff, an
// extension /command that starts no run, and turnIdleTimeoutMs standing still while a host
// tool runs.
import test from 'node:test';
import assert from 'node:assert/strict';
import { RpcTimeoutError } from '../index.mjs';
import { WAIT_MS, start, count, find, sleep } from './helpers.mjs';

const PI = [['--flavor', 'pi'], { flavor: 'pi' }];

/** A generous hang guard (the machine may be loaded). */
const LONG_MS = 60_000;

const ECHO_SPEC = {
  name: 'echo_host',
  description: 'Echo from the Node host',
  parameters: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'], additionalProperties: false },
};

function texts(message) {
  const content = message && message.content;
  if (typeof content === 'string') return [content];
  return (content || []).filter((c) => c && typeof c.text === 'string').map((c) => c.text);
}

/** The events already queued, taken without waiting. */
async function queued(c) {
  const out = [];
  for (;;) {
    try {
      out.push(await c.nextEvent({ timeoutMs: 0 }));
    } catch (e) {
      if (e instanceof RpcTimeoutError) return out;
      throw e;
    }
  }
}

function agentEnds(events) {
  const ends = events.filter((e) => e.type === 'agent_end');
  const steered = ends.some((e) => (e.messages || []).some((m) => texts(m).includes('steered ok')));
  return { n: ends.length, steered };
}

async function steerThenAbort(c) {
  await c.prompt('stream until abort', { timeoutMs: WAIT_MS });
  await c.steer('steer me now', { timeoutMs: WAIT_MS });
  await c.abort({ timeoutMs: WAIT_MS });
}

test('omp: a steer that outlived an abort runs before the agent is idle', async (t) => {
  const c = await start(t);
  await steerThenAbort(c);
  const t0 = Date.now();
  await c.waitForIdle({ timeoutMs: WAIT_MS });
  assert.ok(Date.now() - t0 < WAIT_MS);
  const events = await queued(c);
  assert.deepEqual(agentEnds(events), { n: 2, steered: true }, JSON.stringify(events.map((e) => e.type)));
  assert.ok(
    events.some((e) => e.type === 'message_end' && e.message.steering === true && texts(e.message).includes('steer me now')),
    'a user message_end with steering:true',
  );
  await c.waitForIdle({ timeoutMs: WAIT_MS });
  assert.equal((await c.promptAndWait('say hello', { timeoutMs: WAIT_MS })).assistantText, 'pong');
});

test('pi: a steer parked by an abort leaves the agent idle', async (t) => {
  const c = await start(t, ...PI);
  await steerThenAbort(c);
  const t0 = Date.now();
  await c.waitForIdle({ timeoutMs: WAIT_MS });
  assert.ok(Date.now() - t0 < WAIT_MS);
  const state = await c.getState();
  assert.equal(state.pendingMessageCount, 1);
  assert.equal(state.isStreaming, false);
  assert.deepEqual(agentEnds(await queued(c)), { n: 1, steered: false });
});

for (const [flavor, args] of [['omp', [[], {}]], ['pi', PI]]) {
  test(`${flavor}: a queued follow_up runs before the agent is idle`, async (t) => {
    // Both agents finish the answer, then run the follow-up in the same run: busy until its
    // terminal agent_end, which waitForIdle waits for.
    const c = await start(t, ...args);
    await c.prompt('stream until abort', { timeoutMs: LONG_MS });
    const deadline = Date.now() + LONG_MS;
    for (;;) {
      const ev = await c.nextEvent({ timeoutMs: Math.max(0, deadline - Date.now()) });
      if (ev.type === 'message_update' && ev.assistantMessageEvent?.type === 'text_delta') break;
    }
    await c.followUp('follow me', { timeoutMs: LONG_MS });
    await c.waitForIdle({ timeoutMs: LONG_MS });
    const events = await queued(c);
    const ends = events.filter((e) => e.type === 'agent_end');
    assert.ok(ends.length > 0, `no agent_end before waitForIdle returned: ${events.map((e) => e.type)}`);
    assert.deepEqual(texts(ends.at(-1).messages[1]), ['followed ok']);
    assert.ok(events.some((e) => e.type === 'message_end' && texts(e.message).includes('follow me')));
  });
}

test('omp: the compaction handoff (a non-terminal agent_end, then nothing) completes the turn', async (t) => {
  const c = await start(t);
  const turn = await c.promptAndWait('handoff', { timeoutMs: WAIT_MS });
  assert.ok(count(turn.events, 'auto_compaction_start') >= 1);
  assert.equal(count(turn.events, 'agent_end'), 1);
  assert.equal(find(turn.events, 'agent_end').isTerminal, false);
  assert.equal(turn.assistantText, 'got it');
  await c.waitForIdle({ timeoutMs: WAIT_MS });
});

for (const [flavor, args] of [['omp', [[], {}]], ['pi', PI]]) {
  test(`${flavor}: an extension /command starts no run and completes`, async (t) => {
    const c = await start(t, ...args);
    const turn = await c.promptAndWait('/noop', { timeoutMs: WAIT_MS });
    assert.equal(turn.agentInvoked, false);
    assert.equal(count(turn.events, 'agent_start'), 0);
    await c.waitForIdle({ timeoutMs: WAIT_MS });
  });
}

test('turnIdleTimeoutMs stands still while a host tool runs', async (t) => {
  const calls = [];
  const c = await start(t, [], {
    turnIdleTimeoutMs: 1000,
    hostTools: [
      {
        ...ECHO_SPEC,
        handler: async (args, ctx) => {
          calls.push(ctx.toolCallId);
          await sleep(1500); // the scenario: the host answers after the idle timeout
          return 'late answer';
        },
      },
    ],
  });
  const turn = await c.promptAndWait('needs host tool', { timeoutMs: WAIT_MS });
  assert.equal(find(turn.events, 'tool_execution_end').result.content[0].text, 'late answer');
  assert.deepEqual(calls, ['toolu_host_1']);
});

test('turnIdleTimeoutMs still fails a turn the agent went silent on', async (t) => {
  const c = await start(t, [], { turnIdleTimeoutMs: 300 });
  const t0 = Date.now();
  await assert.rejects(c.promptAndWait('hang', { timeoutMs: WAIT_MS }), RpcTimeoutError);
  assert.ok(Date.now() - t0 < WAIT_MS, 'the idle timeout fired, not the call deadline');
});
