// Nested tool calls: real pi 1.6.0's codemode turn (a script ran bash, which sleeps first, and
// read at once; read ended first), recorded by tests/real_pi.rs and replayed by the fake agent.
// Each call's summary item holds its own result; the inner ones name the codemode call, which
// lists them as its children; the streaming summarizer's tool items name it too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Summarizer } from '../index.mjs';
import { WAIT_MS, start } from './helpers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const fixture = path.resolve(here, '..', '..', '..', 'tests', 'fixtures', 'recordings', 'pi-1.6.0-codemode.jsonl');

test('a codemode call nests its inner calls, each paired with its own end', async (t) => {
  // --mode rpc makes the client ask the replay its --version: the recorded pi's.
  const c = await start(t, ['--replay', fixture, '--mode', 'rpc'], { flavor: 'pi', turnSummary: true });
  const turn = await c.promptAndWait('please run codemode', { timeoutMs: WAIT_MS });
  const rows = turn.summary.toolCalls.map((tc) => [tc.toolCallId, tc.toolName, tc.parentToolCallId, tc.outcome, tc.result.content.at(-1).text, tc.children]);
  assert.deepEqual(rows, [
    ['call_fake_2', 'codemode', null, 'success', 'inner+from-note', ['call_fake_2/1', 'call_fake_2/2']],
    ['call_fake_2/1', 'bash', 'call_fake_2', 'success', 'inner\n', []],
    ['call_fake_2/2', 'read', 'call_fake_2', 'success', 'from-note\n', []],
  ]);

  const sm = new Summarizer();
  t.after(() => sm.close());
  const items = turn.events.flatMap((e) => sm.feed(e)).filter((i) => i.kind.startsWith('tool_'));
  for (const i of items) assert.equal(i.parentToolCallId, i.toolCallId === 'call_fake_2' ? null : 'call_fake_2', JSON.stringify(i));
  assert.deepEqual(items.filter((i) => i.kind === 'tool_end').map((i) => i.toolCallId), ['call_fake_2/2', 'call_fake_2/1', 'call_fake_2']);
  assert.deepEqual(sm.summary().toolCalls, turn.summary.toolCalls);
});
