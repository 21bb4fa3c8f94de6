// The typed payloads at run time (issue 23 §3): the guards generated from the table's unions,
// assistantTextDelta, and a turn's payloads through the fake agent.
import test from 'node:test';
import assert from 'node:assert/strict';
import {
  assistantTextDelta, isKnownAssistantMessageEvent, isKnownAgentMessage, isKnownMessageContent,
} from 'omprpc';
import { start, nextOfType } from './helpers.mjs';

const partial = { role: 'assistant', content: [] };

test('only a text_delta is answer text', () => {
  assert.equal(assistantTextDelta({ type: 'text_delta', contentIndex: 0, delta: 'hi', partial }), 'hi');
  assert.equal(assistantTextDelta({ type: 'thinking_delta', contentIndex: 0, delta: 'hmm', partial }), undefined);
  assert.equal(assistantTextDelta({ type: 'toolcall_delta', contentIndex: 1, delta: '{"a"', partial }), undefined);
});

test('a variant the table does not name is unknown, and passes through', () => {
  const future = { type: 'audio_delta', contentIndex: 2, bytes: 'AAE=' };
  assert.equal(isKnownAssistantMessageEvent(future), false);
  assert.equal(isKnownAssistantMessageEvent({ type: 'done', reason: 'stop', message: partial }), true);
  assert.equal(isKnownAgentMessage({ role: 'narrator' }), false);
  assert.equal(isKnownAgentMessage({ role: 'toolResult' }), true);
  assert.equal(isKnownMessageContent({ type: 'image', data: '', mimeType: 'image/png' }), true);
  assert.equal(isKnownMessageContent({ type: 'audio' }), false);
  assert.equal(assistantTextDelta(future), undefined);
});

test("a turn's payloads: the streamed text delta, the messages, the usage", async (t) => {
  const c = await start(t);
  const it = c.events({ types: ['message_update'] });
  const turn = await c.promptAndWait('say hello', { timeoutMs: 10_000 });
  const update = await nextOfType(it, 'message_update');
  await it.return();
  assert.ok(isKnownAssistantMessageEvent(update.assistantMessageEvent));
  assert.equal(assistantTextDelta(update.assistantMessageEvent), 'pong');
  assert.ok(turn.messages.every(isKnownAgentMessage));
  assert.equal(turn.assistantMessage?.role, 'assistant');
  assert.ok(turn.assistantMessage.content.every(isKnownMessageContent));
});
