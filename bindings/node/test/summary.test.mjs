// The turn summary and the helpers (mirrors tests/c/test_summary.c): a summary inside
// promptAndWait's turn, summarize() over a turn's events, the streaming Summarizer, the
// environment allow-list, prompt content blocks, the provider config writer, policy
// verdicts; plus NUL-safe prompt messages.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import {
  InvalidArgumentError, InvalidJsonError, NotFoundError, Summarizer, envAllowlisted, promptFromContent,
  providerConfig, summarize,
} from '../index.mjs';
import { start } from './helpers.mjs';

test('a summary in the turn, and the same from its events', async (t) => {
  const c = await start(t, [], { turnSummary: true, model: 'configured' });
  const turn = await c.promptAndWait('all events');
  assert.equal(turn.summary.finalText, 'pong');
  assert.equal(turn.summary.toolCalls[0].outcome, 'success');
  assert.equal(turn.summary.complete, true);
  const s = await summarize(turn.events, { model: 'configured' });
  assert.equal(s.finalText, 'pong');
  assert.equal(s.usage.model, 'claude-sonnet-4-5');
  await assert.rejects(summarize('{}'), InvalidJsonError);
  await assert.rejects(summarize([], { model: 5 }), InvalidArgumentError);
});

test('the streaming Summarizer', () => {
  const s = new Summarizer();
  assert.equal(s.feed({ type: 'message_update', assistantMessageEvent: { type: 'thinking_delta', delta: 'hm' } })[0].kind, 'reasoning');
  s.feed('{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"hi"}}');
  s.feed({ type: 'agent_end', messages: [] });
  assert.throws(() => s.feed('not json'), InvalidJsonError);
  const summary = s.summary();
  assert.equal(summary.text, 'hi');
  assert.equal(summary.reasoning, 'hm');
  assert.equal(summary.complete, true);
  assert.equal(summary.usage, null);
  s.close();
  s.close();
  assert.throws(() => s.summary(), /closed/);
});

test('policy verdicts: unknown ids, bad arguments', async (t) => {
  const c = await start(t);
  assert.throws(() => c.policyVerdict('no-such', true), NotFoundError);
  assert.throws(() => c.policyVerdict('no-such', false, 'because'), NotFoundError);
  assert.throws(() => c.policyVerdict(null, true), TypeError);
  assert.throws(() => c.setPolicyHandler(42), TypeError);
  c.setPolicyHandler(() => true);
  c.setPolicyHandler(null);
});

test('helpers: environment allow-list, content blocks, provider config', () => {
  process.env.OMPRPC_NODE_TEST_SECRET = 'x';
  process.env.OMPRPC_NODE_TEST_OPTIN = 'y';
  try {
    const env = envAllowlisted({ passthrough: ['OMPRPC_NODE_TEST_OPTIN'] });
    assert.equal(env.OMPRPC_NODE_TEST_SECRET, undefined);
    assert.equal(env.OMPRPC_NODE_TEST_OPTIN, 'y');
    assert.ok(env.PATH);
  } finally {
    delete process.env.OMPRPC_NODE_TEST_SECRET;
    delete process.env.OMPRPC_NODE_TEST_OPTIN;
  }
  const p = promptFromContent([{ type: 'text', text: 'see' }, { type: 'image', data_uri: 'data:image/png;base64,iVBORw0KGgo=' }]);
  assert.equal(p.message, 'see');
  assert.equal(p.images[0].mimeType, 'image/png');
  assert.throws(() => promptFromContent([{ type: 'audio' }]), (e) => e instanceof InvalidArgumentError && /audio/.test(e.message));
  const r = providerConfig({
    providers: { fake: { baseUrl: 'http://127.0.0.1:9/v1', api: 'openai-completions', apiKeyEnv: 'FAKE_KEY', models: [{ id: 'm' }] } },
  });
  try {
    assert.equal(r.model, 'fake/m');
    assert.deepEqual(r.envPassthrough, ['FAKE_KEY']);
    assert.ok(r.env.PI_CODING_AGENT_DIR);
  } finally {
    fs.rmSync(r.dir, { recursive: true, force: true });
  }
  assert.throws(() => providerConfig({ providers: {} }), InvalidArgumentError);
});

test('a message with a NUL travels intact (through the options): prompt, steer, follow_up', async (t) => {
  const c = await start(t);
  assert.equal((await c.promptAndWait('say\0hello')).assistantText, 'pong');
  assert.ok((await c.prompt('a\0b')).length > 0);
  await c.waitForIdle();
  await c.steer('a\0b');
  await c.followUp('c\0d');
  await assert.rejects(c.bash('a\0b'), InvalidArgumentError);
});
