// The CommonJS entry point: require('omprpc') gives the same module as import.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const omprpc = require('..');
const { Client, ClosedError, CommandError, OmprpcError } = require('..');

const FAKE = process.env.OMPRPC_FAKE_AGENT
  ? path.resolve(process.env.OMPRPC_FAKE_AGENT)
  : path.resolve(__dirname, '..', '..', '..', 'target', 'debug', 'omprpc-fake-agent');

test('require() and import() share one module', async () => {
  const esm = await import('../index.mjs');
  assert.equal(esm.Client, Client);
  assert.equal(esm.default, omprpc);
  assert.equal(esm.ClosedError, ClosedError);
  assert.equal(omprpc.ABI_VERSION, 2);
  assert.equal(require('../package.json').name, 'omprpc');
});

test('a CJS round trip: start, prompt, events, errors, close', async () => {
  const client = await Client.start({ command: [FAKE] });
  try {
    const seen = [];
    client.on('agent_end', (ev) => seen.push(ev.type));
    const turn = await client.promptAndWait('say hello');
    assert.equal(turn.assistantText, 'pong');
    await assert.rejects(client.request('no_such_command'), (e) => e instanceof CommandError && e instanceof OmprpcError);
    while (seen.length === 0) await new Promise((r) => setTimeout(r, 5));
    assert.deepEqual(seen, ['agent_end']);
  } finally {
    await client.close();
  }
  await assert.rejects(client.getState(), ClosedError);
});
