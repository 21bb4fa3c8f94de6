// record_path reaches the library (camelCase too): the session is written to a JSONL file
// that the fake agent's --replay plays back to a fresh client.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '../index.mjs';
import { FAKE, WAIT_MS, start } from './helpers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

test('recordPath records a session that --replay plays back', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'omprpc-node-record-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const rec = path.join(dir, 'session.jsonl');
  const c = await Client.start({ command: [FAKE], recordPath: rec });
  const live = await c.promptAndWait('say hello', { timeoutMs: WAIT_MS });
  const state = await c.request('get_state');
  await c.close();
  const lines = fs.readFileSync(rec, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.equal(lines[0].omprpc_recording, 1);
  assert.equal(fs.statSync(rec).mode & 0o777, 0o600);
  assert.ok(lines.some((l) => l.dir === 'out' && l.frame.type === 'prompt'));

  const r = await start(t, ['--replay', rec]);
  const again = await r.promptAndWait('say hello', { timeoutMs: WAIT_MS });
  assert.equal(again.assistantText, 'pong');
  assert.equal(again.assistantText, live.assistantText);
  assert.deepEqual(await r.request('get_state'), state);
});

test('the committed real-pi recording replays without pi', async (t) => {
  const fixture = path.resolve(here, '..', '..', '..', 'tests', 'fixtures', 'recordings', 'pi-text-turn.jsonl');
  const c = await start(t, ['--replay', fixture], { flavor: 'pi' });
  const turn = await c.promptAndWait('say hello', { timeoutMs: WAIT_MS });
  assert.equal(turn.assistantText, 'Hello from the fake model');
  assert.equal((await c.request('get_state')).model.id, 'fake-model');
});
