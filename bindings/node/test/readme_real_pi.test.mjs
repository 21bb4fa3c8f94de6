// The README's real-agent branch on real pi 1.6.0, as on a user's machine: `pi` on PATH, its
// models.json under HOME, the provider key exported in this process's environment, and start
// options with no env option at all — the default environment (the allow-list with the
// provider keys pi and omp read, docs/c-api.md#the-agents-environment) must carry them.
// pi's built-in `anthropic` provider is routed to the fake LLM by its baseUrl alone (models.json),
// so the key it sends is the one it read from ANTHROPIC_API_KEY.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from '../index.mjs';
import { GUARD, Workspace, piSkip } from './real_agents_support.mjs';

const KEY = 'sk-ant-fake-from-the-environment';

/** Sets `vars` in this process's environment (undefined: unset) until the returned undo runs. */
function setEnv(vars) {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  const put = (values) => {
    for (const [k, v] of Object.entries(values)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
  put(vars);
  return () => put(saved);
}

test('the README real-agent branch starts real pi with the key from the environment', { skip: piSkip(), timeout: 2 * GUARD }, async (t) => {
  const ws = await Workspace.create('pi', [{ match: 'say hello', replies: [{ text: 'hello from the environment' }] }]);
  t.after(() => ws.close());
  // `pi` on PATH: the installed pi with the Node it needs.
  const bin = path.join(ws.root, 'bin');
  fs.mkdirSync(bin);
  const [node, cli] = ws.command;
  fs.writeFileSync(path.join(bin, 'pi'), `#!/bin/sh\nexec '${node}' '${cli}' "$@"\n`, { mode: 0o755 });
  // A user's pi configuration: the built-in anthropic provider behind a proxy (the fake LLM).
  const agentDir = path.join(ws.home, '.pi', 'agent');
  fs.mkdirSync(agentDir, { recursive: true });
  fs.writeFileSync(path.join(agentDir, 'models.json'), JSON.stringify({ providers: { anthropic: { baseUrl: `http://127.0.0.1:${ws.llm.port}` } } }));
  t.after(
    setEnv({
      HOME: ws.home,
      PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}`,
      ANTHROPIC_API_KEY: KEY,
      PI_OFFLINE: '1', // no catalog refresh or version check over the network
      PI_CODING_AGENT_DIR: undefined, // a developer's own would win over HOME's
      OMPRPC_README_TEST_SECRET: 'not-for-the-agent',
    }),
  );

  // The README's options, with pi for omp; startupTimeoutMs only guards a loaded machine.
  const client = await Client.start({ executable: 'pi', model: 'anthropic/claude-sonnet-4-5', noSession: true, startupTimeoutMs: GUARD });
  try {
    assert.equal(client.info().agentVersion, '1.6.0');
    const turn = await client.promptAndWait('say hello', { timeoutMs: 60_000 });
    assert.equal(turn.assistantText, 'hello from the environment');
    assert.equal(turn.assistantMessage.provider, 'anthropic');
    const requests = ws.llmRequests();
    assert.equal(requests.length, 1);
    assert.equal(requests[0].model, 'claude-sonnet-4-5');
    // What the agent's environment holds, as its bash tool sees it: the key, not the secret.
    const shown = await client.bash('printf "%s|%s" "$ANTHROPIC_API_KEY" "$OMPRPC_README_TEST_SECRET"');
    assert.equal(shown.output, `${KEY}|`);
  } finally {
    await client.close();
  }
});
