// make dist-test: the installed npm package streams a turn from the fake agent.
//
// Environment: OMPRPC_AGENT (the fake agent), EXPECTED_VERSION, EXPECTED_LIBRARY (where the
// library must have been loaded from: a directory it lies under, or the soname it was opened
// by). Prints one PASS line; any failure throws.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import * as omprpc from 'omprpc';

const require = createRequire(import.meta.url);
const want = process.env.EXPECTED_VERSION;
const pkg = require('omprpc/package.json');
if (pkg.version !== want || omprpc.version() !== want) {
  throw new Error(`versions: package ${pkg.version}, library ${omprpc.version()}, expected ${want}`);
}
if (!require.resolve('omprpc').includes(`${path.sep}node_modules${path.sep}`)) throw new Error('omprpc resolved outside node_modules');

const expected = process.env.EXPECTED_LIBRARY;
const loaded = omprpc.libraryPath();
if (expected.includes(path.sep)) {
  if (!fs.realpathSync(loaded).startsWith(fs.realpathSync(expected) + path.sep)) throw new Error(`loaded ${loaded}, expected under ${expected}`);
} else if (loaded !== expected) {
  throw new Error(`loaded ${loaded}, expected ${expected}`);
}

const client = await omprpc.Client.start({ command: [process.env.OMPRPC_AGENT] });
const deltas = [];
try {
  client.on('message_update', (ev) => {
    if (ev.assistantMessageEvent?.type === 'text_delta') deltas.push(ev.assistantMessageEvent.delta);
  });
  const turn = await client.promptAndWait('ping', { timeoutMs: 60_000 });
  if (turn.assistantText !== 'pong') throw new Error(`assistantText ${turn.assistantText}`);
} finally {
  await client.close();
}
if (deltas.join('') !== 'pong') throw new Error(`streamed ${JSON.stringify(deltas)}`);
console.log(`dist-test: PASS node (omprpc ${omprpc.version()} from ${loaded}, streamed ${JSON.stringify(deltas)})`);
