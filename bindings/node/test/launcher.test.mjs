// launcher reaches the library: the agent runs behind a wrapper script that records its words
// (the version probe's, then the agent's); info() names the launcher. docs/launcher.md has the
// rest (bwrap, unshare, ssh, teardown).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '../index.mjs';
import { FAKE, WAIT_MS } from './helpers.mjs';

test('launcher runs the agent behind a wrapper script', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'omprpc-node-launcher-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const log = path.join(dir, 'launcher.log');
  const wrapper = path.join(dir, 'wrap');
  fs.writeFileSync(wrapper, `#!/bin/sh\necho "$*" >> '${log}'\nexec "$@"\n`, { mode: 0o755 });
  const c = await Client.start({ command: [FAKE, '--mode', 'rpc'], launcher: [wrapper] });
  t.after(() => c.close());
  const turn = await c.promptAndWait('hello', { timeoutMs: WAIT_MS });
  assert.equal(turn.assistantText, 'pong');
  const info = c.info();
  assert.deepEqual(info.launcher, [wrapper]);
  assert.equal(info.argv[0], wrapper);
  const runs = fs.readFileSync(log, 'utf8').trim().split('\n');
  assert.deepEqual(runs, [`${FAKE} --version`, info.argv.slice(1).join(' ')]);
});

test('a launcher that is not an argv prefix is refused by name', async () => {
  await assert.rejects(Client.start({ command: [FAKE], launcher: [] }), /non-empty array of non-empty strings/);
});
