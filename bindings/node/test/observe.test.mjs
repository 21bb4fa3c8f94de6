// Observability through the binding: counters() and the log channel (nextLogs), with no
// secret in any record.
import test from 'node:test';
import assert from 'node:assert/strict';
import { Client, ClosedError, InvalidArgumentError, RpcTimeoutError } from '../index.mjs';
import { FAKE, start } from './helpers.mjs';

const SECRET = 'node-secret-system-prompt-2718';
const KEY = 'sk-node-test-key-abcdef987654';

test('counters follow the session and survive close', async (t) => {
  const c = await start(t);
  const first = c.counters();
  assert.equal(first.frames_in, 1); // the ready frame
  assert.notEqual(first.time_to_first_event_ms, null);
  assert.equal(first.last_prompt_first_event_ms, null);
  await c.getState();
  const turn = await c.promptAndWait('say hello');
  assert.equal(turn.assistantText, 'pong');
  const k = c.counters();
  assert.equal(k.requests_sent, 2);
  assert.equal(k.frames_out, 2);
  assert.equal(k.responses, 2);
  assert.equal(k.requests_pending, 0);
  assert.ok(k.bytes_in > k.frames_in && k.frames_in > 5, JSON.stringify(k));
  assert.equal(k.events_dropped, 0);
  assert.ok(k.last_prompt_first_event_ms >= 0);
  await c.close();
  const after = c.counters();
  assert.equal(after.closed, true);
  assert.equal(after.requests_sent, 2);
});

test('nextLogs: records in order, redacted, then ClosedError', async (t) => {
  const c = await Client.start({ executable: FAKE, systemPrompt: SECRET, env: { ANTHROPIC_API_KEY: KEY }, logLevel: 'debug', stopGraceMs: 500 });
  t.after(() => c.close());
  const [spawn] = await c.nextLogs({ max: 1, timeoutMs: 5000 });
  assert.equal(spawn.message, 'agent spawned');
  assert.equal(spawn.target, 'omprpc::spawn');
  assert.ok(spawn.argv.includes('<redacted>'), JSON.stringify(spawn));
  await c.bash('echo node-private-words');
  await c.close();
  // What was not taken before close (teardown's records included) is kept for after it.
  const all = [spawn];
  for (;;) {
    try {
      all.push(...(await c.nextLogs({ max: 3 })));
    } catch (e) {
      assert.ok(e instanceof ClosedError, String(e));
      break;
    }
  }
  const messages = all.map((r) => r.message);
  for (const m of ['handshake done', 'request sent', 'response received', 'agent stopped', 'teardown complete']) {
    assert.ok(messages.includes(m), `${m} missing from ${messages}`);
  }
  assert.equal(all.find((r) => r.message === 'request sent').type, 'bash');
  const text = JSON.stringify(all);
  for (const leak of [SECRET, KEY, 'node-private-words']) assert.ok(!text.includes(leak), `${leak} leaked: ${text}`);
});

test('nextLogs while running: requests with latency; errors when off or empty', async (t) => {
  const c = await start(t, [], { logLevel: 'debug' });
  await c.nextLogs({ timeoutMs: 5000 }); // spawn, handshake
  await c.getState();
  const recs = await c.nextLogs({ timeoutMs: 5000 });
  const sent = recs.find((r) => r.message === 'request sent');
  const got = recs.find((r) => r.message === 'response received');
  assert.equal(sent.type, 'get_state');
  assert.equal(got.ok, true);
  assert.ok(got.latency_ms >= 0);
  await assert.rejects(c.nextLogs({ timeoutMs: 50 }), RpcTimeoutError);
  await assert.rejects(c.nextLogs({ max: 0 }), RangeError);
  const off = await start(t);
  await assert.rejects(off.nextLogs({ timeoutMs: 0 }), (e) => e instanceof InvalidArgumentError && /log_level/.test(e.message));
  await assert.rejects(Client.start({ command: [FAKE], logLevel: 'chatty' }), /log_level/);
});
